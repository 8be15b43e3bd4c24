//! Phase "default accounts": `modify user ... set defaultaccount=A`, batched per target account.
//!
//! Preconditions: every target association exists (phase "add users" ran) and nothing has been
//! removed yet, so no user's DefaultAccount ever dangles. Pure: no I/O.

use std::collections::BTreeMap;

use slurmplan_model::{ClusterState, Name};
use slurmplan_sacctmgr::command::Command;

use super::Builder;
use crate::{Phase, PlanError};

pub(super) fn default_moves(b: &mut Builder<'_>, cname: &Name, d: &ClusterState) -> Result<(), PlanError> {
    let mut groups: BTreeMap<Name, Vec<Name>> = BTreeMap::new();
    for user in &b.touched(cname).defaults {
        let Some(want) = d.defaults.get(user) else { continue };
        if b.cluster(cname).defaults.get(user) != Some(want) {
            groups.entry(want.clone()).or_default().push(user.clone());
        }
    }
    emit_default_accounts(b, cname, groups, Phase::DefaultAccount, None)
}

/// One `modify user where name=... cluster=C set defaultaccount=A` per target account A.
pub(super) fn emit_default_accounts(
    b: &mut Builder<'_>,
    cname: &Name,
    groups: BTreeMap<Name, Vec<Name>>,
    phase: Phase,
    note: Option<&str>,
) -> Result<(), PlanError> {
    for (account, users) in groups {
        let objects = users.iter().map(|u| format!("default_account.{cname}.{u}")).collect();
        b.emit(phase, Command::SetDefaultAccount { cluster: cname.clone(), users, account }, objects, note)?;
    }
    Ok(())
}
