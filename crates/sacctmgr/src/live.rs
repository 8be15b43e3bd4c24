//! Read the current state live: the fixed reads of [`reads::READS`] through a [`Transport`]
//! (whichever one: this module knows no process, prefix or ssh), run concurrently, their output
//! streamed without a size limit.
//!
//! A fixed number of calls (one per read plus the version), independent of the number of
//! accounts. The association read (the one that grows with the site) is parsed as it arrives
//! and its text is kept only when a snapshot is written from it. A failing read is an error
//! naming the command and sacctmgr's message; nothing is guessed from partial output. No
//! printing.

use super::parse::{self, AssocStream, RawReads, Source, Unsplit};
use super::reads::{self, READS, Read};
use super::transport::{CAP, Capped, Output, RunError, Transport};
use slurmplan_diag::Diagnostic;
use slurmplan_model::State;

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

/// Whether `read` failed: not exit 0, timed out, or `error` on stderr.
fn check(transport: &dyn Transport, read: &Read, o: &Output) -> Result<(), LiveError> {
    let failed = o.timed_out || o.code != Some(0) || o.stderr.to_ascii_lowercase().contains("error");
    if failed {
        let args: Vec<String> = read.args.iter().map(|s| s.to_string()).collect();
        return Err(LiveError::Failed {
            command: transport.describe(&args).join(" "),
            status: status(o),
            message: message(o),
        });
    }
    Ok(())
}

/// Take one read and keep its stdout up to the cap; success is exit 0, no timeout, and
/// nothing on stderr that says `error`. For small reads (the version), whose text is shown in
/// the message when it fails.
pub fn read_text(transport: &dyn Transport, read: &Read) -> Result<String, LiveError> {
    let mut kept = Capped::new(CAP);
    let mut o = transport.read(read, &mut |b| kept.push(b))?;
    o.stdout = kept.finish();
    check(transport, read, &o)?;
    Ok(o.stdout)
}

/// The Slurm version (`sacctmgr -V`, last word).
pub fn version(transport: &dyn Transport) -> Result<Option<String>, LiveError> {
    Ok(reads::parse_version(&read_text(transport, &reads::VERSION)?))
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
fn read_one(transport: &dyn Transport, read: &Read, keep: Keep) -> Result<(Source, Option<AssocStream>), LiveError> {
    let name = format!("live:{}", read.file);
    let mut text = Vec::new();
    let mut stream = (read.file == reads::ASSOCS).then(|| AssocStream::new(&name, 0));
    let keep_text = stream.is_none() || keep == Keep::Text;
    let o = transport.read(read, &mut |bytes| {
        if let Some(s) = &mut stream {
            s.feed(bytes);
        }
        if keep_text {
            text.extend_from_slice(bytes);
        }
    })?;
    check(transport, read, &o)?;
    let text = match String::from_utf8(text) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((Source::new(name, text), stream))
}

/// Run every read, all at once (they are independent: a live read costs about its slowest
/// call), and parse the association read while it arrives. Sources are named `live:<file>`.
/// The first failing read (in [`READS`] order) is the error.
pub fn read_all(transport: &dyn Transport, keep: Keep) -> Result<(RawReads, AssocStream), LiveError> {
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = READS.iter().map(|r| scope.spawn(move || read_one(transport, r, keep))).collect();
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
    transport: &dyn Transport,
    keep: Keep,
    mut retrying: impl FnMut(usize, &[Diagnostic]),
) -> Result<(RawReads, State, Vec<Unsplit>), ReadError> {
    let mut attempt = 1;
    loop {
        let (raw, assocs) = read_all(transport, keep).map_err(ReadError::Live)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    /// A transport with no process behind it: each read is answered from a file of a snapshot
    /// directory, in small pieces, the way any other transport (slurmrestd) would hand its text
    /// over; one read can be made to fail. It records the reads it was asked for.
    struct Files {
        dir: PathBuf,
        fail: Option<(&'static str, Output)>,
        asked: std::sync::Mutex<Vec<&'static str>>,
    }

    fn done(code: Option<i32>, stdout: &str, stderr: &str, timed_out: bool) -> Output {
        Output { code, stdout: stdout.into(), stderr: stderr.into(), timed_out, duration: Duration::ZERO }
    }

    impl Transport for Files {
        fn read(&self, read: &Read, sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
            self.asked.lock().unwrap().push(read.file);
            if let Some((file, out)) = &self.fail
                && *file == read.file
            {
                sink(out.stdout.as_bytes());
                return Ok(Output { stdout: String::new(), ..out.clone() });
            }
            let text = if read.file == reads::VERSION.file {
                b"slurm-wlm 22.05.8\n".to_vec()
            } else {
                std::fs::read(self.dir.join(read.file)).unwrap()
            };
            for piece in text.chunks(7) {
                sink(piece);
            }
            Ok(done(Some(0), "", "", false))
        }
        fn run(&self, _: &[String], _: Option<&[u8]>) -> Result<Output, RunError> {
            panic!("the live reader runs no step")
        }
        fn describe(&self, args: &[String]) -> Vec<String> {
            std::iter::once("rest:".to_string()).chain(args.iter().cloned()).collect()
        }
        fn timeout(&self) -> Duration {
            Duration::from_secs(1)
        }
    }

    fn site_a() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site-a/state")
    }

    fn files(fail: Option<(&'static str, Output)>) -> Files {
        Files { dir: site_a(), fail, asked: Default::default() }
    }

    /// The live reader needs nothing of a process: through another transport it takes each
    /// fixed read once and gets the state the snapshot loader reads from the same files.
    #[test]
    fn the_live_reader_takes_the_state_through_any_transport() {
        let t = files(None);
        assert_eq!(version(&t).unwrap().as_deref(), Some("22.05.8"));
        let (raw, state, unsplit) = read_consistent(&t, Keep::Text, |_, _| panic!("no retry")).unwrap();
        assert!(unsplit.is_empty());
        assert_eq!(state, crate::snapshot::load(&site_a()).unwrap());
        let mut asked = t.asked.lock().unwrap().clone();
        asked.sort();
        let mut want: Vec<&str> = READS.iter().map(|r| r.file).chain([reads::VERSION.file]).collect();
        want.sort();
        assert_eq!(asked, want);
        for (file, text) in raw.to_files() {
            assert_eq!(text.as_bytes(), std::fs::read(site_a().join(file)).unwrap(), "{file}");
        }
    }

    /// A failing read is an error naming the command as the transport describes it, its status
    /// and its message (stderr, or for the version read the stdout it printed instead).
    #[test]
    fn a_failing_read_is_named_as_its_transport_describes_it() {
        let err = |file, out| match read_all(&files(Some((file, out))), Keep::Parsed) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{file} failed"),
        };
        assert_eq!(
            err(reads::QOS, done(Some(1), "", "sacctmgr: error: Problem talking to the database\n", false)),
            "`rest: -n -P show qos format=Name,Flags,GrpTRESMins,GrpTRES,GrpSubmitJobs,MaxWall,Description` failed (exit 1): sacctmgr: error: Problem talking to the database"
        );
        assert_eq!(
            err(reads::CLUSTERS, done(None, "", "", true)),
            "`rest: -n -P show cluster format=Cluster` failed (timed out): no output"
        );
        // exit 0 with an error on stderr is a failure too
        assert!(err(reads::DEFAULTS, done(Some(0), "", "Error: x\n", false)).ends_with("failed (exit 0): Error: x"));
        let v = version(&files(Some((reads::VERSION.file, done(Some(2), "no such\nflag\n", "", false)))));
        assert_eq!(v.unwrap_err().to_string(), "`rest: -V` failed (exit 2): no such / flag");
    }
}
