//! Guards: the mass-deletion guard and `--allow-mass-delete` (plan, `apply -d`, saved plans),
//! `--target` (dependencies, banner, unknown addresses, every address of the example), and the
//! lint codes SP001-SP005 in the text output (insta snapshots) and the plan JSON.

use std::path::{Path, PathBuf};

use slurmplan::diff;
use slurmplan::plan::{self, target};
use slurmplan::sacctmgr::snapshot;

mod common;
use common::*;

fn site_a() -> (PathBuf, PathBuf) {
    let dir = root().join("examples/site-a");
    (dir.join("state"), dir.join("desired.yaml"))
}

fn json(r: &Run) -> serde_json::Value {
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn addresses(v: &serde_json::Value) -> Vec<String> {
    let mut a: Vec<String> =
        v["changes"].as_array().unwrap().iter().map(|c| c["address"].as_str().unwrap().to_string()).collect();
    a.sort();
    a
}

fn lint_codes(v: &serde_json::Value) -> Vec<String> {
    v["lints"]
        .as_array()
        .map(|l| l.iter().map(|x| x["code"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// A snapshot directory with `n` leaf accounts (one user each) under `hpc_bulk` on `big`.
fn bulk_state(dir: &Path, n: usize) -> PathBuf {
    let st = dir.join("state");
    std::fs::create_dir_all(&st).unwrap();
    let cols =
        |c: &str, a: &str, u: &str, p: &str, qos: &str, dq: &str| format!("{c}|{a}|{u}||{p}|1|||||||||||{qos}|{dq}\n");
    let mut assocs = cols("big", "root", "", "", "normal", "");
    assocs += &cols("big", "root", "root", "", "", "");
    assocs += &cols("big", "hpc_bulk", "", "root", "", "");
    let mut defaults = "big|root|root\n".to_string();
    let mut descr = "root|root\nhpc_bulk|bulk\n".to_string();
    for i in 0..n {
        let a = format!("hpc_b{i:02}");
        assocs += &cols("big", &a, "", "hpc_bulk", "", "");
        assocs += &cols("big", &a, &format!("u{i:02}"), "", "", "");
        defaults += &format!("big|u{i:02}|{a}\n");
        descr += &format!("{a}|{a}\n");
    }
    let org: String = descr.lines().map(|l| format!("{}|hpc\n", l.split('|').next().unwrap())).collect();
    std::fs::write(st.join("clusters.txt"), "big\n").unwrap();
    std::fs::write(st.join("assocs.txt"), assocs).unwrap();
    std::fs::write(st.join("defaults.txt"), defaults).unwrap();
    std::fs::write(st.join("accounts-descr.txt"), descr).unwrap();
    std::fs::write(st.join("accounts-org.txt"), org).unwrap();
    std::fs::write(st.join("qos.txt"), "normal||||||Normal QOS default\n").unwrap();
    st
}

const EMPTY_BULK: &str =
    "version: 1\nmanaged:\n  prefixes: [hpc_]\nclusters:\n  big:\n    accounts:\n      hpc_bulk: {}\n";

#[test]
fn mass_delete_is_refused_unless_allowed_and_then_linted() {
    let tmp = tempfile::tempdir().unwrap();
    let st = bulk_state(tmp.path(), 25);
    let d = tmp.path().join("d.yaml");
    std::fs::write(&d, EMPTY_BULK).unwrap();
    let r = slurmplan(&["plan", "--state", s(&st), "-d", s(&d)]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("deletes 25 objects, more than the limit of 20"), "{}", r.stderr);
    assert!(r.stderr.contains("--allow-mass-delete"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
    // nothing is written when refused
    let out = tmp.path().join("plan.json");
    let r = slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "-o", s(&out)]);
    assert_eq!(r.code, 1);
    assert!(!out.exists());
    // allowed: the plan carries SP005 (in JSON and in text)
    let v = json(&slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "--allow-mass-delete", "--format", "json"]));
    assert!(lint_codes(&v).contains(&"SP005".to_string()), "{v:#}");
    let t = slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "--allow-mass-delete", "--color", "never"]);
    assert!(t.stdout.contains("SP005 mass-delete (warning) plan"), "{}", t.stdout);
    // 20 deletes are within the limit: no flag needed, no SP005
    let st20 = bulk_state(&tmp.path().join("twenty"), 20);
    let v = json(&slurmplan(&["plan", "--state", s(&st20), "-d", s(&d), "--format", "json"]));
    assert!(!lint_codes(&v).contains(&"SP005".to_string()));
    assert!(lint_codes(&v).contains(&"SP001".to_string()));
}

#[test]
fn apply_d_checks_the_guard_and_a_saved_plan_was_guarded_when_made() {
    let tmp = tempfile::tempdir().unwrap();
    let st = bulk_state(tmp.path(), 25);
    let d = tmp.path().join("d.yaml");
    std::fs::write(&d, EMPTY_BULK).unwrap();
    let fake = common::cli::dev_bin("slurmplan-fake-sacctmgr");
    let env = [
        ("SLURMPLAN_SACCTMGR", fake.as_path()),
        ("FAKE_SACCTMGR_DIR", st.as_path()),
        ("SLURMPLAN_LOCK_DIR", tmp.path()),
    ];
    let before = std::fs::read_to_string(st.join("assocs.txt")).unwrap();
    let r = slurmplan_env(&["apply", "-d", s(&d), "--auto-approve"], &env);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("--allow-mass-delete"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(st.join("assocs.txt")).unwrap(), before, "nothing applied");
    // a saved plan made with the flag applies as reviewed (the guard ran at plan time; the
    // checksum keeps anyone from adding deletes to it afterwards)
    let planfile = tmp.path().join("plan.json");
    let p = slurmplan_env(&["plan", "-d", s(&d), "--allow-mass-delete", "-o", s(&planfile)], &env);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let tampered = std::fs::read_to_string(&planfile).unwrap().replacen("\"SP005\"", "\"SP000\"", 1);
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, tampered).unwrap();
    let r = slurmplan_env(&["apply", s(&bad)], &env);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("modified after it was written"), "{}", r.stderr);
    let r = slurmplan_env(&["apply", s(&planfile), "--target", "account.big.hpc_b00"], &env);
    assert_eq!(r.code, 64, "{}", r.stderr);
    let r = slurmplan_env(&["apply", s(&planfile)], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
}

#[test]
fn target_plans_the_object_and_what_it_strictly_needs() {
    let (st, d) = site_a();
    let plan_for = |targets: &[&str]| {
        let mut args = vec!["plan", "--state", s(&st), "-d", s(&d), "--format", "json"];
        for t in targets {
            args.push("--target");
            args.push(t);
        }
        let r = slurmplan(&args);
        assert!(
            r.stderr.contains("Warning: resource targeting is in effect; the plan may be incomplete"),
            "{}",
            r.stderr
        );
        json(&r)
    };
    // deleting an account removes its users first, and dave's DefaultAccount moves before that
    let v = plan_for(&["account.rocket.hpc_a_old"]);
    assert_eq!(
        addresses(&v),
        ["account.rocket.hpc_a_old", "default_account.rocket.dave", "user_association.rocket.dave@hpc_a_old"]
    );
    assert!(v["warnings"][0].as_str().unwrap().starts_with("resource targeting is in effect"), "{v:#}");
    // a user's first association brings its DefaultAccount, and the other way round
    for t in ["user_association.rocket.erin@hpc_a_lattice", "default_account.rocket.erin"] {
        let v = plan_for(&[t]);
        assert_eq!(addresses(&v), ["default_account.rocket.erin", "user_association.rocket.erin@hpc_a_lattice"]);
    }
    // the QoS swap brings bob's own DefaultQOS, which would fall outside the new list
    let v = plan_for(&["account.rocket.hpc_a_assembly"]);
    assert_eq!(addresses(&v), ["account.rocket.hpc_a_assembly", "user_association.rocket.bob@hpc_a_assembly"]);
    // independent objects stay independent; targets combine
    let v = plan_for(&["qos.paused", "account.rocket.hpc_a_lattice"]);
    assert_eq!(addresses(&v), ["account.rocket.hpc_a_lattice", "qos.paused"]);
    // a valid address without changes plans nothing
    let r = slurmplan(&[
        "plan",
        "--state",
        s(&st),
        "-d",
        s(&d),
        "--target",
        "account.rocket.hpc_p_physics",
        "--detailed-exitcode",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("target `account.rocket.hpc_p_physics` has no changes"), "{}", r.stderr);
    assert!(r.stdout.contains("No changes"), "{}", r.stdout);
}

#[test]
fn an_unknown_target_is_a_usage_error_with_close_matches() {
    let (st, d) = site_a();
    let r = slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "--target", "account.rocket.hpc_a_olt"]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(r.stderr.contains("unknown target address `account.rocket.hpc_a_olt`"), "{}", r.stderr);
    assert!(r.stderr.contains("close matches: account.rocket.hpc_a_old"), "{}", r.stderr);
    let r = slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "--target", "hpc_a_robo"]);
    assert_eq!(r.code, 64);
    assert!(r.stderr.contains("account.rocket.hpc_a_robo"), "{}", r.stderr);
}

/// Every change of the example, targeted alone, gives a safe plan containing it, and the plan's
/// changes are exactly the selected ones.
#[test]
fn every_address_of_the_example_can_be_targeted_alone() {
    let (st, d) = site_a();
    let current = snapshot::load(&st).unwrap();
    let desired = slurmplan::desired::load_file(&d).unwrap();
    let resolved = slurmplan::desired::resolve::resolve(&desired, &current).unwrap();
    let all = diff::diff(&current, &resolved.state);
    assert!(all.len() > 5);
    for ch in &all {
        let t = target::partial_desired(&current, &resolved.state, &[ch.address()])
            .unwrap_or_else(|e| panic!("{}: {e}", ch.address()));
        assert!(t.selected.contains(&ch.address()));
        let p = plan::make_plan(&current, &t.state, "h").unwrap_or_else(|e| panic!("{}: {e}", ch.address()));
        let mut got: Vec<String> = p.changes.iter().map(|c| c.address.clone()).collect();
        got.sort();
        got.dedup();
        assert_eq!(got, t.selected, "target {}", ch.address());
        assert!(slurmplan::rules::check_state(&t.state).is_empty(), "{}", ch.address());
    }
}

/// SP003: moving an inheriting account under a parent with another QoS list.
const SP003_YAML: &str = r#"version: 1
managed:
  roots: [hpc_customers]
protect: [hpc_c_tartu]
qos:
  normal: {}
  paused: {}
  downscaled: {}
  gpu_long: {}
clusters:
  rocket:
    accounts:
      hpc_customers: {}
      hpc_c_tartu: {parent: hpc_customers}
      hpc_c_taltech: {parent: hpc_customers, qos: [normal, gpu_long], default_qos: normal}
      hpc_p_genomics: {parent: hpc_c_taltech}
      hpc_p_physics: {parent: hpc_c_tartu}
      hpc_p_robotics: {parent: hpc_c_taltech}
      hpc_a_genome-2026: {parent: hpc_p_genomics, qos: [normal, gpu_long], default_qos: normal, users: [alice, bob]}
      hpc_a_assembly: {parent: hpc_p_genomics, qos: [gpu_long, normal], default_qos: normal, users: [carol, {name: bob, default_qos: normal}]}
      hpc_a_lattice: {parent: hpc_p_genomics, qos: [normal], default_qos: normal, users: [frank]}
      hpc_a_robo: {parent: hpc_p_robotics, qos: [normal], default_qos: normal, users: [dave]}
      hpc_a_old: {parent: hpc_p_robotics, qos: [normal], default_qos: normal, users: [dave]}
"#;

#[test]
fn lints_in_text_and_json_are_stable() {
    let (st, d) = site_a();
    let r = slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "--color", "never"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lints = &r.stdout[r.stdout.find("Lints (docs/lints.md):").expect("a lints section")..];
    insta::assert_snapshot!("site_a_lints", lints);
    let v = json(&slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "--format", "json"]));
    assert_eq!(lint_codes(&v), ["SP006", "SP001", "SP002", "SP004"]);
    // SP006 once for the plan, at the first step that deletes an association
    let usage = &v["lints"][0];
    assert_eq!(
        (&usage["name"], &usage["severity"], &usage["address"]),
        (&"delete-loses-usage".into(), &"info".into(), &"plan".into())
    );
    let first = usage["step"].as_u64().unwrap() as usize;
    assert!(v["steps"][first - 1]["argv"].as_array().unwrap().iter().any(|a| a == "delete"), "{v:#}");
    let l = &v["lints"][1];
    assert_eq!(l["name"], "delete-account-with-users");
    assert_eq!(l["severity"], "warning");
    assert_eq!(l["address"], "account.rocket.hpc_a_old");
    let step = l["step"].as_u64().unwrap() as usize;
    assert!(v["steps"][step - 1]["argv"].as_array().unwrap().iter().any(|a| a == "account"), "{v:#}");

    let tmp = tempfile::tempdir().unwrap();
    let d3 = tmp.path().join("sp003.yaml");
    std::fs::write(&d3, SP003_YAML).unwrap();
    let r = slurmplan(&["plan", "--state", s(&st), "-d", s(&d3), "--color", "never"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lints = &r.stdout[r.stdout.find("Lints (docs/lints.md):").expect("a lints section")..];
    insta::assert_snapshot!("reparent_lints", lints);
    assert!(lints.contains("SP003 reparent-changes-inherited-qos"), "{lints}");
}

#[test]
fn plans_without_lints_still_parse_and_old_plan_files_too() {
    // a plan JSON without the `lints` key (older versions) deserialises
    let (st, d) = site_a();
    let mut v = json(&slurmplan(&["plan", "--state", s(&st), "-d", s(&d), "--format", "json"]));
    v.as_object_mut().unwrap().remove("lints");
    let p = serde_json::from_value::<plan::file::schema::FilePlan>(v).unwrap().into_plan();
    assert!(p.lints.is_empty());
    // and a plan without lints does not write the key
    let text = plan::file::to_json(&p);
    assert!(!text.contains("\"lints\""));
}
