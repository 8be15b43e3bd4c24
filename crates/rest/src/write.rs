//! A plan step's [`Command`] as the slurmrestd calls that do what the sacctmgr command does
//! (data parser v0.0.42, Slurm 24.11). Pure: this module builds [`Call`]s from the command and
//! the state before the step; [`crate::transport::RestTransport::write`] sends them.
//!
//! The endpoints' behaviour, established on real 24.11.5 (docs/testbed.md, "Writes through
//! v0.0.42"), decides the shape of each call:
//! - new accounts and new user associations go through `accounts_association/` and
//!   `users_association/`, whose `association` object takes sacctmgr's own settings
//!   (`qoslevel`, `defaultqos`, `grptres`, ...), as `add account` / `add user` do;
//! - a change to existing associations is a `POST associations/` of whole rows, and slurmdbd
//!   clears every TRES list a row object leaves out. So a change is a read-modify-write
//!   ([`Call::Rows`]): the rows are read first (own values, `Exclude limits from parents`),
//!   must be exactly the rows the step names, and go back with every TRES list they hold, the
//!   step's changes applied (a TRES entry is cleared with a count of -1);
//! - a QoS is read, changed and sent back whole ([`Call::Qos`]): a QoS object without its
//!   flags clears them;
//! - removals are `DELETE associations/` with every filter named (cluster and account always).
//!
//! What slurmrestd cannot say is refused here, before anything is sent ([`Unsupported`]): a QoS
//! delta (`qos=+a`: "Unable to resolve QOS"), a return to the inherited QoS list (`qos=` crashed
//! slurmrestd 24.11.5) or an empty one (`qos: []` changes nothing), `FairShare=parent`, and the
//! removal of a user's association without a partition when the user has partition rows under
//! the same account (no query names "no partition"; the server refuses the ambiguous one).
//!
//! Must not: send anything, print, or take text from a name into a path unencoded.

use serde_json::{Map, Value, json};

use slurmplan_model::{AccountRecord, Fairshare, Name, QosList, State};
use slurmplan_sacctmgr::command::{AssocSet, Command, QosSet, Scalar, TresLimit};
use slurmplan_sacctmgr::load_file;

use crate::render::QOS_FLAGS;

/// Why a step cannot go through slurmrestd (nothing was sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

fn unsupported<T>(s: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(s.into()))
}

/// One association row, by its key. `partition: None` in [`Call::Rows`] for a default move
/// means every partition of (account, user); elsewhere the row without a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowKey {
    pub account: String,
    pub user: String,
    pub partition: Option<String>,
}

/// What [`Call::Rows`] changes on each row it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowChange {
    /// The settings of `modify account` / `modify user`.
    Set(AssocSet),
    /// `parent_account` (an account row).
    Parent(String),
    /// `is_default: true` on every row of the key (all partitions), as
    /// `modify user set defaultaccount=` marks them.
    MakeDefault,
}

/// One request (or, for `Rows` and `Qos`, one read and one write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// POST `body` to `endpoint` (under `/slurmdb/VERSION/`).
    Post { endpoint: &'static str, body: Value },
    /// DELETE `endpoint` with the query `filters` (name, values; each value percent-encoded
    /// when sent).
    Delete { endpoint: &'static str, filters: Vec<(&'static str, Vec<String>)> },
    /// Read the rows of `keys` on `cluster` (own values), check they are exactly those rows,
    /// apply `change` and POST them to `associations/` with every TRES list they hold.
    Rows { cluster: String, keys: Vec<RowKey>, change: RowChange },
    /// DELETE `qos/NAME`.
    DeleteQos { name: String },
    /// Read QoS `name`, apply `set`, POST it back whole to `qos/`.
    Qos { name: String, set: QosSet },
    /// Read account `name`'s record, apply `record`, POST it back to `accounts/`.
    Record { name: String, record: AccountRecord },
}

fn names(v: &[Name]) -> Vec<String> {
    v.iter().map(|n| n.to_string()).collect()
}

/// The calls that do what `cmd` does, `before` being the state the step runs on.
pub fn calls(cmd: &Command, before: &State) -> Result<Vec<Call>, Unsupported> {
    let out = match cmd {
        Command::Load { cluster, accounts, users } => {
            let mut out = Vec::new();
            for c in load_file::expand(cluster, accounts, &[]).iter().chain(&load_user_adds(cluster, users)) {
                out.extend(calls(c, before)?);
            }
            out
        }
        Command::AddQos { names: n, set } => n
            .iter()
            .map(|name| {
                let mut q = json!({"name": name.as_str(), "description": set.description.clone().unwrap_or_else(|| name.to_string())});
                patch_qos(&mut q, set)?;
                Ok(Call::Post { endpoint: "qos/", body: json!({ "qos": [q] }) })
            })
            .collect::<Result<_, Unsupported>>()?,
        Command::ModifyQos { names: n, set } => {
            n.iter().map(|name| Call::Qos { name: name.to_string(), set: set.clone() }).collect()
        }
        Command::DeleteQos { names: n } => n
            .iter()
            .map(|name| Call::DeleteQos { name: name.to_string() })
            .collect(),
        Command::AddAccount { cluster, names: n, parent, record, set } => {
            let mut assoc = rec_set(set)?;
            assoc.insert("parent".into(), json!(parent.as_str()));
            let mut account = Map::new();
            if let Some(d) = &record.description {
                account.insert("description".into(), json!(d));
            }
            if let Some(o) = &record.organization {
                account.insert("organization".into(), json!(o));
            }
            vec![Call::Post {
                endpoint: "accounts_association/",
                body: json!({
                    "association_condition": {"accounts": names(n), "clusters": [cluster.as_str()], "association": assoc},
                    "account": account,
                }),
            }]
        }
        Command::ModifyAccount { cluster, names: n, set } => {
            check_set(set)?;
            let keys = n.iter().map(|a| RowKey { account: a.to_string(), user: String::new(), partition: None }).collect();
            vec![Call::Rows { cluster: cluster.to_string(), keys, change: RowChange::Set(set.clone()) }]
        }
        Command::ModifyAccountRecord { names: n, record, .. } => {
            n.iter().map(|a| Call::Record { name: a.to_string(), record: record.clone() }).collect()
        }
        Command::Reparent { cluster, name, parent } => vec![Call::Rows {
            cluster: cluster.to_string(),
            keys: vec![RowKey { account: name.to_string(), user: String::new(), partition: None }],
            change: RowChange::Parent(parent.to_string()),
        }],
        Command::DeleteAccount { cluster, names: n } => vec![Call::Delete {
            endpoint: "associations/",
            filters: vec![("cluster", vec![cluster.to_string()]), ("account", names(n))],
        }],
        Command::AddUser { cluster, users, account, partition, set, more_accounts, default_account } => {
            let mut cond = Map::new();
            cond.insert("users".into(), json!(names(users)));
            let accounts: Vec<String> = std::iter::once(account).chain(more_accounts).map(|a| a.to_string()).collect();
            cond.insert("accounts".into(), json!(accounts));
            cond.insert("clusters".into(), json!([cluster.as_str()]));
            if let Some(p) = partition {
                cond.insert("partitions".into(), json!([p.as_str()]));
            }
            cond.insert("association".into(), Value::Object(rec_set(set)?));
            let mut user = Map::new();
            if let Some(d) = default_account {
                user.insert("defaultaccount".into(), json!(d.as_str()));
            }
            vec![Call::Post { endpoint: "users_association/", body: json!({"association_condition": cond, "user": user}) }]
        }
        Command::ModifyUser { cluster, users, account, partition, set } => {
            check_set(set)?;
            let keys = users
                .iter()
                .map(|u| RowKey {
                    account: account.to_string(),
                    user: u.to_string(),
                    partition: partition.as_ref().map(|p| p.to_string()),
                })
                .collect();
            vec![Call::Rows { cluster: cluster.to_string(), keys, change: RowChange::Set(set.clone()) }]
        }
        Command::SetDefaultAccount { cluster, users, account } => {
            let keys =
                users.iter().map(|u| RowKey { account: account.to_string(), user: u.to_string(), partition: None }).collect();
            vec![Call::Rows { cluster: cluster.to_string(), keys, change: RowChange::MakeDefault }]
        }
        Command::DeleteUser { cluster, users, account, partition } => {
            let mut filters = vec![
                ("cluster", vec![cluster.to_string()]),
                ("account", vec![account.to_string()]),
                ("user", names(users)),
            ];
            match partition {
                Some(p) => filters.push(("partition", vec![p.to_string()])),
                None => {
                    let c = before.clusters.get(cluster);
                    let with_partitions = users.iter().find(|u| {
                        c.is_some_and(|c| {
                            c.user_accounts(u.as_str()).iter().any(|k| &k.account == account && k.partition.is_some())
                        })
                    });
                    if let Some(u) = with_partitions {
                        return unsupported(format!(
                            "slurmrestd cannot remove only the association of `{u}` under `{account}` on `{cluster}` without a partition: the user has partition associations under the account too, and no query names \"no partition\""
                        ));
                    }
                }
            }
            vec![Call::Delete { endpoint: "associations/", filters }]
        }
        Command::DeleteUserAll { cluster, users, account } => vec![Call::Delete {
            endpoint: "associations/",
            filters: vec![
                ("cluster", vec![cluster.to_string()]),
                ("account", vec![account.to_string()]),
                ("user", names(users)),
            ],
        }],
    };
    Ok(out)
}

/// What slurmrestd cannot write in a change of existing rows.
fn check_set(set: &AssocSet) -> Result<(), Unsupported> {
    match &set.qos {
        None | Some(QosList::Set(_)) => {}
        Some(QosList::Inherit) => {
            return unsupported(
                "slurmrestd cannot return an association to its parent's QoS list (`qos=`; slurmrestd 24.11.5 crashes on it)",
            );
        }
        Some(QosList::Delta { .. }) => {
            return unsupported("slurmrestd cannot write a QoS delta (`qos=+name` / `-name`)");
        }
    }
    if let Some(QosList::Set(s)) = &set.qos
        && s.is_empty()
    {
        return unsupported("slurmrestd cannot write an empty QoS list (an empty list changes nothing)");
    }
    Ok(())
}

/// `FairShare=parent` as a number of shares (SLURMDB_FS_USE_PARENT), in `fairshare` and
/// `shares_raw` alike (verified on 24.11.5).
const FS_USE_PARENT: u32 = 0x7fff_ffff;

/// sacctmgr's keyword of a scalar in `association` objects of `*_association/`.
fn rec_key(s: Scalar) -> &'static str {
    match s {
        Scalar::GrpJobs => "grpjobs",
        Scalar::GrpSubmitJobs => "grpsubmitjobs",
        Scalar::GrpWall => "grpwall",
        Scalar::MaxJobs => "maxjobs",
        Scalar::MaxSubmitJobs => "maxsubmitjobs",
        Scalar::MaxWall => "maxwalldurationperjob",
    }
}

fn rec_tres_key(t: TresLimit) -> &'static str {
    match t {
        TresLimit::GrpTres => "grptres",
        TresLimit::GrpTresMins => "grptresmins",
        TresLimit::MaxTres => "maxtresperjob",
        TresLimit::MaxTresMins => "maxtresminsperjob",
    }
}

/// A TRES name as slurmrestd's (type, name): `cpu` -> (cpu, ""), `gres/gpu` -> (gres, gpu).
fn tres_id(n: &str) -> (&str, &str) {
    n.split_once('/').unwrap_or((n, ""))
}

fn tres_item(n: &str, count: i64) -> Value {
    let (t, name) = tres_id(n);
    json!({"type": t, "name": name, "count": count})
}

fn number(v: Option<u64>) -> Value {
    match v {
        Some(n) => json!({"set": true, "infinite": false, "number": n}),
        None => json!({"set": false, "infinite": true, "number": 0}),
    }
}

/// The most users one `users_association/` call of a load names.
pub const LOAD_USERS_PER_CALL: usize = 500;

/// The new users of a load as `add user` commands of many users each, as sacctmgr would be
/// told them by hand: first every user's row under its DefaultAccount (a new user's first
/// association becomes its default, as in the load file), then the other rows; within each
/// phase the users of equal (account, settings) share a command, in the order their first
/// user comes, at most [`LOAD_USERS_PER_CALL`] users each. A load only holds users that exist
/// nowhere yet, so no user's outcome depends on another's: one call per group instead of one
/// per row (2,000 rows under 100 accounts: 100 calls, not 2,000).
fn load_user_adds(cluster: &Name, users: &[load_file::LoadUser]) -> Vec<Command> {
    let mut out = Vec::new();
    for first in [true, false] {
        let mut groups: Vec<(&Name, &AssocSet, Vec<Name>)> = Vec::new();
        let mut index: std::collections::BTreeMap<(&Name, &AssocSet), usize> = Default::default();
        for u in users {
            // a user has one row per account (a load has no partitions)
            for r in u.rows.iter().filter(|r| (r.account == u.default_account) == first) {
                let i = *index.entry((&r.account, &r.set)).or_insert_with(|| {
                    groups.push((&r.account, &r.set, Vec::new()));
                    groups.len() - 1
                });
                groups[i].2.push(u.name.clone());
            }
        }
        for (account, set, names) in groups {
            for chunk in names.chunks(LOAD_USERS_PER_CALL) {
                out.push(Command::AddUser {
                    cluster: cluster.clone(),
                    users: chunk.to_vec(),
                    account: account.clone(),
                    partition: None,
                    set: set.clone(),
                    more_accounts: Vec::new(),
                    default_account: None,
                });
            }
        }
    }
    out
}

/// The `association` object of a new association (accounts_association/, users_association/):
/// what the settings set. A new association has nothing to clear, and inherits its QoS
/// unless given a list.
fn rec_set(set: &AssocSet) -> Result<Map<String, Value>, Unsupported> {
    check_set(set)?;
    let mut m = Map::new();
    match set.fairshare {
        Some(Some(Fairshare::Shares(n))) => {
            m.insert("fairshare".into(), json!(n));
        }
        Some(Some(Fairshare::Parent)) => {
            m.insert("fairshare".into(), json!(FS_USE_PARENT));
        }
        Some(None) | None => {}
    }
    for (s, v) in &set.scalars {
        if let Some(n) = v {
            m.insert(rec_key(*s).into(), number(Some(*n)));
        }
    }
    for (t, entries) in &set.tres {
        let items: Vec<Value> = entries.iter().filter_map(|(n, v)| v.map(|c| tres_item(n, c as i64))).collect();
        if !items.is_empty() {
            m.insert(rec_tres_key(*t).into(), Value::Array(items));
        }
    }
    if let Some(QosList::Set(q)) = &set.qos {
        m.insert("qoslevel".into(), json!(q.iter().map(Name::as_str).collect::<Vec<_>>()));
    }
    if let Some(Some(d)) = &set.default_qos {
        m.insert("defaultqos".into(), json!(d.as_str()));
    }
    Ok(m)
}

/// Where an association object (`associations/`) holds a scalar limit.
pub fn assoc_scalar_path(s: Scalar) -> &'static [&'static str] {
    match s {
        Scalar::GrpJobs => &["max", "jobs", "per", "count"],
        Scalar::GrpSubmitJobs => &["max", "jobs", "per", "submitted"],
        Scalar::GrpWall => &["max", "per", "account", "wall_clock"],
        Scalar::MaxJobs => &["max", "jobs", "active"],
        Scalar::MaxSubmitJobs => &["max", "jobs", "total"],
        Scalar::MaxWall => &["max", "jobs", "per", "wall_clock"],
    }
}

/// Where an association object holds a TRES list.
pub fn assoc_tres_path(t: TresLimit) -> &'static [&'static str] {
    match t {
        TresLimit::GrpTres => &["max", "tres", "total"],
        TresLimit::GrpTresMins => &["max", "tres", "group", "minutes"],
        TresLimit::MaxTres => &["max", "tres", "per", "job"],
        TresLimit::MaxTresMins => &["max", "tres", "minutes", "per", "job"],
    }
}

/// Every TRES list an association object can hold (those slurmplan models and those it
/// does not: all go back on a write, or slurmdbd clears them).
pub const ASSOC_TRES_LISTS: &[&[&str]] = &[
    &["max", "tres", "total"],
    &["max", "tres", "group", "minutes"],
    &["max", "tres", "group", "active"],
    &["max", "tres", "minutes", "total"],
    &["max", "tres", "minutes", "per", "job"],
    &["max", "tres", "per", "job"],
    &["max", "tres", "per", "node"],
];

/// The value at `path` in `v`, made (as objects) where missing.
fn slot<'v>(v: &'v mut Value, path: &[&str]) -> &'v mut Value {
    let mut cur = v;
    for p in path {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur.as_object_mut().expect("made an object above").entry(p.to_string()).or_insert(Value::Null);
    }
    cur
}

/// The value at `path` in `v`, if there.
pub fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |cur, p| cur.get(p))
}

/// One change to a JSON object (an association row, a QoS, an account record): the one
/// mechanism behind [`changed_row`], [`patch_qos`] and [`patch_record`], and behind the jq
/// program of the `--format script` form ([`JQ_OPS`]), which applies the same list to what the
/// script reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Put `value` at `path` (objects made where missing).
    Set { path: Vec<&'static str>, value: Value },
    /// In the TRES list at `path`: each entry's count set, a count of -1 clearing an entry
    /// present (an absent one is not added), a new entry added.
    Tres { path: Vec<&'static str>, entries: Vec<Value> },
}

impl Op {
    /// The op as the jq program takes it: `{"set": PATH, "value": V}` or `{"tres": PATH,
    /// "entries": [...]}`.
    pub fn json(&self) -> Value {
        match self {
            Op::Set { path, value } => json!({"set": path, "value": value}),
            Op::Tres { path, entries } => json!({"tres": path, "entries": entries}),
        }
    }
}

fn set_op(path: &[&'static str], value: Value) -> Op {
    Op::Set { path: path.to_vec(), value }
}

fn tres_op(path: &[&'static str], entries: &std::collections::BTreeMap<String, Option<u64>>) -> Op {
    let entries = entries.iter().map(|(n, v)| tres_item(n, v.map_or(-1, |c| c as i64))).collect();
    Op::Tres { path: path.to_vec(), entries }
}

/// Apply `ops` to `v`, in order.
pub fn apply_ops(v: &mut Value, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Set { path, value } => *slot(v, path) = value.clone(),
            Op::Tres { path, entries } => {
                let list = slot(v, path);
                if !list.is_array() {
                    *list = Value::Array(Vec::new());
                }
                let items = list.as_array_mut().expect("made an array above");
                for e in entries {
                    let same = |i: &Value| {
                        i.get("type") == e.get("type")
                            && i.get("name").and_then(Value::as_str).unwrap_or("")
                                == e.get("name").and_then(Value::as_str).unwrap_or("")
                    };
                    let count = e.get("count").cloned().unwrap_or(json!(-1));
                    match items.iter_mut().find(|i| same(i)) {
                        Some(i) => i["count"] = count,
                        None if count != json!(-1) => items.push(e.clone()),
                        None => {}
                    }
                }
            }
        }
    }
}

/// The jq program the script form applies ops with (`apply($ops)`), the same rules as
/// [`apply_ops`]; `rows`, `one_qos` and `one_account` pick what a read-modify-write reads,
/// refusing (jq `error`) when it is not exactly what the plan names.
pub const JQ_OPS: &str = r#"def tres($e): reduce $e[] as $x ((. // []);
  if any(.[]; .type == $x.type and ((.name // "") == $x.name))
  then map(if .type == $x.type and ((.name // "") == $x.name) then .count = $x.count else . end)
  elif $x.count == -1 then . else . + [$x] end);
def apply($ops): reduce $ops[] as $op (.;
  if $op.set != null then setpath($op.set; $op.value)
  else setpath($op.tres; (getpath($op.tres) | tres($op.entries))) end);
def base($lists): . as $r
  | reduce $lists[] as $p ({account: $r.account, cluster: $r.cluster, user: $r.user, partition: $r.partition};
      setpath($p; ($r | getpath($p)) // []));
def rows($cluster; $keys; $any; $lists; $ops):
  [ .associations as $all | $keys[] as $k
    | [ $all[] | select(.cluster == $cluster and .account == $k.account and .user == $k.user
          and ($any or .partition == ($k.partition // ""))) ] as $found
    | if ($found | length) == 1 or ($any and ($found | length) >= 1) then $found[]
      else error("\($found | length) association(s) of account \($k.account) user \($k.user) on \($cluster), where the plan expects \(if $any then "at least one" else "one" end): the state changed since planning") end
    | base($lists) | apply($ops) ] | {associations: .};
def one_qos($name; $ops): [ .qos[] | select(.name == $name) ]
  | if length == 1 then {qos: [.[0] | del(.usage_factor, .usage_threshold, .limits.factor) | apply($ops)]} else error("the read of QoS \($name) brought \(length) objects, where the plan expects one") end;
def one_account($name; $ops): [ .accounts[] | select(.name == $name) ]
  | if length == 1 then {accounts: [.[0] | {name, description: (.description // ""), organization: (.organization // "")} | apply($ops)]}
    else error("the read of account \($name) brought \(length) objects, where the plan expects one") end;
"#;

/// The ops of a row change: `qos: []` first (a row object without `qos` gets its effective
/// list written as its own: an inheriting row would stop inheriting; 24.11.5), then the
/// change.
pub fn row_ops(change: &RowChange) -> Vec<Op> {
    let mut ops = vec![set_op(&["qos"], json!([]))];
    match change {
        RowChange::Set(set) => {
            match set.fairshare {
                Some(Some(Fairshare::Shares(n))) => ops.push(set_op(&["shares_raw"], json!(n))),
                Some(Some(Fairshare::Parent)) => ops.push(set_op(&["shares_raw"], json!(FS_USE_PARENT))),
                Some(None) => ops.push(set_op(&["shares_raw"], json!(1))),
                None => {}
            }
            for (s, v) in &set.scalars {
                ops.push(set_op(assoc_scalar_path(*s), number(*v)));
            }
            for (t, entries) in &set.tres {
                ops.push(tres_op(assoc_tres_path(*t), entries));
            }
            if let Some(QosList::Set(q)) = &set.qos {
                ops.push(set_op(&["qos"], json!(q.iter().map(Name::as_str).collect::<Vec<_>>())));
            }
            if let Some(d) = &set.default_qos {
                ops.push(set_op(&["default", "qos"], json!(d.as_ref().map_or("", Name::as_str))));
            }
        }
        RowChange::Parent(p) => ops.push(set_op(&["parent_account"], json!(p))),
        RowChange::MakeDefault => ops.push(set_op(&["is_default"], json!(true))),
    }
    ops
}

/// The `fields` of an object as read (`""` for one it lacks), the start of what goes back.
fn picked(v: &Value, fields: &[&str]) -> Value {
    Value::Object(fields.iter().map(|f| (f.to_string(), v.get(*f).cloned().unwrap_or(json!("")))).collect())
}

/// The object POSTed back for one association row read as `row`: its key, every TRES list
/// it holds, and [`row_ops`] applied.
pub fn changed_row(row: &Value, change: &RowChange) -> Value {
    let mut out = picked(row, &["account", "cluster", "user", "partition"]);
    for path in ASSOC_TRES_LISTS {
        let list = at(row, path).cloned().unwrap_or(Value::Array(Vec::new()));
        *slot(&mut out, path) = list;
    }
    apply_ops(&mut out, &row_ops(change));
    out
}

/// slurmrestd's name of a QoS flag sacctmgr spells `word` (either spelling accepted).
fn rest_flag(word: &str) -> Result<&'static str, Unsupported> {
    QOS_FLAGS
        .iter()
        .find(|(rest, sacctmgr)| sacctmgr.eq_ignore_ascii_case(word) || rest.eq_ignore_ascii_case(word))
        .map(|(rest, _)| *rest)
        .ok_or_else(|| Unsupported(format!("slurmplan does not know slurmrestd's name of the QoS flag `{word}`")))
}

/// The ops of a QoS change.
pub fn qos_ops(set: &QosSet) -> Result<Vec<Op>, Unsupported> {
    let mut ops = Vec::new();
    if let Some(flags) = &set.flags {
        let f: Vec<&str> = flags.iter().map(|w| rest_flag(w)).collect::<Result<_, _>>()?;
        ops.push(set_op(&["flags"], json!(f)));
    }
    if !set.grp_tres.is_empty() {
        ops.push(tres_op(&["limits", "max", "tres", "total"], &set.grp_tres));
    }
    if !set.grp_tres_mins.is_empty() {
        ops.push(tres_op(&["limits", "max", "tres", "minutes", "total"], &set.grp_tres_mins));
    }
    if let Some(v) = set.grp_submit_jobs {
        ops.push(set_op(&["limits", "max", "jobs", "count"], number(v)));
    }
    if let Some(v) = set.max_wall {
        ops.push(set_op(&["limits", "max", "wall_clock", "per", "job"], number(v)));
    }
    if let Some(d) = &set.description {
        ops.push(set_op(&["description"], json!(d)));
    }
    Ok(ops)
}

/// Apply a QoS change to a QoS object (as read, or a new one). The numbers slurmrestd takes
/// as doubles (`usage_factor`, `usage_threshold`, `limits.factor`) are left out of what goes
/// back: a QoS object without them keeps them (24.11.5), and jq, which the script form uses,
/// prints 1.0 as 1, which slurmrestd answers with a warning.
pub fn patch_qos(q: &mut Value, set: &QosSet) -> Result<(), Unsupported> {
    if let Some(o) = q.as_object_mut() {
        o.remove("usage_factor");
        o.remove("usage_threshold");
    }
    if let Some(o) = q.get_mut("limits").and_then(Value::as_object_mut) {
        o.remove("factor");
    }
    apply_ops(q, &qos_ops(set)?);
    Ok(())
}

/// The ops of an account record change.
pub fn record_ops(record: &AccountRecord) -> Vec<Op> {
    let mut ops = Vec::new();
    if let Some(d) = &record.description {
        ops.push(set_op(&["description"], json!(d)));
    }
    if let Some(o) = &record.organization {
        ops.push(set_op(&["organization"], json!(o)));
    }
    ops
}

/// Apply a record change to an account object as read.
pub fn patch_record(a: &Value, record: &AccountRecord) -> Value {
    let mut out = picked(a, &["name", "description", "organization"]);
    apply_ops(&mut out, &record_ops(record));
    out
}

impl Call {
    /// The call as a reviewer reads it: method, path under `/slurmdb/VERSION/`, body (compact
    /// JSON). A read-modify-write shows its read and what it changes on each object read. No
    /// token: calls never hold one.
    pub fn shown(&self) -> String {
        let skeleton = |account: &str, user: &str, partition: &str| json!({"account": account, "cluster": "", "user": user, "partition": partition});
        match self {
            Call::Post { endpoint, body } => format!("POST {endpoint} {body}"),
            Call::Delete { endpoint, filters } => {
                let q: Vec<String> = filters.iter().map(|(n, v)| format!("{n}={}", v.join(","))).collect();
                format!("DELETE {endpoint}?{}", q.join("&"))
            }
            Call::DeleteQos { name } => format!("DELETE qos/{name}"),
            Call::Rows { cluster, keys, change } => {
                let mut change_only = changed_row(&skeleton("", "", ""), change);
                if let Some(o) = change_only.as_object_mut() {
                    for k in ["account", "cluster", "user", "partition"] {
                        o.remove(k);
                    }
                    if matches!(change, RowChange::Set(_)) {
                        // the lists as read go back; show only the entries the step changes
                        prune_empty(o);
                    }
                }
                let rows: Vec<String> = keys
                    .iter()
                    .map(|k| {
                        let p = match (&k.partition, change) {
                            (_, RowChange::MakeDefault) => " (every partition)".to_string(),
                            (Some(p), _) => format!(" partition {p}"),
                            (None, _) => String::new(),
                        };
                        if k.user.is_empty() {
                            format!("account {}{p}", k.account)
                        } else {
                            format!("{}@{}{p}", k.user, k.account)
                        }
                    })
                    .collect();
                format!(
                    "GET associations/ of {} on {cluster} (own values), then POST associations/ each as read (every TRES list kept) with {change_only}",
                    rows.join(", ")
                )
            }
            Call::Qos { name, set } => {
                let mut q = json!({});
                let _ = patch_qos(&mut q, set);
                format!("GET qos/{name}, then POST qos/ it as read with {q}")
            }
            Call::Record { name, record } => {
                let mut a = patch_record(&json!({}), record);
                if let Some(o) = a.as_object_mut() {
                    o.remove("name");
                    if record.description.is_none() {
                        o.remove("description");
                    }
                    if record.organization.is_none() {
                        o.remove("organization");
                    }
                }
                format!("GET account/{name}, then POST accounts/ it as read with {a}")
            }
        }
    }
}

/// Drop empty arrays and objects left empty by that (the skeleton's unchanged TRES lists).
fn prune_empty(o: &mut Map<String, Value>) {
    let keys: Vec<String> = o.keys().cloned().collect();
    for k in keys {
        if k == "qos" {
            continue;
        }
        let empty = match o.get_mut(&k) {
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(inner)) => {
                prune_empty(inner);
                inner.is_empty()
            }
            _ => false,
        };
        if empty {
            o.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurmplan_model::{ClusterState, NameKind, UserKey};
    use slurmplan_sacctmgr::load_file::{LoadAccount, LoadRow, LoadUser};
    use std::collections::BTreeMap;

    fn n(s: &str) -> Name {
        Name::keep_case(s, NameKind::Account).unwrap()
    }

    fn state_with(user_rows: &[(&str, &str, Option<&str>)]) -> State {
        let mut c = ClusterState::with_root();
        for (account, user, partition) in user_rows {
            if !c.accounts.contains(account) {
                c.accounts.insert(n(account), "root", Default::default()).unwrap();
            }
            let key = UserKey { account: n(account), user: n(user), partition: partition.map(n) };
            c.users.insert(key, Default::default());
        }
        State { clusters: [(n("c1"), c)].into(), ..Default::default() }
    }

    fn post(call: &Call) -> (&'static str, &Value) {
        match call {
            Call::Post { endpoint, body } => (endpoint, body),
            other => panic!("not a POST: {other:?}"),
        }
    }

    #[test]
    fn adds_go_through_the_association_endpoints_with_sacctmgrs_settings() {
        let mut set = AssocSet {
            qos: Some(QosList::Set([n("normal"), n("gpu")].into())),
            default_qos: Some(Some(n("normal"))),
            fairshare: Some(Some(Fairshare::Parent)),
            ..Default::default()
        };
        set.scalars.insert(Scalar::MaxWall, Some(60));
        set.tres
            .insert(TresLimit::GrpTresMins, BTreeMap::from([("cpu".into(), Some(10)), ("gres/gpu".into(), Some(2))]));
        let add = Command::AddUser {
            cluster: n("c1"),
            users: vec![n("u1"), n("u2")],
            account: n("a1"),
            partition: Some(n("gpu")),
            set: set.clone(),
            more_accounts: vec![n("a2")],
            default_account: Some(n("a1")),
        };
        let calls = calls(&add, &State::default()).unwrap();
        let (endpoint, body) = post(&calls[0]);
        assert_eq!(endpoint, "users_association/");
        assert_eq!(
            body,
            &json!({
                "association_condition": {
                    "users": ["u1", "u2"], "accounts": ["a1", "a2"], "clusters": ["c1"], "partitions": ["gpu"],
                    "association": {
                        "qoslevel": ["gpu", "normal"], "defaultqos": "normal", "fairshare": 0x7fff_ffff,
                        "maxwalldurationperjob": {"set": true, "infinite": false, "number": 60},
                        "grptresmins": [{"type": "cpu", "name": "", "count": 10}, {"type": "gres", "name": "gpu", "count": 2}],
                    },
                },
                "user": {"defaultaccount": "a1"},
            })
        );
        let acct = Command::AddAccount {
            cluster: n("c1"),
            names: vec![n("a3")],
            parent: n("a1"),
            record: AccountRecord { description: Some("d".into()), organization: None },
            set: AssocSet::default(),
        };
        let calls = super::calls(&acct, &State::default()).unwrap();
        let (endpoint, body) = post(&calls[0]);
        assert_eq!(endpoint, "accounts_association/");
        assert_eq!(
            body,
            &json!({"association_condition": {"accounts": ["a3"], "clusters": ["c1"], "association": {"parent": "a1"}}, "account": {"description": "d"}})
        );
    }

    #[test]
    fn what_slurmrestd_cannot_write_is_refused_before_sending() {
        let st = State::default();
        let modify = |qos| Command::ModifyAccount {
            cluster: n("c1"),
            names: vec![n("a1")],
            set: AssocSet { qos: Some(qos), ..Default::default() },
        };
        assert!(calls(&modify(QosList::Inherit), &st).unwrap_err().0.contains("parent's QoS list"));
        let delta = QosList::Delta { add: [n("q")].into(), remove: Default::default() };
        assert!(calls(&modify(delta), &st).unwrap_err().0.contains("delta"));
        assert!(calls(&modify(QosList::Set(Default::default())), &st).unwrap_err().0.contains("empty"));
        assert!(calls(&modify(QosList::Set([n("q")].into())), &st).is_ok());
        // the row without a partition cannot be named apart from the user's partition rows
        let st = state_with(&[("a1", "u1", None), ("a1", "u1", Some("gpu")), ("a1", "u2", None)]);
        let del = |users: &[&str]| Command::DeleteUser {
            cluster: n("c1"),
            users: users.iter().map(|u| n(u)).collect(),
            account: n("a1"),
            partition: None,
        };
        assert!(calls(&del(&["u2", "u1"]), &st).unwrap_err().0.contains("`u1` under `a1`"));
        assert_eq!(
            calls(&del(&["u2"]), &st).unwrap(),
            vec![Call::Delete {
                endpoint: "associations/",
                filters: vec![
                    ("cluster", vec!["c1".into()]),
                    ("account", vec!["a1".into()]),
                    ("user", vec!["u2".into()])
                ],
            }]
        );
    }

    #[test]
    fn a_changed_row_keeps_every_tres_list_and_the_stored_qos() {
        let row = json!({
            "account": "a1", "cluster": "c1", "user": "u1", "partition": "", "qos": ["normal"], "shares_raw": 5,
            "max": {"tres": {
                "total": [{"type": "cpu", "name": "", "id": 1, "count": 8}, {"type": "mem", "name": "", "id": 2, "count": 100}],
                "group": {"minutes": [], "active": [{"type": "cpu", "name": "", "id": 1, "count": 7}]},
                "minutes": {"total": [], "per": {"job": []}},
                "per": {"job": [], "node": [{"type": "cpu", "name": "", "id": 1, "count": 2}]},
            }},
        });
        let mut set = AssocSet { default_qos: Some(None), fairshare: Some(None), ..Default::default() };
        set.tres.insert(TresLimit::GrpTres, BTreeMap::from([("mem".into(), None), ("gres/gpu".into(), Some(4))]));
        set.scalars.insert(Scalar::GrpJobs, None);
        let out = changed_row(&row, &RowChange::Set(set));
        assert_eq!(
            out,
            json!({
                "account": "a1", "cluster": "c1", "user": "u1", "partition": "",
                "qos": [], "shares_raw": 1, "default": {"qos": ""},
                "max": {
                    "jobs": {"per": {"count": {"set": false, "infinite": true, "number": 0}}},
                    "tres": {
                        "total": [
                            {"type": "cpu", "name": "", "id": 1, "count": 8},
                            {"type": "mem", "name": "", "id": 2, "count": -1},
                            {"type": "gres", "name": "gpu", "count": 4},
                        ],
                        "group": {"minutes": [], "active": [{"type": "cpu", "name": "", "id": 1, "count": 7}]},
                        "minutes": {"total": [], "per": {"job": []}},
                        "per": {"job": [], "node": [{"type": "cpu", "name": "", "id": 1, "count": 2}]},
                    },
                },
            })
        );
        let set_qos = AssocSet { qos: Some(QosList::Set([n("gpu")].into())), ..Default::default() };
        assert_eq!(changed_row(&row, &RowChange::Set(set_qos))["qos"], json!(["gpu"]));
        assert_eq!(changed_row(&row, &RowChange::MakeDefault)["is_default"], json!(true));
        assert_eq!(changed_row(&row, &RowChange::Parent("p".into()))["parent_account"], json!("p"));
    }

    #[test]
    fn a_qos_change_sets_its_flags_by_slurmrestds_names_and_keeps_the_rest() {
        let mut q = json!({"name": "q", "flags": ["NO_DECAY"], "priority": {"set": true, "number": 5},
            "limits": {"max": {"tres": {"total": [{"type": "cpu", "name": "", "count": 5}]}}}});
        let set = QosSet {
            flags: Some(["DenyOnLimit".to_string()].into()),
            grp_tres: BTreeMap::from([("cpu".into(), None)]),
            max_wall: Some(Some(60)),
            ..Default::default()
        };
        patch_qos(&mut q, &set).unwrap();
        assert_eq!(q["flags"], json!(["DENY_LIMIT"]));
        assert_eq!(q["priority"]["number"], json!(5));
        assert_eq!(q["limits"]["max"]["tres"]["total"][0]["count"], json!(-1));
        assert_eq!(q["limits"]["max"]["wall_clock"]["per"]["job"]["number"], json!(60));
        let unknown = QosSet { flags: Some(["NoSuchFlag".to_string()].into()), ..Default::default() };
        assert!(patch_qos(&mut q, &unknown).is_err());
    }

    #[test]
    fn a_load_is_the_calls_of_the_commands_it_stands_for() {
        let load = Command::Load {
            cluster: n("c1"),
            accounts: vec![LoadAccount {
                name: n("a1"),
                parent: n("root"),
                description: "d".into(),
                organization: "o".into(),
                set: AssocSet::default(),
            }],
            users: vec![LoadUser {
                name: n("u1"),
                default_account: n("a1"),
                rows: vec![LoadRow { account: n("a1"), set: AssocSet::default() }],
            }],
        };
        let got: Vec<&str> = calls(&load, &State::default()).unwrap().iter().map(|c| post(c).0).collect();
        assert_eq!(got, vec!["accounts_association/", "users_association/"]);
    }

    #[test]
    fn a_loads_users_are_added_in_groups_defaults_first() {
        let limited = AssocSet { fairshare: Some(Some(Fairshare::Shares(5))), ..Default::default() };
        let row = |a: &str, set: &AssocSet| LoadRow { account: n(a), set: set.clone() };
        let user = |name: &str, default: &str, rows: Vec<LoadRow>| LoadUser {
            name: n(name),
            default_account: n(default),
            rows,
        };
        let plain = AssocSet::default();
        let mut users = vec![
            // u1's default row comes second in its rows: still in the first phase
            user("u1", "a1", vec![row("a2", &plain), row("a1", &plain)]),
            user("u2", "a1", vec![row("a1", &plain)]),
            user("u3", "a1", vec![row("a1", &limited)]),
            user("u4", "a2", vec![row("a2", &plain), row("a1", &plain)]),
        ];
        for i in 0..=LOAD_USERS_PER_CALL {
            users.push(user(&format!("m{i}"), "a3", vec![row("a3", &plain)]));
        }
        let load = Command::Load { cluster: n("c1"), accounts: vec![], users };
        let got: Vec<(Vec<String>, String, Option<i64>)> = calls(&load, &State::default())
            .unwrap()
            .iter()
            .map(|c| {
                let cond = &post(c).1["association_condition"];
                let users: Vec<String> =
                    cond["users"].as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()).collect();
                let shown = if users.len() > 3 { vec![format!("{} users", users.len())] } else { users };
                (shown, cond["accounts"][0].as_str().unwrap().to_string(), cond["association"]["fairshare"].as_i64())
            })
            .collect();
        let v = |u: &[&str], a: &str, f: Option<i64>| {
            (u.iter().map(|s| s.to_string()).collect::<Vec<_>>(), a.to_string(), f)
        };
        assert_eq!(
            got,
            vec![
                v(&["u1", "u2"], "a1", None),
                v(&["u3"], "a1", Some(5)),
                v(&["u4"], "a2", None),
                v(&["500 users"], "a3", None),
                v(&["m500"], "a3", None),
                v(&["u1"], "a2", None),
                v(&["u4"], "a1", None),
            ]
        );
    }
}
