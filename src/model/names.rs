//! Validated names (accounts, users, QoS, clusters, partitions, TRES).
//!
//! Every name that can reach a sacctmgr argv passes through [`Name::parse`]; sacctmgr itself
//! splits on commas, expands `x[1-2]`, turns quotes into backticks and lower-cases, so anything
//! outside `[a-z0-9_.-]` (first character not `-`) is refused here. This module does no I/O.

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

/// A name as sacctmgr stores it: lower-cased (users may keep case with PreserveCaseUser) and
/// made only of `[a-z0-9_.-]`. Shared (`Arc<str>`): a million associations repeat the same
/// user and account names, and states are cloned while planning; clones must be cheap.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Name(std::sync::Arc<str>);

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
        for c in folded.chars() {
            let ok = c.is_ascii_lowercase()
                || c.is_ascii_digit()
                || matches!(c, '_' | '.' | '-')
                || (keep_case && c.is_ascii_uppercase());
            if ok {
                continue;
            }
            let (reason, hint) = match c {
                ',' => (
                    "it contains `,`: sacctmgr splits the value into a list (`co,mma` creates `co` and `mma`)",
                    "write one name per entry, without commas",
                ),
                '=' => (
                    "it contains `=`: sacctmgr splits key and value at the first `=`",
                    "remove the `=`; use `_` or `-` instead",
                ),
                ' ' | '\t' | '\n' | '\r' => ("it contains whitespace", "replace spaces with `_` or `-`"),
                '\'' | '"' | '`' => ("it contains a quote: sacctmgr turns quotes into backticks", "remove the quotes"),
                '[' | ']' => (
                    "it contains a bracket: sacctmgr expands `x[1-2]` into `x1,x2`",
                    "remove the brackets; list each name on its own",
                ),
                _ => (
                    "it contains a character outside `[a-z0-9_.-]`",
                    "use only lower-case letters, digits, `_`, `.` and `-`",
                ),
            };
            return Err(err(reason, hint));
        }
        Ok(Parsed { lowercased: needs_fold, name: Name(intern(folded)) })
    }

    /// Parse and insist there was nothing to fold (used where input comes from sacctmgr itself).
    pub fn strict(input: &str, kind: NameKind) -> Result<Name, NameError> {
        Name::parse(input, kind, true).map(|p| p.name)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `==`, answered without comparing the text when both are the same shared name (names
    /// parsed on one thread are shared: see the name table below).
    pub fn same(&self, other: &Name) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }

    /// The smallest name (empty), only as a lower bound for range queries.
    pub(crate) fn min_value() -> Name {
        // Shared: range queries ask for it once per account (fifty thousand times in a large plan).
        static EMPTY: std::sync::LazyLock<Name> = std::sync::LazyLock::new(|| Name(std::sync::Arc::from("")));
        EMPTY.clone()
    }

    /// Build without validation. Only for literals known to be valid (`root`).
    pub fn from_static(s: &'static str) -> Name {
        debug_assert!(Name::strict(s, NameKind::Account).is_ok());
        Name(std::sync::Arc::from(s))
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

thread_local! {
    /// Every distinct name parsed on this thread, shared: a million associations name ~250k
    /// distinct users and accounts, so storing each once keeps states small and clones cheap.
    static NAMES: std::cell::RefCell<std::collections::HashSet<std::sync::Arc<str>, Fnv>> = Default::default();
}

/// FNV-1a, for hash maps keyed by names: a large plan hashes a few million short names, where
/// SipHash's flooding resistance buys nothing (the input is the admin's own file and
/// sacctmgr's output).
pub type Fnv = std::hash::BuildHasherDefault<FnvHasher>;

#[doc(hidden)]
pub struct FnvHasher(u64);

impl Default for FnvHasher {
    fn default() -> FnvHasher {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Make room in this thread's name table for `n` more names before parsing a large input:
/// growing it step by step re-hashes every name stored so far at each step (~3% of a plan
/// at a million associations).
pub fn reserve_names(n: usize) {
    NAMES.with(|set| set.borrow_mut().reserve(n));
}

fn intern(s: &str) -> std::sync::Arc<str> {
    NAMES.with(|set| {
        let mut set = set.borrow_mut();
        if let Some(a) = set.get(s) {
            return a.clone();
        }
        let a: std::sync::Arc<str> = std::sync::Arc::from(s);
        set.insert(a.clone());
        a
    })
}

/// The root account every Slurm cluster has; never deleted.
pub fn root() -> Name {
    Name::from_static("root")
}

/// Check a free-text value (Description, Organization) the way sacctmgr will store it:
/// lower-cased, no quotes (sacctmgr turns them into backticks), no control characters.
pub fn free_text(input: &str) -> Result<String, String> {
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
    Ok(input.to_lowercase())
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

    #[test]
    fn refuses_what_sacctmgr_would_mangle() {
        for bad in ["co,mma", "k=v", "a b", "a'q", "x[1-2]", "-x", "", "semi;colon", "é"] {
            let e = Name::parse(bad, NameKind::Account, false).unwrap_err();
            assert!(!e.hint.is_empty(), "{bad}");
        }
    }

    #[test]
    fn free_text_is_lowercased() {
        assert_eq!(free_text("Physics Dept").unwrap(), "physics dept");
        assert!(free_text("it's").is_err());
    }
}
