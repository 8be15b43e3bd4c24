//! Ordering: turn (current, resolved desired) into the ordered, batched steps of a plan.
//!
//! Every step is applied to a [`RuleModel`] of slurmdbd as it is emitted; a step the simulator
//! refuses is a planner bug and aborts planning (nothing half-valid is ever shown). The phases
//! and their order are those of docs/planning.md ("Phases, in execution order"), one file each
//! here, each opening with what it may rely on. Later phases compare the simulated state with
//! the desired one, so anything an earlier phase had to defer (a QoS setting that was not yet
//! valid at creation time) is picked up naturally. Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_diff::{Change, user_key_label};
use slurmplan_model::{Assoc, AssocData, ClusterState, Name, QosList, State, UserKey};
use slurmplan_rules::RuleModel;
use slurmplan_sacctmgr::command::{AssocSet, Command};

use super::lints::{self, Lint};
use super::{Phase, PlanError, Step};

mod add_users;
mod create_accounts;
mod default_accounts;
mod delete_accounts;
mod limits;
mod qos;
mod qos_swap;
mod remove_users;
mod reparent;

use add_users::user_adds;
use create_accounts::account_creates;
use default_accounts::default_moves;
use delete_accounts::account_deletes;
use limits::{account_limits, account_records, limits};
use qos::{qos_creates, qos_deletes};
use qos_swap::qos_changes;
use remove_users::user_removals;
use reparent::reparents;

/// Batches keyed by (account, partition, settings) -> users.
type UserBatches<T> = BTreeMap<(Name, Option<Name>, Settings<T>), Vec<Name>>;

/// The settings a batch shares, as (part of) a batch key: objects with equal settings, compared
/// as values, share a command. Keys order by the settings' JSON text first: the order in which
/// plans have always emitted their batches (by value would reorder the steps of existing plans,
/// e.g. `grpjobs=10` before `grpjobs=9`); then by value, so settings that differ never share a
/// batch, whatever their text.
#[derive(Debug, Clone)]
struct Settings<T> {
    text: String,
    value: T,
}

impl<T: serde::Serialize> Settings<T> {
    fn new(value: T) -> Settings<T> {
        // Only the order depends on the text: the plain data batched here always serialises.
        let text = serde_json::to_string(&value).unwrap_or_default();
        Settings { text, value }
    }
}

impl<T: Ord> Ord for Settings<T> {
    fn cmp(&self, other: &Settings<T>) -> std::cmp::Ordering {
        self.text.cmp(&other.text).then_with(|| self.value.cmp(&other.value))
    }
}

impl<T: Ord> PartialOrd for Settings<T> {
    fn partial_cmp(&self, other: &Settings<T>) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Ord> PartialEq for Settings<T> {
    fn eq(&self, other: &Settings<T>) -> bool {
        self.cmp(other).is_eq()
    }
}

impl<T: Ord> Eq for Settings<T> {}

struct Builder<'s> {
    sim: &'s mut RuleModel,
    steps: Vec<Step>,
    changed: BTreeSet<String>,
    /// Per cluster, the objects the diff names: the only ones any phase needs to look at, so
    /// planning costs O(changes), not O(associations).
    touched: BTreeMap<Name, Touched>,
    /// SP004 lints found while emitting QoS-swap steps.
    lints: Vec<Lint>,
}

#[derive(Default, Clone)]
struct Touched {
    accounts: BTreeSet<Name>,
    users: BTreeSet<UserKey>,
    defaults: BTreeSet<Name>,
}

fn touched_by(changes: &[Change]) -> BTreeMap<Name, Touched> {
    let mut t: BTreeMap<Name, Touched> = BTreeMap::new();
    for c in changes {
        match c {
            Change::AccountCreate { cluster, name, .. }
            | Change::AccountReparent { cluster, name, .. }
            | Change::AccountUpdate { cluster, name, .. }
            | Change::AccountDelete { cluster, name, .. } => {
                t.entry(cluster.clone()).or_default().accounts.insert(name.clone());
            }
            Change::UserCreate { cluster, key, .. }
            | Change::UserUpdate { cluster, key, .. }
            | Change::UserDelete { cluster, key, .. } => {
                t.entry(cluster.clone()).or_default().users.insert(key.clone());
            }
            Change::DefaultAccount { cluster, user, .. } => {
                t.entry(cluster.clone()).or_default().defaults.insert(user.clone());
            }
            _ => {}
        }
    }
    t
}

/// Effective DefaultQOS of every user association a QoS command can reach.
type UserDefaults = Vec<(UserKey, Option<Name>)>;

fn user_defaults(c: &ClusterState, command: &Command) -> UserDefaults {
    let eff = |k: &UserKey, a: &Assoc| c.user_effective_default_qos(k, a).cloned();
    let mut out = Vec::new();
    match command {
        Command::ModifyUser { users, account, partition, .. } => {
            for u in users {
                let k = UserKey { account: account.clone(), user: u.clone(), partition: partition.clone() };
                if let Some(a) = c.users.get(&k) {
                    out.push((k.clone(), eff(&k, a)));
                }
            }
        }
        Command::ModifyAccount { names, .. } => {
            for n in names {
                for x in c.accounts.subtree(n.as_str()) {
                    out.extend(c.users_of_account(x).map(|(k, a)| (k.clone(), eff(k, a))));
                }
            }
        }
        _ => {}
    }
    out
}

impl Builder<'_> {
    fn emit(
        &mut self,
        phase: Phase,
        command: Command,
        objects: Vec<String>,
        note: Option<&str>,
    ) -> Result<(), PlanError> {
        let cluster = command.cluster().cloned();
        let before = match (&cluster, phase) {
            (Some(cn), Phase::QosSwap) => self.sim.state.clusters.get(cn).map(|c| user_defaults(c, &command)),
            _ => None,
        };
        let argv = command.argv();
        if let Some(w) = argv.iter().find(|w| w.len() > slurmplan_sacctmgr::quote::MAX_ARGV_WORD_BYTES) {
            // A batch too long for one argv word (a name list of thousands of long names) runs
            // as two commands, each checked on its own; a single name that long cannot be split.
            if let Some((first, second)) = command.halves() {
                let (objects_first, objects_second) = split_objects(objects, first.objects());
                self.emit(phase, first, objects_first, note)?;
                return self.emit(phase, second, objects_second, note);
            }
            return Err(PlanError::Unsafe {
                command: slurmplan_sacctmgr::quote::shown_argv(&argv),
                reason: format!(
                    "one of its words is {} bytes long, and Linux runs no program with a word longer than {} bytes (it would fail with \"Argument list too long\" after the steps before it ran)",
                    w.len(),
                    slurmplan_sacctmgr::quote::MAX_ARGV_WORD_BYTES
                ),
            });
        }
        if let Err(e) = self.sim.apply(&command) {
            return Err(PlanError::Unsafe { command: slurmplan_sacctmgr::quote::shown_argv(&argv), reason: e.message });
        }
        let mut causes: Vec<String> = objects.into_iter().filter(|a| self.changed.contains(a)).collect();
        causes.sort();
        causes.dedup();
        if let (Some(before), Some(cn)) = (before, &cluster) {
            let c = self.cluster(cn);
            let moved: Vec<(UserKey, Option<Name>, Option<Name>)> = before
                .into_iter()
                .filter_map(|(k, was)| {
                    let now = c.users.get(&k).and_then(|a| c.user_effective_default_qos(&k, a).cloned());
                    (now != was).then_some((k, was, now))
                })
                .collect();
            if !moved.is_empty() {
                let address = causes.first().cloned().unwrap_or_default();
                self.lints.push(lints::qos_swap_lint(self.steps.len() + 1, address, cn, &moved));
            }
        }
        self.steps.push(Step {
            number: self.steps.len() + 1,
            phase,
            argv,
            command,
            causes,
            note: note.map(str::to_string),
        });
        Ok(())
    }

    fn touched(&self, cluster: &Name) -> Touched {
        self.touched.get(cluster).cloned().unwrap_or_default()
    }

    fn cluster(&self, name: &Name) -> &ClusterState {
        self.sim.state.clusters.get(name).expect("cluster checked by resolve")
    }
}

/// The addresses of a batch's objects split between its two halves: an address that names one of
/// `first`'s names (an account `....NAME`, a user association `....USER@...`) goes with the
/// first half, every other with the second, so each step lists the changes it makes.
fn split_objects(objects: Vec<String>, first: &[Name]) -> (Vec<String>, Vec<String>) {
    let names: std::collections::HashSet<&str> = first.iter().map(Name::as_str).collect();
    objects.into_iter().partition(|addr| {
        let Some((_, last)) = addr.split_once('.').and_then(|(_, rest)| rest.split_once('.')) else {
            return false;
        };
        names.contains(last) || last.split_once('@').is_some_and(|(user, _)| names.contains(user))
    })
}

fn acct_addr(c: &Name, n: &Name) -> String {
    format!("account.{c}.{n}")
}
/// Addresses of the user associations of a batched user command.
fn user_objects(cname: &Name, account: &Name, partition: &Option<Name>, users: &[Name]) -> Vec<String> {
    users
        .iter()
        .map(|u| user_addr(cname, &UserKey { account: account.clone(), user: u.clone(), partition: partition.clone() }))
        .collect()
}

fn user_addr(c: &Name, k: &UserKey) -> String {
    format!("user_association.{c}.{}", user_key_label(k))
}

/// The ordered steps and the SP004 lints of their QoS-swap steps. `sim` starts from the
/// current state (`plan::diff_states` copies it); `changes` are the diff of the two states (used
/// for causes).
pub fn build_steps_and_lints(
    sim: &mut RuleModel,
    desired: &State,
    changes: &[Change],
) -> Result<(Vec<Step>, Vec<Lint>), PlanError> {
    let mut b = Builder {
        sim,
        steps: Vec::new(),
        changed: changes.iter().map(Change::address).collect(),
        touched: touched_by(changes),
        lints: Vec::new(),
    };
    qos_creates(&mut b, desired)?;
    // Order (docs/planning.md): creates and adds first, then DefaultAccount moves, removals
    // and deletes of leaves, re-parents, the remaining deletes, and only then QoS swaps and
    // limits, so associations on their way out never block a swap or a move.
    // New subtrees that `sacctmgr load` creates exactly as planned go first, in a few loads
    // (`onboard`); what is left is created below with batched commands.
    for (cname, d) in &desired.clusters {
        let t = b.touched(cname);
        let min = crate::onboard::LOAD_MIN_ASSOCS;
        for (command, objects) in crate::onboard::loads(&mut *b.sim, cname, d, desired, &t.accounts, &t.users, min) {
            b.emit(Phase::AccountCreate, command, objects, None)?;
        }
    }
    for (cname, d) in &desired.clusters {
        let created = account_creates(&mut b, cname, d, desired)?;
        // An account never has users before its limits hold: the TRES and wall limits of new
        // accounts come right after their creation, before any user is added.
        account_limits(&mut b, cname, d, &created, Phase::AccountCreate)?;
    }
    for (cname, d) in &desired.clusters {
        user_adds(&mut b, cname, d)?;
    }
    for (cname, d) in &desired.clusters {
        default_moves(&mut b, cname, d)?;
    }
    for (cname, d) in &desired.clusters {
        user_removals(&mut b, cname, d)?;
    }
    for (cname, d) in &desired.clusters {
        account_deletes(&mut b, cname, d, true)?;
    }
    for (cname, d) in &desired.clusters {
        reparents(&mut b, cname, d)?;
    }
    for (cname, d) in &desired.clusters {
        account_deletes(&mut b, cname, d, false)?;
    }
    let gone: BTreeSet<Name> = b.sim.state.qos.keys().filter(|n| !desired.qos.contains_key(*n)).cloned().collect();
    for (cname, d) in &desired.clusters {
        qos_changes(&mut b, cname, d, &gone)?;
    }
    account_records(&mut b, desired)?;
    for (cname, d) in &desired.clusters {
        limits(&mut b, cname, d)?;
    }
    qos_deletes(&mut b, desired)?;
    Ok((b.steps, b.lints))
}

/// The settings a new user association `k` gets when it is added now (phase "add users", or
/// added back in phase "remove users"), given its desired settings `want` in `d`: `want` when
/// that holds now; else without QoS settings; else, when its account's effective DefaultQOS is
/// outside the account's list now (a violation Slurm 22.05 leaves when a parent's DefaultQOS is
/// set later, which the desired state repairs later in phase "qos swap"), with a DefaultQOS of
/// its own from the account's list now: the one it will have in the end if that is in it, else
/// the first (tests/data/differential/2205-7143-plan-add). The flag tells that the result is not `want`: phase "qos swap" then gives the row
/// its final settings. When nothing holds, `want` (the model refuses it with the reason).
fn new_row_settings(c: &ClusterState, d: &ClusterState, k: &UserKey, want: &Assoc) -> (Assoc, bool) {
    if slurmplan_rules::check_user_change(c, k, want).is_ok() {
        return (want.clone(), false);
    }
    let bare = without_qos(want);
    if slurmplan_rules::check_user_change(c, k, &bare).is_ok() {
        return (bare, true);
    }
    let mut own = bare;
    let last = d.user_effective_default_qos(k, want).cloned();
    for q in last.into_iter().chain(c.accounts.effective_qos(k.account.as_str())) {
        own.default_qos = Some(q);
        if slurmplan_rules::check_user_change(c, k, &own).is_ok() {
            return (own, true);
        }
    }
    (want.clone(), false)
}

fn without_qos(a: &Assoc) -> Assoc {
    AssocData { limits: a.limits.clone(), qos: QosList::Inherit, default_qos: None }.into()
}

fn qos_set(have: &Assoc, want: &Assoc) -> AssocSet {
    AssocSet {
        qos: (have.qos != want.qos).then(|| want.qos.clone()),
        default_qos: (have.default_qos != want.default_qos).then(|| want.default_qos.clone()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurmplan_sacctmgr::command::Scalar;

    fn jobs(grp: Option<u64>, max: Option<u64>) -> AssocSet {
        let mut s = AssocSet::default();
        if let Some(n) = grp {
            s.scalars.insert(Scalar::GrpJobs, Some(n));
        }
        if let Some(n) = max {
            s.scalars.insert(Scalar::MaxJobs, Some(n));
        }
        s
    }

    /// Batches keyed by [`Settings`] come out in the order of the JSON texts they were keyed by
    /// before (`grpjobs=10` before `grpjobs=9`, unlike the values' own order), and group the same.
    #[test]
    fn settings_keys_keep_the_order_and_grouping_of_their_json_texts() {
        let sets = [
            jobs(Some(9), None),
            jobs(Some(10), None),
            jobs(None, Some(2)),
            jobs(Some(9), Some(100)),
            jobs(Some(10), None),
            jobs(None, None),
            jobs(Some(9), None),
        ];
        let mut by_text: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut by_key: BTreeMap<Settings<AssocSet>, Vec<usize>> = BTreeMap::new();
        for (i, s) in sets.iter().enumerate() {
            by_text.entry(serde_json::to_string(s).unwrap()).or_default().push(i);
            by_key.entry(Settings::new(s.clone())).or_default().push(i);
        }
        let by_key: Vec<Vec<usize>> = by_key.into_values().collect();
        assert_eq!(by_key, by_text.into_values().collect::<Vec<_>>());
        assert_eq!(by_key[0], vec![1, 4], "grpjobs=10 first, as its text orders");
        assert!(jobs(Some(9), None) < jobs(Some(10), None), "the values alone order the other way");
    }

    /// Different settings never share a batch, even with equal texts (as a failed serialisation
    /// would give).
    #[test]
    fn different_settings_with_equal_texts_stay_apart() {
        let a = Settings { text: String::new(), value: jobs(Some(1), None) };
        let b = Settings { text: String::new(), value: jobs(Some(2), None) };
        assert_ne!(a, b);
        let map: BTreeMap<_, ()> = [(a.clone(), ()), (b, ()), (a, ())].into_iter().collect();
        assert_eq!(map.len(), 2);
    }
}
