//! `slurmplan reconcile`: one converge cycle for a systemd timer or a cron line (`--interval`
//! loops, for a container). A cycle takes the desired state (`-d FILE`, or built from the
//! Waldur API with `--agent-config` as `waldur build --from-api` does), locks, plans, splits
//! the plan by the policy (`plan::policy`), applies what may run unattended (journalled and
//! verified as `apply`), writes what waits as a pending plan with its markdown review, and
//! reports: a Prometheus textfile, one line on stderr.
//!
//! Must not: run a step that is not in a plan it made in the same cycle from the state it
//! read under the locks; print anything for a cycle with nothing to do (cron mails stderr);
//! write any file but the metrics for such a cycle; follow a symlink in its state directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use slurmplan::apply::lock;
use slurmplan::apply::signals::{self, StopOnSignal};
use slurmplan::pipeline;
use slurmplan::plan::Plan;
use slurmplan::plan::policy::{self, Kind, Policy};
use slurmplan::render::{self, reconcile::Cycle};

use super::apply::{Exec, execute, lock_dir, take_locks};
use super::planning::{Printer, plan_scoped_live, read_every, refused, whole_read_asked};
use super::print::write_atomic;
use super::settings::Settings;
use super::state::{read_state, scoped_state, users_seen};
use super::timings::Timings;
use super::waldur::{ApiArgs, BuildArgs, built_yaml};
use super::{EXIT_CHANGES, EXIT_OK, EXIT_USAGE, Failure, Outcome};

#[derive(Args, Debug)]
pub struct ReconcileArgs {
    /// Desired-state YAML file; without it the desired state is built from the Waldur API with
    /// --agent-config (as `waldur build --from-api`) and kept as STATE_DIR/desired.yaml
    #[arg(short, long, value_name = "FILE")]
    pub desired: Option<PathBuf>,
    /// Offering name (with --agent-config, when the config has several SLURM offerings)
    #[arg(long, value_name = "NAME", conflicts_with = "desired")]
    pub offering: Option<String>,
    /// Policy file (YAML): which changes apply unattended; without it the defaults of
    /// docs/operations.md ("Running unattended")
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Directory of the cycle's files: pending/ (the plan waiting for review), journals/, and
    /// desired.yaml when built from Waldur (default: /var/lib/slurmplan for root; created 0700;
    /// it must be writable by you alone)
    #[arg(long, env = "SLURMPLAN_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Write the cycle's metrics to FILE (a node_exporter textfile, replaced atomically)
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// Run a cycle every DUR (e.g. 5m, 300s) until SIGTERM/SIGINT, instead of one cycle
    #[arg(long, value_name = "DUR", value_parser = humantime::parse_duration)]
    pub interval: Option<Duration>,
    /// Journals (and their before files) kept in STATE_DIR/journals; older ones are removed
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep_journals: u32,
    /// Exit 2 when changes wait for review (one cycle only)
    #[arg(long, conflicts_with = "interval")]
    pub detailed_exitcode: bool,
    /// Directory of the lock files (as `apply --lock-dir`)
    #[arg(long, env = "SLURMPLAN_LOCK_DIR", value_name = "DIR")]
    pub lock_dir: Option<PathBuf>,
    /// Seconds to wait for an apply on the same cluster to finish
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub lock_timeout: u64,
    #[command(flatten)]
    pub api: ApiArgs,
}

/// The file names in STATE_DIR/pending.
const PENDING_PLAN: &str = "plan.json";
const PENDING_REVIEW: &str = "plan.md";

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The default state directory: /var/lib/slurmplan for root, else
/// `$XDG_STATE_HOME/slurmplan` (or `~/.local/state/slurmplan`).
fn default_state_dir() -> Result<PathBuf, Failure> {
    if lock::euid() == 0 {
        return Ok(PathBuf::from("/var/lib/slurmplan"));
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".local/state")));
    match base {
        Some(b) if b.is_absolute() => Ok(b.join("slurmplan")),
        _ => Err(Failure::new("no state directory: XDG_STATE_HOME and HOME are unset (or not absolute)")
            .hint("give --state-dir DIR (or SLURMPLAN_STATE_DIR)")
            .code(EXIT_USAGE)),
    }
}

/// Open (creating it 0700) a directory of this user's that no one else can write, not through
/// a symlink (the lock directory's rules).
fn private_dir(path: &Path) -> Result<PathBuf, Failure> {
    match lock::LockDir::open(Some(path), true) {
        Ok(Some(d)) => Ok(d.path),
        Ok(None) => Err(Failure::new(format!("`{}` is missing", path.display()))),
        Err(e) => Err(Failure::new(e.to_string())
            .hint("give --state-dir a directory only you can write (chmod 700); its parent must exist")),
    }
}

/// A regular file's text, or `None` when it does not exist (never through a symlink).
fn existing_text(path: &Path) -> Option<String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => slurmplan::input::read_text(path).ok(),
        _ => None,
    }
}

/// Write `text` to `path` unless it already holds exactly that; true when it wrote.
fn write_if_changed(path: &Path, text: &str) -> Result<bool, Failure> {
    if existing_text(path).as_deref() == Some(text) {
        return Ok(false);
    }
    write_atomic(path, text)?;
    Ok(true)
}

/// Remove a regular file if it is there (a symlink is removed itself, never followed).
fn remove_if_present(path: &Path) -> Result<(), Failure> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Failure::new(format!("cannot remove `{}`", path.display())).cause(e.to_string())),
    }
}

fn load_policy(path: Option<&Path>) -> Result<Policy, Failure> {
    let Some(path) = path else { return Ok(Policy::default()) };
    let text = slurmplan::input::read_text(path)
        .map_err(|e| Failure::new(format!("cannot read the policy `{}`", path.display())).cause(e.to_string()))?;
    policy::parse(&text).map_err(|errors| {
        let mut f =
            Failure::new(format!("the policy `{}` has {} error(s); nothing was run", path.display(), errors.len()));
        for e in errors {
            f = f.cause(e);
        }
        f.hint("see docs/operations.md, \"Running unattended\", for the keys and the change kinds").code(EXIT_USAGE)
    })
}

pub fn run(s: &mut Settings, a: ReconcileArgs) -> Outcome {
    if a.desired.is_none() && s.agent_config().is_none() {
        return Err(
            Failure::new("give -d desired.yaml, or --agent-config FILE to build it from Waldur").code(EXIT_USAGE)
        );
    }
    let policy = load_policy(a.policy.as_deref())?;
    let state_dir = match &a.state_dir {
        Some(d) => d.clone(),
        None => default_state_dir()?,
    };
    let state_dir = private_dir(&state_dir)?;
    let Some(interval) = a.interval else {
        return cycle_reported(s, &a, &policy, &state_dir);
    };
    let stop = StopOnSignal::install();
    loop {
        // A failed cycle is reported (metrics, stderr) and the loop goes on: the next cycle
        // may succeed (a slurmdbd restart, a Waldur outage).
        let _ = cycle_reported(s, &a, &policy, &state_dir);
        // the next cycle sets slurmrestd up again: the token file is read anew (tokens are
        // rotated) and the data parser negotiated anew (slurmrestd may have been upgraded)
        s.forget_rest();
        let until = Instant::now() + interval;
        while Instant::now() < until {
            if let Some(sig) = stop.received() {
                eprintln!("reconcile: stopped by {}", signals::name(sig));
                return Ok(EXIT_OK);
            }
            std::thread::sleep(Duration::from_millis(200).min(until.saturating_duration_since(Instant::now())));
        }
        if let Some(sig) = stop.received() {
            eprintln!("reconcile: stopped by {}", signals::name(sig));
            return Ok(EXIT_OK);
        }
    }
}

/// One cycle, its metrics written and its summary (or its error) printed.
fn cycle_reported(s: &Settings, a: &ReconcileArgs, policy: &Policy, state_dir: &Path) -> Outcome {
    let started = Instant::now();
    let mut report = Cycle { started: now_secs(), ..Cycle::default() };
    let result = cycle(s, a, policy, state_dir, &mut report);
    report.duration_secs = started.elapsed().as_secs_f64();
    let (code, failure) = match result {
        Ok(code) => (code, None),
        Err(f) => (f.code, Some(f)),
    };
    report.exit_code = code;
    report.success = failure.is_none();
    let pending = state_dir.join("pending").join(PENDING_PLAN);
    if let Some(line) = render::reconcile::summary(&report, Some(&pending.display().to_string())) {
        eprintln!("{line}");
    }
    if let Some(path) = &a.metrics {
        let mut buf = Vec::new();
        render::reconcile::prometheus(&report, &mut buf)
            .map_err(|e| Failure::new("cannot render the metrics").cause(e.to_string()))?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Err(f) = write_atomic(path, &text) {
            // The cycle's own failure is the one to report; a metrics failure alone fails it.
            if failure.is_none() {
                return Err(f);
            }
        }
    }
    match failure {
        Some(f) => Err(f),
        None if code == EXIT_OK && a.detailed_exitcode && !report.pending.is_empty() => Ok(EXIT_CHANGES),
        None => Ok(code),
    }
}

/// The desired file of this cycle: `-d`, or built from the Waldur API into STATE_DIR (the file
/// is rewritten only when the build differs from it).
fn desired_file(s: &Settings, a: &ReconcileArgs, state_dir: &Path) -> Result<PathBuf, Failure> {
    if let Some(d) = &a.desired {
        return Ok(d.clone());
    }
    let config = s.agent_config().expect("checked in run").to_path_buf();
    let output = state_dir.join("desired.yaml");
    let build = BuildArgs {
        config,
        offering: a.offering.clone(),
        export: None,
        from_api: true,
        keep_export: None,
        output: output.clone(),
        allow_empty: false,
        api: a.api.clone(),
        quiet: true,
    };
    let mut built = built_yaml(s, &build)?;
    // The build's warnings are said when what Waldur says changes, not every cycle (cron
    // mails stderr): the first cycle, and each one whose build differs from the last.
    if write_if_changed(&output, &built.yaml)? {
        built.print_notes();
    }
    Ok(output)
}

fn counts(kinds: impl Iterator<Item = Kind>) -> BTreeMap<Kind, usize> {
    let mut m = BTreeMap::new();
    for k in kinds {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

fn cycle(s: &Settings, a: &ReconcileArgs, policy: &Policy, state_dir: &Path, report: &mut Cycle) -> Outcome {
    let desired = desired_file(s, a, state_dir)?;
    let pending_dir = private_dir(&state_dir.join("pending"))?;
    let req = pipeline::Request {
        desired: &desired,
        clusters: &s.clusters,
        targets: &[],
        allow_mass_delete: false,
        one_shot: a.interval.is_none(),
    };
    // Warnings of the desired file are `plan`'s business: a cycle prints one line.
    let mut printer = Printer { warnings: false, timings: Timings::start(s.timings) };
    let lock_dir = lock_dir(s)?;
    let d = pipeline::load(&req, &mut printer).map_err(|r| refused(r, &desired, "nothing was run", true))?;
    let clusters: Vec<String> = d.clusters.keys().map(|c| c.as_str().to_string()).collect();
    let locks = take_locks(&lock_dir, &lock::Scope { global: true, clusters }, a.lock_timeout)?;
    // Beside other clusters, the desired file's clusters are read first, as `plan` reads them
    // (docs/decisions.md, "Reads scoped to the plan's clusters").
    let read_all = whole_read_asked()?;
    let reconciled = if read_all {
        pipeline::plan_by_policy(&req, d, || read_state(s, None, false), &mut printer, policy)
    } else {
        pipeline::plan_by_policy_scoped(
            &req,
            d,
            |clusters| scoped_state(s, clusters, "desired file", false),
            |users| users_seen(s, users, false),
            |why| read_every(s, why, false),
            &mut printer,
            policy,
        )
    };
    let pipeline::Reconciled { full, now, held, current, unread } =
        reconciled.map_err(|r| refused(r, &desired, "nothing was run", true))?;
    report.drift = Some(full.changes.len());
    if full.is_empty() {
        drop(locks);
        remove_if_present(&pending_dir.join(PENDING_PLAN))?;
        remove_if_present(&pending_dir.join(PENDING_REVIEW))?;
        return Ok(EXIT_OK);
    }
    // The whole plan runs as it is (no copy); otherwise it is kept for the pending plan.
    let (run_now, rest) = match now {
        pipeline::RunNow::Whole => (Some(full), None),
        pipeline::RunNow::Part(plan) => (Some(*plan), Some(full)),
        pipeline::RunNow::Nothing => (None, Some(full)),
    };
    let ran = match run_now.filter(|p| !p.is_empty()) {
        Some(plan) => {
            let kinds = counts(plan.changes.iter().map(|c| Kind::of(&c.change, &current)));
            let journals = private_dir(&state_dir.join("journals"))?;
            let exec = Exec { journal: None, journal_dir: Some(journals.clone()), no_verify: false, quiet: true };
            let mut steps = 0;
            let result = execute(s, &exec, plan, (current, unread), lock_dir, locks, &mut steps);
            report.steps_applied = steps;
            prune_journals(&journals, a.keep_journals as usize);
            result?;
            report.applied = kinds;
            true
        }
        None => {
            drop(locks);
            false
        }
    };
    if held.is_empty() {
        remove_if_present(&pending_dir.join(PENDING_PLAN))?;
        remove_if_present(&pending_dir.join(PENDING_REVIEW))?;
        return Ok(EXIT_OK);
    }
    // What waits is the whole plan of the state as it is now: after an apply, planned again
    // (it may differ from the held part of the first plan only by what the apply changed).
    let pending = if ran {
        // For review: a plan that deletes more than the guard allows is written (with SP005),
        // as the cycle's first plan was.
        let review = pipeline::Request { allow_mass_delete: true, ..req };
        let not_written = |r| refused(r, &desired, "the pending plan was not written", true);
        let planned = if read_all {
            pipeline::plan(&review, || read_state(s, None, false), &mut printer)
        } else {
            let d = pipeline::load(&review, &mut printer).map_err(not_written)?;
            plan_scoped_live(s, &review, d, &mut printer, false)
        };
        let pipeline::Planned { plan, current, .. } = planned.map_err(not_written)?;
        report.pending = counts(plan.changes.iter().map(|c| Kind::of(&c.change, &current)));
        plan
    } else {
        report.pending = counts(held.iter().map(|h| h.kind));
        rest.expect("when nothing ran the whole plan was kept")
    };
    if pending.is_empty() {
        remove_if_present(&pending_dir.join(PENDING_PLAN))?;
        remove_if_present(&pending_dir.join(PENDING_REVIEW))?;
        report.pending.clear();
        return Ok(EXIT_OK);
    }
    write_pending(s, &pending_dir, &pending, &held)?;
    Ok(EXIT_OK)
}

/// The pending plan (signed when a plan key is set) and its markdown review with the reasons
/// each change waits; each file is rewritten only when it changed.
fn write_pending(s: &Settings, dir: &Path, plan: &Plan, held: &[policy::Held]) -> Result<(), Failure> {
    let path = dir.join(PENDING_PLAN);
    let mut md = Vec::new();
    render::render(plan, render::Format::Markdown, &render::Options { color: false }, &mut md)
        .map_err(|e| Failure::new("cannot render the pending plan").cause(e.to_string()))?;
    let mut md = String::from_utf8_lossy(&md).into_owned();
    md.push_str("\n### Why these changes wait\n\n");
    md.push_str("| change | kind | why |\n|---|---|---|\n");
    for h in held {
        md.push_str(&format!(
            "| `{}` | {} | {} |\n",
            h.address.replace('|', "\\|").replace('`', "'"),
            h.kind,
            h.reason.replace('|', "\\|")
        ));
    }
    md.push_str(&format!(
        "\nApply exactly this plan with `slurmplan apply {}` (it is refused if the state changed since).\n",
        path.display()
    ));
    write_if_changed(&path, &s.plan_json(plan)?)?;
    write_if_changed(&dir.join(PENDING_REVIEW), &md)?;
    Ok(())
}

/// Keep the newest `keep` journals of `dir` (`slurmplan-apply-<time>-<pid>.jsonl`, named in
/// time order) and remove older ones with their before files. Only regular files this
/// program names are touched; at most 100,000 entries are looked at.
fn prune_journals(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut names: Vec<String> = entries
        .take(100_000)
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let journals: Vec<&String> =
        names.iter().filter(|n| n.starts_with("slurmplan-apply-") && n.ends_with(".jsonl")).collect();
    if journals.len() <= keep {
        return;
    }
    for j in &journals[..journals.len() - keep] {
        let stem = j.trim_end_matches(".jsonl");
        let before = format!("{stem}.before-");
        for n in names.iter().filter(|n| *n == *j || (n.starts_with(&before) && n.ends_with(".json"))) {
            let _ = std::fs::remove_file(dir.join(n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_the_newest_journals_and_their_before_files() {
        let dir = tempfile::tempdir().unwrap();
        for t in ["20261201T000000Z-1", "20261202T000000Z-2", "20261203T000000Z-3"] {
            std::fs::write(dir.path().join(format!("slurmplan-apply-{t}.jsonl")), "").unwrap();
            std::fs::write(dir.path().join(format!("slurmplan-apply-{t}.before-x.json")), "").unwrap();
        }
        std::fs::write(dir.path().join("other.jsonl"), "").unwrap();
        prune_journals(dir.path(), 2);
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(
            left,
            [
                "other.jsonl",
                "slurmplan-apply-20261202T000000Z-2.before-x.json",
                "slurmplan-apply-20261202T000000Z-2.jsonl",
                "slurmplan-apply-20261203T000000Z-3.before-x.json",
                "slurmplan-apply-20261203T000000Z-3.jsonl",
            ]
        );
    }
}
