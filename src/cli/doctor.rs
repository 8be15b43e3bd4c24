//! `slurmplan doctor`: find broken accounting without a desired file; with `-o FILE`, write a
//! repair plan (the ordinary plan format, applied with `slurmplan apply FILE`) that moves every
//! dangling DefaultAccount and repairs every DefaultQOS outside its QoS list. Exit 0 without findings, 2 with findings, 1 on error.
//! Must not repair anything itself: the repair is a plan, applied by `slurmplan apply`.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use slurmplan::doctor;
use slurmplan::model::fingerprint::hash_bytes;
use slurmplan::model::{Name, NameKind};
use slurmplan::plan;

use super::args::StateArgs;
use super::print::{print_diags, write_atomic};
use super::settings::{Settings, read_agent_config};
use super::state::current_state;
use super::{EXIT_CHANGES, EXIT_OK, EXIT_USAGE, Failure, Outcome};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DoctorFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub state: StateArgs,
    /// Write a repair plan (plan file format) for `slurmplan apply`
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Where dangling DefaultAccounts go when the user is associated with it (else: the user's
    /// first remaining association by account name)
    #[arg(long, value_name = "NAME")]
    pub default_account: Option<String>,
    /// Take the fallback from the site's waldur-site-agent-config.yaml: its `default_account`
    /// under policy `common` (ignored when --default-account is given)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With --config: the offering to read (needed when the file has several SLURM offerings)
    #[arg(long, value_name = "NAME", requires = "config")]
    pub offering: Option<String>,
    /// Report format
    #[arg(long, value_enum, default_value_t = DoctorFormat::Text)]
    pub format: DoctorFormat,
}

pub fn run(s: &Settings, a: DoctorArgs) -> Outcome {
    let fallback =
        match &a.default_account {
            Some(s) => Some(Name::parse(s, NameKind::Account, false).map(|p| p.name).map_err(|e| {
                Failure::new(format!("`--default-account`: {e}")).hint(e.hint.clone()).code(EXIT_USAGE)
            })?),
            None => config_fallback(&a)?,
        };
    let current = current_state(s, a.state.state.as_deref())?;
    let findings = doctor::examine(&current, fallback.as_ref());
    if let Some(out) = &a.output {
        let repaired = doctor::repair(&current, fallback.as_ref());
        let inputs = format!("slurmplan doctor repair; default-account={}", a.default_account.as_deref().unwrap_or(""));
        let p = plan::make_plan(&current, &repaired.state, &hash_bytes(inputs.as_bytes())).map_err(|e| {
            Failure::new("cannot build a safe repair plan")
                .cause(e.to_string())
                .hint("this is a slurmplan bug; please report it with the snapshot (`slurmplan dump`)")
        })?;
        write_atomic(out, &s.plan_json(&p)?)?;
        eprintln!(
            "repair plan saved to {}: {} DefaultAccount move(s) and {} DefaultQOS repair(s) in {} step(s); review with `slurmplan show {}`, apply with `slurmplan apply {}`",
            out.display(),
            repaired.moves.len(),
            repaired.qos_repairs.len(),
            p.steps.len(),
            out.display(),
            out.display()
        );
        let left = findings.iter().filter(|f| !f.repairable).count();
        if left > 0 {
            eprintln!("{left} finding(s) are not repaired by the plan; see their `repair` and `fix`");
        }
    }
    let mut o = std::io::stdout().lock();
    match a.format {
        DoctorFormat::Text => doctor::text(&findings, &mut o),
        DoctorFormat::Json => doctor::json(&findings, &mut o),
    }
    .and_then(|_| o.flush())
    .map_err(|e| Failure::new("cannot write to stdout").cause(e.to_string()))?;
    Ok(if findings.is_empty() { EXIT_OK } else { EXIT_CHANGES })
}

/// `default_account` of the site-agent config when its policy is `common` (the account every
/// user is meant to default to); no fallback under `individual` or `none`.
fn config_fallback(a: &DoctorArgs) -> Result<Option<Name>, Failure> {
    let Some(path) = &a.config else { return Ok(None) };
    let text = read_agent_config(path)?;
    match slurmplan::waldur::config::load_config(path, &text, a.offering.as_deref()) {
        Ok((settings, _warnings)) => Ok(match settings.policy {
            slurmplan::waldur::config::Policy::Common => {
                eprintln!(
                    "fallback DefaultAccount: `{}` (default_account of `{}`, policy common)",
                    settings.default_account,
                    path.display()
                );
                Some(settings.default_account)
            }
            other => {
                eprintln!(
                    "`{}` uses default_account_policy {}: no configured fallback; dangling defaults go to the user's first remaining association",
                    path.display(),
                    other.as_str()
                );
                None
            }
        }),
        Err(mut diags) => {
            print_diags(&mut diags);
            Err(Failure::new(format!("`{}` is not a usable site-agent config", path.display())))
        }
    }
}
