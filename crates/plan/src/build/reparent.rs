//! Phase "re-parent": `modify account ... set parent=Y`, one account per command, shallowest
//! first, each made safe first (docs/planning.md, "Re-parents"): final QoS before the move, or
//! a pinned list and DefaultQOS and widened lists below.
//!
//! Preconditions: new parents exist (phase "create accounts" ran) and subtrees that go are gone
//! (phase "delete accounts (1)" ran). Final QoS values are phase "qos swap"'s work; this phase
//! only does what keeps every DefaultQOS valid across the move. Pure: no I/O.

use std::collections::BTreeSet;

use slurmplan_model::{ClusterState, Name, QosList, UserKey};
use slurmplan_rules as rules;
use slurmplan_sacctmgr::command::{AssocSet, Command};

use super::{Builder, acct_addr, qos_set, user_addr};
use crate::{Phase, PlanError};

pub(super) fn reparents(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
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
/// before the move (when Slurm 22.05 would take that command here, user rows included); else pin its list (old ∪ new ∪ its DefaultQOS) and DefaultQOS, and widen explicit lists
/// below it that would inherit the new parent's DefaultQOS. The QoS phase sets final values.
fn make_move_safe(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    name: &Name,
    parent: &Name,
) -> Result<(), PlanError> {
    let c = b.cluster(cname);
    if rules::check_reparent(c, name, parent).is_ok() {
        return Ok(());
    }
    let have = c.accounts.get(name.as_str()).expect("exists").assoc.clone();
    let want = &d.accounts.get(name.as_str()).expect("desired").assoc;
    let mut fin = have.clone();
    fin.qos = want.qos.clone();
    fin.default_qos = want.default_qos.clone();
    let set = qos_set(&have, want);
    // One write gives the final list unless it is a delta on a list that is not inherited
    // (`QosList::written`: it would edit or stack on it); then the move is pinned instead.
    if fin != have
        && have.qos.written(&want.qos) == want.qos
        && rules::check_account_change(c, name, &fin).is_ok()
        && rules::check_reparent_with(c, name, parent, &fin).is_ok()
    {
        return b.emit(
            Phase::Reparent,
            Command::ModifyAccount { cluster: cname.clone(), names: vec![name.clone()], set },
            vec![acct_addr(cname, name)],
            Some("final QoS first, so the move keeps every DefaultQOS valid"),
        );
    }
    let own_default = have.default_qos.clone().or_else(|| c.accounts.effective_default_qos(name.as_str()).cloned());
    let mut pinned = c.accounts.effective_qos(name.as_str());
    pinned.extend(c.accounts.effective_qos(parent.as_str()));
    // With no default of its own, the account inherits the new parent's, which may be outside
    // the parent's own list (a violation Slurm 22.05 leaves; tests/data/differential/2205-21165-plan).
    if own_default.is_none()
        && let Some(newdef) = c.accounts.effective_default_qos(parent.as_str())
    {
        pinned.insert(newdef.clone());
    }
    // The pinned DefaultQOS goes in the pinned list: a default already outside the account's
    // list (Slurm 22.05 lets one through) would otherwise make 22.05 refuse the pin itself
    // (`rules::RowsCheck` on the account's own row; tests/data/differential/2205-6596436051-plan).
    if let Some(d) = &own_default {
        pinned.insert(d.clone());
    }
    let mut set = AssocSet::default();
    if have.qos != QosList::Set(pinned.clone()) {
        set.qos = Some(QosList::Set(pinned));
    }
    if have.default_qos.is_none() && own_default.is_some() {
        set.default_qos = Some(own_default.clone());
    }
    // Slurm 22.05 checks the pin itself against the account's own row and the user rows
    // directly under it (`rules::RowsCheck`): a user row with a list of its own that lacks the
    // pinned DefaultQOS blocks it. Such rows get an explicit list holding what they have now
    // and what the pin needs first (tests/data/differential/2205-22112-plan).
    let mut widen: Vec<Command> = Vec::new();
    if !set.is_empty() {
        let mut next = have.clone();
        if let Some(q) = &set.qos {
            next.qos = q.clone();
        }
        if let Some(dq) = &set.default_qos {
            next.default_qos = dq.clone();
        }
        if rules::check_account_rows_before(c, name, &next, &set).is_err() {
            for (k, list) in super::qos_swap::blocking_rows(c, name, &next, &set) {
                widen.push(user_qos_list(cname, &k, list));
            }
        }
    }
    // With no default to pin, everything below inherits the new parent's default after the
    // move: explicit lists that lack it are widened first.
    let mut after_pin: Vec<Command> = Vec::new();
    if own_default.is_none()
        && let Some(newdef) = c.accounts.effective_default_qos(parent.as_str()).cloned()
    {
        collect_widenings(c, cname, name, &newdef, &mut after_pin);
    }
    for cmd in widen {
        emit_widening(
            b,
            cname,
            cmd,
            "widen the user's QoS list so the account's QoS can be pinned (Slurm 22.05 checks the user rows)",
        )?;
    }
    if !set.is_empty() {
        b.emit(
            Phase::Reparent,
            Command::ModifyAccount { cluster: cname.clone(), names: vec![name.clone()], set },
            vec![acct_addr(cname, name)],
            Some("pin QoS so the move keeps every DefaultQOS valid"),
        )?;
    }
    for cmd in after_pin {
        emit_widening(b, cname, cmd, "widen the QoS list so the move keeps every DefaultQOS valid")?;
    }
    Ok(())
}

/// Emits a widening command (a list that is not final: the QoS phase must look at it even
/// when the diff did not name it, and returns it to its desired value there).
fn emit_widening(b: &mut Builder<'_>, cname: &Name, cmd: Command, why: &'static str) -> Result<(), PlanError> {
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
    b.emit(Phase::Reparent, cmd, vec![object], Some(why))
}

/// `modify user ... set qos=LIST` on one user association.
fn user_qos_list(cname: &Name, k: &UserKey, list: BTreeSet<Name>) -> Command {
    Command::ModifyUser {
        cluster: cname.clone(),
        users: vec![k.user.clone()],
        account: k.account.clone(),
        partition: k.partition.clone(),
        set: AssocSet { qos: Some(QosList::Set(list)), ..Default::default() },
    }
}

/// Commands adding `newdef` to every explicit QoS list in the subtree of `top` (accounts and
/// users) that would inherit `newdef` as its DefaultQOS and does not contain it.
fn collect_widenings(c: &ClusterState, cname: &Name, top: &Name, newdef: &Name, out: &mut Vec<Command>) {
    // `top` itself is the moved account: its list is pinned (old ∪ new ∪ `newdef`).
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
            out.push(user_qos_list(cname, k, wide));
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
