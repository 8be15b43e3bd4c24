//! Rows and cells: splitting a `sacctmgr -n -P` output into rows (`|`-separated, free text
//! last), and the typed values of single cells (names, integers, durations, QoS lists, flags),
//! each problem with its file and line.
//!
//! Part of the snapshot parser: pure, no I/O, no spawning, no printing, no panic on any input.

use std::collections::BTreeSet;

use slurmplan_diag::{Diagnostic, Location};
use slurmplan_model::names::{Name, NameKind};
use slurmplan_model::values::{self, Fairshare, QosList};

use super::{CODE, Source, Unsplit};

/// One line of `-n -P` output split into cells. `line` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'a> {
    pub line: usize,
    pub cells: Vec<&'a str>,
}

pub(super) fn at(src: &Source, line: usize) -> Location {
    Location { file: src.name.clone(), line, column: 0 }
}

pub(super) fn error(src: &Source, line: usize, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(CODE, message).at(at(src, line))
}

/// Split `-n -P` output into rows of exactly `columns.len()` cells. A final newline and `\r\n`
/// line ends are tolerated; an empty line anywhere else is an error. With `free_text_last`, a
/// row with too many cells keeps the extra `|` in its last cell (free text is not escaped).
pub fn parse_rows<'a>(src: &'a Source, columns: &[&str], free_text_last: bool) -> (Vec<Row<'a>>, Vec<Diagnostic>) {
    let mut rows = Vec::new();
    let mut diags = Vec::new();
    for_each_row(src, columns, free_text_last, &mut diags, |row, _| rows.push(row.clone()));
    (rows, diags)
}

/// [`parse_rows`] one row at a time (one buffer for the cells): the association read has a
/// million rows, and holding them all split at once would cost hundreds of MB.
pub fn for_each_row<'a>(
    src: &'a Source,
    columns: &[&str],
    free_text_last: bool,
    diags: &mut Vec<Diagnostic>,
    f: impl FnMut(&Row<'a>, &mut Vec<Diagnostic>),
) {
    let text = src.text.strip_suffix('\n').unwrap_or(&src.text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.is_empty() {
        return;
    }
    rows_in_block(src, text, 1, columns, free_text_last, diags, None, f);
}

/// The rows of `block` (whole lines without the final newline; its first line is line
/// `first_line` of `src`), as [`for_each_row`] takes them. Returns the number of lines.
#[allow(clippy::too_many_arguments)] // the shape of the rows, where they go, where problems go
pub(super) fn rows_in_block<'a>(
    src: &Source,
    block: &'a str,
    first_line: usize,
    columns: &[&str],
    free_text_last: bool,
    diags: &mut Vec<Diagnostic>,
    mut unsplit: Option<&mut Vec<Unsplit>>,
    mut f: impl FnMut(&Row<'a>, &mut Vec<Diagnostic>),
) -> usize {
    let n = columns.len().max(1);
    let mut row = Row { line: 0, cells: Vec::with_capacity(n) };
    let mut count = 0;
    for (i, line) in block.split('\n').enumerate() {
        let lineno = first_line + i;
        count = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            diags.push(error(src, lineno, "empty line in sacctmgr output"));
            continue;
        }
        row.cells.clear();
        if free_text_last {
            row.cells.extend(line.splitn(n, '|'));
        } else {
            split_cells(line, &mut row.cells);
        }
        if row.cells.len() > n
            && let Some(u) = unsplit.as_deref_mut()
        {
            u.push(Unsplit { file: src.name.clone(), line: lineno, text: line.to_string() });
            continue;
        }
        if row.cells.len() != n {
            let found = line.split('|').count();
            diags.push(
                error(src, lineno, format!("expected {n} fields ({}), found {found}", columns.join("|")))
                    .hint("the file must hold the `-n -P` output of the read with exactly this format= list"),
            );
            continue;
        }
        row.line = lineno;
        f(&row, diags);
    }
    count
}

/// `line.split('|')` into `cells`, byte by byte: association rows are mostly empty cells, where
/// a search call per cell costs more than looking at each byte (a million rows at a large site).
pub(super) fn split_cells<'a>(line: &'a str, cells: &mut Vec<&'a str>) {
    let mut start = 0;
    for (i, b) in line.bytes().enumerate() {
        if b == b'|' {
            cells.push(&line[start..i]);
            start = i + 1;
        }
    }
    cells.push(&line[start..]);
}

/// A name as sacctmgr prints it, whatever its characters (slurmdbd holds `john@uni.ee`, `sp
/// ace`, ...): only what the desired file names is checked for use on a command line.
pub fn snapshot_name(s: &str, kind: NameKind) -> Result<Name, String> {
    Name::from_sacctmgr(s, kind).map_err(|e| e.to_string())
}

pub(super) fn opt_name(s: &str, kind: NameKind) -> Result<Option<Name>, String> {
    if s.is_empty() { Ok(None) } else { snapshot_name(s, kind).map(Some) }
}

/// An integer limit: empty = unset, else a non-negative integer.
pub fn parse_int(s: &str) -> Result<Option<u64>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{s}` is not a non-negative integer"));
    }
    s.parse::<u64>().map(Some).map_err(|_| format!("`{s}` is too large"))
}

pub(super) fn opt_duration(s: &str) -> Result<Option<u64>, String> {
    if s.is_empty() { Ok(None) } else { values::parse_duration(s).map(Some) }
}

pub(super) fn fairshare(s: &str) -> Result<Option<Fairshare>, String> {
    if s.is_empty() { Ok(None) } else { Fairshare::parse(s) }
}

/// A raw QoS list (`withrawqos`): empty = inherit, `a,b` = set, `+a,-b` = deltas.
pub fn parse_qos_list(s: &str) -> Result<QosList, String> {
    if s.is_empty() {
        return Ok(QosList::Inherit);
    }
    let mut set = BTreeSet::new();
    let mut add = BTreeSet::new();
    let mut remove = BTreeSet::new();
    for item in s.split(',') {
        let (target, bare) = if let Some(rest) = item.strip_prefix('+') {
            (&mut add, rest)
        } else if let Some(rest) = item.strip_prefix('-') {
            (&mut remove, rest)
        } else {
            (&mut set, item)
        };
        if bare.starts_with(['+', '-']) {
            return Err(format!("`{item}` in `{s}` is not a QoS name with one `+`/`-` in front"));
        }
        target.insert(snapshot_name(bare, NameKind::Qos)?);
    }
    match (set.is_empty(), add.is_empty() && remove.is_empty()) {
        (false, true) => Ok(QosList::Set(set)),
        (true, false) => Ok(QosList::Delta { add, remove }),
        _ => Err(format!("`{s}` mixes QoS names with `+`/`-` deltas")),
    }
}

/// Flags as sacctmgr prints them (`DenyOnLimit,NoDecay`), lower-cased.
pub fn parse_flags(s: &str) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    if s.is_empty() {
        return Ok(out);
    }
    for f in s.split(',') {
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!("`{f}` is not a QoS flag"));
        }
        out.insert(f.to_ascii_lowercase());
    }
    Ok(out)
}

/// Where each keyword of a file's format sits in its rows, looked up once per file (not once
/// per cell: the association read has a million rows of 18 cells).
pub(super) struct Layout<'k> {
    pub(super) keywords: &'k [&'k str],
    /// `at[k]`: the cell of `keywords[k]`; `None` = not in this file (reads as empty).
    pub(super) at: Vec<Option<usize>>,
}

impl<'k> Layout<'k> {
    pub(super) fn new(keywords: &'k [&'k str], columns: &[&str]) -> Layout<'k> {
        let at = keywords.iter().map(|k| columns.iter().position(|c| c.eq_ignore_ascii_case(k))).collect();
        Layout { keywords, at }
    }
}

/// Parses cells of one row, pushing a located diagnostic for each bad one. Fields are named
/// by their index in the layout's keywords.
pub(super) struct Cells<'r, 'a> {
    pub(super) src: &'a Source,
    pub(super) row: &'r Row<'a>,
    pub(super) layout: &'r Layout<'r>,
    pub(super) diags: &'r mut Vec<Diagnostic>,
}

impl<'a> Cells<'_, 'a> {
    pub(super) fn raw(&self, field: usize) -> &'a str {
        self.layout.at[field].and_then(|i| self.row.cells.get(i).copied()).unwrap_or("")
    }

    pub(super) fn get<T>(&mut self, field: usize, f: impl FnOnce(&str) -> Result<T, String>) -> Option<T> {
        match f(self.raw(field)) {
            Ok(v) => Some(v),
            Err(e) => {
                let keyword = self.layout.keywords[field];
                self.diags.push(error(
                    self.src,
                    self.row.line,
                    format!("field {keyword}: {e}, in the row `{}`", self.row.cells.join("|")),
                ));
                None
            }
        }
    }

    pub(super) fn name(&mut self, field: usize, kind: NameKind) -> Option<Name> {
        self.get(field, |s| snapshot_name(s, kind))
    }

    /// [`Cells::name`], reusing `last` when this row has the same text in `field` (the name
    /// outlives the row's text: rows arrive block by block from a live read).
    pub(super) fn name_reused(&mut self, field: usize, kind: NameKind, last: &mut Option<Name>) -> Option<Name> {
        let raw = self.raw(field);
        if let Some(name) = last
            && name.as_bytes() == raw.as_bytes()
        {
            return Some(name.clone());
        }
        let name = self.name(field, kind)?;
        *last = Some(name.clone());
        Some(name)
    }

    /// [`Cells::name`], reusing `last` when this row has the same text in `field`.
    pub(super) fn name_cached(
        &mut self,
        field: usize,
        kind: NameKind,
        last: &mut Option<(&'a str, Name)>,
    ) -> Option<Name> {
        let raw = self.raw(field);
        if let Some((text, name)) = last
            && *text == raw
        {
            return Some(name.clone());
        }
        let name = self.name(field, kind)?;
        *last = Some((raw, name.clone()));
        Some(name)
    }
}
