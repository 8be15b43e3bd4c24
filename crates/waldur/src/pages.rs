//! A directory of Waldur REST API responses (JSON, exactly as the API returns them):
//!
//! - `resources*.json`: pages of `GET /api/marketplace-provider-resources/?offering_uuid=...`
//! - `team-<resource_uuid>*.json`: `GET /api/marketplace-provider-resources/<uuid>/team/`
//! - `offering-users*.json`: pages of `GET /api/marketplace-offering-users/?offering_uuid=...`
//!
//! Each file is one JSON list (one page); pages of the same endpoint are concatenated in file
//! name order. Unknown fields are ignored. Malformed JSON is reported as `file:line:column`, a
//! page that is not a list names the file, a missing field we need names the resource and the
//! field. Every problem in the directory is reported at once.
//!
//! Must not: print, spawn processes, use the network. Reads only the files of the one directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use slurmplan_diag::{Diagnostic, Location};

/// States of a resource whose accounts must exist.
pub const LIVE_STATES: &[&str] = &["OK", "Erred", "Updating"];

/// One marketplace resource, as far as slurmplan needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resource {
    pub uuid: String,
    pub name: String,
    pub slug: Option<String>,
    pub backend_id: Option<String>,
    pub state: String,
    pub project_uuid: String,
    pub project_slug: String,
    pub project_name: String,
    pub customer_uuid: String,
    pub customer_slug: String,
    pub customer_name: String,
    /// component -> limit in Waldur units. Only live resources are required to have `limits`
    /// (a missing or null `limits` on a live one is an export error).
    pub limits: BTreeMap<String, f64>,
    /// Components whose limit is `null` (reported by the build, never silently dropped).
    pub null_limits: Vec<String>,
    pub paused: bool,
    pub downscaled: bool,
    pub restrict_member_access: bool,
    pub attr_qos: Option<String>,
    pub attr_partition: Option<String>,
    /// The file it came from.
    pub file: PathBuf,
}

impl Resource {
    pub fn is_live(&self) -> bool {
        LIVE_STATES.contains(&self.state.as_str())
    }
}

/// One team member of a resource.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Member {
    pub username: Option<String>,
    pub full_name: Option<String>,
    pub offering_user_username: Option<String>,
    pub offering_user_state: Option<String>,
}

/// One offering user.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OfferingUser {
    pub username: Option<String>,
    pub state: String,
}

/// The whole export.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pages {
    pub dir: PathBuf,
    /// In file order, pages concatenated.
    pub resources: Vec<Resource>,
    /// Normalised resource uuid (lower case, no dashes) -> members (`None`: no team file).
    pub teams: BTreeMap<String, Vec<Member>>,
    pub offering_users: Vec<OfferingUser>,
}

/// Lower case without dashes, so `5b1c0e6e-0f6a-...` and `5b1c0e6e0f6a...` match.
pub fn norm_uuid(s: &str) -> String {
    s.chars().filter(|c| *c != '-').collect::<String>().to_ascii_lowercase()
}

fn file_loc(p: &Path) -> Location {
    Location { file: p.to_path_buf(), line: 0, column: 0 }
}

/// Read one page: a JSON list. Errors carry `file:line:column`.
fn read_page(path: &Path, diags: &mut Vec<Diagnostic>) -> Option<Vec<Value>> {
    let text = match slurmplan_input::read_text(path) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                Diagnostic::error("export-io", format!("cannot read `{}`: {e}", path.display()))
                    .at(file_loc(path))
                    .hint("check the export directory"),
            );
            return None;
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(items)) => Some(items),
        Ok(other) => {
            let what = match other {
                Value::Object(ref m) if m.contains_key("detail") => "an API error object (`detail`)".to_string(),
                Value::Object(_) => "an object".to_string(),
                _ => "not a list".to_string(),
            };
            diags.push(
                Diagnostic::error(
                    "export-not-a-list",
                    format!("`{}` is {what}; each export file must be one JSON list (one page)", path.display()),
                )
                .at(file_loc(path))
                .hint("save the raw response body of the list endpoint (see docs/waldur.md)"),
            );
            None
        }
        Err(e) => {
            diags.push(
                Diagnostic::error("export-json", format!("malformed JSON: {e}"))
                    .at(Location { file: path.to_path_buf(), line: e.line(), column: e.column() })
                    .hint("re-download the page; was the request cut off?"),
            );
            None
        }
    }
}

fn opt_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string).filter(|s| !s.is_empty())
}

fn resource(v: &Value, file: &Path, index: usize, diags: &mut Vec<Diagnostic>) -> Option<Resource> {
    let Some(uuid) = opt_str(v, "uuid") else {
        diags.push(
            Diagnostic::error(
                "export-missing-field",
                format!("resource #{index} in `{}` has no `uuid`", file.display()),
            )
            .at(file_loc(file))
            .hint("the file must hold marketplace-provider-resources exactly as the API returns them"),
        );
        return None;
    };
    let missing = |field: &str, diags: &mut Vec<Diagnostic>| {
        diags.push(
            Diagnostic::error("export-missing-field", format!("resource `{uuid}` has no `{field}`"))
                .at(file_loc(file))
                .hint("export the resources with the full serializer (no `field=` filter)"),
        );
    };
    let Some(state) = opt_str(v, "state") else {
        missing("state", diags);
        return None;
    };
    let mut r = Resource {
        uuid: uuid.clone(),
        name: opt_str(v, "name").unwrap_or_default(),
        slug: opt_str(v, "slug"),
        backend_id: opt_str(v, "backend_id"),
        state,
        paused: v.get("paused").and_then(Value::as_bool).unwrap_or(false),
        downscaled: v.get("downscaled").and_then(Value::as_bool).unwrap_or(false),
        restrict_member_access: v.get("restrict_member_access").and_then(Value::as_bool).unwrap_or(false),
        attr_qos: v.get("attributes").and_then(|a| opt_str(a, "qos")),
        attr_partition: v.get("attributes").and_then(|a| opt_str(a, "partition")),
        file: file.to_path_buf(),
        ..Default::default()
    };
    if !r.is_live() {
        return Some(r);
    }
    let before = diags.len();
    for (field, slot) in [
        ("project_uuid", &mut r.project_uuid),
        ("project_slug", &mut r.project_slug),
        ("customer_uuid", &mut r.customer_uuid),
        ("customer_slug", &mut r.customer_slug),
    ] {
        match opt_str(v, field) {
            Some(s) => *slot = s,
            None => missing(field, diags),
        }
    }
    r.project_name = opt_str(v, "project_name").unwrap_or_default();
    r.customer_name = opt_str(v, "customer_name").unwrap_or_default();
    resource_limits(v, &mut r, file, diags);
    (diags.len() == before).then_some(r)
}

/// The `limits` of the live resource `r` (from `v`, in `file`) into `r.limits` and
/// `r.null_limits`; what is wrong with them into `diags`.
fn resource_limits(v: &Value, r: &mut Resource, file: &Path, diags: &mut Vec<Diagnostic>) {
    let uuid = &r.uuid;
    match v.get("limits") {
    None | Some(Value::Null) => diags.push(
        Diagnostic::error(
            "export-missing-limits",
            format!(
                "live resource `{uuid}` (`{}`) has {} `limits`; building it would remove the allocation's GrpTRESMins caps",
                r.name,
                if v.get("limits").is_some() { "a null" } else { "no" }
            ),
        )
        .at(file_loc(file))
        .hint("export the resources with the full serializer; a resource without limits has `\"limits\": {}`"),
    ),
    Some(Value::Object(m)) => {
        for (k, lv) in m {
            match lv {
                Value::Null => r.null_limits.push(k.clone()),
                Value::Number(n) => match n.as_f64() {
                    Some(f) if f.is_finite() && f >= 0.0 => {
                        r.limits.insert(k.clone(), f);
                    }
                    _ => diags.push(
                        Diagnostic::error(
                            "export-bad-field",
                            format!("resource `{uuid}` has limit `{k}` = `{n}`, which is not a number >= 0"),
                        )
                        .at(file_loc(file))
                        .hint("limits must be numbers >= 0 in Waldur units"),
                    ),
                },
                _ => diags.push(
                    Diagnostic::error(
                        "export-bad-field",
                        format!("resource `{uuid}` has a non-numeric limit `{k}`"),
                    )
                    .at(file_loc(file))
                    .hint("limits must be numbers in Waldur units"),
                ),
            }
        }
    }
    Some(_) => diags.push(
        Diagnostic::error("export-bad-field", format!("resource `{uuid}` has `limits` that is not a mapping"))
            .at(file_loc(file))
            .hint("limits must be `{component: number}`"),
    ),
    }
}

/// The `<uuid>` of `team-<uuid>[-page].json`: 32 hex digits, or 36 with dashes.
fn team_uuid(file_name: &str) -> Option<String> {
    let rest = file_name.strip_prefix("team-")?.strip_suffix(".json")?;
    for len in [36, 32] {
        if let Some(head) = rest.get(..len) {
            let n = norm_uuid(head);
            if n.len() == 32 && n.chars().all(|c| c.is_ascii_hexdigit()) {
                return Some(n);
            }
        }
    }
    None
}

/// Load every export file of `dir`. `Err` holds every error.
pub fn load_pages(dir: &Path) -> Result<Pages, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            return Err(vec![
                Diagnostic::error("export-io", format!("cannot read the export directory `{}`: {e}", dir.display()))
                    .at(file_loc(dir))
                    .hint("pass --export DIR holding the JSON files described in docs/waldur.md"),
            ]);
        }
    };
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()).filter_map(|e| e.file_name().to_str().map(str::to_string)).collect();
    names.sort();
    let mut ex = Pages { dir: dir.to_path_buf(), ..Default::default() };
    let mut seen_resources = false;
    let mut seen_users = false;
    for name in &names {
        let path = dir.join(name);
        if !name.ends_with(".json") {
            continue;
        }
        if name.starts_with("resources") {
            seen_resources = true;
            if let Some(items) = read_page(&path, &mut diags) {
                for (i, v) in items.iter().enumerate() {
                    if let Some(r) = resource(v, &path, i, &mut diags) {
                        ex.resources.push(r);
                    }
                }
            }
        } else if name.starts_with("offering-users") {
            seen_users = true;
            if let Some(items) = read_page(&path, &mut diags) {
                for v in &items {
                    ex.offering_users.push(OfferingUser {
                        username: opt_str(v, "username"),
                        state: opt_str(v, "state").unwrap_or_default(),
                    });
                }
            }
        } else if name.starts_with("team-") {
            let Some(uuid) = team_uuid(name) else {
                diags.push(
                    Diagnostic::error(
                        "export-file-name",
                        format!("`{}` does not name a resource uuid", path.display()),
                    )
                    .at(file_loc(&path))
                    .hint("name team files `team-<resource_uuid>.json` (pages: `team-<uuid>-2.json`)"),
                );
                continue;
            };
            if let Some(items) = read_page(&path, &mut diags) {
                let team = ex.teams.entry(uuid).or_default();
                for v in &items {
                    team.push(Member {
                        username: opt_str(v, "username"),
                        full_name: opt_str(v, "full_name"),
                        offering_user_username: opt_str(v, "offering_user_username"),
                        offering_user_state: opt_str(v, "offering_user_state"),
                    });
                }
            }
        }
    }
    if !seen_resources {
        diags.push(
            Diagnostic::error("export-missing-file", format!("`{}` has no `resources*.json`", dir.display()))
                .at(file_loc(dir))
                .hint("save the marketplace-provider-resources pages as resources.json, resources-2.json, ..."),
        );
    }
    if !seen_users {
        diags.push(
            Diagnostic::error("export-missing-file", format!("`{}` has no `offering-users*.json`", dir.display()))
                .at(file_loc(dir))
                .hint("save the marketplace-offering-users pages as offering-users.json, ..."),
        );
    }
    if slurmplan_diag::has_errors(&diags) {
        slurmplan_diag::sort(&mut diags);
        Err(diags)
    } else {
        Ok(ex)
    }
}
