//! The site agent's `waldur-site-agent-config.yaml`: pick one SLURM offering and turn its
//! `backend_settings` and `backend_components` into checked [`Settings`].
//!
//! Unknown top-level and offering keys are allowed (the agent has many we ignore); YAML anchors
//! and merge keys work. Every configuration problem is collected and reported at once, each
//! naming its key path (`offerings[0].backend_settings.customer_prefix`).
//!
//! Must not: print, spawn processes, use the network, or keep the API token. The token is
//! removed from the parsed tree before anything else looks at it, and a YAML syntax error
//! whose message would quote it is replaced by a generic one.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use serde_saphyr::{MessageFormatter, UserMessageFormatter};

use slurmplan_diag::{Diagnostic, Location};
use slurmplan_model::names::{Name, NameKind};
use slurmplan_model::values::{self, Tres};

/// `default_account_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Common,
    Individual,
    None,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Common => "common",
            Policy::Individual => "individual",
            Policy::None => "none",
        }
    }
}

/// One `backend_components` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Waldur unit -> Slurm TRES-minutes (default 1).
    pub unit_factor: f64,
    /// `target_components`: TRES -> factor (replaces `unit_factor` when present).
    pub targets: BTreeMap<String, f64>,
}

/// `backend_settings.qos_management`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QosManagement {
    pub enabled: bool,
    pub skip_qos_swap: bool,
    pub apply_limits_to_qos: bool,
    /// Flags of the per-allocation QoS (default `DenyOnLimit,NoDecay`).
    pub flags: Vec<String>,
    pub grp_tres: Tres,
    pub max_wall: Option<u64>,
}

/// The checked settings of one SLURM offering. Holds no secret.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The file it came from (for messages).
    pub path: std::path::PathBuf,
    pub offering_name: String,
    pub offering_uuid: Option<String>,
    /// Index of the offering in `offerings` (for key paths).
    pub index: usize,
    pub default_account: Name,
    pub policy: Policy,
    /// `root_account`, after the fallback chain root_account -> default_account -> root.
    pub root_account: Name,
    pub customer_prefix: String,
    pub project_prefix: String,
    pub allocation_prefix: String,
    pub cluster_name: Option<Name>,
    /// `slurm_bin_path`: the directory of sacctmgr (the agent's default is `/usr/bin`).
    pub slurm_bin_path: Option<std::path::PathBuf>,
    /// Set: flat hierarchy (no customer tier).
    pub parent_account: Option<Name>,
    pub default_partition: Option<Name>,
    pub enforce_offering_partitions: bool,
    pub qos_default: Option<Name>,
    pub qos_downscaled: Option<Name>,
    pub qos_paused: Option<Name>,
    pub qos_management: QosManagement,
    pub components: BTreeMap<String, Component>,
    /// `execution_mode: rest` with its `rest_api` settings: the agent reaches Slurm through
    /// slurmrestd. `None` for `cli` (the default).
    pub rest: Option<RestApi>,
}

/// The agent's `rest_api` settings (`execution_mode: rest`). Holds no secret: the token stays
/// in its file or environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestApi {
    pub url: String,
    pub username: Option<String>,
    pub token_file: Option<std::path::PathBuf>,
    /// The name of the environment variable that holds the JWT.
    pub token_env: Option<String>,
}

const BACKEND_KEYS: &[&str] = &[
    "default_account",
    "default_account_policy",
    "root_account",
    "customer_prefix",
    "project_prefix",
    "allocation_prefix",
    "cluster_name",
    "slurm_bin_path",
    "parent_account",
    "default_partition",
    "enforce_offering_partitions",
    "qos_default",
    "qos_downscaled",
    "qos_paused",
    "qos_management",
    "enable_user_homedir_account_creation",
    "default_homedir_umask",
    "execution_mode",
    "rest_api",
];

/// Keys of `rest_api` (the agent's slurmrestd settings).
const REST_API_KEYS: &[&str] = &["url", "api_version", "username", "token_file", "token_env", "verify_ssl", "timeout"];

struct Ctx<'a> {
    file: &'a Path,
    diags: Vec<Diagnostic>,
}

impl Ctx<'_> {
    fn loc(&self) -> Location {
        Location { file: self.file.to_path_buf(), line: 0, column: 0 }
    }
    fn error(&mut self, code: &'static str, msg: String, hint: impl Into<String>) {
        let d = Diagnostic::error(code, msg).at(self.loc()).hint(hint);
        self.diags.push(d);
    }
    fn warn(&mut self, code: &'static str, msg: String, hint: impl Into<String>) {
        let d = Diagnostic::warning(code, msg).at(self.loc()).hint(hint);
        self.diags.push(d);
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Values of `*token*:` lines in the raw text, to keep them out of syntax-error messages.
fn token_like_values(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            if !k.to_ascii_lowercase().contains("token") {
                return None;
            }
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'').trim();
            (v.len() >= 4).then(|| v.to_string())
        })
        .collect()
}

/// Parse the config text and return the settings of the chosen offering. `Err` holds every
/// error (and the warnings found with them); `Ok` carries the warnings.
pub fn load_config(
    path: &Path,
    text: &str,
    offering: Option<&str>,
) -> Result<(Settings, Vec<Diagnostic>), Vec<Diagnostic>> {
    settings_of(path, parse(path, text)?, offering)
}

/// The config's YAML tree, tokens included (for a caller that also needs the API access:
/// `fetch::access_of`); a syntax error is reported without quoting a token.
pub fn parse(path: &Path, text: &str) -> Result<Value, Vec<Diagnostic>> {
    let cx = Ctx { file: path, diags: Vec::new() };
    match serde_saphyr::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => {
            let mut message: String =
                UserMessageFormatter.format_message(&e).chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            if token_like_values(text).iter().any(|t| message.contains(t.as_str())) {
                message = "the file is not valid YAML".to_string();
            }
            let location = match e.location() {
                Some(l) => Location {
                    file: path.to_path_buf(),
                    line: usize::try_from(l.line()).unwrap_or(0),
                    column: usize::try_from(l.column()).unwrap_or(0),
                },
                None => cx.loc(),
            };
            Err(vec![
                Diagnostic::error("config-syntax", message)
                    .at(location)
                    .hint("fix the YAML of the agent config; the other checks run once it parses"),
            ])
        }
    }
}

/// [`load_config`] on the tree of [`parse`]: its tokens are dropped first.
pub fn settings_of(
    path: &Path,
    mut root: Value,
    offering: Option<&str>,
) -> Result<(Settings, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut cx = Ctx { file: path, diags: Vec::new() };
    // Drop every token before looking at anything else.
    if let Some(Value::Array(offs)) = root.get_mut("offerings") {
        for o in offs.iter_mut() {
            if let Value::Object(m) = o {
                m.remove("waldur_api_token");
            }
        }
    }
    let Some(Value::Array(offerings)) = root.get("offerings") else {
        let found = root.get("offerings").map(kind).unwrap_or("missing");
        cx.error(
            "config-missing-key",
            format!("`offerings` must be a list of offerings, found {found}"),
            "point --config at the waldur-site-agent-config.yaml of the site",
        );
        return Err(cx.diags);
    };
    // Choose the offering.
    let is_slurm = |o: &Value| {
        o.get("backend_type").and_then(Value::as_str) == Some("slurm")
            || (o.get("backend_type").is_none()
                && o.get("order_processing_backend").and_then(Value::as_str) == Some("slurm"))
    };
    let name_of = |o: &Value| o.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    let slurm: Vec<(usize, &Value)> = offerings.iter().enumerate().filter(|(_, o)| is_slurm(o)).collect();
    let listed = || slurm.iter().map(|(_, o)| format!("`{}`", name_of(o))).collect::<Vec<_>>().join(", ");
    let (index, off) = match offering {
        Some(want) => match offerings.iter().enumerate().find(|(_, o)| name_of(o) == want) {
            Some((i, o)) if is_slurm(o) => (i, o),
            Some((i, _)) => {
                cx.error(
                    "config-offering",
                    format!("offering `{want}` (`offerings[{i}]`) is not a SLURM offering (`backend_type: slurm`)"),
                    format!("SLURM offerings in the file: {}", listed()),
                );
                return Err(cx.diags);
            }
            None => {
                cx.error(
                    "config-offering",
                    format!("no offering named `{want}` in the config"),
                    format!("SLURM offerings in the file: {}", listed()),
                );
                return Err(cx.diags);
            }
        },
        None => match slurm.as_slice() {
            [one] => *one,
            [] => {
                cx.error(
                    "config-offering",
                    "the config has no SLURM offering (`backend_type: slurm`)".into(),
                    "check that --config is the SLURM site agent's config",
                );
                return Err(cx.diags);
            }
            _ => {
                cx.error(
                    "config-offering",
                    format!("the config has {} SLURM offerings; choose one", slurm.len()),
                    format!("pass --offering NAME, one of: {}", listed()),
                );
                return Err(cx.diags);
            }
        },
    };
    let settings = offering_settings(&mut cx, index, off);
    let diags = cx.diags;
    match settings {
        Some(s) if !slurmplan_diag::has_errors(&diags) => Ok((s, diags)),
        _ => Err(diags),
    }
}

/// One mapping of the config and its key path, read key by key; every problem is reported to
/// the context and the value treated as absent.
struct Keys<'a> {
    map: &'a serde_json::Map<String, Value>,
    path: &'a str,
}

impl Keys<'_> {
    /// A string value; a missing `required` one is an error.
    fn string(&self, cx: &mut Ctx, key: &str, required: bool) -> Option<String> {
        let bs_path = self.path;
        match self.map.get(key) {
            None | Some(Value::Null) => {
                if required {
                    cx.error(
                        "config-missing-key",
                        format!("`{bs_path}.{key}` is missing"),
                        format!("the SLURM plugin requires `{key}`; the agent would silently use \"\""),
                    );
                }
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                cx.error(
                    "config-wrong-type",
                    format!("`{bs_path}.{key}` must be a string, found {}", kind(other)),
                    "put the value in quotes",
                );
                None
            }
        }
    }

    /// A Slurm name of kind `k` (upper case is a warning: Slurm stores it lower-cased).
    fn name(&self, cx: &mut Ctx, key: &str, k: NameKind) -> Option<Name> {
        let bs_path = self.path;
        let s = self.string(cx, key, false)?;
        match Name::parse(&s, k, false) {
            Ok(p) => {
                if p.lowercased {
                    cx.warn(
                        "lowercased-name",
                        format!("`{bs_path}.{key}` `{s}` has upper case; Slurm stores it as `{}`", p.name),
                        format!("write `{}`", p.name),
                    );
                }
                Some(p.name)
            }
            Err(e) => {
                cx.error("config-bad-value", format!("`{bs_path}.{key}`: {e}"), e.hint);
                None
            }
        }
    }

    /// A boolean; missing or null is `false`.
    fn boolean(&self, cx: &mut Ctx, key: &str) -> bool {
        let path = self.path;
        match self.map.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                cx.error(
                    "config-wrong-type",
                    format!("`{path}.{key}` must be true or false, found {}", kind(other)),
                    "write `true` or `false`",
                );
                false
            }
        }
    }
}

/// The checked settings of offering `index`; `None` when a required value is missing or
/// invalid (the errors are in `cx`). Reads the keys in a fixed order so that messages come out
/// in the same order every time; must not stop at the first error.
fn offering_settings(cx: &mut Ctx, index: usize, off: &Value) -> Option<Settings> {
    let base = format!("offerings[{index}]");
    let bs_path = format!("{base}.backend_settings");
    let empty = serde_json::Map::new();
    let bs = backend_settings(cx, off, &bs_path).unwrap_or(&empty);
    let keys = Keys { map: bs, path: &bs_path };

    let default_account = match keys.string(cx, "default_account", true) {
        Some(_) => keys.name(cx, "default_account", NameKind::Account),
        None => None,
    };
    let prefixes = account_prefixes(cx, &keys);
    let policy = default_account_policy(cx, bs, &bs_path);
    let root_account = keys.name(cx, "root_account", NameKind::Account);
    let slurm_bin_path = keys.string(cx, "slurm_bin_path", false).map(std::path::PathBuf::from);
    let cluster_name = keys.name(cx, "cluster_name", NameKind::Cluster);
    let parent_account = keys.name(cx, "parent_account", NameKind::Account);
    let default_partition = keys.name(cx, "default_partition", NameKind::Partition);
    let enforce_offering_partitions = keys.boolean(cx, "enforce_offering_partitions");
    let mut swap_qos = BTreeMap::new();
    for key in ["qos_default", "qos_downscaled", "qos_paused"] {
        swap_qos.insert(key, keys.name(cx, key, NameKind::Qos));
    }
    let qm_path = format!("{bs_path}.qos_management");
    let qm = qos_management(cx, bs, &qm_path);
    qos_conflicts(cx, &qm, &swap_qos, &bs_path, &qm_path);
    let components = backend_components(cx, off, &format!("{base}.backend_components"));
    let rest = rest_api(cx, &keys, cluster_name.is_some());

    let offering_name = off.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    let offering_uuid = off.get("waldur_offering_uuid").and_then(Value::as_str).map(str::to_string);
    let default_account = default_account?;
    let policy = policy?;
    let [Some(customer_prefix), Some(project_prefix), Some(allocation_prefix)] =
        <[Option<String>; 3]>::try_from(prefixes).ok()?
    else {
        return None;
    };
    let root_account = root_account.clone().unwrap_or_else(|| default_account.clone());
    Some(Settings {
        path: cx.file.to_path_buf(),
        offering_name,
        offering_uuid,
        index,
        default_account,
        policy,
        root_account,
        customer_prefix,
        project_prefix,
        allocation_prefix,
        cluster_name,
        slurm_bin_path,
        parent_account,
        default_partition,
        enforce_offering_partitions,
        qos_default: swap_qos.remove("qos_default").flatten(),
        qos_downscaled: swap_qos.remove("qos_downscaled").flatten(),
        qos_paused: swap_qos.remove("qos_paused").flatten(),
        qos_management: qm,
        components,
        rest: rest?,
    })
}

/// `backend_settings` as a mapping (`None`, with an error, when it is not one); warns about
/// keys slurmplan does not know.
fn backend_settings<'a>(cx: &mut Ctx, off: &'a Value, bs_path: &str) -> Option<&'a serde_json::Map<String, Value>> {
    let bs = match off.get("backend_settings") {
        Some(Value::Object(m)) => m,
        other => {
            let found = other.map(kind).unwrap_or("missing");
            cx.error(
                "config-missing-key",
                format!("`{bs_path}` must be a mapping, found {found}"),
                "add the SLURM plugin's backend_settings",
            );
            return None;
        }
    };
    warn_unknown_keys(cx, bs, bs_path, BACKEND_KEYS);
    Some(bs)
}

/// A warning for each key of the mapping at `path` that is not one of `known` (ignored).
fn warn_unknown_keys(cx: &mut Ctx, map: &serde_json::Map<String, Value>, path: &str, known: &[&str]) {
    for k in map.keys() {
        if !known.contains(&k.as_str()) {
            cx.warn(
                "config-unknown-key",
                format!("`{path}.{k}` is not a key slurmplan knows; it is ignored"),
                format!("known keys: {}", known.join(", ")),
            );
        }
    }
}

/// `execution_mode` and, for `rest`, `rest_api`, checked as the agent checks them (a mode other
/// than `cli` or `rest`, `rest` without `rest_api`, a cluster or a token source: errors), and
/// what slurmplan does differently said: `api_version` is not pinned (the data parser is
/// negotiated), `timeout` is `--timeout`'s, and `verify_ssl: false` is refused (the token
/// would cross an unverified connection). `Some(None)`: cli; `None`: errors in `cx`.
fn rest_api(cx: &mut Ctx, keys: &Keys, has_cluster: bool) -> Option<Option<RestApi>> {
    let bs_path = keys.path;
    let mode = keys.string(cx, "execution_mode", false);
    match mode.as_deref() {
        None | Some("cli") => return Some(None),
        Some("rest") => {}
        Some(other) => {
            cx.error(
                "config-bad-value",
                format!("`{bs_path}.execution_mode` is `{other}`; the agent knows `cli` and `rest`"),
                "write `cli` or `rest`",
            );
            return None;
        }
    }
    let path = format!("{bs_path}.rest_api");
    let Some(Value::Object(m)) = keys.map.get("rest_api") else {
        cx.error(
            "config-missing-key",
            format!("`{bs_path}.execution_mode` is `rest` but `{path}` is missing or not a mapping"),
            "add rest_api with url, username and token_file (or token_env)",
        );
        return None;
    };
    warn_unknown_keys(cx, m, &path, REST_API_KEYS);
    let rk = Keys { map: m, path: &path };
    let before = cx.diags.iter().filter(|d| d.severity == slurmplan_diag::Severity::Error).count();
    let url = rk.string(cx, "url", true);
    let username = rk.string(cx, "username", false);
    let token_file = rk.string(cx, "token_file", false).map(std::path::PathBuf::from);
    let token_env = rk.string(cx, "token_env", false);
    if token_file.is_none() && token_env.is_none() {
        cx.error(
            "config-missing-key",
            format!("`{path}` names no token: give `token_file` or `token_env`"),
            "the agent requires one of them too",
        );
    }
    if !has_cluster {
        cx.error(
            "config-missing-key",
            format!("`{bs_path}.execution_mode` is `rest` but `cluster_name` is not set"),
            "the agent requires cluster_name in rest mode too",
        );
    }
    if matches!(m.get("verify_ssl"), Some(Value::Bool(false))) {
        cx.error(
            "config-bad-value",
            format!("`{path}.verify_ssl` is false: slurmplan always verifies slurmrestd's certificate"),
            "give slurmplan the CA with --rest-ca-cert FILE, or reach slurmrestd over plain http on a loopback address (a tunnel)",
        );
    }
    if m.contains_key("api_version") {
        cx.warn(
            "config-ignored-key",
            format!("`{path}.api_version` is not used: slurmplan chooses the data parser from what slurmrestd offers"),
            "docs/operations.md, \"Through slurmrestd\"",
        );
    }
    let after = cx.diags.iter().filter(|d| d.severity == slurmplan_diag::Severity::Error).count();
    if after > before {
        return None;
    }
    Some(Some(RestApi { url: url?, username, token_file, token_env }))
}

/// The customer, project and allocation prefixes (required; lower-cased), in that order.
fn account_prefixes(cx: &mut Ctx, keys: &Keys) -> Vec<Option<String>> {
    let mut prefixes = Vec::new();
    for key in ["customer_prefix", "project_prefix", "allocation_prefix"] {
        let p = keys.string(cx, key, true);
        if let Some(p) = &p
            && !p.is_empty()
            && Name::parse(p, NameKind::Account, false).is_err()
        {
            cx.error(
                "config-bad-value",
                format!("`{}.{key}` `{p}` cannot start an account name", keys.path),
                "use only a-z, 0-9, `_`, `.` and `-`",
            );
        }
        prefixes.push(p.map(|p| p.to_lowercase()));
    }
    prefixes
}

/// `default_account_policy` (default `common`).
fn default_account_policy(cx: &mut Ctx, bs: &serde_json::Map<String, Value>, bs_path: &str) -> Option<Policy> {
    match bs.get("default_account_policy") {
        None | Some(Value::Null) => Some(Policy::Common),
        Some(Value::String(s)) => match s.as_str() {
            "common" => Some(Policy::Common),
            "individual" => Some(Policy::Individual),
            "none" => Some(Policy::None),
            other => {
                cx.error(
                    "config-bad-value",
                    format!("`{bs_path}.default_account_policy` is `{other}`"),
                    "use one of `common` (the default), `individual`, `none`",
                );
                None
            }
        },
        Some(other) => {
            cx.error(
                "config-bad-value",
                format!("`{bs_path}.default_account_policy` must be a string, found {}", kind(other)),
                "use one of `common` (the default), `individual`, `none`",
            );
            None
        }
    }
}

/// `backend_settings.qos_management` (absent: disabled, default flags). Checks each key on its
/// own; [`qos_conflicts`] checks them together.
fn qos_management(cx: &mut Ctx, bs: &serde_json::Map<String, Value>, qm_path: &str) -> QosManagement {
    let mut qm = QosManagement { flags: vec!["DenyOnLimit".into(), "NoDecay".into()], ..Default::default() };
    let m = match bs.get("qos_management") {
        None | Some(Value::Null) => return qm,
        Some(Value::Object(m)) => m,
        Some(other) => {
            cx.error(
                "config-wrong-type",
                format!("`{qm_path}` must be a mapping, found {}", kind(other)),
                "write e.g. `qos_management: {enabled: true}`",
            );
            return qm;
        }
    };
    let keys = Keys { map: m, path: qm_path };
    qm.enabled = keys.boolean(cx, "enabled");
    qm.skip_qos_swap = keys.boolean(cx, "skip_qos_swap");
    qm.apply_limits_to_qos = keys.boolean(cx, "apply_limits_to_qos");
    match m.get("flags") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            qm.flags = s.split(',').map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect()
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
            qm.flags = a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect()
        }
        Some(other) => cx.error(
            "config-wrong-type",
            format!("`{qm_path}.flags` must be a list of flags or \"A,B\", found {}", kind(other)),
            "write e.g. `flags: [DenyOnLimit, NoDecay]`",
        ),
    }
    for f in &qm.flags {
        if !f.chars().all(|c| c.is_ascii_alphanumeric()) {
            cx.error(
                "config-bad-value",
                format!("`{qm_path}.flags` has `{f}`, which is not a QoS flag"),
                "QoS flags look like `DenyOnLimit`, `NoDecay`",
            );
        }
    }
    match m.get("grp_tres") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => match values::parse_tres(s) {
            Ok(t) => qm.grp_tres = t,
            Err(e) => {
                cx.error("config-bad-value", format!("`{qm_path}.grp_tres`: {e}"), "write it like `cpu=100,gres/gpu=4`")
            }
        },
        Some(other) => cx.error(
            "config-wrong-type",
            format!("`{qm_path}.grp_tres` must be a string like `cpu=100`, found {}", kind(other)),
            "write it like `cpu=100,gres/gpu=4`",
        ),
    }
    match m.get("max_wall") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_u64().is_some() => qm.max_wall = n.as_u64(),
        Some(Value::String(s)) => match values::parse_duration(s) {
            Ok(v) => qm.max_wall = Some(v),
            Err(e) => cx.error("config-bad-value", format!("`{qm_path}.max_wall`: {e}"), "minutes or D-HH:MM:SS"),
        },
        Some(other) => cx.error(
            "config-wrong-type",
            format!("`{qm_path}.max_wall` must be minutes or D-HH:MM:SS, found {}", kind(other)),
            "minutes or D-HH:MM:SS",
        ),
    }
    for k in m.keys() {
        if !["enabled", "skip_qos_swap", "apply_limits_to_qos", "flags", "grp_tres", "max_wall"].contains(&k.as_str()) {
            cx.warn(
                "config-ignored-key",
                format!("`{qm_path}.{k}` is not carried into the desired state"),
                "the desired format's QoS keys are flags, grp_tres, grp_tres_mins, grp_submit_jobs, max_wall",
            );
        }
    }
    qm
}

/// The pause mechanisms exclude each other (`skip_qos_swap` with a `qos_*` key), and
/// `apply_limits_to_qos` needs both `enabled` and `skip_qos_swap`.
fn qos_conflicts(
    cx: &mut Ctx,
    qm: &QosManagement,
    swap_qos: &BTreeMap<&str, Option<Name>>,
    bs_path: &str,
    qm_path: &str,
) {
    if qm.skip_qos_swap {
        let set: Vec<&str> = swap_qos.iter().filter(|(_, v)| v.is_some()).map(|(k, _)| *k).collect();
        if !set.is_empty() {
            cx.error(
                "config-conflict",
                format!(
                    "`{qm_path}.skip_qos_swap` is true but {} {} set: the two pause mechanisms exclude each other",
                    set.iter().map(|k| format!("`{bs_path}.{k}`")).collect::<Vec<_>>().join(", "),
                    if set.len() == 1 { "is" } else { "are" }
                ),
                "remove the qos_* keys (pause with GrpSubmitJobs=0) or set skip_qos_swap: false (swap QoS)",
            );
        }
    }
    if qm.apply_limits_to_qos && !(qm.enabled && qm.skip_qos_swap) {
        let missing: Vec<&str> = [("enabled", qm.enabled), ("skip_qos_swap", qm.skip_qos_swap)]
            .iter()
            .filter(|(_, v)| !v)
            .map(|(k, _)| *k)
            .collect();
        cx.error(
            "config-conflict",
            format!(
                "`{qm_path}.apply_limits_to_qos` requires {}",
                missing.iter().map(|k| format!("`{qm_path}.{k}: true`")).collect::<Vec<_>>().join(" and ")
            ),
            "set them, or remove apply_limits_to_qos (limits then go on the allocation account)",
        );
    }
}

/// `backend_components`: TRES name -> unit_factor and target_components (absent: none).
fn backend_components(cx: &mut Ctx, off: &Value, comp_path: &str) -> BTreeMap<String, Component> {
    let mut components = BTreeMap::new();
    match off.get("backend_components") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (key, c) in m {
                if let Some(comp) = component(cx, &format!("{comp_path}.{key}"), key, c) {
                    components.insert(key.clone(), comp);
                }
            }
        }
        Some(other) => cx.error(
            "config-wrong-type",
            format!("`{comp_path}` must be a mapping, found {}", kind(other)),
            "key each component by its TRES name",
        ),
    }
    components
}

/// One component at `cpath`; `None` (with an error) when it is not a mapping. A bad key or
/// factor is an error but the component is still returned.
fn component(cx: &mut Ctx, cpath: &str, key: &str, c: &Value) -> Option<Component> {
    if !values::valid_tres_name(key) {
        cx.error(
            "config-bad-tres",
            format!("`{cpath}`: `{key}` is not a TRES name"),
            "component keys are Slurm TRES names: `cpu`, `mem`, `node`, `billing`, `gres/gpu`",
        );
    }
    let mut comp = Component { unit_factor: 1.0, targets: BTreeMap::new() };
    let Value::Object(cm) = c else {
        cx.error(
            "config-wrong-type",
            format!("`{cpath}` must be a mapping, found {}", kind(c)),
            "give measured_unit, accounting_type, unit_factor",
        );
        return None;
    };
    match cm.get("unit_factor") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_f64().is_some_and(|f| f.is_finite() && f >= 0.0) => {
            comp.unit_factor = n.as_f64().unwrap_or(1.0)
        }
        Some(other) => cx.error(
            "config-bad-value",
            format!("`{cpath}.unit_factor` must be a number >= 0, found {other}"),
            "e.g. 60000 for CPU k-hours",
        ),
    }
    match cm.get("target_components") {
        None | Some(Value::Null) => {}
        Some(Value::Object(tm)) => {
            for (t, tv) in tm {
                let tpath = format!("{cpath}.target_components.{t}");
                if !values::valid_tres_name(t) {
                    cx.error(
                        "config-bad-tres",
                        format!("`{tpath}`: `{t}` is not a TRES name"),
                        "target keys are Slurm TRES names: `cpu`, `mem`, `gres/gpu`",
                    );
                }
                match tv.get("factor").and_then(Value::as_f64) {
                    Some(f) if f.is_finite() && f >= 0.0 => {
                        comp.targets.insert(t.clone(), f);
                    }
                    _ => cx.error(
                        "config-bad-value",
                        format!("`{tpath}.factor` must be a number >= 0"),
                        "write `{factor: 60}`",
                    ),
                }
            }
        }
        Some(other) => cx.error(
            "config-wrong-type",
            format!("`{cpath}.target_components` must be a mapping, found {}", kind(other)),
            "write `target_components: {cpu: {factor: 60}}`",
        ),
    }
    Some(comp)
}
