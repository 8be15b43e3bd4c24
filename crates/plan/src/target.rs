//! `--target ADDR`: plan only some changes, plus what they strictly need.
//!
//! Targeting never builds steps itself: it computes a *partially desired* state — the current
//! state with only the targeted changes (and their dependencies) applied from the desired one —
//! and the caller runs the ordinary `make_plan` on it, so every safety rule still holds.
//!
//! Dependencies pulled in (transitively):
//! - a created account needs its created parent; a move needs its created new parent;
//! - anything that references a QoS being created needs that create;
//! - a created user association of a user with no DefaultAccount yet needs the user's
//!   DefaultAccount change, and a DefaultAccount change needs the association it points to;
//! - removing a user's default association needs the DefaultAccount move away from it;
//! - deleting an account needs the removal of its users and of (or moves away of) its children;
//! - deleting a QoS needs every change that stops using it;
//! - when the result would leave a DefaultQOS outside its QoS list, the QoS changes of the
//!   associations below the targeted accounts are added too.
//!
//! Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_diff::{self as diff, Change, user_key_label};
use slurmplan_model::{Assoc, Name, QosList, State};
use slurmplan_rules as rules;

/// Why targeting failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("unknown target address `{address}`{}", did_you_mean(.suggestions))]
    Unknown { address: String, suggestions: Vec<String> },
    #[error("the targeted changes cannot be applied on their own: {0}")]
    Incomplete(String),
}

fn did_you_mean(s: &[String]) -> String {
    if s.is_empty() { String::new() } else { format!("; close matches: {}", s.join(", ")) }
}

/// The partially desired state and what was selected.
#[derive(Debug, Clone)]
pub struct Targeted {
    pub state: State,
    /// Addresses of the selected changes (targets and dependencies), sorted.
    pub selected: Vec<String>,
    /// Targets that are valid addresses without any change.
    pub unchanged: Vec<String>,
}

/// Every address of an object in `s`.
fn addresses(s: &State, out: &mut BTreeSet<String>) {
    out.extend(s.qos.keys().map(|n| format!("qos.{n}")));
    out.extend(s.accounts.keys().map(|n| format!("account_record.{n}")));
    for (c, cs) in &s.clusters {
        out.extend(cs.accounts.names().into_iter().map(|n| format!("account.{c}.{n}")));
        out.extend(cs.users.keys().map(|k| format!("user_association.{c}.{}", user_key_label(k))));
        out.extend(cs.defaults.keys().map(|u| format!("default_account.{c}.{u}")));
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Up to 5 known addresses close to `t`: small edit distance, or ending in the same object name.
pub fn close_matches(t: &str, known: &BTreeSet<String>) -> Vec<String> {
    let last = t.rsplit('.').next().unwrap_or(t);
    let mut scored: Vec<(usize, &String)> = known
        .iter()
        .filter_map(|k| {
            let d = levenshtein(t, k);
            if d <= (t.len() / 10).max(2) {
                Some((d, k))
            } else if !last.is_empty() && k.rsplit('.').next() == Some(last) {
                Some((d + 100, k))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, k)| k.clone()).collect()
}

fn qos_refs(a: &Assoc) -> BTreeSet<&Name> {
    let mut s: BTreeSet<&Name> = BTreeSet::new();
    match &a.qos {
        QosList::Inherit => {}
        QosList::Set(l) => s.extend(l),
        QosList::Delta { add, remove } => {
            s.extend(add);
            s.extend(remove);
        }
    }
    s.extend(a.default_qos.as_ref());
    s
}

/// Does change `a` strictly need change `b`?
fn needs(a: &Change, b: &Change, current: &State) -> bool {
    use Change::*;
    // anything referencing a QoS being created
    if let QosCreate { name, .. } = b {
        let refs = match a {
            AccountCreate { assoc, .. } | UserCreate { assoc, .. } => qos_refs(assoc),
            AccountUpdate { to, .. } | UserUpdate { to, .. } => qos_refs(to),
            _ => BTreeSet::new(),
        };
        return refs.contains(name);
    }
    match (a, b) {
        (AccountCreate { cluster, parent, .. }, AccountCreate { cluster: c2, name, .. })
        | (AccountReparent { cluster, to: parent, .. }, AccountCreate { cluster: c2, name, .. }) => {
            cluster == c2 && parent == name
        }
        (UserCreate { cluster, key, .. }, AccountCreate { cluster: c2, name, .. }) => {
            cluster == c2 && &key.account == name
        }
        (UserCreate { cluster, key, .. }, DefaultAccount { cluster: c2, user, .. }) => {
            cluster == c2
                && &key.user == user
                && current.clusters.get(cluster).is_none_or(|c| !c.defaults.contains_key(user))
        }
        (UserDelete { cluster, key, .. }, DefaultAccount { cluster: c2, user, from, .. }) => {
            cluster == c2 && &key.user == user && from.as_ref() == Some(&key.account)
        }
        (DefaultAccount { cluster, user, to, .. }, UserCreate { cluster: c2, key, .. }) => {
            cluster == c2 && &key.user == user && &key.account == to
        }
        (AccountDelete { cluster, name, .. }, UserDelete { cluster: c2, key, .. }) => {
            cluster == c2 && &key.account == name
        }
        (AccountDelete { cluster, name, .. }, AccountDelete { cluster: c2, parent, .. })
        | (AccountDelete { cluster, name, .. }, AccountReparent { cluster: c2, from: parent, .. }) => {
            cluster == c2 && name == parent
        }
        (QosDelete { name, .. }, AccountUpdate { from, to, .. } | UserUpdate { from, to, .. }) => {
            qos_refs(from).contains(name) && !qos_refs(to).contains(name)
        }
        (QosDelete { name, .. }, AccountDelete { assoc, .. } | UserDelete { assoc, .. }) => {
            qos_refs(assoc).contains(name)
        }
        _ => false,
    }
}

/// QoS-part changes below a targeted account QoS change or move (the fallback dependency).
fn below(a: &Change, b: &Change, desired: &State) -> bool {
    use Change::*;
    let (cluster, top) = match a {
        AccountUpdate { cluster, name, from, to } if (&from.qos, &from.default_qos) != (&to.qos, &to.default_qos) => {
            (cluster, name)
        }
        AccountReparent { cluster, name, .. } => (cluster, name),
        _ => return false,
    };
    let Some(d) = desired.clusters.get(cluster) else { return false };
    let inside = |acct: &Name| d.accounts.ancestors(acct.as_str()).contains(&top) || acct == top;
    match b {
        AccountUpdate { cluster: c2, name, from, to } => {
            c2 == cluster && name != top && inside(name) && (&from.qos, &from.default_qos) != (&to.qos, &to.default_qos)
        }
        UserUpdate { cluster: c2, key, from, to } => {
            c2 == cluster && inside(&key.account) && (&from.qos, &from.default_qos) != (&to.qos, &to.default_qos)
        }
        _ => false,
    }
}

fn close(sel: &mut BTreeSet<usize>, changes: &[Change], rel: impl Fn(&Change, &Change) -> bool) {
    loop {
        let mut added = Vec::new();
        for &i in sel.iter() {
            for (j, o) in changes.iter().enumerate() {
                if !sel.contains(&j) && rel(&changes[i], o) {
                    added.push(j);
                }
            }
        }
        if added.is_empty() {
            return;
        }
        sel.extend(added);
    }
}

/// Grow `held` (indices into `changes`) to what must wait with it, transitively: every change
/// that strictly needs a held one, and what a held delete strictly needs (the removals and
/// moves that exist only to make room for it: a held account delete keeps its users, a held
/// user removal keeps the DefaultAccount move away from it). What a held create or update
/// needs may still run alone.
pub fn hold_closure(current: &State, changes: &[Change], held: &mut BTreeSet<usize>) {
    loop {
        let before = held.len();
        close(held, changes, |a, b| a.action() == diff::Action::Delete && needs(a, b, current));
        close(held, changes, |a, b| needs(b, a, current));
        if held.len() == before {
            return;
        }
    }
}

/// `current` with the selected changes applied, taking values from `desired`.
fn apply(current: &State, desired: &State, chosen: &[&Change]) -> Result<State, String> {
    use Change::*;
    let mut st = current.clone();
    let depth = |c: &Name, n: &Name| desired.clusters.get(c).map(|d| d.accounts.depth(n.as_str())).unwrap_or(0);
    let cur_depth = |c: &Name, n: &Name| current.clusters.get(c).map(|d| d.accounts.depth(n.as_str())).unwrap_or(0);
    let mut creates: Vec<(usize, &Change)> = Vec::new();
    let mut moves: Vec<(usize, &Change)> = Vec::new();
    let mut deletes: Vec<(std::cmp::Reverse<usize>, &Change)> = Vec::new();
    let mut rest: Vec<&Change> = Vec::new();
    for ch in chosen {
        match ch {
            AccountCreate { cluster, name, .. } => creates.push((depth(cluster, name), ch)),
            AccountReparent { cluster, name, .. } => moves.push((depth(cluster, name), ch)),
            AccountDelete { cluster, name, .. } => deletes.push((std::cmp::Reverse(cur_depth(cluster, name)), ch)),
            _ => rest.push(ch),
        }
    }
    creates.sort_by_key(|(d, c)| (*d, c.address()));
    moves.sort_by_key(|(d, c)| (*d, c.address()));
    deletes.sort_by_key(|(d, c)| (*d, c.address()));
    for ch in &rest {
        match ch {
            QosCreate { name, qos } => {
                st.qos.insert(name.clone(), qos.clone());
            }
            QosUpdate { name, to, .. } => {
                st.qos.insert(name.clone(), to.clone());
            }
            AccountRecordUpdate { name, to, .. } => {
                st.accounts.insert(name.clone(), to.clone());
            }
            _ => {}
        }
    }
    for (_, ch) in &creates {
        if let AccountCreate { cluster, name, parent, assoc, .. } = ch {
            if !st.accounts.contains_key(name)
                && let Some(r) = desired.accounts.get(name)
            {
                st.accounts.insert(name.clone(), r.clone());
            }
            let c = st.clusters.get_mut(cluster).ok_or_else(|| format!("no cluster `{cluster}`"))?;
            c.accounts.insert(name.clone(), parent.as_str(), assoc.clone()).map_err(|e| e.to_string())?;
        }
    }
    for (_, ch) in &moves {
        if let AccountReparent { cluster, name, to, .. } = ch {
            let c = st.clusters.get_mut(cluster).ok_or_else(|| format!("no cluster `{cluster}`"))?;
            c.accounts.reparent(name.as_str(), to.as_str())?;
        }
    }
    for ch in &rest {
        match ch {
            AccountUpdate { cluster, name, to, .. } => {
                let c = st.clusters.get_mut(cluster).ok_or_else(|| format!("no cluster `{cluster}`"))?;
                if let Some(n) = c.accounts.get_mut(name.as_str()) {
                    n.assoc = to.clone();
                }
            }
            UserCreate { cluster, key, assoc } | UserUpdate { cluster, key, to: assoc, .. } => {
                let c = st.clusters.get_mut(cluster).ok_or_else(|| format!("no cluster `{cluster}`"))?;
                c.users.insert(key.clone(), assoc.clone());
            }
            UserDelete { cluster, key, .. } => {
                let c = st.clusters.get_mut(cluster).ok_or_else(|| format!("no cluster `{cluster}`"))?;
                c.users.remove(key);
            }
            DefaultAccount { cluster, user, to, .. } => {
                let c = st.clusters.get_mut(cluster).ok_or_else(|| format!("no cluster `{cluster}`"))?;
                c.defaults.insert(user.clone(), to.clone());
            }
            _ => {}
        }
    }
    for (_, ch) in &deletes {
        if let AccountDelete { cluster, name, .. } = ch {
            let c = st.clusters.get_mut(cluster).ok_or_else(|| format!("no cluster `{cluster}`"))?;
            c.accounts.remove_leaf(name.as_str())?;
        }
    }
    for ch in &rest {
        if let QosDelete { name, .. } = ch {
            st.qos.remove(name);
        }
    }
    // users with no association left on a cluster have no DefaultAccount there
    for c in st.clusters.values_mut() {
        let index: BTreeSet<Name> = c.users.keys().map(|k| k.user.clone()).collect();
        c.defaults.retain(|u, _| index.contains(u));
    }
    Ok(st)
}

/// New rule violations of `st` compared with `current` (a broken current state is not ours).
fn new_violations(current: &BTreeSet<String>, st: &State) -> Vec<String> {
    rules::check_state(st).into_iter().map(|e| e.message).filter(|e| !current.contains(e)).collect()
}

/// The partially desired state for `targets` (exact change or object addresses).
pub fn partial_desired(current: &State, desired: &State, targets: &[String]) -> Result<Targeted, TargetError> {
    let changes = diff::diff(current, desired);
    let by_addr: BTreeMap<String, Vec<usize>> = changes.iter().enumerate().fold(BTreeMap::new(), |mut m, (i, c)| {
        m.entry(c.address()).or_default().push(i);
        m
    });
    let mut known: BTreeSet<String> = by_addr.keys().cloned().collect();
    addresses(current, &mut known);
    addresses(desired, &mut known);
    let mut sel: BTreeSet<usize> = BTreeSet::new();
    let mut unchanged = Vec::new();
    for t in targets {
        match by_addr.get(t) {
            Some(ix) => sel.extend(ix),
            None if known.contains(t) => unchanged.push(t.clone()),
            None => {
                return Err(TargetError::Unknown { address: t.clone(), suggestions: close_matches(t, &known) });
            }
        }
    }
    close(&mut sel, &changes, |a, b| needs(a, b, current));
    let before: BTreeSet<String> = rules::check_state(current).into_iter().map(|e| e.message).collect();
    let build = |sel: &BTreeSet<usize>| {
        let chosen: Vec<&Change> = sel.iter().map(|&i| &changes[i]).collect();
        apply(current, desired, &chosen).map_err(TargetError::Incomplete)
    };
    let mut state = build(&sel)?;
    if !new_violations(&before, &state).is_empty() {
        close(&mut sel, &changes, |a, b| needs(a, b, current) || below(a, b, desired));
        state = build(&sel)?;
        let left = new_violations(&before, &state);
        if !left.is_empty() {
            return Err(TargetError::Incomplete(format!(
                "{}; target more objects, or plan without --target",
                left.into_iter().take(3).collect::<Vec<_>>().join("; ")
            )));
        }
    }
    let mut selected: Vec<String> = sel.iter().map(|&i| changes[i].address()).collect();
    selected.sort();
    selected.dedup();
    Ok(Targeted { state, selected, unchanged })
}
