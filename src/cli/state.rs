//! The current state, read the one way every command reads it: from a snapshot directory
//! (`--state DIR`) or live from sacctmgr through the runner of [`Settings`], with the live
//! reads taken again while they do not fit together. Problems become a [`Failure`] with a hint.
//!
//! Must not: change anything in slurmdbd, or print anything but the diagnostics of the read
//! and (with `progress`) the live-read notes on stderr.

use std::collections::BTreeSet;
use std::path::Path;

use slurmplan::diag::Diagnostic;
use slurmplan::model::{Name, State};
use slurmplan::sacctmgr::transport::Transport;
use slurmplan::sacctmgr::{live, parse, reads, snapshot};

use super::Failure;
use super::print::print_diags;
use super::settings::Settings;

/// The current state from the snapshot in `dir`, or live; `progress` says so on stderr before
/// a live read and on each retry (off for cron reports, which mail anything on stderr). Rows
/// that cannot be split are left out of the state and returned beside it.
pub fn read_state(s: &Settings, dir: Option<&Path>, progress: bool) -> Result<(State, Vec<parse::Unsplit>), Failure> {
    match dir {
        Some(dir) => match snapshot::load_unsplit(dir) {
            Ok((state, unsplit, mut warnings)) => {
                print_diags(&mut warnings);
                Ok((state, unsplit))
            }
            Err(mut d) => {
                print_diags(&mut d);
                Err(unreadable_snapshot(dir))
            }
        },
        None => {
            let r = s.reader()?;
            let via = r.describe()?;
            if progress {
                eprintln!("reading current state live through {via} ({})...", reads_note());
            }
            read_live(r.transport(), live::Keep::Parsed, live::Clusters::All, progress)
                .map(|(_, state, unsplit)| (state, unsplit))
        }
    }
}

/// The clusters slurmdbd lists, live (`None` when that read fails: the read that follows says
/// why).
pub fn listed_clusters(s: &Settings) -> Result<Option<BTreeSet<Name>>, Failure> {
    Ok(live::cluster_names(s.reader()?.transport()))
}

/// The state of `clusters` alone, live, for a plan of them (`pipeline::plan_scoped`) or a saved
/// plan's apply, with the clusters slurmdbd lists beside them; progress on stderr when
/// `progress`, naming them the clusters of `whose` ("desired file", "plan").
pub fn scoped_state(
    s: &Settings,
    clusters: &BTreeSet<Name>,
    whose: &str,
    progress: bool,
) -> Result<slurmplan::pipeline::ScopedRead, Failure> {
    let r = s.reader()?;
    let via = r.describe()?;
    if progress {
        eprintln!(
            "reading current state live through {via}: the {} cluster(s) of the {whose} ({})...",
            clusters.len(),
            reads_note()
        );
    }
    read_live_listing(r.transport(), live::Keep::Parsed, live::Clusters::Only(clusters), progress)
        .map(|(_, state, unsplit, left_out)| (state, unsplit, left_out))
}

/// The (cluster, user) pairs of the associations of `users` on every cluster, live (a plan of
/// some clusters asks it of the users it would otherwise read every cluster for); progress on
/// stderr when `progress`.
pub fn users_seen(s: &Settings, users: &[String], progress: bool) -> Result<slurmplan::pipeline::UsersSeen, Failure> {
    let r = s.reader()?;
    if progress {
        eprintln!(
            "reading the associations of {} user(s) on every cluster ({} call(s))...",
            users.len(),
            users.len().div_ceil(live::USERS_PER_CALL)
        );
    }
    live::users_seen(r.transport(), users).map_err(|e| {
        Failure::new("cannot read the clusters holding the users the plan asks about")
            .cause(e.to_string())
            .hint("check that slurmdbd is up; SLURMPLAN_READ_ALL_CLUSTERS=1 reads every cluster instead")
    })
}

/// What a live read of the state takes, for the progress line: the reads taken once, those
/// taken per cluster, and how many run at once.
fn reads_note() -> String {
    let once = reads::READS.iter().filter(|r| !r.per_cluster).count();
    let per = reads::READS.len() - once;
    format!("{once} reads, and {per} per cluster, {} at once", live::CLUSTER_READS_AT_ONCE)
}

/// [`read_state`] for the commands without a desired file (they do not act on the rows that
/// cannot be split): progress on, each such row a warning.
pub fn current_state(s: &Settings, dir: Option<&Path>) -> Result<State, Failure> {
    let (state, unsplit) = read_state(s, dir, true)?;
    warn_unsplit(&unsplit);
    Ok(state)
}

/// The state of `clusters` alone, live (no other cluster in it), with the records and QoS:
/// what an apply's verification compares, which looks at no other cluster. Progress on stderr
/// with `progress`.
pub fn clusters_state(s: &Settings, clusters: &BTreeSet<Name>, progress: bool) -> Result<State, Failure> {
    let r = s.reader()?;
    let via = r.describe()?;
    if progress {
        eprintln!(
            "reading the state of {} cluster(s) live through {via} to verify ({} reads)...",
            clusters.len(),
            reads::READS.iter().map(|r| if r.per_cluster { clusters.len() } else { 1 }).sum::<usize>()
        );
    }
    let (_, state, unsplit) = read_live(r.transport(), live::Keep::Parsed, live::Clusters::Only(clusters), progress)?;
    warn_unsplit(&unsplit);
    Ok(state)
}

/// Each row that cannot be split, as a warning.
pub(super) fn warn_unsplit(unsplit: &[parse::Unsplit]) {
    let mut w: Vec<Diagnostic> = unsplit
        .iter()
        .map(|u| u.diagnostic(false, "rename the object in slurmdbd (a name without `|`) to have it read"))
        .collect();
    print_diags(&mut w);
}

/// The failure for a snapshot that cannot be read (its diagnostics printed by the caller).
pub fn unreadable_snapshot(dir: &Path) -> Failure {
    Failure::new(format!("cannot read the snapshot in `{}`", dir.display()))
        .hint("take it again with `slurmplan dump -o DIR`, or fix the file named above")
}

/// The live reads, taken again while they do not fit together (`live::read_consistent`); a
/// note on stderr per retry when `progress` (cron reports stay quiet unless it fails).
/// With `keep` = `Keep::Text` the raw outputs are kept whole (for a snapshot); otherwise the
/// association read is only parsed as it arrives.
pub fn read_live(
    r: &dyn Transport,
    keep: live::Keep,
    which: live::Clusters<'_>,
    progress: bool,
) -> Result<(parse::RawReads, State, Vec<parse::Unsplit>), Failure> {
    read_live_listing(r, keep, which, progress).map(|(raw, state, unsplit, _)| (raw, state, unsplit))
}

/// [`read_live`], also giving the clusters slurmdbd lists that `which` left out.
fn read_live_listing(
    r: &dyn Transport,
    keep: live::Keep,
    which: live::Clusters<'_>,
    progress: bool,
) -> Result<(parse::RawReads, State, Vec<parse::Unsplit>, BTreeSet<Name>), Failure> {
    let retrying = |attempt: usize, d: &[Diagnostic]| {
        if progress {
            let first = d.first().map(|d| d.message.as_str()).unwrap_or("");
            eprintln!("the reads did not fit together ({first}); reading again ({attempt} of {})", live::READ_ATTEMPTS);
        }
    };
    live::read_listing(r, keep, which, retrying).map_err(read_failure)
}

/// The failure for a live read that gave no state (its diagnostics printed).
fn read_failure(e: live::ReadError) -> Failure {
    match e {
        live::ReadError::Live(e) => Failure::new("cannot read the current state").cause(e.to_string()).hint(
            "check that slurmdbd is up and sacctmgr (or slurmrestd with --transport rest) works, or pass --state DIR",
        ),
        live::ReadError::Unparsable { diags: mut d, attempts, out_of_step: true } => {
            print_diags(&mut d);
            Failure::new(format!("sacctmgr's reads did not fit together, {attempts} times in a row"))
                .hint("something keeps writing to slurmdbd between the reads; run again when it is done")
        }
        live::ReadError::Unparsable { diags: mut d, .. } => {
            print_diags(&mut d);
            Failure::new("slurmdbd holds data slurmplan cannot read (the rows are quoted above)")
                .hint("correct those values with sacctmgr, or take a snapshot (`slurmplan dump -o DIR`) and report the rows if sacctmgr accepts them as they are")
        }
    }
}
