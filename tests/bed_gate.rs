//! The real-bed tests cannot pass without having run (docs/testbed.md, "Skips you can see"):
//! every test that calls the gate (`common::testbed::testbed()`, or the differential test's
//! `bed()`) is ignored (an `ignore` attribute) with the reason that names the command running it, no other test
//! is ignored, and the gate fails a test asked to run without `SLURMPLAN_TESTBED`.
//! Reads the test sources as text; runs no sacctmgr. Must not exempt a file or a test.

mod common;

use std::path::Path;

/// (file, test name, ignore attribute if any, whether its body calls the gate) for every
/// `#[test]` in the integration test files (`tests/*.rs`).
fn tests_in(dir: &Path) -> Vec<(String, String, Option<String>, bool)> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("read tests/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read a test file");
        let file = path.file_stem().unwrap().to_string_lossy().to_string();
        for chunk in text.split("#[test]\n").skip(1) {
            let mut ignore = None;
            let mut name = String::new();
            let mut lines = chunk.lines();
            for line in lines.by_ref() {
                let t = line.trim();
                if t.starts_with("#[ignore") {
                    ignore = Some(t.to_string());
                } else if let Some(rest) = t.strip_prefix("fn ") {
                    name = rest.split('(').next().unwrap_or_default().to_string();
                    break;
                }
            }
            // the body: up to the first line that closes a top-level item
            let body: Vec<&str> = lines.take_while(|l| *l != "}").collect();
            let gated = body.iter().any(|l| l.trim() == "testbed();" || l.trim_start().starts_with("let bed = bed();"));
            out.push((file.clone(), name, ignore, gated));
        }
    }
    out
}

#[test]
fn every_real_bed_test_is_ignored_with_the_command_that_runs_it() {
    let found = tests_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"));
    let gated = found.iter().filter(|t| t.3).count();
    assert!(gated >= 20, "only {gated} tests call the gate: the reader is wrong");
    let mut bad = Vec::new();
    for (file, name, ignore, gated) in &found {
        let want = format!(
            "#[ignore = \"needs a real slurmdbd: scripts/slurm-testbed up DIR; . DIR/env; cargo test --test {file} -- --ignored\"]"
        );
        match (gated, ignore) {
            (true, Some(i)) if *i == want => {}
            (true, _) => bad.push(format!("{file}::{name} calls the gate but is not `{want}`")),
            (false, Some(i)) => bad.push(format!("{file}::{name} is ignored ({i}) but does not call the gate")),
            (false, None) => {}
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Asked to run without a bed, a real-bed test fails instead of passing (checked only when no
/// bed is set, which is how `cargo test` runs it).
#[test]
fn the_gate_fails_without_a_bed() {
    if std::env::var_os("SLURMPLAN_TESTBED").is_some_and(|v| !v.is_empty()) {
        common::testbed::testbed();
        return;
    }
    let r = std::panic::catch_unwind(common::testbed::testbed);
    let msg = r.expect_err("the gate let a test run without SLURMPLAN_TESTBED");
    let text = msg.downcast_ref::<String>().cloned().or_else(|| msg.downcast_ref::<&str>().map(|s| s.to_string()));
    assert!(text.is_some_and(|t| t.contains("scripts/slurm-testbed up DIR")), "the failure names no command");
}
