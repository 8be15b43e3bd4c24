//! The desired-state loader: walks the spanned YAML tree and builds a [`Desired`], collecting
//! every error and warning with its location and a hint.
//!
//! Pure: text in, `Desired` or diagnostics out. It must not run sacctmgr, spawn processes,
//! print, or read files (the caller hands it the text).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_saphyr::{MessageFormatter, UserMessageFormatter};

use super::tree::{self, Node, SNode};
use super::{
    Decl, DeclaredUser, DeclaredUsers, Desired, DesiredAccount, DesiredCluster, LineColumn, Locations, QosFields, Scope,
};
use crate::diag::{self, Diagnostic, Location};
use crate::model::fingerprint::hash_bytes;
use crate::model::names::{self, Name, NameKind};
use crate::model::values::{self, Fairshare, QosList, Tres};
use crate::model::{AccountRecord, Assoc, AssocData, Limits, Qos, UserKey, user_index};

const TOP_KEYS: &[&str] = &["version", "settings", "managed", "protect", "qos", "clusters"];
const SETTINGS_KEYS: &[&str] = &["preserve_user_case"];
const MANAGED_KEYS: &[&str] = &["roots", "prefixes", "qos_prefixes"];
const QOS_KEYS: &[&str] = &["description", "flags", "grp_tres_mins", "grp_tres", "grp_submit_jobs", "max_wall"];
const CLUSTER_KEYS: &[&str] = &["accounts", "users"];
const CLUSTER_USER_KEYS: &[&str] = &["default_account"];
/// Keys every association (account or user) may carry.
const ASSOC_KEYS: &[&str] = &[
    "fairshare",
    "qos",
    "default_qos",
    "grp_jobs",
    "grp_submit_jobs",
    "grp_tres",
    "grp_tres_mins",
    "grp_wall",
    "max_jobs",
    "max_submit_jobs",
    "max_tres",
    "max_tres_mins",
    "max_wall",
];
const ACCOUNT_ONLY_KEYS: &[&str] = &["parent", "description", "organization", "users"];
const USER_ASSOC_ONLY_KEYS: &[&str] = &["name", "partition"];

/// Parse `text` and build a [`Desired`]; see `super::load_str`.
pub(super) fn load(path: &Path, text: &str) -> Result<Desired, Vec<Diagnostic>> {
    let mut l = Loader { file: path, diags: Vec::new(), preserve_user_case: false, qos_refs: BTreeMap::new() };
    let root = match tree::parse(text) {
        Ok(root) => root,
        Err(e) => {
            let message: String =
                UserMessageFormatter.format_message(&e).chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            let location = e.location().map(|loc| l.location(loc));
            return Err(vec![
                Diagnostic::error("yaml-syntax", message)
                    .at_opt(location.or_else(|| Some(l.file_location())))
                    .hint("fix the YAML first; the other checks run once the file parses"),
            ]);
        }
    };
    let desired = l.document(&root, text);
    let mut diags = l.diags;
    diag::sort(&mut diags);
    if diag::has_errors(&diags) {
        return Err(diags);
    }
    let mut desired = desired;
    desired.warnings = diags;
    Ok(desired)
}

/// One mapping entry whose key is a scalar.
struct Entry<'n> {
    key: &'n SNode<'n>,
    /// The key as text, borrowed where it is a string (no copy of fifty thousand names).
    text: std::borrow::Cow<'n, str>,
    value: &'n SNode<'n>,
}

/// The known keys of a struct-like mapping.
struct Fields<'n> {
    map: BTreeMap<&'static str, Entry<'n>>,
}

impl<'n> Fields<'n> {
    fn get(&self, key: &str) -> Option<&'n SNode<'n>> {
        self.map.get(key).map(|e| e.value)
    }
    fn key(&self, key: &str) -> Option<&'n SNode<'n>> {
        self.map.get(key).map(|e| e.key)
    }
}

struct Loader<'a> {
    file: &'a Path,
    diags: Vec<Diagnostic>,
    preserve_user_case: bool,
    /// QoS named in associations: name -> where (for `undeclared-qos`).
    qos_refs: BTreeMap<Name, Vec<Location>>,
}

impl<'a> Loader<'a> {
    // ---- diagnostics -------------------------------------------------------------------

    fn location(&self, loc: serde_saphyr::Location) -> Location {
        Location {
            file: self.file.to_path_buf(),
            line: usize::try_from(loc.line()).unwrap_or(0),
            column: usize::try_from(loc.column()).unwrap_or(0),
        }
    }
    /// (line, column) of a node, for `Desired::locations`.
    fn pos(&self, node: &SNode) -> (u32, u32) {
        (node.line, node.column)
    }
    fn at(&self, node: &SNode) -> Location {
        Location { file: self.file.to_path_buf(), line: node.line as usize, column: node.column as usize }
    }
    fn file_location(&self) -> Location {
        Location { file: self.file.to_path_buf(), line: 0, column: 0 }
    }
    fn error(&mut self, code: &'static str, node: &SNode, message: String, hint: impl Into<String>) {
        let d = Diagnostic::error(code, message).at(self.at(node)).hint(hint);
        self.diags.push(d);
    }
    fn warn(&mut self, code: &'static str, node: &SNode, message: String, hint: impl Into<String>) {
        let d = Diagnostic::warning(code, message).at(self.at(node)).hint(hint);
        self.diags.push(d);
    }
    fn wrong_type(&mut self, node: &SNode, what: &str, expected: &str) {
        let found = node.value.kind();
        let hint = match &node.value {
            Node::Str(s) if expected.contains("integer") && s.trim().parse::<i128>().is_ok() => {
                "write the number without quotes".to_string()
            }
            Node::Int(_) | Node::Float(_) | Node::Bool(_) if expected.contains("string") => {
                "put the value in quotes to make it text".to_string()
            }
            Node::Null => format!("give a value, or remove `{what}`"),
            _ => format!("write {expected} here"),
        };
        self.error("wrong-type", node, format!("`{what}` must be {expected}, found {found}"), hint);
    }

    // ---- structure ---------------------------------------------------------------------

    /// The entries of a mapping (null counts as empty), with scalar keys.
    fn entries<'n>(&mut self, node: &'n SNode<'n>, what: &str) -> Vec<Entry<'n>> {
        let items = match &node.value {
            Node::Null => return Vec::new(),
            Node::Map(items) => items,
            _ => {
                self.wrong_type(node, what, "a mapping");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (k, v) in items {
            let text = match &k.value {
                Node::Str(s) => Some(std::borrow::Cow::Borrowed(&**s)),
                other => other.scalar_text().map(std::borrow::Cow::Owned),
            };
            match text {
                Some(text) => out.push(Entry { key: k, text, value: v }),
                None => self.error(
                    "wrong-type",
                    k,
                    format!("a key in `{what}` is {}; keys must be plain names", k.value.kind()),
                    "write the key as a plain word",
                ),
            }
        }
        out
    }

    /// A struct-like mapping: unknown and repeated keys are errors.
    fn fields<'n>(&mut self, node: &'n SNode<'n>, what: &str, allowed: &[&'static str]) -> Fields<'n> {
        let mut map: BTreeMap<&'static str, Entry<'n>> = BTreeMap::new();
        for e in self.entries(node, what) {
            let Some(&known) = allowed.iter().find(|k| **k == e.text) else {
                let hint = match suggest(&e.text, allowed) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("allowed keys here: {}", allowed.join(", ")),
                };
                self.error("unknown-key", e.key, format!("unknown key `{}` in `{what}`", e.text), hint);
                continue;
            };
            if let Some(first) = map.get(known) {
                let first_at = self.at(first.key);
                self.error(
                    "duplicate-key",
                    e.key,
                    format!("key `{known}` appears twice in `{what}`"),
                    format!("keep one; the first is at line {}", first_at.line),
                );
                continue;
            }
            map.insert(known, e);
        }
        Fields { map }
    }

    // ---- scalars -----------------------------------------------------------------------

    fn name(&mut self, node: &SNode, kind: NameKind, what: &str) -> Option<Name> {
        match &node.value {
            Node::Str(s) => self.name_text(node, s, kind),
            _ => {
                self.wrong_type(node, what, &format!("a {kind} name (a string)"));
                None
            }
        }
    }

    /// Validate a name written at `node` (a key or a value).
    fn name_text(&mut self, node: &SNode, text: &str, kind: NameKind) -> Option<Name> {
        let keep_case = kind == NameKind::User && self.preserve_user_case;
        match Name::parse(text, kind, keep_case) {
            Ok(parsed) => {
                if parsed.lowercased {
                    let hint = if kind == NameKind::User {
                        format!(
                            "write `{}`, or set `settings.preserve_user_case: true` if slurmdbd has Parameters=PreserveCaseUser",
                            parsed.name
                        )
                    } else {
                        format!("write `{}`", parsed.name)
                    };
                    self.warn(
                        "lowercased-name",
                        node,
                        format!(
                            "{kind} name `{text}` has upper case; sacctmgr lower-cases it too, so it is `{}`",
                            parsed.name
                        ),
                        hint,
                    );
                }
                Some(parsed.name)
            }
            Err(e) => {
                self.error("bad-name", node, e.to_string(), e.hint.clone());
                None
            }
        }
    }

    /// A list of names; `[]` is returned as an empty Vec (callers decide whether that is ok).
    fn name_list<'n>(&mut self, node: &'n SNode<'n>, kind: NameKind, what: &str) -> Option<Vec<(Name, &'n SNode<'n>)>> {
        let Node::Seq(items) = &node.value else {
            self.wrong_type(node, what, &format!("a list of {kind} names"));
            return None;
        };
        let mut out: Vec<(Name, &SNode)> = Vec::new();
        let mut seen: std::collections::HashSet<Name> = std::collections::HashSet::with_capacity(items.len());
        for item in items {
            let Some(n) = self.name(item, kind, what) else {
                continue;
            };
            if !seen.insert(n.clone()) {
                self.warn(
                    "duplicate-entry",
                    item,
                    format!("`{n}` is listed twice in `{what}`"),
                    "remove the repeated entry",
                );
                continue;
            }
            out.push((n, item));
        }
        Some(out)
    }

    fn text(&mut self, node: &SNode, what: &str) -> Option<String> {
        match &node.value {
            Node::Str(s) => match names::free_text(s) {
                Ok(t) => Some(t),
                Err(reason) => {
                    self.error(
                        "bad-text",
                        node,
                        format!("invalid `{what}` `{s}`: {reason}"),
                        "use plain text on one line, without quotes inside",
                    );
                    None
                }
            },
            _ => {
                self.wrong_type(node, what, "a string");
                None
            }
        }
    }

    fn bool(&mut self, node: &SNode, what: &str) -> Option<bool> {
        match node.value {
            Node::Bool(b) => Some(b),
            _ => {
                self.wrong_type(node, what, "`true` or `false`");
                None
            }
        }
    }

    fn negative(&mut self, node: &SNode, what: &str, n: i128) {
        self.error(
            "bad-value",
            node,
            format!("`{what}` is {n}; limits must be 0 or more"),
            format!("omit `{what}` to leave it unset"),
        );
    }

    /// A whole number from 0 to `max` (one of `values::MAX_*`: what slurmdbd stores).
    fn count(&mut self, node: &SNode, what: &str, max: u64) -> Option<u64> {
        match node.value {
            Node::Int(n) if n < 0 => {
                self.negative(node, what, n);
                None
            }
            Node::Int(n) => match u64::try_from(n).ok().filter(|v| *v <= max) {
                Some(v) => Some(v),
                None => {
                    self.error(
                        "bad-value",
                        node,
                        format!("`{what}` is {n}; slurmdbd stores 0 to {max}"),
                        format!("use a number from 0 to {max}, or omit `{what}` to leave it unset"),
                    );
                    None
                }
            },
            _ => {
                self.wrong_type(node, what, "an integer");
                None
            }
        }
    }

    fn duration(&mut self, node: &SNode, what: &str) -> Option<u64> {
        match &node.value {
            Node::Int(_) => self.count(node, what, values::MAX_COUNT),
            Node::Str(s) => {
                match values::parse_duration(s).and_then(|m| values::in_range(m, values::MAX_COUNT, what)) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        self.error(
                            "bad-value",
                            node,
                            format!("invalid `{what}`: {e}"),
                            "give minutes as an integer (90) or a time like \"1-00:00:00\"",
                        );
                        None
                    }
                }
            }
            _ => {
                self.wrong_type(node, what, "minutes (an integer) or a duration like \"D-HH:MM:SS\"");
                None
            }
        }
    }

    fn too_many_shares(&mut self, node: &SNode, n: impl std::fmt::Display) {
        self.error(
            "bad-value",
            node,
            format!("`fairshare` is {n}; slurmdbd stores 0 to {} shares", values::MAX_SHARES),
            "use a smaller number of shares, or `parent`",
        );
    }

    fn fairshare(&mut self, node: &SNode) -> Option<Fairshare> {
        match &node.value {
            Node::Int(n) if *n < 0 => {
                self.negative(node, "fairshare", *n);
                None
            }
            Node::Int(n) => match u32::try_from(*n).ok().filter(|v| *v <= values::MAX_SHARES) {
                Some(v) => Fairshare::normal(v),
                None => {
                    self.too_many_shares(node, *n);
                    None
                }
            },
            Node::Str(s) => match Fairshare::parse(s) {
                Ok(Some(Fairshare::Shares(n))) if n > values::MAX_SHARES => {
                    self.too_many_shares(node, n);
                    None
                }
                Ok(f) => f,
                Err(e) => {
                    self.error(
                        "bad-value",
                        node,
                        format!("invalid `fairshare`: {e}"),
                        "write a number of shares or `parent`",
                    );
                    None
                }
            },
            _ => {
                self.wrong_type(node, "fairshare", "a number of shares or `parent`");
                None
            }
        }
    }

    fn tres(&mut self, node: &SNode, what: &str) -> Tres {
        let mut out = Tres::new();
        let mut seen: BTreeMap<String, &SNode> = BTreeMap::new();
        for e in self.entries(node, what) {
            if !values::valid_tres_name(&e.text) {
                let lower = e.text.to_ascii_lowercase();
                let hint = if values::valid_tres_name(&lower) {
                    format!("TRES names are lower case: write `{lower}`")
                } else {
                    "TRES names look like `cpu`, `mem`, `node`, `billing`, `gres/gpu`".to_string()
                };
                self.error("bad-tres", e.key, format!("`{}` in `{what}` is not a TRES name", e.text), hint);
                continue;
            }
            if seen.contains_key(&*e.text) {
                self.error("duplicate-key", e.key, format!("TRES `{}` appears twice in `{what}`", e.text), "keep one");
                continue;
            }
            seen.insert(e.text.to_string(), e.key);
            let label = format!("{what}.{}", e.text);
            let value = match &e.value.value {
                Node::Int(n) if *n < 0 => {
                    self.negative(e.value, &label, *n);
                    None
                }
                Node::Int(_) => self.count(e.value, &label, values::MAX_TRES),
                Node::Str(s) => match values::parse_tres_value(&e.text, s)
                    .and_then(|v| values::in_range(v, values::MAX_TRES, &label))
                {
                    Ok(v) => Some(v),
                    Err(msg) => {
                        self.error(
                            "bad-value",
                            e.value,
                            msg,
                            "give an integer, or for memory a size like `2G` (stored in MiB)",
                        );
                        None
                    }
                },
                _ => {
                    self.wrong_type(e.value, &label, "an integer or a size like `2G`");
                    None
                }
            };
            if let Some(v) = value {
                out.insert(e.text.to_string(), v);
            }
        }
        out
    }

    fn text_list(&mut self, node: &SNode, kind: NameKind, what: &str) -> Vec<String> {
        // Prefixes: validated like names (they end up inside account names), order kept.
        self.name_list(node, kind, what).unwrap_or_default().into_iter().map(|(n, _)| n.as_str().to_string()).collect()
    }

    // ---- sections ----------------------------------------------------------------------

    fn document(&mut self, root: &SNode, text: &str) -> Desired {
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

        // QoS referenced but not declared.
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
        desired
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

    fn flags(&mut self, node: &SNode, what: &str) -> BTreeSet<String> {
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

    fn cluster(
        &mut self,
        cname: &Name,
        node: &SNode,
        records: &mut BTreeMap<Name, RecordSeen>,
        locations: &mut Locations,
    ) -> DesiredCluster {
        let what = format!("clusters.{cname}");
        let f = self.fields(node, &what, CLUSTER_KEYS);
        let mut cluster = DesiredCluster::default();
        // account -> (key node, parent value node)
        let mut declared: BTreeMap<Name, (&SNode, Option<&SNode>)> = BTreeMap::new();
        // Every declared user association, in file order (one sorted bulk build below); sized
        // once, as are their locations: a million entries grown by doubling cost ~0.2 s.
        let declared_users = f.get("accounts").map_or(0, count_user_entries);
        let mut user_assocs: Vec<DeclaredUser> = Vec::with_capacity(declared_users);

        if let Some(accts) = f.get("accounts") {
            for e in self.entries(accts, &format!("{what}.accounts")) {
                let Some(aname) = self.name_text(e.key, &e.text, NameKind::Account) else {
                    continue;
                };
                if let Some((first, _)) = declared.get(&aname) {
                    self.error(
                        "duplicate-account",
                        e.key,
                        format!("account `{aname}` is declared twice on cluster `{cname}`"),
                        merge_hint(first, &e.text),
                    );
                    continue;
                }
                let awhat = format!("{what}.accounts.{aname}");
                let allowed: Vec<&'static str> = ACCOUNT_ONLY_KEYS.iter().chain(ASSOC_KEYS).copied().collect();
                let af = self.fields(e.value, &awhat, &allowed);
                let parent_node = af.get("parent");
                let mut parent = names::root();
                if let Some(p) = parent_node {
                    if aname.as_str() == "root" {
                        self.error(
                            "root-parent",
                            p,
                            "account `root` cannot have a parent".into(),
                            "remove `parent` from `root`; it is the top of every cluster's tree",
                        );
                    } else if let Some(pn) = self.name(p, NameKind::Account, &format!("{awhat}.parent")) {
                        parent = pn;
                    }
                }
                declared.insert(aname.clone(), (e.key, parent_node.filter(|_| aname.as_str() != "root")));
                locations.insert(Decl::Account(cname.clone(), aname.clone()), self.pos(e.key));

                // The global account record.
                let description =
                    af.get("description").and_then(|n| self.text(n, &format!("{awhat}.description")).map(|t| (t, n)));
                let organization =
                    af.get("organization").and_then(|n| self.text(n, &format!("{awhat}.organization")).map(|t| (t, n)));
                self.merge_record(records, &aname, cname, description, organization);

                let assoc = self.assoc(&af, &awhat);
                cluster.accounts.insert(aname.clone(), DesiredAccount { parent, assoc });

                if let Some(users) = af.get("users") {
                    self.account_users(cname, &aname, users, &awhat, &mut user_assocs);
                }
            }
        }

        // Each (account, user, partition) is listed once per account (duplicates were refused
        // above), so the keys are unique.
        cluster.users = DeclaredUsers::from_unsorted(user_assocs).expect("user associations are unique per account");

        // Parents: declared here, root, or (warning) expected on the cluster already.
        for (aname, (_, parent_node)) in &declared {
            let Some(pnode) = parent_node else { continue };
            let parent = &cluster.accounts[aname].parent;
            if parent.as_str() == "root" || declared.contains_key(parent) {
                continue;
            }
            self.warn(
                "undeclared-parent",
                pnode,
                format!("parent `{parent}` of account `{aname}` is not declared on cluster `{cname}`"),
                "it must already exist on the cluster; checked at plan time",
            );
        }
        self.cycles(cname, &cluster, &declared);

        if let Some(users) = f.get("users") {
            let uwhat = format!("{what}.users");
            let mut seen: BTreeMap<Name, &SNode> = BTreeMap::new();
            // user -> accounts with an association (only needed here)
            let assocs_of = user_index(cluster.users.keys());
            for e in self.entries(users, &uwhat) {
                let Some(user) = self.name_text(e.key, &e.text, NameKind::User) else {
                    continue;
                };
                if let Some(first) = seen.get(&user) {
                    let first_at = self.at(first);
                    self.error(
                        "duplicate-user",
                        e.key,
                        format!("user `{user}` appears twice in `{uwhat}`"),
                        format!("merge it with the one at line {}", first_at.line),
                    );
                    continue;
                }
                seen.insert(user.clone(), e.key);
                locations.insert(Decl::User(cname.clone(), user.clone()), self.pos(e.key));
                let uf = self.fields(e.value, &format!("{uwhat}.{user}"), CLUSTER_USER_KEYS);
                let associated = assocs_of.get(&user);
                match uf.get("default_account") {
                    Some(dn) => {
                        let Some(acct) = self.name(dn, NameKind::Account, &format!("{uwhat}.{user}.default_account"))
                        else {
                            continue;
                        };
                        if associated.is_some_and(|s| s.contains(&acct)) {
                            // fine
                        } else if declared.contains_key(&acct) {
                            self.error(
                                "default-account-not-associated",
                                dn,
                                format!("default_account `{acct}` of user `{user}`: the user is not associated with `{acct}` on cluster `{cname}`"),
                                format!("add `{user}` under `accounts.{acct}.users`, or pick one of the user's accounts"),
                            );
                        } else {
                            self.warn(
                                "default-account-unchecked",
                                dn,
                                format!(
                                    "default_account `{acct}` of user `{user}` is not declared on cluster `{cname}`"
                                ),
                                "it must be an existing association of the user; checked at plan time",
                            );
                        }
                        cluster.defaults.insert(user, acct);
                    }
                    None if associated.is_none() => self.warn(
                        "user-without-association",
                        e.key,
                        format!("user `{user}` has no association and no default_account on cluster `{cname}`"),
                        "add the user under an account's `users`, or remove this entry",
                    ),
                    None => {}
                }
            }
        }
        cluster
    }

    fn account_users(
        &mut self,
        cname: &Name,
        aname: &Name,
        node: &SNode,
        awhat: &str,
        user_assocs: &mut Vec<DeclaredUser>,
    ) {
        let what = format!("{awhat}.users");
        let Node::Seq(items) = &node.value else {
            self.wrong_type(node, &what, "a list of user names or `{name: ...}` mappings");
            return;
        };
        let start = user_assocs.len();
        for item in items {
            let (user, partition, assoc) = match &item.value {
                Node::Str(s) => {
                    let Some(u) = self.name_text(item, s, NameKind::User) else {
                        continue;
                    };
                    (u, None, Assoc::default())
                }
                Node::Map(_) => {
                    let allowed: Vec<&'static str> = USER_ASSOC_ONLY_KEYS.iter().chain(ASSOC_KEYS).copied().collect();
                    let f = self.fields(item, &what, &allowed);
                    let Some(nn) = f.get("name") else {
                        self.error(
                            "missing-key",
                            item,
                            format!("a user entry in `{what}` has no `name`"),
                            "add `name: <user>`",
                        );
                        continue;
                    };
                    let Some(u) = self.name(nn, NameKind::User, &format!("{what}[].name")) else {
                        continue;
                    };
                    let partition = match f.get("partition") {
                        Some(p) => match self.name(p, NameKind::Partition, &format!("{what}.{u}.partition")) {
                            Some(p) => Some(p),
                            None => continue,
                        },
                        None => None,
                    };
                    let assoc = self.assoc(&f, &format!("{what}.{u}"));
                    (u, partition, assoc)
                }
                _ => {
                    self.wrong_type(item, &what, "a user name or a `{name: ...}` mapping");
                    continue;
                }
            };
            let key = UserKey { account: aname.clone(), user, partition };
            user_assocs.push(DeclaredUser { key, assoc, at: self.pos(item) });
        }
        // A user (and partition) listed twice: the later entries are refused. Lists are
        // usually in order, and then each entry differs from the one before: one pass, no
        // map of a million entries.
        let run = &user_assocs[start..];
        if !run.windows(2).all(|w| w[0].key < w[1].key) {
            self.refuse_repeated_users(cname, aname, user_assocs, start);
        }
    }

    /// Report and drop the entries of `user_assocs[start..]` (one account's users, in file
    /// order) whose user and partition came before; the first of each stays.
    fn refuse_repeated_users(&mut self, cname: &Name, aname: &Name, user_assocs: &mut Vec<DeclaredUser>, start: usize) {
        let mut first: BTreeMap<(Name, Option<Name>), LineColumn> = BTreeMap::new();
        let mut kept = Vec::new();
        for u in user_assocs.drain(start..) {
            let k = (u.key.user.clone(), u.key.partition.clone());
            if let Some((line, _)) = first.get(&k) {
                let on = match &u.key.partition {
                    Some(p) => format!(" (partition `{p}`)"),
                    None => String::new(),
                };
                let (at_line, at_column) = u.at;
                self.diags.push(
                    Diagnostic::error(
                        "duplicate-user",
                        format!(
                            "user `{}`{on} is listed twice under account `{aname}` on cluster `{cname}`",
                            u.key.user
                        ),
                    )
                    .at(Location { file: self.file.to_path_buf(), line: at_line as usize, column: at_column as usize })
                    .hint(format!("merge it with the entry at line {line}")),
                );
                continue;
            }
            first.insert(k, u.at);
            kept.push(u);
        }
        user_assocs.extend(kept);
    }

    /// Limits, QoS list and DefaultQOS of one association, with the DefaultQOS-in-list check.
    fn assoc(&mut self, f: &Fields<'_>, what: &str) -> Assoc {
        let mut limits = Limits::default();
        if let Some(n) = f.get("fairshare") {
            limits.fairshare = self.fairshare(n);
        }
        let count =
            |l: &mut Self, key: &str| f.get(key).and_then(|n| l.count(n, &format!("{what}.{key}"), values::MAX_COUNT));
        limits.grp_jobs = count(self, "grp_jobs");
        limits.grp_submit_jobs = count(self, "grp_submit_jobs");
        limits.max_jobs = count(self, "max_jobs");
        limits.max_submit_jobs = count(self, "max_submit_jobs");
        let tres =
            |l: &mut Self, key: &str| f.get(key).map(|n| l.tres(n, &format!("{what}.{key}"))).unwrap_or_default();
        limits.grp_tres = tres(self, "grp_tres");
        limits.grp_tres_mins = tres(self, "grp_tres_mins");
        limits.max_tres = tres(self, "max_tres");
        limits.max_tres_mins = tres(self, "max_tres_mins");
        let dur = |l: &mut Self, key: &str| f.get(key).and_then(|n| l.duration(n, &format!("{what}.{key}")));
        limits.grp_wall = dur(self, "grp_wall");
        limits.max_wall = dur(self, "max_wall");

        let mut qos = QosList::Inherit;
        let mut qos_ok = true;
        if let Some(qn) = f.get("qos") {
            match self.name_list(qn, NameKind::Qos, &format!("{what}.qos")) {
                Some(list) if list.is_empty() && matches!(qn.value, Node::Seq(_)) => {
                    qos_ok = false;
                    self.error(
                        "empty-qos-list",
                        qn,
                        format!("`{what}.qos` is empty; an association cannot run jobs without a QoS"),
                        "omit `qos` to inherit the parent's list",
                    );
                }
                Some(list) => {
                    let mut set = BTreeSet::new();
                    for (n, node) in list {
                        let loc = self.at(node);
                        self.qos_refs.entry(n.clone()).or_default().push(loc);
                        set.insert(n);
                    }
                    qos = QosList::Set(set);
                }
                None => qos_ok = false,
            }
        }
        let mut default_qos = None;
        if let Some(dn) = f.get("default_qos")
            && let Some(dq) = self.name(dn, NameKind::Qos, &format!("{what}.default_qos"))
        {
            let loc = self.at(dn);
            self.qos_refs.entry(dq.clone()).or_default().push(loc);
            match &qos {
                QosList::Set(set) if !set.contains(&dq) => self.error(
                    "default-qos-not-in-qos",
                    dn,
                    format!("default_qos `{dq}` is not in `{what}.qos` ({})", values::join(set)),
                    format!("add `{dq}` to `qos`, or pick a default from the list; sacctmgr refuses a DefaultQOS outside the QoS list"),
                ),
                QosList::Inherit if qos_ok => self.warn(
                    "default-qos-unchecked",
                    dn,
                    format!("default_qos `{dq}` of `{what}` is checked against the QoS list it inherits"),
                    "checked at plan time against the inherited list; give `qos` here to check it now",
                ),
                _ => {}
            }
            default_qos = Some(dq);
        }
        AssocData { limits, qos, default_qos }.into()
    }

    fn merge_record(
        &mut self,
        records: &mut BTreeMap<Name, RecordSeen>,
        aname: &Name,
        cname: &Name,
        description: Option<(String, &SNode)>,
        organization: Option<(String, &SNode)>,
    ) {
        let seen = records.entry(aname.clone()).or_default();
        let mut conflicts = Vec::new();
        for (field, new) in [("description", description), ("organization", organization)] {
            let Some((value, node)) = new else { continue };
            let (slot, from) = if field == "description" {
                (&mut seen.record.description, &mut seen.description_from)
            } else {
                (&mut seen.record.organization, &mut seen.organization_from)
            };
            match slot {
                Some(old) if *old != value => {
                    conflicts.push((field, value, old.clone(), from.clone(), node));
                }
                Some(_) => {}
                None => {
                    *slot = Some(value);
                    *from = Some((cname.clone(), node.line));
                }
            }
        }
        for (field, value, old, from, node) in conflicts {
            let (other_cluster, line) = from.expect("set together with the value");
            self.error(
                "account-record-conflict",
                node,
                format!("account `{aname}` has {field} `{value}` here but `{old}` on cluster `{other_cluster}` (line {line})"),
                format!("an account's {field} is global in slurmdbd: use the same value on every cluster, or give it once"),
            );
        }
    }

    /// Report cycles among declared accounts (each once, named in order).
    fn cycles(&mut self, cname: &Name, cluster: &DesiredCluster, declared: &BTreeMap<Name, (&SNode, Option<&SNode>)>) {
        let mut done: BTreeSet<&Name> = BTreeSet::new();
        for start in cluster.accounts.keys() {
            let mut path: Vec<&Name> = Vec::new();
            let mut cur = start;
            loop {
                if done.contains(cur) || cur.as_str() == "root" {
                    break;
                }
                if let Some(pos) = path.iter().position(|n| *n == cur) {
                    let cycle: Vec<&Name> = path[pos..].to_vec();
                    let first = cycle.iter().min().copied().expect("non-empty cycle");
                    let i = cycle.iter().position(|n| *n == first).expect("member");
                    let mut names: Vec<String> =
                        cycle[i..].iter().chain(&cycle[..i]).map(|n| format!("`{n}`")).collect();
                    names.push(format!("`{first}`"));
                    let (_, pnode) = declared[first];
                    let at = pnode.unwrap_or(declared[first].0);
                    self.error(
                        "parent-cycle",
                        at,
                        format!("accounts on cluster `{cname}` form a cycle of parents: {}", names.join(" -> ")),
                        "every account must lead up to `root`; change one `parent`",
                    );
                    break;
                }
                path.push(cur);
                match cluster.accounts.get(cur) {
                    Some(a) if cluster.accounts.contains_key(&a.parent) => cur = &a.parent,
                    _ => break,
                }
            }
            done.extend(path);
        }
    }
}

/// Where an account record's values were first given (for conflict messages).
#[derive(Default)]
struct RecordSeen {
    record: AccountRecord,
    description_from: Option<(Name, u32)>,
    organization_from: Option<(Name, u32)>,
}

/// Hint for a name declared twice: where the first one is, and a note when only case differs.
fn merge_hint(first: &SNode, text: &str) -> String {
    let line = first.line;
    match first.value.scalar_text() {
        Some(t) if t != text => {
            format!("merge it with `{t}` at line {line}; sacctmgr names are case-insensitive")
        }
        _ => format!("merge it with the one at line {line}"),
    }
}

/// The closest allowed key within a small edit distance.
fn suggest<'k>(word: &str, allowed: &[&'k str]) -> Option<&'k str> {
    let w = word.to_ascii_lowercase();
    let max = (w.chars().count() / 3).clamp(1, 3);
    allowed.iter().map(|k| (edit_distance(&w, k), *k)).filter(|(d, _)| *d <= max).min().map(|(_, k)| k)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// How many entries the `users` lists under an `accounts` mapping hold (an upper bound of the
/// user associations it declares; malformed parts count as nothing).
fn count_user_entries(accounts: &SNode) -> usize {
    let Node::Map(entries) = &accounts.value else { return 0 };
    entries
        .iter()
        .filter_map(|(_, account)| match &account.value {
            Node::Map(fields) => fields.iter().find_map(|(k, v)| match (&k.value, &v.value) {
                (Node::Str(key), Node::Seq(items)) if key == "users" => Some(items.len()),
                _ => None,
            }),
            _ => None,
        })
        .sum()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(edit_distance("max_wal", "max_wall"), 1);
        assert_eq!(suggest("max_wal", ASSOC_KEYS), Some("max_wall"));
        assert_eq!(suggest("Parent", ACCOUNT_ONLY_KEYS), Some("parent"));
        assert_eq!(suggest("zzzzzz", ASSOC_KEYS), None);
    }
}
