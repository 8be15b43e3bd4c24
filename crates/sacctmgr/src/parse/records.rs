//! The other reads: DefaultAccounts (`onlydefaults`), account Descriptions and Organizations,
//! and QoS.
//!
//! Part of the snapshot parser: pure, no I/O, no spawning, no printing, no panic on any input.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_diag::Diagnostic;
use slurmplan_model::names::{Name, NameKind};
use slurmplan_model::values::{self};
use slurmplan_model::{AccountRecord, ClusterState, Qos, UserKey};

use super::rows::{Cells, Layout, error, opt_duration, opt_name, parse_flags, parse_int, parse_rows};
use super::{DEFAULT_COLUMNS, DEFAULT_COLUMNS_V1, DESCR_COLUMNS, ORG_COLUMNS, OUT_OF_STEP, QOS_COLUMNS, Source};

/// The columns of a `defaults.txt`: those of the read today, or the older three (snapshots
/// taken before the read asked for the partition), told by the first row.
pub(super) fn default_columns(text: &str) -> &'static [&'static str] {
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
