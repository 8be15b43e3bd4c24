//! `slurmplan waldur build` end to end through the real binary: build -> plan against a
//! snapshot, the empty-export refusal, nothing written on error, and the API token never leaking.

use std::path::{Path, PathBuf};

mod common;
use common::*;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/waldur")
}

const TOKEN: &str = "SECRET-TOKEN-123";

fn build(config: &Path, export: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["waldur", "build", "--config", s(config), "--export", s(export), "-o", s(out)];
    args.extend_from_slice(extra);
    let r = slurmplan(&args);
    assert!(!r.stdout.contains(TOKEN) && !r.stderr.contains(TOKEN), "token leaked:\n{}\n{}", r.stdout, r.stderr);
    if let Ok(text) = std::fs::read_to_string(out) {
        assert!(!text.contains(TOKEN), "token in the output file");
    }
    r
}

#[test]
fn build_then_plan_shows_the_moved_project_and_the_pause() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("desired.yaml");
    let r = build(&data().join("configs/nested-common.yaml"), &data().join("site1/export"), &out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "data only on stdout; the build writes a file");
    assert!(r.stderr.contains("waldur-unnamed-resource"), "{}", r.stderr);
    let p = slurmplan(&[
        "plan",
        "--state",
        s(&data().join("site1/state")),
        "-d",
        s(&out),
        "--format",
        "script",
        "--color",
        "never",
    ]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    assert!(
        p.stdout.contains("modify account where name=hpc_p_materials cluster=rocket set parent=hpc_c_taltech"),
        "{}",
        p.stdout
    );
    // the agent's own form: `qos=<x>` only, no DefaultQOS introduced
    assert!(
        p.stdout.contains("modify account where name=hpc_a_assembly cluster=rocket set qos=paused\n"),
        "{}",
        p.stdout
    );
    assert!(p.stdout.contains("set qos=downscaled\n"), "{}", p.stdout);
    assert!(!p.stdout.contains("defaultqos"), "{}", p.stdout);
    // user associations carry Share=parent as the agent's adds do: nothing to reset
    assert!(!p.stdout.contains("Fairshare=-1"), "{}", p.stdout);
    // inherited `normal` (hpc_a_alloys, ...) equals the declared `[normal]`: no command
    assert!(!p.stdout.contains("name=hpc_a_alloys"), "{}", p.stdout);
    assert!(!p.stdout.contains("name=hpc_a_lattice"), "{}", p.stdout);
    // users in unusable offering-user states stay (the agent re-adds them): added, not removed
    assert!(
        p.stdout.contains("add user broken,ghost,leaver,linking,newbie account=hpc_default,hpc_a_genome-2026"),
        "{}",
        p.stdout
    );
    assert!(p.stdout.contains("delete account where name=hpc_a_docking,hpc_a_legacy cluster=rocket"), "{}", p.stdout);
    // the unmanaged account is not touched
    assert!(!p.stdout.contains("local_lab"), "{}", p.stdout);
}

#[test]
fn every_variant_builds_through_the_cli_and_validates() {
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(data().join("configs")).unwrap() {
        let config = entry.unwrap().path();
        let out = tmp.path().join(config.file_name().unwrap());
        let r = build(&config, &data().join("site1/export"), &out, &["--cluster", "rocket"]);
        assert_eq!(r.code, 0, "{}: {}", config.display(), r.stderr);
        let v = slurmplan(&["validate", s(&out)]);
        assert_eq!(v.code, 0, "{}: {}", config.display(), v.stderr);
    }
}

#[test]
fn an_empty_export_is_refused_unless_allowed_and_then_the_plan_guard_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("export");
    std::fs::create_dir(&export).unwrap();
    std::fs::write(export.join("resources.json"), "[]").unwrap();
    std::fs::write(export.join("offering-users.json"), "[]").unwrap();
    let out = tmp.path().join("desired.yaml");
    let config = data().join("configs/nested-common.yaml");
    let r = build(&config, &export, &out, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("no live resource") && r.stderr.contains("--allow-empty"), "{}", r.stderr);
    assert!(r.stderr.contains("truncated export"), "{}", r.stderr);
    assert!(!out.exists(), "nothing is written on error");
    let r = build(&config, &export, &out, &["--allow-empty"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let p = slurmplan(&["plan", "--state", s(&data().join("site1/state")), "-d", s(&out)]);
    assert_eq!(p.code, 1, "{}", p.stderr);
    assert!(p.stderr.contains("--allow-mass-delete"), "{}", p.stderr);
}

#[test]
fn the_token_never_leaks_on_any_path() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("desired.yaml");
    let export = data().join("site1/export");
    let write = |name: &str, text: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    // success
    assert_eq!(build(&data().join("configs/nested-common.yaml"), &export, &out, &[]).code, 0);
    std::fs::remove_file(&out).unwrap();
    // configuration errors, a YAML syntax error right at the token, a wrong offering, a bad export
    let bad_cfg = write(
        "bad.yaml",
        &format!(
            "offerings:\n- name: x\n  waldur_api_token: {TOKEN}\n  backend_type: slurm\n  backend_settings: {{qos_paused: p, qos_management: {{skip_qos_swap: true}}}}\n"
        ),
    );
    let syntax = write("syntax.yaml", &format!("offerings:\n  - waldur_api_token: \"{TOKEN}\n    name: [x\n"));
    let token_as_key = write("key.yaml", &format!("offerings:\n  - {TOKEN}: 1\n    backend_type: slurm\n"));
    for (config, extra) in [
        (&bad_cfg, vec![]),
        (&syntax, vec![]),
        (&token_as_key, vec![]),
        (&data().join("configs/nested-common.yaml"), vec!["--offering", "nope"]),
    ] {
        let r = build(config, &export, &out, &extra);
        assert_eq!(r.code, 1, "{}: {}", config.display(), r.stderr);
        assert!(!out.exists());
    }
    let bad_export = tmp.path().join("bad-export");
    std::fs::create_dir(&bad_export).unwrap();
    std::fs::write(bad_export.join("resources.json"), "[{\"uuid\": 1,").unwrap();
    let r = build(&data().join("configs/nested-common.yaml"), &bad_export, &out, &[]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("resources.json:1:"), "{}", r.stderr);
    assert!(!out.exists());
}

#[test]
fn configuration_errors_are_listed_together() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("agent.yaml");
    std::fs::write(
        &cfg,
        "offerings:\n- name: x\n  backend_type: slurm\n  backend_settings: {default_account: d, default_account_policy: odd}\n  backend_components: {GPU: {unit_factor: 60}}\n",
    )
    .unwrap();
    let out = tmp.path().join("o.yaml");
    let r = build(&cfg, &data().join("site1/export"), &out, &[]);
    assert_eq!(r.code, 1);
    for needle in [
        "offerings[0].backend_settings.customer_prefix",
        "offerings[0].backend_settings.project_prefix",
        "offerings[0].backend_settings.allocation_prefix",
        "offerings[0].backend_settings.default_account_policy",
        "offerings[0].backend_components.GPU",
        "5 configuration error(s)",
    ] {
        assert!(r.stderr.contains(needle), "missing {needle}:\n{}", r.stderr);
    }
}

/// A copy of the site1 snapshot with some association lines replaced (and the manifest's file
/// sums dropped, as for a snapshot edited by hand).
fn state_with(dir: &Path, edit: impl Fn(&str) -> String) -> PathBuf {
    let to = dir.join("state");
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(data().join("site1/state")).unwrap() {
        let e = e.unwrap();
        let text = std::fs::read_to_string(e.path()).unwrap();
        let text = if e.file_name() == "assocs.txt" {
            text.lines().map(|l| edit(l) + "\n").collect()
        } else if e.file_name() == "manifest.json" {
            // an edited snapshot no longer matches the recorded sums: drop them (read with a warning)
            let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
            m.as_object_mut().unwrap().remove("files");
            m.to_string()
        } else {
            text
        };
        std::fs::write(to.join(e.file_name()), text).unwrap();
    }
    to
}

#[test]
fn a_default_qos_outside_the_new_list_moves_in_the_same_command_and_explicit_equals_inherited() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("desired.yaml");
    assert_eq!(build(&data().join("configs/nested-common.yaml"), &data().join("site1/export"), &out, &[]).code, 0);
    // an earlier build gave hpc_a_assembly DefaultQOS normal; hpc_a_dft holds an explicit
    // `normal` that the declared `[normal]` equals; hpc_a_swarm an explicit list inheriting
    // would not give
    let state = state_with(tmp.path(), |l| {
        if l.starts_with("rocket|hpc_a_assembly||") {
            l.rsplitn(3, '|').last().unwrap().to_string() + "|normal|normal"
        } else if l.starts_with("rocket|hpc_a_swarm||") {
            l.replace("|normal|", "|gpu_long,normal|")
        } else {
            l.to_string()
        }
    });
    let p = slurmplan(&["plan", "--state", s(&state), "-d", s(&out), "--format", "script", "--color", "never"]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let assembly: Vec<&str> = p.stdout.lines().filter(|l| l.contains("name=hpc_a_assembly ")).collect();
    assert_eq!(
        assembly,
        vec![
            r#""${SACCTMGR:-sacctmgr}" -i modify account where name=hpc_a_assembly cluster=rocket set qos=paused defaultqos=-1"#
        ],
        "{}",
        p.stdout
    );
    assert!(
        p.stdout.lines().any(|l| l.contains("hpc_a_swarm") && l.ends_with("cluster=rocket set qos=normal")),
        "{}",
        p.stdout
    );
}
