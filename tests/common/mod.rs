//! Helpers shared by the integration tests: run the real `slurmplan` binary and capture its
//! exit code, stdout and stderr. Not every test binary uses every helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run slurmplan with `args` and extra environment; no inherited sacctmgr or NO_COLOR; stdin closed.
pub fn slurmplan_env(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_slurmplan"));
    c.args(args).env_remove("SLURMPLAN_SACCTMGR").env_remove("NO_COLOR").stdin(Stdio::null());
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

pub fn slurmplan(args: &[&str]) -> Run {
    slurmplan_env(args, &[])
}

/// The crate's directory.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
