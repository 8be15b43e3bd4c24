//! The transport seam: what slurmplan asks of slurmdbd (take one of the fixed reads, run one
//! plan step with its standard input), kept apart from how the request gets there. The live
//! reader (`live`) and the executor (`apply`) take a `&dyn Transport` and know nothing of
//! processes, prefixes or ssh; planning never sees a transport at all.
//!
//! Today's one implementation is `runner::ProcessRunner` (sacctmgr run locally, through an
//! `--exec-prefix`, or over `--ssh`); unit tests plug in fakes to inject faults. This module
//! holds only the trait and the types it trades in (with [`Capped`], the cap on kept output):
//! it spawns nothing, reads no file, and does not interpret sacctmgr's output (that is
//! `apply::outcome`'s and `live`'s work).

use std::time::Duration;

use super::reads::{Filter, Read};

/// What one call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Exit code; `None` when killed by a signal or by our timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub duration: Duration,
}

/// Bytes kept of each captured stream (stdout of [`Transport::run`], stderr of every call).
pub const CAP: usize = 1 << 20;

/// The first `cap` bytes of a stream, and how many were dropped after them.
pub struct Capped {
    kept: Vec<u8>,
    cap: usize,
    dropped: usize,
}

impl Capped {
    pub fn new(cap: usize) -> Capped {
        Capped { kept: Vec::new(), cap, dropped: 0 }
    }

    pub fn push(&mut self, b: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&b[..b.len().min(room)]);
        self.dropped += b.len().saturating_sub(room);
    }

    /// The kept bytes as text, with a marker saying how many were dropped.
    pub fn finish(self) -> String {
        let mut s = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[slurmplan: {} more bytes dropped]\n", self.dropped));
        }
        s
    }
}

/// A call that could not be made at all (nothing ran).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("cannot run `{program}`: {reason}")]
    Spawn { program: String, reason: String },
}

/// How slurmplan reaches slurmdbd. Shared by the concurrent live reads (`Sync`).
///
/// Arguments are sacctmgr's words after the program name: a read's [`Read::args`], a plan
/// step's `argv[1..]` exactly as stored in the plan. Every call ends within [`Transport::timeout`]
/// (then `Output::timed_out` is set and `code` is `None`).
pub trait Transport: Sync {
    /// Take one of the fixed reads (`reads::READS`, `reads::VERSION`, `reads::USERS_SEEN`),
    /// limited by `filter` (one cluster for a [`Read::per_cluster`] read, some users for
    /// `USERS_SEEN`), handing its stdout (the `-n -P` text sacctmgr prints for
    /// `read.args_for(filter)`) to `sink` in pieces as it arrives, whatever its size;
    /// `Output::stdout` is then empty and stderr is kept up to a cap.
    fn read(&self, read: &Read, filter: Filter<'_>, sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError>;
    /// Run one plan step: `args` after the program name, `stdin` written to its standard input
    /// (then closed) when given (how a `load file=/dev/stdin` gets its file). stdout and stderr
    /// are kept up to a cap each: they go to journals and messages.
    fn run(&self, args: &[String], stdin: Option<&[u8]>) -> Result<Output, RunError>;
    /// The command this transport carries out for `args`, as journals and messages show it.
    fn describe(&self, args: &[String]) -> Vec<String>;
    /// How long one call may take before the transport ends it.
    fn timeout(&self) -> Duration;
}
