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
            let states = [current.clusters.get(cname), desired.clusters.get(cname)];
            for c in states.into_iter().flatten() {
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
                }
            }
            // Users come once per association and (mostly) twice, once per state: each
            // account's users are in order in both states, so a merge of the two keeps each
            // user once per account; the rest is one sort of plain 16-byte names.
            let capacity = states.iter().flatten().map(|c| c.users.len()).max().unwrap_or(0);
            let mut users: Vec<Name> = Vec::with_capacity(capacity);
            for a in accts {
                let mut cur = states[0].into_iter().flat_map(|c| c.users_of_account(a)).peekable();
                let mut des = states[1].into_iter().flat_map(|c| c.users_of_account(a)).peekable();
                let start = users.len();
                loop {
                    let next = match (cur.peek(), des.peek()) {
                        (Some((k, _)), Some((d, _))) if d.user < k.user => des.next(),
                        (Some(_), _) => cur.next(),
                        (None, _) => des.next(),
                    };
                    let Some((key, assoc)) = next else { break };
                    if users.len() == start || users[users.len() - 1] != key.user {
                        users.push(key.user.clone());
                    }
                    if *assoc != Assoc::default() {
                        scope.qos.extend(assoc.qos_names().cloned());
                    }
                }
            }
            users.sort_unstable();
            users.dedup();
            sc.users = users.into_iter().collect();
            scope.clusters.insert(cname.clone(), sc);
        }
        scope
    }
}

/// `sha256:<hex>` of the part of `state` in `scope`. An object of the scope that `state` does
/// not have is written as absent, so adding it is a change too.
pub fn scoped_fingerprint(state: &State, scope: &Scope) -> String {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, HashWriter(Sha256::new()));
    // Version 2: each user association once (version 1 wrote the scope users' rows twice).
    let _ = w.write_all(b"scoped 2\n");
    let empty_json = serde_json::to_string(&Assoc::default()).unwrap_or_default();
    // Every scope account once, in name order (one cluster, the usual case, is that list).
    let union: BTreeSet<&Name>;
    let accounts: Box<dyn Iterator<Item = &Name>> = match scope.clusters.values().next() {
        Some(only) if scope.clusters.len() == 1 => Box::new(only.accounts.iter()),
        _ => {
            union = scope.clusters.values().flat_map(|c| &c.accounts).collect();
            Box::new(union.iter().copied())
        }
    };
    for name in accounts {
        let _ = w.write_all(b"R [");
        write_str(&mut w, name);
        let _ = w.write_all(b",");
        let _ = serde_json::to_writer(&mut w, &state.accounts.get(name));
        let _ = w.write_all(b"]\n");
    }
    for name in &scope.qos {
        let _ = w.write_all(b"Q [");
        write_str(&mut w, name);
        let _ = w.write_all(b",");
        let _ = serde_json::to_writer(&mut w, &state.qos.get(name));
        let _ = w.write_all(b"]\n");
    }
    for (cname, sc) in &scope.clusters {
        let _ = w.write_all(b"C ");
        write_str(&mut w, cname);
        let Some(c) = state.clusters.get(cname) else {
            let _ = w.write_all(b" absent\n");
            continue;
        };
        let _ = w.write_all(b"\n");
        // rows written under the scope accounts: when that is every row, no user has one
        // outside them
        let mut under = 0usize;
        for name in &sc.accounts {
            // `[name,[parent,assoc]]`, or `[name,null]` for an account the state lacks.
            let _ = w.write_all(b"A [");
            write_str(&mut w, name);
            match c.accounts.get(name.as_str()) {
                Some(node) => {
                    let _ = w.write_all(b",[");
                    match c.accounts.parent(name.as_str()) {
                        Some(parent) => write_str(&mut w, parent),
                        None => {
                            let _ = w.write_all(b"null");
                        }
                    }
                    let _ = w.write_all(b",");
                    write_assoc(&mut w, &node.assoc, &empty_json);
                    let _ = w.write_all(b"]]\n");
                }
                None => {
                    let _ = w.write_all(b",null]\n");
                }
            }
            // Who is under it: a user added there is a change the plan would act on.
            for (key, assoc) in c.users_of_account(name) {
                let _ = w.write_all(b"M ");
                write_pair(&mut w, key, assoc, &empty_json);
                under += 1;
            }
        }
        if sc.users.is_empty() {
            continue;
        }
        // The scope users' other rows: those under an account outside the scope (the rows under
        // a scope account were written with it, above). Rows come grouped by account. None
        // when every row was under a scope account (a cluster wholly managed): the set of
        // the scope's users, 34 ms for 200,000 users, and the walk of every row are then
        // saved.
        if c.users.len() > under {
            let users: HashSet<Name, NameHash> = sc.users.iter().cloned().collect();
            let mut account: Option<(&Name, bool)> = None;
            for (key, assoc) in &c.users {
                let under_scope = match account {
                    Some((a, inside)) if *a == key.account => inside,
                    _ => {
                        let inside = sc.accounts.contains(&key.account);
                        account = Some((&key.account, inside));
                        inside
                    }
                };
                if !under_scope && users.contains(&key.user) {
                    let _ = w.write_all(b"U ");
                    write_pair(&mut w, key, assoc, &empty_json);
                }
            }
        }
        // `[user,account]`, or `[user,null]` for a user without a DefaultAccount here: the
        // scope's users beside the state's DefaultAccounts, both in name order.
        let mut defaults = c.defaults.iter().peekable();
        for user in &sc.users {
            while defaults.next_if(|(u, _)| *u < user).is_some() {}
            let _ = w.write_all(b"D [");
            write_str(&mut w, user);
            match defaults.next_if(|(u, _)| *u == user) {
                Some((_, acct)) => {
                    let _ = w.write_all(b",");
                    write_str(&mut w, acct);
                    let _ = w.write_all(b"]\n");
                }
                None => {
                    let _ = w.write_all(b",null]\n");
                }
            }
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
    write_assoc(w, assoc, empty_json);
    let _ = w.write_all(b"]\n");
}

/// An association as serde_json writes it, the shared empty one (`empty_json`) directly.
fn write_assoc(w: &mut impl Write, assoc: &Assoc, empty_json: &str) {
    if *assoc == Assoc::default() {
        let _ = w.write_all(empty_json.as_bytes());
    } else {
        let _ = serde_json::to_writer(&mut *w, assoc);
    }
}

/// A name as a JSON string, as serde_json writes it: a plain name directly, one that needs
/// an escape through serde_json.
fn write_str(w: &mut impl Write, name: &Name) {
    if plain(name.as_bytes()) {
        for part in [b"\"", name.as_bytes(), b"\""] {
            let _ = w.write_all(part);
        }
    } else {
        let _ = serde_json::to_writer(w, name);
    }
}

/// Whether serde_json writes `text` in a JSON string as it is (no escape).
fn plain(text: &[u8]) -> bool {
    text.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\')
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
    use crate::state::{AccountGraph, AccountRecord, AssocData, ClusterState};
    use crate::{Name, NameKind, QosList};

    /// The scoped fingerprint's canonical bytes written the plain way, through serde_json for
    /// every row: the value plan files carry must not move when the writer gets faster.
    fn reference_scoped(state: &State, scope: &Scope) -> String {
        let mut w = std::io::BufWriter::new(HashWriter(Sha256::new()));
        let _ = writeln!(w, "scoped 2");
        let accounts: BTreeSet<&Name> = scope.clusters.values().flat_map(|c| &c.accounts).collect();
        for name in accounts {
            let _ = writeln!(w, "R {}", serde_json::to_string(&(name, state.accounts.get(name))).unwrap());
        }
        for name in &scope.qos {
            let _ = writeln!(w, "Q {}", serde_json::to_string(&(name, state.qos.get(name))).unwrap());
        }
        for (cname, sc) in &scope.clusters {
            let _ = write!(w, "C {}", serde_json::to_string(cname).unwrap());
            let Some(c) = state.clusters.get(cname) else {
                let _ = writeln!(w, " absent");
                continue;
            };
            let _ = writeln!(w);
            for name in &sc.accounts {
                let node = c.accounts.get(name.as_str()).map(|n| (c.accounts.parent(name.as_str()), &n.assoc));
                let _ = writeln!(w, "A {}", serde_json::to_string(&(name, node)).unwrap());
                for pair in c.users_of_account(name) {
                    let _ = writeln!(w, "M {}", serde_json::to_string(&pair).unwrap());
                }
            }
            if sc.users.is_empty() {
                continue;
            }
            let other_rows = c.users.iter().filter(|(k, _)| !sc.accounts.contains(&k.account));
            for pair in other_rows.filter(|(k, _)| sc.users.contains(&k.user)) {
                let _ = writeln!(w, "U {}", serde_json::to_string(&pair).unwrap());
            }
            for user in &sc.users {
                let _ = writeln!(w, "D {}", serde_json::to_string(&(user, c.defaults.get(user))).unwrap());
            }
        }
        finish(w)
    }

    #[test]
    fn scoped_fingerprint_writes_the_bytes_serde_json_writes() {
        let n = |s: &str| Name::from_sacctmgr(s, NameKind::User).unwrap();
        let limited: Assoc = AssocData {
            qos: QosList::Set([n("normal"), n("q\"x")].into()),
            default_qos: Some(n("normal")),
            ..Default::default()
        }
        .into();
        let mut current = State::default();
        let accounts = AccountGraph::build([
            (n("root"), None, Assoc::default()),
            (n("phys"), Some(n("root")), limited.clone()),
            (n("tab\there"), Some(n("phys")), Assoc::default()),
            (n("other"), Some(n("root")), Assoc::default()),
        ])
        .unwrap();
        let mut c = ClusterState { accounts, ..Default::default() };
        for (acct, user, part, assoc) in [
            ("phys", "alice", None, Assoc::default()),
            ("phys", "bob", Some("gpu"), limited.clone()),
            ("phys", "bob", None, Assoc::default()),
            ("tab\there", "a\\b", None, Assoc::default()),
            ("tab\there", "carol", None, limited.clone()),
            ("other", "alice", None, Assoc::default()),
            ("other", "dave", None, Assoc::default()),
        ] {
            c.users.insert(UserKey { account: n(acct), user: n(user), partition: part.map(n) }, assoc);
        }
        c.defaults.insert(n("alice"), n("phys"));
        c.defaults.insert(n("a\\b"), n("tab\there"));
        c.defaults.insert(n("dave"), n("other"));
        current.clusters.insert(n("big"), c);
        current
            .accounts
            .insert(n("phys"), AccountRecord { description: Some("say \"hi\"".into()), ..Default::default() });
        current.accounts.insert(n("tab\there"), AccountRecord::default());
        current.qos.insert(n("normal"), Default::default());
        let mut desired = current.clone();
        let d = desired.clusters.get_mut("big").unwrap();
        d.users.insert(UserKey { account: n("phys"), user: n("erin"), partition: None }, Assoc::default());
        d.accounts.insert(n("newacct"), "phys", Assoc::default()).unwrap();
        let managed: BTreeMap<Name, BTreeSet<Name>> =
            [(n("big"), [n("phys"), n("tab\there"), n("newacct")].into()), (n("gone"), [n("x")].into())].into();
        let scope = Scope::of(&current, &desired, &managed);
        assert!(scope.clusters["big"].users.contains("erin") && scope.qos.contains("q\"x"));
        assert!(!scope.clusters["big"].users.contains("dave"));
        for state in [&current, &desired, &State::default()] {
            assert_eq!(scoped_fingerprint(state, &scope), reference_scoped(state, &scope));
        }
        // a scope user's row under an account outside the scope is covered; another user's not
        let changed = |user: &str| {
            let mut s = current.clone();
            let key = UserKey { account: n("other"), user: n(user), partition: None };
            s.clusters.get_mut("big").unwrap().users.insert(key, limited.clone());
            scoped_fingerprint(&s, &scope) != scoped_fingerprint(&current, &scope)
        };
        assert!(changed("alice") && !changed("dave"));
        // every row under a scope account: nothing is looked for outside them
        let mut all_in_scope = current.clone();
        all_in_scope.clusters.get_mut("big").unwrap().users.retain(|k, _| k.account.as_str() != "other");
        assert_eq!(scoped_fingerprint(&all_in_scope, &scope), reference_scoped(&all_in_scope, &scope));
    }

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
