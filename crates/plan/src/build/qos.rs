//! Phases "qos" and "delete qos": QoS are global in slurmdbd. `add qos` / `modify qos` come
//! first, since everything below may reference them; `delete qos` comes last, when nothing
//! references them any more.
//!
//! Preconditions: none for the creates (they run first). For the deletes, every phase before
//! has run, so no association names a QoS that goes. Pure: no I/O.

use crate::{Phase, PlanError};
use slurmplan_model::{Name, State};
use slurmplan_sacctmgr::command::{Command, QosSet};

use super::Builder;

/// QoS creates and updates.
pub(super) fn qos_creates(b: &mut Builder<'_>, desired: &State) -> Result<(), PlanError> {
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
    Ok(())
}

/// QoS the desired state does not hold, last.
pub(super) fn qos_deletes(b: &mut Builder<'_>, desired: &State) -> Result<(), PlanError> {
    let gone: Vec<Name> = b.sim.state.qos.keys().filter(|n| !desired.qos.contains_key(*n)).cloned().collect();
    for n in gone {
        b.emit(Phase::QosDelete, Command::DeleteQos { names: vec![n.clone()] }, vec![format!("qos.{n}")], None)?;
    }
    Ok(())
}
