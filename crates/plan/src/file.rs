//! The plan file: JSON with `format_version`, a checksum of its own body, and optionally an
//! HMAC-SHA256 signature of the same body with a key only the planner and the applier hold.
//!
//! The checksum catches accidental edits and truncation; anyone who can write the file can
//! recompute it. The signature is what keeps a plan as reviewed: without the key it cannot be
//! made again. Every plan read passes `plan::check` (names, values, argv, `root`); `apply`
//! also replays it on the current state before the first write (apply::check).
//! The bytes are those of the file's own types ([`schema`]), never of the planner's: an internal
//! change does not change the format (docs/operations.md, "The plan file's schema").
//! Only reads/writes files.

use std::path::Path;

use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};

pub mod schema;

use super::{FORMAT_VERSION, FORMAT_VERSION_SCOPED, Plan};
use schema::FilePlan;
use slurmplan_model::fingerprint::hash_bytes;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The prefix of a signature in the plan file.
const SIGNATURE_PREFIX: &str = "hmac-sha256:";

#[derive(Serialize, Deserialize)]
struct Envelope<'a> {
    format_version: u32,
    /// sha256 over the canonical JSON of `plan`.
    checksum: String,
    /// HMAC-SHA256 over the same bytes, when the planner had a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    plan: FilePlan<'a>,
}

/// A signing key (the bytes of `SLURMPLAN_PLAN_KEY_FILE`, trailing whitespace removed).
pub struct Key(Vec<u8>);

/// The fewest bytes a key may have (256 bits, the size of the HMAC-SHA256 tag).
pub const MIN_KEY_BYTES: usize = 32;

impl Key {
    pub fn new(mut bytes: Vec<u8>) -> Result<Key, String> {
        while bytes.last().is_some_and(|b| b.is_ascii_whitespace()) {
            bytes.pop();
        }
        if bytes.len() < MIN_KEY_BYTES {
            return Err(format!("the key has {} bytes; at least {MIN_KEY_BYTES} are needed", bytes.len()));
        }
        if bytes.iter().all(|&b| b == 0) {
            return Err("the key is all zero bytes".into());
        }
        Ok(Key(bytes))
    }

    fn mac(&self, body: &[u8]) -> HmacSha256 {
        let mut m = <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        m.update(body);
        m
    }

    fn sign(&self, body: &[u8]) -> String {
        let tag = self.mac(body).finalize().into_bytes();
        let mut s = String::from(SIGNATURE_PREFIX);
        for b in tag.iter() {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    /// Constant-time check of `signature` over `body`.
    fn verify(&self, body: &[u8], signature: &str) -> bool {
        let Some(hex) = signature.strip_prefix(SIGNATURE_PREFIX) else { return false };
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        let tag: Vec<u8> = (0..32).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0)).collect();
        self.mac(body).verify_slice(&tag).is_ok()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    #[error("cannot read plan file `{path}`: {source}")]
    Io { path: String, source: slurmplan_input::InputError },
    #[error("plan file `{path}` is not a slurmplan plan: {reason}")]
    Malformed { path: String, reason: String },
    #[error(
        "plan file `{path}` has format_version {found}; this slurmplan reads {FORMAT_VERSION} and {FORMAT_VERSION_SCOPED}"
    )]
    Version { path: String, found: u64 },
    #[error("plan file `{path}` was modified after it was written (checksum mismatch)")]
    Tampered { path: String },
    #[error("plan file `{path}` is not signed, and SLURMPLAN_PLAN_KEY_FILE is set: only signed plans are applied")]
    Unsigned { path: String },
    #[error("plan file `{path}` holds steps slurmplan never plans: {}{}", problems[..problems.len().min(3)].join("; "), if problems.len() > 3 { format!("; and {} more", problems.len() - 3) } else { String::new() })]
    Unsound { path: String, problems: Vec<String> },
    #[error(
        "plan file `{path}` has a signature that does not match the key in SLURMPLAN_PLAN_KEY_FILE: it was changed after signing, or signed with another key"
    )]
    BadSignature { path: String },
}

/// Canonical body: the plan as a JSON value (keys sorted) in compact form.
fn body(plan: &serde_json::Value) -> String {
    plan.to_string()
}

/// Serialise a plan with its checksum (pretty JSON, stable key order).
pub fn to_json(plan: &Plan) -> String {
    to_json_signed(plan, None)
}

/// [`to_json`], signed with `key` when given.
pub fn to_json_signed(plan: &Plan, key: Option<&Key>) -> String {
    let file = FilePlan::of(plan);
    let value = serde_json::to_value(&file).expect("plan serialises");
    let b = body(&value);
    drop(value);
    let env = Envelope {
        format_version: plan.format_version,
        checksum: hash_bytes(b.as_bytes()),
        signature: key.map(|k| k.sign(b.as_bytes())),
        plan: file,
    };
    let mut s = serde_json::to_string_pretty(&env).expect("plan serialises");
    s.push('\n');
    s
}

/// Parse and verify a plan file's text (the signature is not looked at).
pub fn from_json(path: &Path, text: &str) -> Result<Plan, PlanFileError> {
    from_json_with_key(path, text, None)
}

/// Parse and verify a plan file's text; with `key`, the plan must carry a signature made with it.
pub fn from_json_with_key(path: &Path, text: &str, key: Option<&Key>) -> Result<Plan, PlanFileError> {
    let p = path.display().to_string();
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| PlanFileError::Malformed { path: p.clone(), reason: e.to_string() })?;
    let found = v
        .get("format_version")
        .and_then(|x| x.as_u64())
        .ok_or_else(|| PlanFileError::Malformed { path: p.clone(), reason: "no `format_version`".into() })?;
    if found != FORMAT_VERSION as u64 && found != FORMAT_VERSION_SCOPED as u64 {
        return Err(PlanFileError::Version { path: p, found });
    }
    let scoped = v.get("plan").and_then(|p| p.get("scope")).is_some_and(|s| !s.is_null());
    if scoped != (found == FORMAT_VERSION_SCOPED as u64) {
        return Err(PlanFileError::Malformed {
            path: p,
            reason: format!("format_version {found} {} a fingerprint scope", if scoped { "has no" } else { "needs" }),
        });
    }
    let b = body(v.get("plan").unwrap_or(&serde_json::Value::Null));
    if let Some(key) = key {
        match v.get("signature").and_then(|s| s.as_str()) {
            None => return Err(PlanFileError::Unsigned { path: p }),
            Some(sig) if !key.verify(b.as_bytes(), sig) => return Err(PlanFileError::BadSignature { path: p }),
            Some(_) => {}
        }
    }
    let checksum = v.get("checksum").and_then(|c| c.as_str()).unwrap_or_default().to_string();
    if hash_bytes(b.as_bytes()) != checksum {
        return Err(PlanFileError::Tampered { path: p });
    }
    let env: Envelope =
        serde_json::from_value(v).map_err(|e| PlanFileError::Malformed { path: p.clone(), reason: e.to_string() })?;
    if env.plan.format_version() != env.format_version {
        return Err(PlanFileError::Malformed {
            path: p,
            reason: format!(
                "`format_version` is {} but the plan says {}",
                env.format_version,
                env.plan.format_version()
            ),
        });
    }
    let plan = env.plan.into_plan();
    let problems = super::check::step_problems(&plan);
    if !problems.is_empty() {
        return Err(PlanFileError::Unsound { path: p, problems });
    }
    Ok(plan)
}

pub fn read(path: &Path) -> Result<Plan, PlanFileError> {
    read_with_key(path, None)
}

/// [`read`]; with `key`, only a plan signed with it is accepted.
pub fn read_with_key(path: &Path, key: Option<&Key>) -> Result<Plan, PlanFileError> {
    let text = slurmplan_input::read_text(path)
        .map_err(|source| PlanFileError::Io { path: path.display().to_string(), source })?;
    from_json_with_key(path, &text, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site-a");
        let current = slurmplan_sacctmgr::snapshot::load(&root.join("state")).unwrap();
        let desired = slurmplan_desired::load_file(&root.join("desired.yaml")).unwrap();
        let resolved = slurmplan_desired::resolve::resolve(&desired, &current).unwrap();
        crate::make_plan(&current, &resolved.state, "x").unwrap()
    }

    #[test]
    fn signed_plans_verify_and_edited_ones_do_not() {
        let p = Path::new("p.json");
        let plan = plan();
        let key = Key::new(b"0123456789abcdef-0123456789-secret\n".to_vec()).unwrap();
        let other = Key::new(b"fedcba9876543210-fedcba9876-other".to_vec()).unwrap();
        let signed = to_json_signed(&plan, Some(&key));
        assert_eq!(from_json_with_key(p, &signed, Some(&key)).unwrap(), plan);
        assert_eq!(from_json(p, &signed).unwrap(), plan, "without a key the signature is not needed");
        assert!(matches!(from_json_with_key(p, &signed, Some(&other)), Err(PlanFileError::BadSignature { .. })));
        assert!(matches!(from_json_with_key(p, &to_json(&plan), Some(&key)), Err(PlanFileError::Unsigned { .. })));
        // an edit with a recomputed checksum keeps the old signature, which no longer matches
        let mut edited = plan.clone();
        edited.steps.truncate(1);
        let mut v: serde_json::Value = serde_json::from_str(&to_json(&edited)).unwrap();
        v["signature"] = serde_json::from_str::<serde_json::Value>(&signed).unwrap()["signature"].clone();
        let text = v.to_string();
        assert!(from_json(p, &text).is_ok());
        assert!(matches!(from_json_with_key(p, &text, Some(&key)), Err(PlanFileError::BadSignature { .. })));
        assert!(Key::new(b"short\n".to_vec()).is_err());
    }

    /// A key needs 32 bytes (trailing whitespace not counted) and may not be all zero bytes.
    #[test]
    fn weak_keys_are_refused() {
        assert!(Key::new(vec![b'k'; 31]).err().unwrap().contains("31 bytes; at least 32"));
        let mut padded = vec![b'k'; 31];
        padded.extend_from_slice(b"  \n");
        assert!(Key::new(padded).is_err());
        assert!(Key::new(vec![b'k'; 32]).is_ok());
        assert_eq!(Key::new(vec![0; 64]).err().as_deref(), Some("the key is all zero bytes"));
    }
}
