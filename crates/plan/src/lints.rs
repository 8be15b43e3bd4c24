//! Lints: stable codes for risky steps of a plan (docs/lints.md). They never change a plan; they
//! tell the reviewer what a step does to users beyond the object it names. Pure: no I/O.
//!
//! | code | name | when |
//! |---|---|---|
//! | SP001 | delete-account-with-users | an account is deleted while it has user associations |
//! | SP002 | delete-default-account | an account or association that is a user's DefaultAccount goes |
//! | SP003 | reparent-changes-inherited-qos | after a move, an account inheriting QoS gets another effective list |
//! | SP004 | qos-swap-moves-user-defaults | a QoS swap step changes user associations' effective DefaultQOS |
//! | SP005 | mass-delete | the mass-deletion guard was overridden with `--allow-mass-delete` |
//! | SP006 | delete-loses-usage | associations are deleted: their usage goes with them, for good |

use std::collections::{BTreeMap, BTreeSet};

use super::{Phase, Step};
use slurmplan_diff::{Change, user_key_label};
use slurmplan_model::{Name, QosList, State, UserKey};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
        }
    }
}

/// One finding about a plan. `code` and `name` are stable identifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lint {
    pub code: String,
    pub name: String,
    pub severity: Severity,
    pub message: String,
    /// The step (1-based) that does the risky thing, when there is one.
    pub step: Option<usize>,
    /// Address of the change the lint is about.
    pub address: String,
}

pub const SP001: (&str, &str) = ("SP001", "delete-account-with-users");
pub const SP002: (&str, &str) = ("SP002", "delete-default-account");
pub const SP003: (&str, &str) = ("SP003", "reparent-changes-inherited-qos");
pub const SP004: (&str, &str) = ("SP004", "qos-swap-moves-user-defaults");
pub const SP005: (&str, &str) = ("SP005", "mass-delete");
pub const SP006: (&str, &str) = ("SP006", "delete-loses-usage");

impl Lint {
    pub fn new(id: (&str, &str), severity: Severity, address: String, step: Option<usize>, message: String) -> Lint {
        Lint { code: id.0.into(), name: id.1.into(), severity, message, step, address }
    }
}

/// `a, b, c and 4 more`
pub fn list<T: std::fmt::Display>(items: &[T]) -> String {
    const MAX: usize = 5;
    let shown: Vec<String> = items.iter().take(MAX).map(|i| i.to_string()).collect();
    let mut s = shown.join(", ");
    if items.len() > MAX {
        s.push_str(&format!(" and {} more", items.len() - MAX));
    }
    s
}

/// The first step of a phase caused by each address (one pass, not a search per lint).
fn step_index(steps: &[Step]) -> BTreeMap<(Phase, &str), usize> {
    let mut index = BTreeMap::new();
    for s in steps {
        for c in &s.causes {
            index.entry((s.phase, c.as_str())).or_insert(s.number);
        }
    }
    index
}

fn qos_text(s: &BTreeSet<Name>) -> String {
    if s.is_empty() { "(none)".into() } else { s.iter().map(Name::as_str).collect::<Vec<_>>().join(",") }
}

/// SP001-SP003 from the two states, the changes and the ordered steps.
pub fn lint(current: &State, desired: &State, changes: &[Change], steps: &[Step]) -> Vec<Lint> {
    let mut out = Vec::new();
    let step_of = step_index(steps);
    let step_of = |phase: Phase, address: &str| step_of.get(&(phase, address)).copied();
    // cluster -> account -> users whose DefaultAccount it is (built once, on first use).
    let mut defaults_of: DefaultsOf<'_> = BTreeMap::new();
    let deleted: BTreeSet<(&Name, &Name)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::AccountDelete { cluster, name, .. } => Some((cluster, name)),
            _ => None,
        })
        .collect();
    for ch in changes {
        match ch {
            Change::AccountDelete { cluster, name, .. } => {
                let step = step_of(Phase::AccountDelete, &ch.address());
                account_delete_lints(current, desired, ch, (cluster, name), step, &mut defaults_of, &mut out);
            }
            Change::UserDelete { cluster, key, .. } => {
                if deleted.contains(&(cluster, &key.account)) {
                    continue; // reported once, on the account
                }
                let step = step_of(Phase::UserRemove, &ch.address());
                user_delete_lint(current, desired, ch, (cluster, key), step, &mut out);
            }
            Change::AccountReparent { cluster, name, from, to } => {
                reparent_lint(current, desired, steps, ch, (cluster, name, from, to), &mut out);
            }
            _ => {}
        }
    }
    usage_lint(changes, steps, &mut out);
    out
}

/// SP006, once per plan: the associations it deletes (an account's own and its users') lose
/// their usage in slurmdbd (RawUsage, fairshare history); nothing brings it back, an undo
/// re-creates them empty. Points at the first step that deletes one.
fn usage_lint(changes: &[Change], steps: &[Step], out: &mut Vec<Lint>) {
    let deleted: Vec<String> = changes
        .iter()
        .filter(|c| matches!(c, Change::AccountDelete { .. } | Change::UserDelete { .. }))
        .map(Change::address)
        .collect();
    if deleted.is_empty() {
        return;
    }
    let step = steps.iter().find(|s| matches!(s.phase, Phase::AccountDelete | Phase::UserRemove)).map(|s| s.number);
    out.push(Lint::new(
        SP006,
        Severity::Info,
        "plan".into(),
        step,
        format!(
            "{} association(s) are deleted with their usage (RawUsage, fairshare history), which slurmdbd does not keep: re-creating them (`slurmplan undo` too) brings them back empty: {}",
            deleted.len(),
            list(&deleted)
        ),
    ));
}

/// cluster -> account -> users whose DefaultAccount it is.
type DefaultsOf<'a> = BTreeMap<&'a Name, BTreeMap<&'a Name, Vec<&'a Name>>>;

/// SP001 and SP002 for the deletion of account `name` on `cluster` (`ch`, its step `step`).
fn account_delete_lints<'a>(
    current: &'a State,
    desired: &State,
    ch: &Change,
    (cluster, name): (&'a Name, &Name),
    step: Option<usize>,
    defaults_of: &mut DefaultsOf<'a>,
    out: &mut Vec<Lint>,
) {
    let Some(c) = current.clusters.get(cluster) else { return };
    let addr = ch.address();
    let users: Vec<String> = c.users_of_account(name).map(|(k, _)| user_key_label(k)).collect();
    if !users.is_empty() {
        out.push(Lint::new(
            SP001,
            Severity::Warning,
            addr.clone(),
            step,
            format!(
                "account `{name}` on `{cluster}` is deleted with {} user association(s): {}; their jobs can no longer be charged to it",
                users.len(),
                list(&users)
            ),
        ));
    }
    let by_account = defaults_of.entry(cluster).or_insert_with(|| {
        let mut m: BTreeMap<&Name, Vec<&Name>> = BTreeMap::new();
        for (u, a) in &c.defaults {
            m.entry(a).or_default().push(u);
        }
        m
    });
    let moved: Vec<String> = by_account
        .get(name)
        .into_iter()
        .flatten()
        .map(|u| match desired.clusters.get(cluster).and_then(|d| d.defaults.get(*u)) {
            Some(to) => format!("{u} -> {to}"),
            None => format!("{u} (no association left)"),
        })
        .collect();
    if !moved.is_empty() {
        out.push(Lint::new(
            SP002,
            Severity::Warning,
            addr,
            step,
            format!(
                "account `{name}` on `{cluster}` is the DefaultAccount of {} user(s): {}; jobs submitted without -A go to the new default",
                moved.len(),
                list(&moved)
            ),
        ));
    }
}

/// SP002 for the removal of user association `key` on `cluster` (`ch`, its step `step`) that is
/// the user's DefaultAccount.
fn user_delete_lint(
    current: &State,
    desired: &State,
    ch: &Change,
    (cluster, key): (&Name, &UserKey),
    step: Option<usize>,
    out: &mut Vec<Lint>,
) {
    let Some(c) = current.clusters.get(cluster) else { return };
    if c.defaults.get(&key.user) != Some(&key.account) {
        return;
    }
    let d = desired.clusters.get(cluster);
    if d.is_some_and(|d| d.is_associated(&key.user, &key.account)) {
        return; // another partition of the same account stays
    }
    let to = d.and_then(|d| d.defaults.get(&key.user));
    let addr = ch.address();
    out.push(Lint::new(
        SP002,
        Severity::Warning,
        addr.clone(),
        step,
        match to {
            Some(to) => format!(
                "`{}` is the DefaultAccount of `{}` on `{cluster}`; it moves to `{to}` first, so jobs submitted without -A go to `{to}`",
                key.account, key.user
            ),
            None => format!(
                "`{}` is the DefaultAccount of `{}` on `{cluster}`, and it is the user's last association there",
                key.account, key.user
            ),
        },
    ));
}

/// SP003 for moving account `name` on `cluster` from `from` to `to` (`ch`).
fn reparent_lint(
    current: &State,
    desired: &State,
    steps: &[Step],
    ch: &Change,
    (cluster, name, from, to): (&Name, &Name, &Name, &Name),
    out: &mut Vec<Lint>,
) {
    let (Some(c), Some(d)) = (current.clusters.get(cluster), desired.clusters.get(cluster)) else {
        return;
    };
    let mut moved: Vec<String> = Vec::new();
    for x in d.accounts.subtree(name.as_str()) {
        let Some(node) = d.accounts.get(x.as_str()) else { continue };
        if matches!(node.assoc.qos, QosList::Set(_)) || !c.accounts.contains(x.as_str()) {
            continue;
        }
        let before = c.accounts.effective_qos(x.as_str());
        let after = d.accounts.effective_qos(x.as_str());
        if before != after {
            moved.push(format!("{x}: {} -> {}", qos_text(&before), qos_text(&after)));
        }
    }
    if !moved.is_empty() {
        out.push(Lint::new(
            SP003,
            Severity::Info,
            ch.address(),
            reparent_step(steps, cluster, name),
            format!(
                "moving `{name}` on `{cluster}` from `{from}` to `{to}` changes the QoS that {} account(s) inherit: {}",
                moved.len(),
                list(&moved)
            ),
        ));
    }
}

/// The `set parent=` step itself (the move may be preceded by pinning steps of the same cause).
fn reparent_step(steps: &[Step], cluster: &Name, name: &Name) -> Option<usize> {
    steps
        .iter()
        .find(|s| {
            matches!(&s.command, slurmplan_sacctmgr::command::Command::Reparent { cluster: c, name: n, .. } if c == cluster && n == name)
        })
        .map(|s| s.number)
}

/// SP004 for one QoS-swap step: the user associations whose effective DefaultQOS it changed.
pub fn qos_swap_lint(
    step: usize,
    address: String,
    cluster: &Name,
    moved: &[(UserKey, Option<Name>, Option<Name>)],
) -> Lint {
    let show = |q: &Option<Name>| q.as_ref().map(|q| q.to_string()).unwrap_or_else(|| "(none)".into());
    let items: Vec<String> =
        moved.iter().map(|(k, a, b)| format!("{}: {} -> {}", user_key_label(k), show(a), show(b))).collect();
    Lint::new(
        SP004,
        Severity::Info,
        address,
        Some(step),
        format!(
            "this QoS change on `{cluster}` moves the effective DefaultQOS of {} user association(s): {}; jobs submitted without --qos run under the new default",
            items.len(),
            list(&items)
        ),
    )
}

/// SP005: the mass-deletion guard was overridden.
pub fn mass_delete_lint(deletes: usize, limit: usize, managed: usize) -> Lint {
    Lint::new(
        SP005,
        Severity::Warning,
        "plan".into(),
        None,
        format!(
            "the plan deletes {deletes} objects, more than the limit of {limit} (max of 20 and 10% of {managed} managed objects); allowed by --allow-mass-delete"
        ),
    )
}

/// Deterministic order: by step (lints without a step last), then code, then address.
pub fn sort(lints: &mut [Lint]) {
    lints.sort_by(|a, b| {
        (a.step.is_none(), a.step, &a.code, &a.address).cmp(&(b.step.is_none(), b.step, &b.code, &b.address))
    });
}
