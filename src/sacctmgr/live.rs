//! Read the current state live: the fixed reads of [`reads::READS`] through a [`Runner`],
//! run concurrently, their output streamed without a size limit.
//!
//! A fixed number of sacctmgr calls (one per read plus `-V`), independent of the number of
//! accounts. The association read (the one that grows with the site) is parsed as it arrives
//! and its text is kept only when a snapshot is written from it. A failing read is an error
//! naming the command and sacctmgr's message; nothing is guessed from partial output. No
//! printing.

use super::parse::{self, AssocStream, RawReads, Source, Unsplit};
use super::reads::{self, READS, Read};
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

/// Whether a run of `args` failed: not exit 0, timed out, or `error` on stderr.
fn check(runner: &dyn Runner, args: &[String], o: &Output) -> Result<(), LiveError> {
    let failed = o.timed_out || o.code != Some(0) || o.stderr.to_ascii_lowercase().contains("error");
    if failed {
        return Err(LiveError::Failed {
            command: runner.describe(args).join(" "),
            status: status(o),
            message: message(o),
        });
    }
    Ok(())
}

/// Run one read; success is exit 0, no timeout, and nothing on stderr that says `error`.
pub fn run_read(runner: &dyn Runner, args: &[String]) -> Result<String, LiveError> {
    let o = runner.run(args)?;
    check(runner, args, &o)?;
    Ok(o.stdout)
}

/// The Slurm version (`sacctmgr -V`, last word).
pub fn version(runner: &dyn Runner) -> Result<Option<String>, LiveError> {
    let args: Vec<String> = reads::VERSION_ARGS.iter().map(|s| s.to_string()).collect();
    Ok(reads::parse_version(&run_read(runner, &args)?))
}

/// Whether the association read's text is kept in [`RawReads`] (a snapshot is written from it)
/// or only parsed as it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Parse only: `RawReads::assocs` stays empty.
    Parsed,
    /// Also keep the whole text (`dump`).
    Text,
}

/// One read, its output streamed: the association read into an [`AssocStream`] (and its text
/// only with [`Keep::Text`]), the others into their text.
fn read_one(runner: &dyn Runner, read: &Read, keep: Keep) -> Result<(Source, Option<AssocStream>), LiveError> {
    let args: Vec<String> = read.args.iter().map(|s| s.to_string()).collect();
    let name = format!("live:{}", read.file);
    let mut text = Vec::new();
    let mut stream = (read.file == reads::ASSOCS).then(|| AssocStream::new(&name, 0));
    let keep_text = stream.is_none() || keep == Keep::Text;
    let o = runner.stream(&args, &mut |bytes| {
        if let Some(s) = &mut stream {
            s.feed(bytes);
        }
        if keep_text {
            text.extend_from_slice(bytes);
        }
    })?;
    check(runner, &args, &o)?;
    let text = match String::from_utf8(text) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((Source::new(name, text), stream))
}

/// Run every read, all at once (they are independent: a live read costs about its slowest
/// call), and parse the association read while it arrives. Sources are named `live:<file>`.
/// The first failing read (in [`READS`] order) is the error.
pub fn read_all(runner: &dyn Runner, keep: Keep) -> Result<(RawReads, AssocStream), LiveError> {
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = READS.iter().map(|r| scope.spawn(move || read_one(runner, r, keep))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let mut raw = RawReads::default();
    let mut assocs = None;
    for (r, result) in READS.iter().zip(results) {
        let (src, stream) = result?;
        if let Some(slot) = raw.source_mut(r.file) {
            *slot = src;
        }
        assocs = assocs.or(stream);
    }
    Ok((raw, assocs.expect("READS has the association read")))
}

/// How many times [`read_consistent`] takes the reads before it gives up.
pub const READ_ATTEMPTS: usize = 3;

/// Why [`read_consistent`] has no state.
#[derive(Debug)]
pub enum ReadError {
    Live(LiveError),
    /// The reads did not parse together; the diagnostics are the last attempt's.
    Unparsable {
        diags: Vec<Diagnostic>,
        /// Attempts made.
        attempts: usize,
        /// Whether the reads were out of step with each other (a writer between them) rather
        /// than holding data slurmplan cannot take.
        out_of_step: bool,
    },
}

/// Take every read and parse them together, reading again when they do not fit. Rows that
/// cannot be split ([`Unsplit`]) are left out of the state and returned beside it.
///
/// The reads are separate sacctmgr calls, not one transaction: a writer between them (another
/// agent, an admin) can leave them out of step, e.g. associations of a cluster that was added
/// after `clusters.txt` was read. Only such a read is taken again, up to [`READ_ATTEMPTS`]
/// times in all; `retrying(attempt, diagnostics)` is told before each new attempt. A problem
/// in the data itself (a cell slurmplan cannot read) is not retried: it would come back the
/// same on every read.
pub fn read_consistent(
    runner: &dyn Runner,
    keep: Keep,
    mut retrying: impl FnMut(usize, &[Diagnostic]),
) -> Result<(RawReads, State, Vec<Unsplit>), ReadError> {
    let mut attempt = 1;
    loop {
        let (raw, assocs) = read_all(runner, keep).map_err(ReadError::Live)?;
        match parse::parse_state_streamed(&raw, assocs) {
            Ok((state, unsplit)) => return Ok((raw, state, unsplit)),
            Err(diags) => {
                let out_of_step = diags.iter().any(parse::is_out_of_step);
                if attempt >= READ_ATTEMPTS || !out_of_step {
                    return Err(ReadError::Unparsable { diags, attempts: attempt, out_of_step });
                }
                attempt += 1;
                retrying(attempt, &diags);
            }
        }
    }
}
