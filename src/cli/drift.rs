//! `slurmplan drift`: compare the current state with the desired file, for cron and monitoring.
//!
//! Silent and exit 0 when in sync; a report and exit 2 when not; exit 1 on error. Warnings of
//! the desired file are not printed (they are `plan`'s business): cron mails only on drift or
//! error. With `--format prometheus --output FILE` an error still writes the file, with
//! `slurmplan_drift_last_run_success 0`, so a dashboard sees the failure.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{Args, ValueEnum};
use slurmplan::render::drift::{self, DriftReport};
use slurmplan::{diff, pipeline};

use super::args::StateArgs;
use super::planning::resolve_quietly;
use super::print::{write_atomic, write_stdout};
use super::settings::Settings;
use super::{EXIT_CHANGES, EXIT_OK, Failure, Outcome};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DriftFormat {
    Text,
    Json,
    Csv,
    Prometheus,
}

#[derive(Args, Debug)]
pub struct DriftArgs {
    /// Desired-state YAML file
    #[arg(short, long, value_name = "FILE")]
    pub desired: PathBuf,
    #[command(flatten)]
    pub state: StateArgs,
    /// Report format
    #[arg(long, value_enum, default_value_t = DriftFormat::Text)]
    pub format: DriftFormat,
    /// Write the report to FILE atomically (temp file + rename) instead of stdout
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Load, read, resolve, diff: the same pipeline as `plan`, without ordering. Nothing but errors
/// is printed (cron mails anything on stderr).
fn compute(s: &Settings, a: &DriftArgs) -> Result<DriftReport, Failure> {
    let pipeline::Resolution { desired: d, current, resolved } =
        resolve_quietly(s, &a.desired, a.state.state.as_deref(), "drift was not computed")?;
    let changes = diff::diff(&current, &resolved.state);
    Ok(DriftReport::new(a.desired.display().to_string(), d.clusters.keys().cloned(), &changes))
}

fn render(r: &DriftReport, format: DriftFormat, now: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    let res = match format {
        DriftFormat::Text => drift::text(r, &mut buf),
        DriftFormat::Json => drift::json(r, &mut buf),
        DriftFormat::Csv => drift::csv(r, &mut buf),
        DriftFormat::Prometheus => drift::prometheus(r, now, &mut buf),
    };
    res.expect("writing to a Vec cannot fail");
    buf
}

pub fn run(s: &Settings, a: DriftArgs) -> Outcome {
    let now = now_secs();
    let report = match compute(s, &a) {
        Ok(r) => r,
        Err(f) => {
            if let (DriftFormat::Prometheus, Some(out)) = (a.format, &a.output) {
                let mut buf = Vec::new();
                drift::prometheus_failure(now, &mut buf).expect("writing to a Vec cannot fail");
                write_atomic(out, &String::from_utf8_lossy(&buf))?;
            }
            return Err(f);
        }
    };
    // In sync: nothing on stdout (except metrics); a file given with --output is always
    // rewritten, so it never shows stale drift.
    if !report.in_sync || a.format == DriftFormat::Prometheus || a.output.is_some() {
        let bytes = render(&report, a.format, now);
        match &a.output {
            Some(out) => write_atomic(out, &String::from_utf8_lossy(&bytes))?,
            None => write_stdout(&bytes)?,
        }
    }
    Ok(if report.in_sync { EXIT_OK } else { EXIT_CHANGES })
}
