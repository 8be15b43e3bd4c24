//! `slurmplan undo JOURNAL`: a plan that takes back what an apply changed. Reads the journal
//! (its last apply and how far it got) and the before file it names, reads the current state,
//! and plans from it to the saved state for the objects the steps that ran changed
//! (`slurmplan::plan::undo`); the plan is ordered, linted, saved and signed like any plan and
//! applied with `slurmplan apply FILE`.
//!
//! Must not: change slurmdbd, take a lock, or decide what to take back itself.

use std::path::PathBuf;

use clap::Args;
use slurmplan::apply::before;
use slurmplan::diff::{Action, Change};
use slurmplan::plan::{self, undo};

use super::args::{PlanOutput, StateArgs};
use super::settings::Settings;
use super::state::current_state;
use super::{Failure, Outcome};

#[derive(Args, Debug)]
pub struct UndoArgs {
    /// The journal of the apply to take back (its path is printed by `apply`)
    pub journal: PathBuf,
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub out: PlanOutput,
    /// Take back the object at ADDR even though it changed since the apply (repeatable)
    #[arg(long = "force-undo", value_name = "ADDR")]
    pub force_undo: Vec<String>,
}

pub fn run(s: &Settings, a: UndoArgs) -> Outcome {
    let journal = a.journal.display().to_string();
    let applied = before::applied(&a.journal)
        .map_err(|e| Failure::new(format!("cannot read the journal `{journal}`")).cause(e))?;
    let (applied_plan, saved) = before::read(&applied.before).map_err(|e| {
        Failure::new(format!("cannot read the before file `{}` named in `{journal}`", applied.before.display()))
            .cause(e)
            .hint("an apply saves it beside its journal before its first step; it cannot be made afterwards")
    })?;
    if applied_plan.steps.len() != applied.steps {
        return Err(Failure::new(format!(
            "the before file `{}` holds a plan of {} steps, but the journal's apply ran a plan of {}",
            applied.before.display(),
            applied_plan.steps.len(),
            applied.steps
        )));
    }
    let now = current_state(s, a.state.state.as_deref())?;
    let r = undo::restore(&now, &saved, &applied_plan, applied.ran, &a.force_undo).map_err(|e| {
        let f = Failure::new(format!("cannot take back the apply of `{journal}`")).cause(e.to_string());
        match e {
            undo::UndoError::Needs(_) => {
                f.hint("name each of those objects with --force-undo ADDR to take it back too, or restore by hand")
            }
            _ => f,
        }
    })?;
    let hash = format!("undo:{}", applied_plan.desired_hash);
    let diffed = plan::diff_states(&now, &r.desired, plan::Covers::Managed(&r.managed));
    let mut p = plan::order(diffed, &now, &r.desired, &hash).map_err(|e| {
        Failure::new("cannot build a safe undo plan")
            .cause(e.to_string())
            .hint("this is a slurmplan bug; please report it with the journal, its before file and a snapshot")
    })?;
    let ran = applied.ran.done + usize::from(applied.ran.maybe);
    if ran < applied.steps {
        p.warnings.push(format!(
            "the apply stopped part-way: this undo takes back steps 1-{ran} of {}{}",
            applied.steps,
            if applied.ran.maybe { format!(" (step {ran} may or may not have run)") } else { String::new() }
        ));
    }
    for c in &r.conflicts {
        p.warnings.push(if c.forced {
            format!("`{}` was {} since the apply; taken back anyway (--force-undo)", c.address, c.what)
        } else {
            format!(
                "`{}` was {} since the apply: left as it is now (--force-undo {} takes it back anyway)",
                c.address, c.what, c.address
            )
        });
    }
    for (c, why) in &r.cannot {
        p.warnings.push(match why {
            undo::Why::NoUnset => format!(
                "`{c}` cannot be taken back: the user had no DefaultAccount before the apply, and slurmdbd cannot unset one"
            ),
            undo::Why::Dependent => format!(
                "`{c}` changes too, though the apply did not change it: taking the apply back would leave it breaking a rule slurmdbd enforces (as it did before the apply), so it gets the repair `slurmplan doctor` makes"
            ),
            undo::Why::Repaired => format!(
                "`{c}` cannot be taken back as it was: before the apply it broke a rule slurmdbd enforces (a DefaultQOS outside its QoS list, or a DefaultAccount without its association); it comes back repaired as `slurmplan doctor` repairs"
            ),
        });
    }
    let empty: Vec<String> = p
        .changes
        .iter()
        .filter(|c| {
            c.action == Action::Create && matches!(c.change, Change::AccountCreate { .. } | Change::UserCreate { .. })
        })
        .map(|c| c.address.clone())
        .collect();
    if !empty.is_empty() {
        p.warnings.push(format!(
            "{} association(s) come back empty: the apply deleted their usage (RawUsage, fairshare history), which slurmdbd does not keep: {}",
            empty.len(),
            plan::lints::list(&empty)
        ));
    }
    super::plan::finish(s, &p, &a.out, "undo plan")
}
