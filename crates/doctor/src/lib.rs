//! `doctor` — find what is broken in an accounting state, without any desired file,
//! and compute the repaired state for the DefaultAccount problems.
//!
//! Every finding has a stable `code`, the object's address (the same addresses as plans use),
//! what is wrong, why it hurts and the fix. Codes:
//!
//! | code | object | meaning |
//! |---|---|---|
//! | `dangling-default` | `default_account.C.U` | U has associations on C but no DefaultAccount |
//! | `default-account-missing` | `default_account.C.U` | U's DefaultAccount on C names an account that does not exist there |
//! | `default-not-associated` | `default_account.C.U` | U's DefaultAccount on C is an account U is no longer associated with |
//! | `default-without-association` | `default_account.C.U` | U has a DefaultAccount on C but no association left there |
//! | `default-qos-outside` | `account.C.A` / `user_association.C.U@A` | effective DefaultQOS not in the effective QoS list |
//! | `missing-qos` | `account.C.A` / `user_association.C.U@A` | the association names QoS that do not exist |
//! | `orphan-account` | `account_record.A` | an account record with no association on any cluster |
//!
//! User associations under an account that has no association on that cluster (but exists on
//! others) cannot occur in a [`State`]: the snapshot parser refuses them with file:line.
//!
//! Repair rule for the first three codes (see [`repair`]): the DefaultAccount moves to the
//! fallback account when the user is associated with it on that cluster, else to the user's
//! first remaining association by account name. Users with no association left are reported,
//! never given an invented association.
//!
//! Repair rule for `default-qos-outside` (see [`repair_default_qos`]), accounts top-down, then
//! users, each judged in the state repaired so far: the association's own DefaultQOS is
//! cleared when the one it would then inherit is inside its list (or there is none), else its
//! DefaultQOS becomes the first QoS of its list (by name). An association whose list is empty
//! is not repaired. Every finding says whether the repair plan fixes it, and if not, why not.
//! Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use serde::Serialize;

use slurmplan_model::user_key_label;
use slurmplan_model::{Assoc, ClusterState, InOrder, Name, QosList, State, UserKey};

/// Version of the JSON report.
pub const FORMAT_VERSION: u32 = 1;

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Name>,
    /// Address of the object (`default_account.C.U`, `account.C.A`, ...).
    pub object: String,
    pub message: String,
    /// Why it hurts.
    pub why: String,
    /// How to fix it.
    pub fix: String,
    /// Whether `doctor -o repair.json` fixes it.
    pub repairable: bool,
    /// What the repair plan does about it, or why it does nothing.
    pub repair: String,
}

const NOT_REPAIRED: &str = "not in the repair plan: ";

const WHY_DEFAULT: &str = "jobs submitted without -A are rejected, and sacctmgr refuses some user changes";

/// The account a user's DefaultAccount moves to: `fallback` if associated, else the first
/// remaining association by account name. `None` when the user has no association.
pub fn repair_target<'a>(accounts: &'a [Name], fallback: Option<&'a Name>) -> Option<&'a Name> {
    match fallback {
        Some(f) if accounts.contains(f) => Some(f),
        _ => accounts.first(),
    }
}

fn fix_default(c: &Name, user: &Name, target: &Name) -> String {
    format!(
        "move it to `{target}`: `sacctmgr -i modify user where name={user} cluster={c} set defaultaccount={target}` (or apply `slurmplan doctor -o repair.json`)"
    )
}

fn assoc_label(c: &Name, key: Option<&UserKey>, account: &Name) -> String {
    match key {
        Some(k) => format!("user_association.{c}.{}", user_key_label(k)),
        None => format!("account.{c}.{account}"),
    }
}

fn referenced(a: &Assoc) -> BTreeSet<&Name> {
    let mut s: BTreeSet<&Name> = a.default_qos.iter().collect();
    match &a.qos {
        QosList::Inherit => {}
        QosList::Set(set) => s.extend(set),
        QosList::Delta { add, remove } => {
            s.extend(add);
            s.extend(remove);
        }
    }
    s
}

fn defaults(cname: &Name, c: &ClusterState, fallback: Option<&Name>, out: &mut Vec<Finding>) {
    let index = c.user_index();
    let mut current_defaults = InOrder::new(&c.defaults);
    for (user, accts) in index.iter() {
        let (code, message) = match current_defaults.get(user) {
            None => ("dangling-default", format!("user `{user}` has associations on `{cname}` but no DefaultAccount")),
            Some(d) if !c.accounts.contains(d.as_str()) => (
                "default-account-missing",
                format!("user `{user}` has DefaultAccount `{d}` on `{cname}`, an account that does not exist there"),
            ),
            Some(d) if !accts.contains(d) => (
                "default-not-associated",
                format!("user `{user}` has DefaultAccount `{d}` on `{cname}` but is no longer associated with it"),
            ),
            Some(_) => continue,
        };
        let target = repair_target(accts, fallback).expect("users in the index have associations");
        out.push(Finding {
            code,
            cluster: Some(cname.clone()),
            object: format!("default_account.{cname}.{user}"),
            message,
            why: WHY_DEFAULT.into(),
            fix: fix_default(cname, user, target),
            repairable: true,
            repair: format!("the DefaultAccount moves to `{target}`"),
        });
    }
    for (user, d) in &c.defaults {
        if !index.contains_key(user) {
            out.push(Finding {
                code: "default-without-association",
                cluster: Some(cname.clone()),
                object: format!("default_account.{cname}.{user}"),
                message: format!("user `{user}` has DefaultAccount `{d}` on `{cname}` but no association there"),
                why: "the user cannot run jobs on the cluster; sacctmgr normally removes a user with its last association".into(),
                fix: format!(
                    "add the user to an account (`sacctmgr -i add user {user} account=ACCOUNT cluster={cname}`) or delete the user record; slurmplan does not invent associations"
                ),
                repairable: false,
                repair: format!("{NOT_REPAIRED}only the site knows which account the user should have"),
            });
        }
    }
}

fn default_qos(cname: &Name, c: &ClusterState, out: &mut Vec<Finding>) {
    // What the repair plan does, per association address.
    let mut fixed = c.clone();
    let repairs: BTreeMap<String, QosRepair> =
        repair_default_qos(cname, &mut fixed).into_iter().map(|r| (r.object.clone(), r)).collect();
    let first = out.len();
    let mut bad_accounts: BTreeSet<&Name> = BTreeSet::new();
    // Parents before children, so an inherited problem is reported once, where it is set.
    let mut names = c.accounts.names();
    names.sort_by_key(|n| (c.accounts.depth(n.as_str()), (*n).clone()));
    let mut found: Vec<(Name, Finding)> = Vec::new();
    for name in names {
        let node = c.accounts.get(name.as_str()).expect("name from index");
        let eff = c.accounts.effective_qos(name.as_str());
        let Some(def) = c.accounts.effective_default_qos(name.as_str()) else { continue };
        if eff.contains(def) {
            continue;
        }
        bad_accounts.insert(name);
        let inherited_only = node.assoc.qos.is_inherit() && node.assoc.default_qos.is_none();
        if inherited_only && c.accounts.parent(name.as_str()).is_some_and(|p| bad_accounts.contains(p)) {
            continue;
        }
        found.push((name.clone(), outside(cname, None, name, def, &eff)));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    out.extend(found.into_iter().map(|(_, f)| f));
    for (k, a) in &c.users {
        let eff = c.user_effective_qos(k, a);
        let Some(def) = c.user_effective_default_qos(k, a) else { continue };
        if eff.contains(def) {
            continue;
        }
        if a.qos.is_inherit() && a.default_qos.is_none() && bad_accounts.contains(&k.account) {
            continue;
        }
        out.push(outside(cname, Some(k), &k.account, def, &eff));
    }
    for f in &mut out[first..] {
        match repairs.get(&f.object).map(|r| &r.action) {
            Some(Some(action)) => {
                f.repairable = true;
                f.repair = action.to_string();
            }
            Some(None) => f.repair = format!("{NOT_REPAIRED}its QoS list is empty, so no DefaultQOS can be valid"),
            // Reported where it is set; the repair there (or above) mends it.
            None => {
                f.repairable = true;
                f.repair = "mended by the repair of the association above it".into();
            }
        }
    }
}

/// A DefaultQOS repair: clear the association's own DefaultQOS, or set one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QosAction {
    Clear { inherits: Option<Name> },
    Set(Name),
}

impl std::fmt::Display for QosAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QosAction::Clear { inherits: Some(q) } => {
                write!(f, "its own DefaultQOS is cleared (it then inherits `{q}`, inside its list)")
            }
            QosAction::Clear { inherits: None } => write!(f, "its own DefaultQOS is cleared (it then has none)"),
            QosAction::Set(q) => write!(f, "its DefaultQOS becomes `{q}`, the first QoS of its list"),
        }
    }
}

/// One association's DefaultQOS repair (`action: None`: none possible, its list is empty).
#[derive(Debug, Clone)]
pub struct QosRepair {
    pub object: String,
    pub action: Option<QosAction>,
}

/// Repairs every effective DefaultQOS outside its effective QoS list on cluster `c`, in place:
/// accounts top-down, then users, each judged in the state repaired so far (see the module
/// documentation for the rule).
pub fn repair_default_qos(cname: &Name, c: &mut ClusterState) -> Vec<QosRepair> {
    let mut out = Vec::new();
    let mut names: Vec<Name> = c.accounts.names().into_iter().cloned().collect();
    names.sort_by_key(|n| (c.accounts.depth(n.as_str()), n.clone()));
    for name in names {
        let eff = c.accounts.effective_qos(name.as_str());
        let Some(def) = c.accounts.effective_default_qos(name.as_str()) else { continue };
        if eff.contains(def) {
            continue;
        }
        let own = c.accounts.get(name.as_str()).is_some_and(|n| n.assoc.default_qos.is_some());
        let inherits = c.accounts.parent(name.as_str()).and_then(|p| c.accounts.effective_default_qos(p.as_str()));
        let action = choose(own, inherits, &eff);
        if let Some(a) = &action {
            let node = c.accounts.get_mut(name.as_str()).expect("listed");
            node.assoc.default_qos = match a {
                QosAction::Clear { .. } => None,
                QosAction::Set(q) => Some(q.clone()),
            };
        }
        out.push(QosRepair { object: assoc_label(cname, None, &name), action });
    }
    let keys: Vec<UserKey> = c.users.keys().cloned().collect();
    for k in keys {
        let a = &c.users[&k];
        let eff = c.user_effective_qos(&k, a);
        let Some(def) = c.user_effective_default_qos(&k, a) else { continue };
        if eff.contains(def) {
            continue;
        }
        let inherits = c.accounts.effective_default_qos(k.account.as_str());
        let action = choose(a.default_qos.is_some(), inherits, &eff);
        if let Some(act) = &action {
            c.users.get_mut(&k).expect("listed").default_qos = match act {
                QosAction::Clear { .. } => None,
                QosAction::Set(q) => Some(q.clone()),
            };
        }
        out.push(QosRepair { object: assoc_label(cname, Some(&k), &k.account), action });
    }
    out
}

/// The rule: clear an own DefaultQOS when what would be inherited is valid, else the first of
/// the list; nothing when the list is empty.
fn choose(own: bool, inherits: Option<&Name>, eff: &BTreeSet<Name>) -> Option<QosAction> {
    if own && inherits.is_none_or(|q| eff.contains(q)) {
        return Some(QosAction::Clear { inherits: inherits.cloned() });
    }
    eff.first().map(|q| QosAction::Set(q.clone()))
}

fn outside(c: &Name, key: Option<&UserKey>, account: &Name, def: &Name, eff: &BTreeSet<Name>) -> Finding {
    let object = assoc_label(c, key, account);
    let list = if eff.is_empty() { "(empty)".to_string() } else { slurmplan_model::values::join(eff) };
    let fix = match key {
        Some(k) => format!(
            "give the association a DefaultQOS from its list: `sacctmgr -i modify user where name={} account={} cluster={c} set defaultqos=QOS` (or `qos+={def}`)",
            k.user, k.account
        ),
        None => format!(
            "add `{def}` to the list: `sacctmgr -i modify account where name={account} cluster={c} set qos+={def}`, or set a DefaultQOS from the list"
        ),
    };
    Finding {
        code: "default-qos-outside",
        cluster: Some(c.clone()),
        object: object.clone(),
        message: format!("{object} has DefaultQOS `{def}` outside its QoS list [{list}]"),
        why: "jobs submitted without --qos get a QoS the association may not use and are rejected; Slurm 23.11+ refuses QoS changes below it".into(),
        fix,
        repairable: false,
        repair: String::new(),
    }
}

fn missing_qos(cname: &Name, c: &ClusterState, qos: &BTreeMap<Name, slurmplan_model::Qos>, out: &mut Vec<Finding>) {
    let mut check = |key: Option<&UserKey>, account: &Name, a: &Assoc| {
        let missing: Vec<&Name> = referenced(a).into_iter().filter(|q| !qos.contains_key(*q)).collect();
        if missing.is_empty() {
            return;
        }
        let object = assoc_label(cname, key, account);
        let names = missing.iter().map(|q| format!("`{q}`")).collect::<Vec<_>>().join(", ");
        out.push(Finding {
            code: "missing-qos",
            cluster: Some(cname.clone()),
            object: object.clone(),
            message: format!("{object} references QoS that do not exist: {names}"),
            why: "jobs cannot use a QoS that does not exist, and sacctmgr commands that name it fail".into(),
            fix: format!(
                "create it (`sacctmgr -i add qos {}`) or remove it from the association's QoS/DefaultQOS",
                missing[0]
            ),
            repairable: false,
            repair: format!(
                "{NOT_REPAIRED}creating a QoS or dropping it from a list changes what jobs may do; the site decides"
            ),
        });
    };
    for (name, _, a) in c.accounts.iter_sorted() {
        check(None, name, a);
    }
    for (k, a) in &c.users {
        check(Some(k), &k.account, a);
    }
}

/// Every finding in `state`, grouped by check, then by cluster and object.
/// `fallback` only shapes the suggested fix of DefaultAccount findings.
pub fn examine(state: &State, fallback: Option<&Name>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (cname, c) in &state.clusters {
        defaults(cname, c, fallback, &mut out);
    }
    for (cname, c) in &state.clusters {
        default_qos(cname, c, &mut out);
    }
    for (cname, c) in &state.clusters {
        missing_qos(cname, c, &state.qos, &mut out);
    }
    for name in state.accounts.keys() {
        if !state.clusters.values().any(|c| c.accounts.contains(name.as_str())) {
            out.push(Finding {
                code: "orphan-account",
                cluster: None,
                object: format!("account_record.{name}"),
                message: format!("account `{name}` has a record but no association on any cluster"),
                why: "it cannot run jobs anywhere; re-adding the name later silently reuses its old description and organization".into(),
                fix: format!("delete the record (`sacctmgr -i delete account where name={name}`) or add it to a cluster"),
                repairable: false,
                repair: format!("{NOT_REPAIRED}deleting an account record is left to the site"),
            });
        }
    }
    out
}

/// A repaired state and what was changed.
#[derive(Debug, Clone)]
pub struct Repair {
    pub state: State,
    /// (cluster, user, old DefaultAccount, new DefaultAccount).
    pub moves: Vec<(Name, Name, Option<Name>, Name)>,
    /// The DefaultQOS repairs made.
    pub qos_repairs: Vec<QosRepair>,
}

/// `state` with every dangling / missing / not-associated DefaultAccount moved by the rule:
/// `fallback` if the user is associated with it on that cluster, else the user's first
/// remaining association by account name; and every DefaultQOS outside its list repaired by
/// [`repair_default_qos`]. Nothing else changes.
pub fn repair(state: &State, fallback: Option<&Name>) -> Repair {
    let mut out = state.clone();
    let mut moves = Vec::new();
    let mut qos_repairs = Vec::new();
    for (cname, c) in &state.clusters {
        let index = c.user_index();
        let fixed = out.clusters.get_mut(cname).expect("same clusters");
        let mut current_defaults = InOrder::new(&c.defaults);
        for (user, accts) in index.iter() {
            let cur = current_defaults.get(user);
            if cur.is_some_and(|d| accts.contains(d)) {
                continue;
            }
            let target = repair_target(accts, fallback).expect("users in the index have associations");
            fixed.defaults.insert(user.clone(), target.clone());
            moves.push((cname.clone(), user.clone(), cur.cloned(), target.clone()));
        }
        qos_repairs.extend(repair_default_qos(cname, fixed).into_iter().filter(|r| r.action.is_some()));
    }
    Repair { state: out, moves, qos_repairs }
}

/// Text report: one block per finding, then a summary line. Nothing when there are none.
pub fn text(findings: &[Finding], out: &mut dyn Write) -> io::Result<()> {
    for f in findings {
        writeln!(out, "{}: {}", f.code, f.message)?;
        writeln!(out, "  object: {}", f.object)?;
        writeln!(out, "  why:    {}", f.why)?;
        writeln!(out, "  fix:    {}", f.fix)?;
        writeln!(out, "  repair: {}", f.repair)?;
    }
    if !findings.is_empty() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for f in findings {
            *counts.entry(f.code).or_insert(0) += 1;
        }
        let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{n} {c}")).collect();
        writeln!(out, "{} finding(s): {}", findings.len(), parts.join(", "))?;
    }
    Ok(())
}

#[derive(Serialize)]
struct JsonReport<'a> {
    format_version: u32,
    findings: &'a [Finding],
    summary: BTreeMap<&'a str, usize>,
}

/// JSON report: `{format_version, findings, summary: {code: count}}`.
pub fn json(findings: &[Finding], out: &mut dyn Write) -> io::Result<()> {
    let mut summary = BTreeMap::new();
    for f in findings {
        *summary.entry(f.code).or_insert(0) += 1;
    }
    serde_json::to_writer_pretty(&mut *out, &JsonReport { format_version: FORMAT_VERSION, findings, summary })
        .map_err(io::Error::other)?;
    writeln!(out)
}
