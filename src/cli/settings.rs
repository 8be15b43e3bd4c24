//! The settings of one run, resolved once from the global flags, the environment and the site
//! agent's config, and handed down to every command as one [`Settings`] value. The only place
//! in the program that reads `SLURMPLAN_*` variables, `NO_COLOR` or the agent config for the
//! sacctmgr path (clap reads the variables that have a flag). Precedence: docs/operations.md
//! ("Settings and their precedence").
//!
//! Must not: read the current state or plan; print anything but the diagnostics of a broken
//! agent config (failures are returned to the caller); read a file before a command needs it
//! (a broken agent config or plan key fails only the commands that use it).

use std::cell::OnceCell;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use slurmplan::diag;
use slurmplan::plan::{self, Plan};
use slurmplan::sacctmgr::runner::{ProcessRunner, Route};

use slurmplan::rest::transport::{Options as RestOptions, RestTransport, Token};
use slurmplan::sacctmgr::transport::Transport;

use super::args::{ColorChoice, Global, TransportChoice};
use super::print::print_diags;
use super::{EXIT_USAGE, Failure};
use slurmplan::waldur::config::{RestApi as AgentRest, Settings as AgentSettings};

/// Everything a command needs to know beyond its own arguments.
#[derive(Debug)]
pub struct Settings {
    /// `--cluster` (repeatable): the clusters to work on; empty means all.
    pub clusters: Vec<String>,
    /// Colour stdout (`--color`, and for `auto` `NO_COLOR` and whether stdout is a terminal).
    pub color: bool,
    /// Phase timings on stderr (`SLURMPLAN_TIMINGS=1`, for benchmarks).
    pub timings: bool,
    /// The lock directory given: `apply --lock-dir` (clap reads `SLURMPLAN_LOCK_DIR` for it),
    /// else `SLURMPLAN_LOCK_DIR` when set and not empty (`plan` looks there for interrupted
    /// applies); `None` means the default directory.
    pub lock_dir: Option<PathBuf>,
    /// `SLURMPLAN_PLAN_KEY_FILE` as set (an empty value is refused when the key is needed).
    plan_key_file: Option<PathBuf>,
    sacctmgr: Option<PathBuf>,
    agent_config: Option<PathBuf>,
    exec_prefix: Option<String>,
    ssh: Option<String>,
    timeout: u64,
    /// `--transport` / `SLURMPLAN_TRANSPORT`; unset: the agent config's `execution_mode`, else
    /// sacctmgr.
    transport: Option<TransportChoice>,
    rest_url: Option<String>,
    rest_token_file: Option<PathBuf>,
    rest_user: Option<String>,
    rest_ca_cert: Option<PathBuf>,
    /// sacctmgr's path, taken from the agent config at most once (when a command first runs
    /// sacctmgr).
    program: OnceCell<PathBuf>,
    /// The agent config's settings, read at most once (when a live read or sacctmgr needs them).
    agent: OnceCell<Option<AgentSettings>>,
    /// slurmrestd, set up once per command (per cycle of `reconcile --interval`, which calls
    /// [`Settings::forget_rest`]): the token is read and the data parser negotiated once, and
    /// every read or write of the command reuses them.
    rest: OnceCell<RestTransport>,
}

impl Settings {
    /// Resolve the global flags and the environment; `lock_dir` is the command's `--lock-dir`
    /// (only `apply` has one).
    pub fn resolve(g: Global, lock_dir: Option<PathBuf>) -> Settings {
        let color = match g.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal(),
        };
        let lock_dir =
            lock_dir.or_else(|| std::env::var_os("SLURMPLAN_LOCK_DIR").filter(|v| !v.is_empty()).map(PathBuf::from));
        Settings {
            clusters: g.clusters,
            color,
            timings: std::env::var_os("SLURMPLAN_TIMINGS").is_some_and(|v| v == "1"),
            lock_dir,
            plan_key_file: std::env::var_os("SLURMPLAN_PLAN_KEY_FILE").map(PathBuf::from),
            sacctmgr: g.sacctmgr,
            agent_config: g.agent_config,
            exec_prefix: g.exec_prefix,
            ssh: g.ssh,
            timeout: g.timeout,
            transport: g.transport,
            rest_url: g.rest_url,
            rest_token_file: g.rest_token_file,
            rest_user: g.rest_user,
            rest_ca_cert: g.rest_ca_cert,
            program: OnceCell::new(),
            agent: OnceCell::new(),
            rest: OnceCell::new(),
        }
    }

    /// The agent config's checked settings (`--agent-config`), read the first time they are
    /// needed; `None` without one.
    fn agent(&self) -> Result<Option<&AgentSettings>, Failure> {
        if let Some(a) = self.agent.get() {
            return Ok(a.as_ref());
        }
        let loaded = match &self.agent_config {
            None => None,
            Some(path) => {
                let text = read_agent_config(path)?;
                match slurmplan::waldur::config::load_config(path, &text, None) {
                    Ok((settings, warnings)) => {
                        // the agent's settings slurmplan does not follow are said; the rest of
                        // the file's warnings belong to `waldur build` and `doctor --config`
                        let mut ignored: Vec<_> =
                            warnings.into_iter().filter(|d| d.code == "config-ignored-key").collect();
                        print_diags(&mut ignored);
                        Some(settings)
                    }
                    Err(mut diags) => {
                        print_diags(&mut diags);
                        return Err(Failure::new(format!("cannot use the agent config `{}`", path.display()))
                            .hint("fix the file, or give --sacctmgr PATH (or the --rest-* settings) instead"));
                    }
                }
            }
        };
        Ok(self.agent.get_or_init(|| loaded).as_ref())
    }

    /// The agent config's slurmrestd settings, when it has them (`execution_mode: rest`).
    fn agent_rest(&self) -> Result<Option<&AgentRest>, Failure> {
        Ok(self.agent()?.and_then(|a| a.rest.as_ref()))
    }

    /// How slurmdbd is reached: `--transport` (or `SLURMPLAN_TRANSPORT`), else `rest` when the
    /// agent config says `execution_mode: rest`, else sacctmgr.
    fn transport(&self) -> Result<TransportChoice, Failure> {
        if let Some(t) = self.transport {
            return Ok(t);
        }
        Ok(if self.agent_rest()?.is_some() { TransportChoice::Rest } else { TransportChoice::Sacctmgr })
    }

    /// Slurmdbd is read and written through slurmrestd (see [`Settings::reader`]).
    pub fn through_rest(&self) -> bool {
        self.transport().is_ok_and(|t| t == TransportChoice::Rest)
    }

    /// Set slurmrestd up again on its next use (a long-running `reconcile --interval` between
    /// cycles): a rotated token file is read, the data parser is chosen again.
    pub fn forget_rest(&mut self) {
        self.rest.take();
    }

    /// The transport the current state is read through: slurmrestd (`--transport rest`, or the
    /// agent config's `execution_mode: rest`), else sacctmgr's [`Settings::runner`].
    pub fn reader(&self) -> Result<Reader<'_>, Failure> {
        match self.transport()? {
            TransportChoice::Sacctmgr => Ok(Reader::Sacctmgr(self.runner()?)),
            TransportChoice::Rest => {
                if let Some(t) = self.rest.get() {
                    return Ok(Reader::Rest(t));
                }
                let t = self.rest()?;
                Ok(Reader::Rest(self.rest.get_or_init(|| t)))
            }
        }
    }

    /// slurmrestd: each setting from its flag, else its environment variable, else the agent
    /// config's `rest_api` (url, token_file, token_env, username).
    fn rest(&self) -> Result<RestTransport, Failure> {
        let from_agent = self.agent_rest()?;
        let url = match self.rest_url.as_deref().filter(|u| !u.is_empty()) {
            Some(u) => u.to_string(),
            None => from_agent.map(|r| r.url.clone()).ok_or_else(|| {
                Failure::new("`--transport rest` needs slurmrestd's URL")
                    .hint(
                        "pass --rest-url https://HOST:PORT (env SLURMPLAN_REST_URL), or rest_api.url in --agent-config",
                    )
                    .code(EXIT_USAGE)
            })?,
        };
        let token = match (&self.rest_token_file, from_agent) {
            (Some(path), _) => Token::from_file(path),
            (None, Some(AgentRest { token_file: Some(path), .. })) => Token::from_file(path),
            (None, Some(AgentRest { token_env: Some(var), .. })) => match std::env::var(var) {
                Ok(v) if !v.is_empty() => Token::new(&v, var),
                _ => {
                    return Err(Failure::new(format!(
                        "the agent config's rest_api.token_env names `{}`, which is not set",
                        diag::cut(var)
                    ))
                    .hint("set it, or pass --rest-token-file FILE")
                    .code(EXIT_USAGE));
                }
            },
            (None, _) => match std::env::var("SLURM_JWT") {
                Ok(v) if !v.is_empty() => Token::new(&v, "SLURM_JWT"),
                _ => {
                    return Err(Failure::new("`--transport rest` needs a JWT")
                        .hint("pass --rest-token-file FILE (env SLURMPLAN_REST_TOKEN_FILE), or set SLURM_JWT")
                        .code(EXIT_USAGE));
                }
            },
        }
        .map_err(|e| Failure::new(e.message).hint(e.hint).code(EXIT_USAGE))?;
        let user =
            self.rest_user.clone().filter(|u| !u.is_empty()).or_else(|| from_agent.and_then(|r| r.username.clone()));
        RestTransport::new(RestOptions {
            url,
            user,
            token,
            ca_cert: self.rest_ca_cert.clone(),
            timeout: Duration::from_secs(self.timeout),
        })
        .map_err(|e| Failure::new(e.message).hint(e.hint).code(EXIT_USAGE))
    }

    /// The runner of sacctmgr: `--sacctmgr`, else `<slurm_bin_path>/sacctmgr` of
    /// `--agent-config`, else `sacctmgr` from PATH; through `--exec-prefix` and `--ssh`, each
    /// call killed after `--timeout` seconds.
    pub fn runner(&self) -> Result<ProcessRunner, Failure> {
        let program = self.program()?;
        let prefix: Vec<String> =
            self.exec_prefix.as_deref().unwrap_or("").split_whitespace().map(str::to_string).collect();
        if let Some(first) = prefix.first()
            && Path::new(first).file_name().is_some_and(|n| n == "ssh")
        {
            return Err(Failure::new(format!(
                "`--exec-prefix {}`: ssh joins the words after the host into one line for the remote shell, which would parse descriptions and names",
                diag::cut(self.exec_prefix.as_deref().unwrap_or(""))
            ))
            .hint("use `--ssh DEST` (env SLURMPLAN_SSH): it quotes every word for the remote shell")
            .code(EXIT_USAGE));
        }
        if self.timeout == 0 {
            return Err(Failure::new("`--timeout 0` would kill every sacctmgr call")
                .hint("give a timeout in seconds, e.g. 120")
                .code(EXIT_USAGE));
        }
        let route = match self.ssh.as_deref() {
            None => Route::Local,
            Some(dest)
                if dest.is_empty()
                    || dest.starts_with('-')
                    || dest.chars().any(|c| c.is_whitespace() || c.is_control()) =>
            {
                return Err(Failure::new(format!("`--ssh {}` is not an ssh destination", diag::cut(dest)))
                    .hint("give a host name or user@host (ssh options go in ~/.ssh/config)")
                    .code(EXIT_USAGE));
            }
            Some(dest) => Route::Ssh { dest: dest.to_string() },
        };
        Ok(ProcessRunner::new(program, prefix, Duration::from_secs(self.timeout)).with_route(route))
    }

    /// sacctmgr's path (see [`Settings::runner`]); the agent config is read the first time only.
    fn program(&self) -> Result<PathBuf, Failure> {
        if let Some(p) = self.program.get() {
            return Ok(p.clone());
        }
        let program = match (&self.sacctmgr, self.agent()?) {
            (Some(p), _) => p.clone(),
            // the agent's default is /usr/bin
            (None, Some(agent)) => {
                agent.slurm_bin_path.clone().unwrap_or_else(|| PathBuf::from("/usr/bin")).join("sacctmgr")
            }
            (None, None) => PathBuf::from("sacctmgr"),
        };
        Ok(self.program.get_or_init(|| program).clone())
    }

    /// The key named by `SLURMPLAN_PLAN_KEY_FILE`, if set: plans written are signed with it and
    /// plans applied must carry its signature. Read when a command writes or applies a plan.
    pub fn plan_key(&self) -> Result<Option<plan::file::Key>, Failure> {
        let Some(path) = &self.plan_key_file else {
            return Ok(None);
        };
        let make = "make one with `(umask 077; head -c 32 /dev/urandom > FILE)`";
        if path.as_os_str().is_empty() {
            return Err(Failure::new("SLURMPLAN_PLAN_KEY_FILE is set but empty")
                .hint(format!("unset it to write and apply unsigned plans, or point it at a key file; {make}")));
        }
        let bytes = slurmplan::input::read_private(path).map_err(|e| {
            Failure::new(format!("cannot use the plan key `{}` (SLURMPLAN_PLAN_KEY_FILE): {e}", path.display()))
                .hint(format!("the key must be a regular file readable by its owner only; {make}"))
        })?;
        plan::file::Key::new(bytes).map(Some).map_err(|e| {
            Failure::new(format!("cannot use the plan key `{}` (SLURMPLAN_PLAN_KEY_FILE): {e}", path.display()))
                .hint(make)
        })
    }

    /// `--agent-config` (or `SLURMPLAN_AGENT_CONFIG`), as given.
    pub fn agent_config(&self) -> Option<&Path> {
        self.agent_config.as_deref()
    }

    /// A plan file's text, signed when `SLURMPLAN_PLAN_KEY_FILE` is set.
    pub fn plan_json(&self, plan: &Plan) -> Result<String, Failure> {
        Ok(plan::file::to_json_signed(plan, self.plan_key()?.as_ref()))
    }
}

/// The site agent's config as text: read once by each command that uses it (`--agent-config`,
/// `doctor --config`, `waldur build|fetch --config`).
pub fn read_agent_config(path: &Path) -> Result<String, Failure> {
    slurmplan::input::read_text(path)
        .map_err(|e| Failure::new(format!("cannot read `{}`", path.display())).cause(e.to_string()))
}

/// The transport the current state is read through ([`Settings::reader`]).
#[derive(Debug)]
pub enum Reader<'s> {
    Sacctmgr(ProcessRunner),
    Rest(&'s RestTransport),
}

impl Reader<'_> {
    pub fn transport(&self) -> &dyn Transport {
        match self {
            Reader::Sacctmgr(r) => r,
            Reader::Rest(r) => *r,
        }
    }

    /// How the reads travel, for progress lines: `sacctmgr`, or slurmrestd with its URL and
    /// data parser (chosen here, on the first request).
    pub fn describe(&self) -> Result<String, Failure> {
        match self {
            Reader::Sacctmgr(_) => Ok("sacctmgr".into()),
            Reader::Rest(r) => {
                let parser = r.data_parser().map_err(|e| {
                    Failure::new("cannot use slurmrestd")
                        .cause(e)
                        .hint("check --rest-url, the token and that slurmrestd runs")
                })?;
                Ok(format!("slurmrestd at {} (data parser {parser}, user {})", r.url(), r.user()))
            }
        }
    }
}
