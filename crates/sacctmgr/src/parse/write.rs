//! The inverse of the parsers: a `State` written as the snapshot files sacctmgr would print
//! (`write_state`), and the value formats they use.
//!
//! Part of the snapshot parser: pure, no I/O, no spawning, no printing, no panic on any input.

use crate::reads;
use slurmplan_model::values::{self, QosList, Tres};
use slurmplan_model::{Assoc, State, UserKey};

use super::{RawReads, Source};

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

pub(super) fn lines(rows: Vec<String>) -> String {
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
