//! `slurmplan graph`: the account tree of each cluster as Graphviz DOT or a Mermaid flowchart,
//! one subgraph per cluster, with a plan's changes coloured when one is given: created accounts
//! green, updated yellow, deleted red; a re-parent draws the old parent edge dashed red and the
//! new one green. User associations are counted on their account (`3 users, +1, -1`).
//! Read-only, writes to the given writer (docs/graph.md).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use slurmplan_diff::Change;
use slurmplan_model::{Name, State};
use slurmplan_plan::Plan;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
enum Mark {
    #[default]
    Same,
    Update,
    Create,
    Delete,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Edge {
    Same,
    /// The new parent (create or re-parent): green.
    New,
    /// The old parent (re-parent) or an edge that goes with a deleted account: dashed red.
    Old,
}

#[derive(Default)]
struct Node {
    mark: Mark,
    users: usize,
    added: usize,
    removed: usize,
    changed: usize,
}

#[derive(Default)]
struct View {
    nodes: BTreeMap<Name, Node>,
    edges: BTreeMap<(Name, Name), Edge>,
}

impl View {
    fn mark(&mut self, n: &Name, m: Mark) {
        let node = self.nodes.entry(n.clone()).or_default();
        node.mark = node.mark.max(m);
    }

    /// Accounts in tree order (depth first from `root`, children by name), then any others.
    fn order(&self) -> Vec<&Name> {
        let mut children: BTreeMap<&Name, BTreeSet<&Name>> = BTreeMap::new();
        let mut has_parent: BTreeSet<&Name> = BTreeSet::new();
        for ((p, c), e) in &self.edges {
            if *e != Edge::Old || self.nodes.get(c).is_some_and(|n| n.mark == Mark::Delete) {
                children.entry(p).or_default().insert(c);
                has_parent.insert(c);
            }
        }
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&Name> = self.nodes.keys().filter(|n| !has_parent.contains(n)).rev().collect();
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            out.push(n);
            if let Some(cs) = children.get(n) {
                stack.extend(cs.iter().rev());
            }
        }
        out.extend(self.nodes.keys().filter(|n| !seen.contains(n)));
        out
    }

    fn label(&self, n: &Name, sep: &str) -> String {
        let node = &self.nodes[n];
        let mut parts = Vec::new();
        if node.users > 0 {
            parts.push(format!("{} user{}", node.users, if node.users == 1 { "" } else { "s" }));
        }
        if node.added > 0 {
            parts.push(format!("+{}", node.added));
        }
        if node.changed > 0 {
            parts.push(format!("~{}", node.changed));
        }
        if node.removed > 0 {
            parts.push(format!("-{}", node.removed));
        }
        if parts.is_empty() { n.to_string() } else { format!("{n}{sep}{}", parts.join(", ")) }
    }
}

fn views(state: &State, plan: Option<&Plan>) -> BTreeMap<Name, View> {
    let mut out: BTreeMap<Name, View> = BTreeMap::new();
    for (cname, c) in &state.clusters {
        let v = out.entry(cname.clone()).or_default();
        for (name, parent, _) in c.accounts.iter_sorted() {
            v.nodes.entry(name.clone()).or_default();
            if let Some(p) = parent {
                v.edges.insert((p.clone(), name.clone()), Edge::Same);
            }
        }
        for k in c.users.keys() {
            v.nodes.entry(k.account.clone()).or_default().users += 1;
        }
    }
    let Some(plan) = plan else { return out };
    for pc in &plan.changes {
        match &pc.change {
            Change::AccountCreate { cluster, name, parent, .. } => {
                let v = out.entry(cluster.clone()).or_default();
                v.mark(name, Mark::Create);
                v.edges.insert((parent.clone(), name.clone()), Edge::New);
            }
            Change::AccountDelete { cluster, name, parent, .. } => {
                let v = out.entry(cluster.clone()).or_default();
                v.mark(name, Mark::Delete);
                v.edges.insert((parent.clone(), name.clone()), Edge::Old);
            }
            Change::AccountUpdate { cluster, name, .. } => {
                out.entry(cluster.clone()).or_default().mark(name, Mark::Update)
            }
            Change::AccountReparent { cluster, name, from, to } => {
                let v = out.entry(cluster.clone()).or_default();
                v.nodes.entry(name.clone()).or_default();
                v.edges.insert((from.clone(), name.clone()), Edge::Old);
                v.edges.insert((to.clone(), name.clone()), Edge::New);
            }
            Change::AccountRecordUpdate { name, .. } => {
                for v in out.values_mut() {
                    if v.nodes.contains_key(name) {
                        v.mark(name, Mark::Update);
                    }
                }
            }
            Change::UserCreate { cluster, key, .. } => {
                out.entry(cluster.clone()).or_default().nodes.entry(key.account.clone()).or_default().added += 1
            }
            Change::UserDelete { cluster, key, .. } => {
                out.entry(cluster.clone()).or_default().nodes.entry(key.account.clone()).or_default().removed += 1
            }
            Change::UserUpdate { cluster, key, .. } => {
                out.entry(cluster.clone()).or_default().nodes.entry(key.account.clone()).or_default().changed += 1
            }
            _ => {}
        }
    }
    out
}

const GREEN: (&str, &str) = ("#d4f5d4", "#1a7f1a");
const YELLOW: (&str, &str) = ("#fff3b0", "#b38f00");
const RED: (&str, &str) = ("#f8d0d0", "#c00000");

fn colours(m: Mark) -> Option<(&'static str, &'static str)> {
    match m {
        Mark::Same => None,
        Mark::Create => Some(GREEN),
        Mark::Update => Some(YELLOW),
        Mark::Delete => Some(RED),
    }
}

fn dot_quote(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Graphviz DOT: `dot -Tsvg` draws it.
pub fn dot(state: &State, plan: Option<&Plan>, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "digraph slurmplan {{")?;
    writeln!(out, "  rankdir=LR;")?;
    writeln!(out, "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\"];")?;
    writeln!(out, "  edge [color=\"#555555\"];")?;
    for (cname, v) in views(state, plan) {
        let id = |n: &Name| dot_quote(&format!("{cname}/{n}"));
        writeln!(out, "  subgraph {} {{", dot_quote(&format!("cluster_{cname}")))?;
        writeln!(out, "    label={};", dot_quote(cname.as_str()))?;
        let order = v.order();
        for n in &order {
            let style = match colours(v.nodes[*n].mark) {
                Some((fill, line)) => format!(", fillcolor=\"{fill}\", color=\"{line}\""),
                None => String::new(),
            };
            writeln!(out, "    {} [label={}{style}];", id(n), dot_quote(&v.label(n, "\n")))?;
        }
        for (p, c, e) in edges_in_order(&v, &order) {
            let style = match e {
                Edge::Same => "",
                Edge::New => " [color=\"#1a7f1a\", penwidth=2]",
                Edge::Old => " [color=\"#c00000\", style=dashed]",
            };
            writeln!(out, "    {} -> {}{style};", id(p), id(c))?;
        }
        writeln!(out, "  }}")?;
    }
    writeln!(out, "}}")
}

/// Edges sorted by the child's position in `order`, then the parent's, old before new.
fn edges_in_order<'a>(v: &'a View, order: &[&Name]) -> Vec<(&'a Name, &'a Name, Edge)> {
    let pos: BTreeMap<&Name, usize> = order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut e: Vec<(&Name, &Name, Edge)> = v.edges.iter().map(|((p, c), e)| (p, c, *e)).collect();
    e.sort_by_key(|(p, c, k)| (pos.get(c).copied(), std::cmp::Reverse(*k == Edge::Old), pos.get(p).copied()));
    e
}

fn mermaid_label(s: &str) -> String {
    s.replace('"', "#quot;")
}

/// A Mermaid flowchart (GitHub and GitLab render it in Markdown).
pub fn mermaid(state: &State, plan: Option<&Plan>, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "flowchart LR")?;
    let mut next = 0usize;
    let mut link = 0usize;
    let mut classes: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut link_styles: Vec<(usize, Edge)> = Vec::new();
    for (ci, (cname, v)) in views(state, plan).into_iter().enumerate() {
        writeln!(out, "  subgraph c{ci}[\"{}\"]", mermaid_label(cname.as_str()))?;
        let order = v.order();
        let mut ids: BTreeMap<&Name, String> = BTreeMap::new();
        for n in &order {
            let id = format!("n{next}");
            next += 1;
            writeln!(out, "    {id}[\"{}\"]", mermaid_label(&v.label(n, "<br/>")))?;
            match v.nodes[*n].mark {
                Mark::Same => {}
                Mark::Create => classes.entry("create").or_default().push(id.clone()),
                Mark::Update => classes.entry("update").or_default().push(id.clone()),
                Mark::Delete => classes.entry("delete").or_default().push(id.clone()),
            }
            ids.insert(n, id);
        }
        for (p, c, e) in edges_in_order(&v, &order) {
            let (Some(pi), Some(cid)) = (ids.get(p), ids.get(c)) else { continue };
            let arrow = if e == Edge::Old { "-.->" } else { "-->" };
            writeln!(out, "    {pi} {arrow} {cid}")?;
            if e != Edge::Same {
                link_styles.push((link, e));
            }
            link += 1;
        }
        writeln!(out, "  end")?;
    }
    if plan.is_some() {
        for (name, (fill, line)) in [("create", GREEN), ("update", YELLOW), ("delete", RED)] {
            writeln!(out, "  classDef {name} fill:{fill},stroke:{line}")?;
        }
    }
    for (name, ids) in classes {
        writeln!(out, "  class {} {name}", ids.join(","))?;
    }
    for (i, e) in link_styles {
        let style = match e {
            Edge::New => "stroke:#1a7f1a,stroke-width:2px",
            _ => "stroke:#c00000,stroke-dasharray:5 5",
        };
        writeln!(out, "  linkStyle {i} {style}")?;
    }
    Ok(())
}
