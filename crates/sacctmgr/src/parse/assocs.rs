//! The association read: rows into clusters (the account tree and the user associations), as a
//! whole text or streamed while sacctmgr prints it (`AssocStream`).
//!
//! Part of the snapshot parser: pure, no I/O, no spawning, no printing, no panic on any input.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use slurmplan_diag::Diagnostic;
use slurmplan_model::names::{Name, NameKind};
use slurmplan_model::values::{self};
use slurmplan_model::{AccountGraph, Assoc, AssocData, ClusterState, GraphError, Limits, UserKey};

use super::rows::{
    Cells, Layout, Row, error, fairshare, for_each_row, opt_duration, opt_name, parse_int, parse_qos_list, parse_rows,
    rows_in_block,
};
use super::{ASSOC_COLUMNS, CLUSTER_COLUMNS, OUT_OF_STEP, Source, Unsplit, col};

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
/// its clusters instead of holding them all first.
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
    pub(super) fn finish(
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
    /// million rows grown by doubling cost copying and page faults.
    first_capacity: usize,
}

struct PendingCluster {
    /// The first row's line (where a cluster missing from `clusters.txt` is reported).
    first_line: usize,
    accounts: Vec<(Name, Option<Name>, Assoc)>,
    lines: HashMap<Name, usize, slurmplan_model::names::NameHash>,
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
