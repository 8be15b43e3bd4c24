//! Validated names (accounts, users, QoS, clusters, partitions, TRES).
//!
//! Every name that can reach a sacctmgr argv passes through [`Name::parse`]. It admits the
//! characters that were seen to survive sacctmgr's argument parsing, its `where` matching and
//! its `-P` output unchanged on real Slurm 22.05 and 24.11 (docs/decisions.md), and refuses the
//! rest with the reason: sacctmgr splits on commas and at `=`, expands `x[1-2]`, turns quotes
//! into backticks, lower-cases, and a `|` cannot be told from the `-P` column separator.
//! Names read back from sacctmgr ([`Name::from_sacctmgr`]) are taken as printed. This module
//! does no I/O.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a name names; used only for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Account,
    User,
    Qos,
    Cluster,
    Partition,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::Account => "account",
            NameKind::User => "user",
            NameKind::Qos => "QoS",
            NameKind::Cluster => "cluster",
            NameKind::Partition => "partition",
        })
    }
}

/// A name as sacctmgr stores it: lower-cased (users may keep case with PreserveCaseUser).
///
/// A small value (16 bytes, like a shared string handle, and `Option<Name>` too): a million
/// associations repeat the same names, states are copied while planning, and every map is
/// ordered by names. Names of up to 15 bytes, nearly all user names and many account names,
/// are kept inline: making one needs no lookup, copying one no reference count, and two
/// compare as one integer. Longer names are stored once per process in a table of long names
/// (below) and held by their first 11 bytes and their index there. This is the one special
/// structure for speed in the model; everything else sees `as_str` and the usual traits.
#[derive(Clone, PartialEq, Eq)]
pub struct Name(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    /// The bytes, zero-padded, and the length.
    Short([u8; INLINE], Len),
    /// The first bytes (most comparisons end there) and an index into the table of long names
    /// (each distinct long name has one index, so equal indices mean equal names and different
    /// ones different names). The index is kept as bytes so that the variant fits beside the
    /// length byte of `Short`.
    Long([u8; PREFIX], [u8; 4]),
}

/// Bytes of a long name kept beside its index.
const PREFIX: usize = 11;

/// Bytes kept inline.
const INLINE: usize = 15;

/// The length of a short name. An enum rather than a `u8` so that its unused values tell the
/// two kinds of name apart without a separate tag (that keeps `Name` at 16 bytes).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Len {
    L0,
    L1,
    L2,
    L3,
    L4,
    L5,
    L6,
    L7,
    L8,
    L9,
    L10,
    L11,
    L12,
    L13,
    L14,
    L15,
}

const LENS: [Len; INLINE + 1] = [
    Len::L0,
    Len::L1,
    Len::L2,
    Len::L3,
    Len::L4,
    Len::L5,
    Len::L6,
    Len::L7,
    Len::L8,
    Len::L9,
    Len::L10,
    Len::L11,
    Len::L12,
    Len::L13,
    Len::L14,
    Len::L15,
];

const _: () = assert!(std::mem::size_of::<Name>() == 16 && std::mem::size_of::<Option<Name>>() == 16);

/// The first [`PREFIX`] bytes of a name as one integer that orders like them.
fn prefix_key(bytes: &[u8]) -> u128 {
    let mut k = [0u8; 16];
    k[..PREFIX].copy_from_slice(&bytes[..PREFIX]);
    u128::from_be_bytes(k)
}

/// A short name as one integer that orders like the text: the zero-padded bytes, then the
/// length (if the padded bytes are equal, the shorter text is a prefix of the longer one).
fn short_key(bytes: &[u8; INLINE], len: Len) -> u128 {
    let mut k = [0u8; 16];
    k[..INLINE].copy_from_slice(bytes);
    k[INLINE] = len as u8;
    u128::from_be_bytes(k)
}

/// Why a name was refused, with a hint that says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} name `{input}`: {reason}")]
pub struct NameError {
    pub kind: NameKind,
    pub input: String,
    pub reason: String,
    pub hint: String,
}

/// A successfully parsed name plus whether it had to be lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub name: Name,
    pub lowercased: bool,
}

impl Name {
    /// Parse a name of `kind`. Upper case is lower-cased (reported through `Parsed::lowercased`)
    /// unless `keep_case` (users on a PreserveCaseUser site).
    pub fn parse(input: &str, kind: NameKind, keep_case: bool) -> Result<Parsed, NameError> {
        let err = |reason: &str, hint: &str| NameError {
            kind,
            input: input.to_string(),
            reason: reason.to_string(),
            hint: hint.to_string(),
        };
        if input.is_empty() {
            return Err(err("it is empty", "give a non-empty name"));
        }
        if input.len() > 64 {
            return Err(err("it is longer than 64 characters", "use a shorter name"));
        }
        // Fast path (every name sacctmgr prints): nothing to fold, no allocation.
        let needs_fold = !keep_case && input.bytes().any(|b| b.is_ascii_uppercase());
        let owned;
        let folded: &str = if needs_fold {
            owned = input.to_ascii_lowercase();
            &owned
        } else {
            input
        };
        if folded.starts_with('-') {
            return Err(err(
                "it starts with `-`, which sacctmgr reads as an option or a removal",
                "start the name with a letter or digit",
            ));
        }
        if kind == NameKind::Qos && folded.starts_with('+') {
            return Err(err(
                "it starts with `+`, which sacctmgr reads as adding to a QoS list",
                "start the name with a letter or digit",
            ));
        }
        for c in folded.chars() {
            let refused: Option<(&str, &str)> = match c {
                ',' => Some((
                    "it contains `,`: sacctmgr splits the value into a list (`co,mma` creates `co` and `mma`)",
                    "write one name per entry, without commas",
                )),
                '=' => Some((
                    "it contains `=`: sacctmgr splits key and value at the first `=`",
                    "remove the `=`; use `_` or `-` instead",
                )),
                '\'' | '"' | '`' => {
                    Some(("it contains a quote: sacctmgr turns quotes into backticks", "remove the quotes"))
                }
                '[' | ']' => Some((
                    "it contains a bracket: sacctmgr expands `x[1-2]` into `x1,x2`",
                    "remove the brackets; list each name on its own",
                )),
                '|' => Some((
                    "it contains `|`, which sacctmgr's `-P` output uses between columns, so the name could not be read back",
                    "remove the `|`",
                )),
                '\\' => Some((
                    "it contains `\\`: Slurm 24.11 matches `where name=a\\b` against `ab` (a delete there removes the wrong user)",
                    "remove the backslash",
                )),
                c if c.is_whitespace() => Some((
                    "it contains whitespace: sacctmgr's argument parsing treats it as a separator",
                    "replace spaces with `_` or `-`",
                )),
                c if c.is_control() => Some(("it contains a control character", "remove it")),
                _ => None,
            };
            if let Some((reason, hint)) = refused {
                return Err(err(reason, hint));
            }
        }
        if let Some(word) = keyword(folded) {
            return Err(err(
                &format!("sacctmgr reads it as its keyword `{word}`, not as a name"),
                "choose another name (docs/desired-format.md lists the words sacctmgr reserves)",
            ));
        }
        Ok(Parsed { lowercased: needs_fold, name: Name::new(folded) })
    }

    /// Parse with [`Name::parse`]'s checks, keeping the case as written (nothing is folded).
    pub fn keep_case(input: &str, kind: NameKind) -> Result<Name, NameError> {
        Name::parse(input, kind, true).map(|p| p.name)
    }

    /// A name as sacctmgr printed it, taken as it is: slurmdbd holds whatever its clients
    /// stored (`john@uni.ee`, `sp ace`, `ü`), and a name that is only read is never put on a
    /// command line unless the desired file names it, which [`Name::parse`] checks. Only an
    /// empty cell is refused.
    pub fn from_sacctmgr(input: &str, kind: NameKind) -> Result<Name, NameError> {
        if input.is_empty() {
            return Err(NameError {
                kind,
                input: String::new(),
                reason: "it is empty".into(),
                hint: "sacctmgr printed an empty name where one is required".into(),
            });
        }
        Ok(Name::new(input))
    }

    /// A name for `text` as it is (no validation: [`Name::parse`] validates).
    fn new(text: &str) -> Name {
        let b = text.as_bytes();
        if b.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..b.len()].copy_from_slice(b);
            Name(Repr::Short(bytes, LENS[b.len()]))
        } else {
            let mut prefix = [0u8; PREFIX];
            prefix.copy_from_slice(&b[..PREFIX]);
            Name(Repr::Long(prefix, long_names::index_of(text).to_le_bytes()))
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Always whole UTF-8: made from a `&str` of this length.
            Repr::Short(bytes, len) => std::str::from_utf8(&bytes[..*len as usize]).expect("a name is made from text"),
            Repr::Long(_, i) => long_names::text(u32::from_le_bytes(*i)),
        }
    }

    /// The name's bytes, without the UTF-8 check of [`Name::as_str`] (for writers of bytes,
    /// such as the fingerprint, that see a million names).
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Short(bytes, len) => &bytes[..*len as usize],
            Repr::Long(_, i) => long_names::text(u32::from_le_bytes(*i)).as_bytes(),
        }
    }

    /// The smallest name (empty), only as a lower bound for range queries.
    pub(crate) fn min_value() -> Name {
        Name::new("")
    }

    /// Build without validation. Only for literals known to be valid (`root`).
    pub fn from_static(s: &'static str) -> Name {
        debug_assert!(Name::keep_case(s, NameKind::Account).is_ok());
        Name::new(s)
    }
}

impl Ord for Name {
    /// Two short names compare here, inline (sorts and tree searches of a million keys spend
    /// most of their time in this); anything with a long name in `cmp_with_long`.
    #[inline]
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        match (&self.0, &other.0) {
            (Repr::Short(a, la), Repr::Short(b, lb)) => short_key(a, *la).cmp(&short_key(b, *lb)),
            _ => self.cmp_with_long(other),
        }
    }
}

impl Name {
    #[inline(never)]
    fn cmp_with_long(&self, other: &Name) -> std::cmp::Ordering {
        use std::cmp::Ordering::Equal;
        match (&self.0, &other.0) {
            (Repr::Short(a, la), Repr::Short(b, lb)) => short_key(a, *la).cmp(&short_key(b, *lb)),
            (Repr::Long(pa, a), Repr::Long(pb, b)) => match prefix_key(pa).cmp(&prefix_key(pb)) {
                Equal if a == b => Equal,
                Equal => self.as_str().cmp(other.as_str()),
                unequal => unequal,
            },
            // A short name against a long one: their first bytes, then (rarely) the texts.
            (Repr::Short(a, _), Repr::Long(p, _)) => match prefix_key(&a[..PREFIX]).cmp(&prefix_key(p)) {
                Equal => self.as_str().cmp(other.as_str()),
                unequal => unequal,
            },
            (Repr::Long(..), Repr::Short(..)) => other.cmp_with_long(self).reverse(),
        }
    }
}

impl PartialOrd for Name {
    #[inline]
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Hashed as its text, so that maps keyed by names can be searched with a `&str`: a `str`
/// hashes as its bytes and then `0xff` (`Hasher::write_str`, which stable hashers cannot
/// change), written here without making a `&str` first.
impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write(self.as_bytes());
        h.write_u8(0xff);
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Name").field(&self.as_str()).finish()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read back as written (saved plans and snapshots' manifests), like a plain string.
impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Name::new(&text))
    }
}

/// The process's table of names longer than [`INLINE`] bytes: each distinct one is stored
/// once (never freed: a run names a bounded set) under a stable index. Reading a name by its
/// index takes no lock (two atomic loads, for the chunk and the slot); adding one takes the
/// table's lock, behind a per-thread cache so that a million repeats of a name lock once.
mod long_names {
    use super::NameHash;
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    /// Chunk `k` has `FIRST << k` slots; 23 chunks hold every `u32` index.
    const FIRST: usize = 1024;
    const CHUNKS: usize = 23;

    struct Table {
        chunks: [OnceLock<Box<[OnceLock<&'static str>]>>; CHUNKS],
        index: Mutex<HashMap<&'static str, u32, NameHash>>,
    }

    static TABLE: Table =
        Table { chunks: [const { OnceLock::new() }; CHUNKS], index: Mutex::new(HashMap::with_hasher(NameHash::new())) };

    thread_local! {
        static SEEN: std::cell::RefCell<HashMap<&'static str, u32, NameHash>> = Default::default();
    }

    /// Chunk and position in it of index `i`.
    fn place(i: u32) -> (usize, usize) {
        let n = i as usize / FIRST + 1;
        let k = (usize::BITS - 1 - n.leading_zeros()) as usize;
        (k, i as usize - FIRST * ((1 << k) - 1))
    }

    fn slot(i: u32) -> &'static OnceLock<&'static str> {
        let (k, at) = place(i);
        let chunk = TABLE.chunks[k].get_or_init(|| (0..FIRST << k).map(|_| OnceLock::new()).collect());
        &chunk[at]
    }

    pub(super) fn text(i: u32) -> &'static str {
        slot(i).get().expect("a long name's index is handed out only after its text is stored")
    }

    pub(super) fn index_of(text: &str) -> u32 {
        if let Some(i) = SEEN.with(|seen| seen.borrow().get(text).copied()) {
            return i;
        }
        let (stored, i) = {
            let mut index = TABLE.index.lock().unwrap_or_else(|e| e.into_inner());
            match index.get_key_value(text) {
                Some((s, i)) => (*s, *i),
                None => {
                    let i = u32::try_from(index.len()).expect("fewer than 4 billion distinct long names");
                    let s: &'static str = Box::leak(text.into());
                    slot(i).set(s).expect("each index is handed out once");
                    index.insert(s, i);
                    (s, i)
                }
            }
        };
        SEEN.with(|seen| seen.borrow_mut().insert(stored, i));
        i
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn chunks_follow_each_other() {
            assert_eq!(super::place(0), (0, 0));
            assert_eq!(super::place(1023), (0, 1023));
            assert_eq!(super::place(1024), (1, 0));
            assert_eq!(super::place(3071), (1, 2047));
            assert_eq!(super::place(3072), (2, 0));
            assert_eq!(super::place(u32::MAX).0, super::CHUNKS - 1);
        }
    }
}

/// The hash of maps keyed by names: eight bytes at a time (a rotate, an exclusive or and a
/// multiply per word) and a final mix. A plan hashes millions of names, and SipHash's
/// resistance to flooding buys nothing here (the input is the admin's own file and sacctmgr's
/// output).
pub type NameHash = std::hash::BuildHasherDefault<NameHasher>;

#[doc(hidden)]
#[derive(Default)]
pub struct NameHasher(u64);

impl NameHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl std::hash::Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("chunks of eight bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    fn finish(&self) -> u64 {
        // SplitMix64's finaliser: every input bit reaches the low bits that pick a bucket.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The words sacctmgr's argument parsers read as keywords when they stand alone (no `=`), with
/// the shortest prefix each accepts: sacctmgr matches `strncasecmp(arg, "Where",
/// MAX(strlen(arg), 5))`, so any case of `where`, and of `withas`..`withassoc`, is the keyword.
/// Taken from src/sacctmgr/{account,user,qos,cluster,association,file}_functions.c of Slurm
/// 22.05.8 and 24.11.5 (the same list in both) and probed on both (docs/desired-format.md).
/// `add qos where` adds nothing: sacctmgr skips the word and finds no name.
pub const SACCTMGR_KEYWORDS: [(&str, usize); 14] = [
    ("clean", 3),
    ("onlydefaults", 2),
    ("set", 3),
    ("tree", 4),
    ("where", 5),
    ("withassoc", 5),
    ("withcoordinators", 5),
    ("withdeleted", 5),
    ("withfed", 5),
    ("withrawqoslevel", 5),
    ("withsubaccounts", 5),
    ("wolimits", 3),
    ("wopinfo", 4),
    ("woplimits", 4),
];

/// The keyword of [`SACCTMGR_KEYWORDS`] that sacctmgr would read `word` as, in any case.
pub fn keyword(word: &str) -> Option<&'static str> {
    SACCTMGR_KEYWORDS.iter().find_map(|&(k, min)| {
        (word.len() >= min && word.len() <= k.len() && k.as_bytes()[..word.len()].eq_ignore_ascii_case(word.as_bytes()))
            .then_some(k)
    })
}

/// The root account every Slurm cluster has; never deleted.
pub fn root() -> Name {
    Name::from_static("root")
}

/// The most bytes slurmdbd stores of a free-text value: Description and Organization of an
/// account and Description of a QoS are MySQL `text` columns (65,535 bytes) in `acct_table` and
/// `qos_table` on 22.05 and 24.11, and slurmdbd's session runs without strict mode, so a longer
/// value is cut there without an error (`add account` and `load` alike, exit 0; probed on 22.05.8
/// and 24.11.5, docs/desired-format.md). One argv word holds at most 131,071 bytes on Linux
/// (`MAX_ARG_STRLEN`), so `description=` and a value of this size still fit.
pub const MAX_FREE_TEXT_BYTES: usize = 65_535;

/// Check a free-text value (Description, Organization) the way sacctmgr will store it:
/// lower-cased, no quotes (sacctmgr turns them into backticks), no control characters, and at
/// most [`MAX_FREE_TEXT_BYTES`] once lower-cased.
pub fn free_text(input: &str) -> Result<String, String> {
    // Checked first, on the input's length, so that a huge value costs no more work.
    if input.len() > 4 * MAX_FREE_TEXT_BYTES {
        return Err(too_long(input.len()));
    }
    if input.chars().any(|c| c.is_control()) {
        return Err("it contains a control character (newline, tab, ...)".into());
    }
    if input.contains(['\'', '"', '`']) {
        return Err("it contains a quote: sacctmgr turns quotes into backticks".into());
    }
    if input.trim() != input {
        return Err("it has leading or trailing whitespace".into());
    }
    if input.is_empty() {
        return Err("it is empty".into());
    }
    let lower = input.to_lowercase();
    if lower.len() > MAX_FREE_TEXT_BYTES {
        return Err(too_long(lower.len()));
    }
    Ok(lower)
}

fn too_long(len: usize) -> String {
    format!(
        "it is {len} bytes long; slurmdbd stores at most {MAX_FREE_TEXT_BYTES} bytes (a `text` column) and cuts the rest without an error"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_cases_and_reports_it() {
        let p = Name::parse("Hpc_A.b-1", NameKind::Account, false).unwrap();
        assert_eq!(p.name.as_str(), "hpc_a.b-1");
        assert!(p.lowercased);
        let p = Name::parse("BobUpper", NameKind::User, true).unwrap();
        assert_eq!(p.name.as_str(), "BobUpper");
        assert!(!p.lowercased);
    }

    /// sacctmgr reads these as words of its own (`add qos where` adds nothing), in any case and
    /// down to the prefix its matching accepts; for every kind of name.
    #[test]
    fn refuses_sacctmgr_keywords_and_their_prefixes() {
        let kinds = [NameKind::Account, NameKind::User, NameKind::Qos, NameKind::Cluster, NameKind::Partition];
        for bad in [
            "where",
            "WHERE",
            "Where",
            "set",
            "SeT",
            "withassoc",
            "withas",
            "withA",
            "WOPL",
            "woplimit",
            "on",
            "onlyd",
            "tree",
            "cle",
            "clean",
            "wol",
            "wopi",
            "withsubaccounts",
            "withfed",
            "withdeleted",
            "withrawqoslevel",
            "withcoord",
        ] {
            for kind in kinds {
                for keep in [false, true] {
                    let e = Name::parse(bad, kind, keep).unwrap_err();
                    assert!(e.reason.contains("keyword"), "{bad}: {e}");
                }
            }
        }
        for good in [
            "wher",
            "wheres",
            "se",
            "sets",
            "with",
            "wo",
            "o",
            "tre",
            "trees",
            "cl",
            "cleaner",
            "withassocs",
            "setup",
            "onboard",
        ] {
            assert!(Name::parse(good, NameKind::Qos, false).is_ok(), "{good}");
        }
    }

    #[test]
    fn refuses_what_sacctmgr_would_mangle() {
        for bad in ["co,mma", "k=v", "a b", "a\tb", "a'q", "a\"q", "a`q", "x[1-2]", "-x", "", "a|b", "a\\b", "a\u{7}b"]
        {
            let e = Name::parse(bad, NameKind::Account, false).unwrap_err();
            assert!(!e.hint.is_empty(), "{bad}");
        }
        assert!(Name::parse("+hi", NameKind::Qos, false).is_err());
    }

    /// What real 22.05 and 24.11 keep exactly through add, `-P` output, modify and delete
    /// (docs/decisions.md); tests/e2e_real.rs `odd_names_round_trip` checks them on real beds.
    #[test]
    fn admits_what_sacctmgr_keeps() {
        for good in ["john@uni.ee", "a+b", "x:y", "ü", "semi;colon", "t~i!l#d$e%^&*(){}/?<>"] {
            let p = Name::parse(good, NameKind::User, false).unwrap();
            assert_eq!(p.name.as_str(), good);
        }
        assert_eq!(Name::from_sacctmgr("sp ace", NameKind::User).unwrap().as_str(), "sp ace");
        assert!(Name::from_sacctmgr("", NameKind::User).is_err());
    }

    #[test]
    fn free_text_is_bounded_by_what_slurmdbd_stores() {
        let at = "d".repeat(MAX_FREE_TEXT_BYTES);
        assert_eq!(free_text(&at).unwrap(), at);
        for len in [MAX_FREE_TEXT_BYTES + 1, 200 << 10, 10 << 20] {
            let e = free_text(&"d".repeat(len)).unwrap_err();
            assert!(e.contains(&format!("it is {len} bytes long")) && e.contains("at most 65535 bytes"), "{e}");
        }
        // the bound is on the stored (lower-cased) bytes: `İ` (2 bytes) lower-cases to 3
        let e = free_text(&"İ".repeat(30_000)).unwrap_err();
        assert!(e.contains("it is 90000 bytes long"), "{e}");
    }

    #[test]
    fn free_text_is_lowercased() {
        assert_eq!(free_text("Physics Dept").unwrap(), "physics dept");
        assert!(free_text("it's").is_err());
    }

    fn hash_of<T: std::hash::Hash + ?Sized>(t: &T) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(t)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Short (inline) and long (table) names, mixed: order, equality and hash are the text's,
        /// and the text comes back unchanged (also through serde).
        #[test]
        fn names_behave_like_their_text(a in "[a-zA-Z0-9_.-]{0,40}", b in "[a-zA-Z0-9_.-]{0,40}", cut in 0usize..40) {
            // Often a prefix of the other or sharing its start, so that equal starts and lengths
            // near 15 are common.
            let start = &a[..cut.min(a.len())];
            let b = match cut % 3 { 0 => start.to_string(), 1 => format!("{start}{b}"), _ => b };
            let (na, nb) = (Name::new(&a), Name::new(&b));
            proptest::prop_assert_eq!(na.as_str(), a.as_str());
            proptest::prop_assert_eq!(nb.as_str(), b.as_str());
            proptest::prop_assert_eq!(na.cmp(&nb), a.cmp(&b));
            proptest::prop_assert_eq!(na == nb, a == b);
            proptest::prop_assert_eq!(hash_of(&na), hash_of(a.as_str()));
            let fnv = |t: &dyn Fn(&mut NameHasher)| { let mut h = NameHasher::default(); t(&mut h); std::hash::Hasher::finish(&h) };
            proptest::prop_assert_eq!(fnv(&|h| std::hash::Hash::hash(&na, h)), fnv(&|h| std::hash::Hash::hash(a.as_str(), h)));
            let back: Name = serde_json::from_str(&serde_json::to_string(&na).unwrap()).unwrap();
            proptest::prop_assert!(back == na);
        }
    }

    #[test]
    fn long_names_made_on_other_threads_are_the_same_names() {
        let text = "hpc_a_genome-assembly-2026-long";
        let here = Name::new(text);
        let there: Vec<Name> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2).map(|_| s.spawn(|| Name::new(text))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for n in there {
            assert!(matches!((&n.0, &here.0), (Repr::Long(_, a), Repr::Long(_, b)) if a == b));
            assert_eq!(n, here);
            assert_eq!(n.as_str(), text);
        }
        assert!(matches!(Name::new("fifteen_bytes_x").0, Repr::Short(..)));
        assert!(matches!(Name::new("sixteen_bytes_xy").0, Repr::Long(..)));
        assert_eq!(format!("{:?}", Name::new("bob")), "Name(\"bob\")");
    }
}
