//! `slurmplan apply`: lock, re-read, refuse stale plans, confirm, execute, verify. Printing and
//! exit codes live here; the executor is `slurmplan::apply`. Must not run a step other than
//! the plan's own, as reviewed.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, SystemTime};

use indicatif::{ProgressBar, ProgressStyle};
use slurmplan::apply::{self, Observer, journal::Journal, lock};
use slurmplan::model::Name;
use slurmplan::plan::{self, Plan, Step};
use slurmplan::render::{self, Format, Options};

use super::args::ApplyArgs;
use super::planning::{build_plan_locked, read_every, whole_read_asked};
use super::settings::{Reader, Settings};
use super::state::{clusters_state, read_state, scoped_state, users_seen, warn_unsplit};
use super::{EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, Failure, Outcome};

struct Lines;
impl Observer for Lines {
    fn started(&mut self, step: &Step, total: usize, via: &[String]) {
        eprintln!("[{}/{}] {}", step.number, total, slurmplan::sacctmgr::quote::shown_argv(&step.argv));
        for call in via {
            eprintln!("      via slurmrestd: {}", slurmplan::diag::cut_after(call, 300));
        }
    }
    fn finished(&mut self, _step: &Step, _total: usize, _ok: bool) {}
}

/// No lines per step (`reconcile`: one summary line per cycle).
struct Silent;
impl Observer for Silent {
    fn started(&mut self, _step: &Step, _total: usize, _via: &[String]) {}
    fn finished(&mut self, _step: &Step, _total: usize, _ok: bool) {}
}

struct Bar(ProgressBar);
impl Observer for Bar {
    fn started(&mut self, step: &Step, _total: usize, _via: &[String]) {
        self.0.set_message(slurmplan::sacctmgr::quote::shown_argv(&step.argv[2..]));
    }
    fn finished(&mut self, _step: &Step, _total: usize, _ok: bool) {
        self.0.inc(1);
    }
}

fn clusters_of(plan: &Plan) -> Vec<String> {
    lock::scope(plan).clusters
}

/// A value from a lock file as shown: control characters (newlines too) escaped.
fn shown(value: &str) -> String {
    value.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect()
}

/// Tell about applies that were killed before they ended (their lock files still name their
/// journal): the step that was running, which may or may not have been committed. What the
/// lock files and journals say is shown escaped.
pub fn report_interrupted(previous: &[lock::Previous]) {
    let mut seen = std::collections::BTreeSet::new();
    for p in previous.iter().filter(|p| seen.insert(&p.journal)) {
        let journal = shown(&p.journal.to_string_lossy());
        match apply::journal::last_step(&p.journal) {
            Some(apply::journal::LastStep::Running { step, of, argv }) => eprintln!(
                "warning: a previous apply (PID {}) was interrupted at step {step} of {of}: {}\n  hint: that step may or may not have been committed; its journal is {journal}; `slurmplan plan` shows what is left",
                p.pid,
                slurmplan::diag::tidy(&shown(&argv.join(" "))),
            ),
            Some(apply::journal::LastStep::After { step, of }) => eprintln!(
                "warning: a previous apply (PID {}) was interrupted after step {step} of {of} finished\n  hint: its journal is {journal}; `slurmplan plan` shows what is left",
                p.pid,
            ),
            None => eprintln!(
                "warning: a previous apply (PID {}) was interrupted; its journal {journal} cannot be read (or is not a regular file)\n  hint: `slurmplan plan` shows what is left",
                p.pid,
            ),
        }
    }
}

/// The lock directory of an apply (`--lock-dir`, or the default; created if missing).
pub(super) fn lock_dir(s: &Settings) -> Result<lock::LockDir, Failure> {
    match lock::LockDir::open(s.lock_dir.as_deref(), true) {
        Ok(Some(d)) => Ok(d),
        Ok(None) => Err(Failure::new("the lock directory is missing")),
        Err(e @ lock::LockError::UnsafeDir { explicit: true, .. }) => Err(Failure::new(e.to_string()).hint(
            "give --lock-dir (or SLURMPLAN_LOCK_DIR) a directory only you can write (chmod 700), or one you own with the sticky bit (chmod 1777)",
        )),
        Err(e @ lock::LockError::UnsafeDir { .. }) => Err(Failure::new(e.to_string())
            .hint("remove it (slurmplan creates it again, 0700), or give --lock-dir a directory only you can write")),
        Err(e) => Err(Failure::new(e.to_string())
            .hint("set --lock-dir (or SLURMPLAN_LOCK_DIR) to a directory only you can write")),
    }
}

pub fn run(s: &Settings, a: ApplyArgs) -> Outcome {
    match (&a.plan, &a.desired) {
        (Some(path), None) => {
            // The mass-deletion guard and --target ran when this plan was made; the checksum
            // keeps it as reviewed.
            if !a.planning.targets.is_empty() {
                return Err(Failure::new("--target applies to `plan` and `apply -d`, not to a saved plan")
                    .hint("the saved plan already holds only what was targeted when it was made")
                    .code(EXIT_USAGE));
            }
            let plan = plan::file::read_with_key(path, s.plan_key()?.as_ref())
                .map_err(|e| Failure::new(e.to_string()).hint("re-create it with `slurmplan plan -o FILE`"))?;
            if plan.is_empty() {
                eprintln!("No changes. The plan is empty.");
                return Ok(EXIT_OK);
            }
            let outside: Vec<String> = clusters_of(&plan)
                .into_iter()
                .filter(|c| !s.clusters.is_empty() && !s.clusters.iter().any(|s| s.eq_ignore_ascii_case(c)))
                .collect();
            if !outside.is_empty() {
                return Err(Failure::new(format!(
                    "the plan `{}` also changes cluster(s) {} outside --cluster",
                    path.display(),
                    outside.join(", ")
                ))
                .hint("re-plan with the same --cluster, or drop --cluster to apply the whole plan"));
            }
            // Cluster names are checked (and encoded) before a lock file is named after them.
            let lock_dir = lock_dir(s)?;
            let _locks = take_lock(&lock_dir, &plan, a.lock_timeout)?;
            let (current, unread) = saved_plan_state(s, &plan)?;
            let now = plan.fingerprint_of(&current);
            if now != plan.current_fingerprint {
                return Err(Failure::new(format!(
                    "the plan `{}` is stale: the accounting state changed since it was computed",
                    path.display()
                ))
                .cause(format!("planned against {}, current is {now}", plan.current_fingerprint))
                .hint("run `slurmplan plan -o FILE` again, review it, and apply the new plan"));
            }
            refuse_unsound(path, &plan, &current, &unread)?;
            execute(s, &Exec::of(&a), plan, (current, unread), lock_dir, _locks, &mut 0)
        }
        (None, Some(d)) => {
            // Load, lock, then read once: the desired file is parsed once, its clusters (after
            // `--cluster`) are locked with the global lock before the current state is read,
            // and the state the plan is made from is the state it runs on (no second read after
            // the confirmation; other slurmplan runs wait for the lock). A file that cannot be
            // loaded is an error before any lock. The executor refuses any step outside them.
            let lock_dir = lock_dir(s)?;
            let (slurmplan::pipeline::Planned { mut plan, current, unread }, locks) =
                build_plan_locked(s, d, a.planning.allow_mass_delete, &a.planning.targets, |clusters| {
                    take_locks(&lock_dir, &lock::Scope { global: true, clusters }, a.lock_timeout)
                })?;
            if a.planning.no_batch {
                plan::unbatch(&mut plan);
            }
            confirm_and_execute(s, &a, plan, (current, unread), lock_dir, locks)
        }
        _ => Err(Failure::new("give a plan file or -d desired.yaml").code(EXIT_USAGE)),
    }
}

/// Show the plan, ask (unless `--auto-approve`), run it under `locks` and verify.
fn confirm_and_execute(
    s: &Settings,
    a: &ApplyArgs,
    plan: Plan,
    current: Current,
    lock_dir: lock::LockDir,
    locks: lock::Locks,
) -> Outcome {
    if plan.is_empty() {
        eprintln!("No changes. Slurm accounting matches the desired state.");
        return Ok(EXIT_OK);
    }
    {
        let mut out = std::io::stdout().lock();
        render::render(&plan, Format::Text, &Options { color: s.color }, &mut out)
            .and_then(|_| out.flush())
            .map_err(|e| Failure::new("cannot write to stdout").cause(e.to_string()))?;
    }
    if !a.auto_approve {
        if !std::io::stdin().is_terminal() {
            return Err(Failure::new("refusing to apply without confirmation: stdin is not a terminal").hint(
                "review with `slurmplan plan -o plan.json`, then `slurmplan apply plan.json`; or pass --auto-approve",
            ));
        }
        eprint!("\nDo you want to perform these actions? Only 'yes' will be accepted: ");
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if answer.trim() != "yes" {
            eprintln!("Apply cancelled; nothing was changed.");
            return Ok(EXIT_ERROR);
        }
    }
    execute(s, &Exec::of(a), plan, current, lock_dir, locks, &mut 0)
}

/// The current state a saved plan runs on, read under its lock: live beside other clusters,
/// the clusters its fingerprint covers and its steps name first, every cluster when the plan
/// depends on them (`pipeline::state_for_saved_plan`; `SLURMPLAN_READ_ALL_CLUSTERS=1` reads
/// every cluster at once). Rows that cannot be split are warnings, as for any read without a
/// desired file.
fn saved_plan_state(s: &Settings, plan: &Plan) -> Result<Current, Failure> {
    let whole = |why: Option<&str>| match why {
        Some(why) => read_every(s, why, true),
        None => read_state(s, None, true),
    };
    let (state, unsplit, unread) = if whole_read_asked()? {
        whole(None).map(|(state, unsplit)| (state, unsplit, Default::default()))?
    } else {
        slurmplan::pipeline::state_for_saved_plan(
            plan,
            |clusters| scoped_state(s, clusters, "plan", true),
            |users| users_seen(s, users, true),
            whole,
            |current, unread| apply::check::replay(plan, current, unread).ok(),
        )?
    };
    warn_unsplit(&unsplit);
    Ok((state, unread))
}

/// Before the first write: every step of a plan file must be one `plan` could have made for
/// the current state (apply::check); otherwise nothing runs.
fn refuse_unsound(
    path: &std::path::Path,
    plan: &Plan,
    current: &slurmplan::model::State,
    unread: &plan::Unread,
) -> Result<(), Failure> {
    let problems = apply::check::check(plan, current, unread);
    if problems.is_empty() {
        return Ok(());
    }
    let mut f =
        Failure::new(format!("the plan `{}` has {} step problem(s); nothing was run", path.display(), problems.len()));
    for p in problems.iter().take(20) {
        f = f.cause(p.clone());
    }
    Err(f
        .hint("plan files are not edited by hand: re-create it with `slurmplan plan -o FILE`, review it, and apply it"))
}

fn take_lock(dir: &lock::LockDir, plan: &Plan, timeout: u64) -> Result<lock::Locks, Failure> {
    take_locks(dir, &lock::scope(plan), timeout)
}

pub(super) fn take_locks(dir: &lock::LockDir, scope: &lock::Scope, timeout: u64) -> Result<lock::Locks, Failure> {
    let locks = lock::acquire(dir, scope, Duration::from_secs(timeout)).map_err(|e| match e {
        lock::LockError::Busy { .. } => {
            Failure::new(e.to_string()).hint("wait for it to finish, or raise --lock-timeout")
        }
        lock::LockError::Cluster(ref n) => Failure::new(e.to_string()).hint(n.hint.clone()),
        lock::LockError::UnsafeFile { .. } => Failure::new(e.to_string())
            .hint("only slurmplan creates files in its lock directory: remove that file (and find out who made it)"),
        other => Failure::new(other.to_string()).hint("set --lock-dir to a directory only you can write"),
    })?;
    report_interrupted(&locks.previous);
    Ok(locks)
}

/// How a plan is executed: `apply`'s flags, or `reconcile`'s.
pub struct Exec {
    /// The journal file; `None`: `slurmplan-apply-<time>-<pid>.jsonl` in `journal_dir`, else
    /// in the lock directory.
    pub journal: Option<std::path::PathBuf>,
    pub journal_dir: Option<std::path::PathBuf>,
    pub no_verify: bool,
    /// No line per step, no journal or success lines (failures are still returned).
    pub quiet: bool,
}

impl Exec {
    fn of(a: &ApplyArgs) -> Exec {
        Exec { journal: a.journal.clone(), journal_dir: None, no_verify: a.no_verify, quiet: false }
    }
}

/// The state a plan was made from, and what is known of the clusters slurmdbd holds that it
/// leaves out (nothing but for a scoped read: `pipeline::Planned::unread`).
pub type Current = (slurmplan::model::State, plan::Unread);

/// Run `plan` under `locks`, journalled, and verify; `applied` gets the number of steps that
/// ran to success.
pub fn execute(
    s: &Settings,
    a: &Exec,
    plan: Plan,
    (current, unread): Current,
    lock_dir: lock::LockDir,
    mut locks: lock::Locks,
    applied: &mut usize,
) -> Outcome {
    let reader = s.reader()?;
    let (mut by_sacctmgr, mut by_rest);
    let writer: &mut dyn apply::writer::Writer = match &reader {
        Reader::Sacctmgr(r) => {
            by_sacctmgr = apply::writer::SacctmgrWriter(r);
            &mut by_sacctmgr
        }
        Reader::Rest(t) => {
            // every step's calls are derived before anything runs: a step slurmrestd cannot
            // write stops the apply here, with nothing sent
            by_rest = apply::writer::RestWriter::new(t, &plan, &current).map_err(|e| {
                Failure::new(format!("this plan cannot be applied through slurmrestd; nothing was run: {e}"))
                    .hint("apply it with --transport sacctmgr (docs/operations.md lists what slurmrestd cannot write)")
            })?;
            &mut by_rest
        }
    };
    let journal_path = a.journal.clone().unwrap_or_else(|| {
        let ts = apply::rfc3339(SystemTime::now()).replace(':', "");
        a.journal_dir
            .as_deref()
            .unwrap_or(&lock_dir.path)
            .join(format!("slurmplan-apply-{ts}-{}.jsonl", std::process::id()))
    });
    let mut journal = Journal::create(&journal_path).map_err(|e| {
        Failure::new(format!("cannot create journal `{}`", journal_path.display())).cause(e.to_string())
    })?;
    if !a.quiet {
        eprintln!("journal: {}", journal_path.display());
    }
    save_before(&mut journal, &plan, &current, a.quiet)?;
    locks.record(&std::path::absolute(&journal_path).unwrap_or_else(|_| journal_path.clone()));
    let result = run_steps(s, a, writer, &plan, (&current, &unread), &mut journal, &locks, applied);
    // Every end that reaches here is a clean one (a failed step, a signal, a verification
    // result): the lock files stop naming this journal. A kill leaves them naming it.
    locks.release();
    result
}

/// Before the first step: save what the plan may change, as it is now, beside the journal and
/// name it in the journal's `apply` line (`slurmplan undo JOURNAL` reads both). Nothing runs
/// when it cannot be saved.
fn save_before(
    journal: &mut Journal,
    plan: &Plan,
    current: &slurmplan::model::State,
    quiet: bool,
) -> Result<(), Failure> {
    let stamp = format!("{}-{}", apply::rfc3339(SystemTime::now()).replace(':', ""), std::process::id());
    let path = apply::before::path_for(&journal.path, &stamp);
    let path = std::path::absolute(&path).unwrap_or(path);
    let saved = plan::undo::Before::capture(current, plan);
    apply::before::write(&path, plan, &saved).map_err(|e| {
        Failure::new(format!("cannot save what the apply changes to `{}`; nothing was run", path.display()))
            .cause(e.to_string())
    })?;
    journal
        .event(&serde_json::json!({
            "event": "apply", "steps": plan.steps.len(), "before": path.to_string_lossy(),
            "time": apply::rfc3339(SystemTime::now()),
        }))
        .map_err(|e| Failure::new(format!("cannot write journal `{}`", journal.path.display())).cause(e.to_string()))?;
    if !quiet {
        eprintln!(
            "saved what it changes to {}; `slurmplan undo {}` plans taking it back",
            path.display(),
            journal.path.display()
        );
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_steps(
    s: &Settings,
    a: &Exec,
    writer: &mut dyn apply::writer::Writer,
    plan: &Plan,
    (current, unread): (&slurmplan::model::State, &plan::Unread),
    journal: &mut Journal,
    locks: &lock::Locks,
    applied: &mut usize,
) -> Outcome {
    let journal_path = journal.path.clone();
    let total = plan.steps.len();
    let report = if a.quiet {
        apply::execute(plan, writer, journal, &mut Silent, locks)
    } else if std::io::stderr().is_terminal() && total > 3 {
        let bar = ProgressBar::new(total as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let mut obs = Bar(bar);
        let rep = apply::execute(plan, writer, journal, &mut obs, locks);
        obs.0.finish_and_clear();
        rep
    } else {
        apply::execute(plan, writer, journal, &mut Lines, locks)
    }
    .map_err(|e| match e {
        apply::ExecError::Journal(e) => {
            Failure::new(format!("cannot write journal `{}`", journal_path.display())).cause(e.to_string())
        }
        e @ apply::ExecError::NotLocked { .. } => Failure::new(e.to_string())
            .hint("this is a slurmplan bug (the locks are taken from the plan); please report it with the plan"),
    })?;
    *applied = report.applied;
    if let Some(f) = report.failure {
        let code = if report.applied == 0 { EXIT_ERROR } else { EXIT_PARTIAL };
        let mut fail = Failure::new(format!(
            "applied {} of {}; failed at step {}: {}",
            report.applied, report.total, f.step, f.command
        ))
        .cause(f.reason);
        if !f.output.is_empty() {
            fail = fail.cause(format!("{} said: {}", f.speaker, f.output.replace('\n', "\n    ")));
        }
        return Err(fail
            .hint(format!(
                "{}; the journal is {}; `slurmplan plan` shows the remaining work, `slurmplan undo {}` plans taking back what ran",
                f.hint,
                journal_path.display(),
                journal_path.display()
            ))
            .code(code));
    }
    if let Some(sig) = report.stopped {
        return Err(Failure::new(format!(
            "stopped by {} after step {}: applied {} of {}",
            apply::signals::name(sig),
            report.applied,
            report.applied,
            report.total
        ))
        .hint(format!(
            "the journal is {}; `slurmplan plan` shows the remaining work, `slurmplan undo {}` plans taking back what ran",
            journal_path.display(),
            journal_path.display()
        ))
        .code(EXIT_PARTIAL));
    }
    if !a.quiet {
        eprintln!("applied {} of {} steps.", report.applied, report.total);
    }
    if a.no_verify {
        eprintln!("verification skipped (--no-verify).");
        return Ok(EXIT_OK);
    }
    let Some(mut expected) = apply::expected_state(current, unread, plan) else {
        return Err(Failure::new("cannot verify: the plan's steps do not replay on the state read before applying")
            .code(EXIT_PARTIAL));
    };
    // Verification looks at the clusters the steps name (and the records and QoS), so only
    // those are read again (`apply::unconverged`).
    let touched: BTreeSet<Name> = plan.steps.iter().filter_map(|st| st.command.cluster().cloned()).collect();
    expected.clusters.retain(|c, _| touched.contains(c));
    let after = clusters_state(s, &touched, !a.quiet)?;
    let left = apply::unconverged(&after, &expected, plan);
    let _ = journal.event(&serde_json::json!({"verify": if left.is_empty() { "converged" } else { "not converged" }, "remaining": left.iter().map(|c| c.address()).collect::<Vec<_>>()}));
    if !left.is_empty() {
        let mut f = Failure::new(format!("apply finished but {} object(s) did not converge", left.len()));
        for c in left.iter().take(50) {
            f = f.cause(format!("{} ({:?})", c.address(), c.action()));
        }
        return Err(f
            .hint("sacctmgr reported success but the state differs; run `slurmplan plan` to see what is left")
            .code(EXIT_PARTIAL));
    }
    if !a.quiet {
        eprintln!("Apply complete! Verified: the accounting state matches the plan.");
    }
    Ok(EXIT_OK)
}
