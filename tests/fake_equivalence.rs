//! The fake sacctmgr (`slurmplan-fake-sacctmgr`) against a REAL 22.05 slurmdbd: the same
//! commands, on the same names, must give byte-identical stdout, stderr and exit codes.
//! ignored (with the command in the reason) and gated like `e2e_real.rs` (run with `-- --ignored`; without
//! `SLURMPLAN_TESTBED` it then fails; set -> the test bed must answer). The real sacctmgr is `SLURMPLAN_SACCTMGR`. The test uses its own cluster, QoS and
//! user names, so it does not disturb other tests. Must not compare the fake with itself or
//! with the rules model: every command runs on both, and only real output is the reference.

mod common;

use std::path::Path;
use std::process::Command;

use common::cli::{Run, run, slurmplan_cmd};
use common::testbed::{sacctmgr_path, testbed};

/// Run a sacctmgr (real or fake) with `args` as given, under `timeout 60`.
fn sacctmgr_run(program: &str, args: &[String], fake_dir: Option<&Path>) -> Run {
    let mut c = Command::new("timeout");
    c.arg("60").arg(program).args(args);
    if let Some(d) = fake_dir {
        c.env("FAKE_SACCTMGR_DIR", d);
    }
    run(&mut c)
}

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_string).collect()
}

#[test]
#[ignore = "needs a real slurmdbd: scripts/slurm-testbed up DIR; . DIR/env; cargo test --test fake_equivalence -- --ignored"]
fn fake_answers_like_real_22_05() {
    testbed();
    if std::env::var("SLURMPLAN_TESTBED_VERSION").is_ok_and(|v| v != "22.05") {
        eprintln!("skipped: the fake reproduces Slurm 22.05 output; this test bed runs another version");
        return;
    }
    let real = sacctmgr_path();
    let fake = common::cli::dev_bin("slurmplan-fake-sacctmgr");
    let fake = fake.to_str().expect("utf-8 path");
    let id = std::process::id() % 100000;
    let c = format!("fakeeq{id}");
    let (qa, qb) = (format!("feqa{id}"), format!("feqb{id}"));
    let (ua, ub) = (format!("feua{id}"), format!("feub{id}"));
    let (uc, ud) = (format!("feuc{id}"), format!("feud{id}"));

    let v = sacctmgr_run(&real, &words("-V"), None);
    assert_eq!(v.code, 0, "SLURMPLAN_TESTBED is set but sacctmgr does not answer: {}", v.stderr);
    assert_eq!(sacctmgr_run(fake, &words("-V"), Some(Path::new("/nonexistent"))).stdout, v.stdout);
    let setup = sacctmgr_run(&real, &words(&format!("-i add cluster {c}")), None);
    assert_eq!(setup.code, 0, "{setup:?}");

    // seed the fake from a dump of the real one
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("state");
    let d = run(slurmplan_cmd(&["dump", "-o", snap.to_str().unwrap()]).env("SLURMPLAN_SACCTMGR", &real));
    assert!(d.code == 0, "{}", d.stderr);

    let scenario = [
        format!("-i add qos {qa},{qb}"),
        format!("-i add account fe_top cluster={c} parent=root description=Top organization=Org"),
        format!("-i add account fe_pa,fe_pb,fe_pc cluster={c} parent=fe_top qos=normal,{qa} defaultqos=normal"),
        format!("-i add user {ua},{ub} account=fe_pa cluster={c}"),
        format!("-i add user {ua} account=fe_pb cluster={c} GrpSubmitJobs=2"),
        // several accounts at once, naming the new users' default (listed last by 22.05)
        // (on accounts of their own: the fake lists several users in another order than 22.05)
        format!("-i add account fe_pd,fe_pe cluster={c} parent=fe_top"),
        format!("-i add user {uc},{ud} account=fe_pe,fe_pd cluster={c} defaultaccount=fe_pe"),
        // QoS/DefaultQOS swap in one command: lists the users that inherit it
        format!("-i modify account where name=fe_pa cluster={c} set qos={qa} defaultqos={qa}"),
        format!("-i modify account where name=fe_pa cluster={c} set GrpSubmitJobs=0"),
        format!("-i modify qos where name={qb} set GrpSubmitJobs=4"),
        format!("-i modify user where name={ua} account=fe_pb cluster={c} partition= set defaultqos={qa}"),
        format!("-i modify user where name={ua} cluster={c} set defaultaccount=fe_pb"),
        // not associated with the new default account: exit 1
        format!("-i modify user where name={ub} cluster={c} set defaultaccount=fe_pb"),
        format!("-i delete user where name={ua} account=fe_pa cluster={c} partition="),
        format!("-i delete account where name=fe_pc cluster={c}"),
        // the 22.05 DefaultQOS rejection: stderr, exit 0, nothing changed
        format!("-i modify account where name=fe_pb cluster={c} set qos={qb}"),
        format!("-i modify account where name=fe_pb cluster={c} set description=Renamed"),
        format!("-i modify account where name=fe_pb cluster={c} set parent=root"),
        // no-ops and missing objects
        format!("-i add account fe_pa cluster={c} parent=fe_top"),
        format!("-i modify account where name=fe_nosuch cluster={c} set GrpJobs=3"),
        format!("-i delete account where name=fe_nosuch cluster={c}"),
        format!("-i add account fe_x cluster={c} parent=fe_nosuch"),
    ];
    let mut mismatches = Vec::new();
    for cmd in &scenario {
        let args = words(cmd);
        let r = sacctmgr_run(&real, &args, None);
        let f = sacctmgr_run(fake, &args, Some(&snap));
        if r != f {
            mismatches.push(format!("`sacctmgr {cmd}`\n  real: {r:?}\n  fake: {f:?}"));
        }
    }
    // the states agree afterwards too
    let snap2 = dir.path().join("after");
    let d = run(slurmplan_cmd(&["dump", "-o", snap2.to_str().unwrap()]).env("SLURMPLAN_SACCTMGR", &real));
    assert!(d.code == 0, "{}", d.stderr);
    let real_state = slurmplan::sacctmgr::snapshot::load(&snap2).unwrap();
    let fake_state = slurmplan::sacctmgr::snapshot::load(&snap).unwrap();
    let cl = |s: &slurmplan::model::State| s.clusters.iter().find(|(k, _)| k.as_str() == c).map(|(_, v)| v.clone());
    if cl(&real_state) != cl(&fake_state) {
        mismatches.push(format!("cluster {c} differs:\n  real: {:?}\n  fake: {:?}", cl(&real_state), cl(&fake_state)));
    }
    // a per-cluster read (how slurmplan reads associations) prints that cluster's rows alone.
    // The same rows, compared in order: the fake keeps rows in its own (key) order after its
    // writes, not in slurmdbd's alphabetical hierarchy (the parser does not rely on either).
    fn sorted(r: &Run) -> (i32, Vec<&str>, &str) {
        let mut lines: Vec<&str> = r.stdout.lines().collect();
        lines.sort_unstable();
        (r.code, lines, r.stderr.as_str())
    }
    use slurmplan::sacctmgr::reads::{Filter, READS, USERS_SEEN};
    for r in READS.iter().filter(|r| r.per_cluster) {
        let args = r.args_for(Filter::Cluster(&c));
        let (real_read, fake_read) = (sacctmgr_run(&real, &args, None), sacctmgr_run(fake, &args, Some(&snap)));
        assert!(real_read.code == 0 && !real_read.stdout.is_empty(), "{real_read:?}");
        if sorted(&real_read) != sorted(&fake_read) {
            mismatches.push(format!("`sacctmgr {}`\n  real: {real_read:?}\n  fake: {fake_read:?}", args.join(" ")));
        }
    }
    // some users' associations on every cluster (how a plan of some clusters asks whether a
    // user has associations elsewhere), one user with none: the same rows (slurmplan takes
    // them as a set; sacctmgr groups them by user in an order no read shows)
    let users = [ua.clone(), ub.clone(), uc.clone(), ud.clone(), format!("fenone{id}")];
    let args = USERS_SEEN.args_for(Filter::Users(&users));
    let (real_read, fake_read) = (sacctmgr_run(&real, &args, None), sacctmgr_run(fake, &args, Some(&snap)));
    assert!(real_read.code == 0 && real_read.stdout.lines().count() >= 4, "{real_read:?}");
    if sorted(&real_read) != sorted(&fake_read) {
        mismatches.push(format!("`sacctmgr {}`\n  real: {real_read:?}\n  fake: {fake_read:?}", args.join(" ")));
    }
    assert!(mismatches.is_empty(), "{} mismatch(es):\n{}", mismatches.len(), mismatches.join("\n"));
}
