//! The one process spawn: run sacctmgr with an argv (never a shell), stdin closed, a timeout,
//! and its output either streamed (reads: [`Runner::stream`], no size limit) or captured with a
//! size cap (writes: [`Runner::run`], whose output is kept in journals and messages).
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

/// Shared by the concurrent live reads (`Sync`).
pub trait Runner: Sync {
    /// Run sacctmgr with `args` (without the program name); stdout and stderr are kept up to a
    /// cap each (the output is stored in journals and messages).
    fn run(&self, args: &[String]) -> Result<Output, RunError>;
    /// Run sacctmgr with `args`, handing stdout to `sink` in pieces as it arrives, whatever its
    /// size (a read of a million associations prints ~100 MB); `Output::stdout` is then empty and
    /// stderr is kept up to the cap.
    fn stream(&self, args: &[String], sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError>;
    /// The full argv that `run(args)` executes (for journals and messages).
    fn describe(&self, args: &[String]) -> Vec<String>;
}

/// Runs a real process.
#[derive(Debug, Clone)]
pub struct ProcessRunner {
    pub program: PathBuf,
    pub prefix: Vec<String>,
    pub timeout: Duration,
    /// Bytes kept of each captured stream (the rest is dropped, with a marker); streamed stdout
    /// has no limit.
    pub cap: usize,
}

impl ProcessRunner {
    pub fn new(program: PathBuf, prefix: Vec<String>, timeout: Duration) -> ProcessRunner {
        ProcessRunner { program, prefix, timeout, cap: 1 << 20 }
    }
}

/// The first `cap` bytes of a stream, and how many were dropped after them.
struct Capped {
    kept: Vec<u8>,
    cap: usize,
    dropped: usize,
}

impl Capped {
    fn new(cap: usize) -> Capped {
        Capped { kept: Vec::new(), cap, dropped: 0 }
    }

    fn push(&mut self, b: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&b[..b.len().min(room)]);
        self.dropped += b.len().saturating_sub(room);
    }

    fn finish(self) -> String {
        let mut s = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[slurmplan: {} more bytes dropped]\n", self.dropped));
        }
        s
    }
}

fn drain(mut r: impl Read + Send + 'static, cap: usize) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Capped::new(cap);
        let mut buf = [0u8; 65536];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => kept.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        kept.finish()
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
        let mut kept = Capped::new(self.cap);
        let mut out = self.stream(args, &mut |b| kept.push(b))?;
        out.stdout = kept.finish();
        Ok(out)
    }

    fn stream(&self, args: &[String], sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
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
        let mut stdout = child.stdout.take().expect("piped");
        let err = drain(child.stderr.take().expect("piped"), self.cap);
        // The child is waited for (and killed at the timeout) on its own thread, while this one
        // hands stdout to the sink: a kill closes the pipe and ends the loop below.
        let timeout = self.timeout;
        let waiter = std::thread::spawn(move || {
            let mut timed_out = false;
            let status = loop {
                match child.try_wait() {
                    Ok(Some(st)) => break Some(st),
                    Ok(None) => {
                        if start.elapsed() >= timeout {
                            timed_out = true;
                            let _ = child.kill();
                            break child.wait().ok();
                        }
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(_) => break None,
                }
            };
            (status, timed_out)
        });
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => sink(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let (status, timed_out) = waiter.join().unwrap_or((None, false));
        let stderr = err.join().unwrap_or_default();
        Ok(Output {
            code: if timed_out { None } else { status.and_then(|s| s.code()) },
            stdout: String::new(),
            stderr,
            timed_out,
            duration: start.elapsed(),
        })
    }
}
