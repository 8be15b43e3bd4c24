//! `slurmplan plan`: tell about applies killed part-way, plan from the desired file and the
//! current state, save the plan file (signed when a plan key is set) and print the plan.
//!
//! Must not: change slurmdbd, take a lock, or plan anything itself (`planning` runs the
//! pipeline).

use slurmplan::apply::lock::{self, LockDir, LockError};
use slurmplan::plan::Plan;
use slurmplan::{pipeline, plan};

use super::args::{PlanArgs, PlanFormat, PlanOutput};
use super::planning::build_plan;
use super::print::{emit, write_atomic};
use super::settings::Settings;
use super::timings::Timings;
use super::{EXIT_CHANGES, EXIT_OK, Outcome};

pub fn run(s: &Settings, a: PlanArgs) -> Outcome {
    // Applies killed before they ended, from the lock directory an apply would use (read as
    // untrusted data; a directory that is missing has nothing to tell, one that is refused is
    // said so).
    match LockDir::open(s.lock_dir.as_deref(), false) {
        Ok(Some(dir)) => super::apply::report_interrupted(&lock::interrupted(&dir)),
        // Without a lock directory (a user without XDG_RUNTIME_DIR) no apply can have run.
        Ok(None) | Err(LockError::NoDir(_)) => {}
        Err(e) => {
            eprintln!("warning: interrupted applies are not looked for: {}", slurmplan::diag::tidy(&e.to_string()))
        }
    }
    let pipeline::Planned { mut plan, current } =
        build_plan(s, &a.desired, a.state.state.as_deref(), a.planning.allow_mass_delete, &a.planning.targets)?;
    if a.planning.no_batch {
        plan::unbatch(&mut plan);
    }
    let mut t = Timings::start(s.timings);
    let code = finish(s, &plan, &a.out, "plan")?;
    if s.through_rest() && matches!(a.out.format, PlanFormat::Text) && !plan.is_empty() {
        print_rest_calls(&plan, &current);
    }
    // A one-shot process: freeing a million associations only costs time before exit.
    std::mem::forget(current);
    t.mark("render");
    Ok(code)
}

/// Under `--transport rest`, what `apply` will send for each step (method, path under
/// `/slurmdb/VERSION/`, body; never the token), or the first step slurmrestd cannot write.
fn print_rest_calls(plan: &Plan, current: &slurmplan::model::State) {
    println!();
    match slurmplan::apply::writer::rest_calls(plan, current) {
        Ok(calls) => {
            println!("Through slurmrestd (--transport rest), apply sends (paths under /slurmdb/VERSION/):");
            for (step, calls) in plan.steps.iter().zip(calls) {
                for (i, call) in calls.iter().enumerate() {
                    let label = if i == 0 { format!("{}.", step.number) } else { String::new() };
                    println!("  {label:<4}{}", slurmplan::diag::cut_after(&call.shown(), usize::MAX));
                }
            }
        }
        Err(e) => {
            println!("This plan cannot be applied through slurmrestd: {e}.");
            println!("Apply it with --transport sacctmgr (docs/operations.md lists what slurmrestd cannot write).");
        }
    }
}

/// Save `plan` (`-o`, signed when a plan key is set), print it in `--format`, and give the exit
/// code (2 for changes with `--detailed-exitcode`); `what` names it in the note on stderr.
pub fn finish(s: &Settings, plan: &Plan, out: &PlanOutput, what: &str) -> Outcome {
    if let Some(path) = &out.output {
        write_atomic(path, &s.plan_json(plan)?)?;
        eprintln!("{what} saved to {}; apply it with: slurmplan apply {}", path.display(), path.display());
    }
    emit(plan, out.format.into(), s.color)?;
    Ok(if out.detailed_exitcode && !plan.is_empty() { EXIT_CHANGES } else { EXIT_OK })
}
