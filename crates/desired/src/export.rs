//! `export`: write a desired-state YAML (format version 1) that reproduces a [`State`] exactly
//! for a managed scope, so a site can adopt what it has: `plan` against the result is empty.
//!
//! What cannot be written in the desired format is reported as a warning, never silently
//! changed in a way the user does not see:
//! - a QoS list stored as deltas (`+hi,-normal`) is written as the explicit effective list
//!   (`qos-delta-flattened`: the first apply stores the same effective list explicitly);
//! - free text (Description, Organization, QoS description) that would not load back unchanged
//!   (upper case, quotes, empty) is left out, which means "not managed": it stays as it is;
//! - a DefaultAccount that is missing or not one of the user's associations
//!   (`dangling-default`: run `slurmplan doctor`);
//! - associations that name QoS that do not exist (`missing-qos`).
//!
//! Pure: returns text and diagnostics; no I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::Scope;
use slurmplan_diag::Diagnostic;
use slurmplan_model::names::{free_text, root};
use slurmplan_model::{Assoc, ClusterState, Fairshare, InOrder, Name, QosList, State, Tres};

/// What to export. With no roots and no prefixes, everything under `root` is managed.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    pub roots: Vec<Name>,
    pub prefixes: Vec<String>,
    /// Clusters to export; empty = all.
    pub clusters: Vec<Name>,
}

/// The YAML text and what could not be reproduced exactly.
#[derive(Debug, Clone)]
pub struct Exported {
    pub yaml: String,
    pub warnings: Vec<Diagnostic>,
    /// Numbers for a summary line: clusters, accounts, user associations, QoS.
    pub counts: (usize, usize, usize, usize),
}

const RESERVED: [&str; 10] = ["true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"];

/// A YAML scalar for a name or key: plain when it cannot be misread, else double-quoted.
fn scalar(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str());
    if plain { s.to_string() } else { quoted(s) }
}

/// A double-quoted YAML scalar (JSON string escapes are valid YAML).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn flow_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let v: Vec<String> = items.into_iter().map(scalar).collect();
    format!("[{}]", v.join(", "))
}

fn tres(t: &Tres) -> String {
    let v: Vec<String> = t.iter().map(|(k, n)| format!("{}: {n}", scalar(k))).collect();
    format!("{{{}}}", v.join(", "))
}

/// Free text that loads back as exactly `s`, if any.
fn text_ok(s: Option<&String>) -> Option<&String> {
    s.filter(|s| free_text(s).as_deref() == Ok(s.as_str()))
}

/// The association keys of `a`, as `key: value` lines (without indentation). `effective_parent`
/// is the parent's effective QoS list (to flatten deltas).
fn assoc_lines(a: &Assoc, parent_eff: &BTreeSet<Name>, what: &str, warnings: &mut Vec<Diagnostic>) -> Vec<String> {
    let mut v = Vec::new();
    let l = &a.limits;
    match l.fairshare {
        Some(Fairshare::Shares(n)) => v.push(format!("fairshare: {n}")),
        Some(Fairshare::Parent) => v.push("fairshare: parent".into()),
        None => {}
    }
    match &a.qos {
        QosList::Inherit => {}
        QosList::Set(s) if s.is_empty() => {}
        QosList::Set(s) => v.push(format!("qos: {}", flow_list(s.iter().map(Name::as_str)))),
        q @ QosList::Delta { .. } => {
            let eff = q.effective(parent_eff);
            if eff.is_empty() {
                warnings.push(
                    Diagnostic::warning(
                        "qos-delta-flattened",
                        format!(
                            "{what} stores its QoS as deltas (`{}`) that leave an empty list; exported as inherit",
                            q.display()
                        ),
                    )
                    .hint("give it an explicit QoS list in the exported file"),
                );
            } else {
                warnings.push(
                    Diagnostic::warning(
                        "qos-delta-flattened",
                        format!(
                            "{what} stores its QoS as deltas (`{}`); exported as the explicit effective list [{}]",
                            q.display(),
                            slurmplan_model::values::join(&eff)
                        ),
                    )
                    .hint(
                        "the desired format has no deltas: the first apply stores the same effective list explicitly",
                    ),
                );
                v.push(format!("qos: {}", flow_list(eff.iter().map(Name::as_str))));
            }
        }
    }
    if let Some(d) = &a.default_qos {
        if let QosList::Set(s) = &a.qos
            && !s.contains(d)
        {
            warnings.push(
                Diagnostic::warning(
                    "default-qos-outside",
                    format!("{what} has DefaultQOS `{d}` outside its own QoS list; the desired file refuses that"),
                )
                .hint("run `slurmplan doctor` and fix the association, then export again"),
            );
        }
        v.push(format!("default_qos: {}", scalar(d.as_str())));
    }
    let scalars = [
        ("grp_jobs", l.grp_jobs),
        ("grp_submit_jobs", l.grp_submit_jobs),
        ("grp_wall", l.grp_wall),
        ("max_jobs", l.max_jobs),
        ("max_submit_jobs", l.max_submit_jobs),
        ("max_wall", l.max_wall),
    ];
    for (k, n) in scalars {
        if let Some(n) = n {
            v.push(format!("{k}: {n}"));
        }
    }
    for (k, t) in [
        ("grp_tres", &l.grp_tres),
        ("grp_tres_mins", &l.grp_tres_mins),
        ("max_tres", &l.max_tres),
        ("max_tres_mins", &l.max_tres_mins),
    ] {
        if !t.is_empty() {
            v.push(format!("{k}: {}", tres(t)));
        }
    }
    v
}

/// Accounts of a cluster in tree order (parents first, siblings by name).
fn tree_order(c: &ClusterState) -> Vec<Name> {
    let mut out = Vec::new();
    let mut stack: Vec<Name> = vec![root()];
    if !c.accounts.contains("root") {
        return c.accounts.names().into_iter().cloned().collect();
    }
    while let Some(n) = stack.pop() {
        let mut kids: Vec<Name> = c.accounts.children(n.as_str()).into_iter().cloned().collect();
        kids.reverse();
        out.push(n);
        stack.extend(kids);
    }
    out
}

fn references_missing(a: &Assoc, state: &State) -> Vec<Name> {
    a.qos_names().filter(|q| !state.qos.contains_key(*q)).cloned().collect()
}

/// Export `state` for the scope in `opts`. Unknown clusters in `opts.clusters` are errors.
pub fn export(state: &State, opts: &ExportOptions) -> Result<Exported, Vec<Diagnostic>> {
    let unknown = unknown_clusters(state, opts);
    if !unknown.is_empty() {
        return Err(unknown);
    }
    let mut scope =
        Scope { roots: opts.roots.iter().cloned().collect(), prefixes: opts.prefixes.clone(), qos_prefixes: vec![] };
    if scope.roots.is_empty() && scope.prefixes.is_empty() {
        scope.roots.insert(root());
    }
    let mut w = Writer {
        state,
        scope: &scope,
        body: String::new(),
        warnings: Vec::new(),
        records_written: BTreeSet::new(),
        preserve_case: false,
        n_clusters: 0,
        n_accounts: 0,
        n_users: 0,
    };
    for (cname, c) in &state.clusters {
        if !opts.clusters.is_empty() && !opts.clusters.contains(cname) {
            continue;
        }
        w.cluster(cname, c);
    }
    let mut out = head(state, &scope, w.preserve_case);
    if w.body.is_empty() {
        let _ = writeln!(out, "clusters: {{}}");
    } else {
        let _ = writeln!(out, "clusters:");
        out.push_str(&w.body);
    }
    Ok(Exported { yaml: out, warnings: w.warnings, counts: (w.n_clusters, w.n_accounts, w.n_users, state.qos.len()) })
}

/// One error per cluster of `opts.clusters` that `state` does not have.
fn unknown_clusters(state: &State, opts: &ExportOptions) -> Vec<Diagnostic> {
    opts.clusters
        .iter()
        .filter(|c| !state.clusters.contains_key(*c))
        .map(|c| {
            Diagnostic::error("unknown-cluster", format!("cluster `{c}` is not in the current state")).hint(format!(
                "known clusters: {}",
                state.clusters.keys().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ))
        })
        .collect()
}

/// The file's head: comments, `version`, `settings` (when a user name has upper case),
/// `managed`, and every QoS of the state.
fn head(state: &State, scope: &Scope, preserve_case: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Desired accounting state exported by `slurmplan export` from the current state.");
    let _ = writeln!(out, "# `slurmplan plan -d` against the same state is empty; edit from here.");
    let _ = writeln!(out, "version: 1");
    if preserve_case {
        let _ = writeln!(out, "settings:\n  preserve_user_case: true");
    }
    let _ = writeln!(out, "managed:");
    if !scope.roots.is_empty() {
        let _ = writeln!(out, "  roots: {}", flow_list(scope.roots.iter().map(Name::as_str)));
    }
    if !scope.prefixes.is_empty() {
        let _ = writeln!(out, "  prefixes: {}", flow_list(scope.prefixes.iter().map(String::as_str)));
    }
    if state.qos.is_empty() {
        let _ = writeln!(out, "qos: {{}}");
    } else {
        let _ = writeln!(out, "qos:");
    }
    for (name, q) in &state.qos {
        let mut lines = Vec::new();
        if let Some(d) = text_ok(q.description.as_ref()) {
            lines.push(format!("description: {}", quoted(d)));
        }
        if !q.flags.is_empty() {
            lines.push(format!("flags: {}", flow_list(q.flags.iter().map(String::as_str))));
        }
        if !q.grp_tres_mins.is_empty() {
            lines.push(format!("grp_tres_mins: {}", tres(&q.grp_tres_mins)));
        }
        if !q.grp_tres.is_empty() {
            lines.push(format!("grp_tres: {}", tres(&q.grp_tres)));
        }
        if let Some(n) = q.grp_submit_jobs {
            lines.push(format!("grp_submit_jobs: {n}"));
        }
        if let Some(n) = q.max_wall {
            lines.push(format!("max_wall: {n}"));
        }
        block(&mut out, "  ", name, lines, "    ");
    }
    out
}

/// `name: {}` when `lines` is empty, else `name:` and the lines indented by `inner`.
fn block(out: &mut String, indent: &str, name: &Name, lines: Vec<String>, inner: &str) {
    if lines.is_empty() {
        let _ = writeln!(out, "{indent}{}: {{}}", scalar(name.as_str()));
    } else {
        let _ = writeln!(out, "{indent}{}:", scalar(name.as_str()));
        for l in lines {
            let _ = writeln!(out, "{inner}{l}");
        }
    }
}

/// The `clusters:` body as it is written, cluster by cluster, and what it found on the way.
struct Writer<'a> {
    state: &'a State,
    scope: &'a Scope,
    body: String,
    warnings: Vec<Diagnostic>,
    /// Accounts whose record (Description, Organization) is written already: once per name.
    records_written: BTreeSet<Name>,
    /// A user name has upper case, so the file needs `preserve_user_case`.
    preserve_case: bool,
    n_clusters: usize,
    n_accounts: usize,
    n_users: usize,
}

impl Writer<'_> {
    /// One cluster: its managed accounts in tree order, then the DefaultAccounts that point at
    /// one of them. Writes nothing for a cluster with no managed account.
    fn cluster(&mut self, cname: &Name, c: &ClusterState) {
        let managed: Vec<Name> = tree_order(c)
            .into_iter()
            .filter(|n| self.scope.manages_account(n, c.accounts.ancestors(n.as_str())))
            .collect();
        if managed.is_empty() {
            return;
        }
        self.n_clusters += 1;
        let declared: BTreeSet<&Name> = managed.iter().collect();
        let _ = writeln!(self.body, "  {}:", scalar(cname.as_str()));
        let _ = writeln!(self.body, "    accounts:");
        for name in &managed {
            self.account(cname, c, name);
        }
        self.defaults(cname, c, &declared);
    }

    /// One account: parent, record text (the first time the name is written), association
    /// keys and its user associations.
    fn account(&mut self, cname: &Name, c: &ClusterState, name: &Name) {
        let state = self.state;
        self.n_accounts += 1;
        let node = c.accounts.get(name.as_str()).expect("name from the tree");
        let parent = c.accounts.parent(name.as_str());
        let parent_eff = parent.map(|p| c.accounts.effective_qos(p.as_str())).unwrap_or_default();
        let what = format!("account `{name}` on `{cname}`");
        let mut lines = Vec::new();
        if let Some(p) = parent {
            lines.push(format!("parent: {}", scalar(p.as_str())));
        }
        if !self.records_written.contains(name)
            && let Some(rec) = state.accounts.get(name)
        {
            self.records_written.insert(name.clone());
            if let Some(d) = text_ok(rec.description.as_ref()) {
                lines.push(format!("description: {}", quoted(d)));
            }
            if let Some(o) = text_ok(rec.organization.as_ref()) {
                lines.push(format!("organization: {}", quoted(o)));
            }
        }
        lines.extend(assoc_lines(&node.assoc, &parent_eff, &what, &mut self.warnings));
        self.missing_qos(&what, &node.assoc);
        let users = self.users(cname, c, name);
        if !users.is_empty() {
            lines.push("users:".into());
            lines.extend(users.into_iter().map(|l| format!("  {l}")));
        }
        block(&mut self.body, "      ", name, lines, "        ");
    }

    /// The `users:` list items of account `name`: a bare name, or a mapping when the
    /// association has a partition or sets something.
    fn users(&mut self, cname: &Name, c: &ClusterState, name: &Name) -> Vec<String> {
        let acct_eff = c.accounts.effective_qos(name.as_str());
        let mut users = Vec::new();
        for (k, a) in c.users_of_account(name) {
            self.n_users += 1;
            if k.user.as_str().chars().any(|ch| ch.is_ascii_uppercase()) {
                self.preserve_case = true;
            }
            let uwhat = format!("user association `{}` on `{cname}`", slurmplan_model::user_key_label(k));
            let ulines = assoc_lines(a, &acct_eff, &uwhat, &mut self.warnings);
            self.missing_qos(&uwhat, a);
            if ulines.is_empty() && k.partition.is_none() {
                users.push(format!("- {}", scalar(k.user.as_str())));
            } else {
                users.push(format!("- name: {}", scalar(k.user.as_str())));
                if let Some(p) = &k.partition {
                    users.push(format!("  partition: {}", scalar(p.as_str())));
                }
                users.extend(ulines.into_iter().map(|l| format!("  {l}")));
            }
        }
        users
    }

    /// A `missing-qos` warning when association `a` (`what`) names QoS the state lacks.
    fn missing_qos(&mut self, what: &str, a: &Assoc) {
        let missing = references_missing(a, self.state);
        if !missing.is_empty() {
            self.warnings.push(
                Diagnostic::warning(
                    "missing-qos",
                    format!(
                        "{what} names QoS that do not exist: {}",
                        slurmplan_model::values::join(&missing.into_iter().collect())
                    ),
                )
                .hint("run `slurmplan doctor`; `plan` refuses the exported file until it is fixed"),
            );
        }
    }

    /// The cluster's `users:` DefaultAccounts that point at a declared account; a user with an
    /// association in the scope whose DefaultAccount is missing or dangling gets a warning.
    fn defaults(&mut self, cname: &Name, c: &ClusterState, declared: &BTreeSet<&Name>) {
        let index = c.user_index();
        let mut defaults: BTreeMap<&Name, &Name> = BTreeMap::new();
        let mut current_defaults = InOrder::new(&c.defaults);
        for (user, accts) in index.iter() {
            let touches_managed = accts.iter().any(|a| declared.contains(a));
            match current_defaults.get(user) {
                Some(d) if accts.contains(d) && declared.contains(d) => {
                    defaults.insert(user, d);
                }
                Some(d) if accts.contains(d) => {}
                Some(d) if touches_managed => self.warnings.push(
                    Diagnostic::warning(
                        "dangling-default",
                        format!("user `{user}` on `{cname}` has DefaultAccount `{d}`, which is not one of its associations; not exported"),
                    )
                    .hint("run `slurmplan doctor` (and apply its repair plan) before exporting"),
                ),
                None if touches_managed => self.warnings.push(
                    Diagnostic::warning("dangling-default", format!("user `{user}` on `{cname}` has no DefaultAccount; not exported"))
                        .hint("run `slurmplan doctor` (and apply its repair plan) before exporting"),
                ),
                _ => {}
            }
        }
        if !defaults.is_empty() {
            let _ = writeln!(self.body, "    users:");
            for (u, d) in defaults {
                let _ = writeln!(self.body, "      {}:", scalar(u.as_str()));
                let _ = writeln!(self.body, "        default_account: {}", scalar(d.as_str()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_yaml_would_misread_are_quoted() {
        for (name, want) in [
            ("hpc_a", "hpc_a"),
            ("gres/gpu", "gres/gpu"),
            ("1234", "\"1234\""),
            ("true", "\"true\""),
            ("No", "\"No\""),
            ("gres/gpu:a100", "\"gres/gpu:a100\""),
            (".hidden", "\".hidden\""),
        ] {
            assert_eq!(scalar(name), want);
        }
        assert_eq!(quoted("a: b # c\\"), "\"a: b # c\\\\\"");
    }

    #[test]
    fn free_text_that_would_change_is_left_out() {
        assert_eq!(text_ok(Some(&"physics dept".to_string())), Some(&"physics dept".to_string()));
        assert_eq!(text_ok(Some(&"Normal QOS default".to_string())), None);
        assert_eq!(text_ok(Some(&String::new())), None);
        assert_eq!(text_ok(Some(&"it`s".to_string())), None);
    }

    #[test]
    fn a_default_qos_outside_its_own_list_is_a_warning() {
        let n = |s: &str| Name::keep_case(s, slurmplan_model::NameKind::Qos).unwrap();
        let a: Assoc = slurmplan_model::AssocData {
            qos: QosList::Set([n("hi")].into()),
            default_qos: Some(n("normal")),
            ..Default::default()
        }
        .into();
        let mut w = Vec::new();
        let lines = assoc_lines(&a, &BTreeSet::new(), "account `x`", &mut w);
        assert_eq!(lines, ["qos: [hi]", "default_qos: normal"]);
        assert_eq!(w[0].code, "default-qos-outside");
    }
}
