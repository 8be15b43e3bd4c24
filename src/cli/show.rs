//! `slurmplan show`: print a saved plan file in a chosen view.
//!
//! Must not: read the current state, check a signature, or change the file.

use slurmplan::plan;

use super::args::ShowArgs;
use super::print::emit;
use super::settings::Settings;
use super::{EXIT_OK, Failure, Outcome};

pub fn run(s: &Settings, a: ShowArgs) -> Outcome {
    let plan = plan::file::read(&a.plan)
        .map_err(|e| Failure::new(e.to_string()).hint("re-create it with `slurmplan plan -o FILE`"))?;
    emit(&plan, a.format.into(), s.color)?;
    Ok(EXIT_OK)
}
