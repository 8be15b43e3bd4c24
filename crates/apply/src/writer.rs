//! How a plan step reaches slurmdbd: [`Writer`]. [`SacctmgrWriter`] runs the step's argv, as
//! stored in the plan, through a sacctmgr transport; [`RestWriter`] sends the slurmrestd calls
//! `rest::write` derives from the step's command and the state the step runs on (the state
//! read before the apply, with the steps before it replayed on the rules model), so a plan
//! file is the same whichever way it is applied. Must not: print, or build a sacctmgr argv.

use std::time::Instant;

use slurmplan_model::State;
use slurmplan_plan::{Plan, Step};
use slurmplan_rest::transport::RestTransport;
use slurmplan_rest::write::{self, Call, Unsupported};
use slurmplan_rules::RuleModel;
use slurmplan_sacctmgr::transport::{Output, Transport};

use crate::outcome::{Outcome, classify};

/// Runs steps, one at a time, in plan order.
pub trait Writer {
    /// What the journal and the messages show for the step: the argv (program as run), or
    /// the calls.
    fn shown(&self, step: &Step) -> Vec<String>;
    /// What the step feeds on stdin (a load's flat file), for the journal.
    fn stdin(&self, step: &Step) -> Option<String>;
    /// Run the step: what came back (for the journal) and whether it did what it says.
    fn write(&mut self, step: &Step) -> (Output, Outcome);
    /// What a failure's output is called in messages ("sacctmgr said").
    fn speaker(&self) -> &'static str;
    /// The requests that stand for the step's command, when it does not run as its argv
    /// (shown under it while applying); empty for sacctmgr.
    fn via(&self, _step: &Step) -> Vec<String> {
        Vec::new()
    }
}

/// Steps as sacctmgr commands, through `transport`.
pub struct SacctmgrWriter<'t>(pub &'t dyn Transport);

impl Writer for SacctmgrWriter<'_> {
    fn shown(&self, step: &Step) -> Vec<String> {
        self.0.describe(&step.argv[1..])
    }
    fn stdin(&self, step: &Step) -> Option<String> {
        step.command.stdin()
    }
    fn write(&mut self, step: &Step) -> (Output, Outcome) {
        let t0 = Instant::now();
        let stdin = step.command.stdin();
        match self.0.run(&step.argv[1..], stdin.as_deref().map(str::as_bytes)) {
            Ok(o) => {
                let oc = classify(&step.command, &o);
                (o, oc)
            }
            Err(e) => (
                Output {
                    code: None,
                    stdout: String::new(),
                    stderr: e.to_string(),
                    timed_out: false,
                    duration: t0.elapsed(),
                },
                Outcome::Failed { reason: e.to_string(), hint: "set --sacctmgr PATH (or SLURMPLAN_SACCTMGR)".into() },
            ),
        }
    }
    fn speaker(&self) -> &'static str {
        "sacctmgr"
    }
}

/// A step slurmrestd cannot write (found before anything is sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {step}: {why}")]
pub struct NotWritable {
    pub step: usize,
    pub why: Unsupported,
}

/// The calls of every step of `plan` applied to `current`, in order; the first step
/// slurmrestd cannot write is an error. For `plan` (to show them) and [`RestWriter::new`].
pub fn rest_calls(plan: &Plan, current: &State) -> Result<Vec<Vec<Call>>, NotWritable> {
    let mut model = RuleModel::new(current.clone());
    let mut out = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        out.push(write::calls(&step.command, &model.state).map_err(|why| NotWritable { step: step.number, why })?);
        // a plan whose steps do not replay is refused before an apply (`check`); the calls
        // of the steps after such a one are derived from the state as far as it replayed
        let _ = model.apply(&step.command);
    }
    Ok(out)
}

/// Steps as slurmrestd calls ([`rest_calls`]), sent through `rest`.
pub struct RestWriter<'t> {
    rest: &'t RestTransport,
    /// Each step's calls, by step number.
    calls: std::collections::HashMap<usize, Vec<Call>>,
}

impl<'t> RestWriter<'t> {
    /// The writer of `plan` on `current` (the state the plan was checked against, read under
    /// the locks); refused when a step cannot be written through slurmrestd.
    pub fn new(rest: &'t RestTransport, plan: &Plan, current: &State) -> Result<RestWriter<'t>, NotWritable> {
        let calls = rest_calls(plan, current)?;
        Ok(RestWriter { rest, calls: plan.steps.iter().map(|s| s.number).zip(calls).collect() })
    }

    fn calls_of(&self, step: &Step) -> &[Call] {
        self.calls.get(&step.number).map_or(&[], Vec::as_slice)
    }
}

impl Writer for RestWriter<'_> {
    fn shown(&self, step: &Step) -> Vec<String> {
        self.calls_of(step).iter().map(Call::shown).collect()
    }
    fn stdin(&self, _: &Step) -> Option<String> {
        None
    }
    fn via(&self, step: &Step) -> Vec<String> {
        self.shown(step)
    }
    fn write(&mut self, step: &Step) -> (Output, Outcome) {
        let t0 = Instant::now();
        let mut said = Vec::new();
        let calls = self.calls_of(step);
        if calls.is_empty() {
            let reason = format!("step {} is not a step of the plan this writer was made for", step.number);
            return (
                Output {
                    code: None,
                    stdout: String::new(),
                    stderr: reason.clone(),
                    timed_out: false,
                    duration: t0.elapsed(),
                },
                Outcome::Failed { reason, hint: "this is a slurmplan bug worth reporting".into() },
            );
        }
        for call in calls {
            match self.rest.write(call) {
                Ok(s) => said.push(s),
                Err(f) => {
                    let hint = if f.hint.is_empty() {
                        "read slurmrestd's message; re-run `slurmplan plan` to see what is left".to_string()
                    } else {
                        f.hint
                    };
                    return (
                        Output {
                            code: None,
                            stdout: said.join("\n"),
                            stderr: f.message.clone(),
                            timed_out: f.timed_out,
                            duration: t0.elapsed(),
                        },
                        Outcome::Failed { reason: f.message, hint },
                    );
                }
            }
        }
        (
            Output {
                code: None,
                stdout: said.join("\n"),
                stderr: String::new(),
                timed_out: false,
                duration: t0.elapsed(),
            },
            Outcome::Ok,
        )
    }
    fn speaker(&self) -> &'static str {
        "slurmrestd"
    }
}
