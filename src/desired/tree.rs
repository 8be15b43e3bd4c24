//! A loose YAML tree with a source location on every node, for the desired-state loader.
//!
//! serde-saphyr parses the text into [`Node`]s (mappings keep every entry, duplicates included,
//! in file order) so that `load` can walk the whole document and report every problem at once
//! instead of stopping at serde's first error. No I/O, no printing, no sacctmgr.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use std::fmt;

/// One YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Node>>),
    /// Entries in file order; duplicate keys are kept (the loader reports them).
    Map(Vec<(Spanned<Node>, Spanned<Node>)>),
}

impl Node {
    /// What the node is, for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Null => "nothing (null)",
            Node::Bool(_) => "a boolean",
            Node::Int(_) => "an integer",
            Node::Float(_) => "a decimal number",
            Node::Str(_) => "a string",
            Node::Seq(_) => "a list",
            Node::Map(_) => "a mapping",
        }
    }

    /// The scalar as text (for keys and messages); None for collections and null.
    pub fn scalar_text(&self) -> Option<String> {
        match self {
            Node::Bool(b) => Some(b.to_string()),
            Node::Int(i) => Some(i.to_string()),
            Node::Float(f) => Some(f.to_string()),
            Node::Str(s) => Some(s.clone()),
            Node::Null | Node::Seq(_) | Node::Map(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Int(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        Ok(i128::try_from(v).map(Node::Int).unwrap_or(Node::Float(v as f64)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_char<E: de::Error>(self, v: char) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Node, E> {
        Ok(Node::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut v = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            v.push(item);
        }
        Ok(Node::Seq(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut v = Vec::new();
        while let Some(k) = map.next_key::<Spanned<Node>>()? {
            let val = map.next_value::<Spanned<Node>>()?;
            v.push((k, val));
        }
        Ok(Node::Map(v))
    }
}

/// Parse `text` into a spanned tree. Duplicate keys are passed through; the caller reports them.
pub fn parse(text: &str) -> Result<Spanned<Node>, serde_saphyr::Error> {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    options.with_snippet = false;
    // Large sites declare a million user associations; the defaults (250k nodes) are for
    // untrusted configs. Depth stays limited.
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = 100_000_000;
    budget.max_events = 200_000_000;
    budget.max_total_scalar_bytes = 4 << 30;
    budget.max_reader_input_bytes = Some(4 << 30);
    options.budget = Some(budget);
    serde_saphyr::from_str_with_options(text, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_locations_and_duplicates() {
        let t = parse("a: 1\nb:\n  - x\n  - {c: d}\na: 2.5\n").unwrap();
        let Node::Map(m) = &t.value else { panic!("{t:?}") };
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].0.referenced.line(), m[0].0.referenced.column()), (1, 1));
        assert_eq!(m[0].1.value, Node::Int(1));
        assert_eq!((m[1].1.referenced.line(), m[1].1.referenced.column()), (3, 3));
        assert_eq!((m[2].0.referenced.line(), m[2].0.referenced.column()), (5, 1));
        let Node::Seq(s) = &m[1].1.value else { panic!() };
        assert_eq!((s[1].referenced.line(), s[1].referenced.column()), (4, 5));
        let Node::Map(inner) = &s[1].value else { panic!() };
        assert_eq!((inner[0].0.referenced.line(), inner[0].0.referenced.column()), (4, 6));
    }
}
