//! Read the current state live: the fixed reads of [`reads::READS`] through a [`Runner`].
//!
//! A fixed number of sacctmgr calls (one per read plus `-V`), independent of the number of
//! accounts. A failing read is an error naming the command and sacctmgr's message; nothing is
//! guessed from partial output. No printing.

use super::parse::{self, RawReads, Source};
use super::reads::{self, READS};
use super::runner::{Output, RunError, Runner};
use crate::diag::Diagnostic;
use crate::model::State;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("`{command}` failed ({status}): {message}")]
    Failed { command: String, status: String, message: String },
}

fn status(o: &Output) -> String {
    if o.timed_out {
        "timed out".into()
    } else {
        match o.code {
            Some(c) => format!("exit {c}"),
            None => "killed by a signal".into(),
        }
    }
}

fn message(o: &Output) -> String {
    let text = if o.stderr.trim().is_empty() { o.stdout.trim() } else { o.stderr.trim() };
    let tail: Vec<&str> = text.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
    if tail.is_empty() { "no output".into() } else { tail.join(" / ") }
}

/// Run one read; success is exit 0, no timeout, and nothing on stderr that says `error`.
pub fn run_read(runner: &dyn Runner, args: &[String]) -> Result<String, LiveError> {
    let o = runner.run(args)?;
    let failed = o.timed_out || o.code != Some(0) || o.stderr.to_ascii_lowercase().contains("error");
    if failed {
        return Err(LiveError::Failed {
            command: runner.describe(args).join(" "),
            status: status(&o),
            message: message(&o),
        });
    }
    Ok(o.stdout)
}

/// The Slurm version (`sacctmgr -V`, last word).
pub fn version(runner: &dyn Runner) -> Result<Option<String>, LiveError> {
    let args: Vec<String> = reads::VERSION_ARGS.iter().map(|s| s.to_string()).collect();
    Ok(reads::parse_version(&run_read(runner, &args)?))
}

/// Run every read. Sources are named `live:<file>` in messages.
pub fn read_all(runner: &dyn Runner) -> Result<RawReads, LiveError> {
    let mut raw = RawReads::default();
    for r in READS {
        let args: Vec<String> = r.args.iter().map(|s| s.to_string()).collect();
        let text = run_read(runner, &args)?;
        if let Some(src) = raw.source_mut(r.file) {
            *src = Source::new(format!("live:{}", r.file), text);
        }
    }
    Ok(raw)
}

/// How many times [`read_consistent`] takes the reads before it gives up.
pub const READ_ATTEMPTS: usize = 3;

/// Why [`read_consistent`] has no state.
#[derive(Debug)]
pub enum ReadError {
    Live(LiveError),
    /// The reads did not parse together on any of the [`READ_ATTEMPTS`] attempts; the
    /// diagnostics are the last attempt's.
    Unparsable(Vec<Diagnostic>),
}

/// Take every read and parse them together, reading again when they do not fit.
///
/// The reads are separate sacctmgr calls, not one transaction: a writer between them (another
/// agent, an admin) can leave them out of step, e.g. associations of a cluster that was added
/// after `clusters.txt` was read. Such a read is taken again, up to [`READ_ATTEMPTS`] times in
/// all; `retrying(attempt, diagnostics)` is told before each new attempt. Output that never
/// parses (a real parser gap) fails after the last attempt with its diagnostics.
pub fn read_consistent(
    runner: &dyn Runner,
    mut retrying: impl FnMut(usize, &[Diagnostic]),
) -> Result<(RawReads, State), ReadError> {
    let mut attempt = 1;
    loop {
        let raw = read_all(runner).map_err(ReadError::Live)?;
        match parse::parse_state(&raw) {
            Ok(state) => return Ok((raw, state)),
            Err(diags) if attempt >= READ_ATTEMPTS => return Err(ReadError::Unparsable(diags)),
            Err(diags) => {
                attempt += 1;
                retrying(attempt, &diags);
            }
        }
    }
}
