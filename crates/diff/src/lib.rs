//! The pure diff of two [`State`]s into typed [`Change`]s.
//!
//! Both sides are complete states of the same shape; the desired side has already been
//! resolved against the current one (unmanaged objects copied over), so everything that
//! differs here is something slurmplan manages. No I/O, no clock, no environment, no ordering
//! of commands (that is `plan`).

use std::cmp::Ordering;

use slurmplan_model::{AccountRecord, Assoc, InOrder, Name, Qos, State, UserKey};

/// One object-level difference between current and desired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    QosCreate { name: Name, qos: Qos },
    QosUpdate { name: Name, from: Qos, to: Qos },
    QosDelete { name: Name, qos: Qos },
    AccountCreate { cluster: Name, name: Name, parent: Name, assoc: Assoc, record: AccountRecord },
    AccountReparent { cluster: Name, name: Name, from: Name, to: Name },
    AccountUpdate { cluster: Name, name: Name, from: Assoc, to: Assoc },
    AccountRecordUpdate { name: Name, from: AccountRecord, to: AccountRecord },
    AccountDelete { cluster: Name, name: Name, parent: Name, assoc: Assoc },
    UserCreate { cluster: Name, key: UserKey, assoc: Assoc },
    UserUpdate { cluster: Name, key: UserKey, from: Assoc, to: Assoc },
    UserDelete { cluster: Name, key: UserKey, assoc: Assoc },
    DefaultAccount { cluster: Name, user: Name, from: Option<Name>, to: Name },
}

/// Terraform-style action of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    Create,
    Update,
    Reparent,
    Delete,
}

impl Action {
    /// The lower-case word for the action (`create`, `update`, `reparent`, `delete`).
    pub fn word(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Reparent => "reparent",
            Action::Delete => "delete",
        }
    }

    /// The mark shown in plans.
    pub fn symbol(self) -> &'static str {
        match self {
            Action::Create => "+",
            Action::Update => "~",
            Action::Reparent => ">",
            Action::Delete => "-",
        }
    }
}

impl Change {
    pub fn action(&self) -> Action {
        match self {
            Change::QosCreate { .. } | Change::AccountCreate { .. } | Change::UserCreate { .. } => Action::Create,
            Change::QosDelete { .. } | Change::AccountDelete { .. } | Change::UserDelete { .. } => Action::Delete,
            Change::AccountReparent { .. } => Action::Reparent,
            _ => Action::Update,
        }
    }

    pub fn cluster(&self) -> Option<&Name> {
        match self {
            Change::QosCreate { .. }
            | Change::QosUpdate { .. }
            | Change::QosDelete { .. }
            | Change::AccountRecordUpdate { .. } => None,
            Change::AccountCreate { cluster, .. }
            | Change::AccountReparent { cluster, .. }
            | Change::AccountUpdate { cluster, .. }
            | Change::AccountDelete { cluster, .. }
            | Change::UserCreate { cluster, .. }
            | Change::UserUpdate { cluster, .. }
            | Change::UserDelete { cluster, .. }
            | Change::DefaultAccount { cluster, .. } => Some(cluster),
        }
    }

    /// (kind, name) of the object, e.g. ("account", "proj1"), ("user", "alice@proj1").
    pub fn object(&self) -> (&'static str, String) {
        match self {
            Change::QosCreate { name, .. } | Change::QosUpdate { name, .. } | Change::QosDelete { name, .. } => {
                ("qos", name.to_string())
            }
            Change::AccountCreate { name, .. }
            | Change::AccountReparent { name, .. }
            | Change::AccountUpdate { name, .. }
            | Change::AccountDelete { name, .. } => ("account", name.to_string()),
            Change::AccountRecordUpdate { name, .. } => ("account_record", name.to_string()),
            Change::UserCreate { key, .. } | Change::UserUpdate { key, .. } | Change::UserDelete { key, .. } => {
                ("user_association", user_key_label(key))
            }
            Change::DefaultAccount { user, .. } => ("default_account", user.to_string()),
        }
    }

    /// Address for `--target`: `qos.NAME`, `account.CLUSTER.NAME`, `user.CLUSTER.USER@ACCOUNT[:PARTITION]`, ...
    pub fn address(&self) -> String {
        let (kind, obj) = self.object();
        match self.cluster() {
            Some(c) => format!("{kind}.{c}.{obj}"),
            None => format!("{kind}.{obj}"),
        }
    }
}

pub use slurmplan_model::user_key_label;

/// The changes that turn `current` into `desired`, in a deterministic order (QoS, account
/// records, then per cluster: accounts by name, user associations by key, defaults by user).
pub fn diff(current: &State, desired: &State) -> Vec<Change> {
    let mut out = Vec::new();
    qos_changes(current, desired, &mut out);
    record_changes(current, desired, &mut out);
    let empty = slurmplan_model::ClusterState::default();
    for (cname, d) in &desired.clusters {
        let c = current.clusters.get(cname).unwrap_or(&empty);
        account_changes(cname, c, d, current, desired, &mut out);
        user_changes(cname, c, d, &mut out);
        default_changes(cname, c, d, &mut out);
    }
    out
}

/// QoS created, updated and deleted.
fn qos_changes(current: &State, desired: &State, out: &mut Vec<Change>) {
    for (name, q) in &desired.qos {
        match current.qos.get(name) {
            None => out.push(Change::QosCreate { name: name.clone(), qos: q.clone() }),
            Some(cur) if cur != q => {
                out.push(Change::QosUpdate { name: name.clone(), from: cur.clone(), to: q.clone() })
            }
            _ => {}
        }
    }
    for (name, q) in &current.qos {
        if !desired.qos.contains_key(name) {
            out.push(Change::QosDelete { name: name.clone(), qos: q.clone() });
        }
    }
}

/// Account records of accounts that exist on both sides.
fn record_changes(current: &State, desired: &State, out: &mut Vec<Change>) {
    // (an account on no desired cluster keeps its record: there is nothing to change it through)
    for (name, rec) in &desired.accounts {
        if !desired.clusters.values().any(|c| c.accounts.contains(name.as_str())) {
            continue;
        }
        if let Some(cur) = current.accounts.get(name) {
            let to = AccountRecord {
                description: rec.description.clone().or_else(|| cur.description.clone()),
                organization: rec.organization.clone().or_else(|| cur.organization.clone()),
            };
            if &to != cur {
                out.push(Change::AccountRecordUpdate { name: name.clone(), from: cur.clone(), to });
            }
        }
    }
}

/// The accounts of cluster `cname` created, moved, updated and deleted.
fn account_changes(
    cname: &Name,
    c: &slurmplan_model::ClusterState,
    d: &slurmplan_model::ClusterState,
    current: &State,
    desired: &State,
    out: &mut Vec<Change>,
) {
    for name in d.accounts.names() {
        let dn = d.accounts.get(name.as_str()).expect("name from index");
        let dparent = d.accounts.parent(name.as_str());
        match c.accounts.get(name.as_str()) {
            None => out.push(Change::AccountCreate {
                cluster: cname.clone(),
                name: name.clone(),
                parent: dparent.cloned().unwrap_or_else(slurmplan_model::names::root),
                assoc: dn.assoc.clone(),
                record: new_record(desired.accounts.get(name), current.accounts.get(name)),
            }),
            Some(cn) => {
                let cparent = c.accounts.parent(name.as_str());
                if let (Some(from), Some(to)) = (cparent, dparent)
                    && from != to
                {
                    out.push(Change::AccountReparent {
                        cluster: cname.clone(),
                        name: name.clone(),
                        from: from.clone(),
                        to: to.clone(),
                    });
                }
                if cn.assoc != dn.assoc {
                    out.push(Change::AccountUpdate {
                        cluster: cname.clone(),
                        name: name.clone(),
                        from: cn.assoc.clone(),
                        to: dn.assoc.clone(),
                    });
                }
            }
        }
    }
    for name in c.accounts.names() {
        if !d.accounts.contains(name.as_str()) {
            out.push(Change::AccountDelete {
                cluster: cname.clone(),
                name: name.clone(),
                parent: c.accounts.parent(name.as_str()).cloned().unwrap_or_else(slurmplan_model::names::root),
                assoc: c.accounts.get(name.as_str()).map(|n| n.assoc.clone()).unwrap_or_default(),
            });
        }
    }
}

/// User associations of cluster `cname`: both sides walked together in key order (one
/// comparison per step, no lookups).
fn user_changes(
    cname: &Name,
    c: &slurmplan_model::ClusterState,
    d: &slurmplan_model::ClusterState,
    out: &mut Vec<Change>,
) {
    let mut ci = c.users.iter().peekable();
    let mut di = d.users.iter().peekable();
    loop {
        let order = match (ci.peek(), di.peek()) {
            (None, None) => break,
            (Some((ck, _)), Some((dk, _))) => ck.cmp(dk),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
        };
        match order {
            Ordering::Equal => {
                let ((key, from), (_, to)) = (ci.next().expect("peeked"), di.next().expect("peeked"));
                if from != to {
                    out.push(Change::UserUpdate {
                        cluster: cname.clone(),
                        key: key.clone(),
                        from: from.clone(),
                        to: to.clone(),
                    });
                }
            }
            Ordering::Less => {
                let (key, assoc) = ci.next().expect("peeked");
                out.push(Change::UserDelete { cluster: cname.clone(), key: key.clone(), assoc: assoc.clone() });
            }
            Ordering::Greater => {
                let (key, assoc) = di.next().expect("peeked");
                out.push(Change::UserCreate { cluster: cname.clone(), key: key.clone(), assoc: assoc.clone() });
            }
        }
    }
}

/// DefaultAccounts of cluster `cname` that change.
fn default_changes(
    cname: &Name,
    c: &slurmplan_model::ClusterState,
    d: &slurmplan_model::ClusterState,
    out: &mut Vec<Change>,
) {
    let mut current_defaults = InOrder::new(&c.defaults);
    for (user, to) in &d.defaults {
        let from = current_defaults.get(user);
        if from != Some(to) {
            out.push(Change::DefaultAccount {
                cluster: cname.clone(),
                user: user.clone(),
                from: from.cloned(),
                to: to.clone(),
            });
        }
    }
}

/// The record fields a create must set: the desired ones, minus what the (global) account
/// record already holds when the account exists on another cluster.
pub fn new_record(want: Option<&AccountRecord>, have: Option<&AccountRecord>) -> AccountRecord {
    let want = want.cloned().unwrap_or_default();
    let Some(have) = have else { return want };
    AccountRecord {
        description: want.description.filter(|d| have.description.as_ref() != Some(d)),
        organization: want.organization.filter(|o| have.organization.as_ref() != Some(o)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use slurmplan_model::{ClusterState, NameKind};
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;

    fn n(s: &str) -> Name {
        Name::keep_case(s, NameKind::User).unwrap()
    }

    fn cluster(users: &BTreeMap<(String, String), u8>, defaults: &BTreeMap<String, String>) -> ClusterState {
        let mut c = ClusterState::with_root();
        c.users = users
            .iter()
            .map(|((a, u), k)| {
                let mut assoc = Assoc::default();
                if *k > 0 {
                    assoc.limits.max_jobs = Some(u64::from(*k));
                }
                (UserKey { account: n(a), user: n(u), partition: None }, assoc)
            })
            .collect();
        c.defaults = defaults.iter().map(|(u, a)| (n(u), n(a))).collect();
        c
    }

    /// The user and DefaultAccount changes as the definition says, by lookups.
    fn naive(cname: &Name, c: &slurmplan_model::ClusterState, d: &slurmplan_model::ClusterState) -> Vec<Change> {
        let mut out = Vec::new();
        let keys: BTreeSet<&UserKey> = c.users.keys().chain(d.users.keys()).collect();
        for key in keys {
            let cluster = cname.clone();
            match (c.users.get(key), d.users.get(key)) {
                (Some(from), Some(to)) if from != to => {
                    out.push(Change::UserUpdate { cluster, key: key.clone(), from: from.clone(), to: to.clone() })
                }
                (Some(assoc), None) => out.push(Change::UserDelete { cluster, key: key.clone(), assoc: assoc.clone() }),
                (None, Some(assoc)) => out.push(Change::UserCreate { cluster, key: key.clone(), assoc: assoc.clone() }),
                _ => {}
            }
        }
        for (user, to) in &d.defaults {
            let from = c.defaults.get(user);
            if from != Some(to) {
                out.push(Change::DefaultAccount {
                    cluster: cname.clone(),
                    user: user.clone(),
                    from: from.cloned(),
                    to: to.clone(),
                });
            }
        }
        out
    }

    proptest! {
        #[test]
        fn user_and_default_changes_match_their_definition(
            cu in prop::collection::btree_map(("a[0-2]", "u[0-4]"), 0..3u8, 0..12),
            du in prop::collection::btree_map(("a[0-2]", "u[0-4]"), 0..3u8, 0..12),
            cd in prop::collection::btree_map("u[0-6]", "a[0-2]", 0..6),
            dd in prop::collection::btree_map("u[0-6]", "a[0-2]", 0..6),
        ) {
            let cname = n("c1");
            let (c, d) = (cluster(&cu, &cd), cluster(&du, &dd));
            let state = |cl: ClusterState| State { clusters: [(cname.clone(), cl)].into(), ..Default::default() };
            let (current, desired) = (state(c.clone()), state(d.clone()));
            prop_assert_eq!(diff(&current, &desired), naive(&cname, &c, &d));
        }
    }
}
