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
use super::settings::{Reader, Settings};
use super::timings::Timings;
use super::{EXIT_CHANGES, EXIT_OK, Failure, Outcome};

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
    let pipeline::Planned { mut plan, current, .. } =
        build_plan(s, &a.desired, a.state.state.as_deref(), a.planning.allow_mass_delete, &a.planning.targets)?;
    if a.planning.no_batch {
        plan::unbatch(&mut plan);
    }
    let mut t = Timings::start(s.timings);
    if s.through_rest() && matches!(a.out.format, PlanFormat::Script) {
        let code = rest_script(s, &plan, &current, &a.out)?;
        std::mem::forget(current);
        return Ok(code);
    }
    // The plan's header under slurmrestd names what the state was read through: URL, the data
    // parser negotiated with the server and the user (a snapshot was read by no transport).
    let rest_text = s.through_rest() && matches!(a.out.format, PlanFormat::Text);
    let mut parser = None;
    if rest_text && a.state.state.is_none() {
        let r = s.reader()?;
        println!("Current state read through {}.\n", r.describe()?);
        if let Reader::Rest(t) = r {
            parser = t.data_parser().ok().map(str::to_string);
        }
    }
    let code = finish(s, &plan, &a.out, "plan")?;
    if rest_text && !plan.is_empty() {
        print_rest_calls(&plan, &current, parser.as_deref().unwrap_or("VERSION"));
    }
    // A one-shot process: freeing a million associations only costs time before exit.
    std::mem::forget(current);
    t.mark("render");
    Ok(code)
}

/// Under `--transport rest`, what `apply` will send for each step (method, path under
/// `/slurmdb/PARSER/`, body; never the token), or the first step slurmrestd cannot write.
fn print_rest_calls(plan: &Plan, current: &slurmplan::model::State, parser: &str) {
    println!();
    match slurmplan::apply::writer::rest_calls(plan, current) {
        Ok(calls) => {
            println!("Through slurmrestd (--transport rest), apply sends (paths under /slurmdb/{parser}/):");
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

/// `plan --transport rest --format script`: the plan file as `finish` saves it, and on stdout
/// the curl script of the calls `apply --transport rest` would send (`render::rest_script`).
/// A plan holding a step slurmrestd cannot write has no such script: refused, nothing printed.
fn rest_script(s: &Settings, plan: &Plan, current: &slurmplan::model::State, out: &PlanOutput) -> Outcome {
    let calls = slurmplan::apply::writer::rest_calls(plan, current).map_err(|e| {
        Failure::new(format!("this plan cannot be written through slurmrestd, so it has no curl script: {e}"))
            .hint("`--transport sacctmgr --format script` gives the sacctmgr script; docs/operations.md lists what slurmrestd cannot write")
    })?;
    let Reader::Rest(t) = s.reader()? else { unreachable!("through_rest() means the reader is slurmrestd") };
    let parser = t.data_parser().map_err(|e| Failure::new("cannot use slurmrestd").cause(e))?.to_string();
    if let Some(path) = &out.output {
        write_atomic(path, &s.plan_json(plan)?)?;
        eprintln!(
            "plan saved to {}; apply it with: slurmplan --transport rest apply {}",
            path.display(),
            path.display()
        );
    }
    let target = slurmplan::render::rest_script::Target { url: t.url(), user: t.user(), parser: &parser };
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    slurmplan::render::rest_script::render(plan, &calls, &target, &mut w)
        .and_then(|_| std::io::Write::flush(&mut w))
        .map_err(|e| Failure::new("cannot write to stdout").cause(e.to_string()))?;
    Ok(if out.detailed_exitcode && !plan.is_empty() { EXIT_CHANGES } else { EXIT_OK })
}
