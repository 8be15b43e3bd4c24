//! Running programs from the tests: the `slurmplan` binary (with or without a sacctmgr of the
//! test's choice) and any command whose exit code, stdout and stderr a test reads. Stdin is
//! always closed. Must not run a shell for the program under test, nor read the environment
//! for what to run: the caller says which sacctmgr (tests/common/testbed.rs for a real one).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// Run `c` with stdin closed and capture what it did.
pub fn run(c: &mut Command) -> Run {
    let o = c.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("run {:?}: {e}", c.get_program()));
    Run::from(o)
}

/// The `slurmplan` binary with `args`, ready for environment and `run`.
pub fn slurmplan_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_slurmplan"));
    c.args(args);
    c
}

/// Run slurmplan with `args` and extra environment; no inherited sacctmgr or NO_COLOR; stdin closed.
pub fn slurmplan_env(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut c = slurmplan_cmd(args);
    c.env_remove("SLURMPLAN_SACCTMGR").env_remove("NO_COLOR");
    for (k, v) in env {
        c.env(k, v);
    }
    run(&mut c)
}

pub fn slurmplan(args: &[&str]) -> Run {
    slurmplan_env(args, &[])
}

/// Write an executable `/bin/sh` script (a stand-in for ssh or sacctmgr) and return its path.
pub fn sh_script(path: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// A helper binary of crates/dev (`slurmplan-fake-sacctmgr`, `slurmplan-gen`). Cargo builds a
/// package's own binaries for its integration tests (`CARGO_BIN_EXE_*`), not another package's:
/// these are found beside the test executable (target/<profile>/NAME), where `cargo build` at the
/// workspace root puts them (the README's test command builds before it tests). Fails, saying
/// what to build, when the binary is missing or older than its own source in crates/dev or a source file of a
/// crate it depends on (a stale fake would test old behaviour).
/// The fake sacctmgr of crates/dev (`slurmplan-fake-sacctmgr`), as a string for `--sacctmgr`
/// and `SLURMPLAN_SACCTMGR`.
pub static FAKE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dev_bin("slurmplan-fake-sacctmgr").to_str().expect("utf-8 path").to_string());

/// Copy the example site's snapshot (examples/site-a/state) into the new directory `to`: a
/// state for the fake sacctmgr to change.
pub fn copy_example_state(to: &Path) {
    std::fs::create_dir(to).unwrap();
    for e in std::fs::read_dir(root().join("examples/site-a/state")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

pub fn dev_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe.parent().and_then(Path::parent).expect("the test executable is in target/<profile>/deps");
    let bin = dir.join(name);
    let build = "build it with `cargo build -p slurmplan-dev` (the README's test command does)";
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}; {build}", bin.display()));
    let mut crates = vec!["dev".to_string()];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(c) = crates.pop() {
        if !seen.insert(c.clone()) {
            continue;
        }
        let dir = root().join("crates").join(&c);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        // `slurmplan-X.workspace = true` lines: the crates this one depends on
        crates
            .extend(manifest.lines().filter_map(|l| l.strip_prefix("slurmplan-")?.split('.').next().map(String::from)));
        // in crates/dev only this binary's own sources count (each binary is its own target:
        // cargo does not relink one when another one's source changes)
        let src = if c == "dev" {
            let bin = dir.join("src/bin");
            if bin.join(name).is_dir() { bin.join(name) } else { bin.join(format!("{name}.rs")) }
        } else {
            dir.join("src")
        };
        if let Some(newer) = newer_than(&src, built) {
            panic!("{} is older than {}; {build}", bin.display(), newer.display());
        }
    }
    bin
}

/// A file at or under `dir` modified after `t`, if any.
fn newer_than(dir: &Path, t: std::time::SystemTime) -> Option<PathBuf> {
    if dir.is_file() {
        return std::fs::metadata(dir).and_then(|m| m.modified()).is_ok_and(|m| m > t).then(|| dir.to_path_buf());
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if let Some(n) = newer_than(&p, t) {
                return Some(n);
            }
        } else if std::fs::metadata(&p).and_then(|m| m.modified()).is_ok_and(|m| m > t) {
            return Some(p);
        }
    }
    None
}

/// The workspace's directory (the root package's).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
