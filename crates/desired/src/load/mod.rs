//! The desired-state loader: walks the spanned YAML tree and builds a [`Desired`], collecting
//! every error and warning with its location and a hint.
//!
//! Pure: text in, `Desired` or diagnostics out. It must not run sacctmgr, spawn processes,
//! print, or read files (the caller hands it the text).

use std::collections::BTreeMap;
use std::path::Path;

use serde_saphyr::{MessageFormatter, UserMessageFormatter};

use super::Desired;
use super::tree::{self, Node, SNode};
use slurmplan_diag::{self as diag, Diagnostic, Location};
use slurmplan_model::AccountRecord;
use slurmplan_model::names::Name;

mod assoc;
mod cluster;
mod document;
mod scalars;

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
