//! The policy of `slurmplan reconcile`: which changes of a plan a cycle applies unattended and
//! which wait for a human ([`split`]), and the policy file that says so ([`parse`]).
//!
//! A change waits when its kind is not in the policy's `unattended` list, when the plan is
//! larger than `max_changes` (then everything waits), when more users than
//! `max_default_account_moves` would have their DefaultAccount moved, or when it is a delete of
//! a plan that deletes more than the mass-delete guard allows. What a waiting change
//! needs and what needs it wait with it ([`target::hold_closure`]), so the part that runs is a
//! `--target` plan of the rest that holds on its own.
//!
//! Pure: parses text it is given, reads no file, prints nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;
use slurmplan_diff::Change;
use slurmplan_model::State;

use crate::Plan;
use crate::target;

/// The kind of a change, as the policy names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    QosCreate,
    QosUpdate,
    QosDelete,
    AccountCreate,
    AccountUpdate,
    AccountRecord,
    AccountReparent,
    /// An account delete where the account (or an account below it) has user associations.
    AccountDeleteWithUsers,
    /// An account delete where no user association is at or below the account.
    AccountDelete,
    UserCreate,
    UserUpdate,
    UserDelete,
    DefaultAccount,
}

impl Kind {
    pub const ALL: [Kind; 13] = [
        Kind::QosCreate,
        Kind::QosUpdate,
        Kind::QosDelete,
        Kind::AccountCreate,
        Kind::AccountUpdate,
        Kind::AccountRecord,
        Kind::AccountReparent,
        Kind::AccountDeleteWithUsers,
        Kind::AccountDelete,
        Kind::UserCreate,
        Kind::UserUpdate,
        Kind::UserDelete,
        Kind::DefaultAccount,
    ];

    /// The name in the policy file and in metrics labels.
    pub fn name(self) -> &'static str {
        match self {
            Kind::QosCreate => "qos-create",
            Kind::QosUpdate => "qos-update",
            Kind::QosDelete => "qos-delete",
            Kind::AccountCreate => "account-create",
            Kind::AccountUpdate => "account-update",
            Kind::AccountRecord => "account-record",
            Kind::AccountReparent => "account-reparent",
            Kind::AccountDeleteWithUsers => "account-delete-with-users",
            Kind::AccountDelete => "account-delete",
            Kind::UserCreate => "user-create",
            Kind::UserUpdate => "user-update",
            Kind::UserDelete => "user-delete",
            Kind::DefaultAccount => "default-account",
        }
    }

    fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The kind of `change` on `current`.
    pub fn of(change: &Change, current: &State) -> Kind {
        match change {
            Change::QosCreate { .. } => Kind::QosCreate,
            Change::QosUpdate { .. } => Kind::QosUpdate,
            Change::QosDelete { .. } => Kind::QosDelete,
            Change::AccountCreate { .. } => Kind::AccountCreate,
            Change::AccountUpdate { .. } => Kind::AccountUpdate,
            Change::AccountRecordUpdate { .. } => Kind::AccountRecord,
            Change::AccountReparent { .. } => Kind::AccountReparent,
            Change::AccountDelete { cluster, name, .. } => {
                let has_users = current.clusters.get(cluster).is_some_and(|c| {
                    c.accounts.subtree(name.as_str()).into_iter().any(|a| c.users_of_account(a).next().is_some())
                });
                if has_users { Kind::AccountDeleteWithUsers } else { Kind::AccountDelete }
            }
            Change::UserCreate { .. } => Kind::UserCreate,
            Change::UserUpdate { .. } => Kind::UserUpdate,
            Change::UserDelete { .. } => Kind::UserDelete,
            Change::DefaultAccount { .. } => Kind::DefaultAccount,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a reconcile cycle may apply unattended (docs/operations.md, "Running unattended").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub unattended: BTreeSet<Kind>,
    /// A plan with more changes than this waits as a whole.
    pub max_changes: usize,
    /// More DefaultAccount moves (of users who have one) than this wait, all of them.
    pub max_default_account_moves: usize,
}

/// The kinds a cycle applies unattended when the policy file does not say: everything but
/// deletes of accounts that have users, re-parents and QoS deletes.
pub const DEFAULT_WAITING: [Kind; 3] = [Kind::AccountDeleteWithUsers, Kind::AccountReparent, Kind::QosDelete];
pub const DEFAULT_MAX_CHANGES: usize = 500;
pub const DEFAULT_MAX_DEFAULT_ACCOUNT_MOVES: usize = 50;

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            unattended: Kind::ALL.into_iter().filter(|k| !DEFAULT_WAITING.contains(k)).collect(),
            max_changes: DEFAULT_MAX_CHANGES,
            max_default_account_moves: DEFAULT_MAX_DEFAULT_ACCOUNT_MOVES,
        }
    }
}

/// The policy file (YAML), strict: unknown keys are errors.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    version: u32,
    unattended: Option<Vec<String>>,
    max_changes: Option<usize>,
    max_default_account_moves: Option<usize>,
}

/// Parse a policy file's text; keys it leaves out keep their defaults. Every problem is
/// reported at once.
pub fn parse(text: &str) -> Result<Policy, Vec<String>> {
    let file: PolicyFile = serde_saphyr::from_str(text).map_err(|e| vec![e.to_string()])?;
    let mut errors = Vec::new();
    if file.version != 1 {
        errors.push(format!("`version: {}` is not supported; this slurmplan reads `version: 1`", file.version));
    }
    let mut policy = Policy::default();
    if let Some(list) = file.unattended {
        policy.unattended.clear();
        for k in list {
            match Kind::from_name(&k) {
                Some(kind) => {
                    policy.unattended.insert(kind);
                }
                None => errors.push(format!(
                    "`unattended`: unknown change kind `{k}`; the kinds are: {}",
                    Kind::ALL.map(Kind::name).join(", ")
                )),
            }
        }
    }
    if let Some(n) = file.max_changes {
        policy.max_changes = n;
    }
    if let Some(n) = file.max_default_account_moves {
        policy.max_default_account_moves = n;
    }
    if errors.is_empty() { Ok(policy) } else { Err(errors) }
}

/// A change that waits for a human, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub address: String,
    pub kind: Kind,
    pub reason: String,
}

/// What of a plan runs now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Now {
    /// The whole plan (nothing waits).
    All,
    /// Only these change addresses (and what they strictly need, none of it waiting).
    Targets(Vec<String>),
    /// Nothing.
    Nothing,
}

/// The split of a plan by a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub now: Now,
    /// The changes that wait, in plan order.
    pub held: Vec<Held>,
}

/// Every change of `plan` (made on `current`) waits: those in `held` keep their reason, the
/// others get `reason`. In plan order.
pub fn hold_all(plan: &Plan, current: &State, held: Vec<Held>, reason: &str) -> Vec<Held> {
    let mut by_address: BTreeMap<String, Held> = held.into_iter().map(|h| (h.address.clone(), h)).collect();
    plan.changes
        .iter()
        .map(|c| {
            by_address.remove(&c.address).unwrap_or_else(|| Held {
                address: c.address.clone(),
                kind: Kind::of(&c.change, current),
                reason: reason.to_string(),
            })
        })
        .collect()
}

/// Split `plan` (made on `current`) by `policy`. `mass_delete`: the plan deletes more than the
/// mass-delete limit allows (it was made with the guard lifted, to be reviewed); then every
/// delete waits, with this reason.
pub fn split(policy: &Policy, plan: &Plan, current: &State, mass_delete: Option<&str>) -> Split {
    if plan.changes.len() > policy.max_changes {
        let reason = format!(
            "the plan has {} changes, more than max_changes ({}) of the policy",
            plan.changes.len(),
            policy.max_changes
        );
        return Split { now: Now::Nothing, held: hold_all(plan, current, Vec::new(), &reason) };
    }
    let kinds: Vec<Kind> = plan.changes.iter().map(|c| Kind::of(&c.change, current)).collect();
    let moves =
        plan.changes.iter().filter(|c| matches!(&c.change, Change::DefaultAccount { from: Some(_), .. })).count();
    let mut reasons: Vec<Option<String>> = plan
        .changes
        .iter()
        .zip(&kinds)
        .map(|(c, kind)| {
            if let Some(reason) = mass_delete.filter(|_| c.action == slurmplan_diff::Action::Delete) {
                Some(reason.to_string())
            } else if !policy.unattended.contains(kind) {
                Some(format!("`{kind}` is not unattended in the policy"))
            } else if moves > policy.max_default_account_moves
                && matches!(&c.change, Change::DefaultAccount { from: Some(_), .. })
            {
                Some(format!(
                    "{moves} DefaultAccount moves, more than max_default_account_moves ({}) of the policy",
                    policy.max_default_account_moves
                ))
            } else {
                None
            }
        })
        .collect();
    let direct: BTreeSet<usize> = (0..reasons.len()).filter(|&i| reasons[i].is_some()).collect();
    if direct.is_empty() {
        return Split { now: Now::All, held: Vec::new() };
    }
    let changes: Vec<Change> = plan.changes.iter().map(|c| c.change.clone()).collect();
    let mut held = direct.clone();
    target::hold_closure(current, &changes, &mut held);
    for &i in held.difference(&direct) {
        reasons[i] = Some("it is tied to a change that waits (one needs the other)".to_string());
    }
    let targets: Vec<String> =
        (0..changes.len()).filter(|i| !held.contains(i)).map(|i| plan.changes[i].address.clone()).collect();
    let held: Vec<Held> = held
        .iter()
        .map(|&i| Held {
            address: plan.changes[i].address.clone(),
            kind: kinds[i],
            reason: reasons[i].clone().unwrap_or_default(),
        })
        .collect();
    Split { now: if targets.is_empty() { Now::Nothing } else { Now::Targets(targets) }, held }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_keeps_defaults_and_reports_every_problem() {
        let p = parse("version: 1\nmax_changes: 10\n").unwrap();
        assert_eq!(p.max_changes, 10);
        assert_eq!(p.unattended, Policy::default().unattended);
        assert!(!p.unattended.contains(&Kind::AccountDeleteWithUsers));
        let p = parse("version: 1\nunattended: [account-create, user-delete]\n").unwrap();
        assert_eq!(p.unattended, BTreeSet::from([Kind::AccountCreate, Kind::UserDelete]));
        let e = parse("version: 2\nunattended: [account-creat]\n").unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[1].contains("account-creat"), "{e:?}");
        assert!(parse("version: 1\nmax_change: 3\n").is_err(), "unknown keys are errors");
    }

    /// examples/reconcile/policy.yaml spells out the defaults (docs/operations.md says so).
    #[test]
    fn the_example_policy_is_the_default() {
        let text = include_str!("../../../examples/reconcile/policy.yaml");
        assert_eq!(parse(text).unwrap(), Policy::default());
    }

    #[test]
    fn every_kind_has_a_distinct_name() {
        let names: BTreeSet<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), Kind::ALL.len());
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
    }
}
