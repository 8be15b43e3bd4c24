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

/// The crate's directory.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
