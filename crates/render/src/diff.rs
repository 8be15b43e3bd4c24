//! The `diff` format: a unified diff of two canonical texts, the changed objects as they are
//! now (`current`) and as they will be (`desired`). One header line per object (its address),
//! then one indented `field = value` line per set field, so a reviewer sees `-`/`+` per field
//! and the unchanged fields as context. The address line is on both sides, with `(absent)` under
//! it on the side where the object does not exist, so hunks never mix two objects' lines.

use std::collections::BTreeMap;
use std::io::{self, Write};

use similar::TextDiff;

use super::fields::{self, Value};
use slurmplan_diff::Action;
use slurmplan_plan::Plan;

/// (current text, desired text) of the changed objects, in the order of `plan.changes`; the
/// changes of one address (a move and an update) are merged into one object.
fn canonical(plan: &Plan) -> (String, String) {
    let mut order: Vec<&str> = Vec::new();
    let mut objects: BTreeMap<&str, [Side; 2]> = BTreeMap::new();
    for c in &plan.changes {
        let o = fields::object(&c.change);
        let [before, after] = objects.entry(c.address.as_str()).or_insert_with(|| {
            order.push(c.address.as_str());
            [Side { exists: true, lines: Vec::new() }, Side { exists: true, lines: Vec::new() }]
        });
        match o.action {
            Action::Create => before.exists = false,
            Action::Delete => after.exists = false,
            Action::Update | Action::Reparent => {}
        }
        // In an update both sides exist: a field set on one side only is `(unset)` on the other.
        let both = matches!(o.action, Action::Update | Action::Reparent);
        let line = |name: &str, v: Option<&Value>| {
            format!("  {name} = {}", v.map(Value::raw).unwrap_or_else(|| fields::unset_label(name)))
        };
        for f in &o.fields {
            if f.before.is_some() || both {
                before.lines.push(line(f.name, f.before.as_ref()));
            }
            if f.after.is_some() || both {
                after.lines.push(line(f.name, f.after.as_ref()));
            }
        }
    }
    let (mut before, mut after) = (String::new(), String::new());
    for addr in order {
        let [b, a] = &objects[addr];
        push_object(&mut before, addr, b);
        push_object(&mut after, addr, a);
    }
    (before, after)
}

/// One side (current or desired) of a changed object.
struct Side {
    exists: bool,
    lines: Vec<String>,
}

/// The address on both sides (so every object is an anchor of the diff), then its fields;
/// `(absent)` when it does not exist on that side, `(exists)` when it has no fields.
fn push_object(text: &mut String, addr: &str, side: &Side) {
    text.push_str(addr);
    text.push('\n');
    if !side.exists {
        text.push_str("  (absent)\n");
    } else if side.lines.is_empty() {
        text.push_str("  (exists)\n");
    }
    for l in &side.lines {
        text.push_str(l);
        text.push('\n');
    }
}

pub fn render(plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    let (before, after) = canonical(plan);
    if before == after {
        return Ok(());
    }
    let diff = TextDiff::from_lines(&before, &after);
    diff.unified_diff().header("current", "desired").to_writer(out)
}
