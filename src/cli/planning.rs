//! Planning from a desired file for `plan`, `apply -d` and `drift`: runs `slurmplan::pipeline`
//! with the current state of [`read_state`], prints its warnings, `--target` banner and timings
//! as they come ([`Printer`]), and maps each reason it refuses to a [`Failure`] ([`refused`]).
//!
//! Must not: plan anything itself (the pipeline does), write files, or run a plan.

use std::path::Path;
use std::time::Duration;

use slurmplan::diag::Diagnostic;
use slurmplan::model::State;
use slurmplan::sacctmgr::parse::Unsplit;
use slurmplan::{pipeline, plan};

use super::print::{failed, print_diags};
use super::settings::Settings;
use super::state::{listed_clusters, read_state, scoped_state, users_seen};
use super::timings::Timings;
use super::{EXIT_ERROR, EXIT_USAGE, Failure};

/// Print the messages of the planning pipeline as they come: warnings (each stage's batch
/// capped as [`print_diags`] does), the `--target` banner, and phase timings.
pub struct Printer {
    /// Print warnings (off for cron reports, which mail anything on stderr).
    pub warnings: bool,
    pub timings: Timings,
}

impl pipeline::Report for Printer {
    fn warnings(&mut self, _stage: pipeline::Stage, mut diags: Vec<Diagnostic>) {
        if self.warnings {
            print_diags(&mut diags);
        }
    }
    fn targeted(&mut self, unchanged: &[String]) {
        eprintln!("\nWarning: {}\n", pipeline::TARGET_WARNING);
        for u in unchanged {
            eprintln!("note: target `{u}` has no changes");
        }
    }
    fn phase(&mut self, name: &str, took: Duration) {
        self.timings.note(name, took);
    }
}

/// The failure (message, hint, exit code) for each reason the pipeline stops, its diagnostics
/// printed; `what` is what was not made ("nothing was planned", "drift was not computed"), and
/// `errors_only` leaves the warnings of a failed load or resolve out of the printout.
pub fn refused(r: pipeline::Refusal<Failure>, desired: &Path, what: &str, errors_only: bool) -> Failure {
    use pipeline::Refusal;
    let keep = |diags: Vec<Diagnostic>| -> Vec<Diagnostic> {
        if errors_only { diags.into_iter().filter(|d| d.is_error()).collect() } else { diags }
    };
    match r {
        Refusal::Desired(diags) => {
            failed(&mut keep(diags), |n| format!("`{}` has {n} error(s); {what}", desired.display()))
        }
        Refusal::ClusterName(e) => Failure::new(format!("`--cluster`: {e}")).hint(e.hint.clone()).code(EXIT_USAGE),
        Refusal::UnknownCluster { name, path, known } => {
            let known: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
            Failure::new(format!("`--cluster {name}`: `{}` declares no such cluster", path.display())).hint(format!(
                "it declares: {}",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ))
        }
        Refusal::Current(f) => f,
        Refusal::Resolve { path, diags } => failed(&mut keep(diags), |n| {
            format!("`{}` does not fit the current state ({n} error(s)); {what}", path.display())
        }),
        Refusal::Unsplit(mut errors) => {
            failed(&mut errors, |n| format!("{n} row(s) of the managed scope cannot be read; nothing was planned"))
        }
        Refusal::Target(e) => {
            let f = Failure::new(e.to_string()).code(EXIT_USAGE);
            match e {
                plan::target::TargetError::Unknown { .. } => f.hint(
                    "addresses look like account.CLUSTER.NAME, user_association.CLUSTER.USER@ACCOUNT, default_account.CLUSTER.USER, qos.NAME (see `slurmplan plan --format json`)",
                ),
                plan::target::TargetError::Incomplete(_) => f.code(EXIT_ERROR),
            }
        }
        Refusal::Order(e) => Failure::new("cannot build a safe plan").cause(e.to_string()).hint(
            "this is a slurmplan bug; please report it with the snapshot (`slurmplan dump`) and the desired file",
        ),
        Refusal::MassDelete { deletes, limit, managed } => Failure::new(format!(
            "the plan deletes {deletes} objects, more than the limit of {limit} (max of 20 and 10% of {managed} managed objects)"
        ))
        .hint("check the desired state (an empty or truncated export?); if the deletes are intended, re-run with --allow-mass-delete"),
    }
}

/// The pipeline's request for `desired` under the settings' `--cluster`.
fn request<'a>(
    s: &'a Settings,
    desired: &'a Path,
    allow_mass_delete: bool,
    targets: &'a [String],
    one_shot: bool,
) -> pipeline::Request<'a> {
    pipeline::Request { desired, clusters: &s.clusters, targets, allow_mass_delete, one_shot }
}

/// Build a plan from the desired file and the current state (`plan`).
pub fn build_plan(
    s: &Settings,
    desired: &Path,
    state_dir: Option<&Path>,
    allow_mass_delete: bool,
    targets: &[String],
) -> Result<pipeline::Planned, Failure> {
    let req = request(s, desired, allow_mass_delete, targets, true);
    let mut printer = Printer { warnings: true, timings: Timings::start(s.timings) };
    let nothing = |r| refused(r, desired, "nothing was planned", false);
    // Live, beside other clusters: read the planned ones first (docs/decisions.md, "Reads
    // scoped to the plan's clusters"). With one cluster there is nothing to leave out, and the
    // desired file loads while the state is read.
    if !scoped_read(s, state_dir, targets)? {
        return pipeline::plan(&req, || read_state(s, state_dir, true), &mut printer).map_err(nothing);
    }
    let d = pipeline::load(&req, &mut printer).map_err(nothing)?;
    plan_scoped_live(s, &req, d, &mut printer, true).map_err(nothing)
}

/// `pipeline::plan_scoped` with the live reads: the desired file's clusters, then the users
/// the plan asks about, or every cluster; progress on stderr when `progress`.
pub(super) fn plan_scoped_live(
    s: &Settings,
    req: &pipeline::Request,
    d: slurmplan::desired::Desired,
    printer: &mut Printer,
    progress: bool,
) -> Result<pipeline::Planned, pipeline::Refusal<Failure>> {
    pipeline::plan_scoped(
        req,
        d,
        |clusters| scoped_state(s, clusters, "desired file", progress),
        |users| users_seen(s, users, progress),
        |why| read_every(s, why, progress),
        printer,
    )
}

/// Whether a command reads the clusters of its desired file first: live, without `--target`,
/// unless `SLURMPLAN_READ_ALL_CLUSTERS=1`, and only when slurmdbd lists more than one cluster.
fn scoped_read(s: &Settings, state_dir: Option<&Path>, targets: &[String]) -> Result<bool, Failure> {
    Ok(state_dir.is_none()
        && targets.is_empty()
        && !whole_read_asked()?
        && listed_clusters(s)?.is_some_and(|listed| listed.len() > 1))
}

/// Every cluster, read after a scoped read could not stand for it; says why on stderr when
/// `progress`.
pub(super) fn read_every(s: &Settings, why: &str, progress: bool) -> Result<(State, Vec<Unsplit>), Failure> {
    if progress {
        eprintln!("reading every cluster: the plan depends on {why}");
    }
    read_state(s, None, progress)
}

/// `SLURMPLAN_READ_ALL_CLUSTERS=1`: `plan` (and every command reading as it does) reads every
/// cluster, as before scoped reads (to compare, or to rule them out); unset or `0`: scoped
/// reads. Anything else is refused.
pub(super) fn whole_read_asked() -> Result<bool, Failure> {
    match std::env::var("SLURMPLAN_READ_ALL_CLUSTERS") {
        Err(std::env::VarError::NotPresent) => Ok(false),
        Ok(v) if v == "0" => Ok(false),
        Ok(v) if v == "1" => Ok(true),
        _ => Err(Failure::new("SLURMPLAN_READ_ALL_CLUSTERS must be `1` (read every cluster) or `0`").code(EXIT_USAGE)),
    }
}

/// [`build_plan`] for `apply -d`: the desired file is loaded once; `lock` gets its clusters
/// (after `--cluster`, as sacctmgr stores them) and runs before the current state is read
/// live, those clusters first as `plan` reads them (without asking slurmdbd for its clusters
/// beforehand: the file is loaded before the lock anyway, so a site of one cluster loses no
/// overlap, and that read is then the whole read); the plan is made from that same load.
pub fn build_plan_locked<L>(
    s: &Settings,
    desired: &Path,
    allow_mass_delete: bool,
    targets: &[String],
    lock: impl FnOnce(Vec<String>) -> Result<L, Failure>,
) -> Result<(pipeline::Planned, L), Failure> {
    let req = request(s, desired, allow_mass_delete, targets, true);
    let mut printer = Printer { warnings: true, timings: Timings::start(s.timings) };
    let nothing = |r| refused(r, desired, "nothing was planned", false);
    let d = pipeline::load(&req, &mut printer).map_err(nothing)?;
    let held = lock(d.clusters.keys().map(|c| c.as_str().to_string()).collect())?;
    let planned = if targets.is_empty() && !whole_read_asked()? {
        plan_scoped_live(s, &req, d, &mut printer, true)
    } else {
        pipeline::plan_loaded(&req, d, || read_state(s, None, true), &mut printer)
    }
    .map_err(nothing)?;
    Ok((planned, held))
}

/// Load the desired file and resolve it against the current state, without ordering
/// (`drift`): nothing but errors is printed (cron mails anything on stderr). Live beside
/// other clusters, the file's clusters are read first, as `plan` reads them.
pub fn resolve_quietly(
    s: &Settings,
    desired: &Path,
    state_dir: Option<&Path>,
    what: &str,
) -> Result<pipeline::Resolution, Failure> {
    let req = request(s, desired, false, &[], false);
    let mut printer = Printer { warnings: false, timings: Timings::start(s.timings) };
    let nothing = |r| refused(r, desired, what, true);
    if !scoped_read(s, state_dir, &[])? {
        return pipeline::resolve(&req, || read_state(s, state_dir, false), &mut printer).map_err(nothing);
    }
    let d = pipeline::load(&req, &mut printer).map_err(nothing)?;
    pipeline::resolve_scoped(
        d,
        |clusters| scoped_state(s, clusters, "desired file", false),
        |why| read_every(s, why, false),
        &mut printer,
    )
    .map_err(nothing)
}
