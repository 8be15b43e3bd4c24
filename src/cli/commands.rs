//! The subcommands: glue between parsed arguments and the library layers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use slurmplan::diag::{self, Diagnostic};
use slurmplan::model::State;
use slurmplan::plan::{self, Plan};
use slurmplan::render::{self, Format, Options};
use slurmplan::sacctmgr::runner::{ProcessRunner, Route};
use slurmplan::sacctmgr::{live, parse, reads, snapshot};
use slurmplan::{desired, model, pipeline};

use super::args::{ApplyArgs, DumpArgs, Global, PlanArgs, ShowArgs, ValidateArgs};
use super::{Cli, Cmd, EXIT_CHANGES, EXIT_OK, Failure, Outcome, use_color};

pub fn run(cli: Cli) -> Outcome {
    let g = cli.global;
    match cli.command {
        Cmd::Dump(a) => dump(&g, a),
        Cmd::Plan(a) => plan_cmd(&g, a),
        Cmd::Apply(a) => apply(&g, a),
        Cmd::Show(a) => show(&g, a),
        Cmd::Validate(a) => validate(a),
        Cmd::Drift(a) => super::drift::run(&g, a),
        Cmd::Doctor(a) => super::doctor::run(&g, a),
        Cmd::Export(a) => super::export::run(&g, a),
        Cmd::Graph(a) => super::graph::run(&g, a),
        Cmd::Completions(a) => super::generate::completions(a),
        Cmd::Man(a) => super::generate::man(a),
        Cmd::Waldur(c) => super::waldur::run(&g, c),
    }
}

/// Print diagnostics to stderr; return whether any was an error.
/// Errors are all printed; warnings at most 20 per code, then a count (a large site can
/// produce thousands of identical warnings).
pub fn print_diags(diags: &mut [Diagnostic]) -> bool {
    const MAX_WARNINGS_PER_CODE: usize = 20;
    diag::sort(diags);
    let mut seen: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for d in diags.iter() {
        let n = seen.entry(d.code).or_insert(0);
        *n += 1;
        if d.is_error() || *n <= MAX_WARNINGS_PER_CODE {
            eprintln!("{d}");
        }
    }
    for (code, n) in &seen {
        let warnings = diags.iter().filter(|d| d.code == *code && !d.is_error()).count();
        if warnings > MAX_WARNINGS_PER_CODE && *n > MAX_WARNINGS_PER_CODE {
            eprintln!("warning[{code}]: ... and {} more like these", warnings - MAX_WARNINGS_PER_CODE);
        }
    }
    diag::has_errors(diags)
}

pub fn runner(g: &Global) -> Result<ProcessRunner, Failure> {
    let program = match (&g.sacctmgr, &g.agent_config) {
        (Some(p), _) => p.clone(),
        (None, Some(cfg)) => sacctmgr_from_agent_config(cfg)?,
        (None, None) => PathBuf::from("sacctmgr"),
    };
    let prefix: Vec<String> = g.exec_prefix.as_deref().unwrap_or("").split_whitespace().map(str::to_string).collect();
    if let Some(first) = prefix.first()
        && Path::new(first).file_name().is_some_and(|n| n == "ssh")
    {
        return Err(Failure::new(format!(
            "`--exec-prefix {}`: ssh joins the words after the host into one line for the remote shell, which would parse descriptions and names",
            diag::cut(g.exec_prefix.as_deref().unwrap_or(""))
        ))
        .hint("use `--ssh DEST` (env SLURMPLAN_SSH): it quotes every word for the remote shell")
        .code(super::EXIT_USAGE));
    }
    if g.timeout == 0 {
        return Err(Failure::new("`--timeout 0` would kill every sacctmgr call")
            .hint("give a timeout in seconds, e.g. 120")
            .code(super::EXIT_USAGE));
    }
    let route = match g.ssh.as_deref() {
        None => Route::Local,
        Some(dest)
            if dest.is_empty()
                || dest.starts_with('-')
                || dest.chars().any(|c| c.is_whitespace() || c.is_control()) =>
        {
            return Err(Failure::new(format!("`--ssh {}` is not an ssh destination", diag::cut(dest)))
                .hint("give a host name or user@host (ssh options go in ~/.ssh/config)")
                .code(super::EXIT_USAGE));
        }
        Some(dest) => Route::Ssh { dest: dest.to_string() },
    };
    Ok(ProcessRunner::new(program, prefix, Duration::from_secs(g.timeout)).with_route(route))
}

/// `<slurm_bin_path>/sacctmgr` from the site-agent config (the agent's default: /usr/bin).
fn sacctmgr_from_agent_config(path: &Path) -> Result<PathBuf, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::new(format!("cannot read `{}`", path.display())).cause(e.to_string()))?;
    match slurmplan::waldur::config::load_config(path, &text, None) {
        Ok((settings, _)) => Ok(settings.slurm_bin_path.unwrap_or_else(|| PathBuf::from("/usr/bin")).join("sacctmgr")),
        Err(mut diags) => {
            print_diags(&mut diags);
            Err(Failure::new(format!("cannot take sacctmgr's path from `{}`", path.display()))
                .hint("fix the file, or give --sacctmgr PATH"))
        }
    }
}

/// Current state from a snapshot dir, or live.
pub fn current_state(g: &Global, dir: Option<&Path>) -> Result<State, Failure> {
    read_state(g, dir, true)
}

/// Current state from a snapshot dir, or live; `progress` says so on stderr before a live read
/// (off for cron reports, which mail anything on stderr). Rows that cannot be split are left
/// out with a warning each (commands without a desired file do not act on them).
pub fn read_state(g: &Global, dir: Option<&Path>, progress: bool) -> Result<State, Failure> {
    let (state, unsplit) = read_state_unsplit(g, dir, progress)?;
    let mut w: Vec<Diagnostic> = unsplit
        .iter()
        .map(|u| u.diagnostic(false, "rename the object in slurmdbd (a name without `|`) to have it read"))
        .collect();
    print_diags(&mut w);
    Ok(state)
}

/// [`read_state`], with the rows that cannot be split returned (see [`check_unsplit`]).
pub fn read_state_unsplit(
    g: &Global,
    dir: Option<&Path>,
    progress: bool,
) -> Result<(State, Vec<parse::Unsplit>), Failure> {
    match dir {
        Some(dir) => match snapshot::load_unsplit(dir) {
            Ok((state, unsplit, mut warnings)) => {
                print_diags(&mut warnings);
                Ok((state, unsplit))
            }
            Err(mut d) => {
                print_diags(&mut d);
                Err(Failure::new(format!("cannot read the snapshot in `{}`", dir.display()))
                    .hint("take it again with `slurmplan dump -o DIR`, or fix the file named above"))
            }
        },
        None => {
            let r = runner(g)?;
            if progress {
                eprintln!("reading current state live ({} sacctmgr reads)...", reads::READS.len());
            }
            read_live(&r, live::Keep::Parsed, progress).map(|(_, state, unsplit)| (state, unsplit))
        }
    }
}

/// The key named by `SLURMPLAN_PLAN_KEY_FILE`, if set: plans written are signed with it and
/// plans applied must carry its signature.
pub fn plan_key() -> Result<Option<plan::file::Key>, Failure> {
    let Some(path) = std::env::var_os("SLURMPLAN_PLAN_KEY_FILE").map(PathBuf::from) else {
        return Ok(None);
    };
    let make = "make one with `(umask 077; head -c 32 /dev/urandom > FILE)`";
    if path.as_os_str().is_empty() {
        return Err(Failure::new("SLURMPLAN_PLAN_KEY_FILE is set but empty")
            .hint(format!("unset it to write and apply unsigned plans, or point it at a key file; {make}")));
    }
    let bytes = slurmplan::input::read_private(&path).map_err(|e| {
        Failure::new(format!("cannot use the plan key `{}` (SLURMPLAN_PLAN_KEY_FILE): {e}", path.display()))
            .hint(format!("the key must be a regular file readable by its owner only; {make}"))
    })?;
    plan::file::Key::new(bytes).map(Some).map_err(|e| {
        Failure::new(format!("cannot use the plan key `{}` (SLURMPLAN_PLAN_KEY_FILE): {e}", path.display())).hint(make)
    })
}

/// A plan file's text, signed when `SLURMPLAN_PLAN_KEY_FILE` is set.
pub fn plan_json(plan: &Plan) -> Result<String, Failure> {
    Ok(plan::file::to_json_signed(plan, plan_key()?.as_ref()))
}

/// A snapshot directory's state; its warnings (no checksums) and errors printed.
fn load_snapshot(dir: &Path) -> Result<State, Failure> {
    match snapshot::load_with_warnings(dir) {
        Ok((state, mut warnings)) => {
            print_diags(&mut warnings);
            Ok(state)
        }
        Err(mut d) => {
            print_diags(&mut d);
            Err(Failure::new(format!("cannot read the snapshot in `{}`", dir.display()))
                .hint("take it again with `slurmplan dump -o DIR`, or fix the file named above"))
        }
    }
}

/// The live reads, taken again while they do not fit together (`live::read_consistent`); a
/// note on stderr per retry when `progress` (cron reports stay quiet unless it fails).
/// With `keep` = `Keep::Text` the raw outputs are kept whole (for a snapshot); otherwise the
/// association read is only parsed as it arrives.
fn read_live(
    r: &dyn slurmplan::sacctmgr::transport::Transport,
    keep: live::Keep,
    progress: bool,
) -> Result<(parse::RawReads, State, Vec<parse::Unsplit>), Failure> {
    let retrying = |attempt: usize, d: &[Diagnostic]| {
        if progress {
            let first = d.first().map(|d| d.message.as_str()).unwrap_or("");
            eprintln!("the reads did not fit together ({first}); reading again ({attempt} of {})", live::READ_ATTEMPTS);
        }
    };
    live::read_consistent(r, keep, retrying).map_err(|e| match e {
        live::ReadError::Live(e) => Failure::new("cannot read the current state from sacctmgr").cause(e.to_string()).hint(
            "check that slurmdbd is up and sacctmgr works (`sacctmgr -n show cluster`), or pass --state DIR",
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
    })
}

pub fn load_desired(path: &Path) -> Result<desired::Desired, Failure> {
    report_desired(path, desired::load_file(path))
}

/// Print the loader's warnings (or errors, then fail).
fn report_desired(path: &Path, loaded: Result<desired::Desired, Vec<Diagnostic>>) -> Result<desired::Desired, Failure> {
    match loaded {
        Ok(d) => {
            let mut w = d.warnings.clone();
            print_diags(&mut w);
            Ok(d)
        }
        Err(mut diags) => {
            Err(failed(&mut diags, |n| format!("`{}` has {n} error(s); nothing was planned", path.display())))
        }
    }
}

/// Print `diags` and fail with `message(number of errors)`.
pub fn failed(diags: &mut [Diagnostic], message: impl FnOnce(usize) -> String) -> Failure {
    print_diags(diags);
    Failure::new(message(diags.iter().filter(|d| d.is_error()).count()))
}

pub fn resolve(d: &desired::Desired, current: &State) -> Result<desired::resolve::Resolved, Failure> {
    match desired::resolve::resolve(d, current) {
        Ok(r) => {
            let mut w = r.warnings.clone();
            print_diags(&mut w);
            Ok(r)
        }
        Err(mut diags) => Err(failed(&mut diags, |n| {
            format!("`{}` does not fit the current state ({n} error(s)); nothing was planned", d.path.display())
        })),
    }
}

/// Write a file atomically and durably (`slurmplan::output`: temp file created new, synced,
/// renamed, the directory synced).
pub fn write_atomic(path: &Path, text: &str) -> Result<(), Failure> {
    slurmplan::output::write_atomic(path, text.as_bytes())
        .map_err(|e| Failure::new(format!("cannot write `{}`", path.display())).cause(e.to_string()))
}

fn emit(plan: &Plan, format: Format, color: bool) -> Result<(), Failure> {
    // Block-buffered: stdout's line buffering makes one write per line of a large JSON plan.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    render::render(plan, format, &Options { color }, &mut out)
        .and_then(|_| out.flush())
        .map_err(|e| Failure::new("cannot write to stdout").cause(e.to_string()))
}

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

/// The current state for the pipeline: from a snapshot dir, or live (with progress on stderr
/// when `progress`).
pub fn reader<'a>(
    g: &'a Global,
    state_dir: Option<&'a Path>,
    progress: bool,
) -> impl FnOnce() -> Result<(State, Vec<parse::Unsplit>), Failure> + 'a {
    move || read_state_unsplit(g, state_dir, progress)
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
        Refusal::ClusterName(e) => {
            Failure::new(format!("`--cluster`: {e}")).hint(e.hint.clone()).code(super::EXIT_USAGE)
        }
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
            let f = Failure::new(e.to_string()).code(super::EXIT_USAGE);
            match e {
                plan::target::TargetError::Unknown { .. } => f.hint(
                    "addresses look like account.CLUSTER.NAME, user_association.CLUSTER.USER@ACCOUNT, default_account.CLUSTER.USER, qos.NAME (see `slurmplan plan --format json`)",
                ),
                plan::target::TargetError::Incomplete(_) => f.code(super::EXIT_ERROR),
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

/// Build a plan from the desired file and the current state (shared by plan and apply -d).
pub fn build_plan(
    g: &Global,
    desired: &Path,
    state_dir: Option<&Path>,
    allow_mass_delete: bool,
    targets: &[String],
) -> Result<pipeline::Planned, Failure> {
    let req = pipeline::Request { desired, clusters: &g.clusters, targets, allow_mass_delete, one_shot: true };
    let mut printer = Printer { warnings: true, timings: Timings::start() };
    pipeline::plan(&req, reader(g, state_dir, true), &mut printer)
        .map_err(|r| refused(r, desired, "nothing was planned", false))
}

/// [`build_plan`] for `apply -d`: the desired file is loaded once; `lock` gets its clusters
/// (after `--cluster`, as sacctmgr stores them) and runs before the current state is read; the
/// plan is made from that same load.
pub fn build_plan_locked<L>(
    g: &Global,
    desired: &Path,
    allow_mass_delete: bool,
    targets: &[String],
    lock: impl FnOnce(Vec<String>) -> Result<L, Failure>,
) -> Result<(pipeline::Planned, L), Failure> {
    let req = pipeline::Request { desired, clusters: &g.clusters, targets, allow_mass_delete, one_shot: true };
    let mut printer = Printer { warnings: true, timings: Timings::start() };
    let d = pipeline::load(&req, &mut printer).map_err(|r| refused(r, desired, "nothing was planned", false))?;
    let held = lock(d.clusters.keys().map(|c| c.as_str().to_string()).collect())?;
    let planned = pipeline::plan_loaded(&req, d, reader(g, None, true), &mut printer)
        .map_err(|r| refused(r, desired, "nothing was planned", false))?;
    Ok((planned, held))
}

fn plan_cmd(g: &Global, a: PlanArgs) -> Outcome {
    // Applies killed before they ended, from the lock directory an apply would use (read as
    // untrusted data; a directory that is missing has nothing to tell, one that is refused is
    // said so).
    let explicit = std::env::var_os("SLURMPLAN_LOCK_DIR").filter(|v| !v.is_empty()).map(PathBuf::from);
    match slurmplan::apply::lock::LockDir::open(explicit.as_deref(), false) {
        Ok(Some(dir)) => super::apply::report_interrupted(&slurmplan::apply::lock::interrupted(&dir)),
        // Without a lock directory (a user without XDG_RUNTIME_DIR) no apply can have run.
        Ok(None) | Err(slurmplan::apply::lock::LockError::NoDir(_)) => {}
        Err(e) => {
            eprintln!("warning: interrupted applies are not looked for: {}", slurmplan::diag::tidy(&e.to_string()))
        }
    }
    let pipeline::Planned { mut plan, current } =
        build_plan(g, &a.desired, a.state.state.as_deref(), a.planning.allow_mass_delete, &a.planning.targets)?;
    if a.planning.no_batch {
        plan::unbatch(&mut plan);
    }
    // A one-shot process: freeing a million associations only costs time before exit.
    std::mem::forget(current);
    let mut t = Timings::start();
    if let Some(out) = &a.output {
        write_atomic(out, &plan_json(&plan)?)?;
        eprintln!("plan saved to {}; apply it with: slurmplan apply {}", out.display(), out.display());
    }
    emit(&plan, a.format, use_color(g.color))?;
    t.mark("render");
    Ok(if a.detailed_exitcode && !plan.is_empty() { EXIT_CHANGES } else { EXIT_OK })
}

fn show(g: &Global, a: ShowArgs) -> Outcome {
    let plan = plan::file::read(&a.plan)
        .map_err(|e| Failure::new(e.to_string()).hint("re-create it with `slurmplan plan -o FILE`"))?;
    emit(&plan, a.format, use_color(g.color))?;
    Ok(EXIT_OK)
}

fn validate(a: ValidateArgs) -> Outcome {
    let d = load_desired(&a.desired)?;
    let accounts: usize = d.clusters.values().map(|c| c.accounts.len()).sum();
    let users: usize = d.clusters.values().map(|c| c.users.len()).sum();
    if let Some(dir) = &a.state {
        let current = load_snapshot(dir)?;
        resolve(&d, &current)?;
    }
    println!(
        "{} is valid: {} cluster(s), {} account(s), {} user association(s), {} QoS",
        a.desired.display(),
        d.clusters.len(),
        accounts,
        users,
        d.qos.len()
    );
    Ok(EXIT_OK)
}

fn dump(g: &Global, a: DumpArgs) -> Outcome {
    let r = runner(g)?;
    let version = live::version(&r).map_err(|e| Failure::new("cannot run `sacctmgr -V`").cause(e.to_string()))?;
    // Parsed before writing: a snapshot slurmplan cannot read back is not written.
    let (raw, state, unsplit) =
        read_live(&r, live::Keep::Text, true).map_err(|f| f.cause("no snapshot was written"))?;
    let mut w: Vec<Diagnostic> =
        unsplit.iter().map(|u| u.diagnostic(false, "written to the snapshot as printed")).collect();
    print_diags(&mut w);
    let clusters = state.clusters.keys().map(|c| c.to_string()).collect();
    let manifest = snapshot::Manifest::new(version, slurmplan::apply::rfc3339(std::time::SystemTime::now()), clusters);
    snapshot::write_dir(&a.output, &raw.to_files(), &manifest)
        .map_err(|e| Failure::new(format!("cannot write snapshot to `{}`", a.output.display())).cause(e.to_string()))?;
    let users: usize = state.clusters.values().map(|c| c.users.len()).sum();
    let accts: usize = state.clusters.values().map(|c| c.accounts.len()).sum();
    eprintln!(
        "snapshot written to {}: {} cluster(s), {} account association(s), {} user association(s), {} QoS; fingerprint {}",
        a.output.display(),
        state.clusters.len(),
        accts,
        users,
        state.qos.len(),
        model::fingerprint::fingerprint(&state)
    );
    Ok(EXIT_OK)
}

fn apply(g: &Global, a: ApplyArgs) -> Outcome {
    super::apply::run(g, a)
}

/// Phase timings printed to stderr when `SLURMPLAN_TIMINGS=1` (for benchmarks).
pub struct Timings {
    on: bool,
    last: std::time::Instant,
}

impl Timings {
    pub fn start() -> Timings {
        Timings { on: std::env::var_os("SLURMPLAN_TIMINGS").is_some_and(|v| v == "1"), last: std::time::Instant::now() }
    }
    /// The phase since the last mark is over.
    pub fn mark(&mut self, what: &str) {
        self.note(what, self.last.elapsed());
        self.last = std::time::Instant::now();
    }
    /// Report a duration measured elsewhere (by the pipeline, or on another thread).
    pub fn note(&self, what: &str, took: std::time::Duration) {
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
