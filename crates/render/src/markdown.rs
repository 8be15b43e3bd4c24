//! The `markdown` format, for merge-request comments (GitLab and GitHub): the summary line as a
//! heading, a table of changes by kind, every changed object with its changed fields, the
//! lints as a table, the warnings as quotes, and the exact commands in a collapsed block.
//!
//! Names and descriptions are free text from slurmdbd or Waldur: outside code they are escaped
//! so that no markdown or HTML of theirs takes effect, and the commands' fence is longer than
//! any run of backticks in them. Writes only to the writer it is given.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::fields::{self, FieldChange, Object};
use super::{NO_CHANGES, sh_join, summary_line};
use slurmplan_diff::Action;
use slurmplan_plan::Plan;

/// `s` as literal text inside a table cell or a list item: markdown's punctuation and HTML's
/// `<`, `>` and `&` escaped, a line break shown as a space.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '|' | '~' | '!' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// A code fence longer than any run of backticks in `body` (CommonMark: a fence ends only at
/// a run of backticks at least as long as the one that opened it).
fn fence(body: &str) -> String {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn word(action: Action) -> &'static str {
    match action {
        Action::Create => "create",
        Action::Update => "update",
        Action::Reparent => "move",
        Action::Delete => "destroy",
    }
}

fn value(f: &FieldChange, before: bool) -> String {
    let v = if before { &f.before } else { &f.after };
    match v {
        Some(v) => esc(v.raw()),
        None => fields::unset_label(f.name).to_string(),
    }
}

fn object_line(address: &str, o: &Object) -> String {
    let on = o.cluster.as_ref().map(|c| format!(" on {}", esc(c.as_str()))).unwrap_or_default();
    let mut line = format!("- **{}** {} {}{on} ({})", word(o.action), o.kind, esc(&o.name), esc(address));
    let shown = o.shown_fields();
    if !shown.is_empty() {
        let parts: Vec<String> = shown
            .iter()
            .map(|f| match o.action {
                Action::Create => format!("{} = {}", f.name, value(f, false)),
                Action::Delete => format!("{} = {}", f.name, value(f, true)),
                Action::Update | Action::Reparent => {
                    format!("{}: {} → {}", f.name, value(f, true), value(f, false))
                }
            })
            .collect();
        line.push_str(": ");
        line.push_str(&parts.join(", "));
    }
    line
}

pub fn render(plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    if plan.is_empty() {
        writeln!(out, "### slurmplan: no changes")?;
        writeln!(out)?;
        writeln!(out, "{NO_CHANGES}")?;
        return write_warnings(plan, out);
    }
    writeln!(out, "### slurmplan: {}", summary_line(plan))?;
    // changes by kind: kind -> (create, update, move, destroy)
    let mut by_kind: BTreeMap<&'static str, [usize; 4]> = BTreeMap::new();
    let objects: Vec<(&str, Object)> =
        plan.changes.iter().map(|c| (c.address.as_str(), fields::object(&c.change))).collect();
    for (_, o) in &objects {
        let i = match o.action {
            Action::Create => 0,
            Action::Update => 1,
            Action::Reparent => 2,
            Action::Delete => 3,
        };
        by_kind.entry(o.kind).or_default()[i] += 1;
    }
    writeln!(out)?;
    writeln!(out, "| kind | create | update | move | destroy |")?;
    writeln!(out, "|---|---:|---:|---:|---:|")?;
    for (kind, n) in &by_kind {
        writeln!(out, "| {kind} | {} | {} | {} | {} |", n[0], n[1], n[2], n[3])?;
    }
    if !objects.is_empty() {
        writeln!(out)?;
        writeln!(out, "#### Changes")?;
        writeln!(out)?;
        for (address, o) in &objects {
            writeln!(out, "{}", object_line(address, o))?;
        }
    }
    if !plan.lints.is_empty() {
        writeln!(out)?;
        writeln!(out, "#### Lints ({})", plan.lints.len())?;
        writeln!(out)?;
        writeln!(out, "| code | name | severity | step | address | message |")?;
        writeln!(out, "|---|---|---|---:|---|---|")?;
        for l in &plan.lints {
            let step = l.step.map(|n| n.to_string()).unwrap_or_default();
            writeln!(
                out,
                "| {} | {} | {} | {step} | {} | {} |",
                esc(&l.code),
                esc(&l.name),
                l.severity.label(),
                esc(&l.address),
                esc(&l.message)
            )?;
        }
    }
    write_warnings(plan, out)?;
    if !plan.steps.is_empty() {
        let mut body = String::new();
        let mut phase = None;
        for s in &plan.steps {
            if phase != Some(s.phase) {
                body.push_str(&format!("# [{}]\n", s.phase.label()));
                phase = Some(s.phase);
            }
            let note = s.note.as_ref().map(|n| format!(" # {n}")).unwrap_or_default();
            body.push_str(&format!("# {}.\n{}{note}\n", s.number, sh_join(&s.argv)));
            if let Some(text) = s.command.stdin() {
                body.push_str("# with this file on stdin:\n");
                for line in text.lines() {
                    body.push_str(&format!("#   {line}\n"));
                }
            }
        }
        let f = fence(&body);
        writeln!(out)?;
        writeln!(
            out,
            "<details><summary>{} sacctmgr command(s), exactly as `slurmplan apply` runs them</summary>",
            plan.steps.len()
        )?;
        writeln!(out)?;
        writeln!(out, "{f}sh")?;
        write!(out, "{body}")?;
        writeln!(out, "{f}")?;
        writeln!(out)?;
        writeln!(out, "</details>")?;
    }
    Ok(())
}

fn write_warnings(plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    for w in &plan.warnings {
        writeln!(out)?;
        writeln!(out, "> **Warning:** {}", esc(w))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_cannot_become_markdown_or_html() {
        assert_eq!(
            esc("a|b <script>x</script> *y* [z](u) `c`"),
            "a\\|b &lt;script&gt;x&lt;/script&gt; \\*y\\* \\[z\\]\\(u\\) \\`c\\`"
        );
        assert_eq!(esc("two\nlines"), "two lines");
        assert_eq!(esc("</details>"), "&lt;/details&gt;");
    }

    #[test]
    fn the_fence_outlasts_any_backticks_inside() {
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("a ```` b"), "`````");
        assert_eq!(fence("``` x `` y"), "````");
    }
}
