//! The top of a desired file: `version`, `settings`, `managed`, `protect`, the `qos` section,
//! and the walk into `clusters`.
//!
//! Part of the desired-file loader (methods of `Loader`): pure, no I/O, no sacctmgr, no printing.

use std::collections::{BTreeMap, BTreeSet};

use super::{Loader, MANAGED_KEYS, QOS_KEYS, RecordSeen, SETTINGS_KEYS, TOP_KEYS, merge_hint};
use crate::tree::{Node, SNode};
use crate::{Decl, Desired, QosFields, Scope};
use slurmplan_diag::Diagnostic;
use slurmplan_model::Qos;
use slurmplan_model::fingerprint::hash_bytes;
use slurmplan_model::names::{Name, NameKind};
use slurmplan_model::values;

impl Loader<'_> {
    // ---- sections ----------------------------------------------------------------------

    pub(super) fn document(&mut self, root: &SNode, text: &str) -> Desired {
        let mut desired = Desired {
            path: self.file.to_path_buf(),
            hash: hash_bytes(text.as_bytes()),
            preserve_user_case: false,
            scope: Scope::default(),
            protect: BTreeSet::new(),
            qos: BTreeMap::new(),
            qos_managed: BTreeMap::new(),
            accounts: BTreeMap::new(),
            clusters: BTreeMap::new(),
            warnings: Vec::new(),
            locations: Default::default(),
        };
        if !matches!(root.value, Node::Map(_)) {
            let found = root.value.kind();
            self.diags.push(
                Diagnostic::error("wrong-type", format!("the desired-state file must be a mapping, found {found}"))
                    .at(if matches!(root.value, Node::Null) { self.file_location() } else { self.at(root) })
                    .hint("start the file with `version: 1`; see docs/desired-format.md"),
            );
            return desired;
        }
        let top = self.fields(root, "(top level)", TOP_KEYS);

        self.version(&top, root);

        if let Some(s) = top.get("settings") {
            let f = self.fields(s, "settings", SETTINGS_KEYS);
            if let Some(b) = f.get("preserve_user_case").and_then(|n| self.bool(n, "settings.preserve_user_case")) {
                self.preserve_user_case = b;
            }
        }
        desired.preserve_user_case = self.preserve_user_case;

        match top.get("managed") {
            None => self.error(
                "empty-scope",
                root,
                "the file has no `managed` scope".into(),
                "add `managed:` with `roots: [...]` and/or `prefixes: [...]`; slurmplan touches only what it manages",
            ),
            Some(m) => desired.scope = self.scope(m, top.key("managed").unwrap_or(m)),
        }

        if let Some(p) = top.get("protect") {
            for (n, _) in self.name_list(p, NameKind::Account, "protect").unwrap_or_default() {
                desired.protect.insert(n);
            }
        }

        if let Some(q) = top.get("qos") {
            self.qos_section(q, &mut desired);
        }

        if let Some(c) = top.get("clusters") {
            self.clusters(c, &mut desired);
        }
        self.undeclared_qos(&desired);
        desired
    }

    /// The file's `version`: 1.
    fn version(&mut self, top: &super::Fields<'_>, root: &SNode) {
        match top.get("version") {
            None => self.error("missing-key", root, "the file has no `version`".into(), "add `version: 1` at the top"),
            Some(v) if v.value == Node::Int(1) => {}
            Some(v) => {
                let shown = v.value.scalar_text().unwrap_or_else(|| v.value.kind().to_string());
                self.error(
                    "bad-version",
                    v,
                    format!("unsupported `version` `{shown}`"),
                    "this slurmplan reads `version: 1`",
                );
            }
        }
    }

    /// The `clusters` section into `desired` (clusters, and the account records merged across them).
    fn clusters(&mut self, c: &SNode, desired: &mut Desired) {
        let mut records: BTreeMap<Name, RecordSeen> = BTreeMap::new();
        let mut cluster_keys: BTreeMap<Name, &SNode> = BTreeMap::new();
        for e in self.entries(c, "clusters") {
            let Some(cname) = self.name_text(e.key, &e.text, NameKind::Cluster) else {
                continue;
            };
            if let Some(first) = cluster_keys.get(&cname) {
                self.error(
                    "duplicate-cluster",
                    e.key,
                    format!("cluster `{cname}` is declared twice"),
                    merge_hint(first, &e.text),
                );
                continue;
            }
            cluster_keys.insert(cname.clone(), e.key);
            desired.locations.insert(Decl::Cluster(cname.clone()), self.pos(e.key));
            let cluster = self.cluster(&cname, e.value, &mut records, &mut desired.locations);
            desired.clusters.insert(cname, cluster);
        }
        for (name, seen) in records {
            desired.accounts.insert(name, seen.record);
        }
    }

    /// QoS referenced but not declared: a warning each.
    fn undeclared_qos(&mut self, desired: &Desired) {
        let refs = std::mem::take(&mut self.qos_refs);
        for (q, locs) in refs {
            if desired.qos.contains_key(&q) {
                continue;
            }
            let more = if locs.len() > 1 { format!(" (referenced {} times)", locs.len()) } else { String::new() };
            self.diags.push(
                Diagnostic::warning("undeclared-qos", format!("QoS `{q}` is not declared under `qos:`{more}"))
                    .at(locs[0].clone())
                    .hint("it must exist in slurmdbd; checked at plan time (declare it under `qos:` to manage it)"),
            );
        }
    }

    fn scope(&mut self, node: &SNode, key: &SNode) -> Scope {
        let f = self.fields(node, "managed", MANAGED_KEYS);
        let mut scope = Scope::default();
        if let Some(r) = f.get("roots") {
            scope.roots = self
                .name_list(r, NameKind::Account, "managed.roots")
                .unwrap_or_default()
                .into_iter()
                .map(|(n, _)| n)
                .collect();
        }
        if let Some(p) = f.get("prefixes") {
            scope.prefixes = self.text_list(p, NameKind::Account, "managed.prefixes");
        }
        if let Some(p) = f.get("qos_prefixes") {
            scope.qos_prefixes = self.text_list(p, NameKind::Qos, "managed.qos_prefixes");
        }
        // Entries that were given but invalid are reported already; do not add "empty" to that.
        let given = ["roots", "prefixes"].iter().any(|k| {
            f.get(k).is_some_and(|n| {
                !matches!(&n.value, Node::Null | Node::Seq(_)) || matches!(&n.value, Node::Seq(v) if !v.is_empty())
            })
        });
        if scope.roots.is_empty() && scope.prefixes.is_empty() && !given {
            self.error(
                "empty-scope",
                f.key("roots").or(f.key("prefixes")).unwrap_or(key),
                "the managed scope is empty: no `roots` and no `prefixes`".into(),
                "add `roots: [account]` (whole subtrees) and/or `prefixes: [prefix_]`",
            );
        }
        scope
    }

    fn qos_section(&mut self, node: &SNode, desired: &mut Desired) {
        let mut keys: BTreeMap<Name, &SNode> = BTreeMap::new();
        for e in self.entries(node, "qos") {
            let Some(name) = self.name_text(e.key, &e.text, NameKind::Qos) else {
                continue;
            };
            if let Some(first) = keys.get(&name) {
                self.error(
                    "duplicate-qos",
                    e.key,
                    format!("QoS `{name}` is declared twice"),
                    merge_hint(first, &e.text),
                );
                continue;
            }
            keys.insert(name.clone(), e.key);
            let what = format!("qos.{name}");
            let f = self.fields(e.value, &what, QOS_KEYS);
            // Only the attributes given are managed (a QoS is shared by the whole site);
            // `null` manages a scalar as unset.
            let mut q = Qos::default();
            let mut managed = QosFields::default();
            if let Some(d) = f.get("description") {
                q.description = self.text(d, &format!("{what}.description"));
            }
            if let Some(fl) = f.get("flags") {
                managed.flags = true;
                q.flags = self.flags(fl, &format!("{what}.flags"));
            }
            if let Some(t) = f.get("grp_tres_mins") {
                managed.grp_tres_mins = true;
                q.grp_tres_mins = self.tres(t, &format!("{what}.grp_tres_mins"));
            }
            if let Some(t) = f.get("grp_tres") {
                managed.grp_tres = true;
                q.grp_tres = self.tres(t, &format!("{what}.grp_tres"));
            }
            if let Some(n) = f.get("grp_submit_jobs") {
                managed.grp_submit_jobs = true;
                if !matches!(n.value, Node::Null) {
                    q.grp_submit_jobs = self.count(n, &format!("{what}.grp_submit_jobs"), values::MAX_COUNT);
                }
            }
            if let Some(n) = f.get("max_wall") {
                managed.max_wall = true;
                if !matches!(n.value, Node::Null) {
                    q.max_wall = self.duration(n, &format!("{what}.max_wall"));
                }
            }
            desired.locations.insert(Decl::Qos(name.clone()), self.pos(e.key));
            desired.qos_managed.insert(name.clone(), managed);
            desired.qos.insert(name, q);
        }
    }

    pub(super) fn flags(&mut self, node: &SNode, what: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Node::Seq(items) = &node.value else {
            self.wrong_type(node, what, "a list of flag names");
            return out;
        };
        for item in items {
            match &item.value {
                Node::Str(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()) => {
                    out.insert(s.to_ascii_lowercase());
                }
                Node::Str(s) => self.error(
                    "bad-value",
                    item,
                    format!("`{s}` in `{what}` is not a QoS flag name"),
                    "flags are single words such as `DenyOnLimit` or `NoDecay`, one per list entry",
                ),
                _ => self.wrong_type(item, what, "a flag name (a string)"),
            }
        }
        out
    }
}
