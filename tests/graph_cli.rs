//! `slurmplan graph` (DOT and Mermaid, with and without a plan; snapshots on examples/site-a),
//! `slurmplan completions` and `slurmplan man`.

use std::path::{Path, PathBuf};

mod common;
use common::*;

fn site_a() -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/site-a");
    (dir.join("state"), dir.join("desired.yaml"))
}

fn saved_plan(tmp: &Path, desired: &Path) -> PathBuf {
    let (st, _) = site_a();
    let out = tmp.join("plan.json");
    let r = slurmplan(&["plan", "--state", s(&st), "-d", s(desired), "-o", s(&out)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    out
}

fn graph(extra: &[&str]) -> String {
    let (st, _) = site_a();
    let mut args = vec!["graph", "--state", s(&st)];
    args.extend(extra);
    let r = slurmplan(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    r.stdout
}

#[test]
fn graph_of_site_a_with_its_plan_in_both_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, d) = site_a();
    let plan = saved_plan(tmp.path(), &d);
    let dot = graph(&["--plan", s(&plan), "--format", "dot"]);
    insta::assert_snapshot!("site_a_plan_dot", dot);
    let mermaid = graph(&["--plan", s(&plan), "--format", "mermaid"]);
    insta::assert_snapshot!("site_a_plan_mermaid", mermaid);
    // the re-parent: old edge dashed red, new edge green
    assert!(dot.contains("\"rocket/hpc_p_genomics\" -> \"rocket/hpc_a_lattice\" [color=\"#c00000\", style=dashed];"));
    assert!(dot.contains("\"rocket/hpc_p_physics\" -> \"rocket/hpc_a_lattice\" [color=\"#1a7f1a\", penwidth=2];"));
    assert!(dot.contains("\"rocket/hpc_a_old\" [label=\"hpc_a_old\\n1 user, -1\", fillcolor=\"#f8d0d0\""));
    assert!(mermaid.contains("class n4 delete"), "{mermaid}");
    // braces balance and every edge names declared nodes
    assert_eq!(dot.matches('{').count(), dot.matches('}').count());
    let nodes: Vec<&str> =
        dot.lines().filter(|l| l.contains("[label=")).map(|l| l.trim().split(' ').next().unwrap()).collect();
    for l in dot.lines().filter(|l| l.contains(" -> ")) {
        let mut it = l.trim().split(" -> ");
        let (a, b) = (it.next().unwrap(), it.next().unwrap().split([' ', ';']).next().unwrap());
        assert!(nodes.contains(&a) && nodes.contains(&b), "{l}");
    }
}

#[test]
fn graph_without_a_plan_and_a_created_account() {
    let plain = graph(&["--format", "dot"]);
    insta::assert_snapshot!("site_a_state_dot", plain);
    assert!(!plain.contains("fillcolor=\"#"), "no colours without a plan");
    let mermaid = graph(&["--format", "mermaid"]);
    assert!(mermaid.starts_with("flowchart LR\n  subgraph c0[\"rocket\"]\n"), "{mermaid}");
    assert!(!mermaid.contains("classDef"));
    // a created account is green, with a green edge from its parent
    let tmp = tempfile::tempdir().unwrap();
    let (_, d) = site_a();
    let yaml = std::fs::read_to_string(&d)
        .unwrap()
        .replace("      hpc_a_robo:", "      hpc_a_new:\n        parent: hpc_p_physics\n      hpc_a_robo:");
    let d2 = tmp.path().join("d.yaml");
    std::fs::write(&d2, yaml).unwrap();
    let plan = saved_plan(tmp.path(), &d2);
    let dot = graph(&["--plan", s(&plan)]);
    assert!(
        dot.contains("\"rocket/hpc_a_new\" [label=\"hpc_a_new\", fillcolor=\"#d4f5d4\", color=\"#1a7f1a\"];"),
        "{dot}"
    );
    assert!(dot.contains("\"rocket/hpc_p_physics\" -> \"rocket/hpc_a_new\" [color=\"#1a7f1a\", penwidth=2];"), "{dot}");
    let m = graph(&["--plan", s(&plan), "--format", "mermaid"]);
    assert!(m.contains(" create\n"), "{m}");
}

#[test]
fn a_plan_of_another_state_is_drawn_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, d) = site_a();
    let plan = saved_plan(tmp.path(), &d);
    let other = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/waldur/site1/state");
    let r = slurmplan(&["graph", "--state", s(&other), "--plan", s(&plan)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("another state"), "{}", r.stderr);
}

#[test]
fn completions_for_every_shell_mention_the_commands_and_options() {
    for sh in ["bash", "zsh", "fish"] {
        let r = slurmplan(&["completions", sh]);
        assert_eq!(r.code, 0, "{sh}: {}", r.stderr);
        assert!(r.stdout.len() > 1000, "{sh}");
        assert!(r.stdout.contains("plan"), "{sh}");
        assert!(r.stdout.contains("detailed-exitcode"), "{sh}");
        assert!(r.stdout.contains("graph") && r.stdout.contains("doctor"), "{sh}");
    }
    assert_eq!(slurmplan(&["completions", "powershell"]).code, 64);
}

#[test]
fn the_man_page_covers_every_command() {
    let r = slurmplan(&["man"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with(".ie \\n(.g .ds Aq"), "roff from clap_mangen: {}", &r.stdout[..80]);
    assert!(r.stdout.contains(".TH slurmplan 1"), "{}", &r.stdout[..200]);
    assert!(r.stdout.contains(".SH \"SLURMPLAN PLAN\""));
    assert!(r.stdout.contains("\\-\\-detailed\\-exitcode"));
    assert!(r.stdout.contains(".SH \"EXIT STATUS\""));
    for c in ["DUMP", "APPLY", "SHOW", "VALIDATE", "DRIFT", "DOCTOR", "EXPORT", "GRAPH", "WALDUR BUILD"] {
        assert!(r.stdout.contains(&format!(".SH \"SLURMPLAN {c}\"")), "{c}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let r = slurmplan(&["man", "--out-dir", s(tmp.path())]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan = std::fs::read_to_string(tmp.path().join("slurmplan-plan.1")).unwrap();
    assert!(plan.contains("\\-\\-detailed\\-exitcode"));
    assert!(tmp.path().join("slurmplan.1").exists());
}
