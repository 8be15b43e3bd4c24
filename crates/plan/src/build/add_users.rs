//! Phase "add users": new user associations, batched per (account, partition, settings);
//! accounts that get exactly the same few new users share one `add user U account=A,B`
//! (docs/planning.md, "One `add user` for several accounts"). First, users who get a row while they
//! have rows but no DefaultAccount get one set (docs/planning.md, rule 9).
//!
//! Preconditions: every account the new rows sit under exists with its limits (phase "create
//! accounts" ran); nothing has been removed yet. QoS settings not yet valid for a row are left
//! to phase "qos swap". Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_model::{Assoc, ClusterState, Name};
use slurmplan_sacctmgr::command::{AssocSet, Command};

use super::{Builder, Settings, UserBatches, new_row_settings, user_objects};
use crate::{Phase, PlanError};

/// The most users one `add user` adds to several accounts at once (measured break-even on
/// 22.05 is about 35 for two accounts; see docs/planning.md).
const CROSS_ADD_MAX_USERS: usize = 24;

/// New user associations that several accounts share: one `add user` can add them all.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct SameUsers {
    partition: Option<Name>,
    settings: Settings<Assoc>,
    users: Vec<Name>,
}

/// Before any row is added on `cname`: users who get one while they have rows there but no
/// DefaultAccount that is one of them (Slurm 22.05 leaves it so when a user's default rows
/// go). On such an `add user` slurmdbd would make the account of the user's first row in its
/// table order the default, which no read shows (the model refuses the add: rule 9 of
/// docs/planning.md). So the plan sets it first: to the desired DefaultAccount when the user
/// has a row under it now, else to the first account (by name) the user has a row under now
/// and keeps, else to the first it has now. The DefaultAccount phase then moves it to the
/// desired one, which by then has its new rows. Nothing is emitted for anyone else.
fn settle_defaults_before_adds(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let adding: BTreeSet<Name> = {
        let c = b.cluster(cname);
        let touched = b.touched.get(cname);
        touched
            .into_iter()
            .flat_map(|t| &t.users)
            .filter(|k| d.users.contains_key(*k) && !c.users.contains_key(*k))
            .map(|k| k.user.clone())
            .collect()
    };
    let lacking: BTreeSet<Name> = adding.into_iter().filter(|u| b.sim.lacks_valid_default(cname, u)).collect();
    if lacking.is_empty() {
        return Ok(());
    }
    let c = b.cluster(cname);
    // the accounts each of them has a row under now: one walk over the rows
    let mut rows: BTreeMap<&Name, BTreeSet<&Name>> = BTreeMap::new();
    for k in c.users.keys().filter(|k| lacking.contains(&k.user)) {
        rows.entry(&k.user).or_default().insert(&k.account);
    }
    let mut groups: BTreeMap<Name, Vec<Name>> = BTreeMap::new();
    for (user, accounts) in rows {
        let target = d
            .defaults
            .get(user)
            .filter(|w| accounts.contains(w))
            .or_else(|| accounts.iter().copied().find(|a| d.is_associated(user, a)))
            .or_else(|| accounts.first().copied())
            .expect("a user lacking a default has rows");
        groups.entry(target.clone()).or_default().push(user.clone());
    }
    super::default_accounts::emit_default_accounts(
        b,
        cname,
        groups,
        Phase::UserAdd,
        Some("the user has rows but no DefaultAccount: set before the add, so slurmdbd does not pick one"),
    )
}

pub(super) fn user_adds(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    settle_defaults_before_adds(b, cname, d)?;
    let mut groups: UserBatches<Assoc> = BTreeMap::new();
    for k in &b.touched(cname).users {
        let Some(want) = d.users.get(k) else { continue };
        let c = b.cluster(cname);
        if c.users.contains_key(k) {
            continue;
        }
        let (assoc, _) = new_row_settings(c, d, k, want);
        let key = (k.account.clone(), k.partition.clone(), Settings::new(assoc));
        groups.entry(key).or_default().push(k.user.clone());
    }
    // Accounts that get the same new users with the same settings share one command
    // (`add user U account=A,B`): sacctmgr adds the cross product, which is exactly the wanted
    // set, for one call instead of one per account.
    // Only small teams: slurmdbd adds the associations of a multi-account `add user` several
    // times slower each (measured break-even: docs/planning.md, `CROSS_ADD_MAX_USERS`).
    let mut merged: BTreeMap<SameUsers, Vec<Name>> = BTreeMap::new();
    let mut batches: Vec<(Vec<Name>, SameUsers)> = Vec::new();
    for ((account, partition, settings), users) in groups {
        let same = SameUsers { partition, settings, users };
        if same.users.len() > CROSS_ADD_MAX_USERS {
            batches.push((vec![account], same));
        } else {
            merged.entry(same).or_default().push(account);
        }
    }
    batches.extend(merged.into_iter().map(|(same, accounts)| (accounts, same)));
    batches.sort_by(|x, y| (&x.0[0], &x.1.partition).cmp(&(&y.0[0], &y.1.partition)));
    for (mut accounts, SameUsers { partition, users, settings }) in batches {
        let assoc = settings.value;
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
