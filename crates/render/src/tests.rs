//! Snapshot tests of every format on one realistic plan, built from sacctmgr text and YAML.

use std::path::Path;

use super::*;
use slurmplan_sacctmgr::parse::{RawReads, Source, parse_state};

/// Current state as `sacctmgr -n -P` prints it (columns of `reads::READS`).
/// assocs: Cluster|Account|User|Partition|ParentName|Share|GrpJobs|GrpSubmitJobs|GrpTRES|
/// GrpTRESMins|GrpWall|MaxJobs|MaxSubmitJobs|MaxTRES|MaxTRESMins|MaxWall|QOS|DefaultQOS
fn current_reads() -> RawReads {
    let assocs = "\
testcl|root||||1|||||||||||normal|
testcl|root|root|||1||||||||||||
testcl|other|||root|1||||||||||||
testcl|hpc|||root|1||||||||||||
testcl|hpc_cust_a|||hpc|1||||||||||||
testcl|hpc_cust_b|||hpc|1||||||||||||
testcl|hpc_proj1|||hpc_cust_a|1|||||||||||normal,hpc_gold|normal
testcl|hpc_proj1|alice|||1||||||||||||normal
testcl|hpc_proj1|carol|||1||||||||||||
testcl|hpc_proj2|||hpc_cust_a|1||||||||||02:00:00||
testcl|hpc_proj2|dave|||1||||||||||||
testcl|hpc_old|||hpc|1||||cpu=100||||||||
testcl|hpc_old|alice|||1||||||||||||
";
    let defaults = "\
testcl|root|root
testcl|alice|hpc_old
testcl|carol|hpc_proj1
testcl|dave|hpc_proj2
";
    let descr = "\
root|default root account
other|other
hpc|hpc customers
hpc_cust_a|customer a
hpc_cust_b|customer b
hpc_proj1|project one
hpc_proj2|project two
hpc_old|old project
";
    let org = "\
root|root
other|other
hpc|hpc
hpc_cust_a|hpc
hpc_cust_b|hpc
hpc_proj1|hpc
hpc_proj2|hpc
hpc_old|hpc
";
    let qos = "\
normal||||||Normal QOS default
hpc_gold||cpu=1000||||gold
hpc_legacy||||||legacy
";
    RawReads {
        clusters: Source::new("clusters.txt", "testcl\n"),
        assocs: Source::new("assocs.txt", assocs),
        defaults: Source::new("defaults.txt", defaults),
        accounts_descr: Source::new("accounts-descr.txt", descr),
        accounts_org: Source::new("accounts-org.txt", org),
        qos: Source::new("qos.txt", qos),
    }
}

const DESIRED: &str = r#"version: 1
managed:
  roots: [hpc]
  qos_prefixes: [hpc_]
qos:
  normal: {}
  hpc_gold:
    grp_tres_mins: {cpu: 2000}
  paused:
    description: paused allocations
    flags: [DenyOnLimit]
    grp_submit_jobs: 0
clusters:
  testcl:
    accounts:
      hpc:
        description: hpc customers
      hpc_cust_a:
        parent: hpc
      hpc_cust_b:
        parent: hpc
      hpc_cust1:
        parent: hpc
        description: customer one
        organization: hpc
      hpc_proj1:
        parent: hpc_cust_a
        description: project one
        qos: [paused]
        default_qos: paused
        grp_submit_jobs: 0
        users:
          - name: alice
            default_qos: paused
      hpc_proj2:
        parent: hpc_cust_b
        description: project two (moved)
        max_wall: 90
        users: [dave]
      hpc_proj3:
        parent: hpc_cust1
        description: project three
        fairshare: 10
        qos: [normal, paused]
        default_qos: normal
        grp_tres_mins: {cpu: 60000, mem: 1G}
        users: [bob, erin]
    users:
      alice:
        default_account: hpc_proj1
      bob:
        default_account: hpc_proj3
"#;

fn realistic_plan() -> Plan {
    let current = parse_state(&current_reads()).unwrap_or_else(|d| panic!("current state: {d:#?}"));
    let desired =
        slurmplan_desired::load_str(Path::new("desired.yaml"), DESIRED).unwrap_or_else(|d| panic!("desired: {d:#?}"));
    let resolved =
        slurmplan_desired::resolve::resolve(&desired, &current).unwrap_or_else(|d| panic!("resolve: {d:#?}"));
    let mut plan = slurmplan_plan::make_plan(&current, &resolved.state, &desired.hash)
        .unwrap_or_else(|e| panic!("make_plan: {e}"));
    // Keep snapshots stable across version bumps.
    plan.generator = "slurmplan (test)".into();
    plan
}

fn empty_plan() -> Plan {
    let current = parse_state(&current_reads()).unwrap();
    slurmplan_plan::make_plan(&current, &current, "sha256:none").unwrap()
}

fn rendered(plan: &Plan, format: Format, color: bool) -> String {
    let mut out = Vec::new();
    render(plan, format, &Options { color }, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn text_snapshot() {
    insta::assert_snapshot!(rendered(&realistic_plan(), Format::Text, false));
}

#[test]
fn json_snapshot() {
    insta::assert_snapshot!(rendered(&realistic_plan(), Format::Json, false));
}

#[test]
fn diff_snapshot() {
    insta::assert_snapshot!(rendered(&realistic_plan(), Format::Diff, false));
}

#[test]
fn table_snapshot() {
    insta::assert_snapshot!(rendered(&realistic_plan(), Format::Table, false));
}

#[test]
fn script_snapshot() {
    insta::assert_snapshot!(rendered(&realistic_plan(), Format::Script, false));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(rendered(&realistic_plan(), Format::Markdown, false));
}

/// The markdown view's command block holds every step's argv exactly as the script view runs
/// it (what the merge request shows is what `apply` runs), inside one collapsed block.
#[test]
fn markdown_commands_are_the_steps_argv() {
    let plan = realistic_plan();
    let md = rendered(&plan, Format::Markdown, false);
    for s in &plan.steps {
        assert!(md.contains(&format!("\n{}", sh_join(&s.argv))), "step {} missing:\n{md}", s.number);
    }
    assert_eq!(md.matches("<details>").count(), 1);
    assert_eq!(md.matches("</details>").count(), 1);
    assert!(md.starts_with("### slurmplan: Plan: "), "{md}");
    let empty = rendered(&empty_plan(), Format::Markdown, false);
    assert!(empty.starts_with("### slurmplan: no changes"), "{empty}");
}

#[test]
fn text_without_color_has_no_escape_bytes() {
    let plan = realistic_plan();
    assert!(!rendered(&plan, Format::Text, false).contains('\x1b'));
    for f in [Format::Json, Format::Diff, Format::Table, Format::Script, Format::Markdown] {
        assert!(!rendered(&plan, f, true).contains('\x1b'), "{f:?} must never be coloured");
    }
}

#[test]
fn text_with_color_colours_the_marks() {
    let text = rendered(&realistic_plan(), Format::Text, true);
    assert!(text.contains("\x1b[32m+\x1b[39m"), "green +");
    assert!(text.contains("\x1b[33m~\x1b[39m"), "yellow ~");
    assert!(text.contains("\x1b[31m-\x1b[39m"), "red -");
    assert!(text.contains("\x1b[36m>\x1b[39m"), "cyan >");
}

#[test]
fn empty_plan_in_every_format() {
    let plan = empty_plan();
    assert!(plan.is_empty());
    assert_eq!(rendered(&plan, Format::Text, true), format!("{NO_CHANGES}\n"));
    assert_eq!(rendered(&plan, Format::Table, false), format!("{NO_CHANGES}\n"));
    assert_eq!(rendered(&plan, Format::Diff, false), "");
    let script = rendered(&plan, Format::Script, false);
    assert!(script.starts_with("#!/bin/sh\n"));
    assert!(script.ends_with("set -eu\n"), "{script}");
    assert!(script.contains("# Plan: 0 to add, 0 to change, 0 to destroy."));
}

#[test]
fn json_is_the_plan_in_the_plan_files_schema() {
    let plan = realistic_plan();
    let text = rendered(&plan, Format::Json, false);
    assert!(text.ends_with("}\n"));
    let back: slurmplan_plan::file::schema::FilePlan = serde_json::from_str(&text).unwrap();
    assert_eq!(back.into_plan(), plan);
    // the same bytes as the `plan` member of a plan file
    let file: serde_json::Value = serde_json::from_str(&slurmplan_plan::file::to_json(&plan)).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&file["plan"]).unwrap(),
        serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&text).unwrap()).unwrap()
    );
}

#[test]
fn every_format_shows_the_exact_argv() {
    let plan = realistic_plan();
    let text = rendered(&plan, Format::Text, false);
    let table = rendered(&plan, Format::Table, false);
    for s in &plan.steps {
        let line = sh_join(&s.argv);
        assert!(text.contains(&format!("{}. {line}", s.number)), "text lacks step {}", s.number);
        assert!(table.contains(&line), "table lacks step {}", s.number);
    }
}

/// Run `script` with a real `sh`, SACCTMGR pointing at a recording script in a tempdir; return
/// the arguments of each call.
fn run_recorded(script: &str) -> Vec<Vec<String>> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let recorder = dir.path().join("record");
    let log = dir.path().join("log");
    // Each argument is followed by a 0x1e byte, each call by a 0x1f byte.
    std::fs::write(
        &recorder,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\036' \"$a\"; done >>\"$RECORD_LOG\"\nprintf '\\037' >>\"$RECORD_LOG\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.path().join("plan.sh");
    std::fs::write(&path, script).unwrap();
    let status = std::process::Command::new("sh")
        .arg(&path)
        .env("SACCTMGR", &recorder)
        .env("RECORD_LOG", &log)
        .status()
        .unwrap();
    assert!(status.success());
    let raw = std::fs::read_to_string(&log).unwrap_or_default();
    raw.split_terminator('\x1f').map(|c| c.split_terminator('\x1e').map(str::to_string).collect()).collect()
}

#[test]
fn script_runs_exactly_the_plan_argv_under_sh() {
    let plan = realistic_plan();
    let calls = run_recorded(&rendered(&plan, Format::Script, false));
    let want: Vec<Vec<String>> = plan.steps.iter().map(|s| s.argv[1..].to_vec()).collect();
    assert_eq!(calls, want);
}

#[test]
fn script_quoting_survives_hostile_words() {
    let mut plan = realistic_plan();
    plan.steps.truncate(1);
    let hostile = [
        "",
        "a b",
        "it's",
        "'",
        "''",
        "$HOME",
        "${x:-y}",
        "`id`",
        "$(id)",
        "a\\b",
        "\"q\"",
        "*",
        "?",
        "[a]",
        "~",
        "~root",
        "#not a comment",
        "a;b",
        "a|b",
        "a&b",
        "<in",
        ">out",
        "(x)",
        "{a,b}",
        "tab\there",
        "line\nbreak",
        "!x",
        "x=y z",
        "-",
        "--",
        "ünïcode",
    ];
    plan.steps[0].argv = std::iter::once("sacctmgr").chain(hostile).map(String::from).collect();
    let calls = run_recorded(&rendered(&plan, Format::Script, false));
    assert_eq!(calls, vec![hostile.map(String::from).to_vec()]);
}

#[test]
fn text_lists_plan_warnings_before_the_summary() {
    let mut plan = realistic_plan();
    plan.warnings.push("default account of `erin` on `testcl` chosen: `hpc_proj3`".into());
    let text = rendered(&plan, Format::Text, false);
    let w = text.find("Warning: default account of `erin`").expect("warning shown");
    assert!(w < text.find("Plan: 5 to add").unwrap());
    assert!(text.ends_with("Plan: 5 to add, 9 to change, 4 to destroy.\n"));
}

#[test]
fn script_is_valid_posix_sh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.sh");
    std::fs::write(&path, rendered(&realistic_plan(), Format::Script, false)).unwrap();
    let out = std::process::Command::new("sh").arg("-n").arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
