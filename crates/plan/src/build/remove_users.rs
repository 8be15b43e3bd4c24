//! Phase "remove users": user associations that go, in the order rules 3-5 of docs/planning.md
//! require (rows under other accounts, then unmarked rows of the DefaultAccount, then the marked
//! ones all at once).
//!
//! Preconditions: the DefaultAccounts of users who stay have moved (phase "default accounts"
//! ran). Runs before any account delete, re-parent or QoS swap, so rows on their way out never
//! block those. Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_model::{Assoc, ClusterState, Name, UserKey};
use slurmplan_sacctmgr::command::{AssocSet, Command};

use super::{Builder, new_row_settings, user_addr, user_objects};
use crate::{Phase, PlanError};

/// Removal batches: (account, `Some(partition)` for one row / `None` for all rows) -> users.
type RemovalBatches = BTreeMap<(Name, Option<Option<Name>>), Vec<Name>>;

/// Removals, after the DefaultAccount moves. A user's rows under an account all go in one
/// command without a partition clause when none of them stays (`delete user where name=U
/// account=A cluster=C`): Slurm 24.11 removes rows of a DefaultAccount only together with the
/// user's last rows. Rows of the DefaultAccount that carry no default mark go first, one per
/// partition, then the marked ones (22.05 refuses a command that removes both kinds of one
/// user). Batched per (account, partition) and per account.
pub(super) fn user_removals(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
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
/// first) and the ones that stay are added back, with their final settings when those hold
/// then (see the loop at the end).
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
    for (k, now) in kept {
        // Added back as a new row, as phase "add users" adds one (`new_row_settings`): never
        // with the settings it had, since 22.05 may have left its DefaultQOS outside its
        // account's list and slurmdbd refuses to add a row like that
        // (tests/data/differential/2205-7143-plan-readd). Not yet final: phase "qos swap" sees it.
        let want = d.users.get(&k).unwrap_or(&now);
        let (assoc, later) = new_row_settings(b.cluster(cname), d, &k, want);
        if later {
            b.touched.entry(cname.clone()).or_default().users.insert(k.clone());
        }
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
