//! The one process spawn: run sacctmgr with an argv (never a shell), stdin closed, a timeout,
//! and output captured with a size cap.
//!
//! The [`Runner`] trait lets apply and the live reader be tested with fakes; [`ProcessRunner`]
//! is the real thing. A transport prefix (`ssh head1 --`, `kubectl exec ... --`) is prepended
//! word by word. This module does not interpret sacctmgr's output (see `outcome`) and prints
//! nothing.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command as Proc, Stdio};
use std::time::{Duration, Instant};

/// What one run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Exit code; `None` when killed by a signal or by our timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub duration: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("cannot run `{program}`: {reason}")]
    Spawn { program: String, reason: String },
}

pub trait Runner {
    /// Run sacctmgr with `args` (without the program name).
    fn run(&self, args: &[String]) -> Result<Output, RunError>;
    /// The full argv that `run(args)` executes (for journals and messages).
    fn describe(&self, args: &[String]) -> Vec<String>;
}

/// Runs a real process.
#[derive(Debug, Clone)]
pub struct ProcessRunner {
    pub program: PathBuf,
    pub prefix: Vec<String>,
    pub timeout: Duration,
    /// Bytes kept of each stream (the rest is dropped, with a marker).
    pub cap: usize,
}

impl ProcessRunner {
    pub fn new(program: PathBuf, prefix: Vec<String>, timeout: Duration) -> ProcessRunner {
        ProcessRunner { program, prefix, timeout, cap: 1 << 20 }
    }
}

fn drain(mut r: impl Read + Send + 'static, cap: usize) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 65536];
        let mut dropped = 0usize;
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    dropped += n.saturating_sub(room);
                }
            }
        }
        let mut s = String::from_utf8_lossy(&kept).into_owned();
        if dropped > 0 {
            s.push_str(&format!("\n[slurmplan: {dropped} more bytes dropped]\n"));
        }
        s
    })
}

impl Runner for ProcessRunner {
    fn describe(&self, args: &[String]) -> Vec<String> {
        let mut v = self.prefix.clone();
        v.push(self.program.display().to_string());
        v.extend(args.iter().cloned());
        v
    }

    fn run(&self, args: &[String]) -> Result<Output, RunError> {
        let argv = self.describe(args);
        let start = Instant::now();
        let mut child = Proc::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunError::Spawn {
                program: argv[0].clone(),
                reason: if e.kind() == std::io::ErrorKind::NotFound {
                    "not found (set --sacctmgr PATH or SLURMPLAN_SACCTMGR)".into()
                } else {
                    e.to_string()
                },
            })?;
        let out = drain(child.stdout.take().expect("piped"), self.cap);
        let err = drain(child.stderr.take().expect("piped"), self.cap);
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) => {
                    if start.elapsed() >= self.timeout {
                        timed_out = true;
                        let _ = child.kill();
                        break child.wait().ok();
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(_) => break None,
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        Ok(Output {
            code: if timed_out { None } else { status.and_then(|s| s.code()) },
            stdout,
            stderr,
            timed_out,
            duration: start.elapsed(),
        })
    }
}
