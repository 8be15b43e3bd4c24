//! Phases "delete accounts (1)" and "(2)": accounts that are not desired, deepest first,
//! batched per depth. The first pass (before re-parents) deletes subtrees that go entirely; the
//! second (after) the old parents of accounts that moved out.
//!
//! Preconditions: the user associations below have been removed (phase "remove users" ran); for
//! the second pass, the children that stay have moved away (phase "re-parent" ran). Pure: no
//! I/O.

use std::collections::BTreeMap;

use slurmplan_model::{ClusterState, Name};
use slurmplan_sacctmgr::command::Command;

use super::{Builder, acct_addr};
use crate::{Phase, PlanError};

/// Delete accounts that are not desired, deepest first, batched per depth. `leaves_only`:
/// only those whose whole subtree goes (run before re-parents); the rest after.
pub(super) fn account_deletes(
    b: &mut Builder<'_>,
    cname: &Name,
    d: &ClusterState,
    leaves_only: bool,
) -> Result<(), PlanError> {
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
