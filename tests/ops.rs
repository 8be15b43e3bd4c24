//! The operations commands end to end: `drift` (exit codes, four formats, Prometheus text-format
//! rules), `doctor` (each finding on snapshots in real-output shapes, the repair plan replayed
//! on the rule model) and `export` (export -> plan is empty; a property test on random states).
//! Offline (snapshots and the rules model): must not stand in for the real-slurmdbd tests of
//! tests/e2e_real.rs, and must not touch a real sacctmgr.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use slurmplan::desired::export::{ExportOptions, export};
use slurmplan::model::{Name, NameKind, State};
use slurmplan::rules::RuleModel;
use slurmplan::sacctmgr::parse::{RawReads, Source, parse_state};
use slurmplan::sacctmgr::reads;
use slurmplan::sacctmgr::snapshot;

mod common;
use common::choices::Ch;
use common::prometheus::validate_prometheus;
use common::*;

fn site_a() -> (PathBuf, PathBuf) {
    let dir = root().join("examples/site-a");
    (dir.join("state"), dir.join("desired.yaml"))
}

/// Snapshot directories to adopt: the example and the real-output-shape snapshots.
fn healthy_snapshots() -> Vec<PathBuf> {
    let mut v = vec![root().join("examples/site-a/state")];
    let dir = root().join("tests/data/snapshots");
    let mut more: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    more.sort();
    v.extend(more);
    v
}

/// Export a snapshot to a file (in `tmp`) with the CLI.
fn export_to(tmp: &Path, state: &Path, extra: &[&str]) -> PathBuf {
    let mut args = vec!["export", "--state", s(state)];
    args.extend(extra);
    let r = slurmplan(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = tmp.join(format!("export-{}.yaml", state.file_name().unwrap().to_str().unwrap()));
    std::fs::write(&out, &r.stdout).unwrap();
    out
}

// ---------------------------------------------------------------------------------------------
// Prometheus text format (exposition format 0.0.4), as node_exporter's textfile collector reads it
// ---------------------------------------------------------------------------------------------
#[test]
fn the_prometheus_validator_rejects_what_node_exporter_rejects() {
    let ok = "# HELP m x\n# TYPE m gauge\nm{a=\"1\"} 1\nm{a=\"2\"} 2.5\n";
    assert!(validate_prometheus(ok).is_ok());
    for bad in [
        "m 1\n",                                                                                     // no HELP/TYPE
        "# HELP m x\n# TYPE m gauge\nm{a=\"1\"} x\n",                                                // value
        "# HELP m x\n# TYPE m gauge\nm{a=\"1\"} 1\nm{a=\"1\"} 2\n",                                  // duplicate
        "# HELP m x\n# TYPE m gauge\nm{a=1} 1\n",                                                    // unquoted
        "# HELP m x\n# TYPE m gauge\nm{1a=\"1\"} 1\n",                                               // label name
        "# HELP 1m x\n# TYPE 1m gauge\n1m 1\n",                                                      // metric name
        "# HELP m x\n# TYPE m gauge\nm 1\n# TYPE m gauge\n", // TYPE after samples
        "# HELP m x\n# TYPE m gauge\nm 1",                   // no final newline
        "# HELP m x\n# TYPE m gauge\n# HELP n y\n# TYPE n gauge\nm{a=\"1\"} 1\nn 1\nm{a=\"2\"} 1\n", // split
    ] {
        assert!(validate_prometheus(bad).is_err(), "accepted: {bad:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// drift
// ---------------------------------------------------------------------------------------------

/// The timestamp sample, replaced for snapshots.
fn stable(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with("slurmplan_drift_last_run_timestamp_seconds ") {
                "slurmplan_drift_last_run_timestamp_seconds [TIMESTAMP]".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn drift_exit_codes_follow_the_contract() {
    let (state, desired) = site_a();
    let tmp = tempfile::tempdir().unwrap();
    // drifted: 2, report on stdout
    let r = slurmplan(&["drift", "-d", s(&desired), "--state", s(&state)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.ends_with(&format!("12 objects drifted from {}\n", s(&desired))), "{}", r.stdout);
    // in sync: silent (stdout AND stderr, cron mails both) and 0
    let synced = export_to(tmp.path(), &state, &[]);
    for format in ["text", "json", "csv"] {
        let r = slurmplan(&["drift", "-d", s(&synced), "--state", s(&state), "--format", format]);
        assert_eq!(r.code, 0, "{format}: {}", r.stderr);
        assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("", ""), "{format} is not silent");
    }
    // prometheus still writes its metrics, drift 0
    let r = slurmplan(&["drift", "-d", s(&synced), "--state", s(&state), "--format", "prometheus"]);
    assert_eq!(r.code, 0);
    let series = validate_prometheus(&r.stdout).unwrap();
    assert_eq!(series["slurmplan_drift_last_run_success[]"], 1.0);
    assert!(series.iter().filter(|(k, _)| k.starts_with("slurmplan_drift_objects")).all(|(_, v)| *v == 0.0));
    assert_eq!(series.keys().filter(|k| k.starts_with("slurmplan_drift_objects")).count(), 5);
    // errors: 1
    let r = slurmplan(&["drift", "-d", s(&tmp.path().join("nope.yaml")), "--state", s(&state)]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.is_empty());
    let r = slurmplan(&["drift", "-d", s(&desired), "--state", s(&tmp.path().join("nodir"))]);
    assert_eq!(r.code, 1);
    // on error, --output with prometheus still writes success 0 (atomically, no temp file left)
    let prom = tmp.path().join("slurmplan.prom");
    std::fs::write(&prom, "old\n").unwrap();
    let r = slurmplan(&[
        "drift",
        "-d",
        s(&tmp.path().join("nope.yaml")),
        "--state",
        s(&state),
        "--format",
        "prometheus",
        "--output",
        s(&prom),
    ]);
    assert_eq!(r.code, 1);
    let text = std::fs::read_to_string(&prom).unwrap();
    let series = validate_prometheus(&text).unwrap();
    assert_eq!(series["slurmplan_drift_last_run_success[]"], 0.0);
    assert!(series.contains_key("slurmplan_drift_last_run_timestamp_seconds[]"));
    // with --output the report goes to the file, nothing on stdout
    let r =
        slurmplan(&["drift", "-d", s(&desired), "--state", s(&state), "--format", "prometheus", "--output", s(&prom)]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.is_empty());
    let series = validate_prometheus(&std::fs::read_to_string(&prom).unwrap()).unwrap();
    assert_eq!(series["slurmplan_drift_objects[(\"cluster\", \"rocket\"), (\"kind\", \"account\")]"], 5.0);
    assert_eq!(series["slurmplan_drift_last_run_success[]"], 1.0);
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "temp files left: {left:?}");
}

#[test]
fn drift_reports_in_every_format_are_stable() {
    // relative paths: the desired file's name is part of the report
    for format in ["text", "json", "csv", "prometheus"] {
        let r = slurmplan(&[
            "drift",
            "-d",
            "examples/site-a/desired.yaml",
            "--state",
            "examples/site-a/state",
            "--format",
            format,
        ]);
        assert_eq!(r.code, 2, "{format}: {}", r.stderr);
        assert!(r.stderr.is_empty(), "{format}: warnings are plan's business: {}", r.stderr);
        insta::assert_snapshot!(format!("drift_site_a_{format}"), stable(&r.stdout));
    }
}

#[test]
fn drift_formats_agree_with_each_other() {
    let (state, _) = site_a();
    let run = |f: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_slurmplan"))
            .current_dir(root())
            .args(["drift", "-d", "examples/site-a/desired.yaml", "--state", s(&state), "--format", f])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(json["format_version"], 1);
    let objects = json["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 12);
    // csv: one row per drifted field (+ an `exists` row for missing/extra objects)
    let csv_text = run("csv");
    let mut rdr = csv::Reader::from_reader(csv_text.as_bytes());
    assert_eq!(rdr.headers().unwrap().iter().collect::<Vec<_>>(), ["cluster", "object", "field", "current", "desired"]);
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    let expected: usize = objects
        .iter()
        .map(|o| {
            o["fields"].as_array().unwrap().len() + usize::from(o["action"] == "create" || o["action"] == "delete")
        })
        .sum();
    assert_eq!(rows.len(), expected);
    assert!(rows.iter().any(
        |r| r.iter().collect::<Vec<_>>() == ["rocket", "account.hpc_a_assembly", "default_qos", "normal", "paused"]
    ));
    // prometheus counts = json objects per (cluster, kind)
    let series = validate_prometheus(&run("prometheus")).unwrap();
    let total: f64 = series.iter().filter(|(k, _)| k.starts_with("slurmplan_drift_objects")).map(|(_, v)| v).sum();
    assert_eq!(total as usize, objects.len());
    // text: one line per object plus the closing line
    assert_eq!(run("text").lines().count(), objects.len() + 1);
}

// ---------------------------------------------------------------------------------------------
// doctor
// ---------------------------------------------------------------------------------------------

fn doctor_json(dir: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["doctor", "--state", s(dir), "--format", "json"];
    args.extend(extra);
    let r = slurmplan(&args);
    (r.code, serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr)))
}

fn codes(v: &serde_json::Value) -> Vec<(String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap().to_string(), f["object"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn doctor_finds_every_default_account_problem() {
    let dir = root().join("tests/data/doctor/defaults");
    let (code, v) = doctor_json(&dir, &[]);
    assert_eq!(code, 2);
    assert_eq!(
        codes(&v),
        [
            ("dangling-default", "default_account.c1.u1"),
            ("default-account-missing", "default_account.c1.u2"),
            ("default-not-associated", "default_account.c1.u3"),
            ("default-without-association", "default_account.c1.u9"),
            ("orphan-account", "account_record.gone"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    for f in v["findings"].as_array().unwrap() {
        for k in ["message", "why", "fix"] {
            assert!(!f[k].as_str().unwrap().is_empty(), "{f}");
        }
    }
    assert!(v["findings"][0]["why"].as_str().unwrap().contains("without -A are rejected"));
    // the suggested move follows the rule: first association by name (chem < phys) ...
    assert!(v["findings"][0]["fix"].as_str().unwrap().contains("set defaultaccount=chem"));
    // ... unless the fallback is one of the user's associations
    let (_, v) = doctor_json(&dir, &["--default-account", "phys"]);
    assert!(v["findings"][0]["fix"].as_str().unwrap().contains("set defaultaccount=phys"));
    assert_eq!(v["summary"]["dangling-default"], 1);
}

#[test]
fn doctor_finds_qos_problems_and_orphans() {
    let (code, v) = doctor_json(&root().join("tests/data/doctor/qos"), &[]);
    assert_eq!(code, 2);
    assert_eq!(
        codes(&v),
        [
            ("default-qos-outside", "account.c1.sub2"),
            ("default-qos-outside", "user_association.c1.u2@sub1"),
            ("missing-qos", "account.c1.x1"),
            ("missing-qos", "user_association.c1.u4@x1"),
            ("orphan-account", "account_record.retired"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // u3 under sub2 inherits sub2's problem: reported once, where it is set
    assert!(!v.to_string().contains("u3@sub2"));
    let text = slurmplan(&["doctor", "--state", s(&root().join("tests/data/doctor/qos"))]);
    assert_eq!(text.code, 2);
    insta::assert_snapshot!("doctor_qos_text", text.stdout);
}

#[test]
fn doctor_is_silent_and_zero_on_a_healthy_state() {
    for dir in healthy_snapshots() {
        let r = slurmplan(&["doctor", "--state", s(&dir)]);
        assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}: {}", dir.display(), r.stdout);
    }
    let r = slurmplan(&["doctor", "--state", "/nonexistent"]);
    assert_eq!(r.code, 1);
    let r = slurmplan(&["doctor", "--state", s(&root().join("examples/site-a/state")), "--default-account", "a,b"]);
    assert_eq!(r.code, 64);
}

/// The repair plan is an ordinary plan file; replayed on the rule model it removes every
/// DefaultAccount finding it can fix, and leaves users without associations alone.
#[test]
fn doctor_repair_plan_applies_in_the_model_and_fixes_every_dangling_default() {
    let dir = root().join("tests/data/doctor/defaults");
    let tmp = tempfile::tempdir().unwrap();
    for fallback in [None, Some("phys"), Some("chem"), Some("nosuch")] {
        let out = tmp.path().join("repair.json");
        let mut args = vec!["doctor", "--state", s(&dir), "-o", s(&out)];
        if let Some(f) = fallback {
            args.extend(["--default-account", f]);
        }
        let r = slurmplan(&args);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("repair plan saved to"), "{}", r.stderr);
        // `show` reads it like any plan
        let shown = slurmplan(&["show", s(&out), "--format", "script"]);
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        let plan = slurmplan::plan::file::read(&out).unwrap();
        let current = snapshot::load(&dir).unwrap();
        assert_eq!(plan.current_fingerprint, slurmplan::model::fingerprint::fingerprint(&current));
        assert!(plan.steps.iter().all(|s| s.argv.contains(&"cluster=c1".to_string())));
        let mut sim = RuleModel::new(current.clone());
        for step in &plan.steps {
            sim.apply(&step.command).unwrap_or_else(|e| panic!("step {}: {e}", step.number));
        }
        let after = slurmplan::doctor::examine(&sim.state, None);
        let left: Vec<&str> = after.iter().map(|f| f.code).collect();
        assert_eq!(left, ["default-without-association", "orphan-account"], "{fallback:?}");
        let c1 = &sim.state.clusters["c1"];
        let want_u1 = if fallback == Some("phys") { "phys" } else { "chem" };
        assert_eq!(c1.defaults["u1"].as_str(), want_u1, "{fallback:?}");
        assert_eq!(c1.defaults["u2"].as_str(), "phys");
        assert_eq!(c1.defaults["u3"].as_str(), "phys");
        // nothing invented for u9, nothing else touched
        assert_eq!(c1.users, current.clusters["c1"].users);
        assert_eq!(c1.defaults["u9"].as_str(), "phys");
        assert_eq!(sim.state.clusters["c2"], current.clusters["c2"]);
    }
    // a healthy state gives an empty repair plan
    let out = tmp.path().join("empty.json");
    let r = slurmplan(&["doctor", "--state", s(&root().join("examples/site-a/state")), "-o", s(&out)]);
    assert_eq!(r.code, 0);
    assert!(slurmplan::plan::file::read(&out).unwrap().is_empty());
}

/// The repair plan also repairs every DefaultQOS outside its list (own one cleared when the
/// inherited one is valid, else the first QoS of the list); replayed on the rule model, only
/// the findings that say why they are not repaired are left.
#[test]
fn doctor_repair_plan_repairs_default_qos_findings() {
    let dir = root().join("tests/data/doctor/qos");
    let (_, v) = doctor_json(&dir, &[]);
    for f in v["findings"].as_array().unwrap() {
        let repair = f["repair"].as_str().unwrap();
        assert_eq!(f["repairable"].as_bool().unwrap(), !repair.starts_with("not in the repair plan: "), "{f}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("repair.json");
    let r = slurmplan(&["doctor", "--state", s(&dir), "-o", s(&out)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("2 DefaultQOS repair(s)"), "{}", r.stderr);
    let plan = slurmplan::plan::file::read(&out).unwrap();
    let argv: Vec<String> = plan.steps.iter().map(|s| s.argv[1..].join(" ")).collect();
    assert!(
        argv.contains(&"-i modify account where name=sub2 cluster=c1 set defaultqos=normal".to_string()),
        "{argv:#?}"
    );
    assert!(
        argv.contains(&"-i modify user where name=u2 account=sub1 cluster=c1 partition= set defaultqos=-1".to_string()),
        "{argv:#?}"
    );
    let current = snapshot::load(&dir).unwrap();
    let mut sim = RuleModel::new(current);
    for step in &plan.steps {
        sim.apply(&step.command).unwrap_or_else(|e| panic!("step {}: {e}", step.number));
    }
    let left: Vec<&str> = slurmplan::doctor::examine(&sim.state, None).iter().map(|f| f.code).collect();
    assert_eq!(left, ["missing-qos", "missing-qos", "orphan-account"]);
}

// ---------------------------------------------------------------------------------------------
// export
// ---------------------------------------------------------------------------------------------

#[test]
fn export_then_plan_is_empty_on_every_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    for state in healthy_snapshots() {
        for extra in [&[][..], &["--managed-prefix", "hpc_a_"][..], &["--managed-root", "phys"][..]] {
            let file = export_to(tmp.path(), &state, extra);
            let r = slurmplan(&["plan", "-d", s(&file), "--state", s(&state), "--detailed-exitcode"]);
            assert_eq!(r.code, 0, "{} {extra:?}: {}\n{}", state.display(), r.stdout, r.stderr);
            assert!(r.stdout.contains("No changes"), "{}", r.stdout);
            let v = slurmplan(&["validate", s(&file), "--state", s(&state)]);
            assert_eq!(v.code, 0, "{}", v.stderr);
        }
    }
    // --cluster limits the file to one cluster, and unknown clusters are errors
    let real = root().join("tests/data/snapshots/real-mixed");
    let r = slurmplan(&["export", "--state", s(&real), "--cluster", "testcl2"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("testcl2:") && !r.stdout.contains("  testcl:"), "{}", r.stdout);
    let r = slurmplan(&["export", "--state", s(&real), "--cluster", "nosuch"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("cluster `nosuch`"), "{}", r.stderr);
}

#[test]
fn export_of_site_a_is_stable() {
    let r = slurmplan(&["export", "--state", s(&root().join("examples/site-a/state"))]);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!("export_site_a", r.stdout);
}

#[test]
fn export_warns_about_what_the_desired_format_cannot_hold() {
    let dir = root().join("tests/data/doctor/qos");
    let r = slurmplan(&["export", "--state", s(&dir)]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("warning[qos-delta-flattened]: account `sub2` on `c1`"), "{}", r.stderr);
    assert!(r.stderr.contains("warning[missing-qos]"), "{}", r.stderr);
    let r = slurmplan(&["export", "--state", s(&root().join("tests/data/doctor/defaults"))]);
    assert!(r.stderr.contains("warning[dangling-default]: user `u1` on `c1` has no DefaultAccount"), "{}", r.stderr);
}

// ---- property: random states -> export -> load -> resolve -> diff is empty -------------------

const ACCOUNTS: [&str; 9] = ["a1", "a2", "p_x", "p_y", "1234", "true", "null", "x.y", "a-b"];
const USERS: [&str; 5] = ["u1", "u2", "Bob", "yes", "007"];
const QOS: [&str; 4] = ["normal", "hi", "lo", "no"];
const TEXTS: [&str; 8] = ["", "x", "Upper Case", "physics dept", "a|b", "it`s", "a: b # c", "back\\slash"];

/// Association cells (Share .. DefaultQOS) with the QoS list drawn from `pool`.
fn assoc_cells(ch: &mut Ch, pool: &[&str]) -> String {
    let share = ["1", "1", "10", "parent", "0"][ch.below(5)];
    let num = |ch: &mut Ch| if ch.chance(20) { ch.below(50).to_string() } else { String::new() };
    let tres = |ch: &mut Ch| {
        let mut parts = Vec::new();
        if ch.chance(30) {
            parts.push(format!("cpu={}", ch.below(1000)));
        }
        if ch.chance(20) {
            parts.push(["gres/gpu=2", "gres/gpu:a100=1"][ch.below(2)].to_string());
        }
        if ch.chance(20) {
            parts.push(["mem=1.50G", "mem=512M", "mem=2T"][ch.below(3)].to_string());
        }
        parts.sort();
        parts.join(",")
    };
    let wall = |ch: &mut Ch| {
        if ch.chance(20) { ["01:30:00", "2-00:00:00", "00:05:00"][ch.below(3)].to_string() } else { String::new() }
    };
    let (qos, def) = if ch.chance(40) {
        let mut set: BTreeSet<&str> = BTreeSet::new();
        set.insert(pool[ch.below(pool.len())]);
        if ch.chance(50) {
            set.insert(pool[ch.below(pool.len())]);
        }
        let list: Vec<&str> = set.iter().copied().collect();
        let def = if ch.chance(60) { list[ch.below(list.len())].to_string() } else { String::new() };
        (list.join(","), def)
    } else {
        (String::new(), String::new())
    };
    format!(
        "{share}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{qos}|{def}",
        num(ch),
        num(ch),
        tres(ch),
        tres(ch),
        wall(ch),
        num(ch),
        num(ch),
        tres(ch),
        tres(ch),
        wall(ch)
    )
}

/// A random snapshot, written as sacctmgr's text and parsed like a real one.
fn gen_state(data: &[u8]) -> State {
    let mut ch = Ch { data, i: 0 };
    let clusters: Vec<&str> = if ch.chance(50) { vec!["c1", "c2"] } else { vec!["c1"] };
    let mut assocs = Vec::new();
    let mut defaults = Vec::new();
    let mut used: BTreeSet<&str> = BTreeSet::new();
    for c in &clusters {
        assocs.push(format!("{c}|root||||{}", assoc_cells(&mut ch, &["normal"])));
        assocs.push(format!("{c}|root|root|||1{}", "|".repeat(12)));
        defaults.push(format!("{c}|root|root"));
        let mut tree: Vec<&str> = vec!["root"];
        for _ in 0..ch.below(7) {
            let a = ch.one(&ACCOUNTS);
            if tree.contains(&a) {
                continue;
            }
            let parent = tree[ch.below(tree.len())];
            assocs.push(format!("{c}|{a}|||{parent}|{}", assoc_cells(&mut ch, &QOS)));
            tree.push(a);
            used.insert(a);
        }
        let mut user_accts: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for _ in 0..ch.below(8) {
            let u = ch.one(&USERS);
            let a = tree[ch.below(tree.len())];
            let part = if ch.chance(20) { "gpu" } else { "" };
            let key = format!("{c}|{a}|{u}|{part}|");
            if assocs.iter().any(|l| l.starts_with(&key)) {
                continue;
            }
            assocs.push(format!("{key}|{}", assoc_cells(&mut ch, &QOS)));
            user_accts.entry(u).or_default().push(a);
        }
        for (u, accts) in user_accts {
            defaults.push(format!("{c}|{u}|{}", accts[ch.below(accts.len())]));
        }
    }
    used.insert("root");
    if ch.chance(30) {
        used.insert("orphan");
    }
    let descr: Vec<String> = used.iter().map(|a| format!("{a}|{}", ch.one(&TEXTS))).collect();
    let org: Vec<String> = used.iter().map(|a| format!("{a}|{}", ch.one(&TEXTS))).collect();
    let qos: Vec<String> = QOS
        .iter()
        .map(|q| {
            let flags = ["", "DenyOnLimit", "DenyOnLimit,NoDecay"][ch.below(3)];
            let gtm = if ch.chance(30) { "cpu=100,mem=2G" } else { "" };
            let gsj = if ch.chance(30) { "0" } else { "" };
            let mw = if ch.chance(30) { "1-00:00:00" } else { "" };
            format!("{q}|{flags}|{gtm}||{gsj}|{mw}|{}", ch.one(&TEXTS))
        })
        .collect();
    let lines = |v: Vec<String>| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    let raw = RawReads {
        clusters: Source::new(reads::CLUSTERS, lines(clusters.iter().map(|c| c.to_string()).collect())),
        assocs: Source::new(reads::ASSOCS, lines(assocs)),
        defaults: Source::new(reads::DEFAULTS, lines(defaults)),
        accounts_descr: Source::new(reads::ACCOUNTS_DESCR, lines(descr)),
        accounts_org: Source::new(reads::ACCOUNTS_ORG, lines(org)),
        qos: Source::new(reads::QOS, lines(qos)),
    };
    parse_state(&raw).unwrap_or_else(|d| panic!("generator wrote an unparsable snapshot: {d:?}"))
}

fn gen_options(data: &[u8]) -> ExportOptions {
    let mut ch = Ch { data, i: data.len().saturating_sub(3) };
    let name = |s: &str| Name::keep_case(s, NameKind::Account).unwrap();
    match ch.below(4) {
        0 => ExportOptions::default(),
        1 => ExportOptions { prefixes: vec!["p_".into(), "a".into()], ..Default::default() },
        2 => ExportOptions { roots: vec![name(ch.one(&ACCOUNTS))], ..Default::default() },
        _ => ExportOptions {
            roots: vec![name("root")],
            clusters: vec![Name::keep_case("c1", NameKind::Cluster).unwrap()],
            ..Default::default()
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn export_reproduces_random_states(data in prop::collection::vec(any::<u8>(), 0..300)) {
        let state = gen_state(&data);
        let opts = gen_options(&data);
        let exported = export(&state, &opts).expect("known clusters");
        prop_assert!(exported.warnings.is_empty(), "{:?}", exported.warnings);
        let desired = slurmplan::desired::load_str(Path::new("export.yaml"), &exported.yaml)
            .unwrap_or_else(|d| panic!("export does not load: {d:#?}\n{}", exported.yaml));
        let resolved = slurmplan::desired::resolve::resolve(&desired, &state)
            .unwrap_or_else(|d| panic!("export does not resolve: {d:#?}\n{}", exported.yaml));
        let changes = slurmplan::diff::diff(&state, &resolved.state);
        prop_assert!(changes.is_empty(), "{:#?}\n{}", changes, exported.yaml);
    }
}

#[test]
fn the_state_generator_covers_the_interesting_cases() {
    let mut seen = BTreeSet::new();
    for seed in 0..400u32 {
        let data: Vec<u8> =
            (0..300u32).map(|i| (seed.wrapping_mul(2654435761).wrapping_add(i * 40503) >> 7) as u8).collect();
        let st = gen_state(&data);
        let yaml = export(&st, &ExportOptions::default()).unwrap().yaml;
        for (needle, label) in [
            ("\"1234\":", "numeric name quoted"),
            ("\"true\":", "boolean-looking name quoted"),
            ("fairshare: parent", "fairshare parent"),
            ("partition: gpu", "partition"),
            ("preserve_user_case: true", "upper-case user"),
            ("\"gres/gpu:a100\"", "tres key with colon"),
            ("description: \"a|b\"", "pipe in text"),
            ("c2:", "two clusters"),
        ] {
            if yaml.contains(needle) {
                seen.insert(label);
            }
        }
    }
    assert_eq!(seen.len(), 8, "only saw {seen:?}");
}

/// `doctor --config` takes the fallback from the site-agent config under policy `common`, and
/// has none under `individual`.
#[test]
fn doctor_reads_the_fallback_from_the_site_agent_config() {
    let dir = root().join("tests/data/doctor/defaults");
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("repair.json");
    let common = root().join("tests/data/waldur/configs/nested-common.yaml");
    let r = slurmplan(&["doctor", "--state", s(&dir), "--config", s(&common), "-o", s(&plan)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("fallback DefaultAccount: `hpc_default`"), "{}", r.stderr);
    assert!(!r.stderr.contains("SECRET"), "the token must never be printed");
    let individual = root().join("tests/data/waldur/configs/nested-individual.yaml");
    let r = slurmplan(&["doctor", "--state", s(&dir), "--config", s(&individual)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no configured fallback"), "{}", r.stderr);
}
