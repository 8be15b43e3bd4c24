//! Render — read-only views of a [`Plan`] for people and scripts.
//!
//! Formats: `text` (Terraform-style), `json` (the plan in the plan file's schema, `plan::file::schema`), `diff` (unified diff of the
//! objects before/after), `table` (one row per step) `script` (a POSIX sh script that runs
//! exactly the plan's argv) and `markdown` (for merge-request comments). What you review is exactly what runs: every view shows the steps'
//! argv verbatim, quoted with the one [`sh_quote`] (`sacctmgr::quote`) function.
//!
//! This module must not print to stdout or stderr directly, exit, spawn processes, read files
//! or look at the environment or terminal: every renderer writes to the `&mut dyn
//! std::io::Write` it is given, and colour is decided by the caller through [`Options`].

mod diff;
pub mod drift;
mod fields;
pub mod graph;
mod markdown;
pub mod reconcile;
pub mod rest_script;
mod script;
mod table;
mod text;

#[cfg(test)]
mod tests;

use std::io::Write;

use slurmplan_plan::Plan;

pub use slurmplan_sacctmgr::quote::{sh_join, sh_quote};

/// An output format of `plan` / `show`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Diff,
    Table,
    Script,
    Markdown,
}

/// How to render.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// ANSI colours (only `text` uses them). The caller decides (`--color`, `NO_COLOR`, TTY).
    pub color: bool,
}

/// Render `plan` in `format` to `out`.
pub fn render(plan: &Plan, format: Format, opts: &Options, out: &mut dyn Write) -> std::io::Result<()> {
    match format {
        Format::Text => text::render(plan, opts, out),
        Format::Json => {
            let file = slurmplan_plan::file::schema::FilePlan::of(plan);
            serde_json::to_writer_pretty(&mut *out, &file).map_err(std::io::Error::other)?;
            writeln!(out)
        }
        Format::Diff => diff::render(plan, out),
        Format::Table => table::render(plan, out),
        Format::Script => script::render(plan, out),
        Format::Markdown => markdown::render(plan, out),
    }
}

/// `Plan: X to add, Y to change, Z to destroy.` (Terraform's wording).
pub(crate) fn summary_line(plan: &Plan) -> String {
    let s = plan.summary;
    format!("Plan: {} to add, {} to change, {} to destroy.", s.add, s.change, s.destroy)
}

/// What every format says for an empty plan.
pub(crate) const NO_CHANGES: &str = "No changes. Slurm accounting matches the desired state.";
