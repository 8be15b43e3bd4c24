//! The fields of each changed object, before and after, shared by `text` and `diff`.
//!
//! One place decides field names (sacctmgr keywords for limits), their order and how values
//! look, so the two views never disagree. Pure.

use slurmplan_diff::{Action, Change};
use slurmplan_model::values::tres_to_arg;
use slurmplan_model::{AccountRecord, Assoc, Fairshare, Name, Qos, QosList, Tres};
use slurmplan_sacctmgr::command::{Scalar, TresLimit};
use slurmplan_sacctmgr::parse::format_duration;

/// A field value: free text (quoted in `text`) or a number-like word (shown bare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Text(String),
    Bare(String),
}

impl Value {
    /// As shown in the `text` format.
    pub(crate) fn quoted(&self) -> String {
        match self {
            Value::Text(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
            Value::Bare(s) => s.clone(),
        }
    }
    /// As shown in the `diff` format.
    pub(crate) fn raw(&self) -> &str {
        match self {
            Value::Text(s) | Value::Bare(s) => s,
        }
    }
}

/// One field of an object; `None` = unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub name: &'static str,
    pub value: Option<Value>,
}

/// What an unset field is shown as.
pub(crate) fn unset_label(name: &str) -> &'static str {
    if name == "qos" { "(inherit)" } else { "(unset)" }
}

fn text(s: impl Into<String>) -> Option<Value> {
    Some(Value::Text(s.into()))
}

fn name(n: &Name) -> Option<Value> {
    text(n.as_str())
}

fn tres(t: &Tres) -> Option<Value> {
    (!t.is_empty()).then(|| Value::Text(tres_to_arg(t)))
}

/// Minutes with the sacctmgr form: `90 (01:30:00)`.
fn minutes(m: Option<u64>) -> Option<Value> {
    m.map(|m| Value::Bare(format!("{m} ({})", format_duration(m))))
}

fn number(n: Option<u64>) -> Option<Value> {
    n.map(|n| Value::Bare(n.to_string()))
}

fn fairshare(f: Option<Fairshare>) -> Option<Value> {
    f.map(|f| match f {
        Fairshare::Shares(n) => Value::Bare(n.to_string()),
        Fairshare::Parent => Value::Text("parent".into()),
    })
}

/// Every field of an association, in a fixed order (unset ones included).
pub(crate) fn assoc_fields(a: &Assoc) -> Vec<Field> {
    let l = &a.limits;
    let mut v = vec![
        Field { name: "fairshare", value: fairshare(l.fairshare) },
        Field {
            name: "qos",
            value: match &a.qos {
                QosList::Inherit => None,
                q => text(q.display()),
            },
        },
        Field { name: "default_qos", value: a.default_qos.as_ref().and_then(name) },
    ];
    // sacctmgr's own order of the keywords: Grp*, then Max*, scalars and TRES interleaved.
    let order: [(&'static str, Option<Value>); 10] = [
        (Scalar::GrpJobs.keyword(), number(l.grp_jobs)),
        (Scalar::GrpSubmitJobs.keyword(), number(l.grp_submit_jobs)),
        (TresLimit::GrpTres.keyword(), tres(&l.grp_tres)),
        (TresLimit::GrpTresMins.keyword(), tres(&l.grp_tres_mins)),
        (Scalar::GrpWall.keyword(), minutes(l.grp_wall)),
        (Scalar::MaxJobs.keyword(), number(l.max_jobs)),
        (Scalar::MaxSubmitJobs.keyword(), number(l.max_submit_jobs)),
        (TresLimit::MaxTres.keyword(), tres(&l.max_tres)),
        (TresLimit::MaxTresMins.keyword(), tres(&l.max_tres_mins)),
        (Scalar::MaxWall.keyword(), minutes(l.max_wall)),
    ];
    v.extend(order.into_iter().map(|(name, value)| Field { name, value }));
    v
}

pub(crate) fn record_fields(r: &AccountRecord) -> Vec<Field> {
    vec![
        Field { name: "description", value: r.description.clone().and_then(text) },
        Field { name: "organization", value: r.organization.clone().and_then(text) },
    ]
}

pub(crate) fn qos_fields(q: &Qos) -> Vec<Field> {
    let flags: Vec<&str> = q.flags.iter().map(String::as_str).collect();
    vec![
        Field { name: "description", value: q.description.clone().and_then(text) },
        Field { name: "flags", value: (!flags.is_empty()).then(|| Value::Text(flags.join(","))) },
        Field { name: "GrpTRES", value: tres(&q.grp_tres) },
        Field { name: "GrpTRESMins", value: tres(&q.grp_tres_mins) },
        Field { name: "GrpSubmitJobs", value: number(q.grp_submit_jobs) },
        Field { name: "MaxWall", value: minutes(q.max_wall) },
    ]
}

/// One field of a changed object: its value before and after (`None` = unset / absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldChange {
    pub name: &'static str,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// A changed object as the views show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Object {
    pub action: Action,
    /// `account`, `user_association`, `qos`, `account_record`, `default_account`.
    pub kind: &'static str,
    pub name: String,
    pub cluster: Option<Name>,
    /// Every field set on either side (unchanged ones included), in display order.
    pub fields: Vec<FieldChange>,
}

impl Object {
    /// The fields a view lists: all set fields for creates and deletes, changed ones otherwise.
    pub(crate) fn shown_fields(&self) -> Vec<&FieldChange> {
        match self.action {
            Action::Create | Action::Delete => self.fields.iter().collect(),
            Action::Update | Action::Reparent => self.fields.iter().filter(|f| f.before != f.after).collect(),
        }
    }
}

/// Pair two field lists of the same shape, dropping fields unset on both sides.
fn pair(before: Vec<Field>, after: Vec<Field>) -> Vec<FieldChange> {
    before
        .into_iter()
        .zip(after)
        .filter(|(b, a)| b.value.is_some() || a.value.is_some())
        .map(|(b, a)| FieldChange { name: b.name, before: b.value, after: a.value })
        .collect()
}

fn only_after(after: Vec<Field>) -> Vec<FieldChange> {
    after
        .into_iter()
        .filter_map(|a| a.value.map(|v| FieldChange { name: a.name, before: None, after: Some(v) }))
        .collect()
}

fn only_before(before: Vec<Field>) -> Vec<FieldChange> {
    before
        .into_iter()
        .filter_map(|b| b.value.map(|v| FieldChange { name: b.name, before: Some(v), after: None }))
        .collect()
}

/// The view of one change.
pub(crate) fn object(change: &Change) -> Object {
    let (kind, label) = change.object();
    let fields = match change {
        Change::QosCreate { qos, .. } => only_after(qos_fields(qos)),
        Change::QosUpdate { from, to, .. } => pair(qos_fields(from), qos_fields(to)),
        Change::QosDelete { qos, .. } => only_before(qos_fields(qos)),
        Change::AccountCreate { parent, assoc, record, .. } => {
            let mut f = vec![Field { name: "parent", value: name(parent) }];
            f.extend(record_fields(record));
            f.extend(assoc_fields(assoc));
            only_after(f)
        }
        Change::AccountReparent { from, to, .. } => {
            vec![FieldChange { name: "parent", before: name(from), after: name(to) }]
        }
        Change::AccountUpdate { from, to, .. } => pair(assoc_fields(from), assoc_fields(to)),
        Change::AccountRecordUpdate { from, to, .. } => pair(record_fields(from), record_fields(to)),
        Change::AccountDelete { parent, assoc, .. } => {
            let mut f = vec![Field { name: "parent", value: name(parent) }];
            f.extend(assoc_fields(assoc));
            only_before(f)
        }
        Change::UserCreate { assoc, .. } => only_after(assoc_fields(assoc)),
        Change::UserUpdate { from, to, .. } => pair(assoc_fields(from), assoc_fields(to)),
        Change::UserDelete { assoc, .. } => only_before(assoc_fields(assoc)),
        Change::DefaultAccount { from, to, .. } => {
            vec![FieldChange { name: "account", before: from.as_ref().and_then(name), after: name(to) }]
        }
    };
    Object { action: change.action(), kind, name: label, cluster: change.cluster().cloned(), fields }
}
