//! Pure parsers from the raw `sacctmgr -n -P` outputs of a snapshot into a [`State`], and the
//! inverse renderer [`write_state`].
//!
//! Cells are taken by position (`|`-separated, nothing escaped); free text (Description,
//! Organization) is always the last column and its tail is re-joined with `|`. Every problem is
//! collected with its file and line, never just the first one. This module must NOT do I/O,
//! spawn processes, print, or panic on any input.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use crate::diag::{Diagnostic, Location};
use crate::model::names::{Name, NameKind};
use crate::model::values::{self, Fairshare, QosList, Tres};
use crate::model::{
    AccountGraph, AccountRecord, Assoc, AssocData, ClusterState, GraphError, Limits, Qos, State, UserKey,
};

use super::reads;

/// Diagnostic code for anything wrong in a snapshot.
pub const CODE: &str = "bad-snapshot";

/// The hint of a problem between two reads (not within one): rows of one read that name what
/// another read does not have. Taken live, a writer between the reads explains it, and reading
/// again is the remedy ([`is_out_of_step`]).
pub const OUT_OF_STEP: &str =
    "the reads were not taken together (something wrote to slurmdbd in between); take them again";

/// Whether `d` is a problem between reads (see [`OUT_OF_STEP`]) rather than in the data.
pub fn is_out_of_step(d: &Diagnostic) -> bool {
    d.hint.as_deref() == Some(OUT_OF_STEP)
}

/// Diagnostics shown per file at most; [`parse_state`] replaces the rest by one line saying
/// how many there were (a million bad rows would otherwise print a million lines).
pub const MAX_DIAGNOSTICS_PER_FILE: usize = 20;

/// Keep the first [`MAX_DIAGNOSTICS_PER_FILE`] of each file's diagnostics (`diags` sorted by
/// location) and add `... and N more` for the rest.
pub fn cap_per_file(diags: &mut Vec<Diagnostic>) {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diags.len().min(256));
    let mut i = 0;
    while i < diags.len() {
        let file = diags[i].location.as_ref().map(|l| l.file.clone());
        let mut j = i;
        while j < diags.len() && diags[j].location.as_ref().map(|l| &l.file) == file.as_ref() {
            j += 1;
        }
        let group = &diags[i..j];
        out.extend(group.iter().take(MAX_DIAGNOSTICS_PER_FILE).cloned());
        if group.len() > MAX_DIAGNOSTICS_PER_FILE {
            let rest = &group[MAX_DIAGNOSTICS_PER_FILE..];
            let mut more = Diagnostic::error(CODE, format!("... and {} more", rest.len()));
            if let Some(f) = &file {
                more = more.at(Location { file: f.clone(), line: 0, column: 0 });
            }
            if rest.iter().any(is_out_of_step) {
                more = more.hint(OUT_OF_STEP);
            }
            out.push(more);
        }
        i = j;
    }
    *diags = out;
}

/// Columns of `clusters.txt`.
pub const CLUSTER_COLUMNS: &[&str] = &["Cluster"];
/// Columns of `assocs.txt` (the `format=` of the `show assoc wopl withrawqos` read).
pub const ASSOC_COLUMNS: &[&str] = &[
    "Cluster",
    "Account",
    "User",
    "Partition",
    "ParentName",
    "Share",
    "GrpJobs",
    "GrpSubmitJobs",
    "GrpTRES",
    "GrpTRESMins",
    "GrpWall",
    "MaxJobs",
    "MaxSubmitJobs",
    "MaxTRES",
    "MaxTRESMins",
    "MaxWall",
    "QOS",
    "DefaultQOS",
];
/// Positions in [`ASSOC_COLUMNS`], for the association parser's cells.
mod col {
    pub const CLUSTER: usize = 0;
    pub const ACCOUNT: usize = 1;
    pub const USER: usize = 2;
    pub const PARTITION: usize = 3;
    pub const PARENT: usize = 4;
    pub const SHARE: usize = 5;
    pub const GRP_JOBS: usize = 6;
    pub const GRP_SUBMIT_JOBS: usize = 7;
    pub const GRP_TRES: usize = 8;
    pub const GRP_TRES_MINS: usize = 9;
    pub const GRP_WALL: usize = 10;
    pub const MAX_JOBS: usize = 11;
    pub const MAX_SUBMIT_JOBS: usize = 12;
    pub const MAX_TRES: usize = 13;
    pub const MAX_TRES_MINS: usize = 14;
    pub const MAX_WALL: usize = 15;
    pub const QOS: usize = 16;
    pub const DEFAULT_QOS: usize = 17;
}

/// Columns of `defaults.txt`: one row per association row that carries the default mark.
pub const DEFAULT_COLUMNS: &[&str] = &["Cluster", "User", "Account", "Partition"];
/// The columns of `defaults.txt` in snapshots taken before the partition was read: every row
/// of (user, DefaultAccount) then counts as marked.
const DEFAULT_COLUMNS_V1: &[&str] = &["Cluster", "User", "Account"];
/// Columns of `accounts-descr.txt` (free text last).
pub const DESCR_COLUMNS: &[&str] = &["Account", "Description"];
/// Columns of `accounts-org.txt` (free text last).
pub const ORG_COLUMNS: &[&str] = &["Account", "Organization"];
/// Columns of `qos.txt` (free text last).
pub const QOS_COLUMNS: &[&str] =
    &["Name", "Flags", "GrpTRESMins", "GrpTRES", "GrpSubmitJobs", "MaxWall", "Description"];

/// One raw output: its file name (for messages) and text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Source {
    pub name: PathBuf,
    pub text: String,
}

impl Source {
    pub fn new(name: impl Into<PathBuf>, text: impl Into<String>) -> Source {
        Source { name: name.into(), text: text.into() }
    }
}

/// The raw outputs of every read in [`reads::READS`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawReads {
    pub clusters: Source,
    pub assocs: Source,
    pub defaults: Source,
    pub accounts_descr: Source,
    pub accounts_org: Source,
    pub qos: Source,
}

impl RawReads {
    /// Each source with the snapshot file name of its read, in [`reads::READS`] order.
    pub fn sources(&self) -> [(&'static str, &Source); 6] {
        [
            (reads::CLUSTERS, &self.clusters),
            (reads::ASSOCS, &self.assocs),
            (reads::DEFAULTS, &self.defaults),
            (reads::ACCOUNTS_DESCR, &self.accounts_descr),
            (reads::ACCOUNTS_ORG, &self.accounts_org),
            (reads::QOS, &self.qos),
        ]
    }

    /// (file name, text) pairs, ready for `snapshot::write_dir`.
    pub fn to_files(&self) -> Vec<(&'static str, String)> {
        self.sources().into_iter().map(|(f, s)| (f, s.text.clone())).collect()
    }

    /// The source for a snapshot file name.
    pub fn source_mut(&mut self, file: &str) -> Option<&mut Source> {
        Some(match file {
            reads::CLUSTERS => &mut self.clusters,
            reads::ASSOCS => &mut self.assocs,
            reads::DEFAULTS => &mut self.defaults,
            reads::ACCOUNTS_DESCR => &mut self.accounts_descr,
            reads::ACCOUNTS_ORG => &mut self.accounts_org,
            reads::QOS => &mut self.qos,
            _ => return None,
        })
    }
}

/// A row with more `|` than its read has columns: a `|` inside a name (slurmdbd stores one and
/// `-P` does not escape it), so its cells cannot be told apart. It is left out of the state
/// and reported; planning refuses it only when it may belong to the managed scope
/// ([`Unsplit::names`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsplit {
    pub file: PathBuf,
    pub line: usize,
    pub text: String,
}

impl Unsplit {
    /// The first cell (clusters are named without `|`).
    pub fn cluster(&self) -> &str {
        self.text.split('|').next().unwrap_or("")
    }

    /// Every name the row may hold after its cluster: each run of adjacent cells joined with
    /// `|`, non-empty ones only.
    pub fn names(&self) -> BTreeSet<String> {
        let cells: Vec<&str> = self.text.split('|').skip(1).collect();
        let mut out = BTreeSet::new();
        for i in 0..cells.len() {
            for j in i + 1..=cells.len() {
                let joined = cells[i..j].join("|");
                if !joined.is_empty() {
                    out.insert(joined);
                }
            }
        }
        out
    }

    /// A diagnostic naming the row, with `why` as its hint.
    pub fn diagnostic(&self, error_: bool, why: &str) -> Diagnostic {
        let message = format!(
            "the row `{}` has more `|` than its {} columns (a `|` inside a name), so its cells cannot be told apart; it is left out",
            self.text,
            if self.file.to_string_lossy().contains(reads::DEFAULTS) {
                DEFAULT_COLUMNS.len()
            } else {
                ASSOC_COLUMNS.len()
            }
        );
        let d = if error_ { Diagnostic::error(CODE, message) } else { Diagnostic::warning(CODE, message) };
        d.at(Location { file: self.file.clone(), line: self.line, column: 0 }).hint(why)
    }
}

/// One line of `-n -P` output split into cells. `line` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'a> {
    pub line: usize,
    pub cells: Vec<&'a str>,
}

fn at(src: &Source, line: usize) -> Location {
    Location { file: src.name.clone(), line, column: 0 }
}

fn error(src: &Source, line: usize, message: impl Into<String>) -> Diagnostic {
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
fn rows_in_block<'a>(
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
fn split_cells<'a>(line: &'a str, cells: &mut Vec<&'a str>) {
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

fn opt_name(s: &str, kind: NameKind) -> Result<Option<Name>, String> {
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

fn opt_duration(s: &str) -> Result<Option<u64>, String> {
    if s.is_empty() { Ok(None) } else { values::parse_duration(s).map(Some) }
}

fn fairshare(s: &str) -> Result<Option<Fairshare>, String> {
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
struct Layout<'k> {
    keywords: &'k [&'k str],
    /// `at[k]`: the cell of `keywords[k]`; `None` = not in this file (reads as empty).
    at: Vec<Option<usize>>,
}

impl<'k> Layout<'k> {
    fn new(keywords: &'k [&'k str], columns: &[&str]) -> Layout<'k> {
        let at = keywords.iter().map(|k| columns.iter().position(|c| c.eq_ignore_ascii_case(k))).collect();
        Layout { keywords, at }
    }
}

/// Parses cells of one row, pushing a located diagnostic for each bad one. Fields are named
/// by their index in the layout's keywords.
struct Cells<'r, 'a> {
    src: &'a Source,
    row: &'r Row<'a>,
    layout: &'r Layout<'r>,
    diags: &'r mut Vec<Diagnostic>,
}

impl<'a> Cells<'_, 'a> {
    fn raw(&self, field: usize) -> &'a str {
        self.layout.at[field].and_then(|i| self.row.cells.get(i).copied()).unwrap_or("")
    }

    fn get<T>(&mut self, field: usize, f: impl FnOnce(&str) -> Result<T, String>) -> Option<T> {
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

    fn name(&mut self, field: usize, kind: NameKind) -> Option<Name> {
        self.get(field, |s| snapshot_name(s, kind))
    }

    /// [`Cells::name`], reusing `last` when this row has the same text in `field` (the name
    /// outlives the row's text: rows arrive block by block from a live read).
    fn name_reused(&mut self, field: usize, kind: NameKind, last: &mut Option<Name>) -> Option<Name> {
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
    fn name_cached(&mut self, field: usize, kind: NameKind, last: &mut Option<(&'a str, Name)>) -> Option<Name> {
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

/// One parsed row of `assocs.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssocRow {
    pub line: usize,
    pub cluster: Name,
    pub account: Name,
    /// `None` on an account association.
    pub user: Option<Name>,
    pub partition: Option<Name>,
    pub parent: Option<Name>,
    pub assoc: Assoc,
}

/// Parse association rows whose columns are the keywords `columns` (in order; any of
/// [`ASSOC_COLUMNS`], missing ones read as empty). The snapshot uses [`ASSOC_COLUMNS`]; other
/// orders exist for reading real outputs taken with a different `format=`.
pub fn parse_assoc_rows(src: &Source, columns: &[&str]) -> (Vec<AssocRow>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut out = Vec::new();
    for_each_assoc_row(src, columns, &mut diags, |row| out.push(row));
    (out, diags)
}

/// [`parse_assoc_rows`] one row at a time: the snapshot streams a million rows straight into
/// its clusters instead of holding them all (~100 MB) first.
pub fn for_each_assoc_row(src: &Source, columns: &[&str], diags: &mut Vec<Diagnostic>, mut f: impl FnMut(AssocRow)) {
    if let Some(bad) = columns.iter().find(|c| !ASSOC_COLUMNS.iter().any(|k| k.eq_ignore_ascii_case(c))) {
        diags.push(error(src, 0, format!("unknown association column `{bad}`")));
        return;
    }
    let mut rows = AssocRows::new(columns);
    for_each_row(src, columns, false, diags, |row, diags| {
        if let Some(r) = rows.parse(src, row, diags) {
            f(r);
        }
    });
}

/// Turns split association rows into [`AssocRow`]s, keeping what one row can lend the next.
struct AssocRows<'k> {
    layout: Layout<'k>,
    // Rows come grouped by cluster and account: the previous row's names are reused when the
    // text is the same (one comparison instead of validating and building the name again).
    last_cluster: Option<Name>,
    last_account: Option<Name>,
}

impl<'k> AssocRows<'k> {
    fn new(columns: &[&str]) -> AssocRows<'k> {
        AssocRows { layout: Layout::new(ASSOC_COLUMNS, columns), last_cluster: None, last_account: None }
    }

    /// One row, or `None` when a cell is bad (each bad cell is reported).
    fn parse(&mut self, src: &Source, row: &Row<'_>, diags: &mut Vec<Diagnostic>) -> Option<AssocRow> {
        use col::*;
        let mut c = Cells { src, row, layout: &self.layout, diags };
        let cluster = c.name_reused(CLUSTER, NameKind::Cluster, &mut self.last_cluster);
        let account = c.name_reused(ACCOUNT, NameKind::Account, &mut self.last_account);
        let user = c.get(USER, |s| opt_name(s, NameKind::User));
        let partition = c.get(PARTITION, |s| opt_name(s, NameKind::Partition));
        let parent = c.get(PARENT, |s| opt_name(s, NameKind::Account));
        // Nearly every user association sets nothing: an empty (or default `1`) share and
        // empty limit cells are the shared empty association, without parsing each cell.
        let plain = (SHARE..ASSOC_COLUMNS.len()).all(|k| matches!(c.raw(k), "") || (k == SHARE && c.raw(k) == "1"));
        let assoc = if plain { Some(Assoc::default()) } else { parse_assoc_cells(&mut c) };
        Some(AssocRow {
            line: row.line,
            cluster: cluster?,
            account: account?,
            user: user?,
            partition: partition?,
            parent: parent?,
            assoc: assoc?,
        })
    }
}

/// The association read parsed as it arrives ([`AssocStream::feed`] any pieces of its bytes):
/// whole lines are split and their rows go straight into their clusters, so neither the text
/// nor a list of rows is ever held whole. [`parse_state`] feeds a snapshot file in one piece.
pub struct AssocStream {
    /// Name only (for messages).
    src: Source,
    rows: AssocRows<'static>,
    builder: ClusterBuilder,
    /// Bytes after the last newline seen.
    partial: Vec<u8>,
    /// Lines taken so far.
    lines: usize,
    /// An empty first line is held back: alone it is an empty output (`"\n"`).
    empty_first: bool,
    diags: Vec<Diagnostic>,
    unsplit: Vec<Unsplit>,
}

impl AssocStream {
    /// `rows_hint`: expected number of rows (capacity for the first cluster), 0 if unknown.
    pub fn new(name: impl Into<PathBuf>, rows_hint: usize) -> AssocStream {
        let src = Source::new(name, String::new());
        AssocStream {
            rows: AssocRows::new(ASSOC_COLUMNS),
            builder: ClusterBuilder::new(src.clone(), rows_hint),
            src,
            partial: Vec::new(),
            lines: 0,
            empty_first: false,
            diags: Vec::new(),
            unsplit: Vec::new(),
        }
    }

    /// Take the next bytes of the read.
    pub fn feed(&mut self, bytes: &[u8]) {
        let Some(last) = bytes.iter().rposition(|b| *b == b'\n') else {
            self.partial.extend_from_slice(bytes);
            return;
        };
        if self.partial.is_empty() {
            self.block(&bytes[..last]);
        } else {
            let mut whole = std::mem::take(&mut self.partial);
            whole.extend_from_slice(&bytes[..last]);
            self.block(&whole);
            whole.clear();
            self.partial = whole;
        }
        self.partial.extend_from_slice(&bytes[last + 1..]);
    }

    /// Whole lines (without the final newline).
    fn block(&mut self, bytes: &[u8]) {
        if std::mem::take(&mut self.empty_first) {
            self.diags.push(error(&self.src, 1, "empty line in sacctmgr output"));
        }
        if self.lines == 0 && (bytes.is_empty() || bytes == b"\r") {
            self.empty_first = true;
            self.lines = 1;
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let AssocStream { src, rows, builder, diags, unsplit, .. } = self;
        self.lines +=
            rows_in_block(src, &text, self.lines + 1, ASSOC_COLUMNS, false, diags, Some(unsplit), |row, diags| {
                if let Some(r) = rows.parse(src, row, diags) {
                    builder.push(r, diags);
                }
            });
    }

    /// The rows' clusters once the read has ended; `clusters` are the names of `clusters.txt`.
    fn finish(
        mut self,
        clusters: &BTreeSet<Name>,
        diags: &mut Vec<Diagnostic>,
        unsplit: &mut Vec<Unsplit>,
    ) -> BTreeMap<Name, ClusterState> {
        if !self.partial.is_empty() {
            let tail = std::mem::take(&mut self.partial);
            let tail = tail.strip_suffix(b"\r").unwrap_or(&tail);
            self.block(tail);
        }
        diags.append(&mut self.diags);
        unsplit.append(&mut self.unsplit);
        self.builder.finish(clusters, diags)
    }
}

/// The limit, QoS and DefaultQOS cells of one association row (`None` if any is bad; every
/// bad cell is reported).
fn parse_assoc_cells(c: &mut Cells<'_, '_>) -> Option<Assoc> {
    let fs = c.get(col::SHARE, fairshare);
    let grp_jobs = c.get(col::GRP_JOBS, parse_int);
    let grp_submit_jobs = c.get(col::GRP_SUBMIT_JOBS, parse_int);
    let grp_tres = c.get(col::GRP_TRES, values::parse_tres);
    let grp_tres_mins = c.get(col::GRP_TRES_MINS, values::parse_tres);
    let grp_wall = c.get(col::GRP_WALL, opt_duration);
    let max_jobs = c.get(col::MAX_JOBS, parse_int);
    let max_submit_jobs = c.get(col::MAX_SUBMIT_JOBS, parse_int);
    let max_tres = c.get(col::MAX_TRES, values::parse_tres);
    let max_tres_mins = c.get(col::MAX_TRES_MINS, values::parse_tres);
    let max_wall = c.get(col::MAX_WALL, opt_duration);
    let qos = c.get(col::QOS, parse_qos_list);
    let default_qos = c.get(col::DEFAULT_QOS, |s| opt_name(s, NameKind::Qos));
    let limits = Limits {
        fairshare: fs?,
        grp_jobs: grp_jobs?,
        grp_submit_jobs: grp_submit_jobs?,
        grp_tres: grp_tres?,
        grp_tres_mins: grp_tres_mins?,
        grp_wall: grp_wall?,
        max_jobs: max_jobs?,
        max_submit_jobs: max_submit_jobs?,
        max_tres: max_tres?,
        max_tres_mins: max_tres_mins?,
        max_wall: max_wall?,
    };
    Some(AssocData { limits, qos: qos?, default_qos: default_qos? }.into())
}

/// Parse `clusters.txt`: one cluster name per line, no duplicates.
pub fn parse_clusters(src: &Source) -> (BTreeSet<Name>, Vec<Diagnostic>) {
    let (rows, mut diags) = parse_rows(src, CLUSTER_COLUMNS, false);
    let mut out = BTreeSet::new();
    let layout = Layout::new(CLUSTER_COLUMNS, CLUSTER_COLUMNS);
    for row in &rows {
        let mut c = Cells { src, row, layout: &layout, diags: &mut diags };
        if let Some(name) = c.name(0, NameKind::Cluster)
            && !out.insert(name.clone())
        {
            diags.push(error(src, row.line, format!("field Cluster: cluster `{name}` is listed twice")));
        }
    }
    (out, diags)
}

/// Assemble parsed association rows into one [`ClusterState`] per cluster of `clusters`
/// (clusters without rows get an empty state). Errors are located in `src`.
pub fn build_clusters(
    src: &Source,
    clusters: &BTreeSet<Name>,
    rows: Vec<AssocRow>,
) -> (BTreeMap<Name, ClusterState>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut b = ClusterBuilder::new(src.clone(), rows.len());
    for row in rows {
        b.push(row, &mut diags);
    }
    (b.finish(clusters, &mut diags), diags)
}

/// Association rows, as they come, into clusters (what [`build_clusters`] does, one row at a
/// time).
struct ClusterBuilder {
    /// For messages.
    src: Source,
    per: BTreeMap<Name, PendingCluster>,
    /// Capacity for the first cluster's user rows: nearly every site has one cluster, and a
    /// million rows grown by doubling cost ~0.3 s of copying and page faults.
    first_capacity: usize,
}

struct PendingCluster {
    /// The first row's line (where a cluster missing from `clusters.txt` is reported).
    first_line: usize,
    accounts: Vec<(Name, Option<Name>, Assoc)>,
    lines: HashMap<Name, usize, crate::model::names::NameHash>,
    /// (key, assoc) in file order, and each one's line; sorted and checked for duplicates at
    /// the end (a sorted bulk build is much cheaper than a million inserts). Two lists: the
    /// first becomes the map's list in place.
    users: Vec<(UserKey, Assoc)>,
    user_lines: Vec<u32>,
}

impl ClusterBuilder {
    fn new(src: Source, rows_hint: usize) -> ClusterBuilder {
        ClusterBuilder { src, per: BTreeMap::new(), first_capacity: rows_hint }
    }

    fn push(&mut self, row: AssocRow, diags: &mut Vec<Diagnostic>) {
        let src = &self.src;
        let capacity = std::mem::take(&mut self.first_capacity);
        let p = self.per.entry(row.cluster.clone()).or_insert_with(|| PendingCluster {
            first_line: row.line,
            accounts: Vec::new(),
            lines: HashMap::default(),
            users: Vec::with_capacity(capacity),
            user_lines: Vec::with_capacity(capacity),
        });
        match row.user {
            None => {
                if let Some(part) = &row.partition {
                    diags.push(error(
                        src,
                        row.line,
                        format!("field Partition: account association `{}` has partition `{part}` (only user associations have one)", row.account),
                    ));
                    return;
                }
                let parent = if row.account.as_str() == "root" {
                    if let Some(parent) = &row.parent {
                        diags.push(error(
                            src,
                            row.line,
                            format!("field ParentName: account `root` has parent `{parent}`"),
                        ));
                    }
                    None
                } else {
                    if row.parent.is_none() {
                        diags.push(error(
                            src,
                            row.line,
                            format!("field ParentName: account `{}` has no parent (only `root` may)", row.account),
                        ));
                        return;
                    }
                    row.parent
                };
                if p.lines.contains_key(&row.account) {
                    diags.push(error(
                        src,
                        row.line,
                        format!(
                            "field Account: account `{}` is listed twice on cluster `{}`",
                            row.account, row.cluster
                        ),
                    ));
                    return;
                }
                p.lines.insert(row.account.clone(), row.line);
                p.accounts.push((row.account, parent, row.assoc));
            }
            Some(user) => {
                if let Some(parent) = &row.parent {
                    diags.push(error(
                        src,
                        row.line,
                        format!("field ParentName: user association of `{user}` has parent `{parent}` (only account rows have one)"),
                    ));
                    return;
                }
                let key = UserKey { account: row.account, user, partition: row.partition };
                p.users.push((key, row.assoc));
                p.user_lines.push(u32::try_from(row.line).unwrap_or(u32::MAX));
            }
        }
    }

    /// Clusters in `clusters` (those without rows get an empty state); rows of any other
    /// cluster are reported.
    fn finish(mut self, clusters: &BTreeSet<Name>, diags: &mut Vec<Diagnostic>) -> BTreeMap<Name, ClusterState> {
        let src = &self.src;
        for (name, p) in &self.per {
            if !clusters.contains(name) {
                diags.push(
                    error(src, p.first_line, format!("field Cluster: cluster `{name}` is not in clusters.txt"))
                        .hint(OUT_OF_STEP),
                );
            }
        }
        let mut out = BTreeMap::new();
        for cluster in clusters {
            let Some(p) = self.per.remove(cluster) else {
                out.insert(cluster.clone(), ClusterState::default());
                continue;
            };
            // sacctmgr prints rows sorted by key: then this is one pass and nothing moves.
            let sorted = p.users.windows(2).all(|w| w[0].0 < w[1].0);
            let (users, lines) = if sorted {
                (p.users, p.user_lines)
            } else {
                let mut all: Vec<((UserKey, Assoc), u32)> = p.users.into_iter().zip(p.user_lines).collect();
                all.sort_by(|a, b| a.0.0.cmp(&b.0.0).then(a.1.cmp(&b.1)));
                // A repeated key keeps its first row; the others are reported.
                all.dedup_by(|later, first| {
                    let same = later.0.0 == first.0.0;
                    if same {
                        let key = &later.0.0;
                        diags.push(error(
                            src,
                            later.1 as usize,
                            format!(
                                "field User: user association ({}, {}, {:?}) is listed twice",
                                key.user,
                                key.account,
                                key.partition.as_ref().map(Name::as_str)
                            ),
                        ));
                    }
                    same
                });
                all.into_iter().unzip()
            };
            // The account of the previous row, known to have an account row.
            let mut known: Option<&Name> = None;
            for ((key, _), line) in users.iter().zip(&lines) {
                if known != Some(&key.account) {
                    if p.lines.contains_key(&key.account) {
                        known = Some(&key.account);
                    } else {
                        diags.push(error(
                            src,
                            *line as usize,
                            format!("field Account: user association under account `{}`, which has no account row on cluster `{cluster}`", key.account),
                        ));
                    }
                }
            }
            drop(lines);
            // Collected in place (no second list of a million rows).
            let users: BTreeMap<UserKey, Assoc> = users.into_iter().collect();
            let line_of = |n: &Name| p.lines.get(n).copied().unwrap_or(0);
            let accounts = match AccountGraph::build(p.accounts) {
                Ok(g) => g,
                Err(errs) => {
                    for e in errs {
                        let line = match &e {
                            GraphError::Duplicate(n) | GraphError::NoParent(n) => line_of(n),
                            GraphError::MissingParent { child, .. } => line_of(child),
                            GraphError::Cycle(names) => names.iter().map(line_of).min().unwrap_or(0),
                        };
                        diags.push(error(src, line, format!("field ParentName: on cluster `{cluster}`: {e}")));
                    }
                    AccountGraph::default()
                }
            };
            out.insert(cluster.clone(), ClusterState { accounts, users, ..Default::default() });
        }
        out
    }
}

/// The columns of a `defaults.txt`: those of the read today, or the older three (snapshots
/// taken before the read asked for the partition), told by the first row.
fn default_columns(text: &str) -> &'static [&'static str] {
    let first = text.lines().next().unwrap_or("");
    if first.split('|').count() == DEFAULT_COLUMNS_V1.len() { DEFAULT_COLUMNS_V1 } else { DEFAULT_COLUMNS }
}

/// One row of `defaults.txt`: (user, line, account, partition).
type DefaultRow = (Name, usize, Name, Option<Name>);

/// Parse `defaults.txt` (Cluster|User|Account|Partition, or the older Cluster|User|Account)
/// into `clusters[c].defaults` and `clusters[c].unmarked`.
pub fn parse_defaults(src: &Source, clusters: &mut BTreeMap<Name, ClusterState>) -> Vec<Diagnostic> {
    let columns = default_columns(&src.text);
    let with_partition = columns.len() == DEFAULT_COLUMNS.len();
    let (rows, mut diags) = parse_rows(src, columns, false);
    let layout = Layout::new(DEFAULT_COLUMNS, columns);
    // Rows come grouped by cluster: reuse the previous row's cluster name.
    let mut last_cluster: Option<(&str, Name)> = None;
    // (user, line, account, partition) per cluster; one sort and bulk build per cluster
    // (sacctmgr prints them sorted, so the sort is one pass) instead of two hundred thousand
    // inserts.
    let mut per: BTreeMap<Name, Vec<DefaultRow>> = BTreeMap::new();
    for row in &rows {
        let mut c = Cells { src, row, layout: &layout, diags: &mut diags };
        let (Some(cluster), Some(user), Some(account), Some(partition)) = (
            c.name_cached(0, NameKind::Cluster, &mut last_cluster),
            c.name(1, NameKind::User),
            c.name(2, NameKind::Account),
            c.get(3, |s| opt_name(s, NameKind::Partition)),
        ) else {
            continue;
        };
        if !clusters.contains_key(&cluster) {
            diags.push(
                error(src, row.line, format!("field Cluster: cluster `{cluster}` is not in clusters.txt"))
                    .hint(OUT_OF_STEP),
            );
            continue;
        }
        per.entry(cluster).or_default().push((user, row.line, account, partition));
    }
    for (cluster, mut list) in per {
        list.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let cs = clusters.get_mut(&cluster).expect("checked above");
        // slurmdbd marks the default on every association row of (user, account): a user
        // with partition rows under its DefaultAccount is listed once per marked row.
        let mut marked: BTreeSet<UserKey> = BTreeSet::new();
        list.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same && later.2 != first.2 {
                diags.push(error(
                    src,
                    later.1,
                    format!(
                        "field User: user `{}` has two default accounts on cluster `{cluster}` (`{}` and `{}`)",
                        later.0, first.2, later.2
                    ),
                ));
            }
            if same && later.2 == first.2 {
                marked.insert(UserKey { account: later.2.clone(), user: later.0.clone(), partition: later.3.take() });
            }
            same
        });
        if with_partition {
            marked.extend(list.iter_mut().map(|(user, _, account, partition)| UserKey {
                account: account.clone(),
                user: user.clone(),
                partition: partition.take(),
            }));
            // The rows of (user, DefaultAccount) that are not listed carry no mark.
            for (user, _, account, _) in &list {
                let lo = UserKey { account: account.clone(), user: user.clone(), partition: None };
                let rows = cs.users.range(lo..).take_while(|(k, _)| &k.account == account && &k.user == user);
                cs.unmarked.extend(rows.filter(|(k, _)| !marked.contains(*k)).map(|(k, _)| k.clone()));
            }
        }
        cs.defaults = list.into_iter().map(|(user, _, account, _)| (user, account)).collect();
    }
    diags
}

/// Parse an `Account|<free text>` file into account -> text.
pub fn parse_account_text(src: &Source, columns: &[&str]) -> (BTreeMap<Name, (usize, String)>, Vec<Diagnostic>) {
    let (rows, mut diags) = parse_rows(src, columns, true);
    let mut out = BTreeMap::new();
    let layout = Layout::new(columns, columns);
    for row in &rows {
        let mut c = Cells { src, row, layout: &layout, diags: &mut diags };
        let Some(account) = c.name(0, NameKind::Account) else {
            continue;
        };
        let text = row.cells.last().copied().unwrap_or("").to_string();
        if out.contains_key(&account) {
            diags.push(error(src, row.line, format!("field Account: account `{account}` is listed twice")));
            continue;
        }
        out.insert(account, (row.line, text));
    }
    (out, diags)
}

/// Merge `accounts-descr.txt` and `accounts-org.txt` into account records.
pub fn parse_accounts(descr: &Source, org: &Source) -> (BTreeMap<Name, AccountRecord>, Vec<Diagnostic>) {
    let (d, mut diags) = parse_account_text(descr, DESCR_COLUMNS);
    let (o, d2) = parse_account_text(org, ORG_COLUMNS);
    diags.extend(d2);
    let mut out = BTreeMap::new();
    for (name, (line, text)) in &d {
        match o.get(name) {
            Some((_, org_text)) => {
                out.insert(
                    name.clone(),
                    AccountRecord { description: Some(text.clone()), organization: Some(org_text.clone()) },
                );
            }
            None => diags.push(
                error(descr, *line, format!("field Account: account `{name}` is not in {}", org.name.display()))
                    .hint(OUT_OF_STEP),
            ),
        }
    }
    for (name, (line, _)) in &o {
        if !d.contains_key(name) {
            diags.push(
                error(org, *line, format!("field Account: account `{name}` is not in {}", descr.name.display()))
                    .hint(OUT_OF_STEP),
            );
        }
    }
    (out, diags)
}

/// Parse `qos.txt` (Name|Flags|GrpTRESMins|GrpTRES|GrpSubmitJobs|MaxWall|Description).
pub fn parse_qos(src: &Source) -> (BTreeMap<Name, Qos>, Vec<Diagnostic>) {
    let (rows, mut diags) = parse_rows(src, QOS_COLUMNS, true);
    let mut out = BTreeMap::new();
    let layout = Layout::new(QOS_COLUMNS, QOS_COLUMNS);
    for row in &rows {
        let mut c = Cells { src, row, layout: &layout, diags: &mut diags };
        let name = c.name(0, NameKind::Qos);
        let flags = c.get(1, parse_flags);
        let grp_tres_mins = c.get(2, values::parse_tres);
        let grp_tres = c.get(3, values::parse_tres);
        let grp_submit_jobs = c.get(4, parse_int);
        let max_wall = c.get(5, opt_duration);
        let description = c.raw(6).to_string();
        let (Some(name), Some(flags), Some(grp_tres_mins), Some(grp_tres), Some(grp_submit_jobs), Some(max_wall)) =
            (name, flags, grp_tres_mins, grp_tres, grp_submit_jobs, max_wall)
        else {
            continue;
        };
        if out.contains_key(&name) {
            diags.push(error(src, row.line, format!("field Name: QoS `{name}` is listed twice")));
            continue;
        }
        out.insert(
            name,
            Qos { flags, grp_tres_mins, grp_tres, grp_submit_jobs, max_wall, description: Some(description) },
        );
    }
    (out, diags)
}

/// Parse all reads of a snapshot into a [`State`], or every problem found.
/// Rows that cannot be split ([`Unsplit`]) are errors here; [`parse_state_unsplit`] sets them
/// apart instead.
pub fn parse_state(raw: &RawReads) -> Result<State, Vec<Diagnostic>> {
    let (state, unsplit) = parse_state_unsplit(raw)?;
    if unsplit.is_empty() {
        return Ok(state);
    }
    Err(unsplit.iter().map(|u| u.diagnostic(true, "rename the object in slurmdbd (a name without `|`)")).collect())
}

/// [`parse_state`] with the rows that cannot be split left out of the state and returned.
pub fn parse_state_unsplit(raw: &RawReads) -> Result<(State, Vec<Unsplit>), Vec<Diagnostic>> {
    // Association rows go straight into their clusters (no list of a million rows first).
    let rows_hint = raw.assocs.text.bytes().filter(|b| *b == b'\n').count() + 1;
    let mut assocs = AssocStream::new(&raw.assocs.name, rows_hint);
    assocs.feed(raw.assocs.text.as_bytes());
    parse_state_streamed(raw, assocs)
}

/// `defaults.txt` without its rows of more than three cells (set apart into `unsplit`), and
/// for each kept line its line in the original.
fn split_defaults(src: &Source, unsplit: &mut Vec<Unsplit>) -> Option<(Source, Vec<usize>)> {
    let n = default_columns(&src.text).len();
    if !src.text.lines().any(|l| l.split('|').count() > n) {
        return None;
    }
    let mut kept = String::new();
    let mut lines = Vec::new();
    for (i, l) in src.text.lines().enumerate() {
        if l.trim_end_matches('\r').split('|').count() > n {
            unsplit.push(Unsplit { file: src.name.clone(), line: i + 1, text: l.trim_end_matches('\r').to_string() });
        } else {
            kept.push_str(l);
            kept.push('\n');
            lines.push(i + 1);
        }
    }
    Some((Source::new(src.name.clone(), kept), lines))
}

/// [`parse_state_unsplit`] with the association read already fed to `assocs` (`raw.assocs` is
/// not looked at): how a live read parses its largest output while it arrives.
pub fn parse_state_streamed(raw: &RawReads, assocs: AssocStream) -> Result<(State, Vec<Unsplit>), Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut unsplit = Vec::new();
    let (clusters, d) = parse_clusters(&raw.clusters);
    diags.extend(d);
    let mut cluster_states = assocs.finish(&clusters, &mut diags, &mut unsplit);
    match split_defaults(&raw.defaults, &mut unsplit) {
        None => diags.extend(parse_defaults(&raw.defaults, &mut cluster_states)),
        Some((kept, lines)) => {
            let mut d = parse_defaults(&kept, &mut cluster_states);
            for x in &mut d {
                if let Some(loc) = &mut x.location
                    && loc.line > 0
                {
                    loc.line = lines.get(loc.line - 1).copied().unwrap_or(loc.line);
                }
            }
            diags.extend(d);
        }
    }
    let (accounts, d) = parse_accounts(&raw.accounts_descr, &raw.accounts_org);
    diags.extend(d);
    let (qos, d) = parse_qos(&raw.qos);
    diags.extend(d);
    if diags.is_empty() {
        Ok((State { clusters: cluster_states, accounts, qos }, unsplit))
    } else {
        crate::diag::sort(&mut diags);
        cap_per_file(&mut diags);
        Err(diags)
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering: the inverse of the parsers, in sacctmgr's print forms.

/// A duration in minutes as sacctmgr prints it: `HH:MM:SS`, or `D-HH:MM:SS` from one day.
pub fn format_duration(minutes: u64) -> String {
    let (d, h, m) = (minutes / 1440, (minutes % 1440) / 60, minutes % 60);
    if d > 0 { format!("{d}-{h:02}:{m:02}:00") } else { format!("{h:02}:{m:02}:00") }
}

/// A TRES map as sacctmgr prints it: sorted, integers, mem with an `M` suffix (`mem=1536M`).
pub fn format_tres(t: &Tres) -> String {
    let items: Vec<String> =
        t.iter().map(|(k, v)| if k == "mem" { format!("{k}={v}M") } else { format!("{k}={v}") }).collect();
    items.join(",")
}

/// A raw QoS list: `` (inherit), `a,b` (set), `+a,-b` (deltas). An empty set or empty delta
/// prints as `` and therefore reads back as inherit.
pub fn format_qos_list(q: &QosList) -> String {
    match q {
        QosList::Inherit => String::new(),
        QosList::Set(s) => values::join(s),
        QosList::Delta { .. } => q.display(),
    }
}

fn opt_to_string<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

fn assoc_cells(a: &Assoc) -> Vec<String> {
    let l = &a.limits;
    vec![
        l.fairshare.map(|f| f.to_arg()).unwrap_or_else(|| "1".into()),
        opt_to_string(&l.grp_jobs),
        opt_to_string(&l.grp_submit_jobs),
        format_tres(&l.grp_tres),
        format_tres(&l.grp_tres_mins),
        l.grp_wall.map(format_duration).unwrap_or_default(),
        opt_to_string(&l.max_jobs),
        opt_to_string(&l.max_submit_jobs),
        format_tres(&l.max_tres),
        format_tres(&l.max_tres_mins),
        l.max_wall.map(format_duration).unwrap_or_default(),
        format_qos_list(&a.qos),
        opt_to_string(&a.default_qos),
    ]
}

fn lines(rows: Vec<String>) -> String {
    let mut s = String::new();
    for r in rows {
        s.push_str(&r);
        s.push('\n');
    }
    s
}

/// Render `state` as the raw `-n -P` outputs of [`reads::READS`], rows sorted. Parsing the
/// result gives `state` back, except for what sacctmgr cannot print: `None` descriptions and
/// organizations print as empty text, and an empty QoS set or delta prints as inherit.
pub fn write_state(state: &State) -> RawReads {
    let clusters = lines(state.clusters.keys().map(|c| c.to_string()).collect());
    let mut assocs = Vec::new();
    let mut defaults = Vec::new();
    for (cname, cs) in &state.clusters {
        for (name, parent, assoc) in cs.accounts.iter_sorted() {
            let mut cells =
                vec![cname.to_string(), name.to_string(), String::new(), String::new(), opt_to_string(&parent)];
            cells.extend(assoc_cells(assoc));
            assocs.push(cells.join("|"));
        }
        for (key, assoc) in &cs.users {
            let mut cells = vec![
                cname.to_string(),
                key.account.to_string(),
                key.user.to_string(),
                opt_to_string(&key.partition),
                String::new(),
            ];
            cells.extend(assoc_cells(assoc));
            assocs.push(cells.join("|"));
        }
        for (user, account) in &cs.defaults {
            // one row per marked association row of (user, DefaultAccount), as slurmdbd prints
            let lo = UserKey { account: account.clone(), user: user.clone(), partition: None };
            let mut any = false;
            for (k, _) in cs.users.range(lo..).take_while(|(k, _)| &k.account == account && &k.user == user) {
                any = true;
                if !cs.unmarked.contains(k) {
                    defaults.push(format!("{cname}|{user}|{account}|{}", opt_to_string(&k.partition)));
                }
            }
            if !any {
                defaults.push(format!("{cname}|{user}|{account}|"));
            }
        }
    }
    let descr = state.accounts.iter().map(|(n, r)| format!("{n}|{}", r.description.as_deref().unwrap_or(""))).collect();
    let org = state.accounts.iter().map(|(n, r)| format!("{n}|{}", r.organization.as_deref().unwrap_or(""))).collect();
    let qos = state
        .qos
        .iter()
        .map(|(n, q)| {
            let flags: Vec<&str> = q.flags.iter().map(String::as_str).collect();
            format!(
                "{n}|{}|{}|{}|{}|{}|{}",
                flags.join(","),
                format_tres(&q.grp_tres_mins),
                format_tres(&q.grp_tres),
                opt_to_string(&q.grp_submit_jobs),
                q.max_wall.map(format_duration).unwrap_or_default(),
                q.description.as_deref().unwrap_or("")
            )
        })
        .collect();
    RawReads {
        clusters: Source::new(reads::CLUSTERS, clusters),
        assocs: Source::new(reads::ASSOCS, lines(assocs)),
        defaults: Source::new(reads::DEFAULTS, lines(defaults)),
        accounts_descr: Source::new(reads::ACCOUNTS_DESCR, lines(descr)),
        accounts_org: Source::new(reads::ACCOUNTS_ORG, lines(org)),
        qos: Source::new(reads::QOS, lines(qos)),
    }
}

#[cfg(test)]
mod tests;
