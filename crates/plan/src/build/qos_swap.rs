//! Phase "qos swap": QoS lists and DefaultQOS of existing associations, in an order that keeps
//! every DefaultQOS inside its list after each command (docs/planning.md, "QoS swaps that keep
//! DefaultQOS valid"), widening lists to `old ∪ new` when nothing is valid.
//!
//! Preconditions: every association that goes is gone (phases "remove users" and "delete
//! accounts" ran), so none blocks a swap; every QoS named exists. Pure: no I/O.

use std::collections::BTreeSet;

use slurmplan_model::{Assoc, ClusterState, Name, QosList, UserKey};
use slurmplan_rules as rules;
use slurmplan_sacctmgr::command::{AssocSet, Command};

use super::{Builder, acct_addr, user_addr};
use crate::{Phase, PlanError};

/// The QoS/DefaultQOS part of an association once the QoS `gone` are deleted (the plan's last
/// phase), which strips them from stored deltas (`QosList::delta_stripped`).
fn qos_part(a: &Assoc, gone: &BTreeSet<Name>) -> (QosList, Option<Name>) {
    (a.qos.delta_stripped(gone), a.default_qos.clone())
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum AssocRef {
    Account(usize, Name),
    User(UserKey),
}

/// DefaultQOS-safe QoS changes: repeatedly apply every final setting that is valid now
/// (accounts top-down, then users); when stuck, widen the next pending association's list to
/// old ∪ new and try again (sacctmgr.md section 4: widen, move user defaults, then swap).
/// `gone`: the QoS the plan deletes after this phase.
pub(super) fn qos_changes(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    gone: &BTreeSet<Name>,
) -> Result<(), PlanError> {
    let mut pending = pending_targets(b, cname, d, gone);
    let mut widened: BTreeSet<AssocRef> = BTreeSet::new();
    // User rows widened for their account: they keep the wide list until it is done.
    let mut held: BTreeSet<UserKey> = BTreeSet::new();
    while !pending.is_empty() {
        let ready = ready_now(b, cname, d, &pending, &held, gone);
        if !ready.is_empty() {
            emit_batched(b, &mut pending, ready)?;
            continue;
        }
        // Stuck on an account whose QoS change Slurm 22.05 refuses because of user rows under
        // it (a new DefaultQOS or their own outside their list): those rows get a wide
        // explicit list first, and their final value once the account is done.
        if widen_users_for_account(b, cname, d, &mut pending, &mut widened, &mut held, gone)? {
            continue;
        }
        widen_next(b, cname, d, &pending, &mut widened)?;
    }
    Ok(())
}

/// The touched associations whose QoS list or DefaultQOS differs from the desired one.
fn pending_targets(b: &Builder<'_>, cname: &Name, d: &ClusterState, gone: &BTreeSet<Name>) -> BTreeSet<AssocRef> {
    let mut pending: BTreeSet<AssocRef> = BTreeSet::new();
    let touched = b.touched(cname);
    let c = b.cluster(cname);
    for n in &touched.accounts {
        let Some(want) = d.accounts.get(n.as_str()).map(|x| &x.assoc) else { continue };
        if let Some(have) = c.accounts.get(n.as_str())
            && qos_part(&have.assoc, gone) != qos_part(want, gone)
        {
            pending.insert(AssocRef::Account(d.accounts.depth(n.as_str()), n.clone()));
        }
    }
    for k in &touched.users {
        let Some(want) = d.users.get(k) else { continue };
        if let Some(have) = c.users.get(k)
            && qos_part(have, gone) != qos_part(want, gone)
        {
            pending.insert(AssocRef::User(k.clone()));
        }
    }
    pending
}

/// One pass: every final setting that is valid now, on associations that do not affect each
/// other (no selected account above another selected one or above a selected user), with the
/// command and the address of each. A row in `held` waits while its account is pending.
fn ready_now(
    b: &Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    pending: &BTreeSet<AssocRef>,
    held: &BTreeSet<UserKey>,
    gone: &BTreeSet<Name>,
) -> Vec<(AssocRef, Command, String, bool)> {
    let c = b.cluster(cname);
    let mut selected_accounts: BTreeSet<Name> = BTreeSet::new();
    let mut ready: Vec<(AssocRef, Command, String, bool)> = Vec::new();
    for t in pending {
        let under_selected = |acct: &Name| {
            selected_accounts.contains(acct)
                || c.accounts.ancestors(acct.as_str()).iter().any(|a| selected_accounts.contains(*a))
        };
        match t {
            AssocRef::Account(_, n) => {
                if under_selected(n) {
                    continue;
                }
                let Some((cmd, done)) = account_final(c, cname, d, n, gone) else { continue };
                selected_accounts.insert(n.clone());
                ready.push((t.clone(), cmd, acct_addr(cname, n), done));
            }
            AssocRef::User(k) => {
                // a widened row keeps its wide list while its account, or one above it, is
                // pending (a row below widened for an account's write)
                let account_pending = || {
                    let above = c.accounts.ancestors(k.account.as_str());
                    pending
                        .iter()
                        .any(|p| matches!(p, AssocRef::Account(_, a) if *a == k.account || above.contains(&a)))
                };
                if under_selected(&k.account) || (held.contains(k) && account_pending()) {
                    continue;
                }
                let Some((cmd, done)) = user_final(c, cname, d, k, pending, gone) else { continue };
                ready.push((t.clone(), cmd, user_addr(cname, k), done));
            }
        }
    }
    ready
}

/// The command giving account `n` its final QoS settings (true), or the clear on the way to
/// them (false, [`toward`]), if that is valid now.
fn account_final(
    c: &ClusterState,
    cname: &Name,
    d: &ClusterState,
    n: &Name,
    gone: &BTreeSet<Name>,
) -> Option<(Command, bool)> {
    let have = &c.accounts.get(n.as_str()).expect("exists").assoc;
    let want = &d.accounts.get(n.as_str()).expect("desired").assoc;
    toward(have, want, gone).into_iter().find_map(|(next, set, done)| {
        if rules::check_account_change(c, n, &next).is_err() {
            return None;
        }
        // Slurm 22.05 checks the user rows below (rules::check_user_rows_for_account_qos).
        if account_rows_block(c, n, &next, &set) {
            return None;
        }
        Some((Command::ModifyAccount { cluster: cname.clone(), names: vec![n.clone()], set }, done))
    })
}

/// What `have` may become by the next write toward `want`'s QoS part, in order of
/// preference, each with whether it is `want`'s. A QoS delta is stored as written only on an
/// association that inherits (`QosList::written`: on an explicit list it edits the list, on
/// other deltas it stacks), so reaching one (an undo restores deltas) from anything else
/// first clears the list (`qos=`), with the DefaultQOS it has, the one it is to have, or none
/// (`defaultqos=-1`: the first the cleared list keeps valid), and writes the delta (with the
/// DefaultQOS) after. Entries of the QoS `gone` are left to their deletion, which strips them.
/// Each with the command's `set`.
fn toward(have: &Assoc, want: &Assoc, gone: &BTreeSet<Name>) -> Vec<(Assoc, AssocSet, bool)> {
    let with = |qos: Option<&QosList>, default_qos: &Option<Name>| {
        let mut next = have.clone();
        if let Some(q) = qos {
            next.qos = have.qos.written(q);
        }
        next.default_qos = default_qos.clone();
        let set = AssocSet {
            qos: qos.cloned(),
            default_qos: (have.default_qos != *default_qos).then(|| default_qos.clone()),
            ..Default::default()
        };
        (next, set)
    };
    if have.qos.delta_stripped(gone) == want.qos {
        let (next, set) = with(None, &want.default_qos);
        return vec![(next, set, true)];
    }
    if have.qos.written(&want.qos).delta_stripped(gone) == want.qos {
        let (next, set) = with(Some(&want.qos), &want.default_qos);
        return vec![(next, set, true)];
    }
    let mut out: Vec<(Assoc, AssocSet, bool)> = Vec::new();
    for default_qos in [&have.default_qos, &want.default_qos, &None] {
        let (next, set) = with(Some(&QosList::Inherit), default_qos);
        if !out.iter().any(|(o, _, _)| *o == next) {
            out.push((next, set, false));
        }
    }
    out
}

/// The command giving user association `k` its final QoS settings, if that is valid now and
/// need not wait for its account.
fn user_final(
    c: &ClusterState,
    cname: &Name,
    d: &ClusterState,
    k: &UserKey,
    pending: &BTreeSet<AssocRef>,
    gone: &BTreeSet<Name>,
) -> Option<(Command, bool)> {
    let have = c.users.get(k).expect("exists");
    let want = d.users.get(k).expect("desired");
    let (next, set, done) =
        toward(have, want, gone).into_iter().find(|(next, _, _)| rules::check_user_change(c, k, next).is_ok())?;
    // A final list without the account's coming DefaultQOS waits for it
    // (Slurm 22.05 checks the user rows when the account gets it).
    let account_pending = pending.iter().any(|p| matches!(p, AssocRef::Account(_, a) if *a == k.account));
    let coming = d.accounts.get(k.account.as_str()).and_then(|x| x.assoc.default_qos.as_ref());
    let has_now = c.accounts.get(k.account.as_str()).and_then(|x| x.assoc.default_qos.as_ref());
    if account_pending
        && let Some(q) = coming
        && has_now != Some(q)
        && !matches!(next.qos, QosList::Inherit)
        && !c.user_effective_qos(k, &next).contains(q)
    {
        return None;
    }
    let cmd = Command::ModifyUser {
        cluster: cname.clone(),
        users: vec![k.user.clone()],
        account: k.account.clone(),
        partition: k.partition.clone(),
        set,
    };
    Some((cmd, done))
}

/// Emits the ready commands batched: the same command with another object list is merged into
/// the first one's batch (in the order of first appearance; each batch keyed by its command
/// without objects, names gathered, then set once). A command that is not yet the final one
/// (`done` false) leaves its association pending.
fn emit_batched(
    b: &mut Builder<'_>,
    pending: &mut BTreeSet<AssocRef>,
    ready: Vec<(AssocRef, Command, String, bool)>,
) -> Result<(), PlanError> {
    let mut batches: Vec<(Command, Vec<Name>, Vec<String>)> = Vec::new();
    for (t, cmd, object, done) in ready {
        if done {
            pending.remove(&t);
        }
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
    Ok(())
}

/// Stuck: widen the first pending association not yet widened to its current effective list
/// ∪ its desired one. Nothing left to widen: no order keeps every DefaultQOS valid.
fn widen_next(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    pending: &BTreeSet<AssocRef>,
    widened: &mut BTreeSet<AssocRef>,
) -> Result<(), PlanError> {
    let Some(t) = pending.iter().find(|t| !widened.contains(*t)).cloned() else {
        return Err(PlanError::Unsafe {
            command: format!("QoS changes on cluster `{cname}`"),
            reason: "no order of commands keeps every DefaultQOS inside its QoS list".into(),
        });
    };
    widened.insert(t.clone());
    let c = b.cluster(cname);
    match &t {
        AssocRef::Account(_, n) => {
            let mut wide = c.accounts.effective_qos(n.as_str());
            wide.extend(effective_in(d, n));
            let have = &c.accounts.get(n.as_str()).expect("exists").assoc;
            if have.qos == QosList::Set(wide.clone()) {
                return Ok(());
            }
            let set = AssocSet { qos: Some(QosList::Set(wide)), ..Default::default() };
            b.emit(
                Phase::QosSwap,
                Command::ModifyAccount { cluster: cname.clone(), names: vec![n.clone()], set },
                vec![acct_addr(cname, n)],
                Some("widen the QoS list first so every DefaultQOS stays valid"),
            )
        }
        AssocRef::User(k) => {
            let have = c.users.get(k).expect("exists").clone();
            let mut wide = c.user_effective_qos(k, &have);
            let want = d.users.get(k).expect("desired");
            wide.extend(d.user_effective_qos(k, want));
            if have.qos == QosList::Set(wide.clone()) {
                return Ok(());
            }
            emit_user_qos_list(b, cname, k, wide, "widen the QoS list first so every DefaultQOS stays valid")
        }
    }
}

/// Would Slurm 22.05 refuse giving account `n` the QoS settings of `next` (the command `set`)
/// because of its own row or the user rows under it (`rules::RowsCheck`)?
fn account_rows_block(c: &ClusterState, n: &Name, next: &Assoc, set: &AssocSet) -> bool {
    rules::check_account_rows_before(c, n, next, set).is_err()
}

/// The user rows directly under account `n` that Slurm 22.05's check of the command `set` (its
/// association becoming `next`) would refuse it for (`rules::RowsCheck`), each with the explicit
/// list that lets it through: what the row has now (its effective list and DefaultQOS) and
/// what the check needs. Used by the QoS swap and by the re-parent's pin.
pub(super) fn blocking_rows(
    c: &ClusterState,
    n: &Name,
    next: &Assoc,
    set: &AssocSet,
) -> Vec<(UserKey, BTreeSet<Name>)> {
    let parent = c.accounts.parent(n.as_str());
    let new_list = next.qos.effective(&parent.map(|p| c.accounts.effective_qos(p.as_str())).unwrap_or_default());
    let inherited = parent.and_then(|p| c.accounts.effective_default_qos(p.as_str()));
    let check = rules::RowsCheck {
        list: &new_list,
        default: next.default_qos.as_ref().or(inherited),
        forced: rules::forced_default(set),
    };
    let mut out = Vec::new();
    for (k, a) in c.users_of_account(n) {
        let Some(need) = check.missing(a) else { continue };
        let mut list = c.user_effective_qos(k, a);
        list.extend(a.qos.effective(&new_list));
        list.insert(need.clone());
        list.extend(c.user_effective_default_qos(k, a).cloned());
        out.push((k.clone(), list));
    }
    out
}

/// See the call in [`qos_changes`]: the user rows that block a pending account get an explicit
/// list holding what the account's change needs (the account's new DefaultQOS, their own) and
/// what they have now; they get their final value once the account is done (`held`: a step
/// toward it before, such as the clear on the way to a delta, would undo the widening and
/// block the account again). A row widened before is widened again when the account's next
/// write needs more than its list holds (the account's route changed once its parent moved).
/// Emits one command per row; true if any.
fn widen_users_for_account(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    pending: &mut BTreeSet<AssocRef>,
    widened: &mut BTreeSet<AssocRef>,
    held: &mut BTreeSet<UserKey>,
    gone: &BTreeSet<Name>,
) -> Result<bool, PlanError> {
    let mut wide: Vec<(UserKey, BTreeSet<Name>)> = Vec::new();
    {
        let c = b.cluster(cname);
        for t in pending.iter() {
            let AssocRef::Account(_, n) = t else { continue };
            let want = &d.accounts.get(n.as_str()).expect("desired").assoc;
            let have = &c.accounts.get(n.as_str()).expect("exists").assoc;
            // The account's next write ([`toward`]: its final settings, or the clear on the
            // way to a delta, which leaves the rows inheriting the parent's list).
            for (next, set, done) in toward(have, want, gone) {
                let rows = if account_rows_block(c, n, &next, &set) {
                    blocking_rows(c, n, &next, &set)
                } else if !done {
                    // the clear on the way to a delta (widening the account cannot help it)
                    rows_broken_below(c, n, &next)
                } else {
                    Vec::new()
                };
                for (k, list) in rows {
                    // A row widened before (for another write of this account, or another
                    // account) is widened again when this write needs more: its explicit list
                    // only grows, so this ends.
                    let grows = match c.users.get(&k).map(|a| &a.qos) {
                        Some(QosList::Set(have)) => !list.is_subset(have),
                        _ => true,
                    };
                    if grows {
                        wide.push((k, list));
                    }
                }
                if !wide.is_empty() {
                    break;
                }
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
        let t = AssocRef::User(k.clone());
        widened.insert(t.clone());
        held.insert(k.clone());
        if d.users.contains_key(k) {
            pending.insert(t);
        }
    }
    Ok(!wide.is_empty())
}

/// The user rows anywhere below account `n` whose DefaultQOS the write making its association
/// `next` (the clear on the way to a delta) would leave outside their inherited list, each with
/// the explicit list that keeps them valid through it: what they have now and their
/// DefaultQOS. Only when every violation that write introduces is such a row (an account's own
/// would need the account widened: [`widen_next`]).
fn rows_broken_below(c: &ClusterState, n: &Name, next: &Assoc) -> Vec<(UserKey, BTreeSet<Name>)> {
    let introduced = rules::introduced_by_change(c, n, next);
    if introduced.iter().any(|v| v.user.is_none()) {
        return Vec::new();
    }
    introduced
        .into_iter()
        .filter_map(|v| {
            let k = v.user?;
            let a = c.users.get(&k)?;
            let mut list = c.user_effective_qos(&k, a);
            list.insert(v.default_qos);
            Some((k, list))
        })
        .collect()
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
