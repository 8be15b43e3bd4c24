//! Phase "create accounts": the missing accounts, parents first, batched per (parent, identical
//! settings). Only what gates jobs is set by `add account`; the TRES and wall limits of the new
//! accounts follow in the same phase (`limits::account_limits`), batched per identical change.
//!
//! Preconditions: every QoS the desired state names exists (phase "qos" ran). No user has been
//! added yet, so a new account never has users before its limits hold. QoS settings that are not
//! yet valid where the account is created are left to phase "qos swap". Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_model::{AccountRecord, Assoc, ClusterState, Name, State};
use slurmplan_sacctmgr::command::{AssocSet, Command};

use super::{Builder, Settings, acct_addr, without_qos};
use crate::{Phase, PlanError};

fn creation_limits(l: &slurmplan_model::Limits) -> slurmplan_model::Limits {
    slurmplan_model::Limits {
        fairshare: l.fairshare,
        grp_jobs: l.grp_jobs,
        grp_submit_jobs: l.grp_submit_jobs,
        max_jobs: l.max_jobs,
        max_submit_jobs: l.max_submit_jobs,
        ..Default::default()
    }
}

/// The record and settings of a new account, as a batch key.
type NewAccount = Settings<(AccountRecord, Assoc)>;

/// Creates the missing accounts; returns their names.
pub(super) fn account_creates(
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
        // (parent, record and settings) -> the accounts created so
        let mut groups: BTreeMap<(Name, NewAccount), Vec<Name>> = BTreeMap::new();
        for n in names {
            let parent = d.accounts.parent(n.as_str()).cloned().unwrap_or_else(slurmplan_model::names::root);
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
            // Under a parent whose DefaultQOS is outside its list (a state 22.05 leaves), an account
            // created bare would carry that violation: it gets a DefaultQOS of its own from the
            // parent's list (its final one if there, else the first) until the QoS phase gives it
            // its final settings (tests/data/differential/2205-20648-plan).
            if !ok && pdef.is_some_and(|q| !peff.contains(q)) {
                let last = d.accounts.effective_default_qos(n.as_str()).filter(|q| peff.contains(*q));
                if let Some(q) = last.or_else(|| peff.iter().next()) {
                    assoc.default_qos = Some(q.clone());
                }
            }
            // What gates jobs (QoS, GrpSubmitJobs, GrpJobs, Fairshare) is set at creation; TRES and
            // wall limits, usually different per allocation, follow right after the creations,
            // batched by identical values, so creations batch per parent (docs/planning.md).
            assoc.limits = creation_limits(&assoc.limits);
            let record = slurmplan_diff::new_record(desired.accounts.get(n), b.sim.state.accounts.get(n));
            groups.entry((parent.clone(), Settings::new((record, assoc)))).or_default().push(n.clone());
        }
        for ((parent, settings), names) in groups {
            let (record, assoc) = settings.value;
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
