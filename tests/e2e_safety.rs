//! Transports, timeouts and interrupted applies, end to end against a REAL slurmdbd started by
//! `scripts/slurm-testbed` (gated by `SLURMPLAN_TESTBED` like tests/e2e_real.rs: unset -> the
//! test says it is skipped; set -> the bed must answer). Tests that need no bed always run.
//!
//! The ssh stand-in builds the remote command exactly as OpenSSH does: options, the host, then
//! the remaining words joined with single spaces and handed to the login shell (`sh -c`), here
//! on the local machine.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn testbed() -> Option<String> {
    match std::env::var("SLURMPLAN_TESTBED") {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            eprintln!("skipped: SLURMPLAN_TESTBED is not set (`eval \"$(scripts/slurm-testbed up DIR)\"`)");
            None
        }
    }
}

fn sacctmgr_path() -> String {
    std::env::var("SLURMPLAN_SACCTMGR").unwrap_or_else(|_| "sacctmgr".into())
}

fn sacctmgr(args: &[&str]) -> Output {
    Command::new("timeout").arg("60").arg(sacctmgr_path()).args(args).stdin(Stdio::null()).output().expect("sacctmgr")
}

fn seed(args: &[&str]) {
    let mut v = vec!["-i"];
    v.extend_from_slice(args);
    let o = sacctmgr(&v);
    assert!(
        o.status.success(),
        "seed {v:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn show(args: &[&str]) -> Vec<String> {
    let mut v = vec!["-n", "-P"];
    v.extend_from_slice(args);
    let o = sacctmgr(&v);
    assert!(o.status.success(), "show failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn slurmplan_in(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_slurmplan"));
    c.args(args)
        .current_dir(dir)
        .env("SLURMPLAN_SACCTMGR", sacctmgr_path())
        .env("SLURMPLAN_LOCK_DIR", dir)
        .env_remove("SLURMPLAN_SSH")
        .env_remove("SLURMPLAN_EXEC_PREFIX")
        .env_remove("SLURMPLAN_PLAN_KEY_FILE")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run slurmplan");
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn script(path: &Path, body: &str) -> PathBuf {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// A directory holding an `ssh` that behaves like OpenSSH's client towards the remote shell,
/// logging each remote command line to `ssh.log` beside it.
fn ssh_stand_in(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    script(
        &bin.join("ssh"),
        &format!(
            r#"while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-l|-i|-F|-J) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1; shift
[ "${{1-}}" = "--" ] && shift
printf '%s\n' "$host: $*" >> {log}
exec sh -c "$*""#,
            log = dir.join("ssh.log").display()
        ),
    );
    bin
}

fn path_with(bin: &Path) -> String {
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

fn register_cluster(name: &str) -> String {
    let cluster = format!("{name}{}", std::process::id() % 10000);
    let o = sacctmgr(&["-n", "-P", "show", "cluster", "format=Cluster"]);
    assert!(o.status.success(), "SLURMPLAN_TESTBED is set but sacctmgr does not answer");
    seed(&["add", "cluster", &cluster]);
    cluster
}

/// Descriptions holding `;`, `$( )`, backquote-free command substitutions, redirections, globs
/// and spaces reach slurmdbd byte for byte over `--ssh`; quotes and newlines are refused before
/// anything runs; `--exec-prefix "ssh ..."` is refused as a usage error.
#[test]
fn ssh_transport_delivers_free_text_verbatim() {
    if testbed().is_none() {
        return;
    }
    let cluster = register_cluster("e2essh");
    let dir = tempfile::tempdir().unwrap();
    let bin = ssh_stand_in(dir.path());
    let nasty = "genome assembly 2026;touch pwned1 $(touch pwned2) & touch pwned3 >pwned4 * ~ #x";
    let yaml = |descr: &str| {
        format!(
            "version: 1\nmanaged:\n  roots: [sshroot]\nclusters:\n  {cluster}:\n    accounts:\n      sshroot: {{description: \"{descr}\"}}\n      sshchild: {{parent: sshroot, organization: \"a;b $(c) d\", users: [sshuser]}}\n"
        )
    };
    let desired = dir.path().join("desired.yaml");
    std::fs::write(&desired, yaml(nasty)).unwrap();
    let d = desired.to_str().unwrap();
    let env = [("PATH", path_with(&bin))];

    let r =
        slurmplan_in(dir.path(), &["--ssh", "headnode", "apply", "-d", d, "--auto-approve", "--color", "never"], &env);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("Verified"), "{}", r.stderr);
    let log = std::fs::read_to_string(dir.path().join("ssh.log")).unwrap();
    assert!(log.lines().any(|l| l.starts_with("headnode: ") && l.contains(" -i add account ")), "{log}");
    for f in ["pwned1", "pwned2", "pwned3", "pwned4"] {
        assert!(!dir.path().join(f).exists(), "the remote shell ran `{f}`:\n{log}");
    }
    let rows = show(&["show", "account", "sshroot", "format=Account,Description"]);
    assert_eq!(rows, [format!("sshroot|{nasty}").to_lowercase()]);
    let rows = show(&["show", "account", "sshchild", "format=Account,Organization"]);
    assert_eq!(rows, ["sshchild|a;b $(c) d"]);
    // a fresh plan over ssh is empty: the read path went through the same transport
    let again = slurmplan_in(dir.path(), &["--ssh", "headnode", "plan", "-d", d, "--detailed-exitcode"], &env);
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);

    for bad in ["it's", "say \\\"hi\\\"", "two\\nlines"] {
        std::fs::write(&desired, yaml(bad)).unwrap();
        let r = slurmplan_in(dir.path(), &["--ssh", "headnode", "apply", "-d", d, "--auto-approve"], &env);
        assert_eq!(r.code, 1, "{bad}: {}", r.stderr);
        assert!(r.stderr.contains("description"), "{}", r.stderr);
    }
    assert_eq!(
        show(&["show", "account", "sshroot", "format=Account,Description"]),
        [format!("sshroot|{nasty}").to_lowercase()]
    );

    std::fs::write(&desired, yaml(nasty)).unwrap();
    let r = slurmplan_in(dir.path(), &["--exec-prefix", "ssh headnode --", "plan", "-d", d], &env);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("--ssh"), "{}", r.stderr);
    let r = slurmplan_in(
        dir.path(),
        &["plan", "-d", d],
        &[("PATH", path_with(&bin)), ("SLURMPLAN_EXEC_PREFIX", "/usr/bin/ssh -T head".into())],
    );
    assert_eq!(r.code, 64, "{}", r.stderr);
}

/// `--timeout` holds when sacctmgr is a wrapper whose child keeps the pipes open: slurmplan
/// returns soon after the deadline and the child is gone.
#[test]
fn timeout_holds_for_a_wrapper_with_a_long_child() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child.pid");
    let wrapper = script(&dir.path().join("sacctmgr"), &format!("sleep 120 &\necho $! > {}\nwait", pidfile.display()));
    let t0 = Instant::now();
    let r = slurmplan_in(
        dir.path(),
        &[
            "--sacctmgr",
            wrapper.to_str().unwrap(),
            "--timeout",
            "1",
            "dump",
            "-o",
            dir.path().join("snap").to_str().unwrap(),
        ],
        &[],
    );
    let took = t0.elapsed();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let gone = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
            .unwrap_or(true)
    };
    let t = Instant::now();
    while !gone(pid.trim()) && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(pid.trim()), "the wrapper's child {} is still running", pid.trim());
}
