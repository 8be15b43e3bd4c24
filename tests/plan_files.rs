//! Saved plan files of every format this slurmplan reads (tests/data/plan-files, written by an
//! earlier version) keep loading: checksum and signature verify, every step passes the checks,
//! and writing the plan back gives the same bytes (so the on-disk format did not move).

use std::path::Path;

use slurmplan::plan::file;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plan-files")
}

fn key() -> file::Key {
    file::Key::new(std::fs::read(dir().join("plan-key")).unwrap()).unwrap()
}

#[test]
fn saved_plans_of_format_1_and_2_load_and_write_back_byte_for_byte() {
    for (name, version, steps) in
        [("format1-doctor-qos.json", 1, 2), ("format1-doctor-defaults.json", 1, 2), ("format2.json", 2, 16)]
    {
        let path = dir().join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let plan = file::from_json(&path, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(plan.format_version, version, "{name}");
        assert_eq!(plan.steps.len(), steps, "{name}");
        assert_eq!(plan.scope.is_some(), version == 2, "{name}");
        assert_eq!(file::to_json(&plan), text, "{name}: written back differently");
    }
}

#[test]
fn a_saved_signed_plan_verifies_with_its_key_and_signs_the_same() {
    let path = dir().join("format2-signed.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let plan = file::from_json_with_key(&path, &text, Some(&key())).unwrap();
    assert_eq!(file::to_json_signed(&plan, Some(&key())), text);
    let unsigned = std::fs::read_to_string(dir().join("format2.json")).unwrap();
    assert!(file::from_json_with_key(&path, &unsigned, Some(&key())).is_err(), "an unsigned plan passed the key");
}

#[test]
fn every_kind_of_step_in_the_fixtures_round_trips() {
    let path = dir().join("format2.json");
    let plan = file::from_json(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    for step in &plan.steps {
        assert_eq!(step.command.argv(), step.argv, "step {}", step.number);
    }
    let kinds: std::collections::BTreeSet<String> = plan
        .steps
        .iter()
        .map(|s| serde_json::to_value(&s.command).unwrap()["verb"].as_str().unwrap().to_string())
        .collect();
    assert!(kinds.len() >= 12, "the fixture lost kinds of command: {kinds:?}");
}
