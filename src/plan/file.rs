//! The plan file: JSON with `format_version` and a checksum of its own body, so `apply` can
//! refuse a plan that was edited or written by an unknown version. Only reads/writes files.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, FORMAT_VERSION_SCOPED, Plan};
use crate::model::fingerprint::hash_bytes;

#[derive(Serialize, Deserialize)]
struct Envelope {
    format_version: u32,
    /// sha256 over the canonical JSON of `plan`.
    checksum: String,
    plan: Plan,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    #[error("cannot read plan file `{path}`: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("plan file `{path}` is not a slurmplan plan: {reason}")]
    Malformed { path: String, reason: String },
    #[error(
        "plan file `{path}` has format_version {found}; this slurmplan reads {FORMAT_VERSION} and {FORMAT_VERSION_SCOPED}"
    )]
    Version { path: String, found: u64 },
    #[error("plan file `{path}` was modified after it was written (checksum mismatch)")]
    Tampered { path: String },
}

/// Canonical body: the plan as a JSON value (keys sorted) in compact form.
fn body(plan: &serde_json::Value) -> String {
    plan.to_string()
}

/// Serialise a plan with its checksum (pretty JSON, stable key order).
pub fn to_json(plan: &Plan) -> String {
    let value = serde_json::to_value(plan).expect("plan serialises");
    let env = Envelope {
        format_version: plan.format_version,
        checksum: hash_bytes(body(&value).as_bytes()),
        plan: plan.clone(),
    };
    let mut s = serde_json::to_string_pretty(&env).expect("plan serialises");
    s.push('\n');
    s
}

/// Parse and verify a plan file's text.
pub fn from_json(path: &Path, text: &str) -> Result<Plan, PlanFileError> {
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
    let checksum = v.get("checksum").and_then(|c| c.as_str()).unwrap_or_default().to_string();
    if hash_bytes(body(v.get("plan").unwrap_or(&serde_json::Value::Null)).as_bytes()) != checksum {
        return Err(PlanFileError::Tampered { path: p });
    }
    let env: Envelope =
        serde_json::from_value(v).map_err(|e| PlanFileError::Malformed { path: p.clone(), reason: e.to_string() })?;
    for step in &env.plan.steps {
        if step.argv != step.command.argv() {
            return Err(PlanFileError::Malformed {
                path: p,
                reason: format!("step {} has an argv that does not match its command", step.number),
            });
        }
    }
    Ok(env.plan)
}

pub fn read(path: &Path) -> Result<Plan, PlanFileError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| PlanFileError::Io { path: path.display().to_string(), source })?;
    from_json(path, &text)
}
