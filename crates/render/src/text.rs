//! The `text` format: Terraform-style blocks per changed object, the numbered commands, the
//! summary line. Colour only when [`Options::color`] is set.

use std::io::{self, Write};

use owo_colors::OwoColorize;

use super::fields::{self, FieldChange, Object};
use super::{NO_CHANGES, Options, sh_join, summary_line};
use slurmplan_diff::Action;
use slurmplan_plan::Plan;

/// The action mark, coloured when asked: green `+`, yellow `~`, cyan `>`, red `-`.
fn mark(action: Action, opts: &Options) -> String {
    let s = action.symbol();
    if !opts.color {
        return s.to_string();
    }
    match action {
        Action::Create => s.green().to_string(),
        Action::Update => s.yellow().to_string(),
        Action::Reparent => s.cyan().to_string(),
        Action::Delete => s.red().to_string(),
    }
}

fn verb(action: Action) -> &'static str {
    match action {
        Action::Create => "created",
        Action::Update => "updated in-place",
        Action::Reparent => "moved",
        Action::Delete => "destroyed",
    }
}

fn value_text(f: &FieldChange, action: Action) -> String {
    let show = |v: &Option<fields::Value>| {
        v.as_ref().map(|v| v.quoted()).unwrap_or_else(|| fields::unset_label(f.name).into())
    };
    match action {
        Action::Create => show(&f.after),
        Action::Delete => show(&f.before),
        Action::Update | Action::Reparent => format!("{} -> {}", show(&f.before), show(&f.after)),
    }
}

fn write_object(out: &mut dyn Write, address: &str, o: &Object, opts: &Options) -> io::Result<()> {
    writeln!(out, "  # {address} will be {}", verb(o.action))?;
    let on = o.cluster.as_ref().map(|c| format!(" on {c}")).unwrap_or_default();
    let m = mark(o.action, opts);
    let shown = o.shown_fields();
    if shown.is_empty() {
        return writeln!(out, "  {m} {} \"{}\"{on}", o.kind, o.name);
    }
    writeln!(out, "  {m} {} \"{}\"{on} {{", o.kind, o.name)?;
    let width = shown.iter().map(|f| f.name.len()).max().unwrap_or(0);
    // Inside an update or a move every field is changed in place.
    let inner = if o.action == Action::Reparent { Action::Update } else { o.action };
    let im = mark(inner, opts);
    for f in shown {
        writeln!(out, "      {im} {:<width$} = {}", f.name, value_text(f, o.action))?;
    }
    writeln!(out, "    }}")
}

pub fn render(plan: &Plan, opts: &Options, out: &mut dyn Write) -> io::Result<()> {
    if plan.is_empty() {
        writeln!(out, "{NO_CHANGES}")?;
        return write_warnings(plan, out);
    }
    writeln!(out, "slurmplan will perform the following actions:")?;
    for c in &plan.changes {
        writeln!(out)?;
        write_object(out, &c.address, &fields::object(&c.change), opts)?;
    }
    if !plan.steps.is_empty() {
        writeln!(out)?;
        writeln!(out, "Commands:")?;
        let width = plan.steps.iter().map(|s| s.number.to_string().len()).max().unwrap_or(1);
        let mut phase = None;
        for s in &plan.steps {
            if phase != Some(s.phase) {
                writeln!(out, "  [{}]", s.phase.label())?;
                phase = Some(s.phase);
            }
            let note = s.note.as_ref().map(|n| format!(" # {n}")).unwrap_or_default();
            writeln!(out, "  {:>width$}. {}{note}", s.number, sh_join(&s.argv))?;
            if let Some(text) = s.command.stdin() {
                writeln!(out, "  {:>width$}  with this file on stdin:", "")?;
                for line in text.lines() {
                    writeln!(out, "  {:>width$}  | {line}", "")?;
                }
            }
        }
    }
    write_lints(plan, opts, out)?;
    write_warnings(plan, out)?;
    writeln!(out)?;
    writeln!(out, "{}", summary_line(plan))
}

/// `Lints:` with one entry per lint: code, name, severity, step, address, then the message.
fn write_lints(plan: &Plan, opts: &Options, out: &mut dyn Write) -> io::Result<()> {
    if plan.lints.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Lints (docs/lints.md):")?;
    for l in &plan.lints {
        let code = if opts.color { l.code.yellow().to_string() } else { l.code.clone() };
        let step = l.step.map(|n| format!(", step {n}")).unwrap_or_default();
        writeln!(out, "  {code} {} ({}{step}) {}", l.name, l.severity.label(), l.address)?;
        writeln!(out, "      {}", l.message)?;
    }
    Ok(())
}

fn write_warnings(plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    for w in &plan.warnings {
        writeln!(out)?;
        writeln!(out, "Warning: {w}")?;
    }
    Ok(())
}
