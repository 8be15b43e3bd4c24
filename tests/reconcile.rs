//! `slurmplan reconcile` against the fake sacctmgr (crates/dev): the policy's split (what runs,
//! what waits), the pending plan and its review, the metrics textfile (held to the Prometheus
//! text format), a cycle with nothing to do writing nothing but metrics, failures reported with
//! nothing changed, and the `--interval` loop stopped by SIGTERM. Fast and offline: the truth
//! on real slurmdbd is tests/e2e_real.rs (`reconcile_cycles_on_real_slurmdbd`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;
use common::fake;
use common::prometheus::{sample as metric, validate_prometheus};
use common::*;

const DESIRED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/site-a/desired.yaml");

struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        copy_example_state(&dir.path().join("state"));
        Site { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn cmd(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Command {
        let mut c = slurmplan_cmd(args);
        c.args(["--color", "never"])
            .env_remove("SLURMPLAN_STATE_DIR")
            .env("SLURMPLAN_SACCTMGR", &*FAKE)
            .env("SLURMPLAN_LOCK_DIR", self.path("locks"))
            .env("FAKE_SACCTMGR_DIR", self.path("state"));
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }
    fn slurmplan(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        run(&mut self.cmd(args, env))
    }
    /// One reconcile cycle of the example's desired file, with a state dir and metrics here.
    fn reconcile(&self, extra: &[&str], env: &[(&str, &str)]) -> Run {
        self.reconcile_of(DESIRED, extra, env)
    }
    /// One reconcile cycle of `desired`, with a state dir and metrics here.
    fn reconcile_of(&self, desired: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
        let (sd, m) = (self.path("sd"), self.path("metrics.prom"));
        let mut args = vec!["reconcile", "-d", desired, "--state-dir", s(&sd), "--metrics", s(&m)];
        args.extend(extra);
        self.slurmplan(&args, env)
    }
    fn metrics(&self) -> BTreeMap<String, f64> {
        let text = std::fs::read_to_string(self.path("metrics.prom")).unwrap();
        validate_prometheus(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }
    /// Write calls the fake received.
    fn calls(&self) -> u64 {
        std::fs::read_to_string(self.path("state/calls")).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }
    /// The change addresses of `plan -d DESIRED` on the fake's state now.
    fn planned_addresses(&self) -> Vec<String> {
        let r = self.slurmplan(&["plan", "-d", DESIRED, "--format", "json"], &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        addresses(&serde_json::from_str(&r.stdout).unwrap())
    }
    fn pending(&self) -> PathBuf {
        self.path("sd/pending/plan.json")
    }
}

fn addresses(plan: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> =
        plan["changes"].as_array().unwrap().iter().map(|c| c["address"].as_str().unwrap().to_string()).collect();
    v.sort();
    v
}

/// Every file under `dir` with its bytes and modification time.
fn files(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), (std::fs::read(&p).unwrap(), m.modified().unwrap()));
            }
        }
    }
    out
}

#[test]
fn a_cycle_applies_what_the_policy_allows_and_keeps_the_rest_for_review() {
    let site = Site::new();
    let before = site.planned_addresses();
    let r = site.reconcile(&["--detailed-exitcode"], &[]);
    assert_eq!(r.code, 2, "changes wait: exit 2 with --detailed-exitcode\n{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "one summary line: {}", r.stderr);
    assert!(r.stderr.starts_with("reconcile: applied "), "{}", r.stderr);
    assert!(r.stdout.is_empty());
    // What waits is exactly what a plan of the state now shows, and the pending plan is it.
    let left = site.planned_addresses();
    assert!(!left.is_empty() && left.len() < before.len(), "{before:?} -> {left:?}");
    let pending: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(site.pending()).unwrap()).unwrap();
    assert_eq!(addresses(&pending["plan"]), left);
    // The default policy holds the delete of an account with users (and the user removal and
    // DefaultAccount move it needs) and the re-parent.
    for a in [
        "account.rocket.hpc_a_old",
        "user_association.rocket.dave@hpc_a_old",
        "default_account.rocket.dave",
        "account.rocket.hpc_a_lattice",
    ] {
        assert!(left.contains(&a.to_string()), "{a} should wait: {left:?}");
    }
    let review = std::fs::read_to_string(site.path("sd/pending/plan.md")).unwrap();
    assert!(review.contains("### Why these changes wait"), "{review}");
    assert!(review.contains("`account-delete-with-users` is not unattended in the policy"), "{review}");
    let m = site.metrics();
    assert_eq!(metric(&m, "slurmplan_reconcile_last_run_success", None), 1.0);
    assert_eq!(metric(&m, "slurmplan_reconcile_drift_changes", None), before.len() as f64);
    let applied: f64 =
        m.iter().filter(|(k, _)| k.starts_with("slurmplan_reconcile_last_run_changes_applied[(")).map(|(_, v)| v).sum();
    let pending_n: f64 =
        m.iter().filter(|(k, _)| k.starts_with("slurmplan_reconcile_changes_pending[(")).map(|(_, v)| v).sum();
    assert_eq!(applied as usize, before.len() - left.len());
    assert_eq!(pending_n as usize, left.len());
    assert_eq!(metric(&m, "slurmplan_reconcile_changes_pending", Some("account-delete-with-users")), 1.0);
    assert_eq!(std::fs::read_dir(site.path("sd/journals")).unwrap().count(), 2, "one journal and its before file");

    // The next cycle has nothing it may do: no write, no file but the metrics rewritten.
    let (calls, files_before) = (site.calls(), files(&site.path("sd")));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let r = site.reconcile(&[], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(site.calls(), calls, "no sacctmgr write");
    assert_eq!(files(&site.path("sd")), files_before, "the pending plan and the journals are left as they were");

    // A human applies the pending plan as reviewed; the next cycle finds the site in sync,
    // removes the pending files and says nothing.
    let r = site.slurmplan(&["apply", s(&site.pending())], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = site.reconcile(&["--detailed-exitcode"], &[]);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    assert!(!site.pending().exists() && !site.path("sd/pending/plan.md").exists());
    assert_eq!(metric(&site.metrics(), "slurmplan_reconcile_drift_changes", None), 0.0);
    assert!(site.planned_addresses().is_empty());
}

#[test]
fn a_policy_that_lets_everything_run_converges_in_one_cycle() {
    let site = Site::new();
    let kinds = "[qos-create, qos-update, qos-delete, account-create, account-update, account-record, account-reparent, account-delete-with-users, account-delete, user-create, user-update, user-delete, default-account]";
    std::fs::write(site.path("policy.yaml"), format!("version: 1\nunattended: {kinds}\n")).unwrap();
    let r = site.reconcile(&["--policy", s(&site.path("policy.yaml")), "--detailed-exitcode"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(site.planned_addresses().is_empty());
    assert!(!site.pending().exists());
    assert_eq!(metric(&site.metrics(), "slurmplan_reconcile_changes_pending", Some("account-delete-with-users")), 0.0);
}

#[test]
fn a_plan_larger_than_max_changes_waits_whole() {
    let site = Site::new();
    std::fs::write(site.path("policy.yaml"), "version: 1\nmax_changes: 3\n").unwrap();
    let before = site.planned_addresses();
    let r = site.reconcile(&["--policy", s(&site.path("policy.yaml"))], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(site.calls(), 0, "nothing ran");
    assert_eq!(site.planned_addresses(), before);
    let review = std::fs::read_to_string(site.path("sd/pending/plan.md")).unwrap();
    assert!(review.contains("more than max_changes (3)"), "{review}");
    // The pending plan applies as it is.
    let r = site.slurmplan(&["apply", s(&site.pending())], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(site.planned_addresses().is_empty());
}

#[test]
fn a_failing_cycle_is_reported_in_metrics_with_nothing_half_applied() {
    let site = Site::new();
    // slurmdbd down: the read fails, nothing runs, the metrics say so.
    let r = site.reconcile(&[], &[("FAKE_SACCTMGR_DOWN", "1")]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("error: cannot read the current state"), "{}", r.stderr);
    let m = site.metrics();
    assert_eq!(metric(&m, "slurmplan_reconcile_last_run_success", None), 0.0);
    assert_eq!(metric(&m, "slurmplan_reconcile_last_run_exit_code", None), 1.0);
    assert!(!m.contains_key("slurmplan_reconcile_drift_changes[]"), "drift unknown when the read failed");
    assert_eq!(site.calls(), 0);
    // The first write refused (sacctmgr's DefaultQOS rejection, exit 0): the cycle stops
    // before any other step, exit 1, nothing applied, and says where the journal is.
    let before = site.planned_addresses();
    let r = site.reconcile(&[], &[("FAKE_SACCTMGR_FAIL_AT", "1")]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("applied 0 of"), "{}", r.stderr);
    let m = site.metrics();
    assert_eq!(metric(&m, "slurmplan_reconcile_last_run_success", None), 0.0);
    assert_eq!(metric(&m, "slurmplan_reconcile_last_run_steps_applied", None), 0.0);
    assert_eq!(site.planned_addresses(), before, "nothing half-applied");
    // The next cycle, with sacctmgr well again, goes on.
    let r = site.reconcile(&[], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric(&site.metrics(), "slurmplan_reconcile_last_run_success", None), 1.0);
}

#[test]
fn bad_policies_and_missing_inputs_are_usage_errors_with_nothing_run() {
    let site = Site::new();
    std::fs::write(site.path("policy.yaml"), "version: 1\nunattended: [account-creat]\n").unwrap();
    let r = site.reconcile(&["--policy", s(&site.path("policy.yaml"))], &[]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("unknown change kind `account-creat`"), "{}", r.stderr);
    std::fs::write(site.path("policy.yaml"), "version: 1\nmax_chagnes: 3\n").unwrap();
    let r = site.reconcile(&["--policy", s(&site.path("policy.yaml"))], &[]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("unknown field `max_chagnes`"), "{}", r.stderr);
    let r = site.slurmplan(&["reconcile", "--state-dir", s(&site.path("sd"))], &[]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("give -d desired.yaml, or --agent-config FILE"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
    assert!(!site.path("metrics.prom").exists());
}

#[test]
fn a_state_dir_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let site = Site::new();
    std::fs::create_dir(site.path("sd")).unwrap();
    std::fs::set_permissions(site.path("sd"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = site.reconcile(&[], &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("other users can write it"), "{}", r.stderr);
    assert_eq!(site.calls(), 0);
    std::fs::set_permissions(site.path("sd"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(site.path("sd"), site.path("link")).unwrap();
    let r = site.slurmplan(&["reconcile", "-d", DESIRED, "--state-dir", s(&site.path("link"))], &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);
}

#[test]
fn the_interval_loop_runs_cycles_until_sigterm() {
    let site = Site::new();
    let child = site
        .cmd(
            &[
                "reconcile",
                "-d",
                DESIRED,
                "--state-dir",
                s(&site.path("sd")),
                "--metrics",
                s(&site.path("metrics.prom")),
                "--interval",
                "300ms",
            ],
            &[],
        )
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for a second cycle (its metrics say "in sync" after the first applied and the
    // pending plan waits), at most 60 s.
    let started = std::time::Instant::now();
    let mut stamps = std::collections::BTreeSet::new();
    while stamps.len() < 2 && started.elapsed() < std::time::Duration::from_secs(60) {
        if let Ok(text) = std::fs::read_to_string(site.path("metrics.prom")) {
            stamps.insert(text);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(stamps.len() >= 2, "a second cycle ran");
    // By its PID (the child this test started).
    let kill = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reconcile: stopped by SIGTERM"));
}

/// The words of an example command line with the paths of a real install mapped into `site`:
/// the binary is the one under test, sacctmgr the fake (from the environment).
fn mapped(site: &Site, words: &[&str]) -> Vec<String> {
    let example = root().join("examples/reconcile");
    words
        .iter()
        .map(|w| match *w {
            "/etc/slurmplan/desired.yaml" => DESIRED.to_string(),
            "/etc/slurmplan/policy.yaml" => s(&example.join("policy.yaml")).to_string(),
            "/var/lib/slurmplan" => s(&site.path("sd")).to_string(),
            "/run/slurmplan" => s(&site.path("locks")).to_string(),
            w if w.starts_with("/var/lib/prometheus/") => s(&site.path("metrics.prom")).to_string(),
            w if w.starts_with('/') => panic!("an example path the test does not map: {w}"),
            w => w.to_string(),
        })
        .collect()
}

/// The example service's ExecStart and the README's cron line, run as written (paths mapped
/// into a temporary directory) against the fake: one cycle each, metrics written.
#[test]
fn the_reconcile_examples_run() {
    let dir = root().join("examples/reconcile");
    let unit = std::fs::read_to_string(dir.join("slurmplan-reconcile.service")).unwrap();
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("an ExecStart line");
    let cron = readme.lines().find(|l| l.starts_with("*/5 * * * * root ")).expect("a cron line in the README");
    let cron = cron.trim_start_matches("*/5 * * * * root ");
    for line in [exec, cron] {
        let site = Site::new();
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "/usr/bin/slurmplan", "{line}");
        let args = mapped(&site, &words[1..]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = site.slurmplan(&args, &[]);
        assert_eq!(r.code, 0, "{line}\n{}", r.stderr);
        assert_eq!(metric(&site.metrics(), "slurmplan_reconcile_last_run_success", None), 1.0);
        assert!(
            metric(&site.metrics(), "slurmplan_reconcile_changes_pending", Some("account-delete-with-users")) == 1.0,
            "the example policy holds the delete of an account with users"
        );
    }
}

/// A desired state that would delete more than the mass-delete guard allows (a truncated
/// export): the cycle deletes nothing, runs the rest, and every delete waits in the pending
/// plan, which carries SP005 and applies as reviewed.
#[test]
fn a_mass_delete_waits_whole_and_the_rest_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let made = run(std::process::Command::new(common::cli::dev_bin("slurmplan-gen")).args([
        "--out",
        s(&tmp.path().join("gen")),
        "--accounts",
        "40",
        "--users",
        "30",
        "--assocs",
        "80",
    ]));
    assert_eq!(made.code, 0, "{}", made.stderr);
    let site = Site { dir: tmp };
    std::fs::rename(site.path("gen/state"), site.path("state")).unwrap();
    let desired = site.path("truncated.yaml");
    std::fs::write(
        &desired,
        "version: 1\nmanaged:\n  prefixes: [hpc_]\nqos:\n  normal: {}\n  paused: {}\n  downscaled: {}\nclusters:\n  big:\n    accounts:\n      hpc_c0: {parent: root}\n      hpc_new: {parent: hpc_c0, users: [newcomer]}\n",
    )
    .unwrap();
    let d = s(&desired);
    let refused = site.slurmplan(&["plan", "-d", d], &[]);
    assert_eq!(refused.code, 1, "plan refuses the mass delete: {}", refused.stderr);
    let (sd, m) = (site.path("sd"), site.path("metrics.prom"));
    let r = site.slurmplan(&["reconcile", "-d", d, "--state-dir", s(&sd), "--metrics", s(&m)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let left = site.slurmplan(&["plan", "-d", d, "--allow-mass-delete", "--format", "json"], &[]);
    let left: serde_json::Value = serde_json::from_str(&left.stdout).unwrap();
    let actions: Vec<&str> =
        left["changes"].as_array().unwrap().iter().map(|c| c["action"].as_str().unwrap()).collect();
    assert!(!actions.is_empty() && actions.iter().all(|a| *a == "delete"), "only deletes are left: {actions:?}");
    let review = std::fs::read_to_string(site.path("sd/pending/plan.md")).unwrap();
    assert!(review.contains("SP005"), "{review}");
    assert!(review.contains("more than the mass-delete guard allows"), "{review}");
    let r = site.slurmplan(&["apply", s(&site.pending())], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let after = site.slurmplan(&["plan", "-d", d, "--detailed-exitcode"], &[]);
    assert_eq!(after.code, 0, "{}", after.stderr);
}

/// Beside a cluster `other`, a cycle reads site-a's `rocket` alone unless its plan asks
/// something `other` could answer differently (as `plan` does: tests/apply_faults.rs), and
/// applies and keeps pending what a cycle reading every cluster
/// (`SLURMPLAN_READ_ALL_CLUSTERS=1`) applies and keeps, cycle after cycle.
#[test]
fn a_cycle_beside_another_cluster_reads_its_own_cluster_unless_the_plan_asks_of_others() {
    let (scoped, whole) = (Site::new(), Site::new());
    for site in [&scoped, &whole] {
        fake::add_other_cluster(&site.path("state"));
    }
    let all = [("SLURMPLAN_READ_ALL_CLUSTERS", "1")];
    let limit = scoped.path("limit.yaml");
    let text = std::fs::read_to_string(DESIRED).unwrap();
    assert!(text.contains("grp_submit_jobs: 0"));
    std::fs::write(&limit, text.replace("grp_submit_jobs: 0", "grp_submit_jobs: 5")).unwrap();
    // (desired file, reads of `rocket`, `other` and users by name the scoped cycle makes)
    let cycles = [
        // site-a's first plan changes an account's record, naming the first cluster holding
        // the account, which `other` could be: every cluster is read; the rest waits
        (DESIRED, None),
        // nothing runs (what waits is the plan already kept): `rocket`'s two reads
        (DESIRED, Some((2, 0, 0))),
        // a limit runs: read, verified, and the pending plan made again, on `rocket` alone
        (s(&limit), Some((6, 0, 0))),
    ];
    for (i, (desired, reads)) in cycles.into_iter().enumerate() {
        let r = scoped.reconcile_of(desired, &[], &[]);
        assert_eq!(r.code, 0, "cycle {i}: {}", r.stderr);
        let w = whole.reconcile_of(desired, &[], &all);
        assert_eq!(w.code, 0, "cycle {i}: {}", w.stderr);
        let summary = |r: &Run| r.stderr.split("; review and apply").next().unwrap().to_string();
        assert_eq!(summary(&r), summary(&w), "cycle {i}: the same summary");
        match reads {
            Some(reads) => assert_eq!(fake::reads_since(&scoped.path("state")), reads, "cycle {i}"),
            None => assert!(fake::reads_since(&scoped.path("state")).1 > 0, "cycle {i}: `other` read"),
        }
        assert!(fake::reads_since(&whole.path("state")).1 > 0, "cycle {i}: the whole read reads `other`");
        for file in ["assocs.txt", "defaults.txt", "accounts-descr.txt", "accounts-org.txt", "qos.txt"] {
            let read = |site: &Site| std::fs::read_to_string(site.path("state").join(file)).unwrap();
            assert_eq!(read(&scoped), read(&whole), "cycle {i}: {file} as a whole read leaves it");
        }
        let pending = |site: &Site| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(site.pending()).unwrap()).unwrap()
        };
        assert_eq!(pending(&scoped)["plan"]["steps"], pending(&whole)["plan"]["steps"], "cycle {i}");
        assert!(!addresses(&pending(&scoped)["plan"]).is_empty(), "cycle {i}: the default policy holds changes");
    }
    // the limit ran
    assert!(std::fs::read_to_string(scoped.path("state/assocs.txt")).unwrap().contains("|5|"));
}
