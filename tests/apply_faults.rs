//! `slurmplan apply` under faults, against the fake sacctmgr (`slurmplan-fake-sacctmgr`, a test
//! tool) seeded with `examples/site-a/state`. No real Slurm needed. Must not claim anything
//! about real Slurm: these tests are about how apply reacts to faults the fake injects.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::cli::{FAKE, Run, copy_example_state, run, sh_script, slurmplan_cmd};
use common::fake;

use slurmplan::rules::RuleModel;
use slurmplan::sacctmgr::command::Command as SCommand;
use slurmplan::sacctmgr::snapshot;

/// The fake sacctmgr's argv parser (a test tool, not part of the library).
#[path = "../crates/dev/src/bin/slurmplan-fake-sacctmgr/argv.rs"]
mod fake_argv;

const DESIRED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/site-a/desired.yaml");
const SEED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/site-a/state");

struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        copy_example_state(&dir.path().join("state"));
        std::fs::create_dir(dir.path().join("locks")).unwrap();
        Site { dir }
    }
    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }
    fn locks(&self) -> PathBuf {
        self.dir.path().join("locks")
    }
    fn lock_dir(&self) -> slurmplan::apply::lock::LockDir {
        slurmplan::apply::lock::LockDir::open(Some(&self.locks()), false).unwrap().unwrap()
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn slurmplan(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = slurmplan_cmd(args);
        c.args(["--color", "never"])
            .env("SLURMPLAN_SACCTMGR", &*FAKE)
            .env("SLURMPLAN_LOCK_DIR", self.locks())
            .env("FAKE_SACCTMGR_DIR", self.state());
        for (k, v) in env {
            c.env(k, v);
        }
        run(&mut c)
    }
    /// The fake's reads since the last call (`common::fake::reads_since`).
    fn reads_since(&self) -> (usize, usize, usize) {
        fake::reads_since(&self.state())
    }
    /// Write calls the fake received.
    fn calls(&self) -> u64 {
        std::fs::read_to_string(self.state().join("calls")).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }
    /// Save a plan file; returns its path and its steps' argv.
    fn plan_file(&self) -> (PathBuf, Vec<Vec<String>>) {
        let p = self.path("plan.json");
        let r = self.slurmplan(&["plan", "-d", DESIRED, "-o", p.to_str().unwrap()], &[]);
        assert_eq!(r.code, 0, "{r:?}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let steps = v["plan"]["steps"].as_array().or_else(|| v["steps"].as_array()).expect("steps").clone();
        let argv = steps
            .iter()
            .map(|s| s["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect())
            .collect();
        (p, argv)
    }
    fn apply_with(&self, env: &[(&str, &str)], extra: &[&str]) -> Run {
        let j = self.path("journal.jsonl");
        let mut args = vec!["apply", "-d", DESIRED, "--auto-approve", "--journal", j.to_str().unwrap()];
        args.extend_from_slice(extra);
        self.slurmplan(&args, env)
    }
    fn journal(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.path("journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    /// apply again (no faults) converges and a fresh plan is empty.
    fn converges(&self) {
        let r = self.apply_with(&[], &[]);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stderr.contains("Verified"), "{r:?}");
        let p = self.slurmplan(&["plan", "-d", DESIRED, "--detailed-exitcode"], &[]);
        assert_eq!(p.code, 0, "{p:?}");
    }
}

fn step_count(site: &Site) -> usize {
    site.plan_file().1.len()
}

#[test]
fn stale_plan_is_refused_and_nothing_runs() {
    let site = Site::new();
    let (p, _) = site.plan_file();
    let o = Command::new(&*FAKE)
        .args(["-i", "add", "user", "zed", "account=hpc_a_robo", "cluster=rocket"])
        .env("FAKE_SACCTMGR_DIR", site.state())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let r = site.slurmplan(&["apply", p.to_str().unwrap()], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("stale"), "{}", r.stderr);
    assert_eq!(site.calls(), 1, "apply ran a step of a stale plan");
}

#[test]
fn edited_plan_is_refused() {
    let site = Site::new();
    let (p, argv) = site.plan_file();
    let text = std::fs::read_to_string(&p).unwrap();
    let target = argv.iter().flatten().find(|w| w.starts_with("GrpSubmitJobs=")).expect("a GrpSubmitJobs step");
    let edited = text.replace(&format!("\"{target}\""), "\"GrpSubmitJobs=99\"");
    assert_ne!(edited, text);
    std::fs::write(&p, edited).unwrap();
    let r = site.slurmplan(&["apply", p.to_str().unwrap()], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("checksum"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
}

#[test]
fn unknown_format_version_is_refused() {
    let site = Site::new();
    let (p, _) = site.plan_file();
    let text = std::fs::read_to_string(&p).unwrap();
    let edited = text.replacen("\"format_version\": 2", "\"format_version\": 99", 1);
    assert_ne!(edited, text);
    std::fs::write(&p, edited).unwrap();
    let r = site.slurmplan(&["apply", p.to_str().unwrap()], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("format_version 99"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
}

#[test]
fn lock_contention_names_the_holder() {
    let site = Site::new();
    let scope = slurmplan::apply::lock::Scope { global: false, clusters: vec!["rocket".to_string()] };
    let _held = slurmplan::apply::lock::acquire(&site.lock_dir(), &scope, std::time::Duration::from_secs(1)).unwrap();
    let r = site.apply_with(&[], &["--lock-timeout", "1"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&format!("PID {}", std::process::id())), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
}

#[test]
fn failure_at_step_k_of_m_then_resume() {
    let site = Site::new();
    let (_, argv) = site.plan_file();
    let m = argv.len();
    assert!(m >= 4, "{m}");
    let k = 3;
    let r = site.apply_with(&[("FAKE_SACCTMGR_FAIL_AT", "3")], &[]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains(&format!("applied {} of {m}; failed at step {k}", k - 1)), "{}", r.stderr);
    let mut all = site.journal();
    // first the `apply` line naming the before file (for `undo`), then each step: `started`
    // before it runs, `finished` after
    assert_eq!(all.remove(0)["event"], "apply");
    assert!(
        all.chunks(2)
            .all(|p| p[0]["event"] == "started" && p[1]["event"] == "finished" && p[0]["step"] == p[1]["step"]),
        "{all:#?}"
    );
    let j: Vec<_> = all.into_iter().filter(|e| e["event"] == "finished").collect();
    assert_eq!(j.len(), k, "{j:#?}");
    assert!(j[..k - 1].iter().all(|e| e["result"] == "ok"), "{j:#?}");
    assert_eq!(j[k - 1]["result"], "failed");
    // the fake holds exactly the first K-1 steps
    let mut sim = RuleModel::new(snapshot::load(Path::new(SEED)).unwrap());
    for a in &argv[..k - 1] {
        sim.apply(&fake_argv::from_argv(a).unwrap()).unwrap();
    }
    assert_eq!(snapshot::load(&site.state()).unwrap(), sim.state);
    site.converges();
}

#[test]
fn defaultqos_rejection_with_exit_0_is_caught() {
    let site = Site::new();
    let (_, argv) = site.plan_file();
    let k = argv.iter().position(|a| a.iter().any(|w| w.starts_with("defaultqos="))).expect("a DefaultQOS step") + 1;
    let r = site.apply_with(&[("FAKE_SACCTMGR_FAIL_AT", &k.to_string())], &[]);
    assert_eq!(r.code, if k == 1 { 1 } else { 3 }, "{r:?}");
    assert!(r.stderr.contains(&format!("failed at step {k}")), "{}", r.stderr);
    assert!(r.stderr.contains("DefaultQOS"), "{}", r.stderr);
    site.converges();
}

#[test]
fn a_noop_step_is_a_failure() {
    let site = Site::new();
    let r = site.apply_with(&[("FAKE_SACCTMGR_NOOP_AT", "2")], &[]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("failed at step 2"), "{}", r.stderr);
    assert!(r.stderr.contains("changed nothing"), "{}", r.stderr);
}

#[test]
fn a_lying_step_is_caught_by_verification() {
    let site = Site::new();
    let r = site.apply_with(&[("FAKE_SACCTMGR_LIE_AT", "2")], &[]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("did not converge"), "{}", r.stderr);
    site.converges();
}

#[test]
fn a_hanging_step_times_out() {
    let site = Site::new();
    let r = site.apply_with(&[("FAKE_SACCTMGR_HANG_AT", "2")], &["--timeout", "1"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("failed at step 2"), "{}", r.stderr);
    assert!(r.stderr.contains("did not finish before the timeout"), "{}", r.stderr);
    let site = Site::new();
    let r = site.apply_with(&[("FAKE_SACCTMGR_HANG_AT", "1")], &["--timeout", "1"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("did not finish before the timeout"), "{}", r.stderr);
}

#[test]
fn a_killed_sacctmgr_is_reported() {
    let site = Site::new();
    let r = site.apply_with(&[("FAKE_SACCTMGR_KILL_AT", "2")], &[]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("killed by a signal"), "{}", r.stderr);
}

#[test]
fn missing_sacctmgr_is_a_clear_error() {
    let site = Site::new();
    let r = site.apply_with(&[], &["--sacctmgr", "/nonexistent"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("/nonexistent") && r.stderr.contains("not found"), "{}", r.stderr);
}

#[test]
fn slurmdbd_down_is_an_error() {
    let site = Site::new();
    let r = site.apply_with(&[("FAKE_SACCTMGR_DOWN", "1")], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("cannot read the current state"), "{}", r.stderr);
    assert!(r.stderr.contains("Connection refused"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
}

/// Split one shell line into words with `sh` itself.
fn sh_words(line: &str) -> Vec<String> {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("SACCTMGR=sacctmgr; set -- {line}; for w in \"$@\"; do printf '%s\\0' \"$w\"; done"))
        .output()
        .unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap().split('\0').filter(|w| !w.is_empty()).map(str::to_string).collect()
}

#[test]
fn script_format_equals_what_apply_runs() {
    let site = Site::new();
    let s = site.slurmplan(&["plan", "-d", DESIRED, "--format", "script"], &[]);
    assert_eq!(s.code, 0, "{s:?}");
    let script: Vec<Vec<String>> =
        s.stdout.lines().filter(|l| l.starts_with("\"${SACCTMGR")).map(|l| sh_words(l.trim())).collect();
    assert!(!script.is_empty());
    let r = site.apply_with(&[], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let ran: Vec<Vec<String>> = std::fs::read_to_string(site.state().join("argv.log"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Vec<String>>(l).unwrap())
        .filter(|a| a.get(1).map(String::as_str) == Some("-i"))
        .map(|mut a| {
            a[0] = "sacctmgr".into();
            a
        })
        .collect();
    assert_eq!(script, ran);
}

#[test]
fn apply_d_without_a_tty_needs_auto_approve() {
    let site = Site::new();
    let r = site.slurmplan(&["apply", "-d", DESIRED], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("not a terminal"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
}

#[test]
fn nothing_to_do_exits_0() {
    let site = Site::new();
    assert!(step_count(&site) > 0);
    site.converges();
    let before = site.calls();
    let r = site.apply_with(&[], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("No changes"), "{}", r.stderr);
    assert_eq!(site.calls(), before);
}

/// Reading the state live is a fixed set of sacctmgr reads, whatever the size of the site: 4,
/// and 2 per cluster (6 for one cluster), and for `plan` first the clusters alone (to read
/// only the planned ones when there are others): the same count on site-a and on a generated
/// site 20 times larger.
#[test]
fn live_read_is_a_fixed_number_of_calls() {
    let reads = |site: &Site, desired: &str| -> usize {
        let log = site.state().join("argv.log");
        let _ = std::fs::remove_file(&log);
        let r = site.slurmplan(&["plan", "-d", desired, "--format", "json", "--allow-mass-delete"], &[]);
        assert!(r.code == 0, "{r:?}");
        std::fs::read_to_string(&log).unwrap_or_default().lines().count()
    };
    let site = Site::new();
    assert_eq!(reads(&site, DESIRED), 7);
    // a bigger state in the same fake
    let big = site.path("big");
    let g = std::process::Command::new(common::cli::dev_bin("slurmplan-gen"))
        .args(["--out", big.to_str().unwrap(), "--accounts", "300", "--users", "400", "--assocs", "3000"])
        .output()
        .unwrap();
    assert!(g.status.success());
    for f in std::fs::read_dir(big.join("state")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), site.state().join(f.file_name())).unwrap();
    }
    assert_eq!(reads(&site, big.join("desired.yaml").to_str().unwrap()), 7);
}

/// `plan` of site-a's `rocket` beside a cluster `other`: a plan that asks nothing of `other`
/// (here: no change, and a limit change) is made from `rocket`'s reads alone; one that does
/// (site-a's first plan changes an account's record, and names the first cluster holding the
/// account, which could be `other`; later, a managed QoS the file drops) says so and reads
/// every cluster. Each plan is, byte for byte, the plan of the whole read
/// (`SLURMPLAN_READ_ALL_CLUSTERS=1`).
#[test]
fn plan_reads_only_the_planned_clusters_unless_it_asks_of_others() {
    let site = Site::new();
    fake::add_other_cluster(&site.state());
    let plan = |desired: &str, whole: bool| -> (Run, usize) {
        let log = site.state().join("argv.log");
        let _ = std::fs::remove_file(&log);
        let env: &[(&str, &str)] = if whole { &[("SLURMPLAN_READ_ALL_CLUSTERS", "1")] } else { &[] };
        let r = site.slurmplan(&["plan", "-d", desired, "--format", "json"], env);
        assert_eq!(r.code, 0, "{r:?}");
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        (r, log.lines().filter(|l| l.contains("\"cluster=other\"]")).count())
    };
    // the first plan changes a record (and creates `erin`): every cluster is read
    let (scoped, other_reads) = plan(DESIRED, false);
    let (whole, whole_other_reads) = plan(DESIRED, true);
    assert!(
        scoped.stderr.contains("reading every cluster: the plan depends on the first cluster holding account"),
        "{}",
        scoped.stderr
    );
    assert_eq!((other_reads, whole_other_reads), (2, 2));
    assert_eq!(scoped.stdout, whole.stdout);
    assert_eq!(site.apply_with(&[], &[]).code, 0);
    // no change, then a limit change: `rocket` alone
    let limit = site.path("limit.yaml");
    let text = std::fs::read_to_string(DESIRED).unwrap();
    assert!(text.contains("grp_submit_jobs: 0"));
    std::fs::write(&limit, text.replace("grp_submit_jobs: 0", "grp_submit_jobs: 5")).unwrap();
    for desired in [DESIRED, limit.to_str().unwrap()] {
        let (scoped, other_reads) = plan(desired, false);
        let (whole, whole_other_reads) = plan(desired, true);
        assert!(!scoped.stderr.contains("reading every cluster"), "{}", scoped.stderr);
        assert!(scoped.stderr.contains("the 1 cluster(s) of the desired file"), "{}", scoped.stderr);
        assert_eq!((other_reads, whole_other_reads), (0, 2));
        assert_eq!(scoped.stdout, whole.stdout);
    }
    // `drift` (cron: nothing on stderr) reads `rocket` alone for these two, and reports the same
    let drift = |desired: &str, whole: bool| -> (Run, usize) {
        let log = site.state().join("argv.log");
        let _ = std::fs::remove_file(&log);
        let env: &[(&str, &str)] = if whole { &[("SLURMPLAN_READ_ALL_CLUSTERS", "1")] } else { &[] };
        let r = site.slurmplan(&["drift", "-d", desired, "--format", "json"], env);
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        (r, log.lines().filter(|l| l.contains("\"cluster=other\"]")).count())
    };
    for (desired, code) in [(DESIRED, 0), (limit.to_str().unwrap(), 2)] {
        let (scoped, other_reads) = drift(desired, false);
        let (whole, whole_other_reads) = drift(desired, true);
        assert_eq!((scoped.code, whole.code), (code, code), "{scoped:?}");
        assert_eq!(scoped.stderr, "");
        assert_eq!((other_reads, whole_other_reads), (0, 2));
        assert_eq!(scoped.stdout.is_empty(), code == 0, "{}", scoped.stdout);
        assert_eq!(scoped.stdout, whole.stdout);
    }
    let (limited, _) = plan(limit.to_str().unwrap(), false);
    assert!(limited.stdout.contains("\"GrpSubmitJobs=5\""), "{}", limited.stdout);
    // a managed QoS the file drops: whether `other` uses it decides, so every cluster is read
    let drop_qos = site.path("drop-qos.yaml");
    let managed = "  roots: [hpc_customers]";
    assert!(text.contains(managed) && text.contains("  downscaled: {}\n"));
    let dropped =
        text.replacen(managed, "  qos_prefixes: [down]\n  roots: [hpc_customers]", 1).replace("  downscaled: {}\n", "");
    std::fs::write(&drop_qos, dropped).unwrap();
    let (scoped, other_reads) = plan(drop_qos.to_str().unwrap(), false);
    let (whole, _) = plan(drop_qos.to_str().unwrap(), true);
    assert!(
        scoped
            .stderr
            .contains("reading every cluster: the plan depends on whether QoS `downscaled` is used on another cluster"),
        "{}",
        scoped.stderr
    );
    assert_eq!(other_reads, 2);
    assert_eq!(scoped.stdout, whole.stdout);
    let (scoped, other_reads) = drift(drop_qos.to_str().unwrap(), false);
    let (whole, _) = drift(drop_qos.to_str().unwrap(), true);
    assert_eq!((scoped.code, other_reads), (2, 2), "{scoped:?}");
    assert_eq!(scoped.stdout, whole.stdout);
}

/// An apply reads under the lock as `plan` reads (the desired file's clusters first) and, to
/// verify, only the clusters its steps name. Beside a cluster `other` the desired file does
/// not name: site-a's first apply asks of `other` (a record change names the first cluster
/// holding the account), so `other` is read once (with `rocket`: the scoped read, the whole
/// one, the verification); a later limit change reads `rocket` alone (plan and verification,
/// replayed in the scoped model) and converges.
#[test]
fn an_apply_reads_the_clusters_it_plans_and_verifies_the_ones_it_changed() {
    let site = Site::new();
    fake::add_other_cluster(&site.state());
    let r = site.apply_with(&[], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains("reading the state of 1 cluster(s) live through sacctmgr to verify (6 reads)"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("reading every cluster: the plan depends on the first cluster holding"), "{}", r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    assert_eq!(site.reads_since(), (6, 2, 0));
    assert!(site.calls() > 0);
    let limit = site.path("limit.yaml");
    let text = std::fs::read_to_string(DESIRED).unwrap();
    std::fs::write(&limit, text.replace("grp_submit_jobs: 0", "grp_submit_jobs: 5")).unwrap();
    let before = site.calls();
    let j = site.path("journal2.jsonl");
    let args = ["apply", "-d", limit.to_str().unwrap(), "--auto-approve", "--journal", j.to_str().unwrap()];
    let r = site.slurmplan(&args, &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!r.stderr.contains("reading every cluster"), "{}", r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    assert_eq!(site.reads_since(), (4, 0, 0));
    assert!(site.calls() > before);
    let p = site.slurmplan(&["plan", "-d", limit.to_str().unwrap(), "--detailed-exitcode"], &[]);
    assert_eq!(p.code, 0, "{p:?}");
}

/// `apply PLAN` reads as `apply -d` does: under its lock the clusters its fingerprint covers
/// and its steps name; users its steps ask about, by name; every cluster only when replaying
/// the steps asks of the others. It verifies the clusters it changed.
#[test]
fn a_saved_plan_reads_its_clusters_and_every_cluster_only_when_it_depends_on_them() {
    let site = Site::new();
    fake::add_other_cluster(&site.state());
    let apply_saved = |desired: &str, name: &str, env: &[(&str, &str)]| {
        let p = site.path(name);
        let r = site.slurmplan(&["plan", "-d", desired, "-o", p.to_str().unwrap()], &[]);
        assert_eq!(r.code, 0, "{r:?}");
        site.reads_since();
        let j = site.path(&format!("{name}.jsonl"));
        site.slurmplan(&["apply", p.to_str().unwrap(), "--auto-approve", "--journal", j.to_str().unwrap()], env)
    };
    // site-a's plan (its record change names the cluster chosen when it was planned, which
    // read every cluster; applying it depends on `rocket` alone): `rocket`, and to verify
    let r = apply_saved(DESIRED, "first.plan", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!r.stderr.contains("reading every cluster"), "{}", r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    assert_eq!(site.reads_since(), (4, 0, 0));
    let text = std::fs::read_to_string(DESIRED).unwrap();
    let write = |name: &str, text: &str| {
        let p = site.path(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    // 20 new users onboarded (a `load`, which creates only users known nowhere): are they
    // known on another cluster? read by name, one call
    let robo = "      hpc_a_robo:";
    assert!(text.contains(robo));
    let users: Vec<String> = (0..20).map(|i| format!("n{i:02}")).collect();
    let onboard =
        format!("      hpc_a_new:\n        parent: hpc_p_physics\n        users: [{}]\n{robo}", users.join(", "));
    let text = text.replacen(robo, &onboard, 1);
    let r = apply_saved(&write("onboard.yaml", &text), "onboard.plan", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("load"), "{}", r.stderr);
    assert!(r.stderr.contains("reading the associations of 20 user(s) on every cluster"), "{}", r.stderr);
    assert!(!r.stderr.contains("reading every cluster"), "{}", r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    assert_eq!(site.reads_since(), (4, 0, 1));
    // a managed QoS dropped: whether `other` uses it decides, so every cluster is read
    let managed = "  roots: [hpc_customers]";
    assert!(text.contains(managed) && text.contains("  downscaled: {}\n"));
    let dropped =
        text.replacen(managed, "  qos_prefixes: [down]\n  roots: [hpc_customers]", 1).replace("  downscaled: {}\n", "");
    let r = apply_saved(&write("drop.yaml", &dropped), "drop.plan", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("reading every cluster: the plan depends on whether QoS `downscaled` is used on another cluster"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    assert_eq!(site.reads_since(), (2 + 2, 2, 0));
    // asked to, it reads every cluster under the lock as before
    let limit = write("limit.yaml", &dropped.replace("grp_submit_jobs: 0", "grp_submit_jobs: 5"));
    let before = site.calls();
    let r = apply_saved(&limit, "limit.plan", &[("SLURMPLAN_READ_ALL_CLUSTERS", "1")]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    assert_eq!(site.reads_since(), (4, 2, 0));
    assert!(site.calls() > before);
    let p = site.slurmplan(&["plan", "-d", &limit, "--detailed-exitcode"], &[]);
    assert_eq!(p.code, 0, "{p:?}");
}

/// A saved plan read on its own clusters is refused as stale when something it covers there
/// changed, and not when another cluster did: the scoped read checks the same fingerprint.
#[test]
fn a_saved_plan_read_scoped_is_stale_only_for_its_own_clusters() {
    let site = Site::new();
    fake::add_other_cluster(&site.state());
    assert_eq!(site.apply_with(&[], &[]).code, 0);
    let append = |file: &str, line: &str| {
        let mut t = std::fs::read_to_string(site.state().join(file)).unwrap();
        t.push_str(line);
        fake::rewrite_with_manifest(&site.state(), file, &t);
    };
    let limit = site.path("limit.yaml");
    let text = std::fs::read_to_string(DESIRED).unwrap();
    std::fs::write(&limit, text.replace("grp_submit_jobs: 0", "grp_submit_jobs: 5")).unwrap();
    let p = site.path("p.plan");
    let j = site.path("j.jsonl");
    let plan = || {
        let r = site.slurmplan(&["plan", "-d", limit.to_str().unwrap(), "-o", p.to_str().unwrap()], &[]);
        assert_eq!(r.code, 0, "{r:?}");
    };
    let apply =
        || site.slurmplan(&["apply", p.to_str().unwrap(), "--auto-approve", "--journal", j.to_str().unwrap()], &[]);
    // another cluster changes: the plan still applies
    plan();
    append("assocs.txt", "other|newacct|||root|1||||||||||||\n");
    let r = apply();
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    // a user association under a managed account of its own cluster changes: stale, nothing run
    std::fs::write(&limit, text.replace("grp_submit_jobs: 0", "grp_submit_jobs: 6")).unwrap();
    plan();
    append("assocs.txt", "rocket|hpc_a_robo|zed|||1||||||||||||\n");
    append("defaults.txt", "rocket|zed|hpc_a_robo|\n");
    let before = site.calls();
    let r = apply();
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("is stale"), "{}", r.stderr);
    assert_eq!(site.calls(), before);
}

/// `--cluster` leaves clusters of the desired file out, but not the account records declared
/// under them: the diff changes such a record through any cluster holding the account. With
/// the account on a cluster not read, the scoped plan and drift report say so and read every
/// cluster, and are those of the whole read.
#[test]
fn a_record_declared_under_a_cluster_left_out_reads_every_cluster() {
    let site = Site::new();
    fake::add_other_cluster(&site.state());
    // site-a's own changes first (its record change alone would read every cluster)
    assert_eq!(site.apply_with(&[], &[]).code, 0);
    let file = |name: &str, line: &str| {
        let p = site.state().join(name);
        let mut lines: Vec<String> = std::fs::read_to_string(&p).unwrap().lines().map(String::from).collect();
        lines.push(line.to_string());
        if name.starts_with("accounts") {
            lines.sort();
        }
        let text = lines.join("\n") + "\n";
        fake::rewrite_with_manifest(&site.state(), name, &text);
    };
    file("assocs.txt", "other|elsewhere|||root|1||||||||||||");
    file("accounts-descr.txt", "elsewhere|old words");
    file("accounts-org.txt", "elsewhere|someone");
    let desired = site.path("two.yaml");
    let text = std::fs::read_to_string(DESIRED).unwrap();
    std::fs::write(
        &desired,
        format!("{text}  other:\n    accounts:\n      elsewhere:\n        description: new words\n"),
    )
    .unwrap();
    let args = ["plan", "-d", desired.to_str().unwrap(), "--cluster", "rocket", "--format", "json"];
    let scoped = site.slurmplan(&args, &[]);
    let whole = site.slurmplan(&args, &[("SLURMPLAN_READ_ALL_CLUSTERS", "1")]);
    assert_eq!((scoped.code, whole.code), (0, 0), "{scoped:?}");
    assert!(whole.stdout.contains("description=new words"), "{}", whole.stdout);
    assert_eq!(scoped.stdout, whole.stdout);
    assert!(
        scoped
            .stderr
            .contains("reading every cluster: the plan depends on the first cluster holding account `elsewhere`"),
        "{}",
        scoped.stderr
    );
    // `drift` has no planner to ask: it finds the record itself, reads every cluster, and
    // reports the same
    let args = ["drift", "-d", desired.to_str().unwrap(), "--cluster", "rocket", "--format", "json"];
    let _ = std::fs::remove_file(site.state().join("argv.log"));
    let scoped = site.slurmplan(&args, &[]);
    let log = std::fs::read_to_string(site.state().join("argv.log")).unwrap();
    assert!(log.lines().any(|l| l.contains("\"cluster=other\"]")), "{log}");
    let whole = site.slurmplan(&args, &[("SLURMPLAN_READ_ALL_CLUSTERS", "1")]);
    assert_eq!((scoped.code, whole.code), (2, 2), "{scoped:?}");
    assert!(whole.stdout.contains("account_record.elsewhere"), "{}", whole.stdout);
    assert_eq!(scoped.stdout, whole.stdout);
}

/// The live reads are separate calls: a writer between them leaves them out of step (here an
/// account appears in the description read that the organization read did not list). slurmplan
/// reads again, up to 3 times, and says so; after 3 failures it stops with the diagnostics,
/// and nothing is written. Cron's `drift` stays quiet about a retry that worked.
#[test]
fn reads_that_do_not_fit_together_are_taken_again() {
    let reads =
        |site: &Site| std::fs::read_to_string(site.state().join("argv.log")).unwrap_or_default().lines().count();
    let site = Site::new();
    let r = site.slurmplan(&["plan", "-d", DESIRED], &[("FAKE_SACCTMGR_RACE_READS", "2")]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stderr.matches("reading again").count(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("account `racing` is not in live:accounts-org.txt"), "{}", r.stderr);
    assert_eq!(reads(&site), 19);
    assert!(r.stdout.contains("will perform the following actions"), "{}", r.stdout);

    let site = Site::new();
    let r = site.apply_with(&[("FAKE_SACCTMGR_RACE_READS", "3")], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("did not fit together, 3 times in a row"), "{}", r.stderr);
    assert!(r.stderr.contains("live:accounts-descr.txt"), "{}", r.stderr);
    assert_eq!(site.calls(), 0, "nothing may be written");

    let site = Site::new();
    let r = site.slurmplan(&["drift", "-d", DESIRED], &[("FAKE_SACCTMGR_RACE_READS", "1")]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(!r.stderr.contains("reading again"), "{}", r.stderr);

    let site = Site::new();
    let out = site.path("snap");
    let r = site.slurmplan(&["dump", "-o", out.to_str().unwrap()], &[("FAKE_SACCTMGR_RACE_READS", "1")]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!std::fs::read_to_string(out.join("accounts-descr.txt")).unwrap().contains("racing|"));
}

/// A live read is not cut at any size: a site whose association read prints more than 1 MiB
/// plans live exactly as from its snapshot, and `dump` writes the read back byte for byte.
#[test]
fn a_live_read_larger_than_1_mib_is_read_whole() {
    let site = Site::new();
    let big = site.path("big");
    let g = std::process::Command::new(common::cli::dev_bin("slurmplan-gen"))
        .args(["--out", big.to_str().unwrap(), "--accounts", "400", "--users", "6000", "--assocs", "40000"])
        .output()
        .unwrap();
    assert!(g.status.success(), "{g:?}");
    for f in std::fs::read_dir(big.join("state")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), site.state().join(f.file_name())).unwrap();
    }
    let assocs = std::fs::read(site.state().join("assocs.txt")).unwrap();
    assert!(assocs.len() > 1 << 20, "the site must print more than 1 MiB, has {}", assocs.len());
    let desired = big.join("desired.yaml");
    let args = ["plan", "-d", desired.to_str().unwrap(), "--format", "json", "--allow-mass-delete"];
    let live = site.slurmplan(&args, &[]);
    assert_eq!(live.code, 0, "{}", live.stderr);
    let snap_dir = big.join("state");
    let mut snap_args = args.to_vec();
    snap_args.extend(["--state", snap_dir.to_str().unwrap()]);
    let snap = site.slurmplan(&snap_args, &[]);
    assert_eq!(snap.code, 0, "{}", snap.stderr);
    assert!(live.stdout.len() > 1000);
    assert_eq!(live.stdout, snap.stdout);
    let out = site.path("dumped");
    let d = site.slurmplan(&["dump", "-o", out.to_str().unwrap()], &[]);
    assert_eq!(d.code, 0, "{d:?}");
    assert!(std::fs::read(out.join("assocs.txt")).unwrap() == assocs, "dump must write the read whole");
}

/// `apply -d` takes the lock, then reads the state once to plan from (and once more to verify):
/// no second read after the confirmation.
#[test]
fn apply_d_reads_once_before_applying() {
    let site = Site::new();
    let _ = std::fs::remove_file(site.state().join("argv.log"));
    let r = site.apply_with(&[], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let log = std::fs::read_to_string(site.state().join("argv.log")).unwrap();
    let reads = log.lines().filter(|l| l.contains("\"-n\",\"-P\"")).count();
    assert_eq!(reads, 12, "one live read to plan and one to verify, 6 calls each:\n{log}");
}

/// A user named with a `|` (slurmdbd stores one; `-P` prints it unescaped) makes rows that
/// cannot be split. Under an account slurmplan does not manage they are reported with their
/// file:line and left alone, and the plan is made; under a managed account nothing is planned.
#[test]
fn rows_that_cannot_be_split_fail_only_inside_the_managed_scope() {
    let with_row = |account: &str| {
        let site = Site::new();
        let path = site.state().join("assocs.txt");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!("rocket|{account}|pi|pe|||1||||||||||||\n"));
        std::fs::write(&path, text).unwrap();
        let d = site.state().join("defaults.txt");
        let mut text = std::fs::read_to_string(&d).unwrap();
        text.push_str(&format!("rocket|pi|pe|{account}\n"));
        std::fs::write(&d, text).unwrap();
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        (site, lines)
    };
    let (site, line) = with_row("physics_local");
    let r = site.slurmplan(&["plan", "-d", DESIRED], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "live:assocs.txt[cluster=rocket]:{line}: warning[bad-snapshot]: the row `rocket|physics_local|pi|pe|"
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("outside the managed scope"), "{}", r.stderr);
    assert!(r.stdout.contains("Plan:"), "{}", r.stdout);
    let (site, line) = with_row("hpc_a_lattice");
    let r = site.slurmplan(&["plan", "-d", DESIRED], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&format!("live:assocs.txt[cluster=rocket]:{line}: error[bad-snapshot]")), "{}", r.stderr);
    assert!(r.stderr.contains("managed account `hpc_a_lattice`"), "{}", r.stderr);
    assert!(r.stderr.contains("nothing was planned"), "{}", r.stderr);
}

/// A problem in the data (a cell slurmplan cannot read) is reported with its row, once: it is
/// not read again (reading again prints the same), and it is not called a slurmplan bug.
#[test]
fn a_data_problem_is_not_read_again() {
    let site = Site::new();
    let path = site.state().join("assocs.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap().to_string();
    let mut cells: Vec<&str> = first.split('|').collect();
    cells[11] = "many";
    let bad = cells.join("|");
    std::fs::write(&path, text.replacen(&first, &bad, 1)).unwrap();
    let r = site.slurmplan(&["plan", "-d", DESIRED], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(!r.stderr.contains("reading again"), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("in the row `{bad}`")), "{}", r.stderr);
    assert!(r.stderr.contains("slurmdbd holds data slurmplan cannot read"), "{}", r.stderr);
    assert!(!r.stderr.contains("bug"), "{}", r.stderr);
    let log = std::fs::read_to_string(site.state().join("argv.log")).unwrap();
    // the clusters alone (plan's first look), then one read of each
    assert_eq!(log.lines().count(), 7, "one read of each: {log}");
}

/// Without --sacctmgr, `--agent-config` takes sacctmgr from the site-agent config's
/// `slurm_bin_path`; an explicit --sacctmgr still wins.
#[test]
fn sacctmgr_path_comes_from_the_agent_config() {
    let site = Site::new();
    let bin = site.path("slurm-bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(&*FAKE, bin.join("sacctmgr")).unwrap();
    let cfg = site.path("agent.yaml");
    std::fs::write(
        &cfg,
        format!(
            "offerings:\n  - name: hpc\n    waldur_api_token: SECRET-TOKEN-123\n    backend_type: slurm\n    backend_settings:\n      default_account: hpc_default\n      customer_prefix: hpc_c_\n      project_prefix: hpc_p_\n      allocation_prefix: hpc_a_\n      slurm_bin_path: {}\n",
            bin.display()
        ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_slurmplan"));
        c.args(["plan", "-d", DESIRED, "--agent-config", cfg.to_str().unwrap()])
            .args(extra)
            .env_remove("SLURMPLAN_SACCTMGR")
            .env("FAKE_SACCTMGR_DIR", site.state())
            .stdin(Stdio::null());
        c.output().unwrap()
    };
    let o = run(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Plan:"));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("SECRET"));
    let o = run(&["--sacctmgr", "/nonexistent/sacctmgr"]);
    assert_eq!(o.status.code(), Some(1));
}

/// A sacctmgr that holds write call `at` until the file `go` appears beside the fake's state
/// (after saying so with the file `running`), then runs the fake.
fn gated_sacctmgr(site: &Site, at: usize) -> PathBuf {
    let d = site.dir.path().display();
    sh_script(
        &site.path("gated-sacctmgr"),
        &format!(
            "if [ \"$1\" = -i ]; then\n  n=$(cat {d}/writes 2>/dev/null || echo 0); n=$((n+1)); echo $n > {d}/writes\n  if [ $n = {at} ]; then\n    touch {d}/running\n    i=0; while [ ! -e {d}/go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n  fi\nfi\nexec {} \"$@\"",
            &*FAKE
        ),
    )
}

fn wait_for(path: &Path) {
    let t = std::time::Instant::now();
    while !path.exists() {
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "{} never appeared", path.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn spawn_apply(site: &Site, sacctmgr: &Path) -> std::process::Child {
    let j = site.path("journal.jsonl");
    Command::new(env!("CARGO_BIN_EXE_slurmplan"))
        .args(["apply", "-d", DESIRED, "--auto-approve", "--color", "never", "--journal", j.to_str().unwrap()])
        .env("SLURMPLAN_SACCTMGR", sacctmgr)
        .env("SLURMPLAN_LOCK_DIR", site.locks())
        .env("FAKE_SACCTMGR_DIR", site.state())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &std::process::Child, sig: &str) {
    let st = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
    assert!(st.success());
}

/// SIGTERM (and SIGINT) while step 2 runs: the step finishes and is journalled, nothing after it
/// runs, the lock is released and the exit code is 3.
#[test]
fn sigterm_stops_after_the_running_step() {
    for sig in ["-TERM", "-INT"] {
        let site = Site::new();
        let m = step_count(&site);
        assert!(m >= 3);
        let sacctmgr = gated_sacctmgr(&site, 2);
        let child = spawn_apply(&site, &sacctmgr);
        wait_for(&site.path("running"));
        signal(&child, sig);
        std::thread::sleep(std::time::Duration::from_millis(200));
        std::fs::write(site.path("go"), "").unwrap();
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{sig}: {stderr}");
        assert!(stderr.contains("stopped by SIG") && stderr.contains("applied 2 of"), "{stderr}");
        assert_eq!(site.calls(), 2, "a step after the signal ran");
        let j = site.journal();
        let finished: Vec<_> = j.iter().filter(|e| e["event"] == "finished").collect();
        assert_eq!(finished.len(), 2, "{j:#?}");
        assert_eq!(finished[1]["result"], "ok");
        assert_eq!(j.last().unwrap()["event"], "stopped", "{j:#?}");
        // the lock is free and no interruption is reported: the stop was clean
        let p = site.slurmplan(&["plan", "-d", DESIRED], &[]);
        assert!(!p.stderr.contains("interrupted"), "{}", p.stderr);
        site.converges();
    }
}

/// `kill -9` while step 2 runs: the journal names step 2 as started and not finished, and the
/// next plan and apply say that a previous apply was interrupted at step 2.
#[test]
fn kill_9_leaves_the_running_step_in_the_journal() {
    let site = Site::new();
    let (_, argv) = site.plan_file();
    let sacctmgr = gated_sacctmgr(&site, 2);
    let child = spawn_apply(&site, &sacctmgr);
    wait_for(&site.path("running"));
    signal(&child, "-KILL");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), None);
    let j = site.journal();
    let last = j.last().unwrap();
    assert_eq!(last["event"], "started", "{j:#?}");
    assert_eq!(last["step"], 2);
    let logged: Vec<&str> = last["argv"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert_eq!(logged[1..], argv[1][1..]);
    // the orphaned sacctmgr still holds the lock: an apply now would wait for it
    let r = site.apply_with(&[], &["--lock-timeout", "0"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("holds the lock"), "{}", r.stderr);
    std::fs::write(site.path("go"), "").unwrap();
    let t = std::time::Instant::now();
    let p = loop {
        let p = site.slurmplan(&["plan", "-d", DESIRED], &[]);
        if p.stderr.contains("interrupted") || t.elapsed() > std::time::Duration::from_secs(20) {
            break p;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(p.stderr.contains("a previous apply") && p.stderr.contains("interrupted at step 2 of"), "{}", p.stderr);
    assert!(p.stderr.contains(&argv[1][2..].join(" ")), "{}", p.stderr);
    // the next apply says it too, and once it ends cleanly the report is gone
    let r = site.apply_with(&[], &[]);
    assert!(r.stderr.contains("interrupted at step 2 of"), "{}", r.stderr);
    assert_eq!(r.code, 0, "{r:?}");
    let p = site.slurmplan(&["plan", "-d", DESIRED, "--detailed-exitcode"], &[]);
    assert!(!p.stderr.contains("interrupted"), "{}", p.stderr);
    assert_eq!(p.code, 0, "{p:?}");
}

/// A plan file edited by someone who recomputes its checksum: every step is checked before the
/// first write, and any refusal means nothing runs, beside another cluster too.
#[test]
fn edited_and_rechecksummed_plans_run_nothing() {
    use slurmplan::plan::{Phase, Step, file};
    let raw = |s: &str| -> slurmplan::model::Name { serde_json::from_value(serde_json::json!(s)).unwrap() };
    // on a site of one cluster, and beside another (`apply PLAN` then reads the plan's cluster
    // first and replays the steps there: only checked steps reach that replay)
    for other in [false, true] {
        let site = Site::new();
        if other {
            fake::add_other_cluster(&site.state());
        }
        let (p, _) = site.plan_file();
        let plan = file::read(&p).unwrap();
        let cluster = raw("rocket");
        let cases: Vec<(SCommand, &str)> = vec![
            (
                SCommand::DeleteAccount { cluster: cluster.clone(), names: vec![raw("hpc_c_tartu"), raw("root")] },
                "deletes account `root`",
            ),
            (SCommand::DeleteQos { names: vec![] }, "names no QoS"),
            (SCommand::DeleteQos { names: vec![raw("normal;touch pwned")] }, "invalid QoS name"),
            (SCommand::DeleteQos { names: vec![raw("x\u{1b}]0;owned\u{7}")] }, "invalid QoS name"),
            (SCommand::DeleteQos { names: vec![raw("nosuch")] }, "does not apply to the current state"),
        ];
        for (command, want) in cases {
            let mut edited = plan.clone();
            edited.steps.push(Step {
                number: edited.steps.len() + 1,
                phase: Phase::QosDelete,
                argv: command.argv(),
                command,
                causes: vec![],
                note: None,
            });
            std::fs::write(&p, file::to_json(&edited)).unwrap();
            let r = site.slurmplan(&["apply", p.to_str().unwrap()], &[]);
            assert_eq!(r.code, 1, "{r:?}");
            assert!(r.stderr.contains(want), "{want}: {}", r.stderr);
            assert!(!r.stderr.contains('\u{1b}') && !r.stderr.contains('\u{7}'), "raw escapes printed: {:?}", r.stderr);
            assert_eq!(site.calls(), 0);
            // `show` refuses it too, without printing its names raw
            let r = site.slurmplan(&["show", p.to_str().unwrap()], &[]);
            if want == "does not apply to the current state" {
                assert_eq!(r.code, 0, "{r:?}");
            } else {
                assert_eq!(r.code, 1, "{r:?}");
                assert!(r.stderr.contains("never plans") && r.stdout.is_empty(), "{r:?}");
            }
            assert!(!r.stderr.contains('\u{1b}') && !r.stdout.contains('\u{1b}'), "raw escapes printed: {r:?}");
        }
        // the plan as made still applies
        std::fs::write(&p, file::to_json(&plan)).unwrap();
        let r = site.slurmplan(&["apply", p.to_str().unwrap()], &[]);
        assert_eq!(r.code, 0, "{r:?}");
    }
}

/// With SLURMPLAN_PLAN_KEY_FILE, `plan -o` signs and `apply` takes only plans signed with that
/// key: unsigned, re-signed with another key, or edited plans are refused before anything runs.
#[test]
fn signed_plans_with_a_key_file() {
    let site = Site::new();
    let key = site.path("plan.key");
    private(&key, b"correct horse battery staple, 32+ bytes\n");
    let other = site.path("other.key");
    private(&other, b"another key of enough bytes, 32 or more\n");
    let (k, o) = (key.to_str().unwrap(), other.to_str().unwrap());
    let unsigned = site.path("unsigned.json");
    let r = site.slurmplan(&["plan", "-d", DESIRED, "-o", unsigned.to_str().unwrap()], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let signed = site.path("signed.json");
    let r = site.slurmplan(&["plan", "-d", DESIRED, "-o", signed.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", k)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(std::fs::read_to_string(&signed).unwrap().contains("\"signature\": \"hmac-sha256:"));

    let r = site.slurmplan(&["apply", unsigned.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", k)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("is not signed"), "{}", r.stderr);
    let r = site.slurmplan(&["apply", signed.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", o)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("signature that does not match"), "{}", r.stderr);
    // edited with a recomputed checksum: the signature no longer matches
    let mut plan = slurmplan::plan::file::read(&signed).unwrap();
    plan.steps.truncate(1);
    let mut v: serde_json::Value = serde_json::from_str(&slurmplan::plan::file::to_json(&plan)).unwrap();
    let orig: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&signed).unwrap()).unwrap();
    v["signature"] = orig["signature"].clone();
    let edited = site.path("edited.json");
    std::fs::write(&edited, v.to_string()).unwrap();
    let r = site.slurmplan(&["apply", edited.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", k)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("signature that does not match"), "{}", r.stderr);
    let short = site.path("short.key");
    private(&short, b"abc\n");
    let r =
        site.slurmplan(&["apply", signed.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", short.to_str().unwrap())]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(site.calls(), 0);

    let r = site.slurmplan(&["apply", signed.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", k)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("Verified"), "{r:?}");
}

/// A key file only its owner can read.
fn private(path: &Path, bytes: &[u8]) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
}

/// A plan key that others can read, a symlink, an all-zero or short key, and an empty
/// SLURMPLAN_PLAN_KEY_FILE are each refused with the file and the reason, by `plan -o` (no
/// plan written) and by `apply` (nothing run). Before: all were used (or meant "unsigned").
#[test]
fn weak_or_exposed_plan_keys_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let site = Site::new();
    let good = site.path("good.key");
    private(&good, b"a key of thirty-two bytes or more\n");
    let exposed = site.path("exposed.key");
    private(&exposed, b"a key of thirty-two bytes or more\n");
    std::fs::set_permissions(&exposed, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = site.path("link.key");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let zero = site.path("zero.key");
    private(&zero, &[0u8; 32]);
    let short = site.path("short.key");
    private(&short, b"sixteen bytes ok\n");
    let signed = site.path("signed.json");
    let g = good.to_str().unwrap();
    let r = site.slurmplan(&["plan", "-d", DESIRED, "-o", signed.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", g)]);
    assert_eq!(r.code, 0, "{r:?}");
    let cases: [(&Path, &str); 5] = [
        (&exposed, "readable by its owner only"),
        (&link, "symbolic link"),
        (&zero, "all zero"),
        (&short, "at least 32"),
        (Path::new(""), "SLURMPLAN_PLAN_KEY_FILE is set but empty"),
    ];
    for (key, why) in cases {
        let k = key.to_str().unwrap();
        let out = site.path("out.json");
        let r =
            site.slurmplan(&["plan", "-d", DESIRED, "-o", out.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", k)]);
        assert_eq!(r.code, 1, "{k}: {r:?}");
        assert!(r.stderr.contains(why) && r.stderr.contains(k), "{k}: {}", r.stderr);
        assert!(!out.exists(), "{k}");
        let r = site.slurmplan(&["apply", signed.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", k)]);
        assert_eq!(r.code, 1, "{k}: {r:?}");
        assert!(r.stderr.contains(why), "{k}: {}", r.stderr);
    }
    assert_eq!(site.calls(), 0);
    let r = site.slurmplan(&["apply", signed.to_str().unwrap()], &[("SLURMPLAN_PLAN_KEY_FILE", g)]);
    assert_eq!(r.code, 0, "{r:?}");
}

/// A plan that creates accounts (global account records) waits for the global lock, even when
/// the other apply is on another cluster.
#[test]
fn shared_objects_take_the_global_lock() {
    let site = Site::new();
    let (_, argv) = site.plan_file();
    assert!(argv.iter().any(|a| a[2..4] == ["add", "account"] || a[3] == "qos"), "{argv:?}");
    let scope = slurmplan::apply::lock::Scope { global: true, clusters: vec!["othercluster".to_string()] };
    let held = slurmplan::apply::lock::acquire(&site.lock_dir(), &scope, std::time::Duration::from_secs(1)).unwrap();
    let r = site.apply_with(&[], &["--lock-timeout", "1"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("slurmplan.lock"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
    held.release();
    site.converges();
}

/// A new customer is onboarded through a load step: `apply` feeds the flat file on stdin and
/// journals it, and the `--format script` here-document feeds the same file under `sh`; both
/// converge (a fresh plan is empty).
#[test]
fn onboarding_load_step_is_journalled_and_the_script_feeds_the_same_file() {
    let users = (0..12).map(|i| format!("ob{i}")).collect::<Vec<_>>().join(", ");
    let block = format!(
        "      hpc_c_ob:\n        parent: hpc_customers\n        description: 'onboarded: a, b=c'\n      hpc_a_ob1: {{parent: hpc_c_ob, users: [{users}]}}\n      hpc_a_ob2: {{parent: hpc_c_ob, users: [{users}]}}\n"
    );
    let text =
        std::fs::read_to_string(DESIRED).unwrap().replacen("    accounts:\n", &format!("    accounts:\n{block}"), 1);
    for via_script in [false, true] {
        let site = Site::new();
        let d = site.path("desired.yaml");
        std::fs::write(&d, &text).unwrap();
        let d = d.to_str().unwrap();
        if via_script {
            let s = site.slurmplan(&["plan", "-d", d, "--format", "script"], &[]);
            assert!(s.stdout.contains(" <<'SLURMPLAN_LOAD_FILE'\nCluster - 'rocket'\n"), "{}", s.stdout);
            let o = Command::new("sh")
                .arg("-c")
                .arg(&s.stdout)
                .env("SACCTMGR", &*FAKE)
                .env("FAKE_SACCTMGR_DIR", site.state())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        } else {
            let j = site.path("journal.jsonl");
            let r = site.slurmplan(&["apply", "-d", d, "--auto-approve", "--journal", j.to_str().unwrap()], &[]);
            assert_eq!(r.code, 0, "{r:?}");
            assert!(r.stderr.contains("Verified"), "{r:?}");
            let load = site
                .journal()
                .into_iter()
                .find(|e| e["event"] == "started" && e["argv"][2] == "load")
                .expect("a load step in the journal");
            let stdin = load["stdin"].as_str().unwrap();
            assert!(stdin.contains("Account - 'hpc_c_ob':Description='onboarded: a, b=c'"), "{stdin}");
            assert_eq!(stdin.matches("User - 'ob").count(), 24, "{stdin}");
        }
        let p = site.slurmplan(&["plan", "-d", d, "--detailed-exitcode"], &[]);
        assert_eq!(p.code, 0, "{p:?}");
    }
}

/// A load step that slurmdbd loses (its txn statement past MariaDB's `max_allowed_packet`:
/// nothing is created, yet sacctmgr prints its listing and "Done adding cluster" and exits 0,
/// as real 22.05.8 does) is caught by the re-read: apply exits 3, nothing claimed converged.
#[test]
fn a_load_step_slurmdbd_loses_is_caught_by_verification() {
    let users = (0..12).map(|i| format!("lost{i}")).collect::<Vec<_>>().join(", ");
    let block = format!(
        "      hpc_c_lost:\n        parent: hpc_customers\n      hpc_a_lost1: {{parent: hpc_c_lost, users: [{users}]}}\n      hpc_a_lost2: {{parent: hpc_c_lost, users: [{users}]}}\n"
    );
    let text =
        std::fs::read_to_string(DESIRED).unwrap().replacen("    accounts:\n", &format!("    accounts:\n{block}"), 1);
    let site = Site::new();
    let d = site.path("desired.yaml");
    std::fs::write(&d, &text).unwrap();
    let d = d.to_str().unwrap();
    let plan = site.slurmplan(&["plan", "-d", d, "--format", "json"], &[]);
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    let k = plan["steps"].as_array().unwrap().iter().position(|s| s["argv"][2] == "load").expect("a load step") + 1;
    let j = site.path("journal.jsonl");
    let r = site.slurmplan(
        &["apply", "-d", d, "--auto-approve", "--journal", j.to_str().unwrap()],
        &[("FAKE_SACCTMGR_LIE_AT", &k.to_string())],
    );
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("did not converge"), "{}", r.stderr);
    assert!(r.stderr.contains("account.rocket.hpc_a_lost1"), "{}", r.stderr);
    let load = site.journal().into_iter().find(|e| {
        e["event"] == "finished" && e["stderr_tail"].as_str().is_some_and(|s| s.contains("Done adding cluster"))
    });
    assert!(load.is_some(), "the lost load said Done: {:?}", site.journal());
    let again = site.slurmplan(&["plan", "-d", d, "--detailed-exitcode"], &[]);
    assert_eq!(again.code, 2, "{again:?}");
}

/// A symlink planted in the lock directory as a lock file (cluster or global) is refused before
/// anything runs, and the file it points to keeps its bytes. Before: the next apply truncated
/// that file and wrote its PID into it.
#[test]
fn a_planted_lock_symlink_is_not_followed() {
    let site = Site::new();
    for name in ["slurmplan-rocket.lock", "slurmplan.lock"] {
        let precious = site.path(&format!("precious-{name}"));
        std::fs::write(&precious, "keep me").unwrap();
        let _ = std::fs::remove_file(site.locks().join(name));
        std::os::unix::fs::symlink(&precious, site.locks().join(name)).unwrap();
        let r = site.apply_with(&[], &[]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains("refusing the lock file") && r.stderr.contains("symbolic link"), "{}", r.stderr);
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
        assert_eq!(site.calls(), 0);
        std::fs::remove_file(site.locks().join(name)).unwrap();
    }
    site.converges();
    let mode =
        std::os::unix::fs::MetadataExt::mode(&std::fs::metadata(site.locks().join("slurmplan-rocket.lock")).unwrap());
    assert_eq!(mode & 0o777, 0o600);
}

/// A lock directory other users can write is refused unless it is sticky (asked for
/// explicitly, as SLURMPLAN_LOCK_DIR is here); one another user owns is refused.
#[test]
fn a_lock_directory_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let site = Site::new();
    std::fs::set_permissions(site.locks(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = site.apply_with(&[], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("refusing the lock directory") && r.stderr.contains("mode 0777"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
    std::os::unix::fs::chown(site.locks(), Some(65534), None).unwrap();
    std::fs::set_permissions(site.locks(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let r = site.apply_with(&[], &[]);
    assert!(r.code == 1 && r.stderr.contains("owned by uid 65534"), "{r:?}");
    std::os::unix::fs::chown(site.locks(), Some(0), None).unwrap();
    site.converges();
}

/// An edited (unsigned) plan whose cluster name climbs out of the lock directory: the lock file
/// is named inside it, encoded, even when someone planted the directory the name climbs
/// through. Before: `slurmplan-x/../../something.lock` was created beside the lock directory.
#[test]
fn cluster_names_do_not_leave_the_lock_directory() {
    let site = Site::new();
    let (p, _) = site.plan_file();
    std::fs::create_dir(site.locks().join("slurmplan-x")).unwrap();
    let text = slurmplan::plan::file::to_json(&slurmplan::plan::file::read(&p).unwrap());
    let mut v: serde_json::Value = serde_json::from_str(
        &text.replace("\"rocket\"", "\"x/../../something\"").replace("cluster=rocket", "cluster=x/../../something"),
    )
    .unwrap();
    v["checksum"] = serde_json::json!(slurmplan::model::fingerprint::hash_bytes(v["plan"].to_string().as_bytes()));
    std::fs::write(&p, v.to_string()).unwrap();
    let r = site.slurmplan(&["apply", p.to_str().unwrap(), "--auto-approve"], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(site.calls(), 0);
    assert!(!site.path("something.lock").exists(), "a lock file was made outside the lock directory");
    assert!(site.locks().join("slurmplan-x%2F%2E%2E%2F%2E%2E%2Fsomething.lock").exists(), "{r:?}");
}

/// Run `c` (stdin closed, output to files) for at most `secs`; `None` if it had to be killed.
fn run_within(c: &mut Command, dir: &Path, secs: u64) -> Option<Run> {
    let (out, err) = (dir.join("run.out"), dir.join("run.err"));
    let mut child = c
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }?;
    Some(Run {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    })
}

/// `plan` reads the lock directory as untrusted data: a lock file naming a FIFO or `/dev/zero`
/// as its journal, and one with terminal escapes, neither hang it, nor fill its memory, nor
/// reach the terminal. Before: the FIFO hung `plan`, `/dev/zero` made it allocate until it
/// died, and the escapes were printed raw.
#[test]
fn plan_reads_lock_files_as_untrusted_data() {
    let site = Site::new();
    let fifo = site.path("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::write(site.locks().join("slurmplan-a.lock"), format!("1\njournal {}\n", fifo.display())).unwrap();
    std::fs::write(site.locks().join("slurmplan-b.lock"), "\u{1b}]0;pwned\u{7}\njournal /dev/zero\n").unwrap();
    std::fs::write(site.locks().join("slurmplan-c.lock"), "2\njournal /j/\u{1b}[2J\n").unwrap();
    let mut c = slurmplan_cmd(&["--color", "never", "plan", "-d", DESIRED]);
    c.env("SLURMPLAN_SACCTMGR", &*FAKE).env("SLURMPLAN_LOCK_DIR", site.locks()).env("FAKE_SACCTMGR_DIR", site.state());
    let r = run_within(&mut c, site.dir.path(), 60).expect("plan hung on the lock directory");
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!r.stderr.contains('\u{1b}') && !r.stderr.contains('\u{7}'), "raw escapes printed: {:?}", r.stderr);
    assert!(r.stderr.contains("journal /dev/zero cannot be read"), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("journal {} cannot be read", fifo.display())), "{}", r.stderr);
    assert!(r.stderr.contains("/j/\\u{1b}[2J"), "{}", r.stderr);
}

/// `apply -d` takes its cluster locks from the desired file it loads, however large: with the
/// cluster's lock held elsewhere it waits and runs nothing. Before: a file past the YAML
/// library's default budget (here 300,000 `protect` entries) was skimmed a second time for its
/// clusters, the skim failed silently, and the apply ran without the cluster lock.
#[test]
fn apply_d_on_a_large_desired_file_takes_its_cluster_lock() {
    let site = Site::new();
    let names: Vec<String> = (0..300_000).map(|i| format!("p{i}")).collect();
    let text = std::fs::read_to_string(DESIRED).unwrap();
    let big = text.replacen("protect: [hpc_c_tartu]", &format!("protect: [hpc_c_tartu, {}]", names.join(", ")), 1);
    assert_ne!(big, text);
    let desired = site.path("big.yaml");
    std::fs::write(&desired, big).unwrap();
    let scope = slurmplan::apply::lock::Scope { global: false, clusters: vec!["rocket".to_string()] };
    let held = slurmplan::apply::lock::acquire(&site.lock_dir(), &scope, std::time::Duration::from_secs(1)).unwrap();
    let r = site.slurmplan(&["apply", "-d", desired.to_str().unwrap(), "--auto-approve", "--lock-timeout", "1"], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("slurmplan-rocket.lock") && r.stderr.contains("holds the lock"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
    held.release();
}

/// Atomic writes are durable: the temporary file is synced before it is renamed over the
/// target, and the directory is synced after (traced with strace). Checked for a plan file
/// (`plan -o`) and a snapshot (`dump -o`, each file and its manifest). Before: nothing was synced.
#[test]
fn atomic_writes_sync_the_file_then_the_directory() {
    let site = Site::new();
    let out = site.path("out");
    std::fs::create_dir(&out).unwrap();
    let out = out.canonicalize().unwrap();
    let traced = |args: &[&str]| -> Vec<String> {
        let log = site.path("strace.log");
        let mut c = Command::new("strace");
        c.args(["-f", "-y", "-qq", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_slurmplan"))
            .args(["--color", "never"])
            .args(args)
            .env("SLURMPLAN_SACCTMGR", &*FAKE)
            .env("SLURMPLAN_LOCK_DIR", site.locks())
            .env("FAKE_SACCTMGR_DIR", site.state());
        let r = run(&mut c);
        assert_eq!(r.code, 0, "strace is needed for this test: {r:?}");
        std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect()
    };
    let durable = |lines: &[String], dir: &Path, name: &str| {
        let d = dir.display();
        let synced_tmp = lines
            .iter()
            .position(|l| l.contains("sync(") && l.contains(&format!("<{d}/.{name}.tmp-")))
            .unwrap_or_else(|| panic!("{name}: the temporary file is not synced: {lines:#?}"));
        let renamed = lines
            .iter()
            .position(|l| l.contains("rename") && l.contains(&format!("\"{d}/{name}\"")))
            .unwrap_or_else(|| panic!("{name}: not renamed into place: {lines:#?}"));
        let synced_dir = lines[renamed..].iter().any(|l| l.contains("fsync(") && l.contains(&format!("<{d}>)")));
        assert!(synced_tmp < renamed && synced_dir, "{name}: {lines:#?}");
    };
    let plan = out.join("plan.json");
    let lines = traced(&["plan", "-d", DESIRED, "-o", plan.to_str().unwrap()]);
    durable(&lines, &out, "plan.json");
    let snap = out.join("snap");
    let lines = traced(&["dump", "-o", snap.to_str().unwrap()]);
    durable(&lines, &snap, "manifest.json");
    durable(&lines, &snap, slurmplan::sacctmgr::reads::READS[0].file);
}

/// Another user than root: the default lock directory is `$XDG_RUNTIME_DIR/slurmplan`, created
/// 0700; without `XDG_RUNTIME_DIR` an apply stops and asks for `--lock-dir` (before: the shared
/// temp directory was used).
#[test]
fn a_user_without_a_runtime_directory_is_asked_for_a_lock_dir() {
    use std::os::unix::fs::MetadataExt;
    let as_nobody = |args: &[&str], runtime: Option<&Path>| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_slurmplan")])
            .args(args)
            .env_remove("SLURMPLAN_LOCK_DIR")
            .env_remove("XDG_RUNTIME_DIR")
            .env("SLURMPLAN_SACCTMGR", &*FAKE);
        if let Some(r) = runtime {
            c.env("XDG_RUNTIME_DIR", r);
        }
        run(&mut c)
    };
    let r = as_nobody(&["apply", "-d", DESIRED, "--auto-approve"], None);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("no lock directory: XDG_RUNTIME_DIR is not set"), "{}", r.stderr);
    assert!(r.stderr.contains("--lock-dir"), "{}", r.stderr);
    let runtime = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    std::os::unix::fs::chown(runtime.path(), Some(65534), Some(65534)).unwrap();
    let r = as_nobody(&["apply", "-d", "/nonexistent.yaml", "--auto-approve"], Some(runtime.path()));
    assert_eq!(r.code, 1, "{r:?}");
    let m = std::fs::metadata(runtime.path().join("slurmplan")).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (65534, 0o700));
}

/// A plan file whose load step was edited (checksum recomputed, unsigned) to name a user who
/// already exists is refused by the replay before any write. Real `sacctmgr load` would add the
/// row AND move that user's DefaultAccount to the line's account (seen on 22.05.8: alice's
/// DefaultAccount went from the old account to the loaded one; tests/e2e_safety.rs,
/// `a_load_naming_an_existing_user_is_refused_on_the_bed`), which no command of the plan says.
#[test]
fn an_edited_load_step_naming_an_existing_user_is_refused() {
    use slurmplan::sacctmgr::load_file::{LoadRow, LoadUser};
    let site = Site::new();
    let users: Vec<String> = (0..12).map(|i| format!("nu{i}")).collect();
    let text = std::fs::read_to_string(DESIRED).unwrap().replacen(
        "    accounts:\n",
        &format!(
            "    accounts:\n      hpc_c_new:\n        parent: hpc_customers\n      hpc_a_n1:\n        parent: hpc_c_new\n        users: [{u}]\n      hpc_a_n2:\n        parent: hpc_c_new\n        users: [{u}]\n",
            u = users.join(", ")
        ),
        1,
    );
    let desired = site.path("desired.yaml");
    std::fs::write(&desired, text).unwrap();
    let p = site.path("plan.json");
    let r = site.slurmplan(&["plan", "-d", desired.to_str().unwrap(), "-o", p.to_str().unwrap()], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let mut plan = slurmplan::plan::file::read(&p).unwrap();
    let load = plan.steps.iter_mut().find(|s| matches!(s.command, SCommand::Load { .. })).expect("a load step");
    let SCommand::Load { accounts, users, .. } = &mut load.command else { unreachable!() };
    let n1 = accounts.iter().find(|a| a.name.as_str() == "hpc_a_n1").expect("hpc_a_n1 is loaded").name.clone();
    let alice: slurmplan::model::Name = serde_json::from_value(serde_json::json!("alice")).unwrap();
    users.push(LoadUser {
        name: alice,
        default_account: n1.clone(),
        rows: vec![LoadRow { account: n1, set: Default::default() }],
    });
    let edited = site.path("edited.json");
    std::fs::write(&edited, slurmplan::plan::file::to_json(&plan)).unwrap();
    let r = site.slurmplan(&["apply", edited.to_str().unwrap()], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("the load names user `alice`, who exists"), "{}", r.stderr);
    assert_eq!(site.calls(), 0, "apply ran a step of the edited plan");
    // the same plan unedited runs
    let r = site.slurmplan(&["apply", p.to_str().unwrap()], &[]);
    assert_eq!(r.code, 0, "{r:?}");
}

/// A batch whose name list does not fit in one argv word (Linux: 131,071 bytes) is planned as
/// several commands, each word within the limit, and applies. Before, the plan had a
/// `modify user where name=...` word of 134,404 bytes (2,100 users of 63 characters), and
/// apply failed at its last step with "Argument list too long" after 11 steps had run (and then,
/// for a while, `plan` refused it).
#[test]
fn a_batch_longer_than_one_argv_word_is_split() {
    let site = Site::new();
    let users: Vec<String> = (0..2_100).map(|i| format!("u{i:05}{}", "x".repeat(57))).collect();
    let mut assocs = std::fs::read_to_string(site.state().join("assocs.txt")).unwrap();
    let mut defaults = std::fs::read_to_string(site.state().join("defaults.txt")).unwrap();
    for u in &users {
        assocs.push_str(&format!("rocket|hpc_a_robo|{u}|||1||||||||||||\n"));
        defaults.push_str(&format!("rocket|{u}|hpc_a_robo\n"));
    }
    // The fake's state is a snapshot: its manifest records each file's size and SHA-256.
    let manifest_path = site.state().join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    for (file, text) in [("assocs.txt", assocs), ("defaults.txt", defaults)] {
        use sha2::Digest;
        let sha: String = sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        manifest["files"][file] = serde_json::json!({"bytes": text.len(), "sha256": sha});
        std::fs::write(site.state().join(file), text).unwrap();
    }
    std::fs::write(&manifest_path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let items: String = users.iter().map(|u| format!("          - {{name: {u}, grp_jobs: 5}}\n")).collect();
    let text = std::fs::read_to_string(DESIRED).unwrap().replacen(
        "        users: [dave]\n",
        &format!("        users:\n          - dave\n{items}"),
        1,
    );
    let desired = site.path("desired.yaml");
    std::fs::write(&desired, text).unwrap();
    let d = desired.to_str().unwrap();
    let p = site.path("plan.json");
    let r = site.slurmplan(&["plan", "-d", d, "-o", p.to_str().unwrap(), "--format", "json"], &[]);
    assert_eq!(r.code, 0, "{}", &r.stderr[..r.stderr.len().min(3000)]);
    let plan: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let steps = plan["plan"]["steps"].as_array().or(plan["steps"].as_array()).expect("steps").clone();
    let argvs: Vec<Vec<String>> = steps
        .iter()
        .map(|s| s["argv"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect())
        .collect();
    let longest = argvs.iter().flatten().map(String::len).max().unwrap();
    assert!(longest <= 131_071, "a word of {longest} bytes");
    let grp: Vec<&Vec<String>> = argvs.iter().filter(|a| a.iter().any(|w| w == "GrpJobs=5")).collect();
    assert_eq!(grp.len(), 2, "the 2,100-user batch in two halves: {}", grp.len());
    let named: usize =
        grp.iter().map(|a| a.iter().find_map(|w| w.strip_prefix("name=")).unwrap().split(',').count()).sum();
    assert_eq!(named, 2_100);
    let r = site.slurmplan(&["apply", "-d", d, "--auto-approve"], &[]);
    assert_eq!(r.code, 0, "{}", &r.stderr[..r.stderr.len().min(3000)]);
    // progress lines show each word cut (the plan shown before them, on stdout, is whole)
    assert!(r.stderr.len() < 20_000, "apply's progress is {} bytes", r.stderr.len());
    let again = site.slurmplan(&["plan", "-d", d, "--detailed-exitcode"], &[]);
    assert_eq!(again.code, 0, "{}", &again.stderr[..again.stderr.len().min(3000)]);
}

/// `--agent-config` is read once per run (`cli::settings`), though an apply runs sacctmgr for
/// its reads, its steps and its verification: the config's `slurm_bin_path` names a directory
/// whose `sacctmgr` breaks the config (replaces the file with an unparsable one) each time it
/// runs, then runs the fake. The first sacctmgr run comes after the config was read (its path
/// comes from the config), so a config read again for a later step or the verification would
/// be the broken one.
#[test]
fn agent_config_is_read_once_per_run() {
    let site = Site::new();
    let (plan, _) = site.plan_file();
    let bin = site.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let config = site.path("agent.yaml");
    let broken = site.path("broken.yaml");
    std::fs::write(&broken, "offerings: [\n").unwrap();
    let runs = site.path("sacctmgr-runs");
    sh_script(
        &bin.join("sacctmgr"),
        &format!(
            "cp '{b}' '{c}'.$$ && mv '{c}'.$$ '{c}' && echo run >>'{r}' && exec '{f}' \"$@\"",
            b = broken.display(),
            c = config.display(),
            r = runs.display(),
            f = &*FAKE
        ),
    );
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/waldur/waldur-site-agent-config.yaml");
    let good = std::fs::read_to_string(example).unwrap().replace(
        "      default_account: hpc_default\n",
        &format!("      default_account: hpc_default\n      slurm_bin_path: {}\n", bin.display()),
    );
    assert!(good.contains("slurm_bin_path"));
    std::fs::write(&config, good).unwrap();
    let mut c = slurmplan_cmd(&["--agent-config", config.to_str().unwrap(), "apply", plan.to_str().unwrap()]);
    c.args(["--color", "never"])
        .env_remove("SLURMPLAN_SACCTMGR")
        .env("SLURMPLAN_LOCK_DIR", site.locks())
        .env("FAKE_SACCTMGR_DIR", site.state());
    let r = run(&mut c);
    assert_eq!(r.code, 0, "the agent config was read again after sacctmgr broke it: {r:?}");
    assert!(r.stderr.contains("Verified"), "{r:?}");
    let runs = std::fs::read_to_string(&runs).unwrap().lines().count();
    assert!(runs > 2, "sacctmgr ran for the reads, the steps and the verification ({runs} runs): {r:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "offerings: [\n", "the config was broken by the first run");
}

/// Every apply saves what it is about to change (0600, named in its journal); `undo` of an
/// apply stopped at step 3 plans back steps 1-2 (step 3 may have run), and applying that plan
/// leaves the fake's site as it was before, object for object; a second undo then has nothing
/// left to take back. (The fake is the model: this is the plumbing; tests/undo_real.rs holds
/// undo to real slurmdbd.)
#[test]
fn undo_takes_back_a_stopped_apply() {
    use std::os::unix::fs::PermissionsExt;
    let site = Site::new();
    let before = snapshot::load(&site.state()).unwrap();
    let (plan, _) = site.plan_file();
    let j = site.path("apply.jsonl");
    let r = site.slurmplan(
        &["apply", plan.to_str().unwrap(), "--journal", j.to_str().unwrap()],
        &[("FAKE_SACCTMGR_NOOP_AT", "3")],
    );
    assert_eq!(r.code, 3, "{r:?}");
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&j).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(line["event"], "apply", "{line}");
    let saved = PathBuf::from(line["before"].as_str().unwrap());
    assert_eq!(std::fs::metadata(&saved).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(r.stderr.contains(&format!("`slurmplan undo {}`", j.display())), "{}", r.stderr);
    assert_ne!(snapshot::load(&site.state()).unwrap(), before, "steps 1-2 ran");

    let u = site.path("undo.json");
    let r = site.slurmplan(&["undo", j.to_str().unwrap(), "-o", u.to_str().unwrap()], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("this undo takes back steps 1-3 of"), "{}", r.stdout);
    let r = site.slurmplan(&["apply", u.to_str().unwrap()], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let after = snapshot::load(&site.state()).unwrap();
    let left: Vec<String> = slurmplan::diff::diff(&before, &after).iter().map(|c| c.address()).collect();
    assert!(left.is_empty(), "{left:?}");
    // the undo's own apply wrote another journal; the first one has nothing left to take back
    let r = site.slurmplan(&["undo", j.to_str().unwrap(), "--detailed-exitcode"], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    // a journal without an apply line, or a missing before file, is a clear error
    let bare = site.path("bare.jsonl");
    std::fs::write(&bare, "{\"event\":\"started\",\"step\":1}\n").unwrap();
    let r = site.slurmplan(&["undo", bare.to_str().unwrap()], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("records no apply"), "{}", r.stderr);
    std::fs::remove_file(&saved).unwrap();
    let r = site.slurmplan(&["undo", j.to_str().unwrap()], &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("cannot read the before file"), "{}", r.stderr);
}
