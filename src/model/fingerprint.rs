//! Fingerprint: a SHA-256 over a canonical rendering of a normalised [`State`].
//!
//! Two states that compare equal have the same fingerprint whatever order they were read in;
//! `apply` uses it to refuse a plan computed from a state that has changed since. No I/O.

use sha2::{Digest, Sha256};
use std::io::Write;

use super::state::{Assoc, State, UserKey};

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
    // serde_json of BTreeMap-backed data is deterministic; errors cannot happen on a Vec writer.
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

/// A user key as serde_json writes it (`{"account":"a","user":"u","partition":"p"}`, no
/// partition when unset). Names never need JSON escapes ([`crate::model::Name`] refuses
/// quotes, backslashes and control characters); serde_json writes any other key.
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
        let n = |s: &str| Name::strict(s, NameKind::User).unwrap();
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
