//! Read the current state live: the fixed reads of [`reads::READS`] through a [`Transport`]
//! (whichever one: this module knows no process, prefix or ssh), run concurrently, their output
//! streamed without a size limit.
//!
//! A fixed number of calls (one per read taken once, two per cluster, plus the version),
//! independent of the number of accounts. The association read (the one that grows with the site) is parsed as it arrives
//! and its text is kept only when a snapshot is written from it. A failing read is an error
//! naming the command and sacctmgr's message; nothing is guessed from partial output. No
//! printing.

use super::parse::{self, AssocStream, RawReads, Source, StreamedAssocs, Unsplit};
use super::reads::{self, Filter, READS, Read};
use super::transport::{CAP, Capped, Output, RunError, Transport};
use slurmplan_diag::Diagnostic;
use slurmplan_model::{Name, State};

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("`{command}` failed ({status}): {message}")]
    Failed { command: String, status: String, message: String },
    #[error("the clusters read lists {count} clusters, more than the {MAX_CLUSTERS} slurmplan reads one by one")]
    TooManyClusters { count: usize },
    #[error("`{command}` printed what it was not asked for: {why}")]
    Unexpected { command: String, why: String },
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
fn check(transport: &dyn Transport, read: &Read, filter: Filter<'_>, o: &Output) -> Result<(), LiveError> {
    let failed = o.timed_out || o.code != Some(0) || o.stderr.to_ascii_lowercase().contains("error");
    if failed {
        return Err(LiveError::Failed {
            command: transport.describe(&read.args_for(filter)).join(" "),
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
    let mut o = transport.read(read, Filter::None, &mut |b| kept.push(b))?;
    o.stdout = kept.finish();
    check(transport, read, Filter::None, &o)?;
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

/// Per-cluster reads (two per cluster) in flight at once, besides the three reads taken once.
/// Bounded: each is a sacctmgr process and a slurmdbd connection; a site of twenty clusters
/// must not start forty.
pub const CLUSTER_READS_AT_ONCE: usize = 4;

/// Clusters read one by one at most: the clusters read comes from slurmdbd, and each cluster
/// it lists costs two calls, so a broken or hostile server must not set the number of calls.
pub const MAX_CLUSTERS: usize = 1000;

/// What one call brought: its text (always for the small reads; for the association read only
/// with [`Keep::Text`]) and, for the association read, its rows parsed as they arrived.
type Taken = (String, Option<AssocStream>);

/// One call, its output streamed: the association read into an [`AssocStream`] named `name`
/// (and its text only with [`Keep::Text`]), the others into their text.
fn read_one(transport: &dyn Transport, read: &Read, cluster: Option<&str>, keep: Keep) -> Result<Taken, LiveError> {
    let mut name = format!("live:{}", read.file);
    if let Some(c) = cluster {
        name.push_str(&format!("[cluster={c}]"));
    }
    let mut text = Vec::new();
    let mut stream = (read.file == reads::ASSOCS).then(|| AssocStream::new(&name, 0));
    let keep_text = stream.is_none() || keep == Keep::Text;
    let filter = cluster.map_or(Filter::None, Filter::Cluster);
    let o = transport.read(read, filter, &mut |bytes| {
        if let Some(s) = &mut stream {
            s.feed(bytes);
        }
        if keep_text {
            text.extend_from_slice(bytes);
        }
    })?;
    check(transport, read, filter, &o)?;
    let text = match String::from_utf8(text) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, stream))
}

/// The clusters whose per-cluster reads are taken.
#[derive(Debug, Clone, Copy)]
pub enum Clusters<'a> {
    /// Every cluster of the clusters read.
    All,
    /// Only these (those the clusters read lists); the state then holds only them. For a
    /// read whose user looks at no other cluster (an apply's verification).
    Only(&'a std::collections::BTreeSet<Name>),
}

impl Clusters<'_> {
    fn includes(&self, name: &Name) -> bool {
        match self {
            Clusters::All => true,
            Clusters::Only(set) => set.contains(name),
        }
    }
}

/// One call: its read, the cluster it was limited to, what it brought.
struct Call {
    read: &'static Read,
    cluster: Option<Name>,
    taken: Result<Taken, LiveError>,
}

/// The calls of the per-cluster reads, [`CLUSTER_READS_AT_ONCE`] at a time, returned in the
/// order of `jobs`.
fn read_clusters(transport: &dyn Transport, jobs: &[(&'static Read, Name)], keep: Keep) -> Vec<Call> {
    use std::sync::{Mutex, atomic::AtomicUsize, atomic::Ordering};
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Call)>> = Mutex::new(Vec::with_capacity(jobs.len()));
    std::thread::scope(|scope| {
        for _ in 0..CLUSTER_READS_AT_ONCE.min(jobs.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((read, cluster)) = jobs.get(i) else { break };
                    let taken = read_one(transport, read, Some(cluster.as_str()), keep);
                    let call = Call { read, cluster: Some(cluster.clone()), taken };
                    done.lock().unwrap_or_else(|e| e.into_inner()).push((i, call));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, c)| c).collect()
}

/// The clusters slurmdbd lists (the clusters read alone, a few milliseconds), to decide
/// whether a command working on some clusters has others beside them; `None` when that read
/// fails or does not parse (the whole read that follows then says why).
pub fn cluster_names(transport: &dyn Transport) -> Option<std::collections::BTreeSet<Name>> {
    let read = reads::read_for(reads::CLUSTERS).expect("READS has the clusters read");
    let (text, _) = read_one(transport, read, None, Keep::Text).ok()?;
    let (set, diags) = parse::parse_clusters(&Source::new("live:clusters.txt", text.as_str()));
    diags.is_empty().then(|| set.into_iter().collect())
}

/// Run every read: the clusters read first, then the association and DefaultAccount reads of
/// each cluster it lists (one call per cluster, [`CLUSTER_READS_AT_ONCE`] at a time) while
/// the reads taken once (accounts, QoS) run beside them; the association reads are parsed as
/// they arrive. Sources are named `live:<file>` (a per-cluster association read:
/// `live:assocs.txt[cluster=NAME]`); the texts of per-cluster reads are joined in cluster
/// order, as one read of every cluster prints them. Only the clusters `which` includes are read
/// per cluster. A clusters read that does not parse leaves the per-cluster reads untaken (the
/// parse reports it). The first failing read (in [`READS`] order, clusters in order) is the
/// error.
pub fn read_all(
    transport: &dyn Transport,
    keep: Keep,
    which: Clusters<'_>,
) -> Result<(RawReads, StreamedAssocs), LiveError> {
    let (calls, too_many) = std::thread::scope(|scope| {
        let once: Vec<_> = READS
            .iter()
            .filter(|r| !r.per_cluster && r.file != reads::CLUSTERS)
            .map(|read| (read, scope.spawn(move || read_one(transport, read, None, keep))))
            .collect();
        let clusters_read = reads::read_for(reads::CLUSTERS).expect("READS has the clusters read");
        let clusters = read_one(transport, clusters_read, None, keep);
        let names: Vec<Name> = match &clusters {
            Ok((text, _)) => match parse::parse_clusters(&Source::new("live:clusters.txt", text.as_str())) {
                (set, diags) if diags.is_empty() => set.into_iter().filter(|c| which.includes(c)).collect(),
                _ => Vec::new(),
            },
            Err(_) => Vec::new(),
        };
        let too_many = (names.len() > MAX_CLUSTERS).then_some(names.len());
        let names = if too_many.is_some() { Vec::new() } else { names };
        let jobs: Vec<(&'static Read, Name)> =
            READS.iter().filter(|r| r.per_cluster).flat_map(|r| names.iter().map(move |c| (r, c.clone()))).collect();
        let mut calls = vec![Call { read: clusters_read, cluster: None, taken: clusters }];
        calls.extend(read_clusters(transport, &jobs, keep));
        for (read, h) in once {
            let taken = h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            calls.push(Call { read, cluster: None, taken });
        }
        (calls, too_many)
    });
    if let Some(count) = too_many {
        return Err(LiveError::TooManyClusters { count });
    }
    // In READS order, each read's calls in cluster order (a stable sort).
    let mut calls = calls;
    calls.sort_by_key(|c| READS.iter().position(|r| r.file == c.read.file));
    let mut raw = RawReads::default();
    for r in READS {
        *raw.source_mut(r.file).expect("a snapshot file") = Source::new(format!("live:{}", r.file), String::new());
    }
    let mut streams: Vec<(Name, AssocStream)> = Vec::new();
    for Call { read, cluster, taken } in calls {
        let (text, stream) = taken?;
        raw.source_mut(read.file).expect("a snapshot file").text.push_str(&text);
        if let (Some(c), Some(s)) = (cluster, stream) {
            streams.push((c, s));
        }
    }
    Ok((raw, StreamedAssocs::PerCluster(streams)))
}

/// Names per call of [`users_seen`] (an argv word of a few kilobytes).
pub const USERS_PER_CALL: usize = 256;

/// The most bytes [`users_seen`] takes from one call: its rows are one per association of the
/// users asked, on every cluster; more than this is not an answer to that question.
const USERS_SEEN_BYTES: usize = 64 << 20;

/// The clusters where each of `users` has associations, on every cluster slurmdbd holds
/// ([`reads::USERS_SEEN`], [`USERS_PER_CALL`] names a call, one call after another): the
/// (cluster, user) pairs of their rows. Every name must pass [`reads::filterable_user`] (the
/// caller's check; a name that does not is refused here, not asked). A row that is not two
/// cells, or names a user not asked about, is an error: nothing is concluded from it.
pub fn users_seen(
    transport: &dyn Transport,
    users: &[String],
) -> Result<std::collections::BTreeSet<(String, String)>, LiveError> {
    let read = &reads::USERS_SEEN;
    let mut seen = std::collections::BTreeSet::new();
    for chunk in users.chunks(USERS_PER_CALL) {
        let filter = Filter::Users(chunk);
        let command = || transport.describe(&read.args_for(filter)).join(" ");
        if let Some(bad) = chunk.iter().find(|u| !reads::filterable_user(u)) {
            return Err(LiveError::Unexpected {
                command: command(),
                why: format!("user `{bad}` cannot be asked by name"),
            });
        }
        let asked: std::collections::HashSet<&str> = chunk.iter().map(String::as_str).collect();
        let mut text = Vec::new();
        let mut over = false;
        let o = transport.read(read, filter, &mut |b| {
            if text.len() + b.len() > USERS_SEEN_BYTES {
                over = true;
            } else {
                text.extend_from_slice(b);
            }
        })?;
        check(transport, read, filter, &o)?;
        if over {
            return Err(LiveError::Unexpected {
                command: command(),
                why: format!("more than {USERS_SEEN_BYTES} bytes"),
            });
        }
        let text = String::from_utf8_lossy(&text);
        for line in text.lines().filter(|l| !l.is_empty()) {
            match line.split('|').collect::<Vec<_>>()[..] {
                [cluster, user] if !cluster.is_empty() && asked.contains(user) => {
                    seen.insert((cluster.to_string(), user.to_string()));
                }
                _ => return Err(LiveError::Unexpected { command: command(), why: format!("the row `{line}`") }),
            }
        }
    }
    Ok(seen)
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

/// Take every read (per-cluster ones for the clusters `which` includes) and parse them
/// together, reading again when they do not fit. Rows that
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
    which: Clusters<'_>,
    retrying: impl FnMut(usize, &[Diagnostic]),
) -> Result<(RawReads, State, Vec<Unsplit>), ReadError> {
    read_listing(transport, keep, which, retrying).map(|(raw, state, unsplit, _)| (raw, state, unsplit))
}

/// [`read_consistent`], also giving the clusters the clusters read lists that `which` left
/// out (none for [`Clusters::All`]): what a plan from this state has not seen.
pub fn read_listing(
    transport: &dyn Transport,
    keep: Keep,
    which: Clusters<'_>,
    mut retrying: impl FnMut(usize, &[Diagnostic]),
) -> Result<(RawReads, State, Vec<Unsplit>, std::collections::BTreeSet<Name>), ReadError> {
    let mut attempt = 1;
    loop {
        let (raw, assocs) = read_all(transport, keep, which).map_err(ReadError::Live)?;
        match parse::parse_state_streamed(&raw, assocs) {
            Ok((mut state, unsplit)) => {
                let left_out = state.clusters.keys().filter(|c| !which.includes(c)).cloned().collect();
                state.clusters.retain(|c, _| which.includes(c));
                return Ok((raw, state, unsplit, left_out));
            }
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
        asked: std::sync::Mutex<Vec<(&'static str, Option<String>)>>,
    }

    fn done(code: Option<i32>, stdout: &str, stderr: &str, timed_out: bool) -> Output {
        Output { code, stdout: stdout.into(), stderr: stderr.into(), timed_out, duration: Duration::ZERO }
    }

    impl Transport for Files {
        fn read(&self, read: &Read, filter: Filter<'_>, sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
            let cluster = filter.cluster();
            assert_eq!(cluster.is_some(), read.per_cluster, "{}", read.file);
            self.asked.lock().unwrap().push((read.file, cluster.map(String::from)));
            if let Some((file, out)) = &self.fail
                && *file == read.file
            {
                sink(out.stdout.as_bytes());
                return Ok(Output { stdout: String::new(), ..out.clone() });
            }
            let text = if read.file == reads::VERSION.file {
                b"slurm-wlm 22.05.8\n".to_vec()
            } else {
                let all = std::fs::read_to_string(self.dir.join(read.file)).unwrap();
                // a per-cluster read prints that cluster's rows (the first cell)
                let rows = all.lines().filter(|l| cluster.is_none_or(|c| l.split('|').next() == Some(c)));
                rows.map(|l| format!("{l}\n")).collect::<String>().into_bytes()
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
    /// read taken once once and the association reads once per cluster, and gets the state
    /// the snapshot loader reads from the same files, and those files back byte for byte (a
    /// real two-cluster snapshot too: per-cluster texts are joined in cluster order).
    #[test]
    fn the_live_reader_takes_the_state_through_any_transport() {
        let real_mixed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/snapshots/real-mixed");
        for dir in [site_a(), real_mixed] {
            takes_the_state(&dir);
        }
    }

    fn takes_the_state(dir: &Path) {
        let t = Files { dir: dir.to_path_buf(), fail: None, asked: Default::default() };
        assert_eq!(version(&t).unwrap().as_deref(), Some("22.05.8"));
        let (raw, state, unsplit) = read_consistent(&t, Keep::Text, Clusters::All, |_, _| panic!("no retry")).unwrap();
        assert!(unsplit.is_empty());
        assert_eq!(state, crate::snapshot::load(dir).unwrap());
        // the reads taken once once, the association reads once per cluster
        let mut asked = t.asked.lock().unwrap().clone();
        asked.sort();
        let clusters: Vec<String> = state.clusters.keys().map(|c| c.to_string()).collect();
        assert!(!clusters.is_empty());
        let mut want: Vec<(&str, Option<String>)> = READS
            .iter()
            .chain([&reads::VERSION])
            .flat_map(|r| match r.per_cluster {
                false => vec![(r.file, None)],
                true => clusters.iter().map(|c| (r.file, Some(c.clone()))).collect(),
            })
            .collect();
        want.sort();
        assert_eq!(asked, want);
        for (file, text) in raw.to_files() {
            assert_eq!(text.as_bytes(), std::fs::read(dir.join(file)).unwrap(), "{}: {file}", dir.display());
        }
    }

    /// A clusters read listing more than [`MAX_CLUSTERS`] clusters is refused before any
    /// per-cluster call.
    #[test]
    fn the_number_of_per_cluster_calls_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        for r in READS {
            std::fs::write(dir.path().join(r.file), "").unwrap();
        }
        let names: String = (0..=MAX_CLUSTERS).map(|i| format!("c{i}\n")).collect();
        std::fs::write(dir.path().join(reads::CLUSTERS), names).unwrap();
        let t = Files { dir: dir.path().to_path_buf(), fail: None, asked: Default::default() };
        let e = read_all(&t, Keep::Parsed, Clusters::All).err().expect("refused");
        assert!(matches!(e, LiveError::TooManyClusters { count } if count == MAX_CLUSTERS + 1), "{e}");
        assert!(t.asked.lock().unwrap().iter().all(|(_, c)| c.is_none()));
    }

    /// A failing read is an error naming the command as the transport describes it, its status
    /// and its message (stderr, or for the version read the stdout it printed instead).
    #[test]
    fn a_failing_read_is_named_as_its_transport_describes_it() {
        let err = |file, out| match read_all(&files(Some((file, out))), Keep::Parsed, Clusters::All) {
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
