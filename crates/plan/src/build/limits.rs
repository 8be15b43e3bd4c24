//! Phase "limits": account records (Description, Organization) and the limits of existing
//! accounts and user associations, batched per identical change. `account_limits` also sets the
//! TRES and wall limits of new accounts in phase "create accounts".
//!
//! Preconditions: every association that stays exists and holds its final QoS settings (phase
//! "qos swap" ran). Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_model::{AccountRecord, ClusterState, Name, State};
use slurmplan_sacctmgr::command::{AssocSet, Command};

use super::{Builder, Settings, UserBatches, acct_addr, user_objects};
use crate::{Phase, PlanError};

pub(super) fn account_records(b: &mut Builder<'_>, desired: &State) -> Result<(), PlanError> {
    let mut groups: BTreeMap<(Name, Settings<AccountRecord>), Vec<Name>> = BTreeMap::new();
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
        let Some(cluster) = b.sim.first_cluster_holding(name) else {
            continue;
        };
        groups.entry((cluster, Settings::new(rec))).or_default().push(name.clone());
    }
    for ((cluster, record), names) in groups {
        let record = record.value;
        let objects = names.iter().map(|n| format!("account_record.{n}")).collect();
        b.emit(Phase::Limits, Command::ModifyAccountRecord { cluster, names, record }, objects, None)?;
    }
    Ok(())
}

/// Limit changes of `accounts` (those still differing from the desired state), batched per
/// identical change.
pub(super) fn account_limits(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    accounts: &BTreeSet<Name>,
    phase: Phase,
) -> Result<(), PlanError> {
    let mut acct_groups: BTreeMap<Settings<AssocSet>, Vec<Name>> = BTreeMap::new();
    for n in accounts {
        let Some(want) = d.accounts.get(n.as_str()).map(|x| &x.assoc) else { continue };
        let Some(have) = b.cluster(cname).accounts.get(n.as_str()) else { continue };
        let set = AssocSet::limits_between(&have.assoc.limits, &want.limits);
        if set.is_empty() {
            continue;
        }
        acct_groups.entry(Settings::new(set)).or_default().push(n.clone());
    }
    for (set, names) in acct_groups {
        let set = set.value;
        let objects = names.iter().map(|n| acct_addr(cname, n)).collect();
        b.emit(phase, Command::ModifyAccount { cluster: cname.clone(), names, set }, objects, None)?;
    }
    Ok(())
}

pub(super) fn limits(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
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
        let key = (k.account.clone(), k.partition.clone(), Settings::new(set));
        user_groups.entry(key).or_default().push(k.user.clone());
    }
    for ((account, partition, set), users) in user_groups {
        let set = set.value;
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
