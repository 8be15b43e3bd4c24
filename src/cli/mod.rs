//! The command line. Parses args, resolves settings, calls the library, prints, and
//! decides the exit code. The ONLY place that prints or exits. Data goes to stdout, everything
//! else (diagnostics, progress, hints) to stderr.
//!
//! Exit codes: 0 success / no changes; 1 error, nothing changed; 2 changes present (with
//! `--detailed-exitcode`); 3 apply stopped part-way (a failed step, SIGINT/SIGTERM) or did not
//! converge; 64 usage error.

mod apply;
mod args;
mod doctor;
mod drift;
mod dump;
mod export;
mod generate;
mod graph;
mod plan;
mod planning;
mod print;
mod reconcile;
mod settings;
mod show;
mod state;
mod timings;
mod undo;
mod validate;
mod waldur;

use clap::Parser;

pub use args::{Cli, Cmd};
use settings::Settings;

pub const EXIT_OK: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_CHANGES: i32 = 2;
pub const EXIT_PARTIAL: i32 = 3;
pub const EXIT_USAGE: i32 = 64;

/// An error to report: message, optional hint, exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Failure {
        Failure { code: EXIT_ERROR, message: message.into(), causes: Vec::new(), hint: None }
    }
    pub fn hint(mut self, h: impl Into<String>) -> Failure {
        self.hint = Some(h.into());
        self
    }
    pub fn cause(mut self, c: impl Into<String>) -> Failure {
        self.causes.push(c.into());
        self
    }
    pub fn code(mut self, code: i32) -> Failure {
        self.code = code;
        self
    }
}

pub type Outcome = Result<i32, Failure>;

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => EXIT_OK,
                _ => EXIT_USAGE,
            };
            let _ = e.print();
            return code;
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("error: {}", slurmplan::diag::tidy(&f.message));
            for c in &f.causes {
                eprintln!("  caused by: {}", slurmplan::diag::tidy(c));
            }
            if let Some(h) = &f.hint {
                eprintln!("  hint: {h}");
            }
            f.code
        }
    }
}

/// Resolve the settings once, then run the command with them.
fn run(cli: Cli) -> Outcome {
    let lock_dir = match &cli.command {
        Cmd::Apply(a) => a.lock_dir.clone(),
        Cmd::Reconcile(a) => a.lock_dir.clone(),
        _ => None,
    };
    // `--ca-cert` of the commands that have it is `--rest-ca-cert` (args::RestCaArg)
    let ca_cert = match &cli.command {
        Cmd::Dump(a) => a.rest_ca.ca_cert.clone(),
        Cmd::Apply(a) => a.rest_ca.ca_cert.clone(),
        Cmd::Plan(a) => a.state.rest_ca.ca_cert.clone(),
        Cmd::Undo(a) => a.state.rest_ca.ca_cert.clone(),
        Cmd::Drift(a) => a.state.rest_ca.ca_cert.clone(),
        Cmd::Doctor(a) => a.state.rest_ca.ca_cert.clone(),
        Cmd::Export(a) => a.state.rest_ca.ca_cert.clone(),
        Cmd::Graph(a) => a.state.rest_ca.ca_cert.clone(),
        _ => None,
    };
    let mut global = cli.global;
    if let Some(ca) = ca_cert {
        // the flag over SLURMPLAN_REST_CA_CERT, as flags go over the environment; two flags
        // naming different files are a mistake
        let from_env = std::env::var_os("SLURMPLAN_REST_CA_CERT").map(std::path::PathBuf::from);
        if global.rest_ca_cert.as_ref().is_some_and(|g| *g != ca && Some(g) != from_env.as_ref()) {
            return Err(Failure::new("--ca-cert and --rest-ca-cert name different files")
                .hint("give slurmrestd's CA once (--ca-cert is --rest-ca-cert)")
                .code(EXIT_USAGE));
        }
        global.rest_ca_cert = Some(ca);
    }
    let mut s = Settings::resolve(global, lock_dir);
    match cli.command {
        Cmd::Dump(a) => dump::run(&s, a),
        Cmd::Plan(a) => plan::run(&s, a),
        // the commands that write check first that they can reach slurmdbd's writer
        Cmd::Apply(a) => s.reader().and_then(|_| apply::run(&s, a)),
        Cmd::Undo(a) => s.reader().and_then(|_| undo::run(&s, a)),
        Cmd::Show(a) => show::run(&s, a),
        Cmd::Validate(a) => validate::run(a),
        Cmd::Drift(a) => drift::run(&s, a),
        Cmd::Doctor(a) => doctor::run(&s, a),
        Cmd::Export(a) => export::run(&s, a),
        Cmd::Graph(a) => graph::run(&s, a),
        Cmd::Completions(a) => generate::completions(a),
        Cmd::Man(a) => generate::man(a),
        Cmd::Reconcile(a) => {
            let usable = s.reader().map(drop);
            usable.and_then(|()| reconcile::run(&mut s, a))
        }
        Cmd::Waldur(c) => waldur::run(&s, c),
    }
}
