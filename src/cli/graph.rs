//! `slurmplan graph`: draw the account tree (DOT or Mermaid), optionally with a saved plan's
//! changes coloured. Reads the state and the plan file; plans nothing.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use slurmplan::plan;
use slurmplan::render::graph;

use super::args::StateArgs;
use super::print::write_stdout;
use super::settings::Settings;
use super::state::current_state;
use super::{EXIT_OK, Failure, Outcome};

/// `--format` of `graph` (the parser's names for the drawings of `slurmplan::render::graph`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

#[derive(Args, Debug)]
pub struct GraphArgs {
    #[command(flatten)]
    pub state: StateArgs,
    /// Colour the changes of this saved plan (`slurmplan plan -o FILE`)
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Output format (`dot -Tsvg` turns DOT into SVG; Mermaid renders in Markdown)
    #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
    pub format: GraphFormat,
}

pub fn run(s: &Settings, a: GraphArgs) -> Outcome {
    let plan = match &a.plan {
        Some(p) => Some(
            plan::file::read(p)
                .map_err(|e| Failure::new(e.to_string()).hint("re-create it with `slurmplan plan -o FILE`"))?,
        ),
        None => None,
    };
    let current = current_state(s, a.state.state.as_deref())?;
    if let Some(p) = &plan
        && p.fingerprint_of(&current) != p.current_fingerprint
    {
        eprintln!(
            "warning: the plan was computed against another state than the one drawn; the colours may not fit the tree"
        );
    }
    let mut buf = Vec::new();
    match a.format {
        GraphFormat::Dot => graph::dot(&current, plan.as_ref(), &mut buf),
        GraphFormat::Mermaid => graph::mermaid(&current, plan.as_ref(), &mut buf),
    }
    .expect("writing to a Vec cannot fail");
    write_stdout(&buf)?;
    Ok(EXIT_OK)
}
