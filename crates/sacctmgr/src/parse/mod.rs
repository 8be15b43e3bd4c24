//! Pure parsers from the raw `sacctmgr -n -P` outputs of a snapshot into a [`State`], and the
//! inverse renderer [`write_state`].
//!
//! Cells are taken by position (`|`-separated, nothing escaped); free text (Description,
//! Organization) is always the last column and its tail is re-joined with `|`. Every problem is
//! collected with its file and line, never just the first one. This module must NOT do I/O,
//! spawn processes, print, or panic on any input.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use slurmplan_diag::{Diagnostic, Location};
use slurmplan_model::{Name, State};

use super::reads;

mod assocs;
mod records;
mod rows;
mod write;

pub use assocs::{AssocRow, AssocStream, build_clusters, for_each_assoc_row, parse_assoc_rows, parse_clusters};
use records::default_columns;
pub use records::{parse_account_text, parse_accounts, parse_defaults, parse_qos};
pub use rows::{Row, for_each_row, parse_flags, parse_int, parse_qos_list, parse_rows, snapshot_name};
pub use write::{format_duration, format_qos_list, format_tres, write_state};

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
    parse_state_streamed(raw, StreamedAssocs::All(Box::new(assocs)))
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

/// The association rows already parsed as they arrived: one stream of every cluster's rows (a
/// snapshot file), or one stream per cluster (a live read takes one call per cluster).
pub enum StreamedAssocs {
    All(Box<AssocStream>),
    /// Each cluster of the clusters read with the stream of its own read; a stream's rows of
    /// another cluster are reported as out of step.
    PerCluster(Vec<(Name, AssocStream)>),
}

/// [`parse_state_unsplit`] with the association read(s) already fed (`raw.assocs` is not
/// looked at): how a live read parses its largest output while it arrives.
pub fn parse_state_streamed(raw: &RawReads, assocs: StreamedAssocs) -> Result<(State, Vec<Unsplit>), Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut unsplit = Vec::new();
    let (clusters, d) = parse_clusters(&raw.clusters);
    diags.extend(d);
    let mut cluster_states = match assocs {
        StreamedAssocs::All(s) => (*s).finish(&clusters, &mut diags, &mut unsplit),
        StreamedAssocs::PerCluster(streams) => {
            let mut out = BTreeMap::new();
            for (name, s) in streams {
                let one = BTreeSet::from([name]);
                out.extend(s.finish(&one, &mut diags, &mut unsplit));
            }
            // a cluster whose read was not taken (the clusters read did not parse) is empty
            for c in &clusters {
                out.entry(c.clone()).or_default();
            }
            out
        }
    };
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
        slurmplan_diag::sort(&mut diags);
        cap_per_file(&mut diags);
        Err(diags)
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering: the inverse of the parsers, in sacctmgr's print forms.

#[cfg(test)]
mod tests;
