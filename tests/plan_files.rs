//! Saved plan files of every format this slurmplan reads (tests/data/plan-files, written by an
//! earlier version) keep loading: checksum and signature verify, every step passes the checks,
//! and writing the plan back gives the same bytes (so the on-disk format did not move).

use std::path::Path;

use slurmplan::plan::file;
use slurmplan::sacctmgr::command::Command;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plan-files")
}

fn key() -> file::Key {
    file::Key::new(std::fs::read(dir().join("plan-key")).unwrap()).unwrap()
}

#[test]
fn saved_plans_of_format_1_and_2_load_and_write_back_byte_for_byte() {
    for (name, version, steps) in [
        ("format1-doctor-qos.json", 1, 2),
        ("format1-doctor-defaults.json", 1, 2),
        ("format2.json", 2, 16),
        ("format2-load.json", 2, 19),
    ] {
        let path = dir().join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let plan = file::from_json(&path, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(plan.format_version, version, "{name}");
        assert_eq!(plan.steps.len(), steps, "{name}");
        assert_eq!(plan.scope.is_some(), version == 2, "{name}");
        assert_eq!(file::to_json(&plan), text, "{name}: written back differently");
        assert_eq!(file::from_json(&path, &text).unwrap(), plan, "{name}: read twice differently");
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

/// The `verb` a command is written with. A new kind of command fails to compile here until it
/// is named, and then [`the_fixtures_hold_every_kind_of_command`] fails until a saved plan holds it.
fn verb(c: &Command) -> &'static str {
    match c {
        Command::AddQos { .. } => "add_qos",
        Command::ModifyQos { .. } => "modify_qos",
        Command::DeleteQos { .. } => "delete_qos",
        Command::AddAccount { .. } => "add_account",
        Command::ModifyAccount { .. } => "modify_account",
        Command::ModifyAccountRecord { .. } => "modify_account_record",
        Command::Reparent { .. } => "reparent",
        Command::DeleteAccount { .. } => "delete_account",
        Command::AddUser { .. } => "add_user",
        Command::ModifyUser { .. } => "modify_user",
        Command::SetDefaultAccount { .. } => "set_default_account",
        Command::DeleteUser { .. } => "delete_user",
        Command::DeleteUserAll { .. } => "delete_user_all",
        Command::Load { .. } => "load",
    }
}

const ALL_VERBS: usize = 14;

#[test]
fn the_fixtures_hold_every_kind_of_command() {
    let mut kinds = std::collections::BTreeSet::new();
    for name in ["format1-doctor-qos.json", "format1-doctor-defaults.json", "format2.json", "format2-load.json"] {
        let path = dir().join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let plan = file::from_json(&path, &text).unwrap();
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (step, saved) in plan.steps.iter().zip(raw["plan"]["steps"].as_array().unwrap()) {
            assert_eq!(step.command.argv(), step.argv, "{name} step {}", step.number);
            assert_eq!(saved["command"]["verb"], verb(&step.command), "{name} step {}", step.number);
            kinds.insert(verb(&step.command));
        }
    }
    assert_eq!(kinds.len(), ALL_VERBS, "the saved plans lost kinds of command: {kinds:?}");
}

#[test]
fn a_saved_load_step_keeps_its_stdin_file() {
    let path = dir().join("format2-load.json");
    let plan = file::from_json(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let load = plan.steps.iter().find(|s| verb(&s.command) == "load").expect("a load step");
    let Command::Load { accounts, users, .. } = &load.command else { unreachable!() };
    assert_eq!(accounts.len(), 4);
    assert_eq!(users.len(), 10);
    let text = load.command.stdin().expect("a load step feeds its file on stdin");
    assert!(text.contains("hpc_c_new") && text.contains("nu9"), "{text}");
}

/// Files that are not plans of this version fail with an error naming the file, never a panic.
#[test]
fn damaged_plans_are_refused_with_the_path() {
    let path = dir().join("format2.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let plan = file::from_json(&path, &text).unwrap();
    // re-checksummed edits that only the schema can catch
    let resum = |edit: &dyn Fn(&mut serde_json::Value)| -> String {
        let mut v: serde_json::Value = serde_json::from_str(&file::to_json(&plan)).unwrap();
        edit(&mut v["plan"]);
        let sum = slurmplan::model::fingerprint::hash_bytes(v["plan"].to_string().as_bytes());
        v["checksum"] = sum.into();
        v.to_string()
    };
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit); 4] = [
        ("unknown variant `frobnicate`", |p| p["steps"][0]["command"]["verb"] = "frobnicate".into()),
        ("unknown variant `later`", |p| p["steps"][0]["phase"] = "later".into()),
        ("missing field `steps`", |p| drop(p.as_object_mut().unwrap().remove("steps"))),
        ("but the plan says 1", |p| p["format_version"] = 1.into()),
    ];
    for (want, edit) in cases {
        let err = file::from_json(&path, &resum(&edit)).unwrap_err().to_string();
        assert!(err.contains(want) && err.contains("format2.json"), "{want}: {err}");
    }
    let err = file::from_json(&path, "{\"format_version\": 3}").unwrap_err().to_string();
    assert!(err.contains("format_version 3"), "{err}");
}
