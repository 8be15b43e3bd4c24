//! Phase timings on stderr when `SLURMPLAN_TIMINGS=1` (for benchmarks; `Settings::timings`):
//! one `timing: PHASE: SECONDS s (resident N MiB)` line per phase.
//!
//! Must not: print anything when timings are off, or change what a command does.

use std::time::{Duration, Instant};

/// Marks the end of each phase; prints only when `on`.
pub struct Timings {
    on: bool,
    last: Instant,
}

impl Timings {
    pub fn start(on: bool) -> Timings {
        Timings { on, last: Instant::now() }
    }
    /// The phase since the last mark is over.
    pub fn mark(&mut self, what: &str) {
        self.note(what, self.last.elapsed());
        self.last = Instant::now();
    }
    /// Report a duration measured elsewhere (by the pipeline, or on another thread).
    pub fn note(&self, what: &str, took: Duration) {
        if self.on {
            eprintln!("timing: {what}: {:.3} s{}", took.as_secs_f64(), resident());
        }
    }
}

/// The process's resident memory now (Linux `/proc/self/status`), for timing lines; empty where
/// it cannot be read.
fn resident() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kib.map(|k| format!(" (resident {} MiB)", k / 1024)).unwrap_or_default()
}
