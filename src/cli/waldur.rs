//! `slurmplan waldur build` (agent config + Waldur export -> desired YAML) and `slurmplan waldur
//! fetch` (the export straight from the Waldur API). Reads the inputs, calls `slurmplan::waldur`,
//! draws progress and prints warnings on stderr, and writes atomically: the desired file through
//! a temp file + rename, an export directory by swapping a finished sibling into place, so a
//! failed run leaves the previous output as it was. A fetch runs on a thread of its own while
//! the main thread watches for SIGINT/SIGTERM (`apply::signals`): on one, the partial pages are
//! removed at once and the run exits 1. The API token stays inside `waldur::fetch::Token`;
//! nothing here can print it.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use slurmplan::apply::signals::{self, StopOnSignal};
use slurmplan::waldur::fetch::{self, Access, FetchError, PageDir, Progress, Summary};
use slurmplan::waldur::{self, BuildOptions};

use super::print::{failed, print_diags, write_atomic};
use super::settings::{Settings, read_agent_config};
use super::{EXIT_OK, EXIT_USAGE, Failure, Outcome};

#[derive(Subcommand, Debug)]
pub enum WaldurCmd {
    /// Build a desired-state file from a Waldur export (or the API) and the site agent's config
    Build(BuildArgs),
    /// Fetch the offering's resources, their teams and the offering users from the Waldur API
    /// into an export directory (replaced as a whole, only when the fetch succeeded)
    Fetch(FetchArgs),
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The site's waldur-site-agent-config.yaml
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Offering name (required when the config has several SLURM offerings)
    #[arg(long, value_name = "NAME")]
    pub offering: Option<String>,
    /// Directory of Waldur API responses (resources*.json, team-<uuid>*.json, offering-users*.json)
    #[arg(long, value_name = "DIR", required_unless_present = "from_api", conflicts_with = "from_api")]
    pub export: Option<PathBuf>,
    /// Fetch the export from the Waldur API (URL, offering and token from --config) instead of --export
    #[arg(long)]
    pub from_api: bool,
    /// With --from-api: keep the fetched pages in DIR for audit (replaced as a whole)
    #[arg(long, value_name = "DIR", conflicts_with = "export")]
    pub keep_export: Option<PathBuf>,
    /// Desired-state YAML to write
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Accept an export with no live resource (the plan's mass-delete guard still applies)
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub api: ApiArgs,
    /// Print only warnings and errors (no progress, no summary): for cron
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// The site's waldur-site-agent-config.yaml (waldur_api_url, waldur_api_token, waldur_offering_uuid)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Offering name (required when the config has several SLURM offerings)
    #[arg(long, value_name = "NAME")]
    pub offering: Option<String>,
    /// Export directory to write (created, or replaced as a whole when the fetch succeeded)
    #[arg(long, short, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub api: ApiArgs,
    /// Print only warnings and errors (no progress, no summary): for cron
    #[arg(short, long)]
    pub quiet: bool,
}

/// How to reach the Waldur API (`waldur fetch`, `waldur build --from-api`).
#[derive(Args, Debug, Clone)]
pub struct ApiArgs {
    /// PEM file of the CA that signed the Waldur server's certificate (trusted instead of the built-in roots)
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Seconds one API request may take before it is abandoned (and retried)
    #[arg(long, default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub http_timeout: u64,
    /// Extra tries of a request that failed with 5xx/408/429, a timeout or a broken connection
    /// (waiting 1 s, 2 s, 4 s, ...)
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retries: u32,
    /// Items per page of the API's lists (Waldur allows up to 300)
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=300))]
    pub page_size: u32,
    /// Team requests (one per resource) in flight at once
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=32))]
    pub jobs: u16,
}

impl ApiArgs {
    fn options(&self) -> fetch::Options {
        fetch::Options {
            timeout: Duration::from_secs(self.http_timeout),
            attempts: self.retries.saturating_add(1),
            backoff: Duration::from_secs(1),
            page_size: self.page_size,
            ca_cert: self.ca_cert.clone(),
            jobs: usize::from(self.jobs),
            max_pages: fetch::MAX_PAGES,
        }
    }
}

pub fn run(s: &Settings, cmd: WaldurCmd) -> Outcome {
    match cmd {
        WaldurCmd::Build(a) => build(s, a),
        WaldurCmd::Fetch(a) => fetch_cmd(a),
    }
}

fn fetch_failure(e: FetchError) -> Failure {
    let mut f = Failure::new(e.message).hint(e.hint);
    f.causes = e.causes;
    f
}

/// The chosen offering's settings (warnings printed) and, with `api`, how to reach its API.
fn load(config: &Path, offering: Option<&str>, api: bool) -> Result<(waldur::Settings, Option<Access>), Failure> {
    let refused = |mut d: Vec<slurmplan::diag::Diagnostic>| {
        failed(&mut d, |n| format!("`{}` has {n} configuration error(s); nothing was written", config.display()))
    };
    // Parsed once: the settings from a copy of the tree without its tokens, the access (with
    // the token) from the tree itself.
    let root = waldur::config::parse(config, &read_agent_config(config)?).map_err(refused)?;
    let (with_token, root) = if api { (Some(root.clone()), root) } else { (None, root) };
    let (settings, mut warnings) = waldur::config::settings_of(config, root, offering).map_err(refused)?;
    print_diags(&mut warnings);
    let access = match with_token {
        Some(tree) => Some(fetch::access_of(config, &tree, settings.index).map_err(fetch_failure)?),
        None => None,
    };
    if let Some(a) = &access
        && a.verify_ssl_off
    {
        eprintln!(
            "warning[waldur-verify-ssl]: `{}` sets `verify_ssl: false`; slurmplan verifies the certificate anyway\n  hint: for a private CA pass --ca-cert FILE",
            config.display()
        );
    }
    Ok((settings, access))
}

/// Fetch into `dir` (existing and empty), drawing progress on a terminal. The fetch runs on a
/// thread of its own while this one watches `stop`: on SIGINT or SIGTERM `dir` is removed at
/// once (a request in flight is abandoned, not waited for) and the run fails with exit 1.
fn fetch_into(
    access: &Arc<Access>,
    api: &ApiArgs,
    dir: &Arc<PageDir>,
    quiet: bool,
    stop: &StopOnSignal,
) -> Result<Summary, Failure> {
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new_spinner();
        b.set_style(
            ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(Duration::from_millis(120));
        b.set_message(format!("GET {}", access.api));
        b
    });
    let worker = {
        let (access, dir, bar, opts) = (access.clone(), dir.clone(), bar.clone(), api.options());
        std::thread::spawn(move || {
            let mut report = |p: Progress<'_>| match p {
                Progress::Page { list, page, received, total } => {
                    if let Some(b) = &bar {
                        let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
                        b.set_message(format!("{list}: page {page}, {received}{of} received"));
                    }
                }
                Progress::Teams { done, total } => {
                    if let Some(b) = &bar {
                        b.set_message(format!("teams: {done} of {total} resources"));
                    }
                }
                Progress::Retry { url, reason, attempt, attempts, wait } => {
                    if !quiet {
                        let line = format!(
                            "warning[waldur-retry]: GET {url}: {reason}; try {} of {attempts} in {} s",
                            attempt + 1,
                            wait.as_secs_f64()
                        );
                        match &bar {
                            Some(b) => b.suspend(|| eprintln!("{line}")),
                            None => eprintln!("{line}"),
                        }
                    }
                }
            };
            fetch::fetch(&access, &opts, &dir, &mut report)
        })
    };
    let result = loop {
        if worker.is_finished() {
            break worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        }
        if let Some(sig) = stop.received() {
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            return Err(stopped(sig, dir));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let s = result.map_err(fetch_failure)?;
    if !quiet {
        eprintln!(
            "fetched {} resource(s) in {} page(s), {} team(s) with {} member(s), {} offering user(s) from {} ({} request(s), {} bytes)",
            s.resources, s.resource_pages, s.teams, s.members, s.offering_users, access.api, s.requests, s.bytes
        );
    }
    Ok(s)
}

/// Stopped by `sig`: `dir` (the partial pages) removed, the failure to report.
fn stopped(sig: i32, dir: &PageDir) -> Failure {
    let f = Failure::new(format!("stopped by {}; the fetch was abandoned", signals::name(sig)));
    match dir.abandon() {
        Ok(()) => f,
        Err(e) => f.cause(format!("`{}` could not be removed: {e}", dir.path().display())),
    }
}

/// Fetch into a sibling of `target`, check that it loads, then swap it into place. On any error,
/// and on SIGINT/SIGTERM, `target` is left as it was and the sibling removed.
fn fetch_replacing(access: &Arc<Access>, api: &ApiArgs, target: &Path, quiet: bool) -> Result<(), Failure> {
    let kept = format!("`{}` was left as it was", target.display());
    let stop = StopOnSignal::install();
    let staged = Arc::new(PageDir::new(fetch::staging_dir(target).map_err(fetch_failure)?));
    if let Err(f) = fetch_into(access, api, &staged, quiet, &stop) {
        let _ = staged.abandon();
        return Err(f.cause(kept));
    }
    if let Err(mut d) = waldur::load_pages(staged.path()) {
        if let Some(sig) = stop.received() {
            return Err(stopped(sig, &staged).cause(kept));
        }
        return Err(failed(&mut d, |n| format!("the fetched export has {n} error(s); {kept}")).hint(format!(
            "the fetched pages are in `{}` for inspection; remove it afterwards",
            staged.path().display()
        )));
    }
    if let Some(sig) = stop.received() {
        return Err(stopped(sig, &staged).cause(kept));
    }
    fetch::replace_dir(staged.path(), target).map_err(fetch_failure)
}

fn fetch_cmd(a: FetchArgs) -> Outcome {
    let (_, access) = load(&a.config, a.offering.as_deref(), true)?;
    let Some(access) = access.map(Arc::new) else { unreachable!("load() returns the access when asked") };
    fetch_replacing(&access, &a.api, &a.out, a.quiet)?;
    if !a.quiet {
        eprintln!(
            "wrote {}; build with: slurmplan waldur build --config {} --export {} -o desired.yaml",
            a.out.display(),
            a.config.display(),
            a.out.display()
        );
    }
    Ok(EXIT_OK)
}

/// A private temporary directory, removed when dropped.
struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn build(s: &Settings, a: BuildArgs) -> Outcome {
    let mut b = built_yaml(s, &a)?;
    b.print_notes();
    write_atomic(&a.output, &b.yaml)?;
    let counts = b.counts;
    if !a.quiet {
        eprintln!("wrote {}: {counts}; review with: slurmplan plan -d {}", a.output.display(), a.output.display());
    }
    Ok(EXIT_OK)
}

/// A desired state built from Waldur, not yet written.
pub struct Built {
    /// The desired-state YAML (checked to load).
    pub yaml: String,
    /// What it holds, in words.
    pub counts: String,
    /// The build's warnings (named as the fetched pages) and info lines, not printed yet.
    warnings: Vec<slurmplan::diag::Diagnostic>,
    infos: Vec<String>,
}

impl Built {
    /// Print the warnings and info lines on stderr.
    pub fn print_notes(&mut self) {
        print_diags(&mut self.warnings);
        for i in &self.infos {
            eprintln!("info: {i}");
        }
    }
}

/// `waldur build` up to the file it writes: the desired-state YAML (checked to load, as
/// `a.output`), what it holds in words, and its warnings (errors are printed). Nothing is
/// written but a temporary export.
pub fn built_yaml(s: &Settings, a: &BuildArgs) -> Result<Built, Failure> {
    let cluster = match s.clusters.as_slice() {
        [] => None,
        [c] => Some(c.clone()),
        _ => {
            return Err(Failure::new("`waldur build` writes one cluster: give --cluster once").code(EXIT_USAGE));
        }
    };
    let (settings, access) = load(&a.config, a.offering.as_deref(), a.from_api)?;
    let access = access.map(Arc::new);
    let mut warnings = Vec::new();
    // Where the export is read from, and what messages call it.
    let mut _temp = None;
    // While a fetched temporary export exists: SIGINT/SIGTERM stop the build before it writes,
    // and the directory is removed on the way out.
    let mut stop = None;
    let (dir, source) = match (&a.export, &access, &a.keep_export) {
        (Some(dir), _, _) => (dir.clone(), format!("the export in `{}`", dir.display())),
        (None, Some(access), Some(keep)) => {
            fetch_replacing(access, &a.api, keep, a.quiet)?;
            (keep.clone(), format!("the export fetched into `{}`", keep.display()))
        }
        (None, Some(access), None) => {
            let dir = std::env::temp_dir().join(format!("slurmplan-waldur-export-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            fetch::create_private_dir(&dir)
                .map_err(|e| Failure::new(format!("cannot create `{}`", dir.display())).cause(e.to_string()))?;
            let temp = TempDir(dir.clone());
            let pages = Arc::new(PageDir::new(dir.clone()));
            fetch_into(access, &a.api, &pages, a.quiet, stop.insert(StopOnSignal::install()))?;
            _temp = Some(temp);
            (dir, format!("the export fetched from `{}`", access.api))
        }
        (None, None, _) => unreachable!("clap requires --export or --from-api"),
    };
    // Messages name the fetched pages, not a temporary directory that is gone when they are read.
    let relabel = |diags: &mut [slurmplan::diag::Diagnostic]| {
        if _temp.is_none() {
            return;
        }
        for loc in diags.iter_mut().filter_map(|d| d.location.as_mut()) {
            if let Ok(rel) = loc.file.strip_prefix(&dir) {
                loc.file = Path::new("(fetched)").join(rel);
            }
        }
    };
    let export = waldur::load_pages(&dir).map_err(|mut d| {
        relabel(&mut d);
        let f = failed(&mut d, |n| format!("{source} has {n} error(s); nothing was written"));
        if a.from_api && a.keep_export.is_none() {
            f.hint("pass --keep-export DIR to keep the fetched pages for inspection")
        } else {
            f
        }
    })?;
    let built = waldur::build(&settings, &export, &BuildOptions { cluster }).map_err(|mut d| {
        warnings.append(&mut d);
        relabel(&mut warnings);
        print_diags(&mut warnings);
        Failure::new("cannot build the desired state; nothing was written")
    })?;
    warnings.extend(built.warnings.iter().cloned());
    relabel(&mut warnings);
    let counts = format!(
        "{} live of {} resource(s), {} allocation account(s), {} account(s), {} user(s)",
        built.live, built.resources, built.allocations, built.accounts, built.users,
    );
    let (live, resources) = (built.live, built.resources);
    let mut b = Built { yaml: built.yaml, counts, warnings, infos: built.infos };
    if live == 0 && !a.allow_empty {
        // A build that fails says its warnings with the error (they may be why).
        b.print_notes();
        return Err(Failure::new(format!("{source} has no live resource ({resources} in total); nothing was written"))
        .cause("a desired state without resources removes every account slurmplan manages for this offering; a failed or truncated export looks exactly like this")
        .hint("check the export (see docs/waldur.md); if the offering really has no resources, pass --allow-empty (plan then still needs --allow-mass-delete)"));
    }
    // The output must load: a build that slurmplan itself cannot read is a bug, not a file.
    if let Err(mut d) = slurmplan::desired::load_str(&a.output, &b.yaml) {
        b.print_notes();
        print_diags(&mut d);
        return Err(Failure::new("the generated desired state does not load; nothing was written")
            .hint("this is a slurmplan bug; please report it with the config (token removed) and the export"));
    }
    if let Some(sig) = stop.as_ref().and_then(StopOnSignal::received) {
        return Err(Failure::new(format!("stopped by {}; nothing was written", signals::name(sig))));
    }
    Ok(b)
}
