//! The command-line contract, end to end through the real binary, on the shipped examples
//! (no Slurm needed): exit codes, stdout/stderr separation, every format, every example.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::*;

/// Every directory under examples/ with a `state/` and a `desired.yaml`.
fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("state").is_dir() && p.join("desired.yaml").is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn every_example_plans_validates_and_renders_in_every_format() {
    let ex = examples();
    assert!(!ex.is_empty(), "no examples found");
    for dir in ex {
        let state = dir.join("state");
        let desired = dir.join("desired.yaml");
        let v = slurmplan(&["validate", s(&desired), "--state", s(&state)]);
        assert_eq!(v.code, 0, "{}: {}", dir.display(), v.stderr);
        for format in ["text", "json", "diff", "table", "script"] {
            let r =
                slurmplan(&["plan", "--state", s(&state), "-d", s(&desired), "--format", format, "--color", "never"]);
            assert_eq!(r.code, 0, "{} {format}: {}", dir.display(), r.stderr);
            assert!(!r.stdout.is_empty(), "{} {format}: empty output", dir.display());
            assert!(!r.stdout.contains('\x1b'), "colour in {format}");
        }
        let r = slurmplan(&["plan", "--state", s(&state), "-d", s(&desired), "--detailed-exitcode"]);
        assert_eq!(r.code, 2, "{}: the example is meant to show drift", dir.display());
    }
}

#[test]
fn site_a_plan_in_every_format_is_stable() {
    let dir = root().join("examples/site-a");
    let state = dir.join("state");
    let desired = dir.join("desired.yaml");
    for format in ["text", "json", "diff", "table", "script"] {
        let r = slurmplan(&["plan", "--state", s(&state), "-d", s(&desired), "--format", format, "--color", "never"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let again =
            slurmplan(&["plan", "--state", s(&state), "-d", s(&desired), "--format", format, "--color", "never"]);
        assert_eq!(r.stdout, again.stdout, "{format} output is not deterministic");
        insta::assert_snapshot!(format!("site_a_{format}"), r.stdout);
    }
}

#[test]
fn site_a_plan_handles_every_drift_case_in_a_safe_order() {
    let dir = root().join("examples/site-a");
    let r =
        slurmplan(&["plan", "--state", s(&dir.join("state")), "-d", s(&dir.join("desired.yaml")), "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let argv: Vec<String> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect::<Vec<_>>().join(" "))
        .collect();
    let pos = |needle: &str| {
        argv.iter().position(|a| a.contains(needle)).unwrap_or_else(|| panic!("no step `{needle}` in {argv:#?}"))
    };
    // dave's default moves before the association it points to is removed
    assert!(pos("set defaultaccount=hpc_a_robo") < pos("delete user where name=dave account=hpc_a_old"));
    // bob's own DefaultQOS is dropped before the swap, and the swap sets both in one command
    assert!(pos("name=bob account=hpc_a_assembly") < pos("set qos=paused defaultqos=paused"));
    // the wrong parent is fixed by a re-parent alone
    assert!(
        argv.iter()
            .any(|a| a.ends_with("modify account where name=hpc_a_lattice cluster=rocket set parent=hpc_p_physics"))
    );
    // the unmanaged account and its user are not touched
    assert!(!argv.iter().any(|a| a.contains("physics_local") || a.contains("name=frank")));
    for a in &argv {
        assert!(a.starts_with("sacctmgr -i "), "{a}");
    }
    assert_eq!(v["summary"], serde_json::json!({"add": 1, "change": 9, "destroy": 2}));
}

#[test]
fn saved_plan_shows_the_same_and_exit_codes_follow_the_contract() {
    let dir = root().join("examples/site-a");
    let tmp = tempfile::tempdir().unwrap();
    let planfile = tmp.path().join("plan.json");
    let r = slurmplan(&[
        "plan",
        "--state",
        s(&dir.join("state")),
        "-d",
        s(&dir.join("desired.yaml")),
        "-o",
        s(&planfile),
        "--color",
        "never",
    ]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("plan saved to"), "{}", r.stderr);
    let shown = slurmplan(&["show", s(&planfile), "--color", "never"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(shown.stdout, r.stdout);
    // an edited plan file is refused
    let text = std::fs::read_to_string(&planfile).unwrap().replacen("hpc_a_robo", "hpc_a_rob0", 1);
    std::fs::write(&planfile, text).unwrap();
    let bad = slurmplan(&["show", s(&planfile)]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("modified after it was written"), "{}", bad.stderr);
    // usage errors exit 64
    assert_eq!(slurmplan(&["plan"]).code, 64);
    assert_eq!(slurmplan(&["no-such-command"]).code, 64);
    assert_eq!(slurmplan(&["--help"]).code, 0);
}

#[test]
fn no_changes_exits_zero_even_with_detailed_exitcode() {
    let dir = root().join("examples/site-a");
    let tmp = tempfile::tempdir().unwrap();
    // a desired file that manages nothing that differs: only the protected customer tree, as is
    let yaml = "version: 1\nmanaged:\n  prefixes: [nothing_here_]\n";
    let d = tmp.path().join("d.yaml");
    std::fs::write(&d, yaml).unwrap();
    let r =
        slurmplan(&["plan", "--state", s(&dir.join("state")), "-d", s(&d), "--detailed-exitcode", "--color", "never"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("No changes"), "{}", r.stdout);
}

#[test]
fn bad_inputs_are_errors_with_locations_and_nothing_is_planned() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("bad.yaml");
    std::fs::write(&d, "version: 1\nmanaged:\n  roots: [hpc]\nclusters:\n  c1:\n    accounts:\n      co,mma: {}\n      hpc: {parnt: root}\n").unwrap();
    let r = slurmplan(&["validate", s(&d)]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.is_empty(), "diagnostics go to stderr");
    assert!(r.stderr.contains("bad.yaml:7:7"), "{}", r.stderr);
    assert!(r.stderr.contains("bad.yaml:8:13"), "{}", r.stderr);
    assert!(r.stderr.contains("did you mean `parent`"), "{}", r.stderr);
    // a snapshot directory without assocs.txt names the command that produces it
    let snap = tmp.path().join("snap");
    std::fs::create_dir(&snap).unwrap();
    let p = slurmplan(&["plan", "--state", s(&snap), "-d", s(&root().join("examples/site-a/desired.yaml"))]);
    assert_eq!(p.code, 1);
    assert!(p.stderr.contains("sacctmgr -n -P show assoc wopl withrawqos"), "{}", p.stderr);
    // an unknown cluster in the desired file
    let d2 = tmp.path().join("other.yaml");
    std::fs::write(&d2, "version: 1\nmanaged:\n  prefixes: [x_]\nclusters:\n  nosuch:\n    accounts:\n      x_a: {}\n")
        .unwrap();
    let p = slurmplan(&["plan", "--state", s(&root().join("examples/site-a/state")), "-d", s(&d2)]);
    assert_eq!(p.code, 1);
    assert!(p.stderr.contains("cluster `nosuch` is not registered"), "{}", p.stderr);
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let dir = root().join("examples/site-a");
    let (state, desired) = (dir.join("state"), dir.join("desired.yaml"));
    let r = slurmplan(&["plan", "--state", s(&state), "-d", s(&desired), "--color", "always"]);
    assert!(r.stdout.contains('\x1b'), "--color always must colour");
    let o = Command::new(env!("CARGO_BIN_EXE_slurmplan"))
        .args(["plan", "--state", s(&dir.join("state")), "-d", s(&dir.join("desired.yaml"))])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains('\x1b'));
}

/// `--no-batch` splits every batch into one command per object, in order, and the benchmark
/// generator writes a site that plans.
#[test]
fn no_batch_splits_batches_one_object_per_command() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("site");
    let g = Command::new(common::cli::dev_bin("slurmplan-gen"))
        .args(["--out", s(&out), "--accounts", "60", "--users", "50", "--assocs", "400", "--drift", "0.2"])
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let (state, desired) = (out.join("state"), out.join("desired.yaml"));
    let steps = |extra: &[&str]| -> Vec<Vec<String>> {
        let mut args = vec!["plan", "--state", s(&state), "-d", s(&desired), "--format", "json", "--allow-mass-delete"];
        args.extend_from_slice(extra);
        let r = slurmplan(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect())
            .collect()
    };
    let batched = steps(&[]);
    let single = steps(&["--no-batch"]);
    assert!(single.len() > batched.len(), "the generated drift should contain batches");
    // the same objects, one per command
    let objects = |plan: &[Vec<String>]| -> Vec<String> {
        let mut v = Vec::new();
        for argv in plan {
            let list = argv
                .iter()
                .find(|w| w.starts_with("name="))
                .map(|w| w[5..].to_string())
                .unwrap_or_else(|| argv[4].clone());
            // `add user U account=A,B` adds the cross product U x {A, B}
            let accounts = match (argv[2].as_str(), argv[3].as_str()) {
                ("add", "user") => argv.iter().find_map(|w| w.strip_prefix("account=")).unwrap_or_default(),
                _ => "",
            };
            for n in list.split(',') {
                for a in accounts.split(',') {
                    v.push(format!("{} {} {n} {a}", argv[2], argv[3]));
                }
            }
        }
        v.sort();
        v
    };
    assert_eq!(objects(&batched), objects(&single));
    for argv in &single {
        let list = argv.iter().find(|w| w.starts_with("name=")).cloned().unwrap_or_else(|| argv[4].clone());
        assert!(!list.contains(','), "not split: {argv:?}");
        assert!(!argv.iter().any(|w| w.starts_with("account=") && w.contains(',')), "not split: {argv:?}");
        assert!(
            argv[2] != "add" || !argv.iter().any(|w| w.starts_with("defaultaccount=")),
            "a single add names no default: {argv:?}"
        );
    }
}

/// The global `--cluster C` keeps only C of the desired file; an unknown cluster is an error.
#[test]
fn global_cluster_option_selects_clusters() {
    let dir = root().join("examples/site-a");
    let (state, desired) = (dir.join("state"), dir.join("desired.yaml"));
    let all = slurmplan(&["plan", "--state", s(&state), "-d", s(&desired), "--format", "json"]);
    let one = slurmplan(&["plan", "--cluster", "rocket", "--state", s(&state), "-d", s(&desired), "--format", "json"]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(all.stdout, one.stdout);
    let bad = slurmplan(&["plan", "--cluster", "nosuch", "--state", s(&state), "-d", s(&desired)]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("declares no such cluster"), "{}", bad.stderr);
    // the option comes before the subcommand too
    let before =
        slurmplan(&["--cluster", "rocket", "plan", "--state", s(&state), "-d", s(&desired), "--format", "json"]);
    assert_eq!(before.stdout, all.stdout);
}
