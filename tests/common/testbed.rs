//! The real slurmdbd test bed (`scripts/slurm-testbed up DIR`, then `. DIR/env`): the gate that
//! fails a real-bed test run without `SLURMPLAN_TESTBED` (such tests are ignored with a reason naming their command, so a
//! plain `cargo test` lists them as ignored), and every way a test calls the bed's
//! sacctmgr. Every call here is argv (never a shell), has stdin closed, runs under
//! `timeout 60` and starts with `-i`; callers name `cluster=` wherever the command takes one.
//! Must not hide a bed that does not answer: once `SLURMPLAN_TESTBED` is set, a failing
//! sacctmgr fails the test.

use std::process::{Command, Output, Stdio};

use super::cli::{Run, run, slurmplan_cmd};

/// The gate of every real-bed test: such a test is `#[ignore = "needs a real slurmdbd: ..."]`,
/// so it runs only when asked (`-- --ignored` or `--include-ignored`), and then it must have a
/// bed: without `SLURMPLAN_TESTBED` it fails with the command that starts one, instead of
/// passing without having run (docs/testbed.md, "Skips you can see").
pub fn testbed() {
    match std::env::var("SLURMPLAN_TESTBED") {
        Ok(v) if !v.is_empty() => {}
        _ => panic!(
            "this test needs a real slurmdbd and SLURMPLAN_TESTBED is not set: run \
             `scripts/slurm-testbed up DIR; . DIR/env` first (or `.ci/run`)"
        ),
    }
}

/// The bed's sacctmgr (`SLURMPLAN_SACCTMGR` from `DIR/env`).
pub fn sacctmgr_path() -> String {
    std::env::var("SLURMPLAN_SACCTMGR").unwrap_or_else(|_| "sacctmgr".into())
}

/// Run the bed's sacctmgr with `args` as given (a plan's argv after `sacctmgr`, or a write the
/// test makes); `args` must start with `-i`.
pub fn sacctmgr(args: &[&str]) -> Output {
    assert_eq!(args.first(), Some(&"-i"), "sacctmgr without -i: {args:?}");
    Command::new("timeout")
        .arg("60")
        .arg(sacctmgr_path())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run sacctmgr")
}

/// A write that sets up a test (`-i` is added); it must succeed.
pub fn seed(args: &[&str]) {
    let mut v = vec!["-i"];
    v.extend_from_slice(args);
    let o = sacctmgr(&v);
    assert!(
        o.status.success(),
        "seed `sacctmgr {}` failed: {}{}",
        v.join(" "),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A `-n -P` read (`-i` is added); its rows, sorted.
pub fn show(args: &[&str]) -> Vec<String> {
    let mut v = vec!["-i", "-n", "-P"];
    v.extend_from_slice(args);
    let o = sacctmgr(&v);
    assert!(o.status.success(), "show failed: {}", String::from_utf8_lossy(&o.stderr));
    let mut rows: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect();
    rows.sort();
    rows
}

/// Register a cluster of the test's own, `e2e{name}` and a number from the process id, so
/// that tests and runs do not see each other's objects. Fails (does not skip) when the bed
/// does not answer.
pub fn new_cluster(name: &str) -> String {
    let cluster = format!("e2e{}{}", name, std::process::id() % 10000);
    let o = sacctmgr(&["-i", "-n", "-P", "show", "cluster", "format=Cluster"]);
    assert!(
        o.status.success(),
        "SLURMPLAN_TESTBED is set but sacctmgr does not answer: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    seed(&["add", "cluster", &cluster]);
    cluster
}

/// slurmplan with `args` against the bed's sacctmgr, locks in the temporary directory.
pub fn slurmplan_on_bed(args: &[&str]) -> Command {
    // SLURMPLAN_TRANSPORT=rest (inherited) runs every call through the bed's slurmrestd
    if std::env::var("SLURMPLAN_TRANSPORT").is_ok_and(|t| t == "rest") {
        assert!(
            std::env::var("SLURMPLAN_REST_URL").is_ok_and(|u| !u.is_empty()),
            "SLURMPLAN_TRANSPORT=rest needs a bed with slurmrestd (`up DIR --version 24.11 --rest`)"
        );
    }
    let mut c = slurmplan_cmd(args);
    c.env("SLURMPLAN_SACCTMGR", sacctmgr_path()).env("SLURMPLAN_LOCK_DIR", std::env::temp_dir());
    c
}

/// Run slurmplan against the bed (see `slurmplan_on_bed`).
pub fn slurmplan(args: &[&str]) -> Run {
    run(&mut slurmplan_on_bed(args))
}
