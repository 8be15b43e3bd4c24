//! Fingerprint: a SHA-256 over a canonical rendering of a normalised [`State`], whole
//! ([`fingerprint`]) or only the part a plan depends on ([`scoped_fingerprint`] over a
//! [`Scope`]).
//!
//! Two states that compare equal have the same fingerprint whatever order they were read in;
//! `apply` uses it to refuse a plan computed from a state that has changed since. No I/O.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write;

use super::names::{Name, NameHash};
use super::state::{Assoc, State, UserKey};

/// What a plan depends on: a change outside it leaves the plan valid.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// QoS objects the plan names.
    pub qos: BTreeSet<Name>,
    /// Per cluster, what the plan touches or checks there.
    pub clusters: BTreeMap<Name, ClusterScope>,
}

/// The part of one cluster a plan depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterScope {
    /// Managed accounts and every account above them (their limits and QoS are inherited):
    /// each one's association, parent, account record and user associations.
    pub accounts: BTreeSet<Name>,
    /// Users whose associations or DefaultAccount the plan touches or checks: all of their
    /// associations on the cluster, and their DefaultAccount there.
    pub users: BTreeSet<Name>,
}

impl Scope {
    /// What a plan from `current` to `desired` depends on, `managed` being the managed
    /// accounts per cluster: those accounts and every account above them (in either state),
    /// the users with an association under one of them (in either state), and the QoS that
    /// the desired file declares or that any of those associations names.
    pub fn of(current: &State, desired: &State, managed: &BTreeMap<Name, BTreeSet<Name>>) -> Scope {
        let mut scope = Scope { qos: desired.qos.keys().cloned().collect(), clusters: BTreeMap::new() };
        for (cname, accts) in managed {
            let mut sc = ClusterScope::default();
            // Users come once per association: gathered, sorted and made a set in one go.
            let mut users: Vec<&Name> = Vec::new();
            for state in [current, desired] {
                let Some(c) = state.clusters.get(cname) else { continue };
                for a in accts {
                    let mut at = Some(a);
                    while let Some(name) = at {
                        if !sc.accounts.insert(name.clone()) && name != a {
                            break;
                        }
                        if let Some(node) = c.accounts.get(name.as_str()) {
                            scope.qos.extend(node.assoc.qos_names().cloned());
                        }
                        at = c.accounts.parent(name.as_str());
                    }
                    for (key, assoc) in c.users_of_account(a) {
                        users.push(&key.user);
                        if *assoc != Assoc::default() {
                            scope.qos.extend(assoc.qos_names().cloned());
                        }
                    }
                }
            }
            users.sort_unstable();
            users.dedup();
            sc.users = users.into_iter().cloned().collect();
            scope.clusters.insert(cname.clone(), sc);
        }
        scope
    }
}

/// `sha256:<hex>` of the part of `state` in `scope`. An object of the scope that `state` does
/// not have is written as absent, so adding it is a change too.
pub fn scoped_fingerprint(state: &State, scope: &Scope) -> String {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, HashWriter(Sha256::new()));
    let _ = writeln!(w, "scoped");
    let empty_json = serde_json::to_string(&Assoc::default()).unwrap_or_default();
    let accounts: BTreeSet<&Name> = scope.clusters.values().flat_map(|c| &c.accounts).collect();
    for name in accounts {
        let _ = write!(w, "R ");
        let _ = serde_json::to_writer(&mut w, &(name, state.accounts.get(name)));
        let _ = writeln!(w);
    }
    for name in &scope.qos {
        let _ = write!(w, "Q ");
        let _ = serde_json::to_writer(&mut w, &(name, state.qos.get(name)));
        let _ = writeln!(w);
    }
    for (cname, sc) in &scope.clusters {
        let _ = write!(w, "C ");
        let _ = serde_json::to_writer(&mut w, cname);
        let Some(c) = state.clusters.get(cname) else {
            let _ = writeln!(w, " absent");
            continue;
        };
        let _ = writeln!(w);
        for name in &sc.accounts {
            let _ = write!(w, "A ");
            let node = c.accounts.get(name.as_str()).map(|n| (c.accounts.parent(name.as_str()), &n.assoc));
            let _ = serde_json::to_writer(&mut w, &(name, node));
            let _ = writeln!(w);
            // Who is under it: a user added there is a change the plan would act on.
            for (key, assoc) in c.users_of_account(name) {
                let _ = w.write_all(b"M ");
                write_pair(&mut w, key, assoc, &empty_json);
            }
        }
        if sc.users.is_empty() {
            continue;
        }
        let users: HashSet<&Name, NameHash> = sc.users.iter().collect();
        for (key, assoc) in c.users.iter().filter(|(k, _)| users.contains(&k.user)) {
            let _ = w.write_all(b"U ");
            write_pair(&mut w, key, assoc, &empty_json);
        }
        for user in &sc.users {
            let _ = write!(w, "D ");
            let _ = serde_json::to_writer(&mut w, &(user, c.defaults.get(user)));
            let _ = writeln!(w);
        }
    }
    finish(w)
}

fn finish(w: std::io::BufWriter<HashWriter>) -> String {
    let digest = match w.into_inner() {
        Ok(h) => h.0.finalize(),
        Err(_) => unreachable!("hashing cannot fail"),
    };
    let mut hex = String::with_capacity(64 + 7);
    hex.push_str("sha256:");
    for b in digest.iter() {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

struct HashWriter(Sha256);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `sha256:<hex>` of the canonical form of `state`.
pub fn fingerprint(state: &State) -> String {
    // Buffered: serde_json writes many tiny pieces.
    let mut w = std::io::BufWriter::with_capacity(1 << 16, HashWriter(Sha256::new()));
    // serde_json of BTreeMap-backed data is deterministic; writes cannot fail: the buffer's
    // writer is the hasher (`HashWriter`), which takes every byte.
    for (name, rec) in &state.accounts {
        let _ = writeln!(w, "R {name}");
        let _ = serde_json::to_writer(&mut w, rec);
        let _ = writeln!(w);
    }
    for (name, q) in &state.qos {
        let _ = writeln!(w, "Q {name}");
        let _ = serde_json::to_writer(&mut w, q);
        let _ = writeln!(w);
    }
    for (cname, c) in &state.clusters {
        let _ = writeln!(w, "C {cname}");
        for (name, parent, assoc) in c.accounts.iter_sorted() {
            let _ = writeln!(w, "A {name} {}", parent.map(|p| p.as_str()).unwrap_or("-"));
            let _ = serde_json::to_writer(&mut w, assoc);
            let _ = writeln!(w);
        }
        // The same bytes as serde_json writes, without it for the common case: a million keys
        // of plain names, nearly all with the one shared empty association. Written as bytes
        // (no formatting machinery, no UTF-8 checks of names).
        let empty = Assoc::default();
        let empty_json = serde_json::to_string(&empty).unwrap_or_default();
        for (key, assoc) in &c.users {
            let _ = w.write_all(b"U ");
            write_key(&mut w, key);
            if *assoc == empty {
                let _ = w.write_all(empty_json.as_bytes());
            } else {
                let _ = serde_json::to_writer(&mut w, assoc);
            }
            let _ = w.write_all(b"\n");
        }
        for (user, acct) in &c.defaults {
            for part in [b"D ", user.as_bytes(), b" ", acct.as_bytes(), b"\n"] {
                let _ = w.write_all(part);
            }
        }
        // Which default rows carry slurmdbd's mark decides what a removal may do.
        for key in &c.unmarked {
            let _ = w.write_all(b"N ");
            write_key(&mut w, key);
            let _ = w.write_all(b"\n");
        }
    }
    finish(w)
}

/// A user key as serde_json writes it (`{"account":"a","user":"u","partition":"p"}`, no
/// partition when unset). Plain names are written directly; serde_json writes a key with a
/// name that needs a JSON escape (names read from slurmdbd may hold `\\` or a tab).
fn write_key(w: &mut impl Write, key: &UserKey) {
    let plain = |n: &[u8]| n.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\');
    let names = [Some(&key.account), Some(&key.user), key.partition.as_ref()];
    if !names.iter().flatten().all(|n| plain(n.as_bytes())) {
        let _ = serde_json::to_writer(w, key);
        return;
    }
    for part in [b"{\"account\":\"", key.account.as_bytes(), b"\",\"user\":\"", key.user.as_bytes(), b"\""] {
        let _ = w.write_all(part);
    }
    if let Some(p) = &key.partition {
        for part in [b",\"partition\":\"", p.as_bytes(), b"\""] {
            let _ = w.write_all(part);
        }
    }
    let _ = w.write_all(b"}");
}

/// `[key,assoc]` and a newline, the bytes serde_json writes for the pair, with the shared
/// empty association (`empty_json`, nearly every user association) and plain keys written
/// directly.
fn write_pair(w: &mut impl Write, key: &UserKey, assoc: &Assoc, empty_json: &str) {
    let _ = w.write_all(b"[");
    write_key(w, key);
    let _ = w.write_all(b",");
    if *assoc == Assoc::default() {
        let _ = w.write_all(empty_json.as_bytes());
    } else {
        let _ = serde_json::to_writer(&mut *w, assoc);
    }
    let _ = w.write_all(b"]\n");
}

/// `sha256:<hex>` of raw bytes (the desired file, a plan body).
pub fn hash_bytes(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::from("sha256:");
    for b in digest.iter() {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Name, NameKind};

    #[test]
    fn user_keys_are_written_as_serde_json_writes_them() {
        let n = |s: &str| Name::keep_case(s, NameKind::User).unwrap();
        for key in [
            UserKey { account: n("phys"), user: n("u1.x-y"), partition: None },
            UserKey { account: n("a_b"), user: n("Alice"), partition: Some(n("gpu")) },
        ] {
            let mut mine = Vec::new();
            write_key(&mut mine, &key);
            assert_eq!(String::from_utf8(mine).unwrap(), serde_json::to_string(&key).unwrap());
        }
    }
}
