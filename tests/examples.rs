//! The deployment examples run: examples/gitops (the GitLab CI file and the GitHub Actions
//! workflow: their `slurmplan` lines, in order, against the fake sacctmgr, plans signed with a
//! test key, the apply of the plan the review saw) and examples/slinky (the manifest parsed:
//! kinds, least-privilege RBAC, one cycle at a time, the mounts its command uses; its command
//! run through a stand-in `kubectl` that checks the exec words and runs the fake). The reconcile
//! units and cron line are run by tests/reconcile.rs, the site examples by tests/cli.rs; the
//! drift crontab and unit (examples/cron) here.
//! Offline; the fake stands in for sacctmgr only.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::*;

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A directory with the example site's state (for the fake), its desired file as
/// `desired.yaml`, and a plan key.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        copy_example_state(&dir.path().join("state"));
        std::fs::copy(root().join("examples/site-a/desired.yaml"), dir.path().join("desired.yaml")).unwrap();
        let key = dir.path().join("plan.key");
        std::fs::write(&key, [7u8; 32]).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        Work { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// Run one `slurmplan ...` line of a CI file in the work directory: words split on
    /// whitespace, `> FILE` taken as stdout to FILE; no shell.
    fn line(&self, line: &str) -> Run {
        let (cmd, out) = match line.split_once(" > ") {
            Some((c, f)) => (c, Some(f.trim())),
            None => (line, None),
        };
        let words: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(words[0], "slurmplan", "{line}");
        let mut c = slurmplan_cmd(&words[1..]);
        c.current_dir(self.dir.path())
            .env("SLURMPLAN_SACCTMGR", &*FAKE)
            .env("FAKE_SACCTMGR_DIR", self.path("state"))
            .env("SLURMPLAN_LOCK_DIR", self.path("locks"))
            .env("SLURMPLAN_PLAN_KEY_FILE", self.path("plan.key"));
        let r = run(&mut c);
        if let Some(f) = out {
            std::fs::write(self.path(f), &r.stdout).unwrap();
        }
        r
    }
}

/// The `slurmplan` lines of a shell script text (one command per line).
fn slurmplan_lines(script: &str) -> Vec<String> {
    script.lines().map(str::trim).filter(|l| l.starts_with("slurmplan ")).map(str::to_string).collect()
}

/// Run a plan job's lines then an apply job's lines; the apply must apply the reviewed plan.
fn review_then_apply(plan: &[String], apply: &[String]) {
    assert!(plan.iter().any(|l| l.contains(" -o plan.json")), "{plan:?}");
    assert!(plan.iter().any(|l| l.contains("--format markdown")), "{plan:?}");
    assert_eq!(apply, ["slurmplan apply plan.json"]);
    let w = Work::new();
    for l in plan {
        let r = w.line(l);
        assert_eq!(r.code, 0, "{l}: {}", r.stderr);
    }
    let review = std::fs::read_to_string(w.path("plan.md")).unwrap();
    assert!(review.contains("sacctmgr -i"), "{review}");
    let signed: Value = serde_json::from_str(&std::fs::read_to_string(w.path("plan.json")).unwrap()).unwrap();
    assert!(signed["signature"].is_string(), "the plan is signed with the CI key");
    let r = w.line(&apply[0]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    let again = w.line("slurmplan plan -d desired.yaml --detailed-exitcode");
    assert_eq!(again.code, 0, "the reviewed plan converged: {}", again.stderr);
}

#[test]
fn the_gitlab_pipeline_reviews_then_applies_exactly_the_plan() {
    let ci = yaml(&root().join("examples/gitops/.gitlab-ci.yml"));
    let script = |job: &str| -> Vec<String> {
        ci[job]["script"].as_array().unwrap().iter().flat_map(|l| slurmplan_lines(l.as_str().unwrap())).collect()
    };
    assert_eq!(ci["plan"]["rules"][0]["if"], "$CI_PIPELINE_SOURCE == \"merge_request_event\"");
    assert_eq!(ci["apply"]["rules"][0]["if"], "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH");
    assert!(ci["apply"]["resource_group"].is_string(), "one apply at a time");
    let artifacts: Vec<&str> =
        ci["plan"]["artifacts"]["paths"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(artifacts.contains(&"plan.json"));
    review_then_apply(&script("plan"), &script("apply"));
}

#[test]
fn the_github_workflow_reviews_then_applies_exactly_the_plan() {
    let wf = yaml(&root().join("examples/gitops/github-actions.yml"));
    let lines = |job: &str| -> Vec<String> {
        wf["jobs"][job]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str())
            .flat_map(slurmplan_lines)
            .collect()
    };
    assert_eq!(wf["jobs"]["plan"]["if"], "github.event_name == 'pull_request'");
    assert_eq!(wf["jobs"]["apply"]["if"], "github.event_name == 'push'");
    assert_eq!(wf["concurrency"]["cancel-in-progress"], false, "an apply is never cancelled half-way");
    review_then_apply(&lines("plan"), &lines("apply"));
}

#[test]
fn the_slinky_cronjob_runs_reconcile_through_kubectl_exec_with_least_privilege() {
    let text = std::fs::read_to_string(root().join("examples/slinky/slurmplan-reconcile.yaml")).unwrap();
    let docs: Vec<Value> =
        text.split("\n---\n").map(|d| serde_saphyr::from_str(d).unwrap_or_else(|e| panic!("{e}\n{d}"))).collect();
    let kind = |k: &str| docs.iter().find(|d| d["kind"] == k).unwrap_or_else(|| panic!("no {k}"));
    for d in &docs {
        assert_eq!(d["metadata"]["namespace"], "slurm", "{d}");
    }
    // RBAC: get pods and create pods/exec, nothing else, bound to the job's service account.
    let mut grants: Vec<(String, String)> = Vec::new();
    for rule in kind("Role")["rules"].as_array().unwrap() {
        for r in rule["resources"].as_array().unwrap() {
            for v in rule["verbs"].as_array().unwrap() {
                grants.push((r.as_str().unwrap().into(), v.as_str().unwrap().into()));
            }
        }
    }
    grants.sort();
    assert_eq!(grants, [("pods".into(), "get".into()), ("pods/exec".into(), "create".into())]);
    let sa = kind("ServiceAccount")["metadata"]["name"].as_str().unwrap();
    let binding = kind("RoleBinding");
    assert_eq!(binding["subjects"][0]["name"], sa);
    assert_eq!(binding["roleRef"]["name"], kind("Role")["metadata"]["name"]);
    let cron = kind("CronJob");
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Forbid");
    let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], sa);
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["allowPrivilegeEscalation"], false);
    let command: Vec<&str> = container["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(command[0], "/usr/bin/slurmplan");
    // Every absolute path of the command is under a mount; the state under a writable one.
    let mounts: Vec<(&str, bool)> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["mountPath"].as_str().unwrap(), m["readOnly"].as_bool().unwrap_or(false)))
        .collect();
    let mount_of = |p: &str| mounts.iter().find(|(m, _)| p.starts_with(&format!("{m}/"))).copied();
    for w in command.iter().skip(1).filter(|w| w.starts_with('/')) {
        assert!(mount_of(w).is_some(), "{w} is on no mount");
    }
    let flag = |f: &str| command[command.iter().position(|w| *w == f).unwrap() + 1];
    assert_eq!(mount_of(flag("--state-dir")).map(|m| m.1), Some(false), "the state dir is writable");

    // Run the command: paths mapped into a temporary directory, `kubectl` a stand-in that
    // checks the exec words and runs the fake sacctmgr for `sacctmgr`.
    let w = Work::new();
    let bin = w.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let prefix = flag("--exec-prefix");
    let words: Vec<&str> = prefix.split_whitespace().collect();
    assert_eq!(words[0], "kubectl");
    sh_script(
        &bin.join("kubectl"),
        &format!(
            "want='{rest}'\n\
             for w in $want; do [ \"$1\" = \"$w\" ] || {{ echo \"kubectl: unexpected word $1 (want $w)\" >&2; exit 99; }}; shift; done\n\
             [ \"$1\" = sacctmgr ] || {{ echo \"kubectl: no sacctmgr after the prefix: $1\" >&2; exit 98; }}\n\
             shift\nexec '{fake}' \"$@\"",
            rest = words[1..].join(" "),
            fake = &*FAKE,
        ),
    );
    let mapped: Vec<String> = command[1..]
        .iter()
        .map(|a| match *a {
            "/etc/slurmplan/desired.yaml" => s(&w.path("desired.yaml")).to_string(),
            "/etc/slurmplan/policy.yaml" => s(&root().join("examples/reconcile/policy.yaml")).to_string(),
            a if a.starts_with("/var/lib/slurmplan/") => {
                s(&w.path("volume").join(a.trim_start_matches("/var/lib/slurmplan/"))).to_string()
            }
            a if a.starts_with('/') => panic!("a path the test does not map: {a}"),
            a => a.to_string(),
        })
        .collect();
    std::fs::create_dir(w.path("volume")).unwrap();
    let args: Vec<&str> = mapped.iter().map(String::as_str).collect();
    let mut c = slurmplan_cmd(&args);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    c.env("PATH", path).env_remove("SLURMPLAN_SACCTMGR").env("FAKE_SACCTMGR_DIR", w.path("state"));
    let r = run(&mut c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(w.path("volume/slurmplan-reconcile.prom").is_file());
    assert!(w.path("volume/state/pending/plan.json").is_file(), "the example site has changes that wait");
}

/// The words of an example command with the paths of an install mapped into `w`.
fn mapped(w: &Work, words: &[&str]) -> Vec<String> {
    words
        .iter()
        .map(|a| match *a {
            "/etc/slurmplan/desired.yaml" => s(&w.path("desired.yaml")).to_string(),
            a if a.starts_with("/var/lib/prometheus/node-exporter/") => s(&w.path("drift.prom")).to_string(),
            a if a.starts_with('/') => panic!("a path the test does not map: {a}"),
            a => a.to_string(),
        })
        .collect()
}

/// examples/cron: every active crontab line and the drift unit's ExecStart run against the fake
/// (the example site drifts: exit 2, which the unit counts as success).
#[test]
fn the_cron_examples_run() {
    let dir = root().join("examples/cron");
    let crontab = std::fs::read_to_string(dir.join("crontab")).unwrap();
    let unit = std::fs::read_to_string(dir.join("slurmplan-drift.service")).unwrap();
    let mut commands: Vec<(String, Vec<i32>)> = crontab
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains("/usr/bin/slurmplan"))
        .map(|l| (l.split_whitespace().skip(6).collect::<Vec<_>>().join(" "), vec![2]))
        .collect();
    assert_eq!(commands.len(), 2, "{crontab}");
    let success: Vec<i32> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("SuccessExitStatus="))
        .flat_map(|v| v.split_whitespace().map(|c| c.parse::<i32>().unwrap()))
        .chain([0])
        .collect();
    commands.push((unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).unwrap().to_string(), success));
    for (line, ok) in commands {
        let w = Work::new();
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "/usr/bin/slurmplan", "{line}");
        let args = mapped(&w, &words[1..]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut c = slurmplan_cmd(&args);
        c.env("SLURMPLAN_SACCTMGR", &*FAKE).env("FAKE_SACCTMGR_DIR", w.path("state"));
        let r = run(&mut c);
        assert!(ok.contains(&r.code), "{line}: exit {} not in {ok:?}\n{}", r.code, r.stderr);
        if line.contains("--format prometheus") {
            common::prometheus::validate_prometheus(&std::fs::read_to_string(w.path("drift.prom")).unwrap()).unwrap();
        }
    }
}
