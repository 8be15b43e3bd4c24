//! Offline half of the differential test (tests/differential_real.rs): every fixture saved
//! under tests/data/differential/ from a real slurmdbd run is replayed against the model. The
//! model must give each recorded command the verdict and the state real slurmdbd gave, and a
//! plan made now from the recorded state and desired file must be valid on the model and
//! converge. No test bed needed. Must not edit or drop a fixture to make it pass: a fixture is
//! what real slurmdbd did, and the model must match it.

mod differential;

use differential::{fixtures_dir, gen_case, replay_fixture};

#[test]
fn saved_real_slurmdbd_runs_replay_on_the_model() {
    let dir = fixtures_dir();
    let mut names: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.join("steps.json").exists()).collect(),
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    names.sort();
    assert!(!names.is_empty(), "no fixtures in {}", dir.display());
    let mut errors = Vec::new();
    for p in &names {
        if let Err(e) = replay_fixture(p) {
            errors.push(format!("{}:\n{e}", p.display()));
        }
    }
    assert!(errors.is_empty(), "{} of {} fixtures fail:\n{}", errors.len(), names.len(), errors.join("\n\n"));
}

/// The generator's desired files load, and what it seeds is varied: several clusters,
/// partitions, user QoS lists, the violations only 22.05 lets through, and every kind of edit.
#[test]
fn generated_cases_load_and_cover_the_listed_shapes() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..300u64 {
        let case = gen_case(seed, seed % 2 == 0);
        let yaml = case.desired_yaml();
        if let Err(d) = slurmplan::desired::load_str(std::path::Path::new("d.yaml"), &yaml) {
            panic!("seed {seed}: the desired file does not load: {d:?}\n{yaml}");
        }
        let seeds: Vec<String> = case.seed_argv().into_iter().map(|(a, _)| a.join(" ")).collect();
        let all = seeds.join("\n");
        for (what, hit) in [
            ("two clusters", case.base.clusters.len() == 2),
            ("partition", all.contains("partition=")),
            ("user qos list", seeds.iter().any(|s| s.starts_with("add user") && s.contains(" qos="))),
            ("user defaultqos", seeds.iter().any(|s| s.starts_with("add user") && s.contains("defaultqos="))),
            ("fairshare parent", all.contains("fairshare=parent")),
            ("gres/gpu with unit", all.contains("gres/gpu=2K")),
            ("mem with unit", all.contains("mem=2G")),
            ("pause 0", all.contains("grpsubmitjobs=0")),
            ("record only", !case.base.records.is_empty()),
            ("qos delta", all.contains("qos+=")),
            ("22.05 default qos outside", case.mess.iter().any(|m| m.what.contains("outside"))),
            ("22.05 dangling default", case.mess.iter().any(|m| m.what.contains("dangling"))),
            ("reparent", yaml_has(&case, "Reparent")),
            ("subtree delete", yaml_has(&case, "DeleteSubtree")),
            ("membership churn", yaml_has(&case, "SetUsers")),
            ("no declared default", yaml_has(&case, "account: None")),
            ("qos attributes", yaml_has(&case, "SetQos")),
        ] {
            if hit {
                seen.insert(what);
            }
        }
    }
    assert_eq!(seen.len(), 17, "shapes seen: {seen:?}");
}

fn yaml_has(case: &differential::Case, what: &str) -> bool {
    case.edits.iter().any(|e| format!("{e:?}").contains(what))
}
