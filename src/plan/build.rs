//! Ordering: turn (current, resolved desired) into the ordered, batched steps of a plan.
//!
//! Every step is applied to a [`Sim`] of slurmdbd as it is emitted; a step the simulator
//! refuses is a planner bug and aborts planning (nothing half-valid is ever shown). Phases
//! follow design.md section 5. Later phases compare the simulated state with the desired
//! one, so anything an earlier phase had to defer (a QoS setting that was not yet valid at
//! creation time) is picked up naturally. Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use crate::diff::{Change, user_key_label};
use crate::model::{AccountRecord, Assoc, AssocData, ClusterState, Name, QosList, State, UserKey};
use crate::sacctmgr::command::{AssocSet, Command, QosSet};
use crate::sacctmgr::sim::{self, Sim};

use super::lints::{self, Lint};
use super::{Phase, PlanError, Step};

/// Removal batches: (account, `Some(partition)` for one row / `None` for all rows) -> users.
type RemovalBatches = BTreeMap<(Name, Option<Option<Name>>), Vec<Name>>;

/// Batches keyed by (account, partition, canonical settings) -> (settings, users).
type UserBatches<T> = BTreeMap<(Name, Option<Name>, String), (T, Vec<Name>)>;

/// The most users one `add user` adds to several accounts at once (measured break-even on
/// 22.05 is about 35 for two accounts; see docs/planning.md).
const CROSS_ADD_MAX_USERS: usize = 24;

/// New user associations that several accounts share: one `add user` can add them all.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct SameUsers {
    partition: Option<Name>,
    /// Canonical settings (as in [`UserBatches`]).
    settings: String,
    users: Vec<Name>,
}

struct Builder<'s> {
    sim: &'s mut Sim,
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
        if let Err(e) = self.sim.apply(&command) {
            return Err(PlanError::Unsafe { command: command.argv().join(" "), reason: e.0 });
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
            argv: command.argv(),
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
    sim: &mut Sim,
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
    // 1. QoS creates and updates (global).
    for (name, q) in &desired.qos {
        match b.sim.state.qos.get(name) {
            None => {
                let set = QosSet::between(&Default::default(), q);
                b.emit(
                    Phase::QosCreate,
                    Command::AddQos { names: vec![name.clone()], set },
                    vec![format!("qos.{name}")],
                    None,
                )?;
            }
            Some(cur) => {
                let set = QosSet::between(cur, q);
                if !set.is_empty() {
                    b.emit(
                        Phase::QosCreate,
                        Command::ModifyQos { names: vec![name.clone()], set },
                        vec![format!("qos.{name}")],
                        None,
                    )?;
                }
            }
        }
    }
    // Order (docs/planning.md): creates and adds first, then DefaultAccount moves, removals
    // and deletes of leaves, re-parents, the remaining deletes, and only then QoS swaps and
    // limits, so associations on their way out never block a swap or a move.
    // New subtrees that `sacctmgr load` creates exactly as planned go first, in a few loads
    // (`onboard`); what is left is created below with batched commands.
    for (cname, d) in &desired.clusters {
        let t = b.touched(cname);
        let min = super::onboard::LOAD_MIN_ASSOCS;
        for (command, objects) in super::onboard::loads(b.sim, cname, d, desired, &t.accounts, &t.users, min) {
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
    for (cname, d) in &desired.clusters {
        qos_changes(&mut b, cname, d)?;
    }
    account_records(&mut b, desired)?;
    for (cname, d) in &desired.clusters {
        limits(&mut b, cname, d)?;
    }
    // QoS deletes last.
    let gone: Vec<Name> = b.sim.state.qos.keys().filter(|n| !desired.qos.contains_key(*n)).cloned().collect();
    for n in gone {
        b.emit(Phase::QosDelete, Command::DeleteQos { names: vec![n.clone()] }, vec![format!("qos.{n}")], None)?;
    }
    Ok((b.steps, b.lints))
}

/// The QoS/DefaultQOS part of an association.
fn qos_part(a: &Assoc) -> (QosList, Option<Name>) {
    (a.qos.clone(), a.default_qos.clone())
}

fn creation_limits(l: &crate::model::Limits) -> crate::model::Limits {
    crate::model::Limits {
        fairshare: l.fairshare,
        grp_jobs: l.grp_jobs,
        grp_submit_jobs: l.grp_submit_jobs,
        max_jobs: l.max_jobs,
        max_submit_jobs: l.max_submit_jobs,
        ..Default::default()
    }
}

fn without_qos(a: &Assoc) -> Assoc {
    AssocData { limits: a.limits.clone(), qos: QosList::Inherit, default_qos: None }.into()
}

/// Creates the missing accounts; returns their names.
fn account_creates(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    desired: &State,
) -> Result<BTreeSet<Name>, PlanError> {
    // parents first: by depth in the desired tree, then grouped by (parent, record, settings).
    let touched = b.touched(cname);
    let mut missing: Vec<(usize, &Name)> = touched
        .accounts
        .iter()
        .filter(|n| d.accounts.contains(n.as_str()) && !b.cluster(cname).accounts.contains(n.as_str()))
        .map(|n| (d.accounts.depth(n.as_str()), n))
        .collect();
    missing.sort();
    let created: BTreeSet<Name> = missing.iter().map(|(_, n)| (*n).clone()).collect();
    let mut by_depth: BTreeMap<usize, Vec<&Name>> = BTreeMap::new();
    for (depth, n) in missing {
        by_depth.entry(depth).or_default().push(n);
    }
    for (_, names) in by_depth {
        let mut groups: BTreeMap<(Name, String), (AccountRecord, Assoc, Vec<Name>)> = BTreeMap::new();
        for n in names {
            let parent = d.accounts.parent(n.as_str()).cloned().unwrap_or_else(crate::model::names::root);
            let want = &d.accounts.get(n.as_str()).expect("desired account").assoc;
            // Settings that are not yet valid where the account is created are left to the QoS phase.
            let c = b.cluster(cname);
            let peff = c.accounts.effective_qos(parent.as_str());
            let pdef = c.accounts.effective_default_qos(parent.as_str());
            let eff = want.qos.effective(&peff);
            let ok = match want.default_qos.as_ref().or(pdef) {
                Some(q) => eff.contains(q),
                None => true,
            };
            let mut assoc = if ok { want.clone() } else { without_qos(want) };
            // What gates jobs (QoS, GrpSubmitJobs, GrpJobs, Fairshare) is set at creation; TRES and
            // wall limits, usually different per allocation, follow right after the creations,
            // batched by identical values, so creations batch per parent (docs/planning.md).
            assoc.limits = creation_limits(&assoc.limits);
            let record = crate::diff::new_record(desired.accounts.get(n), b.sim.state.accounts.get(n));
            let key = (parent.clone(), serde_json::to_string(&(&record, &assoc)).unwrap_or_default());
            groups.entry(key).or_insert_with(|| (record, assoc, Vec::new())).2.push(n.clone());
        }
        for ((parent, _), (record, assoc, names)) in groups {
            let objects = names.iter().map(|n| acct_addr(cname, n)).collect();
            let set = AssocSet::from_assoc(&assoc);
            b.emit(
                Phase::AccountCreate,
                Command::AddAccount { cluster: cname.clone(), names, parent, record, set },
                objects,
                None,
            )?;
        }
    }
    Ok(created)
}

fn reparents(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let mut moves: Vec<(usize, Name, Name)> = Vec::new();
    for n in &b.touched(cname).accounts {
        let (Some(want), Some(have)) = (d.accounts.parent(n.as_str()), b.cluster(cname).accounts.parent(n.as_str()))
        else {
            continue;
        };
        if want != have {
            moves.push((d.accounts.depth(n.as_str()), n.clone(), want.clone()));
        }
    }
    moves.sort();
    for (_, name, parent) in moves {
        make_move_safe(b, cname, d, &name, &parent)?;
        b.emit(
            Phase::Reparent,
            Command::Reparent { cluster: cname.clone(), name: name.clone(), parent },
            vec![acct_addr(cname, &name)],
            None,
        )?;
    }
    Ok(())
}

/// Before moving `name` under `parent`, make sure no association in its subtree ends up with
/// a DefaultQOS outside its QoS list: first try giving the account its final QoS settings
/// before the move; else pin its list (old ∪ new) and DefaultQOS, and widen explicit lists
/// below it that would inherit the new parent's DefaultQOS. The QoS phase sets final values.
fn make_move_safe(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    name: &Name,
    parent: &Name,
) -> Result<(), PlanError> {
    let c = b.cluster(cname);
    if sim::check_reparent(c, name, parent).is_ok() {
        return Ok(());
    }
    let have = c.accounts.get(name.as_str()).expect("exists").assoc.clone();
    let want = &d.accounts.get(name.as_str()).expect("desired").assoc;
    let mut fin = have.clone();
    fin.qos = want.qos.clone();
    fin.default_qos = want.default_qos.clone();
    if fin != have
        && sim::check_account_change(c, name, &fin).is_ok()
        && sim::check_reparent_with(c, name, parent, &fin).is_ok()
    {
        return b.emit(
            Phase::Reparent,
            Command::ModifyAccount { cluster: cname.clone(), names: vec![name.clone()], set: qos_set(&have, want) },
            vec![acct_addr(cname, name)],
            Some("final QoS first, so the move keeps every DefaultQOS valid"),
        );
    }
    let mut pinned = c.accounts.effective_qos(name.as_str());
    pinned.extend(c.accounts.effective_qos(parent.as_str()));
    let mut set = AssocSet::default();
    if have.qos != QosList::Set(pinned.clone()) {
        set.qos = Some(QosList::Set(pinned));
    }
    let own_default = have.default_qos.clone().or_else(|| c.accounts.effective_default_qos(name.as_str()).cloned());
    if have.default_qos.is_none() && own_default.is_some() {
        set.default_qos = Some(own_default.clone());
    }
    // With no default to pin, everything below inherits the new parent's default after the
    // move: explicit lists that lack it are widened first.
    let mut widen: Vec<Command> = Vec::new();
    if own_default.is_none()
        && let Some(newdef) = c.accounts.effective_default_qos(parent.as_str()).cloned()
    {
        collect_widenings(c, cname, name, &newdef, &mut widen);
    }
    if !set.is_empty() {
        b.emit(
            Phase::Reparent,
            Command::ModifyAccount { cluster: cname.clone(), names: vec![name.clone()], set },
            vec![acct_addr(cname, name)],
            Some("pin QoS so the move keeps every DefaultQOS valid"),
        )?;
    }
    for cmd in widen {
        // A widened list is not final: the QoS phase must look at it even when the diff did
        // not name it (it returns it to its desired value there).
        let touched = b.touched.entry(cname.clone()).or_default();
        let object = match &cmd {
            Command::ModifyAccount { names, .. } => {
                touched.accounts.insert(names[0].clone());
                acct_addr(cname, &names[0])
            }
            Command::ModifyUser { users, account, partition, .. } => {
                let key = UserKey { account: account.clone(), user: users[0].clone(), partition: partition.clone() };
                touched.users.insert(key.clone());
                user_addr(cname, &key)
            }
            _ => String::new(),
        };
        b.emit(
            Phase::Reparent,
            cmd,
            vec![object],
            Some("widen the QoS list so the move keeps every DefaultQOS valid"),
        )?;
    }
    Ok(())
}

/// Commands adding `newdef` to every explicit QoS list in the subtree of `top` (accounts and
/// users) that would inherit `newdef` as its DefaultQOS and does not contain it.
fn collect_widenings(c: &ClusterState, cname: &Name, top: &Name, newdef: &Name, out: &mut Vec<Command>) {
    // `top` itself is the moved account: its list is pinned (old ∪ new) and holds `newdef`.
    widen_users(c, cname, top, newdef, out);
    for child in c.accounts.children(top.as_str()) {
        widen_subtree(c, cname, child, newdef, out);
    }
}

fn widen_subtree(c: &ClusterState, cname: &Name, acct: &Name, newdef: &Name, out: &mut Vec<Command>) {
    let Some(node) = c.accounts.get(acct.as_str()) else { return };
    if node.assoc.default_qos.is_some() {
        return; // this subtree has its own default
    }
    if let Some(wide) = widened(&node.assoc.qos, newdef, || c.accounts.effective_qos(acct.as_str())) {
        out.push(Command::ModifyAccount {
            cluster: cname.clone(),
            names: vec![acct.clone()],
            set: AssocSet { qos: Some(QosList::Set(wide)), ..Default::default() },
        });
    }
    widen_users(c, cname, acct, newdef, out);
    for child in c.accounts.children(acct.as_str()) {
        widen_subtree(c, cname, child, newdef, out);
    }
}

fn widen_users(c: &ClusterState, cname: &Name, acct: &Name, newdef: &Name, out: &mut Vec<Command>) {
    for (k, a) in c.users_of_account(acct) {
        if a.default_qos.is_some() {
            continue;
        }
        if let Some(wide) = widened(&a.qos, newdef, || c.user_effective_qos(k, a)) {
            out.push(Command::ModifyUser {
                cluster: cname.clone(),
                users: vec![k.user.clone()],
                account: k.account.clone(),
                partition: k.partition.clone(),
                set: AssocSet { qos: Some(QosList::Set(wide)), ..Default::default() },
            });
        }
    }
}

/// The explicit list an association needs so that it keeps `newdef` (the DefaultQOS it is
/// about to inherit): its own list plus `newdef`, or for a `-newdef` delta its effective list
/// now plus `newdef`. `None` if it keeps `newdef` as it is (inheritance brings it: the moved
/// account's list is pinned to contain it).
fn widened(q: &QosList, newdef: &Name, effective_now: impl FnOnce() -> BTreeSet<Name>) -> Option<BTreeSet<Name>> {
    let mut wide = match q {
        QosList::Set(s) if !s.contains(newdef) => s.clone(),
        QosList::Delta { add, remove } if remove.contains(newdef) && !add.contains(newdef) => effective_now(),
        _ => return None,
    };
    wide.insert(newdef.clone());
    Some(wide)
}

fn user_adds(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let mut groups: UserBatches<Assoc> = BTreeMap::new();
    for k in &b.touched(cname).users {
        let Some(want) = d.users.get(k) else { continue };
        let c = b.cluster(cname);
        if c.users.contains_key(k) {
            continue;
        }
        let assoc = if sim::check_user_change(c, k, want).is_ok() { want.clone() } else { without_qos(want) };
        let key = (k.account.clone(), k.partition.clone(), serde_json::to_string(&assoc).unwrap_or_default());
        groups.entry(key).or_insert_with(|| (assoc, Vec::new())).1.push(k.user.clone());
    }
    // Accounts that get the same new users with the same settings share one command
    // (`add user U account=A,B`): sacctmgr adds the cross product, which is exactly the wanted
    // set, for one call instead of one per account.
    // Only small teams: slurmdbd adds the associations of a multi-account `add user` several
    // times slower each (22.05: 200 users x 4 accounts 7.9 s in one call, 4 x 0.85 s in four;
    // 10 users x 2 accounts 0.74 s against 2 x 0.63 s; 24.11 alike at a third of the cost).
    let mut merged: BTreeMap<SameUsers, (Assoc, Vec<Name>)> = BTreeMap::new();
    let mut batches: Vec<(Vec<Name>, SameUsers, Assoc)> = Vec::new();
    for ((account, partition, settings), (assoc, users)) in groups {
        let same = SameUsers { partition, settings, users };
        if same.users.len() > CROSS_ADD_MAX_USERS {
            batches.push((vec![account], same, assoc));
        } else {
            merged.entry(same).or_insert_with(|| (assoc, Vec::new())).1.push(account);
        }
    }
    batches.extend(merged.into_iter().map(|(same, (assoc, accounts))| (accounts, same, assoc)));
    batches.sort_by(|x, y| (&x.0[0], &x.1.partition).cmp(&(&y.0[0], &y.1.partition)));
    for (mut accounts, SameUsers { partition, users, .. }, assoc) in batches {
        let c = b.cluster(cname);
        let new = users.iter().filter(|u| !c.defaults.contains_key(*u)).count();
        let mut default_account = None;
        if accounts.len() > 1 && new == users.len() {
            // All new: the command names their DefaultAccount (the one they all want, if they
            // agree and it is in this batch; else the first account, as one-by-one adds would).
            let wanted = d.defaults.get(&users[0]).filter(|w| users.iter().all(|u| d.defaults.get(u) == Some(*w)));
            if let Some(pos) = wanted.and_then(|w| accounts.iter().position(|a| a == w)) {
                let first = accounts.remove(pos);
                accounts.insert(0, first);
            }
            default_account = Some(accounts[0].clone());
        }
        // Some users new and some not, over several accounts: a named default would move the
        // others' defaults, so one add per account.
        let mixed = accounts.len() > 1 && new > 0 && new < users.len();
        let commands = if mixed {
            accounts.into_iter().map(|a| (a, Vec::new(), None)).collect()
        } else {
            let account = accounts.remove(0);
            vec![(account, accounts, default_account)]
        };
        for (account, more_accounts, default_account) in commands {
            let mut objects = Vec::new();
            for a in std::iter::once(&account).chain(&more_accounts) {
                objects.extend(user_objects(cname, a, &partition, &users));
            }
            // A user's first association on a cluster becomes its DefaultAccount.
            let c = b.cluster(cname);
            objects.extend(
                users.iter().filter(|u| !c.defaults.contains_key(*u)).map(|u| format!("default_account.{cname}.{u}")),
            );
            let command = Command::AddUser {
                cluster: cname.clone(),
                users: users.clone(),
                account,
                partition: partition.clone(),
                set: AssocSet::from_assoc(&assoc),
                more_accounts,
                default_account,
            };
            b.emit(Phase::UserAdd, command, objects, None)?;
        }
    }
    Ok(())
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Account(usize, Name),
    User(UserKey),
}

/// DefaultQOS-safe QoS changes: repeatedly apply every final setting that is valid now
/// (accounts top-down, then users); when stuck, widen the next pending association's list to
/// old ∪ new and try again (sacctmgr.md section 4: widen, move user defaults, then swap).
fn qos_changes(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let mut pending: BTreeSet<Target> = BTreeSet::new();
    {
        let touched = b.touched(cname);
        let c = b.cluster(cname);
        for n in &touched.accounts {
            let Some(want) = d.accounts.get(n.as_str()).map(|x| &x.assoc) else { continue };
            if let Some(have) = c.accounts.get(n.as_str())
                && qos_part(&have.assoc) != qos_part(want)
            {
                pending.insert(Target::Account(d.accounts.depth(n.as_str()), n.clone()));
            }
        }
        for k in &touched.users {
            let Some(want) = d.users.get(k) else { continue };
            if let Some(have) = c.users.get(k)
                && qos_part(have) != qos_part(want)
            {
                pending.insert(Target::User(k.clone()));
            }
        }
    }
    let mut widened: BTreeSet<Target> = BTreeSet::new();
    while !pending.is_empty() {
        // One pass: every final setting that is valid now, on associations that do not affect
        // each other (no selected account above another selected one or above a selected
        // user), batched by identical settings.
        let mut selected_accounts: BTreeSet<Name> = BTreeSet::new();
        let mut ready: Vec<(Target, Command, String)> = Vec::new();
        for t in pending.clone() {
            let c = b.cluster(cname);
            let under_selected = |acct: &Name| {
                selected_accounts.contains(acct)
                    || c.accounts.ancestors(acct.as_str()).iter().any(|a| selected_accounts.contains(*a))
            };
            match &t {
                Target::Account(_, n) => {
                    if under_selected(n) {
                        continue;
                    }
                    let have = &c.accounts.get(n.as_str()).expect("exists").assoc;
                    let want = &d.accounts.get(n.as_str()).expect("desired").assoc;
                    let mut next = have.clone();
                    next.qos = want.qos.clone();
                    next.default_qos = want.default_qos.clone();
                    if sim::check_account_change(c, n, &next).is_err() {
                        continue;
                    }
                    let set = qos_set(have, want);
                    // Slurm 22.05 checks the user rows below (sim::check_user_rows_for_account_qos).
                    if account_rows_block(c, n, &next, &set) {
                        continue;
                    }
                    let cmd = Command::ModifyAccount { cluster: cname.clone(), names: vec![n.clone()], set };
                    selected_accounts.insert(n.clone());
                    ready.push((t.clone(), cmd, acct_addr(cname, n)));
                }
                Target::User(k) => {
                    if under_selected(&k.account) {
                        continue;
                    }
                    let have = c.users.get(k).expect("exists");
                    let want = d.users.get(k).expect("desired");
                    let mut next = have.clone();
                    next.qos = want.qos.clone();
                    next.default_qos = want.default_qos.clone();
                    if sim::check_user_change(c, k, &next).is_err() {
                        continue;
                    }
                    // A final list without the account's coming DefaultQOS waits for it
                    // (Slurm 22.05 checks the user rows when the account gets it).
                    let account_pending = pending.iter().any(|p| matches!(p, Target::Account(_, a) if *a == k.account));
                    let coming = d.accounts.get(k.account.as_str()).and_then(|x| x.assoc.default_qos.as_ref());
                    let has_now = c.accounts.get(k.account.as_str()).and_then(|x| x.assoc.default_qos.as_ref());
                    if account_pending
                        && let Some(q) = coming
                        && has_now != Some(q)
                        && !matches!(want.qos, QosList::Inherit)
                        && !c.user_effective_qos(k, &next).contains(q)
                    {
                        continue;
                    }
                    let set = qos_set(have, want);
                    let cmd = Command::ModifyUser {
                        cluster: cname.clone(),
                        users: vec![k.user.clone()],
                        account: k.account.clone(),
                        partition: k.partition.clone(),
                        set,
                    };
                    ready.push((t.clone(), cmd, user_addr(cname, k)));
                }
            }
        }
        let progressed = !ready.is_empty();
        // batch: same command with another object list; keep the order of first appearance
        // (each batch keyed by its command without objects; names gathered, then set once)
        let mut batches: Vec<(Command, Vec<Name>, Vec<String>)> = Vec::new();
        for (t, cmd, object) in ready {
            pending.remove(&t);
            let key = cmd.with_objects(Vec::new());
            match batches.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, names, objects)) => {
                    names.extend(cmd.objects().iter().cloned());
                    objects.push(object);
                }
                None => batches.push((key, cmd.objects().to_vec(), vec![object])),
            }
        }
        for (key, names, objects) in batches {
            b.emit(Phase::QosSwap, key.with_objects(names), objects, None)?;
        }
        if progressed {
            continue;
        }
        // Stuck on an account whose QoS change Slurm 22.05 refuses because of user rows under
        // it (a new DefaultQOS or their own outside their list): those rows get a wide
        // explicit list first, and their final value once the account is done.
        if widen_users_for_account(b, cname, d, &mut pending, &mut widened)? {
            continue;
        }
        // Stuck: widen the first pending association not yet widened.
        let Some(t) = pending.iter().find(|t| !widened.contains(*t)).cloned() else {
            return Err(PlanError::Unsafe {
                command: format!("QoS changes on cluster `{cname}`"),
                reason: "no order of commands keeps every DefaultQOS inside its QoS list".into(),
            });
        };
        widened.insert(t.clone());
        let c = b.cluster(cname);
        match &t {
            Target::Account(_, n) => {
                let mut wide = c.accounts.effective_qos(n.as_str());
                wide.extend(effective_in(d, n));
                let have = &c.accounts.get(n.as_str()).expect("exists").assoc;
                if have.qos == QosList::Set(wide.clone()) {
                    continue;
                }
                let set = AssocSet { qos: Some(QosList::Set(wide)), ..Default::default() };
                b.emit(
                    Phase::QosSwap,
                    Command::ModifyAccount { cluster: cname.clone(), names: vec![n.clone()], set },
                    vec![acct_addr(cname, n)],
                    Some("widen the QoS list first so every DefaultQOS stays valid"),
                )?;
            }
            Target::User(k) => {
                let have = c.users.get(k).expect("exists").clone();
                let mut wide = c.user_effective_qos(k, &have);
                let want = d.users.get(k).expect("desired");
                wide.extend(d.user_effective_qos(k, want));
                if have.qos == QosList::Set(wide.clone()) {
                    continue;
                }
                emit_user_qos_list(b, cname, k, wide, "widen the QoS list first so every DefaultQOS stays valid")?;
            }
        }
    }
    Ok(())
}

/// Would Slurm 22.05 refuse giving account `n` the QoS settings of `next` (the command `set`)
/// because of the user rows under it (`sim::check_user_rows_for_account_qos`)?
fn account_rows_block(c: &ClusterState, n: &Name, next: &Assoc, set: &AssocSet) -> bool {
    let Some(new_default) = &set.default_qos else { return false };
    let parent = c.accounts.parent(n.as_str()).map(|p| c.accounts.effective_qos(p.as_str()));
    let new_list = next.qos.effective(&parent.unwrap_or_default());
    sim::check_user_rows_against(c, n, &new_list, new_default.as_ref()).is_err()
}

/// See the call in [`qos_changes`]: the user rows that block a pending account get an explicit
/// list holding what the account's change needs (the account's new DefaultQOS, their own) and
/// what they have now; they get their final value later. Emits one command per row; true if any.
fn widen_users_for_account(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    pending: &mut BTreeSet<Target>,
    widened: &mut BTreeSet<Target>,
) -> Result<bool, PlanError> {
    let mut wide: Vec<(UserKey, BTreeSet<Name>)> = Vec::new();
    {
        let c = b.cluster(cname);
        for t in pending.iter() {
            let Target::Account(_, n) = t else { continue };
            let want = &d.accounts.get(n.as_str()).expect("desired").assoc;
            let have = &c.accounts.get(n.as_str()).expect("exists").assoc;
            let mut next = have.clone();
            next.qos = want.qos.clone();
            next.default_qos = want.default_qos.clone();
            let set = qos_set(have, want);
            if !account_rows_block(c, n, &next, &set) {
                continue;
            }
            let parent = c.accounts.parent(n.as_str()).map(|p| c.accounts.effective_qos(p.as_str()));
            let new_list = next.qos.effective(&parent.unwrap_or_default());
            let Some(new_default) = &set.default_qos else { continue };
            for (k, a) in c.users_of_account(n) {
                let target = Target::User(k.clone());
                let row_eff = a.qos.effective(&new_list);
                let needs: Vec<&Name> = new_default
                    .as_ref()
                    .or(a.default_qos.as_ref())
                    .into_iter()
                    .filter(|q| !row_eff.contains(*q))
                    .collect();
                if needs.is_empty() || widened.contains(&target) {
                    continue;
                }
                let mut list = c.user_effective_qos(k, a);
                list.extend(row_eff);
                list.extend(needs.into_iter().cloned());
                list.extend(c.user_effective_default_qos(k, a).cloned());
                wide.push((k.clone(), list));
            }
            if !wide.is_empty() {
                break;
            }
        }
    }
    for (k, list) in &wide {
        emit_user_qos_list(
            b,
            cname,
            k,
            list.clone(),
            "widen the user's QoS list while its account changes (Slurm 22.05 checks the user rows)",
        )?;
        let t = Target::User(k.clone());
        widened.insert(t.clone());
        if d.users.contains_key(k) {
            pending.insert(t);
        }
    }
    Ok(!wide.is_empty())
}

/// `modify user ... set qos=LIST` on one association, in the QoS-swap phase (a temporary
/// widening, so that every DefaultQOS stays inside its list while accounts change).
fn emit_user_qos_list(
    b: &mut Builder<'_>,
    cname: &Name,
    k: &UserKey,
    list: BTreeSet<Name>,
    why: &'static str,
) -> Result<(), PlanError> {
    let set = AssocSet { qos: Some(QosList::Set(list)), ..Default::default() };
    let cmd = Command::ModifyUser {
        cluster: cname.clone(),
        users: vec![k.user.clone()],
        account: k.account.clone(),
        partition: k.partition.clone(),
        set,
    };
    b.emit(Phase::QosSwap, cmd, vec![user_addr(cname, k)], Some(why))
}

fn effective_in(d: &ClusterState, n: &Name) -> BTreeSet<Name> {
    d.accounts.effective_qos(n.as_str())
}

fn qos_set(have: &Assoc, want: &Assoc) -> AssocSet {
    AssocSet {
        qos: (have.qos != want.qos).then(|| want.qos.clone()),
        default_qos: (have.default_qos != want.default_qos).then(|| want.default_qos.clone()),
        ..Default::default()
    }
}

fn account_records(b: &mut Builder<'_>, desired: &State) -> Result<(), PlanError> {
    let mut groups: BTreeMap<String, (AccountRecord, Name, Vec<Name>)> = BTreeMap::new();
    for (name, want) in &desired.accounts {
        let Some(have) = b.sim.state.accounts.get(name) else { continue };
        let rec = AccountRecord {
            description: want.description.clone().filter(|d| have.description.as_ref() != Some(d)),
            organization: want.organization.clone().filter(|o| have.organization.as_ref() != Some(o)),
        };
        if rec == AccountRecord::default() {
            continue;
        }
        // any cluster where the account has an association, for `cluster=`
        let Some(cluster) =
            b.sim.state.clusters.iter().find(|(_, c)| c.accounts.contains(name.as_str())).map(|(n, _)| n.clone())
        else {
            continue;
        };
        let key = format!("{cluster}\u{0}{}", serde_json::to_string(&rec).unwrap_or_default());
        groups.entry(key).or_insert_with(|| (rec, cluster, Vec::new())).2.push(name.clone());
    }
    for (_, (record, cluster, names)) in groups {
        let objects = names.iter().map(|n| format!("account_record.{n}")).collect();
        b.emit(Phase::Limits, Command::ModifyAccountRecord { cluster, names, record }, objects, None)?;
    }
    Ok(())
}

/// Limit changes of `accounts` (those still differing from the desired state), batched per
/// identical change.
fn account_limits(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    accounts: &BTreeSet<Name>,
    phase: Phase,
) -> Result<(), PlanError> {
    let mut acct_groups: BTreeMap<String, (AssocSet, Vec<Name>)> = BTreeMap::new();
    for n in accounts {
        let Some(want) = d.accounts.get(n.as_str()).map(|x| &x.assoc) else { continue };
        let Some(have) = b.cluster(cname).accounts.get(n.as_str()) else { continue };
        let set = AssocSet::limits_between(&have.assoc.limits, &want.limits);
        if set.is_empty() {
            continue;
        }
        let key = serde_json::to_string(&set).unwrap_or_default();
        acct_groups.entry(key).or_insert_with(|| (set, Vec::new())).1.push(n.clone());
    }
    for (_, (set, names)) in acct_groups {
        let objects = names.iter().map(|n| acct_addr(cname, n)).collect();
        b.emit(phase, Command::ModifyAccount { cluster: cname.clone(), names, set }, objects, None)?;
    }
    Ok(())
}

fn limits(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let touched = b.touched(cname);
    account_limits(b, cname, d, &touched.accounts, Phase::Limits)?;
    let mut user_groups: UserBatches<AssocSet> = BTreeMap::new();
    for k in &touched.users {
        let Some(want) = d.users.get(k) else { continue };
        let Some(have) = b.cluster(cname).users.get(k) else { continue };
        let set = AssocSet::limits_between(&have.limits, &want.limits);
        if set.is_empty() {
            continue;
        }
        let key = (k.account.clone(), k.partition.clone(), serde_json::to_string(&set).unwrap_or_default());
        user_groups.entry(key).or_insert_with(|| (set, Vec::new())).1.push(k.user.clone());
    }
    for ((account, partition, _), (set, users)) in user_groups {
        let objects = user_objects(cname, &account, &partition, &users);
        b.emit(
            Phase::Limits,
            Command::ModifyUser { cluster: cname.clone(), users, account, partition, set },
            objects,
            None,
        )?;
    }
    Ok(())
}

fn default_moves(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let mut groups: BTreeMap<Name, Vec<Name>> = BTreeMap::new();
    for user in &b.touched(cname).defaults {
        let Some(want) = d.defaults.get(user) else { continue };
        if b.cluster(cname).defaults.get(user) != Some(want) {
            groups.entry(want.clone()).or_default().push(user.clone());
        }
    }
    for (account, users) in groups {
        let objects = users.iter().map(|u| format!("default_account.{cname}.{u}")).collect();
        b.emit(
            Phase::DefaultAccount,
            Command::SetDefaultAccount { cluster: cname.clone(), users, account },
            objects,
            None,
        )?;
    }
    Ok(())
}

/// Removals, after the DefaultAccount moves. A user's rows under an account all go in one
/// command without a partition clause when none of them stays (`delete user where name=U
/// account=A cluster=C`): Slurm 24.11 removes rows of a DefaultAccount only together with the
/// user's last rows. Rows of the DefaultAccount that carry no default mark go first, one per
/// partition, then the marked ones (22.05 refuses a command that removes both kinds of one
/// user). Batched per (account, partition) and per account.
fn user_removals(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let mut first: RemovalBatches = BTreeMap::new();
    let mut last: RemovalBatches = BTreeMap::new();
    // (user, account, marked partitions that go) where some of the account's rows stay
    let mut partial: Vec<(Name, Name, Vec<Option<Name>>)> = Vec::new();
    let touched = b.touched(cname);
    let c = b.cluster(cname);
    // (user, account) -> the rows that go
    let mut going: BTreeMap<(Name, Name), Vec<&UserKey>> = BTreeMap::new();
    for k in &touched.users {
        if d.users.contains_key(k) || !c.users.contains_key(k) {
            continue;
        }
        going.entry((k.user.clone(), k.account.clone())).or_default().push(k);
    }
    for ((user, account), keys) in going {
        let lo = UserKey { account: account.clone(), user: user.clone(), partition: None };
        let all = c.users.range(lo..).take_while(|(k, _)| k.account == account && k.user == user).count();
        let is_default = c.defaults.get(&user) == Some(&account);
        let (unmarked, marked): (Vec<&UserKey>, Vec<&UserKey>) =
            keys.iter().partition(|k| !is_default || c.unmarked.contains(**k));
        let whole = keys.len() == all;
        // Rows without the mark: together when the whole account goes and none is marked.
        if whole && marked.is_empty() {
            first.entry((account.clone(), None)).or_default().push(user.clone());
            continue;
        }
        for k in unmarked {
            first.entry((account.clone(), Some(k.partition.clone()))).or_default().push(user.clone());
        }
        if marked.is_empty() {
            continue;
        }
        // The marked rows: all that is left of (user, account) when the account goes whole.
        if whole {
            last.entry((account.clone(), None)).or_default().push(user.clone());
        } else {
            partial.push((user.clone(), account.clone(), marked.into_iter().map(|k| k.partition.clone()).collect()));
        }
    }
    emit_removals(b, cname, first)?;
    for (user, account, partitions) in partial {
        remove_marked_rows(b, cname, d, &user, &account, partitions)?;
    }
    emit_removals(b, cname, last)
}

/// Some, not all, of a user's marked rows under its DefaultAccount go, and the user stays
/// there: slurmdbd refuses removing a marked row while the user keeps others (24.11). With
/// another account that stays, the default moves there for the removal and back (which marks
/// the rows left); without one, all the user's rows under the account go (unmarked ones
/// first) and the ones that stay are added back with their settings.
fn remove_marked_rows(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    user: &Name,
    account: &Name,
    partitions: Vec<Option<Name>>,
) -> Result<(), PlanError> {
    let c = b.cluster(cname);
    let other = c
        .users
        .keys()
        .filter(|k| &k.user == user && &k.account != account)
        .find(|k| d.users.contains_key(*k))
        .map(|k| k.account.clone());
    let users = vec![user.clone()];
    let default_addr = vec![format!("default_account.{cname}.{user}")];
    let set_default = |account: &Name| Command::SetDefaultAccount {
        cluster: cname.clone(),
        users: users.clone(),
        account: account.clone(),
    };
    if let Some(other) = other {
        let note = Some("the default moves away while its marked rows go, then back");
        b.emit(Phase::UserRemove, set_default(&other), default_addr.clone(), note)?;
        for partition in partitions {
            let objects = user_objects(cname, account, &partition, &users);
            let cmd = Command::DeleteUser {
                cluster: cname.clone(),
                users: users.clone(),
                account: account.clone(),
                partition,
            };
            b.emit(Phase::UserRemove, cmd, objects, None)?;
        }
        return b.emit(Phase::UserRemove, set_default(account), default_addr, note);
    }
    let kept: Vec<(UserKey, Assoc)> = c
        .users_of_account(account)
        .filter(|(k, _)| &k.user == user && !partitions.contains(&k.partition))
        .map(|(k, a)| (k.clone(), a.clone()))
        .collect();
    // Unmarked rows first (22.05 refuses one command with both kinds), then the marked ones.
    let unmarked: Vec<UserKey> = c
        .users_of_account(account)
        .filter(|(k, _)| &k.user == user && c.unmarked.contains(*k))
        .map(|(k, _)| k.clone())
        .collect();
    let marked: Vec<String> = c
        .users_of_account(account)
        .filter(|(k, _)| &k.user == user && !c.unmarked.contains(*k))
        .map(|(k, _)| user_addr(cname, k))
        .collect();
    let note = Some("all rows go and the ones that stay are added back");
    for k in unmarked {
        let objects = vec![user_addr(cname, &k)];
        let cmd = Command::DeleteUser {
            cluster: cname.clone(),
            users: users.clone(),
            account: account.clone(),
            partition: k.partition,
        };
        b.emit(Phase::UserRemove, cmd, objects, note)?;
    }
    let cmd = Command::DeleteUserAll { cluster: cname.clone(), users: users.clone(), account: account.clone() };
    b.emit(Phase::UserRemove, cmd, marked, note)?;
    for (k, assoc) in kept {
        let command = Command::AddUser {
            cluster: cname.clone(),
            users: users.clone(),
            account: account.clone(),
            partition: k.partition.clone(),
            set: AssocSet::from_assoc(&assoc),
            more_accounts: Vec::new(),
            default_account: None,
        };
        b.emit(Phase::UserRemove, command, vec![user_addr(cname, &k)], None)?;
    }
    Ok(())
}

/// One command per batch: a row per (account, partition), or all rows of an account.
fn emit_removals(b: &mut Builder<'_>, cname: &Name, batches: RemovalBatches) -> Result<(), PlanError> {
    for ((account, rows), users) in batches {
        let (command, objects) = match rows {
            Some(partition) => {
                let objects = user_objects(cname, &account, &partition, &users);
                (Command::DeleteUser { cluster: cname.clone(), users, account, partition }, objects)
            }
            None => {
                let c = b.cluster(cname);
                let listed: BTreeSet<&Name> = users.iter().collect();
                let objects = c
                    .users_of_account(&account)
                    .filter(|(k, _)| listed.contains(&k.user))
                    .map(|(k, _)| user_addr(cname, k))
                    .collect();
                (Command::DeleteUserAll { cluster: cname.clone(), users, account }, objects)
            }
        };
        b.emit(Phase::UserRemove, command, objects, None)?;
    }
    Ok(())
}

/// Delete accounts that are not desired, deepest first, batched per depth. `leaves_only`:
/// only those whose whole subtree goes (run before re-parents); the rest after.
fn account_deletes(b: &mut Builder<'_>, cname: &Name, d: &ClusterState, leaves_only: bool) -> Result<(), PlanError> {
    let touched = b.touched(cname);
    let c = b.cluster(cname);
    let mut by_depth: BTreeMap<std::cmp::Reverse<usize>, Vec<Name>> = BTreeMap::new();
    for n in &touched.accounts {
        if d.accounts.contains(n.as_str()) || !c.accounts.contains(n.as_str()) {
            continue;
        }
        if leaves_only && c.accounts.subtree(n.as_str()).iter().any(|x| d.accounts.contains(x.as_str())) {
            continue;
        }
        by_depth.entry(std::cmp::Reverse(c.accounts.depth(n.as_str()))).or_default().push(n.clone());
    }
    for (_, names) in by_depth {
        let objects = names.iter().map(|n| acct_addr(cname, n)).collect();
        b.emit(Phase::AccountDelete, Command::DeleteAccount { cluster: cname.clone(), names }, objects, None)?;
    }
    Ok(())
}
