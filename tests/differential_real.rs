//! Differential test of the rules model against REAL slurmdbd (Slurm 22.05 or 24.11, started by
//! `scripts/slurm-testbed up DIR`; `.ci/run` does it). Ignored without a bed (the reason names the command): run it with
//! `-- --ignored` after `. DIR/env`; without `SLURMPLAN_TESTBED` it then fails, and the bed must
//! answer.
//!
//! Per generated case (tests/differential/mod.rs): seed the site with sacctmgr (argv, `-i`,
//! `cluster=`, a timeout), read it back live, plan the desired file with the library, then run
//! the plan ONE STEP AT A TIME. After every write the real state is read again and must equal
//! the state the model (`rules`) predicted for that step, slurmdbd must have accepted
//! the command, the command must have changed something, and no rule violation may appear
//! that was not there before (DefaultQOS outside the list, users with associations and no or
//! a dangling DefaultAccount). Finally a second plan must be empty.
//!
//! The states are compared whole and exactly (`State` equality on what the reads parse to; the
//! parser is the only normalisation). A failing case is shrunk (elements removed while it
//! still fails the same way) and saved under tests/data/differential/ as a fixture that
//! tests/differential_fixtures.rs replays offline. Every case deletes what it created.
//!
//! Every seeding write must succeed (a case is a state real slurmdbd accepted, write by write);
//! one that does not fails the case as `Seed`, a generator bug. The run goes on after a failing
//! case (each case has its own name prefix) and reports every failure at the end, each with the
//! command that repeats it on a fresh bed.
//!
//! Knobs: SLURMPLAN_DIFF_CASES (default 10), SLURMPLAN_DIFF_SEED (first seed; default from the
//! clock, printed), SLURMPLAN_DIFF_SHRINK (re-runs a shrink may take, default 40),
//! SLURMPLAN_DIFF_SAVE (where fixtures go; default tests/data/differential),
//! SLURMPLAN_DIFF_REST=required|off (every read also through the bed's slurmrestd, compared
//! with sacctmgr's: required, or not at all; by default when the bed has one),
//! SLURMPLAN_DIFF_WRITE=rest (the plans' steps go through the bed's slurmrestd, `rest::write`,
//! instead of sacctmgr; a case whose plan holds a step slurmrestd cannot write is said, counted
//! and skipped, and at most half may be).
//!
//! Must not take the model's word for anything: every comparison is against what real
//! slurmdbd reads back; the model is what is under test.

mod common;
mod differential;

use std::path::{Path, PathBuf};
use std::time::Instant;

use differential::bed::{Bed, bed, cleanup, output_text, seeded};
use differential::{Case, RecordedStep, after_dir, gen_case, new_violations, state_diff, violations};
use slurmplan::apply::outcome::{Outcome, classify};
use slurmplan::plan::make_plan;
use slurmplan::rules::RuleModel;
use slurmplan::sacctmgr::command::Command;
use slurmplan::sacctmgr::parse::RawReads;
use slurmplan::sacctmgr::snapshot::{self, Manifest};
use slurmplan::sacctmgr::transport::Transport;

/// The shell command that repeats one seed on a fresh bed of this version.
fn repeat_command(bed: &Bed, seed: u64) -> String {
    let dir = std::env::var("SLURMPLAN_TESTBED").unwrap_or_else(|_| "DIR".into());
    let version = if bed.v2205() { "22.05" } else { "24.11" };
    format!(
        "scripts/slurm-testbed up {dir} --version {version} --quickack; . {dir}/env; \
         SLURMPLAN_DIFF_CASES=1 SLURMPLAN_DIFF_SEED={seed} cargo test --test differential_real -- --nocapture"
    )
}

fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{name}=`{v}` is not a number")),
        Err(_) => default,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A seeding write that must succeed did not (the generator made an impossible site).
    Seed,
    /// The real state does not parse.
    Unreadable,
    /// The desired file does not load or resolve.
    Desired,
    /// The planner found no plan.
    Plan,
    /// Real slurmdbd refused a step (or it changed nothing, by its words).
    Refused,
    /// The model refused a step the planner emitted.
    ModelRefused,
    /// The real state after a step is not the one the model predicted.
    Mismatch,
    /// A step introduced a rule violation.
    Invariant,
    /// A step changed nothing in the real state.
    NoChange,
    /// A second plan is not empty.
    NotConverged,
    /// What the case created could not all be deleted again.
    Cleanup,
}

struct Record {
    before: RawReads,
    desired: String,
    steps: Vec<RecordedStep>,
    afters: Vec<RawReads>,
}

struct Failure {
    kind: Kind,
    message: String,
    record: Option<Box<Record>>,
}

fn fail(kind: Kind, message: String, record: Option<Record>) -> Failure {
    Failure { kind, message, record: record.map(Box::new) }
}

/// Seed, plan, apply step by step with a check after every write. Returns the number of
/// steps applied. The caller cleans up.
fn run_case(bed: &Bed, case: &Case) -> Result<usize, Failure> {
    cleanup(bed, &case.prefix).map_err(|e| fail(Kind::Seed, format!("clean-up before seeding: {e}"), None))?;
    // Every seeding write must succeed: the case is then a state real slurmdbd accepted. A
    // write the generator marks `may_refuse` is said and counted when refused, never dropped
    // in silence.
    for w in case.seed_argv() {
        let o = bed.run(&w.argv);
        if !seeded(&o) && w.may_refuse {
            REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            eprintln!(
                "differential: seed {}: slurmdbd refused the write `sacctmgr -i {}` (may be refused; the case goes on without it): {}",
                case.seed,
                w.argv.join(" "),
                output_text(&o).trim()
            );
            continue;
        }
        if !seeded(&o) {
            return Err(fail(
                Kind::Seed,
                format!("seeding `sacctmgr -i {}`: {}", w.argv.join(" "), output_text(&o)),
                None,
            ));
        }
    }
    let (before_raw, before) = bed.read().map_err(|e| fail(Kind::Unreadable, e, None))?;
    let yaml = case.desired_yaml();
    let mut record = Record { before: before_raw, desired: yaml.clone(), steps: Vec::new(), afters: Vec::new() };
    let path = Path::new("desired.yaml");
    let desired = match slurmplan::desired::load_str(path, &yaml) {
        Ok(d) => d,
        Err(d) => return Err(fail(Kind::Desired, format!("desired file: {d:?}\n{yaml}"), Some(record))),
    };
    let resolved = match slurmplan::desired::resolve::resolve(&desired, &before) {
        Ok(r) => r,
        Err(d) => return Err(fail(Kind::Desired, format!("resolve: {d:?}"), Some(record))),
    };
    let plan = match make_plan(&before, &resolved.state, "differential") {
        Ok(p) => p,
        Err(e) => return Err(fail(Kind::Plan, format!("plan: {e}"), Some(record))),
    };
    let was = violations(&before);
    let through_rest = bed.rest.as_ref().filter(|_| writes_through_rest());
    if through_rest.is_some() {
        // Every step must be one slurmrestd can write; a case with one it cannot is said,
        // counted and skipped before anything is sent (docs/operations.md lists what).
        let mut walk = RuleModel::new(before.clone());
        for step in &plan.steps {
            if let Err(u) = slurmplan::rest::write::calls(&step.command, &walk.state) {
                eprintln!(
                    "differential: seed {}: step {} `{}` cannot go through slurmrestd ({u}); the case is skipped",
                    case.seed,
                    step.number,
                    step.argv.join(" ")
                );
                NOT_WRITABLE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Ok(0);
            }
            if walk.apply(&step.command).is_err() {
                break;
            }
        }
    }
    let mut sim = RuleModel::new(before.clone());
    let mut prev = before;
    for step in &plan.steps {
        if let Command::Load { accounts, users, .. } = &step.command {
            eprintln!("differential:   load step: {} accounts, {} users", accounts.len(), users.len());
        }
        let (outcome, said) = match through_rest {
            Some(rest) => write_step(rest, &step.command, &sim.state),
            None => {
                let o = match step.command.stdin() {
                    Some(input) => bed.runner.run(&step.argv[1..], Some(input.as_bytes())).expect("run sacctmgr"),
                    None => bed.run(&step.argv[1..].iter().filter(|a| *a != "-i").cloned().collect::<Vec<_>>()),
                };
                (classify(&step.command, &o), output_text(&o))
            }
        };
        let model = sim.apply(&step.command);
        let (raw, after) = match bed.read() {
            Ok(x) => x,
            Err(e) => {
                return Err(fail(
                    Kind::Unreadable,
                    format!("after step {} `{}`: {e}", step.number, step.argv.join(" ")),
                    Some(record),
                ));
            }
        };
        record.steps.push(RecordedStep {
            command: step.command.clone(),
            argv: step.argv.clone(),
            accepted: outcome == Outcome::Ok,
            output: said.clone(),
        });
        record.afters.push(raw);
        let at = format!("step {}/{} `{}`", step.number, plan.steps.len(), step.argv.join(" "));
        if let Outcome::Failed { reason, .. } = outcome {
            let m = match &model {
                Ok(()) => "the model accepts it".to_string(),
                Err(e) => format!("the model refuses it too: {e}"),
            };
            return Err(fail(Kind::Refused, format!("{at}: slurmdbd: {reason}; {m}\n{said}"), Some(record)));
        }
        if let Err(e) = model {
            return Err(fail(Kind::ModelRefused, format!("{at}: the model refuses it: {e}"), Some(record)));
        }
        if after != sim.state {
            return Err(fail(
                Kind::Mismatch,
                format!("{at}: real state differs from the model's:\n{}", state_diff(&after, &sim.state)),
                Some(record),
            ));
        }
        let broke = new_violations(&was, &after);
        if !broke.is_empty() {
            return Err(fail(Kind::Invariant, format!("{at}: new violations {broke:?}"), Some(record)));
        }
        if after == prev {
            return Err(fail(Kind::NoChange, format!("{at}: the real state did not change"), Some(record)));
        }
        prev = after;
    }
    let again = slurmplan::desired::resolve::resolve(&desired, &prev)
        .map_err(|d| fail(Kind::NotConverged, format!("resolve after apply: {d:?}"), None))?;
    let second = make_plan(&prev, &again.state, "differential")
        .map_err(|e| fail(Kind::NotConverged, format!("second plan: {e}"), None))?;
    if !second.is_empty() {
        let argv: Vec<String> = second.steps.iter().map(|s| s.argv.join(" ")).collect();
        let changes: Vec<&str> = second.changes.iter().map(|c| c.address.as_str()).collect();
        return Err(fail(Kind::NotConverged, format!("second plan not empty: {changes:?} {argv:#?}"), Some(record)));
    }
    Ok(plan.steps.len())
}

/// SLURMPLAN_DIFF_WRITE=rest: the plan's steps go through the bed's slurmrestd
/// (`rest::write`) instead of sacctmgr; reads and checks are the same.
fn writes_through_rest() -> bool {
    match std::env::var("SLURMPLAN_DIFF_WRITE").as_deref() {
        Ok("rest") => true,
        Ok("sacctmgr") | Err(_) => false,
        Ok(other) => panic!("SLURMPLAN_DIFF_WRITE is `{other}`: say `rest` or `sacctmgr`"),
    }
}

/// One step through slurmrestd: its calls in order, stopping at the first that fails.
fn write_step(
    rest: &slurmplan::rest::transport::RestTransport,
    cmd: &Command,
    before: &slurmplan::model::State,
) -> (Outcome, String) {
    let calls = match slurmplan::rest::write::calls(cmd, before) {
        Ok(c) => c,
        Err(u) => return (Outcome::Failed { reason: u.0, hint: String::new() }, String::new()),
    };
    let mut said = Vec::new();
    for call in &calls {
        match rest.write(call) {
            Ok(s) => said.push(s),
            Err(f) => {
                said.push(f.message.clone());
                return (Outcome::Failed { reason: f.message, hint: f.hint }, said.join("\n"));
            }
        }
    }
    (Outcome::Ok, said.join("\n"))
}

/// Cases whose plan has a step slurmrestd cannot write (SLURMPLAN_DIFF_WRITE=rest).
static NOT_WRITABLE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Seeding writes marked `may_refuse` that slurmdbd refused, in this run (shrink runs included).
/// The tests of this file compare whole reads of the bed after every write: they take turns
/// (`cargo test` runs tests of one binary at once).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

static REFUSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Run, then clean up whatever the outcome. A clean-up that fails is a failure of the case
/// (the next case has another prefix, so the run goes on).
fn run_clean(bed: &Bed, case: &Case) -> Result<usize, Failure> {
    let r = run_case(bed, case);
    match (cleanup(bed, &case.prefix), r) {
        (Ok(()), r) => r,
        (Err(e), Ok(_)) => Err(fail(Kind::Cleanup, format!("clean-up after the case: {e}"), None)),
        (Err(e), Err(mut f)) => {
            f.message.push_str(&format!("\n(and the clean-up after it: {e})"));
            Err(f)
        }
    }
}

/// Remove elements while the case still fails the same way (at most `budget` re-runs).
fn shrink(bed: &Bed, case: Case, failure: Failure, budget: u64) -> (Case, Failure, u64) {
    let (mut best, mut fail) = (case, failure);
    let mut runs = 0;
    'outer: loop {
        for cand in best.smaller() {
            if runs >= budget {
                break 'outer;
            }
            runs += 1;
            if let Err(f) = run_clean(bed, &cand)
                && f.kind == fail.kind
            {
                best = cand;
                fail = f;
                continue 'outer;
            }
        }
        break;
    }
    (best, fail, runs)
}

fn save_fixture(dir: &Path, bed: &Bed, about: &str, f: &Failure) -> std::io::Result<()> {
    let Some(rec) = &f.record else { return Ok(()) };
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let clusters: Vec<String> = differential::CLUSTERS.iter().map(|s| s.to_string()).collect();
    let created = slurmplan::apply::rfc3339(std::time::SystemTime::now());
    let manifest = Manifest::new(Some(bed.version.clone()), created, clusters);
    snapshot::write_dir(&dir.join("before"), &rec.before.to_files(), &manifest)?;
    for (i, raw) in rec.afters.iter().enumerate() {
        snapshot::write_dir(&after_dir(dir, i), &raw.to_files(), &manifest)?;
    }
    std::fs::write(dir.join("desired.yaml"), &rec.desired)?;
    let mut json = serde_json::to_string_pretty(&rec.steps).map_err(std::io::Error::other)?;
    json.push('\n');
    std::fs::write(dir.join("steps.json"), json)?;
    let text = format!("{:?} on Slurm {}\n{}\n\n{about}", f.kind, bed.version, f.message);
    std::fs::write(dir.join("case.txt"), text)
}

#[test]
#[ignore = "needs a real slurmdbd: scripts/slurm-testbed up DIR; . DIR/env; cargo test --test differential_real -- --ignored"]
fn model_matches_real_slurmdbd_on_generated_sites() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bed = bed();
    assert!(
        bed.rest.is_some() || !writes_through_rest(),
        "SLURMPLAN_DIFF_WRITE=rest needs a bed with slurmrestd (`up DIR --version 24.11 --rest`)"
    );
    let cases = env_num("SLURMPLAN_DIFF_CASES", 10);
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let first = env_num("SLURMPLAN_DIFF_SEED", clock % 1_000_000 * 1000);
    let budget = env_num("SLURMPLAN_DIFF_SHRINK", 40);
    let save = std::env::var("SLURMPLAN_DIFF_SAVE").map(PathBuf::from).unwrap_or_else(|_| differential::fixtures_dir());
    let ver = if bed.v2205() { "2205" } else { "2411" };
    eprintln!(
        "differential: Slurm {}, {cases} cases from seed {first} (SLURMPLAN_DIFF_SEED={first} repeats them)",
        bed.version
    );
    let t0 = Instant::now();
    let (mut steps, mut failures) = (0usize, Vec::new());
    for seed in first..first + cases {
        let case = gen_case(seed, bed.v2205());
        let t = Instant::now();
        match run_clean(&bed, &case) {
            Ok(n) => {
                steps += n;
                eprintln!("differential: seed {seed} ok: {n} steps, {:.1} s", t.elapsed().as_secs_f64());
            }
            Err(f) => {
                eprintln!("differential: seed {seed} FAILED ({:?}): {}", f.kind, f.message);
                eprintln!("differential: seed {seed}: repeat it with\n  {}", repeat_command(&bed, seed));
                let kind = f.kind;
                let (small, f, runs) = shrink(&bed, case, f, budget);
                let dir = save.join(format!("{ver}-{seed}-{}", format!("{kind:?}").to_lowercase()));
                save_fixture(&dir, &bed, &small.describe(), &f).expect("write the fixture");
                eprintln!(
                    "differential: seed {seed} shrunk in {runs} runs, saved to {}:\n{}\n{}",
                    dir.display(),
                    f.message,
                    small.describe()
                );
                failures.push(format!(
                    "seed {seed}: {kind:?}: {} (repeat: {})",
                    dir.display(),
                    repeat_command(&bed, seed)
                ));
            }
        }
    }
    eprintln!(
        "differential: Slurm {}: {cases} cases (seeds {first}-{}), {steps} steps checked, {} failed, {:.0} s; {} seeding writes refused that may be",
        bed.version,
        first + cases - 1,
        failures.len(),
        t0.elapsed().as_secs_f64(),
        REFUSED.load(std::sync::atomic::Ordering::Relaxed)
    );
    if bed.rest.is_some() && writes_through_rest() {
        let skipped = NOT_WRITABLE.load(std::sync::atomic::Ordering::Relaxed) as u64;
        eprintln!(
            "differential: plans written through slurmrestd; {skipped} of {cases} cases skipped (a step slurmrestd cannot write)"
        );
        // a run that skips most cases checks little: the generator or rest::write changed
        assert!(skipped * 2 <= cases, "{skipped} of {cases} cases could not be written through slurmrestd");
    }
    if let Some(rest) = bed.rest.as_ref().filter(|_| bed.compare_rest) {
        let n = bed.rest_compared.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "differential: {n} states read through slurmrestd at {} ({}) as well, each equal to sacctmgr's",
            rest.url(),
            rest.data_parser().unwrap_or("?")
        );
    }
    assert!(failures.is_empty(), "{} of {cases} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// QoS delta writes (`qos=+q`, `qos=-q`), which plans make only to restore stored deltas (an
/// undo), on every kind of stored list: real slurmdbd edits an explicit list, stacks on
/// inheritance and deltas, and leaves an emptied list inheriting with the removal as a delta
/// (`QosList::written`); deleting a QoS strips it from deltas (`QosList::delta_stripped`). A
/// fixed script on one account, the sub-account under it and a user row; after every write the real read must equal the model's state. With
/// SLURMPLAN_DIFF_SAVE set, the run is also saved there as a fixture (`VER-qos-deltas`) that
/// tests/differential_fixtures.rs replays offline.
#[test]
#[ignore = "needs a real slurmdbd: scripts/slurm-testbed up DIR; . DIR/env; cargo test --test differential_real -- --ignored"]
fn qos_delta_writes_match_real_slurmdbd() {
    use slurmplan::model::{Name, NameKind, QosList};
    use slurmplan::sacctmgr::command::AssocSet;
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bed = bed();
    let prefix = "zdqx";
    let name = |s: &str, k: NameKind| Name::from_sacctmgr(&format!("{prefix}{s}"), k).unwrap();
    let q = |s: &str| name(s, NameKind::Qos);
    let cluster = Name::from_sacctmgr("testcl", NameKind::Cluster).unwrap();
    let (acct, user) = (name("a", NameKind::Account), name("u", NameKind::User));
    cleanup(&bed, prefix).expect("clean up before");
    let seed: Vec<Vec<String>> = [
        format!("add qos {prefix}q0,{prefix}q1,{prefix}q2"),
        format!("add account {prefix}a cluster=testcl parent=root"),
        format!("add account {prefix}b cluster=testcl parent={prefix}a"),
        format!("add user {prefix}u account={prefix}a cluster=testcl"),
    ]
    .iter()
    .map(|l| l.split(' ').map(String::from).collect())
    .collect();
    for w in &seed {
        let o = bed.run(w);
        assert!(seeded(&o), "seeding `sacctmgr -i {}`: {}", w.join(" "), output_text(&o));
    }
    let set = |v: &[&str]| QosList::Set(v.iter().map(|s| q(s)).collect());
    let delta = |a: &[&str], r: &[&str]| QosList::Delta {
        add: a.iter().map(|s| q(s)).collect(),
        remove: r.iter().map(|s| q(s)).collect(),
    };
    let on_account = |l: QosList| Command::ModifyAccount {
        cluster: cluster.clone(),
        names: vec![acct.clone()],
        set: AssocSet { qos: Some(l), ..Default::default() },
    };
    let on_user = |l: QosList| Command::ModifyUser {
        cluster: cluster.clone(),
        users: vec![user.clone()],
        account: acct.clone(),
        partition: None,
        set: AssocSet { qos: Some(l), ..Default::default() },
    };
    let script = vec![
        on_account(delta(&["q1"], &[])),     // inherit -> +q1
        on_account(set(&["q0"])),            // deltas -> explicit
        on_account(delta(&["q1"], &[])),     // explicit: q0,q1 (not a delta)
        on_account(delta(&[], &["q0"])),     // explicit: q1
        on_account(delta(&[], &["q1"])),     // emptied: inherits, -q1
        on_account(delta(&["q2"], &[])),     // stacks: +q2,-q1
        on_account(delta(&["q1"], &[])),     // replaces -q1: +q1,+q2
        on_account(delta(&["q0"], &["q2"])), // +q0,+q1,-q2
        on_user(set(&["q0"])),
        on_user(delta(&["q2"], &[])), // explicit: q0,q2
        on_user(QosList::Inherit),
        on_user(delta(&[], &["q1"])), // inherit -> -q1
        // deleting a QoS strips it from the deltas that name it: the account's `-q2` goes
        Command::DeleteQos { names: vec![q("q2")] },
        on_account(QosList::Inherit),
    ];
    let (before_raw, before) = bed.read().expect("read before");
    let mut record = Record {
        before: before_raw,
        desired: format!(
            "version: 1\nmanaged:\n  prefixes: [\"{prefix}\"]\n  qos_prefixes: [\"{prefix}\"]\nqos:\n  \"{prefix}q0\": {{}}\n  \"{prefix}q1\": {{}}\n  \"{prefix}q2\": {{}}\nclusters:\n  testcl:\n    accounts:\n      \"{prefix}a\":\n        parent: root\n        qos: [\"{prefix}q0\", \"{prefix}q1\"]\n        users: [\"{prefix}u\"]\n      \"{prefix}b\":\n        parent: \"{prefix}a\"\n"
        ),
        steps: Vec::new(),
        afters: Vec::new(),
    };
    let mut sim = RuleModel::new(before);
    let mut errors = Vec::new();
    for cmd in &script {
        let argv = cmd.argv();
        let o = bed.run(&argv[2..]);
        let accepted = classify(cmd, &o) == Outcome::Ok;
        let model = sim.apply(cmd);
        let (raw, after) = bed.read().expect("read after a write");
        record.steps.push(RecordedStep { command: cmd.clone(), argv: argv.clone(), accepted, output: output_text(&o) });
        record.afters.push(raw);
        if !accepted || model.is_err() {
            errors.push(format!("`{}`: slurmdbd {accepted}, model {model:?}: {}", argv.join(" "), output_text(&o)));
            break;
        }
        if after != sim.state {
            errors.push(format!(
                "`{}`: real state differs from the model's:\n{}",
                argv.join(" "),
                state_diff(&after, &sim.state)
            ));
            break;
        }
    }
    if let Ok(save) = std::env::var("SLURMPLAN_DIFF_SAVE") {
        let ver = if bed.v2205() { "2205" } else { "2411" };
        let dir = Path::new(&save).join(format!("{ver}-qos-deltas"));
        let about = format!(
            "qos_delta_writes_match_real_slurmdbd (tests/differential_real.rs): seeded with\n{}\nthen the steps in steps.json",
            seed.iter().map(|w| format!("  sacctmgr -i {}", w.join(" "))).collect::<Vec<_>>().join("\n")
        );
        let kind = if errors.is_empty() { Kind::Plan } else { Kind::Mismatch };
        let message = if errors.is_empty() {
            "real slurmdbd and the model agreed on every step; kept so that the model stays so".to_string()
        } else {
            errors.join("\n")
        };
        let f = Failure { kind, message, record: Some(Box::new(record)) };
        save_fixture(&dir, &bed, &about, &f).expect("write the fixture");
    }
    cleanup(&bed, prefix).expect("clean up after");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
