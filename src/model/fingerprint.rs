//! Fingerprint: a SHA-256 over a canonical rendering of a normalised [`State`].
//!
//! Two states that compare equal have the same fingerprint whatever order they were read in;
//! `apply` uses it to refuse a plan computed from a state that has changed since. No I/O.

use sha2::{Digest, Sha256};
use std::io::Write;

use super::state::State;

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
        for (key, assoc) in &c.users {
            let _ = write!(w, "U ");
            let _ = serde_json::to_writer(&mut w, key);
            let _ = serde_json::to_writer(&mut w, assoc);
            let _ = writeln!(w);
        }
        for (user, acct) in &c.defaults {
            let _ = writeln!(w, "D {user} {acct}");
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

/// `sha256:<hex>` of raw bytes (the desired file, a plan body).
pub fn hash_bytes(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::from("sha256:");
    for b in digest.iter() {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}
