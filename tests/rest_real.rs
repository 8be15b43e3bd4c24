//! `--transport rest` end to end on a real slurmrestd in front of a real slurmdbd (a 24.11 bed
//! started with `scripts/slurm-testbed up DIR --version 24.11 --rest`): the CLI's reads through
//! slurmrestd give the same state and the same plan as its reads through sacctmgr, on a site
//! seeded with sacctmgr (explicit QoS lists, `+`/`-` deltas on accounts and on a user's
//! partition row, FairShare=parent, limits, DefaultAccounts); plans applied through slurmrestd
//! converge (checked with sacctmgr), keep what they do not manage and refuse, before sending
//! anything, a step slurmrestd cannot write; bad tokens, loose token files and plain http to
//! another host are refused with the token never shown.
//! (The differential harness also compares every state it reads, tests/differential/bed.rs.)

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::cli::s;
use common::testbed::{new_cluster, seed, show, slurmplan, testbed};
use slurmplan::sacctmgr::snapshot;

/// The bed's slurmrestd (a 24.11 bed started with `--rest`): the test fails (never skips)
/// without one.
fn rest_bed() -> String {
    let url = std::env::var("SLURMPLAN_REST_URL").unwrap_or_default();
    assert!(
        !url.is_empty() && std::env::var("SLURMPLAN_REST_TOKEN_FILE").is_ok(),
        "this test needs slurmrestd: `scripts/slurm-testbed up DIR --version 24.11 --rest; . DIR/env`"
    );
    url
}

fn qos(name: &str) {
    if !show(&["show", "qos", "format=Name"]).iter().any(|q| q == name) {
        seed(&["add", "qos", name]);
    }
}

#[test]
#[ignore = "needs a real slurmdbd: scripts/slurm-testbed up DIR; . DIR/env; cargo test --test rest_real -- --ignored"]
fn rest_reads_give_the_state_and_the_plan_sacctmgr_reads_give() {
    testbed();
    rest_bed();
    let c = new_cluster("rest");
    let cl = format!("cluster={c}");
    qos("e2e_rq1");
    qos("e2e_rq2");
    seed(&["add", "account", "rst_top", &cl, "parent=root", "qos=normal,e2e_rq1", "defaultqos=e2e_rq1", "fairshare=7"]);
    seed(&["add", "account", "rst_add,rst_del,rst_inh", &cl, "parent=rst_top", "grpjobs=9", "maxwall=90"]);
    seed(&["modify", "account", "where", "name=rst_add", &cl, "set", "qos=+e2e_rq2"]);
    seed(&["modify", "account", "where", "name=rst_del", &cl, "set", "qos=-normal"]);
    seed(&["modify", "account", "where", "name=rst_inh", &cl, "set", "fairshare=parent"]);
    seed(&["add", "user", "rst_u1", "account=rst_inh", &cl, "partition=p1", "grptres=cpu=8,mem=1024"]);
    seed(&["add", "user", "rst_u1", "account=rst_inh", &cl]);
    seed(&["modify", "user", "where", "name=rst_u1", "account=rst_inh", "partition=p1", &cl, "set", "qos=-normal"]);
    seed(&["add", "user", "rst_u2", "account=rst_add", &cl, "defaultaccount=rst_add", "maxjobs=3"]);
    seed(&["add", "user", "rst_u2", "account=rst_del", &cl, "qos=e2e_rq2", "defaultqos=e2e_rq2"]);

    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("sacctmgr"), dir.path().join("rest"));
    let via_sacctmgr = slurmplan(&["dump", "-o", s(&a)]);
    assert_eq!(via_sacctmgr.code, 0, "{}", via_sacctmgr.stderr);
    let via_rest = slurmplan(&["--transport", "rest", "dump", "-o", s(&b)]);
    assert_eq!(via_rest.code, 0, "{}", via_rest.stderr);
    assert!(via_rest.stderr.contains("data parser v0.0.42"), "{}", via_rest.stderr);
    let sa = snapshot::load(&a).unwrap_or_else(|d| panic!("{d:?}"));
    let sb = snapshot::load(&b).unwrap_or_else(|d| panic!("{d:?}"));
    let name = |n: &str| slurmplan::model::Name::from_sacctmgr(n, slurmplan::model::NameKind::Cluster).unwrap();
    let (ca, cb) = (&sa.clusters[&name(&c)], &sb.clusters[&name(&c)]);
    assert_eq!(ca.users, cb.users);
    assert_eq!(ca.defaults, cb.defaults);
    assert_eq!(ca.accounts.iter_sorted(), cb.accounts.iter_sorted());
    // (other clusters and objects may be written by other tests between the two reads)
    let ours = |n: &slurmplan::model::Name| n.as_str().starts_with("rst_") || n.as_str().starts_with("e2e_rq");
    let records = |st: &slurmplan::model::State| {
        st.accounts.iter().filter(|(n, _)| ours(n)).map(|(n, r)| (n.clone(), r.clone())).collect::<Vec<_>>()
    };
    let qos = |st: &slurmplan::model::State| {
        st.qos.iter().filter(|(n, _)| ours(n)).map(|(n, q)| (n.clone(), q.clone())).collect::<Vec<_>>()
    };
    assert_eq!(records(&sa).len(), 4);
    assert_eq!(records(&sa), records(&sb));
    assert_eq!(qos(&sa), qos(&sb));
    // the deltas came through as deltas, not as their effective lists
    let assocs = std::fs::read_to_string(b.join("assocs.txt")).unwrap();
    assert!(
        assocs.lines().any(|l| l.starts_with(&format!("{c}|rst_add|||rst_top|")) && l.contains("|+e2e_rq2|")),
        "{assocs}"
    );
    assert!(
        assocs.lines().any(|l| l.starts_with(&format!("{c}|rst_inh|rst_u1|p1|")) && l.contains("|-normal|")),
        "{assocs}"
    );

    // the same plan either way: a new account, a QoS swap, a limit, a user moved
    let desired = dir.path().join("desired.yaml");
    std::fs::write(
        &desired,
        format!(
            "version: 1\nmanaged:\n  roots: [rst_top]\nclusters:\n  {c}:\n    accounts:\n      rst_top: {{qos: [normal, e2e_rq2], default_qos: e2e_rq2, fairshare: 7}}\n      rst_add: {{parent: rst_top, grp_jobs: 4, users: [rst_u2]}}\n      rst_inh: {{parent: rst_top, fairshare: parent, grp_jobs: 9, max_wall: 90, users: [rst_u1]}}\n      rst_new: {{parent: rst_top, users: [rst_u2]}}\n"
        ),
    )
    .unwrap();
    let args = ["plan", "-d", s(&desired), "--cluster", &c, "--format", "json"];
    let p1 = slurmplan(&args);
    let mut rest_args = vec!["--transport", "rest"];
    rest_args.extend(args);
    let p2 = slurmplan(&rest_args);
    assert!(p1.code == 0 || p1.code == 2, "{}", p1.stderr);
    assert_eq!(p2.code, p1.code, "{}", p2.stderr);
    assert!(p1.stdout.contains("rst_new"), "{}", p1.stdout);
    assert_eq!(p2.stdout, p1.stdout);
    // the deltas must not stay for the tests after this one (an export of the whole bed has no
    // deltas to write them as)
    seed(&["delete", "cluster", "where", &format!("name={c}")]);
}

#[test]
#[ignore = "needs a real slurmdbd: scripts/slurm-testbed up DIR; . DIR/env; cargo test --test rest_real -- --ignored"]
fn rest_refuses_bad_tokens_loose_token_files_and_clear_text() {
    testbed();
    let url = rest_bed();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap");
    let token = std::fs::read_to_string(std::env::var("SLURMPLAN_REST_TOKEN_FILE").unwrap()).unwrap();

    // a token with a wrong signature: slurmrestd refuses it; the token is not shown
    let bad = dir.path().join("bad.token");
    let mut forged = token.trim().to_string();
    let last = if forged.ends_with('A') { 'B' } else { 'A' };
    forged.pop();
    forged.push(last);
    std::fs::write(&bad, &forged).unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = slurmplan(&["--transport", "rest", "--rest-token-file", s(&bad), "dump", "-o", s(&out)]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("HTTP"), "{}", r.stderr);
    for secret in [token.trim(), forged.as_str()] {
        assert!(!r.stderr.contains(secret) && !r.stdout.contains(secret), "the token was shown: {}", r.stderr);
    }
    assert!(!out.exists());

    // a token file others can read is refused before anything is sent
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = slurmplan(&["--transport", "rest", "--rest-token-file", s(&bad), "dump", "-o", s(&out)]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("owner only"), "{}", r.stderr);

    // plain http to another machine would carry the token in clear
    let port = url.rsplit(':').next().unwrap();
    let r =
        slurmplan(&["--transport", "rest", "--rest-url", &format!("http://192.0.2.1:{port}"), "dump", "-o", s(&out)]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("in clear"), "{}", r.stderr);

    // a missing token
    let r =
        slurmplan(&["--transport", "rest", "--rest-token-file", s(&dir.path().join("none")), "dump", "-o", s(&out)]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(!Path::new(&out).exists());
}

/// One desired file per stage of `rest_applies_plans_and_refuses_what_it_cannot_write`.
fn desired_file(dir: &Path, name: &str, c: &str, accounts: &str, qos: &str) -> String {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("version: 1\nmanaged:\n  roots: [rw_top]\nqos:\n  normal: {{}}\n{qos}clusters:\n  {c}:\n    accounts:\n{accounts}"),
    )
    .unwrap();
    s(&p).to_string()
}

#[test]
#[ignore = "needs a real slurmdbd: scripts/slurm-testbed up DIR; . DIR/env; cargo test --test rest_real -- --ignored"]
fn rest_applies_plans_and_refuses_what_it_cannot_write() {
    testbed();
    rest_bed();
    let token = std::fs::read_to_string(std::env::var("SLURMPLAN_REST_TOKEN_FILE").unwrap()).unwrap();
    let c = new_cluster("rw");
    let cl = format!("cluster={c}");
    let dir = tempfile::tempdir().unwrap();
    let converged = |desired: &str| {
        // checked through sacctmgr: nothing left to do
        let r = slurmplan(&["plan", "-d", desired, "--cluster", &c, "--detailed-exitcode"]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    };
    let apply = |desired: &str, journal: &str| {
        let j = dir.path().join(journal);
        let r = slurmplan(&[
            "--transport",
            "rest",
            "apply",
            "-d",
            desired,
            "--cluster",
            &c,
            "--auto-approve",
            "--journal",
            s(&j),
        ]);
        let text = std::fs::read_to_string(&j).unwrap_or_default();
        assert!(!text.contains(token.trim()) && !r.stderr.contains(token.trim()) && !r.stdout.contains(token.trim()));
        (r, text)
    };

    // 1. creates: a QoS, accounts with settings and records, users with a DefaultAccount
    let qos1 = "  e2e_rwq:\n    flags: [DenyOnLimit]\n";
    let d1 = desired_file(
        dir.path(),
        "d1.yaml",
        &c,
        "      rw_top: {description: rest top, organization: hpc}\n      rw_a: {parent: rw_top, qos: [normal, e2e_rwq], default_qos: normal, grp_tres_mins: {cpu: 9000}, max_wall: 90, users: [rw_u1, rw_u2]}\n      rw_b: {parent: rw_top, fairshare: parent, users: [rw_u1]}\n",
        qos1,
    );
    let (r, journal) = apply(&d1, "j1.jsonl");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("via slurmrestd: POST accounts_association/"), "{}", r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    assert!(journal.contains("POST users_association/"), "{journal}");
    converged(&d1);

    // 2. changes, with a limit slurmplan does not manage on the row it changes (it must stay)
    seed(&["modify", "account", "where", "name=rw_a", &cl, "set", "grptresrunmins=cpu=777"]);
    let qos2 = "  e2e_rwq:\n    flags: [DenyOnLimit, NoDecay]\n";
    let d2 = desired_file(
        dir.path(),
        "d2.yaml",
        &c,
        "      rw_top: {description: rest top, organization: hpc}\n      rw_a: {parent: rw_top, description: renamed, qos: [normal, e2e_rwq], default_qos: e2e_rwq, grp_tres_mins: {cpu: 12000}, grp_jobs: 5, users: [rw_u2]}\n      rw_b: {parent: rw_top, users: [rw_u1, rw_u2]}\n",
        qos2,
    );
    let plan = slurmplan(&["--transport", "rest", "plan", "-d", &d2, "--cluster", &c]);
    // the header names the data parser negotiated with the server, and the calls' paths use it
    let first = plan.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("Current state read through slurmrestd at http") && first.contains("(data parser v0.0."),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("Through slurmrestd (--transport rest), apply sends (paths under /slurmdb/v0.0."),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains("GET qos/e2e_rwq, then POST qos/"), "{}", plan.stdout);
    let (r, _) = apply(&d2, "j2.jsonl");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    converged(&d2);
    let kept = show(&["show", "assoc", "where", "account=rw_a", &cl, "user=", "format=GrpTRESRunMins,GrpJobs"]);
    assert_eq!(kept, vec!["cpu=777|5".to_string()]);

    // 3. a step slurmrestd cannot write (back to the parent's QoS list): refused, nothing sent
    let d3 = desired_file(
        dir.path(),
        "d3.yaml",
        &c,
        "      rw_top: {description: rest top, organization: hpc}\n      rw_a: {parent: rw_top, description: renamed, grp_tres_mins: {cpu: 12000}, grp_jobs: 7, users: [rw_u2]}\n      rw_b: {parent: rw_top, users: [rw_u1, rw_u2]}\n",
        qos2,
    );
    let plan = slurmplan(&["--transport", "rest", "plan", "-d", &d3, "--cluster", &c]);
    assert!(plan.stdout.contains("cannot be applied through slurmrestd"), "{}", plan.stdout);
    let (r, _) = apply(&d3, "j3.jsonl");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("nothing was run") && r.stderr.contains("parent's QoS list"), "{}", r.stderr);
    let untouched = show(&["show", "assoc", "where", "account=rw_a", &cl, "user=", "format=GrpJobs"]);
    assert_eq!(untouched, vec!["5".to_string()]);
    let r = slurmplan(&["--transport", "rest", "plan", "-d", &d3, "--cluster", &c, "--format", "script"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("has no curl script") && r.stdout.is_empty(), "{}{}", r.stdout, r.stderr);
    // the same plan through sacctmgr
    let r = slurmplan(&["apply", "-d", &d3, "--cluster", &c, "--auto-approve"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    converged(&d3);

    // 3b. the curl script of a plan (`--format script`): limits, a record, QoS flags, a user
    let qos3 = "  e2e_rwq:\n    flags: [DenyOnLimit]\n";
    let d3s = desired_file(
        dir.path(),
        "d3s.yaml",
        &c,
        "      rw_top: {description: rest top, organization: hpc}\n      rw_a: {parent: rw_top, description: again, grp_tres_mins: {cpu: 15000}, grp_jobs: 8, users: [rw_u2, rw_u3]}\n      rw_b: {parent: rw_top, users: [rw_u1, rw_u2]}\n",
        qos3,
    );
    let r = slurmplan(&["--transport", "rest", "plan", "-d", &d3s, "--cluster", &c, "--format", "script"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains(token.trim()), "the token is in the script");
    let script = dir.path().join("apply.sh");
    std::fs::write(&script, &r.stdout).unwrap();
    let o = std::process::Command::new("sh")
        .arg(&script)
        .env("SLURM_JWT_FILE", std::env::var("SLURMPLAN_REST_TOKEN_FILE").unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    converged(&d3s);
    let kept = show(&["show", "assoc", "where", "account=rw_a", &cl, "user=", "format=GrpTRESRunMins,GrpJobs"]);
    assert_eq!(kept, vec!["cpu=777|8".to_string()]);
    // run again, the script finds nothing to do and stops at its first step (a 304, or no row)
    let o = std::process::Command::new("sh")
        .arg(&script)
        .env("SLURM_JWT_FILE", std::env::var("SLURMPLAN_REST_TOKEN_FILE").unwrap())
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // 4. removals through slurmrestd
    let d4 = desired_file(dir.path(), "d4.yaml", &c, "      rw_top: {description: rest top, organization: hpc}\n", "");
    let (r, _) = apply(&d4, "j4.jsonl");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("via slurmrestd: DELETE associations/?cluster="), "{}", r.stderr);
    converged(&d4);
    seed(&["delete", "cluster", "where", &format!("name={c}")]);
    let _ = seed_ok(&["delete", "qos", "where", "name=e2e_rwq"]);
}

/// A clean-up write that may find nothing to do.
fn seed_ok(args: &[&str]) -> bool {
    let mut v = vec!["-i"];
    v.extend_from_slice(args);
    common::testbed::sacctmgr(&v).status.success()
}
