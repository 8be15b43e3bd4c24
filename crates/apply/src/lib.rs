//! Apply — run a plan's steps exactly as reviewed, one at a time, and stop at the
//! first failure. Journal and lock live here; progress goes to an [`Observer`] the caller
//! provides (the cli draws it). This module never prints, never exits, and never builds a
//! command: it runs each step through a [`writer::Writer`] (the step's argv as stored in the
//! plan, or the slurmrestd calls derived from it).

pub mod before;
pub mod check;
pub mod journal;
pub mod lock;
pub mod outcome;
pub mod signals;
pub mod writer;

use std::collections::BTreeSet;
use std::time::{Instant, SystemTime};

use journal::{Entry, Journal, Started};
use outcome::{Outcome, tail};
use slurmplan_diff::{self as diff, Change};
use slurmplan_model::{Name, State};
use slurmplan_plan::{Plan, Step};
use slurmplan_rules::{RuleModel, Unread};
use slurmplan_sacctmgr::command::Command;

/// Progress callbacks (the cli implements them with a bar or plain lines).
pub trait Observer {
    /// `via`: the requests standing for the step's command (slurmrestd), else empty.
    fn started(&mut self, step: &Step, total: usize, via: &[String]);
    fn finished(&mut self, step: &Step, total: usize, ok: bool);
}

/// How an apply ended.
#[derive(Debug)]
pub struct Report {
    pub total: usize,
    pub applied: usize,
    pub failure: Option<StepFailure>,
    /// The signal (SIGINT, SIGTERM) that stopped the apply after a finished step.
    pub stopped: Option<i32>,
}

#[derive(Debug)]
pub struct StepFailure {
    pub step: usize,
    pub command: String,
    pub reason: String,
    pub hint: String,
    pub output: String,
    /// Who said `output` ("sacctmgr", "slurmrestd").
    pub speaker: &'static str,
}

/// RFC 3339 UTC time to the second (`2026-12-03T17:32:05Z`). A time before 1970 (a clock set
/// wrong) is written as the epoch rather than refused.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t.max(std::time::UNIX_EPOCH)).to_string()
}

/// Why [`execute`] ran nothing more.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The journal could not be written (nothing runs without its entry).
    #[error("{0}")]
    Journal(#[from] std::io::Error),
    /// A step writes where this apply holds no lock; found before the first step runs.
    #[error("step {step} is not covered by the locks this apply holds: {reason}; nothing was run")]
    NotLocked { step: usize, reason: String },
}

/// Run every step in order; stop at the first failure, or after the running step when SIGINT
/// or SIGTERM arrives. Each step is journalled (and synced) as started before it runs and as
/// finished after it. Before anything runs, every step must be covered by `locks` (the lock
/// of its cluster, and the global lock for what all clusters share); otherwise nothing runs.
pub fn execute(
    plan: &Plan,
    writer: &mut dyn writer::Writer,
    journal: &mut Journal,
    observer: &mut dyn Observer,
    locks: &lock::Locks,
) -> Result<Report, ExecError> {
    for step in &plan.steps {
        locks.covers(&step.command).map_err(|reason| ExecError::NotLocked { step: step.number, reason })?;
    }
    let total = plan.steps.len();
    let mut applied = 0;
    let signals = signals::StopOnSignal::install();
    for step in &plan.steps {
        if let Some(sig) = signals.received() {
            journal.event(&serde_json::json!({
                "event": "stopped", "signal": signals::name(sig), "applied": applied, "of": total,
                "time": rfc3339(SystemTime::now()),
            }))?;
            return Ok(Report { total, applied, failure: None, stopped: Some(sig) });
        }
        observer.started(step, total, &writer.via(step));
        let start = SystemTime::now();
        let t0 = Instant::now();
        let full = writer.shown(step);
        let stdin = writer.stdin(step);
        journal.started(&Started {
            event: "started",
            step: step.number,
            of: total,
            argv: &full,
            stdin: stdin.as_deref(),
            start: rfc3339(start),
        })?;
        let (output, outcome) = writer.write(step);
        let (result, reason) = match &outcome {
            Outcome::Ok => ("ok", None),
            Outcome::Failed { reason, .. } => ("failed", Some(reason.as_str())),
        };
        journal.write(&Entry {
            event: "finished",
            step: step.number,
            of: total,
            argv: &full,
            start: rfc3339(start),
            end: rfc3339(SystemTime::now()),
            duration_ms: t0.elapsed().as_millis(),
            exit_code: output.code,
            timed_out: output.timed_out,
            result,
            reason,
            stdout_tail: tail(&output.stdout, 20),
            stderr_tail: tail(&output.stderr, 20),
        })?;
        observer.finished(step, total, outcome == Outcome::Ok);
        match outcome {
            Outcome::Ok => applied += 1,
            Outcome::Failed { reason, hint } => {
                let text = format!("{}\n{}", output.stdout.trim_end(), output.stderr.trim_end());
                return Ok(Report {
                    total,
                    applied,
                    stopped: None,
                    failure: Some(StepFailure {
                        step: step.number,
                        command: slurmplan_sacctmgr::quote::shown_argv(&step.argv),
                        speaker: writer.speaker(),
                        reason,
                        hint,
                        output: tail(text.trim(), 8),
                    }),
                });
            }
        }
    }
    Ok(Report { total, applied, failure: None, stopped: signals.received() })
}

/// The state the plan should produce from `current` (the simulator replaying its steps).
/// `unread`: what is known of the clusters slurmdbd holds that `current` leaves out (a scoped
/// read; nothing for a whole one). `None` if the steps do not replay (the plan does not fit this state), or if
/// replaying them asked what only an unread cluster could answer (`RuleModel::scoped`: a plan
/// made from that state asked nothing of the kind, so this is a slurmplan bug).
pub fn expected_state(current: &State, unread: &Unread, plan: &Plan) -> Option<State> {
    let mut sim = RuleModel::scoped(current.clone(), unread.clone());
    for s in &plan.steps {
        sim.apply(&s.command).ok()?;
    }
    sim.looked_past_scope().is_none().then_some(sim.state)
}

/// What an applied plan left different from `expected` in the state read `after` it: the diff
/// of both, limited to what the plan acts on (its clusters, and the QoS objects and account
/// records its commands name). Another writer changing other clusters meanwhile is not this
/// apply's failure; anything else that differs is.
pub fn unconverged(after: &State, expected: &State, plan: &Plan) -> Vec<Change> {
    let mut clusters: BTreeSet<&Name> = BTreeSet::new();
    let mut qos: BTreeSet<&Name> = BTreeSet::new();
    let mut records: BTreeSet<&Name> = BTreeSet::new();
    for step in &plan.steps {
        let c = &step.command;
        match c {
            Command::AddQos { names, .. } | Command::ModifyQos { names, .. } | Command::DeleteQos { names } => {
                qos.extend(names)
            }
            Command::AddAccount { names, .. }
            | Command::ModifyAccountRecord { names, .. }
            | Command::DeleteAccount { names, .. } => records.extend(names),
            _ => {}
        }
        clusters.extend(c.cluster());
    }
    diff::diff(after, expected)
        .into_iter()
        .filter(|ch| match ch {
            Change::QosCreate { name, .. } | Change::QosUpdate { name, .. } | Change::QosDelete { name, .. } => {
                qos.contains(name)
            }
            Change::AccountRecordUpdate { name, .. } => records.contains(name),
            other => other.cluster().is_some_and(|c| clusters.contains(c)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurmplan_model::{ClusterState, Qos};

    #[test]
    fn rfc3339_to_the_second_in_utc() {
        let at = |secs: u64| rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
        let sub_second = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_999);
        assert_eq!(rfc3339(sub_second), "2023-11-14T22:13:20Z");
        let before_1970 = std::time::UNIX_EPOCH - std::time::Duration::from_secs(10);
        assert_eq!(rfc3339(before_1970), "1970-01-01T00:00:00Z");
    }

    use slurmplan_sacctmgr::reads::{Filter, Read};
    use slurmplan_sacctmgr::transport::{Output, RunError, Transport};
    use std::time::Duration;

    /// A transport that cannot start sacctmgr, as exec fails with E2BIG on a word past 128 KiB.
    struct TooLong;
    impl Transport for TooLong {
        fn read(&self, _: &Read, _: Filter<'_>, _: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
            self.run(&[], None)
        }
        fn run(&self, _: &[String], _: Option<&[u8]>) -> Result<Output, RunError> {
            Err(RunError::Spawn { program: "sacctmgr".into(), reason: "Argument list too long (os error 7)".into() })
        }
        fn describe(&self, a: &[String]) -> Vec<String> {
            std::iter::once("sacctmgr".to_string()).chain(a.iter().cloned()).collect()
        }
        fn timeout(&self) -> Duration {
            Duration::from_secs(1)
        }
    }

    struct Quiet;
    impl Observer for Quiet {
        fn started(&mut self, _: &Step, _: usize, _: &[String]) {}
        fn finished(&mut self, _: &Step, _: usize, _: bool) {}
    }

    /// A failed step's command is shown with each long word cut: a 200 KB description is not
    /// printed whole (it was before), and the words around it are kept.
    #[test]
    fn a_failed_steps_long_words_are_cut_in_the_report() {
        let (_, mut plan) = site_a();
        plan.steps.truncate(1);
        let huge = format!("description={}", "d".repeat(200_000));
        plan.steps[0].argv.push(huge);
        plan.steps[0].argv.push("organization=o".into());
        let dir = tempfile::tempdir().unwrap();
        let mut journal = journal::Journal::create(&dir.path().join("j.jsonl")).unwrap();
        let locks_dir = lock::LockDir::open(Some(dir.path()), false).unwrap().unwrap();
        let locks = lock::acquire(&locks_dir, &lock::scope(&plan), std::time::Duration::from_secs(1)).unwrap();
        let report = execute(&plan, &mut writer::SacctmgrWriter(&TooLong), &mut journal, &mut Quiet, &locks).unwrap();
        locks.release();
        let f = report.failure.expect("the step fails");
        assert!(f.command.len() < 1_000, "{} bytes", f.command.len());
        assert!(
            f.command.contains(&format!("description={}... (199812 more bytes)", "d".repeat(188))),
            "{}",
            f.command
        );
        assert!(f.command.starts_with("sacctmgr -i ") && f.command.ends_with(" organization=o"), "{}", f.command);
        assert!(f.reason.contains("Argument list too long"), "{}", f.reason);
        assert_eq!(slurmplan_sacctmgr::quote::shown_argv(&["a\u{1b}[31m".to_string()]), "a\\u{1b}[31m");
    }

    fn site_a() -> (State, Plan) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site-a");
        let current = slurmplan_sacctmgr::snapshot::load(&root.join("state")).unwrap_or_else(|d| panic!("{d:#?}"));
        let desired = slurmplan_desired::load_file(&root.join("desired.yaml")).unwrap_or_else(|d| panic!("{d:#?}"));
        let resolved = slurmplan_desired::resolve::resolve(&desired, &current).unwrap_or_else(|d| panic!("{d:#?}"));
        let plan = slurmplan_plan::make_plan(&current, &resolved.state, "x").unwrap();
        (current, plan)
    }

    /// Verification looks at what the plan acts on: another writer's cluster or QoS is not a
    /// failure of this apply; a difference on the plan's own cluster is.
    #[test]
    fn verification_is_limited_to_what_the_plan_acts_on() {
        let (current, plan) = site_a();
        assert!(!plan.steps.is_empty());
        let expected = expected_state(&current, &Unread::default(), &plan).unwrap();
        assert!(unconverged(&expected, &expected, &plan).is_empty());

        let mut after = expected.clone();
        let other = Name::keep_case("elsewhere", slurmplan_model::NameKind::Cluster).unwrap();
        after.clusters.insert(other, ClusterState::with_root());
        let q = Name::keep_case("someone_elses", slurmplan_model::NameKind::Qos).unwrap();
        after.qos.insert(q, Qos::default());
        assert!(unconverged(&after, &expected, &plan).is_empty(), "{:?}", unconverged(&after, &expected, &plan));

        // the plan's own cluster: a user association it should have removed is still there
        let (cname, c) = current.clusters.iter().next().unwrap();
        let gone = c.users.keys().find(|k| !expected.clusters[cname].users.contains_key(*k)).expect("a removal");
        let mut after = expected.clone();
        let a = c.users[gone].clone();
        after.clusters.get_mut(cname).unwrap().users.insert(gone.clone(), a);
        let left = unconverged(&after, &expected, &plan);
        assert_eq!(left.len(), 1, "{left:?}");
    }

    /// Counts the commands it is asked to run; every one succeeds.
    struct Counting(std::sync::atomic::AtomicUsize);
    impl Transport for Counting {
        fn read(&self, _: &Read, _: Filter<'_>, _: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
            self.run(&[], None)
        }
        fn run(&self, _args: &[String], _stdin: Option<&[u8]>) -> Result<Output, RunError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Output {
                code: Some(0),
                stdout: String::new(),
                stderr: String::new(),
                timed_out: false,
                duration: Duration::ZERO,
            })
        }
        fn describe(&self, args: &[String]) -> Vec<String> {
            args.to_vec()
        }
        fn timeout(&self) -> Duration {
            Duration::from_secs(1)
        }
    }

    /// The executor runs nothing when a step's cluster (or the global lock a QoS or account
    /// record step needs) is not among the locks it was handed; with the plan's own locks it
    /// runs every step.
    #[test]
    fn nothing_runs_without_the_locks_of_every_step() {
        let (_, plan) = site_a();
        let s = lock::scope(&plan);
        assert!(!s.clusters.is_empty());
        let tmp = tempfile::tempdir().unwrap();
        let dir = lock::LockDir::open(Some(tmp.path()), false).unwrap().unwrap();
        let timeout = std::time::Duration::from_secs(1);
        let mut partial: Vec<lock::Scope> = s
            .clusters
            .iter()
            .map(|c| lock::Scope {
                global: s.global,
                clusters: s.clusters.iter().filter(|o| *o != c).cloned().collect(),
            })
            .filter(|p| !p.clusters.is_empty())
            .collect();
        partial.push(lock::Scope { global: true, clusters: vec!["elsewhere".into()] });
        if s.global {
            partial.push(lock::Scope { global: false, clusters: s.clusters.clone() });
        }
        for held in partial {
            let locks = lock::acquire(&dir, &held, timeout).unwrap();
            let runner = Counting(Default::default());
            let jpath = tmp.path().join("j.jsonl");
            let mut journal = Journal::create(&jpath).unwrap();
            let r = execute(&plan, &mut writer::SacctmgrWriter(&runner), &mut journal, &mut Quiet, &locks);
            assert!(matches!(r, Err(ExecError::NotLocked { .. })), "{held:?}: {r:?}");
            assert_eq!(runner.0.load(std::sync::atomic::Ordering::SeqCst), 0, "{held:?}");
            assert_eq!(std::fs::read_to_string(&jpath).unwrap(), "", "{held:?}");
            locks.release();
        }
        let locks = lock::acquire(&dir, &s, timeout).unwrap();
        let runner = Counting(Default::default());
        let mut journal = Journal::create(&tmp.path().join("ok.jsonl")).unwrap();
        execute(&plan, &mut writer::SacctmgrWriter(&runner), &mut journal, &mut Quiet, &locks).unwrap();
        assert!(runner.0.load(std::sync::atomic::Ordering::SeqCst) > 0, "the plan's own locks let it run");
        locks.release();
    }
}
