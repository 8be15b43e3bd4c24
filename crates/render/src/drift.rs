//! Drift reports for cron and monitoring: a view of the changes between the current state and
//! the desired one, field by field, in four formats.
//!
//! - `text`: short and mail-friendly, one line per drifted object, then a closing count line;
//! - `json`: versioned (`format_version`), stable key order;
//! - `csv`: one row per drifted field (`cluster,object,field,current,desired`);
//! - `prometheus`: a node_exporter textfile (drift counts per cluster and kind, last-run
//!   timestamp and success).
//!
//! Field names and values come from the same place as the plan views (`fields`), so a drift
//! report and a plan never disagree. Like every renderer it writes to the writer it is given;
//! the caller passes the clock.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::fields::{self, Value};
use slurmplan_diff::{Action, Change};
use slurmplan_model::Name;

/// Version of the JSON drift report.
pub const FORMAT_VERSION: u32 = 1;

/// The object kinds of a drift report, as used in the Prometheus `kind` label.
pub const CLUSTER_KINDS: [&str; 3] = ["account", "user_association", "default_account"];
/// Kinds that are global in slurmdbd (no cluster).
pub const GLOBAL_KINDS: [&str; 2] = ["qos", "account_record"];

/// One drifted field: what slurmdbd holds and what the desired file says (`None` = unset/absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftField {
    pub field: String,
    pub current: Option<String>,
    pub desired: Option<String>,
}

/// One drifted object (the changes of one address merged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftObject {
    pub address: String,
    pub cluster: Option<String>,
    pub kind: &'static str,
    pub name: String,
    /// `create` (missing in slurmdbd), `delete` (not in the desired state), `update`, `reparent`.
    #[serde(serialize_with = "action_word")]
    pub action: Action,
    pub fields: Vec<DriftField>,
}

fn action_word<S: serde::Serializer>(a: &Action, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(a.word())
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftReport {
    pub format_version: u32,
    /// The desired file, as given on the command line.
    pub desired: String,
    pub in_sync: bool,
    /// Clusters the desired file declares (for zero-valued metrics).
    pub clusters: Vec<String>,
    pub objects: Vec<DriftObject>,
}

fn value(v: &Option<Value>) -> Option<String> {
    v.as_ref().map(|v| v.raw().to_string())
}

impl DriftReport {
    /// Build the report from the diff of current and (resolved) desired.
    pub fn new(desired: impl Into<String>, clusters: impl IntoIterator<Item = Name>, changes: &[Change]) -> Self {
        let mut objects: Vec<DriftObject> = Vec::new();
        // address -> position in `objects` (a linear search per change would be quadratic in
        // the number of changes).
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for c in changes {
            let o = fields::object(c);
            let address = c.address();
            let rows: Vec<DriftField> = o
                .shown_fields()
                .into_iter()
                .map(|f| DriftField { field: f.name.to_string(), current: value(&f.before), desired: value(&f.after) })
                .collect();
            // A re-parent and an update of the same account are one drifted object.
            if let Some(prev) = at.get(&address).map(|&i| &mut objects[i]) {
                prev.fields.extend(rows);
                if prev.action == Action::Update && o.action == Action::Reparent {
                    prev.action = Action::Reparent;
                }
                continue;
            }
            at.insert(address.clone(), objects.len());
            objects.push(DriftObject {
                address,
                cluster: o.cluster.map(|c| c.to_string()),
                kind: o.kind,
                name: o.name,
                action: o.action,
                fields: rows,
            });
        }
        let mut clusters: Vec<String> = clusters.into_iter().map(|c| c.to_string()).collect();
        clusters.sort();
        clusters.dedup();
        DriftReport {
            format_version: FORMAT_VERSION,
            desired: desired.into(),
            in_sync: objects.is_empty(),
            clusters,
            objects,
        }
    }

    /// Drifted objects per (cluster, kind); global kinds have cluster `None`.
    pub fn counts(&self) -> BTreeMap<(Option<String>, &'static str), usize> {
        let mut m = BTreeMap::new();
        for c in &self.clusters {
            for k in CLUSTER_KINDS {
                m.insert((Some(c.clone()), k), 0);
            }
        }
        for k in GLOBAL_KINDS {
            m.insert((None, k), 0);
        }
        for o in &self.objects {
            *m.entry((o.cluster.clone(), o.kind)).or_insert(0) += 1;
        }
        m
    }
}

fn shown(v: &Option<String>, field: &str) -> String {
    v.clone().unwrap_or_else(|| fields::unset_label(field).to_string())
}

/// `text`: one line per object, then `N objects drifted from FILE`. Nothing when in sync.
pub fn text(r: &DriftReport, out: &mut dyn Write) -> io::Result<()> {
    if r.in_sync {
        return Ok(());
    }
    for o in &r.objects {
        let what = match o.action {
            Action::Create => "missing in slurmdbd (the desired state has it)".to_string(),
            Action::Delete => "not in the desired state".to_string(),
            Action::Update | Action::Reparent => o
                .fields
                .iter()
                .map(|f| format!("{}: {} -> {}", f.field, shown(&f.current, &f.field), shown(&f.desired, &f.field)))
                .collect::<Vec<_>>()
                .join("; "),
        };
        writeln!(out, "{} {}: {what}", o.action.symbol(), o.address)?;
    }
    let n = r.objects.len();
    writeln!(out, "{n} object{} drifted from {}", if n == 1 { "" } else { "s" }, r.desired)
}

/// `json`: the report itself.
pub fn json(r: &DriftReport, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, r).map_err(io::Error::other)?;
    writeln!(out)
}

/// `csv`: header, then one row per drifted field. A missing or extra object has an `exists`
/// row (`false` -> `true` or `true` -> `false`) and a row per field set on its one side.
pub fn csv(r: &DriftReport, out: &mut dyn Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(["cluster", "object", "field", "current", "desired"]).map_err(io::Error::other)?;
    for o in &r.objects {
        let cluster = o.cluster.as_deref().unwrap_or("");
        let object = format!("{}.{}", o.kind, o.name);
        match o.action {
            Action::Create => w.write_record([cluster, &object, "exists", "false", "true"]),
            Action::Delete => w.write_record([cluster, &object, "exists", "true", "false"]),
            _ => Ok(()),
        }
        .map_err(io::Error::other)?;
        for f in &o.fields {
            w.write_record([
                cluster,
                &object,
                &f.field,
                f.current.as_deref().unwrap_or(""),
                f.desired.as_deref().unwrap_or(""),
            ])
            .map_err(io::Error::other)?;
        }
    }
    w.flush()
}

/// Escape a Prometheus label value (`\`, `"`, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn run_metrics(now_secs: u64, success: bool, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# HELP slurmplan_drift_last_run_timestamp_seconds Unix time of the last slurmplan drift run.")?;
    writeln!(out, "# TYPE slurmplan_drift_last_run_timestamp_seconds gauge")?;
    writeln!(out, "slurmplan_drift_last_run_timestamp_seconds {now_secs}")?;
    writeln!(
        out,
        "# HELP slurmplan_drift_last_run_success 1 if the last slurmplan drift run could compare the states, else 0."
    )?;
    writeln!(out, "# TYPE slurmplan_drift_last_run_success gauge")?;
    writeln!(out, "slurmplan_drift_last_run_success {}", u8::from(success))
}

/// `prometheus`: a node_exporter textfile. Every (cluster, kind) of the desired clusters gets a
/// sample (0 when in sync); global kinds (`qos`, `account_record`) have no `cluster` label.
pub fn prometheus(r: &DriftReport, now_secs: u64, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# HELP slurmplan_drift_objects Objects that differ from the desired state, per cluster and kind.")?;
    writeln!(out, "# TYPE slurmplan_drift_objects gauge")?;
    for ((cluster, kind), n) in r.counts() {
        match cluster {
            Some(c) => writeln!(out, "slurmplan_drift_objects{{cluster=\"{}\",kind=\"{kind}\"}} {n}", label(&c))?,
            None => writeln!(out, "slurmplan_drift_objects{{kind=\"{kind}\"}} {n}")?,
        }
    }
    run_metrics(now_secs, true, out)
}

/// `prometheus` after a failed run: only the run metrics, with success 0.
pub fn prometheus_failure(now_secs: u64, out: &mut dyn Write) -> io::Result<()> {
    run_metrics(now_secs, false, out)
}
