//! Undo of an apply: what an apply is about to change, saved before its first step runs
//! ([`Before::capture`]), and later the desired state that takes back what the steps that ran
//! changed ([`restore`]), for the ordinary planner to order.
//!
//! What is saved is the apply's scope, by name: every account association the plan's changes
//! or steps name (with its parent), every account record and QoS they name, and every user
//! they name with all of that user's rows and DefaultAccount on the cluster. Each is saved as
//! it was, or as absent.
//!
//! [`restore`] rebuilds the state before the apply from the current one and the saved scope,
//! replays the steps that ran on it with the rules model to know what the apply left behind,
//! and takes back each object the steps changed: unless someone changed it since (a conflict,
//! left as it is unless forced). Where the state before broke a rule slurmdbd enforces (22.05
//! lets some writes through), an object comes back as `doctor` repairs it, and says so: no plan
//! can make a broken state. Pure: no I/O, no printing; it never builds a step itself.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use slurmplan_diff::{self as diff, Change};
use slurmplan_model::{AccountRecord, Assoc, Name, Qos, State, UserKey};
use slurmplan_rules::RuleModel;
use slurmplan_sacctmgr::command::Command;

use super::{Plan, Step};

/// The part of the state an apply may change, as it was before its first step.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Before {
    /// QoS by name; `None`: it did not exist.
    pub qos: BTreeMap<Name, Option<Qos>>,
    /// Account records by name; `None`: none existed.
    pub records: BTreeMap<Name, Option<AccountRecord>>,
    pub clusters: BTreeMap<Name, ClusterBefore>,
}

/// One cluster's part of [`Before`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterBefore {
    /// Account associations by name; `None`: the account had no association on the cluster.
    pub accounts: BTreeMap<Name, Option<SavedAccount>>,
    /// Users by name: every row they had on the cluster and their DefaultAccount (no rows and
    /// no default: the user had no association there).
    pub users: BTreeMap<Name, SavedUser>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedAccount {
    /// `None` only for `root`.
    pub parent: Option<Name>,
    pub assoc: Assoc,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedUser {
    pub rows: Vec<(UserKey, Assoc)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Name>,
    /// Rows under the DefaultAccount without slurmdbd's default mark (`ClusterState::unmarked`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmarked: Vec<UserKey>,
}

/// Names an apply may change, per kind.
#[derive(Default)]
struct Names {
    qos: BTreeSet<Name>,
    records: BTreeSet<Name>,
    accounts: BTreeMap<Name, BTreeSet<Name>>,
    users: BTreeMap<Name, BTreeSet<Name>>,
}

impl Names {
    fn account(&mut self, cluster: &Name, name: &Name) {
        self.accounts.entry(cluster.clone()).or_default().insert(name.clone());
        self.records.insert(name.clone());
    }
    fn user(&mut self, cluster: &Name, name: &Name) {
        self.users.entry(cluster.clone()).or_default().insert(name.clone());
    }

    fn change(&mut self, ch: &Change) {
        use Change::*;
        match ch {
            QosCreate { name, .. } | QosUpdate { name, .. } | QosDelete { name, .. } => {
                self.qos.insert(name.clone());
            }
            AccountRecordUpdate { name, .. } => {
                self.records.insert(name.clone());
            }
            AccountCreate { cluster, name, .. }
            | AccountReparent { cluster, name, .. }
            | AccountUpdate { cluster, name, .. }
            | AccountDelete { cluster, name, .. } => self.account(cluster, name),
            UserCreate { cluster, key, .. } | UserUpdate { cluster, key, .. } | UserDelete { cluster, key, .. } => {
                self.user(cluster, &key.user)
            }
            DefaultAccount { cluster, user, .. } => self.user(cluster, user),
        }
    }

    /// What a step's command names; an account delete also takes the users below the
    /// accounts it deletes (their rows go with them).
    fn command(&mut self, cmd: &Command, current: &State) {
        use Command::*;
        match cmd {
            AddQos { names, .. } | ModifyQos { names, .. } | DeleteQos { names } => {
                self.qos.extend(names.iter().cloned())
            }
            AddAccount { cluster, names, .. } | ModifyAccount { cluster, names, .. } => {
                names.iter().for_each(|n| self.account(cluster, n))
            }
            ModifyAccountRecord { names, .. } => self.records.extend(names.iter().cloned()),
            Reparent { cluster, name, .. } => self.account(cluster, name),
            DeleteAccount { cluster, names } => {
                for n in names {
                    self.account(cluster, n);
                    if let Some(c) = current.clusters.get(cluster) {
                        let users: Vec<Name> = c.users_of_account(n).map(|(k, _)| k.user.clone()).collect();
                        users.iter().for_each(|u| self.user(cluster, u));
                    }
                }
            }
            AddUser { cluster, users, .. }
            | ModifyUser { cluster, users, .. }
            | SetDefaultAccount { cluster, users, .. }
            | DeleteUser { cluster, users, .. }
            | DeleteUserAll { cluster, users, .. } => users.iter().for_each(|u| self.user(cluster, u)),
            Load { cluster, accounts, users } => {
                accounts.iter().for_each(|a| self.account(cluster, &a.name));
                users.iter().for_each(|u| self.user(cluster, &u.name));
            }
        }
    }
}

impl Before {
    /// The scope of `plan` as it is in `current` (the state the plan runs on).
    pub fn capture(current: &State, plan: &Plan) -> Before {
        let mut names = Names::default();
        plan.changes.iter().for_each(|c| names.change(&c.change));
        plan.steps.iter().for_each(|s| names.command(&s.command, current));
        let mut before = Before {
            qos: names.qos.into_iter().map(|q| (q.clone(), current.qos.get(&q).cloned())).collect(),
            records: names.records.into_iter().map(|a| (a.clone(), current.accounts.get(&a).cloned())).collect(),
            clusters: BTreeMap::new(),
        };
        let clusters: BTreeSet<&Name> = names.accounts.keys().chain(names.users.keys()).collect();
        for cname in clusters {
            let c = current.clusters.get(cname);
            let mut cb = ClusterBefore::default();
            for a in names.accounts.get(cname).into_iter().flatten() {
                let saved = c.and_then(|c| {
                    c.accounts.get(a.as_str()).map(|node| SavedAccount {
                        parent: c.accounts.parent(a.as_str()).cloned(),
                        assoc: node.assoc.clone(),
                    })
                });
                cb.accounts.insert(a.clone(), saved);
            }
            if let Some(wanted) = names.users.get(cname) {
                for u in wanted {
                    cb.users.insert(u.clone(), SavedUser::default());
                }
                if let Some(c) = c {
                    // one pass over the cluster's rows, not one per user
                    for (k, assoc) in &c.users {
                        if let Some(s) = cb.users.get_mut(&k.user) {
                            s.rows.push((k.clone(), assoc.clone()));
                            if c.unmarked.contains(k) {
                                s.unmarked.push(k.clone());
                            }
                        }
                    }
                    for (u, s) in cb.users.iter_mut() {
                        s.default = c.defaults.get(u).cloned();
                    }
                }
            }
            before.clusters.insert(cname.clone(), cb);
        }
        before
    }

    /// Every address the scope covers.
    pub fn len(&self) -> usize {
        self.qos.len()
            + self.records.len()
            + self.clusters.values().map(|c| c.accounts.len() + c.users.len()).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The state before the apply: `now` with every object of the scope put back as it was saved.
/// An error says what no longer fits (a cluster gone, an account the apply created that now
/// has associations the apply did not make).
pub fn rebuild(now: &State, before: &Before) -> Result<State, String> {
    let mut st = now.clone();
    for (q, v) in &before.qos {
        match v {
            Some(v) => st.qos.insert(q.clone(), v.clone()),
            None => st.qos.remove(q),
        };
    }
    for (a, v) in &before.records {
        match v {
            Some(v) => st.accounts.insert(a.clone(), v.clone()),
            None => st.accounts.remove(a),
        };
    }
    for (cname, cb) in &before.clusters {
        let c = st.clusters.get_mut(cname).ok_or_else(|| format!("cluster `{cname}` no longer exists"))?;
        // the saved users' rows go first (accounts they were under may have to go)
        c.users.retain(|k, _| !cb.users.contains_key(&k.user));
        c.unmarked.retain(|k| !cb.users.contains_key(&k.user));
        for u in cb.users.keys() {
            c.defaults.remove(u);
        }
        // accounts that existed: put back (parents first), then move and set
        let mut missing: Vec<(&Name, &SavedAccount)> = cb
            .accounts
            .iter()
            .filter_map(|(n, s)| s.as_ref().map(|s| (n, s)))
            .filter(|(n, _)| !c.accounts.contains(n.as_str()))
            .collect();
        while !missing.is_empty() {
            let before_len = missing.len();
            let mut left = Vec::new();
            for (n, s) in missing {
                match &s.parent {
                    Some(p) if c.accounts.contains(p.as_str()) => {
                        c.accounts.insert(n.clone(), p.as_str(), s.assoc.clone()).map_err(|e| e.to_string())?
                    }
                    _ => left.push((n, s)),
                }
            }
            if left.len() == before_len {
                let names: Vec<String> = left.iter().map(|(n, _)| format!("`{n}`")).collect();
                return Err(format!(
                    "account(s) {} on `{cname}` cannot be put back: their parents no longer exist",
                    names.join(", ")
                ));
            }
            missing = left;
        }
        let mut moves: Vec<(&Name, &Name)> = Vec::new();
        for (n, s) in cb.accounts.iter().filter_map(|(n, s)| s.as_ref().map(|s| (n, s))) {
            if let Some(node) = c.accounts.get_mut(n.as_str()) {
                node.assoc = s.assoc.clone();
            }
            if let Some(p) = &s.parent
                && c.accounts.parent(n.as_str()) != Some(p)
            {
                moves.push((n, p));
            }
        }
        // a move can wait for another one (a parent moved out of the way first)
        while !moves.is_empty() {
            let before_len = moves.len();
            moves.retain(|(n, p)| c.accounts.reparent(n.as_str(), p.as_str()).is_err());
            if moves.len() == before_len {
                let (n, p) = moves[0];
                return Err(format!("account `{n}` on `{cname}` cannot be moved back under `{p}`"));
            }
        }
        // accounts the apply created: deepest first, and only when nothing else is below them
        let mut created: Vec<(usize, &Name)> = cb
            .accounts
            .iter()
            .filter(|(n, s)| s.is_none() && c.accounts.contains(n.as_str()))
            .map(|(n, _)| (c.accounts.depth(n.as_str()), n))
            .collect();
        created.sort_by(|a, b| b.cmp(a));
        let gone: BTreeSet<&Name> = created.iter().map(|(_, n)| *n).collect();
        if let Some((k, _)) = c.users.iter().find(|(k, _)| gone.contains(&k.account)) {
            return Err(format!(
                "account `{}` on `{cname}`, created by the apply, now has the association `{}` that the apply did not make",
                k.account,
                slurmplan_model::user_key_label(k)
            ));
        }
        for (_, n) in created {
            c.accounts.remove_leaf(n.as_str()).map_err(|e| format!("{e} on `{cname}` (made since the apply)"))?;
        }
        for (u, s) in &cb.users {
            for (k, assoc) in &s.rows {
                if !c.accounts.contains(k.account.as_str()) {
                    return Err(format!(
                        "the association `{}` on `{cname}` cannot be put back: account `{}` no longer exists",
                        slurmplan_model::user_key_label(k),
                        k.account
                    ));
                }
                c.users.insert(k.clone(), assoc.clone());
            }
            c.unmarked.extend(s.unmarked.iter().cloned());
            if let Some(d) = &s.default {
                c.defaults.insert(u.clone(), d.clone());
            }
        }
    }
    Ok(st)
}

/// How far an apply got, from its journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ran {
    /// Steps 1..=done finished with success.
    pub done: usize,
    /// Step `done + 1` started and did not finish with success (it failed, or the apply was
    /// killed while it ran): it may or may not have changed slurmdbd.
    pub maybe: bool,
}

/// An object the apply changed that someone changed again since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub address: String,
    /// What differs from what the apply left: `changed`, `created` or `deleted` since.
    pub what: &'static str,
    /// Taken back anyway (`--force-undo`).
    pub forced: bool,
}

/// The desired state of an undo, and what it restores.
#[derive(Debug, Clone)]
pub struct Restore {
    pub desired: State,
    /// Addresses put back as they were before the apply (sorted).
    pub restored: Vec<String>,
    pub conflicts: Vec<Conflict>,
    /// Addresses the apply changed that come back otherwise than they were (sorted), and why.
    pub cannot: Vec<(String, Why)>,
    /// Accounts (per cluster) whose objects the undo touches: the plan's fingerprint scope.
    pub managed: BTreeMap<Name, BTreeSet<Name>>,
}

/// Why an object the apply changed does not come back exactly as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// It broke a rule slurmdbd enforces (a DefaultQOS outside its QoS list, a DefaultAccount
    /// without its association): it comes back repaired by `doctor`'s rule, which is what a
    /// plan can make.
    Repaired,
    /// The user had associations and no DefaultAccount: slurmdbd cannot unset one.
    NoUnset,
    /// The apply did not change it, but it broke a rule before the apply, and taking the
    /// apply back would make it break that rule again: it gets `doctor`'s repair.
    Dependent,
}

/// Why there is no undo.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UndoError {
    #[error("the state before the apply cannot be rebuilt over the current one: {0}")]
    Rebuild(String),
    #[error("step {step} of the apply does not replay on the state saved before it: {reason}")]
    Replay { step: usize, reason: String },
    #[error("the journal says {ran} step(s) ran, but the plan has {total}")]
    Steps { ran: usize, total: usize },
    #[error("`--force-undo {0}`: the apply did not change that object, or it is already as it was")]
    NotForceable(String),
    #[error(
        "taking back what the apply changed also needs {}, which the apply did not leave as it is now",
        .0.join(", ")
    )]
    Needs(Vec<String>),
    #[error("{0}")]
    Target(#[from] super::target::TargetError),
}

/// `state` after `steps`, by the rules model.
fn replay(state: &State, steps: &[Step]) -> Result<State, UndoError> {
    let mut sim = RuleModel::new(state.clone());
    for s in steps {
        sim.apply(&s.command).map_err(|e| UndoError::Replay { step: s.number, reason: e.to_string() })?;
    }
    Ok(sim.state)
}

/// Every object that differs from `a` to `b`, by address, and how (`created`, `deleted`,
/// `changed`): the planner's diff, plus the DefaultAccounts that `b` has no longer (the diff
/// says only where a DefaultAccount goes, and a user whose rows are all gone has none).
fn differences(a: &State, b: &State) -> BTreeMap<String, &'static str> {
    let mut out: BTreeMap<String, &'static str> = diff::diff(a, b)
        .iter()
        .map(|c| {
            let how = match c.action() {
                diff::Action::Create => "created",
                diff::Action::Delete => "deleted",
                _ => "changed",
            };
            (c.address(), how)
        })
        .collect();
    for (cname, ca) in &a.clusters {
        let cb = b.clusters.get(cname);
        for user in ca.defaults.keys() {
            if cb.is_none_or(|cb| !cb.defaults.contains_key(user)) {
                out.insert(format!("default_account.{cname}.{user}"), "deleted");
            }
        }
    }
    out
}

/// The undo of the steps of `plan` that `ran`, from the current state `now`: every object those
/// steps changed goes back to `before`, except conflicts (changed since) not named in `force`.
pub fn restore(now: &State, before: &Before, plan: &Plan, ran: Ran, force: &[String]) -> Result<Restore, UndoError> {
    let total = plan.steps.len();
    if ran.done > total || (ran.maybe && ran.done >= total) {
        return Err(UndoError::Steps { ran: ran.done + usize::from(ran.maybe), total });
    }
    let start = rebuild(now, before).map_err(UndoError::Rebuild)?;
    let left = replay(&start, &plan.steps[..ran.done])?;
    // what the step that may have run would have left (it may have been refused: then only
    // the finished steps count)
    let left_maybe = if ran.maybe { replay(&left, &plan.steps[ran.done..=ran.done]).ok() } else { None };
    let mut touched: BTreeSet<String> = differences(&start, &left).into_keys().collect();
    if let Some(m) = &left_maybe {
        touched.extend(differences(&start, m).into_keys());
    }
    // an object is in conflict when it is neither as the apply left it nor (for the step that
    // may have run) as that step would have left it
    let since = differences(&left, now);
    let since_maybe = left_maybe.as_ref().map(|m| differences(m, now));
    let mut conflicts = Vec::new();
    let mut targets: BTreeSet<String> = BTreeSet::new();
    // What the undo brings back: the state before the apply, where it broke a rule slurmdbd
    // enforces (22.05 lets some writes through that leave one broken) repaired by doctor's rule,
    // since no plan can make a broken state.
    let fixed = slurmplan_doctor::repair(&start, None).state;
    let repaired = differences(&start, &fixed);
    // what differs between now and that: all an undo can take back
    let back: BTreeSet<String> = differences(now, &fixed).into_keys().collect();
    for f in force {
        if !back.contains(f) {
            return Err(UndoError::NotForceable(f.clone()));
        }
    }
    for (addr, what) in since {
        if !touched.contains(&addr) || since_maybe.as_ref().is_some_and(|m| !m.contains_key(&addr)) {
            continue;
        }
        let forced = force.contains(&addr);
        conflicts.push(Conflict { address: addr, what, forced });
    }
    let unforced: BTreeSet<&str> = conflicts.iter().filter(|c| !c.forced).map(|c| c.address.as_str()).collect();
    for t in &touched {
        if !unforced.contains(t.as_str()) && back.contains(t) {
            targets.insert(t.clone());
        }
    }
    targets.extend(force.iter().cloned());
    let targets: Vec<String> = targets.into_iter().collect();
    let partial = match super::target::partial_desired(now, &fixed, &targets) {
        Ok(p) => p,
        // The targets alone would break a rule because of an object changed since the apply
        // (a conflict left as it is now): if taking conflicts back too makes it whole, those
        // are what the undo also needs (`--force-undo` them), as below.
        Err(e @ super::target::TargetError::Incomplete(_)) if !unforced.is_empty() => {
            let with = |extra: &[&str]| {
                let mut t = targets.clone();
                t.extend(extra.iter().map(|s| s.to_string()));
                t.sort();
                t.dedup();
                super::target::partial_desired(now, &fixed, &t).is_ok()
            };
            let alone: Vec<String> = unforced.iter().filter(|c| with(&[**c])).map(|c| c.to_string()).collect();
            if !alone.is_empty() {
                return Err(UndoError::Needs(alone));
            }
            let all: Vec<&str> = unforced.iter().copied().collect();
            if with(&all) {
                return Err(UndoError::Needs(all.into_iter().map(str::to_string).collect()));
            }
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    // What taking the targets back needs besides them: an object the apply did not change is
    // changed only when, left as it is, it would break a rule (its repair); anything else stops.
    let (also, needs): (Vec<String>, Vec<String>) = partial
        .selected
        .iter()
        .filter(|a| targets.binary_search(a).is_err())
        .cloned()
        .partition(|a| repaired.contains_key(a) && !unforced.contains(a.as_str()));
    if !needs.is_empty() {
        return Err(UndoError::Needs(needs));
    }
    // targets that do not come back as they were: repaired, or a DefaultAccount the user did
    // not have (no command unsets one while the user has associations)
    let cannot: Vec<(String, Why)> = differences(&partial.state, &start)
        .into_keys()
        .filter(|a| touched.contains(a) && !unforced.contains(a.as_str()))
        .map(|a| {
            let why = if repaired.contains_key(&a) { Why::Repaired } else { Why::NoUnset };
            (a, why)
        })
        .chain(also.into_iter().map(|a| (a, Why::Dependent)))
        .collect();
    let mut managed: BTreeMap<Name, BTreeSet<Name>> = BTreeMap::new();
    for ch in diff::diff(now, &partial.state) {
        let (cluster, accounts): (Option<&Name>, Vec<&Name>) = match &ch {
            Change::AccountCreate { cluster, name, parent, .. }
            | Change::AccountDelete { cluster, name, parent, .. } => (Some(cluster), vec![name, parent]),
            Change::AccountReparent { cluster, name, from, to } => (Some(cluster), vec![name, from, to]),
            Change::AccountUpdate { cluster, name, .. } => (Some(cluster), vec![name]),
            Change::UserCreate { cluster, key, .. }
            | Change::UserUpdate { cluster, key, .. }
            | Change::UserDelete { cluster, key, .. } => (Some(cluster), vec![&key.account]),
            Change::DefaultAccount { cluster, from, to, .. } => (Some(cluster), from.iter().chain([to]).collect()),
            _ => (None, vec![]),
        };
        if let Some(c) = cluster {
            managed.entry(c.clone()).or_default().extend(accounts.into_iter().cloned());
        }
        if let Change::AccountRecordUpdate { name, .. } = &ch {
            for (cname, c) in &now.clusters {
                if c.accounts.contains(name.as_str()) {
                    managed.entry(cname.clone()).or_default().insert(name.clone());
                }
            }
        }
    }
    Ok(Restore { desired: partial.state, restored: partial.selected, conflicts, cannot, managed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurmplan_model::NameKind;

    fn site_a() -> (State, Plan) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site-a");
        let current = slurmplan_sacctmgr::snapshot::load(&root.join("state")).unwrap_or_else(|d| panic!("{d:#?}"));
        let desired = slurmplan_desired::load_file(&root.join("desired.yaml")).unwrap_or_else(|d| panic!("{d:#?}"));
        let resolved = slurmplan_desired::resolve::resolve(&desired, &current).unwrap_or_else(|d| panic!("{d:#?}"));
        let plan = crate::make_plan(&current, &resolved.state, "x").unwrap();
        (current, plan)
    }

    /// The state after the undo plan of `r` runs on `now` (by the model).
    fn undone(now: &State, r: &Restore) -> State {
        let p = crate::make_plan(now, &r.desired, "undo").unwrap();
        replay(now, &p.steps).unwrap()
    }

    fn addr_diff(a: &State, b: &State) -> Vec<String> {
        diff::diff(a, b).iter().map(Change::address).collect()
    }

    /// Whatever prefix of the plan ran (and whether the next step committed or not), the undo
    /// of it brings the state back to the one before the apply, object for object.
    #[test]
    fn the_undo_of_any_prefix_brings_back_the_state_before() {
        let (current, plan) = site_a();
        let n = plan.steps.len();
        assert!(n >= 5, "site-a has a plan worth undoing");
        let before = Before::capture(&current, &plan);
        for done in 0..=n {
            let now = replay(&current, &plan.steps[..done]).unwrap();
            let r = restore(&now, &before, &plan, Ran { done, maybe: false }, &[]).unwrap();
            assert!(r.conflicts.is_empty(), "{done}: {:?}", r.conflicts);
            assert_eq!(addr_diff(&undone(&now, &r), &current), Vec::<String>::new(), "after {done} steps");
            if done < n {
                // the next step started: committed or not
                for committed in [false, true] {
                    let now = replay(&current, &plan.steps[..done + usize::from(committed)]).unwrap();
                    let r = restore(&now, &before, &plan, Ran { done, maybe: true }, &[]).unwrap();
                    assert!(r.conflicts.is_empty(), "{done}+{committed}: {:?}", r.conflicts);
                    assert_eq!(addr_diff(&undone(&now, &r), &current), Vec::<String>::new(), "{done}+{committed}");
                }
            }
        }
        // before the first step nothing was changed: nothing to take back
        let r = restore(&current, &before, &plan, Ran { done: 0, maybe: false }, &[]).unwrap();
        assert!(r.restored.is_empty());
    }

    /// An object the apply changed and someone changed again since is left as it is and said;
    /// `--force-undo` takes it back; objects the apply did not change are never touched.
    #[test]
    fn a_conflict_is_left_unless_forced_and_others_are_never_touched() {
        let (current, plan) = site_a();
        let before = Before::capture(&current, &plan);
        let mut now = replay(&current, &plan.steps).unwrap();
        let (cname, key) = {
            let changed = diff::diff(&current, &now);
            // a new association under an account that was there before (the account stays)
            let ch = changed
                .iter()
                .find(|c| matches!(c, Change::UserCreate { cluster, key, .. } if current.clusters[cluster].accounts.contains(key.account.as_str())))
                .expect("the plan adds a user under an existing account");
            let Change::UserCreate { cluster, key, .. } = ch else { unreachable!() };
            (cluster.clone(), key.clone())
        };
        let c = now.clusters.get_mut(&cname).unwrap();
        c.users.get_mut(&key).unwrap().limits.max_jobs = Some(77);
        // someone else's object, outside the apply's scope
        let other = Name::keep_case("elsewhere", NameKind::Qos).unwrap();
        now.qos.insert(other.clone(), Qos::default());
        let addr = format!("user_association.{cname}.{}", slurmplan_model::user_key_label(&key));
        let r = restore(&now, &before, &plan, Ran { done: plan.steps.len(), maybe: false }, &[]).unwrap();
        assert_eq!(r.conflicts, vec![Conflict { address: addr.clone(), what: "changed", forced: false }]);
        let after = undone(&now, &r);
        assert_eq!(after.clusters[&cname].users[&key].limits.max_jobs, Some(77), "the conflict is left");
        assert!(after.qos.contains_key(&other));
        assert_eq!(addr_diff(&after, &current), vec![format!("qos.{other}"), addr.clone()]);
        let forced =
            restore(&now, &before, &plan, Ran { done: plan.steps.len(), maybe: false }, std::slice::from_ref(&addr));
        let forced = forced.unwrap();
        assert!(forced.conflicts[0].forced);
        assert_eq!(addr_diff(&undone(&now, &forced), &current), vec![format!("qos.{other}")]);
        let bad = restore(&now, &before, &plan, Ran { done: 0, maybe: false }, &["qos.elsewhere".into()]);
        assert!(matches!(bad, Err(UndoError::NotForceable(_))), "{bad:?}");
    }

    /// The saved scope round-trips through its file form (JSON) unchanged.
    #[test]
    fn the_saved_scope_round_trips_through_json() {
        let (current, plan) = site_a();
        let before = Before::capture(&current, &plan);
        assert!(!before.is_empty());
        let text = serde_json::to_string(&before).unwrap();
        assert_eq!(serde_json::from_str::<Before>(&text).unwrap(), before);
    }
}
