//! A loose YAML tree with a source location on every node, for the desired-state loader.
//!
//! [`parse`] turns the text into [`SNode`]s (mappings keep every entry, duplicates included,
//! in file order) so that `load` can walk the whole document and report every problem at once
//! instead of stopping at serde's first error. No I/O, no printing, no sacctmgr.
//!
//! Three builders, one result. serde-saphyr is the reference: it implements all of YAML the
//! loader accepts (anchors, aliases, merge keys, tags) and gives the error messages. It is slow
//! on a million-association file, so two faster builders go first and decline (`None`) whatever
//! they are not sure of (why each earns its place, measured: docs/decisions.md and
//! docs/performance.md):
//! - `lines` reads block mappings and block sequences line by line, with single-line scalars
//!   and flat flow collections as values: the shape people and slurmplan's generators write.
//! - `fast` builds any plain YAML (no anchors, aliases, tags or merge keys) from the events of
//!   granit-parser (the parser serde-saphyr itself uses).
//!
//! Anything else, and any syntax error, goes to serde-saphyr. Plain scalars are typed the way
//! serde-saphyr types them: common forms here, any other one by asking serde-saphyr about that
//! scalar alone. `tests::both_builders_agree` (every shipped and test YAML file, tricky
//! scalars) and `tests::line_builder_agrees_on_random_documents` hold them together.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};
use std::borrow::Cow;
use std::fmt;

/// One YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    /// Borrowed from the file's text where the parser could (plain names: no copy each).
    Str(Cow<'a, str>),
    Seq(Vec<SNode<'a>>),
    /// Entries in file order; duplicate keys are kept (the loader reports them).
    Map(Vec<(SNode<'a>, SNode<'a>)>),
}

/// A node and where it starts (1-based line and column; for a collection, its first entry).
#[derive(Debug, Clone, PartialEq)]
pub struct SNode<'a> {
    pub value: Node<'a>,
    pub line: u32,
    pub column: u32,
}

impl Node<'_> {
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
            Node::Str(s) => Some(s.to_string()),
            Node::Null | Node::Seq(_) | Node::Map(_) => None,
        }
    }
}

/// Parse `text` into a located tree. Duplicate keys are passed through; the caller reports them.
pub fn parse(text: &str) -> Result<SNode<'_>, serde_saphyr::Error> {
    match lines::build(text).or_else(|| fast::build(text)) {
        Some(root) => Ok(root),
        None => parse_with_serde(text),
    }
}

/// The reference builder (see the module comment).
fn parse_with_serde(text: &str) -> Result<SNode<'static>, serde_saphyr::Error> {
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
    let tree: Spanned<SerdeNode> = serde_saphyr::from_str_with_options(text, options)?;
    Ok(SerdeNode::located(tree))
}

/// The tree as serde-saphyr delivers it (with its own location type).
enum SerdeNode {
    Scalar(Node<'static>),
    Seq(Vec<Spanned<SerdeNode>>),
    Map(Vec<(Spanned<SerdeNode>, Spanned<SerdeNode>)>),
}

impl SerdeNode {
    fn located(s: Spanned<SerdeNode>) -> SNode<'static> {
        let n = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let (line, column) = (n(s.referenced.line()), n(s.referenced.column()));
        let value = match s.value {
            SerdeNode::Scalar(v) => v,
            SerdeNode::Seq(items) => Node::Seq(items.into_iter().map(SerdeNode::located).collect()),
            SerdeNode::Map(entries) => {
                Node::Map(entries.into_iter().map(|(k, v)| (SerdeNode::located(k), SerdeNode::located(v))).collect())
            }
        };
        SNode { value, line, column }
    }
}

impl<'de> Deserialize<'de> for SerdeNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SerdeNode, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = SerdeNode;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Int(v.into())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Int(v.into())))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Int(v)))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(i128::try_from(v).map(Node::Int).unwrap_or(Node::Float(v as f64))))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Float(v)))
    }
    fn visit_char<E: de::Error>(self, v: char) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Str(Cow::Owned(v.to_string()))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Str(Cow::Owned(v.to_string()))))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Str(Cow::Owned(v))))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Str(Cow::Owned(String::from_utf8_lossy(v).into_owned()))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<SerdeNode, E> {
        Ok(SerdeNode::Scalar(Node::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<SerdeNode, D::Error> {
        SerdeNode::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<SerdeNode, D::Error> {
        SerdeNode::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SerdeNode, A::Error> {
        let mut v = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<SerdeNode>>()? {
            v.push(item);
        }
        Ok(SerdeNode::Seq(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SerdeNode, A::Error> {
        let mut v = Vec::new();
        while let Some(k) = map.next_key::<Spanned<SerdeNode>>()? {
            let val = map.next_value::<Spanned<SerdeNode>>()?;
            v.push((k, val));
        }
        Ok(SerdeNode::Map(v))
    }
}

/// The fast builder (see the module comment). `None` = leave this document to serde-saphyr.
mod fast {
    use super::*;

    /// Deeper documents go to serde-saphyr, which enforces its own depth budget.
    pub(super) const MAX_DEPTH: usize = 64;

    /// An open collection: where it starts, and where its children start on the shared
    /// scratch stacks.
    enum Open<'a> {
        Seq {
            line: u32,
            column: u32,
            from: usize,
        },
        /// A mapping, and a key waiting for its value.
        Map {
            line: u32,
            column: u32,
            from: usize,
            key: Option<SNode<'a>>,
        },
    }

    pub(super) fn build(text: &str) -> Option<SNode<'_>> {
        // Comments are not nodes: without this, every commented file would be declined.
        let mut options = serde_saphyr::granit_parser::Options::default();
        options.set_emit_comments(false);
        let mut parser = Parser::new_from_str_with_options(text, options);
        let mut stack: Vec<Open> = Vec::new();
        // Children of every open collection, innermost last. A closed collection moves its
        // children into a Vec of exactly their number: a million-entry file grows no vector
        // by doubling.
        let mut items: Vec<SNode> = Vec::new();
        let mut entries: Vec<(SNode, SNode)> = Vec::new();
        let mut root: Option<SNode> = None;
        let mut documents = 0;
        while let Some(next) = parser.next_event() {
            let (event, span) = next.ok()?;
            let line = u32::try_from(span.start.line()).ok()?;
            let column = u32::try_from(span.start.col() + 1).ok()?;
            let done = match event {
                Event::StreamStart | Event::DocumentEnd => continue,
                Event::StreamEnd => break,
                Event::DocumentStart(..) => {
                    documents += 1;
                    if documents > 1 {
                        return None;
                    }
                    continue;
                }
                Event::Scalar(value, style, anchor, tag) => {
                    if anchor != 0 || tag.is_some() {
                        return None;
                    }
                    SNode { value: scalar(value, style)?, line, column }
                }
                Event::SequenceStart(_, anchor, ref tag) | Event::MappingStart(_, anchor, ref tag) => {
                    if anchor != 0 || tag.is_some() || stack.len() >= MAX_DEPTH {
                        return None;
                    }
                    stack.push(match event {
                        Event::SequenceStart(..) => Open::Seq { line, column, from: items.len() },
                        _ => Open::Map { line, column, from: entries.len(), key: None },
                    });
                    continue;
                }
                Event::SequenceEnd | Event::MappingEnd => match stack.pop()? {
                    Open::Seq { line, column, from } => {
                        SNode { value: Node::Seq(items.drain(from..).collect()), line, column }
                    }
                    Open::Map { line, column, from, key: None } => {
                        SNode { value: Node::Map(entries.drain(from..).collect()), line, column }
                    }
                    Open::Map { key: Some(_), .. } => return None,
                },
                // Aliases, and anything this builder does not know.
                _ => return None,
            };
            match stack.last_mut() {
                None => root = Some(done),
                Some(Open::Seq { .. }) => items.push(done),
                Some(Open::Map { key: key @ None, .. }) => {
                    if matches!(&done.value, Node::Str(k) if k == "<<") {
                        return None; // a merge key
                    }
                    *key = Some(done);
                }
                Some(Open::Map { key: key @ Some(_), .. }) => entries.push((key.take()?, done)),
            }
        }
        // An empty document (no node at all) is left to serde-saphyr too.
        if !stack.is_empty() {
            return None;
        }
        root
    }

    /// Type a scalar as serde-saphyr's untyped deserialisation does. `None` = cannot tell.
    pub(super) fn scalar(value: Cow<'_, str>, style: ScalarStyle) -> Option<Node<'_>> {
        if style != ScalarStyle::Plain {
            return Some(Node::Str(value));
        }
        let t: &str = &value;
        let first = t.bytes().next();
        match t {
            "" | "~" | "null" | "Null" | "NULL" => return Some(Node::Null),
            "true" | "True" | "TRUE" => return Some(Node::Bool(true)),
            "false" | "False" | "FALSE" => return Some(Node::Bool(false)),
            _ => {}
        }
        // A name or a word: starts with a letter, and no spelling YAML or Rust's number parsers
        // give a meaning (yes/no/on/off/y/n are YAML 1.1 booleans; inf/nan floats).
        if first.is_some_and(|b| b.is_ascii_alphabetic()) && !t.contains(|c: char| c.is_whitespace()) {
            const SPECIAL: [&str; 12] =
                ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "inf", "infinity", "nan"];
            if !SPECIAL.iter().any(|w| t.eq_ignore_ascii_case(w)) {
                return Some(Node::Str(value));
            }
        }
        // A plain decimal count without a leading zero.
        if first.is_some_and(|b| b.is_ascii_digit())
            && t.bytes().all(|b| b.is_ascii_digit())
            && (t.len() == 1 || first != Some(b'0'))
            && let Ok(n) = t.parse::<u64>()
        {
            return Some(Node::Int(n.into()));
        }
        // Anything else: ask the reference about this scalar alone.
        match super::parse_with_serde(t).ok()?.value {
            v @ (Node::Null | Node::Bool(_) | Node::Int(_) | Node::Float(_) | Node::Str(_)) => Some(v),
            Node::Seq(_) | Node::Map(_) => None,
        }
    }
}

/// The line builder (see the module comment): block mappings and block sequences, one entry
/// per line, whose values are single-line scalars or flat flow collections. That is how
/// people and slurmplan's own generators write desired files, and reading it line by line
/// skips the general parser's tokens and events. It declines (`None`) anything else: tabs, non-ASCII text, CR line ends, document
/// markers, anchors, tags, escapes, multi-line scalars, nested flow collections, and any line
/// whose meaning it is not sure of. The other builders then take the document.
mod lines {
    use super::*;

    /// An open block collection: a mapping or a sequence. Its children sit on the builder's
    /// shared scratch stacks from `from` on, and move into a vector of exactly their number
    /// when it closes (so fifty thousand small mappings are not grown by doubling).
    struct Open<'a> {
        /// 0-based column of its keys or dashes.
        indent: usize,
        line: u32,
        column: u32,
        seq: bool,
        from: usize,
        /// A key whose value comes on the next lines, and where its `:` is (an empty value
        /// is a null there).
        pending: Option<(SNode<'a>, u32, u32)>,
    }

    /// The children of every open collection, innermost last.
    #[derive(Default)]
    struct Scratch<'a> {
        entries: Vec<(SNode<'a>, SNode<'a>)>,
        items: Vec<SNode<'a>>,
    }

    impl<'a> Open<'a> {
        fn new(indent: usize, line: u32, seq: bool, scratch: &Scratch<'a>) -> Open<'a> {
            let column = u32::try_from(indent + 1).unwrap_or(u32::MAX);
            let from = if seq { scratch.items.len() } else { scratch.entries.len() };
            Open { indent, line, column, seq, from, pending: None }
        }
        fn close(self, scratch: &mut Scratch<'a>) -> SNode<'a> {
            let value = if self.seq {
                Node::Seq(scratch.items.drain(self.from..).collect())
            } else {
                Node::Map(scratch.entries.drain(self.from..).collect())
            };
            SNode { value, line: self.line, column: self.column }
        }
        /// The pending key gets `value`. False if there is no pending key.
        fn settle(&mut self, value: Option<SNode<'a>>, scratch: &mut Scratch<'a>) -> bool {
            let Some((key, line, column)) = self.pending.take() else { return false };
            let value = value.unwrap_or(SNode { value: Node::Null, line, column });
            scratch.entries.push((key, value));
            true
        }
    }

    pub(crate) fn build(text: &str) -> Option<SNode<'_>> {
        if !text.is_ascii() || text.bytes().any(|b| b == b'\t' || b == b'\r') {
            return None;
        }
        let mut stack: Vec<Open> = Vec::new();
        let mut scratch = Scratch::default();
        for (i, raw) in text.split('\n').enumerate() {
            let line = u32::try_from(i + 1).ok()?;
            let indent = raw.bytes().take_while(|b| *b == b' ').count();
            let rest = &raw[indent..];
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            if indent == 0 && (rest.starts_with("---") || rest.starts_with("...") || rest.starts_with('%')) {
                return None;
            }
            let dash = rest == "-" || rest.starts_with("- ");
            // Close what this line ends, or open what it starts.
            if stack.is_empty() {
                if indent != 0 || dash {
                    return None;
                }
                stack.push(Open::new(0, line, false, &scratch));
            }
            loop {
                let top = stack.last_mut()?;
                if top.pending.is_some() {
                    if indent > top.indent {
                        if stack.len() >= fast::MAX_DEPTH {
                            return None;
                        }
                        let open = Open::new(indent, line, dash, &scratch);
                        stack.push(open);
                        break;
                    }
                    top.settle(None, &mut scratch);
                    continue;
                }
                if indent < top.indent {
                    let done = stack.pop()?.close(&mut scratch);
                    if !stack.last_mut()?.settle(Some(done), &mut scratch) {
                        return None;
                    }
                    continue;
                }
                if indent > top.indent {
                    return None; // a continuation line or a misplaced entry
                }
                break;
            }
            let top = stack.last_mut()?;
            if top.seq {
                if !dash {
                    return None;
                }
                let after = &rest[1..];
                let gap = after.bytes().take_while(|b| *b == b' ').count();
                let item = value(line, indent + 2 + gap, &after[gap..])?;
                scratch.items.push(item);
                continue;
            }
            if dash {
                return None;
            }
            let colon = rest.find(':')?;
            let key_text = &rest[..colon];
            if !key_text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/'))
                || key_text.is_empty()
                || key_text.starts_with('-')
            {
                return None;
            }
            let after = &rest[colon + 1..];
            if !(after.is_empty() || after.starts_with(' ')) {
                return None;
            }
            let key_column = indent + 1;
            let key = SNode {
                value: fast::scalar(Cow::Borrowed(key_text), ScalarStyle::Plain)?,
                line,
                column: col(key_column)?,
            };
            let gap = after.bytes().take_while(|b| *b == b' ').count();
            let v = &after[gap..];
            if v.is_empty() || v.starts_with('#') {
                top.pending = Some((key, line, col(key_column + colon)?));
                continue;
            }
            let item = value(line, key_column + colon + 1 + gap, v)?;
            scratch.entries.push((key, item));
        }
        // End of text: settle and close everything.
        while let Some(mut top) = stack.pop() {
            top.settle(None, &mut scratch);
            let done = top.close(&mut scratch);
            match stack.last_mut() {
                None => return Some(done),
                Some(parent) => {
                    if !parent.settle(Some(done), &mut scratch) {
                        return None;
                    }
                }
            }
        }
        None
    }

    fn col(c: usize) -> Option<u32> {
        u32::try_from(c).ok()
    }

    /// The rest of a line after `key: ` or `- ` (at 1-based `column`): one value, then
    /// nothing but spaces or a comment.
    fn value(line: u32, column: usize, v: &str) -> Option<SNode<'_>> {
        let first = v.bytes().next()?;
        let (node, rest) = match first {
            b'[' | b'{' => {
                let close = if first == b'[' { ']' } else { '}' };
                let end = v.find(close)?;
                let inner = &v[1..end];
                let node =
                    if first == b'[' { flow_seq(line, column + 1, inner)? } else { flow_map(line, column + 1, inner)? };
                (node, &v[end + 1..])
            }
            b'"' | b'\'' => {
                let end = 1 + v[1..].find(first as char)?;
                let inner = &v[1..end];
                if inner.contains(['\\', '"', '\'']) {
                    return None;
                }
                (Node::Str(Cow::Borrowed(inner)), &v[end + 1..])
            }
            _ => {
                let end = v.find(" #").unwrap_or(v.len());
                let text = v[..end].trim_end_matches(' ');
                if !plain(text, false) {
                    return None;
                }
                (fast::scalar(Cow::Borrowed(text), ScalarStyle::Plain)?, &v[end..])
            }
        };
        let trimmed = rest.trim_start_matches(' ');
        if !(trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < rest.len())) {
            return None;
        }
        Some(SNode { value: node, line, column: col(column)? })
    }

    /// A plain scalar this builder is sure of: safe characters, no indicator first, no `: `,
    /// not ending in `:`. In flow collections (`flow`) also no spaces, commas or colons.
    fn plain(t: &str, flow: bool) -> bool {
        let Some(&first) = t.as_bytes().first() else { return false };
        let safe = |b: u8| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'_' | b'.' | b'-' | b'/' | b'+' | b'~')
                || (!flow && matches!(b, b' ' | b',' | b':' | b'(' | b')' | b'='))
        };
        t.bytes().all(safe)
            && !matches!(first, b'-' | b':' | b',' | b' ' | b'~' | b'?')
            && !t.ends_with(':')
            && !t.contains(": ")
            || t == "~"
    }

    /// The items of `[...]` (`inner` starts at 1-based `column`): flat plain scalars.
    fn flow_seq(line: u32, column: usize, inner: &str) -> Option<Node<'_>> {
        if inner.bytes().all(|b| b == b' ') {
            return Some(Node::Seq(Vec::new()));
        }
        let mut items = Vec::with_capacity(inner.bytes().filter(|b| *b == b',').count() + 1);
        let mut at = column;
        for piece in inner.split(',') {
            let lead = piece.bytes().take_while(|b| *b == b' ').count();
            let text = piece[lead..].trim_end_matches(' ');
            if !plain(text, true) {
                return None;
            }
            items.push(SNode {
                value: fast::scalar(Cow::Borrowed(text), ScalarStyle::Plain)?,
                line,
                column: col(at + lead)?,
            });
            at += piece.len() + 1;
        }
        Some(Node::Seq(items))
    }

    /// The entries of `{...}` (`inner` starts at 1-based `column`): `key: value` pairs of flat
    /// plain scalars.
    fn flow_map(line: u32, column: usize, inner: &str) -> Option<Node<'_>> {
        if inner.bytes().all(|b| b == b' ') {
            return Some(Node::Map(Vec::new()));
        }
        let mut entries = Vec::new();
        let mut at = column;
        for piece in inner.split(',') {
            let (k, v) = piece.split_once(": ")?;
            let klead = k.bytes().take_while(|b| *b == b' ').count();
            let ktext = &k[klead..];
            let vlead = v.bytes().take_while(|b| *b == b' ').count();
            let vtext = v[vlead..].trim_end_matches(' ');
            if !plain(ktext, true) || !plain(vtext, true) {
                return None;
            }
            let key = SNode {
                value: fast::scalar(Cow::Borrowed(ktext), ScalarStyle::Plain)?,
                line,
                column: col(at + klead)?,
            };
            let vcol = at + k.len() + 2 + vlead;
            let value =
                SNode { value: fast::scalar(Cow::Borrowed(vtext), ScalarStyle::Plain)?, line, column: col(vcol)? };
            entries.push((key, value));
            at += piece.len() + 1;
        }
        Some(Node::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(n: &SNode) -> (u32, u32) {
        (n.line, n.column)
    }

    #[test]
    fn keeps_locations_and_duplicates() {
        let text = "a: 1\nb:\n  - x\n  - {c: d}\na: 2.5\n";
        for t in [parse(text).unwrap(), parse_with_serde(text).unwrap()] {
            let Node::Map(m) = &t.value else { panic!("{t:?}") };
            assert_eq!(m.len(), 3);
            assert_eq!(at(&m[0].0), (1, 1));
            assert_eq!(m[0].1.value, Node::Int(1));
            assert_eq!(at(&m[1].1), (3, 3));
            assert_eq!(at(&m[2].0), (5, 1));
            assert_eq!(m[2].1.value, Node::Float(2.5));
            let Node::Seq(s) = &m[1].1.value else { panic!() };
            assert_eq!(at(&s[1]), (4, 5));
            let Node::Map(inner) = &s[1].value else { panic!() };
            assert_eq!(at(&inner[0].0), (4, 6));
        }
    }

    /// Random documents near the line builder's subset (and just outside it): whatever it
    /// builds, serde-saphyr builds the same, locations included.
    #[test]
    fn line_builder_agrees_on_random_documents() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let words = [
            "a",
            "hpc_a1",
            "u1.x-y",
            "x",
            "yes",
            "n",
            "On",
            "null",
            "~",
            "7",
            "007",
            "0x1F",
            "1_000",
            "1.5",
            "-3",
            "+4",
            ".inf",
            "1-00:00:00",
            "12:30",
            "a b",
            "Physics Dept",
            "gres/gpu",
            "2G",
            "true",
            "k:v",
            "a,b",
            "#x",
            "x #y",
            "",
            "'q'",
            "\"d d\"",
            "'it''s'",
            "\"e\\n\"",
            "[a, b]",
            "[]",
            "{}",
            "{k: v}",
            "[a, [b]]",
            "{a}",
            "[a,]",
            "[ u1 , u2 ]",
            "&x a",
            "*x",
            "!!str 1",
            "|",
            ">",
            "- a",
            "a: b",
        ];
        let keys = ["a", "b", "users", "qos", "1", "y", "x-y", "a.b", "k k", "-k", "\"q\""];
        let mut agreed = 0;
        for _ in 0..30_000 {
            let mut doc = String::new();
            let mut depth = 0usize;
            let lines = 1 + next(8);
            for _ in 0..lines {
                let indent = match next(10) {
                    0 => depth.saturating_sub(1) * 2,
                    1 => depth * 2 + 1,
                    _ => depth * 2,
                };
                let pad = " ".repeat(indent);
                match next(9) {
                    0 => doc.push_str(&format!("{pad}# note\n")),
                    1 => doc.push('\n'),
                    2 => {
                        doc.push_str(&format!("{pad}{}:{}\n", keys[next(keys.len())], ["", " ", "  # c"][next(3)]));
                        depth = indent / 2 + 1;
                    }
                    3 => doc.push_str(&format!("{pad}- {}\n", words[next(words.len())])),
                    _ => {
                        let gap = " ".repeat(1 + next(2));
                        let tail = ["", " # c", "  ", "#c"][next(4)];
                        doc.push_str(&format!(
                            "{pad}{}:{gap}{}{tail}\n",
                            keys[next(keys.len())],
                            words[next(words.len())]
                        ));
                    }
                }
            }
            if let Some(built) = lines::build(&doc) {
                agreed += 1;
                let reference = parse_with_serde(&doc).map_err(|e| e.to_string());
                assert_eq!(Ok(&built), reference.as_ref(), "document:\n{doc}");
            }
        }
        assert!(agreed > 1500, "the line builder took only {agreed} of 30000 documents");
    }

    /// Every YAML file the project ships or tests with, plus scalar spellings YAML types in
    /// surprising ways: the fast builder gives exactly serde-saphyr's tree, or declines.
    #[test]
    fn both_builders_agree() {
        let mut texts: Vec<(String, String)> = Vec::new();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut dirs = vec![root.join("examples"), root.join("tests/data")];
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                    texts.push((p.display().to_string(), std::fs::read_to_string(&p).unwrap()));
                }
            }
        }
        assert!(texts.len() >= 5, "found {} YAML files", texts.len());
        let scalars = [
            "x",
            "yes",
            "No",
            "ON",
            "off",
            "y",
            "N",
            "true",
            "False",
            "TRUE",
            "null",
            "Null",
            "~",
            "",
            "0",
            "7",
            "007",
            "0x1F",
            "0o17",
            "0b11",
            "1_000",
            "-3",
            "+4",
            "1.5",
            "1e3",
            ".inf",
            "-.inf",
            ".nan",
            "inf",
            "NaN",
            "1-00:00:00",
            "12:30",
            "2026-01-01",
            "a b",
            "Physics Dept",
            "hpc_a1",
            "u1.x-y",
            "18446744073709551616",
            "99999999999999999999999",
            "'q'",
            "\"d\"",
            "2G",
            "1.50G",
        ];
        for v in scalars {
            texts.push((format!("scalar {v:?}"), format!("k: {v}\nl: [{v}]\n{v}: 1\n")));
        }
        texts.push(("empty".into(), String::new()));
        texts.push(("comment only".into(), "# nothing\n".into()));
        texts.push(("block scalar".into(), "a: |\n  x\n  y\nb: >\n  z\n".into()));
        let mut fast_count = 0;
        let mut lines_count = 0;
        for (what, text) in &texts {
            let reference = parse_with_serde(text);
            // A declined document is serde-saphyr's to build.
            if let Some(fast) = fast::build(text) {
                fast_count += 1;
                assert_eq!(Ok(&fast), reference.as_ref().map_err(|e| e.to_string()), "{what}");
            }
            if let Some(lines) = lines::build(text) {
                lines_count += 1;
                assert_eq!(Ok(&lines), reference.as_ref().map_err(|e| e.to_string()), "lines: {what}");
            }
        }
        assert!(lines_count > texts.len() / 3, "the line builder took only {lines_count} of {}", texts.len());
        assert!(fast_count > texts.len() / 2, "the fast builder took only {fast_count} of {}", texts.len());
        // Comments are no reason to decline (the shipped examples are commented). The files of
        // other tools (CI pipelines, Kubernetes manifests: multi-document, block scalars) are
        // only held to agreeing when taken.
        let others = ["examples/gitops/", "examples/slinky/"];
        for (what, text) in &texts {
            if what.contains("examples/") && !others.iter().any(|o| what.contains(o)) {
                assert!(fast::build(text).is_some(), "{what} was declined");
            }
        }
        assert!(fast::build("# top\na: 1 # end\nb: [x, y] # list\n").is_some());
        // What it must decline.
        for text in
            ["a: &x 1\nb: *x\n", "a: !!str 1\n", "base: {x: 1}\nc:\n  <<: {y: 2}\n", "a: 1\n---\nb: 2\n", "a: [1\n"]
        {
            assert!(fast::build(text).is_none(), "{text:?}");
        }
    }
}
