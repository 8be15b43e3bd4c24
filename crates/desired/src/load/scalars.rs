//! Typed values of a desired file: names and name lists, text, booleans, counts, durations,
//! fairshare, TRES and flags' text lists, each checked where it stands, with a diagnostic on a
//! bad value.
//!
//! Part of the desired-file loader (methods of `Loader`): pure, no I/O, no sacctmgr, no printing.

use std::collections::BTreeMap;

use super::Loader;
use crate::tree::{Node, SNode};
use slurmplan_model::names::{self, Name, NameKind};
use slurmplan_model::values::{self, Fairshare, Tres};

impl Loader<'_> {
    // ---- scalars -----------------------------------------------------------------------

    pub(super) fn name(&mut self, node: &SNode, kind: NameKind, what: &str) -> Option<Name> {
        match &node.value {
            Node::Str(s) => self.name_text(node, s, kind),
            _ => {
                self.wrong_type(node, what, &format!("a {kind} name (a string)"));
                None
            }
        }
    }

    /// Validate a name written at `node` (a key or a value).
    pub(super) fn name_text(&mut self, node: &SNode, text: &str, kind: NameKind) -> Option<Name> {
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
    pub(super) fn name_list<'n>(
        &mut self,
        node: &'n SNode<'n>,
        kind: NameKind,
        what: &str,
    ) -> Option<Vec<(Name, &'n SNode<'n>)>> {
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

    pub(super) fn text(&mut self, node: &SNode, what: &str) -> Option<String> {
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

    pub(super) fn bool(&mut self, node: &SNode, what: &str) -> Option<bool> {
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
    pub(super) fn count(&mut self, node: &SNode, what: &str, max: u64) -> Option<u64> {
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

    pub(super) fn duration(&mut self, node: &SNode, what: &str) -> Option<u64> {
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

    pub(super) fn fairshare(&mut self, node: &SNode) -> Option<Fairshare> {
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

    pub(super) fn tres(&mut self, node: &SNode, what: &str) -> Tres {
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

    pub(super) fn text_list(&mut self, node: &SNode, kind: NameKind, what: &str) -> Vec<String> {
        // Prefixes: validated like names (they end up inside account names), order kept.
        self.name_list(node, kind, what).unwrap_or_default().into_iter().map(|(n, _)| n.as_str().to_string()).collect()
    }
}
