//! The `table` format: one row per step (number, phase, the objects it serves, the command),
//! then the summary line. Fixed layout, no colours and no terminal width, so output is the same
//! everywhere. Writes only to the writer it is given; must not look at the terminal.

use std::io::{self, Write};

use comfy_table::presets::ASCII_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};

use super::{NO_CHANGES, sh_join, summary_line};
use slurmplan_plan::Plan;

pub fn render(plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    if plan.is_empty() {
        return writeln!(out, "{NO_CHANGES}");
    }
    if !plan.steps.is_empty() {
        let mut t = Table::new();
        t.load_style(ASCII_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled).force_no_tty();
        t.set_header(vec!["#", "phase", "objects", "command"]);
        for s in &plan.steps {
            let mut command = sh_join(&s.argv);
            if let Some(n) = &s.note {
                command.push_str(" # ");
                command.push_str(n);
            }
            if let Some(text) = s.command.stdin() {
                command.push_str("\nstdin:\n");
                command.push_str(text.trim_end());
            }
            t.add_row(vec![s.number.to_string(), s.phase.label().to_string(), s.causes.join("\n"), command]);
        }
        writeln!(out, "{t}")?;
    }
    writeln!(out, "{}", summary_line(plan))
}
