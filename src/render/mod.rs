//! TEMPORARY shim replaced by the render branch.
use crate::plan::Plan;
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Diff,
    Table,
    Script,
}
pub struct Options {
    pub color: bool,
}
pub fn render(plan: &Plan, _format: Format, _opts: &Options, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    for s in &plan.steps {
        writeln!(out, "{}. {}", s.number, s.argv.join(" "))?;
    }
    writeln!(
        out,
        "Plan: {} to add, {} to change, {} to destroy.",
        plan.summary.add, plan.summary.change, plan.summary.destroy
    )
}
