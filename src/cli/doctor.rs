//! `slurmplan doctor`: find broken accounting without a desired file; with `-o FILE`, write a
//! repair plan (the ordinary plan format, applied with `slurmplan apply FILE`) that moves every
//! dangling DefaultAccount. Exit 0 without findings, 2 with findings, 1 on error.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use slurmplan::doctor;
use slurmplan::model::fingerprint::hash_bytes;
use slurmplan::model::{Name, NameKind};
use slurmplan::plan;

use super::args::{Global, StateArgs};
use super::commands::{current_state, write_atomic};
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
    /// Report format
    #[arg(long, value_enum, default_value_t = DoctorFormat::Text)]
    pub format: DoctorFormat,
}

pub fn run(g: &Global, a: DoctorArgs) -> Outcome {
    let fallback =
        match &a.default_account {
            Some(s) => Some(Name::parse(s, NameKind::Account, false).map(|p| p.name).map_err(|e| {
                Failure::new(format!("`--default-account`: {e}")).hint(e.hint.clone()).code(EXIT_USAGE)
            })?),
            None => None,
        };
    let current = current_state(g, a.state.state.as_deref())?;
    let findings = doctor::examine(&current, fallback.as_ref());
    if let Some(out) = &a.output {
        let repaired = doctor::repair(&current, fallback.as_ref());
        let inputs = format!("slurmplan doctor repair; default-account={}", a.default_account.as_deref().unwrap_or(""));
        let p = plan::make_plan(&current, &repaired.state, &hash_bytes(inputs.as_bytes())).map_err(|e| {
            Failure::new("cannot build a safe repair plan")
                .cause(e.to_string())
                .hint("this is a slurmplan bug; please report it with the snapshot (`slurmplan dump`)")
        })?;
        write_atomic(out, &plan::file::to_json(&p))?;
        eprintln!(
            "repair plan saved to {}: {} DefaultAccount move(s) in {} step(s); review with `slurmplan show {}`, apply with `slurmplan apply {}`",
            out.display(),
            repaired.moves.len(),
            p.steps.len(),
            out.display(),
            out.display()
        );
        let left = findings.iter().filter(|f| !f.repairable).count();
        if left > 0 {
            eprintln!("{left} finding(s) are not repaired by the plan; see their `fix`");
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
