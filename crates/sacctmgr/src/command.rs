//! The pure sacctmgr command builder: structured [`Command`]s and their exact argv.
//!
//! Every write slurmplan can issue is a `Command`; `argv()` is the one place that turns it into
//! words. Rules enforced here: `-i` always; every modify/delete has `where` with explicit names;
//! every association command carries `cluster=`. QoS objects are global in slurmdbd, so QoS
//! commands carry names but no cluster. This module spawns nothing, prints nothing, and parses
//! no argv (the fake sacctmgr's parser is its own: crates/dev/src/bin/slurmplan-fake-sacctmgr/argv.rs).

use serde::Serialize;
use std::collections::BTreeMap;

use slurmplan_model::values::join;
use slurmplan_model::{AccountRecord, Assoc, Fairshare, Limits, Name, Qos, QosList, Tres};

/// A setting's value on the command line: the value, or `-1` (sacctmgr's word for "clear").
fn or_clear<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-1".to_string(), |v| v.to_string())
}

/// TRES entries as `cpu=10,mem=-1` (`-1` clears that entry).
fn tres_words(m: &BTreeMap<String, Option<u64>>) -> String {
    m.iter().map(|(n, v)| format!("{n}={}", or_clear(*v))).collect::<Vec<_>>().join(",")
}

/// `Option<Option<T>>` as JSON: absent = no change, `null` = clear, value = set.
mod double_option {
    use serde::{Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(v: &Option<Option<T>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }
}

/// Scalar association limits (cleared with `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Scalar {
    GrpJobs,
    GrpSubmitJobs,
    GrpWall,
    MaxJobs,
    MaxSubmitJobs,
    MaxWall,
}

impl Scalar {
    pub const ALL: [Scalar; 6] = [
        Scalar::GrpJobs,
        Scalar::GrpSubmitJobs,
        Scalar::GrpWall,
        Scalar::MaxJobs,
        Scalar::MaxSubmitJobs,
        Scalar::MaxWall,
    ];
    pub fn keyword(self) -> &'static str {
        match self {
            Scalar::GrpJobs => "GrpJobs",
            Scalar::GrpSubmitJobs => "GrpSubmitJobs",
            Scalar::GrpWall => "GrpWall",
            Scalar::MaxJobs => "MaxJobs",
            Scalar::MaxSubmitJobs => "MaxSubmitJobs",
            Scalar::MaxWall => "MaxWall",
        }
    }
    pub fn get(self, l: &Limits) -> Option<u64> {
        match self {
            Scalar::GrpJobs => l.grp_jobs,
            Scalar::GrpSubmitJobs => l.grp_submit_jobs,
            Scalar::GrpWall => l.grp_wall,
            Scalar::MaxJobs => l.max_jobs,
            Scalar::MaxSubmitJobs => l.max_submit_jobs,
            Scalar::MaxWall => l.max_wall,
        }
    }
    pub fn slot(self, l: &mut Limits) -> &mut Option<u64> {
        match self {
            Scalar::GrpJobs => &mut l.grp_jobs,
            Scalar::GrpSubmitJobs => &mut l.grp_submit_jobs,
            Scalar::GrpWall => &mut l.grp_wall,
            Scalar::MaxJobs => &mut l.max_jobs,
            Scalar::MaxSubmitJobs => &mut l.max_submit_jobs,
            Scalar::MaxWall => &mut l.max_wall,
        }
    }
}

/// TRES association limits (merged per TRES; one entry cleared with `name=-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum TresLimit {
    GrpTres,
    GrpTresMins,
    MaxTres,
    MaxTresMins,
}

impl TresLimit {
    pub const ALL: [TresLimit; 4] =
        [TresLimit::GrpTres, TresLimit::GrpTresMins, TresLimit::MaxTres, TresLimit::MaxTresMins];
    pub fn keyword(self) -> &'static str {
        match self {
            TresLimit::GrpTres => "GrpTRES",
            TresLimit::GrpTresMins => "GrpTRESMins",
            TresLimit::MaxTres => "MaxTRES",
            TresLimit::MaxTresMins => "MaxTRESMins",
        }
    }
    pub fn get(self, l: &Limits) -> &Tres {
        match self {
            TresLimit::GrpTres => &l.grp_tres,
            TresLimit::GrpTresMins => &l.grp_tres_mins,
            TresLimit::MaxTres => &l.max_tres,
            TresLimit::MaxTresMins => &l.max_tres_mins,
        }
    }
    pub fn slot(self, l: &mut Limits) -> &mut Tres {
        match self {
            TresLimit::GrpTres => &mut l.grp_tres,
            TresLimit::GrpTresMins => &mut l.grp_tres_mins,
            TresLimit::MaxTres => &mut l.max_tres,
            TresLimit::MaxTresMins => &mut l.max_tres_mins,
        }
    }
}

/// A set of association changes: only what changes is present. `None` inside = clear (`-1`).
/// Serialised only as the planner's batching key (`plan::build`: batches of equal sets, in the
/// order of this JSON); the plan file writes its own type (`plan::file::schema`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize)]
pub struct AssocSet {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    pub fairshare: Option<Option<Fairshare>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scalars: BTreeMap<Scalar, Option<u64>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tres: BTreeMap<TresLimit, BTreeMap<String, Option<u64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<QosList>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    pub default_qos: Option<Option<Name>>,
}

impl AssocSet {
    pub fn is_empty(&self) -> bool {
        self == &AssocSet::default()
    }

    /// The limit changes (not QoS) that turn `from` into `to`.
    pub fn limits_between(from: &Limits, to: &Limits) -> AssocSet {
        let mut s = AssocSet::default();
        if from.fairshare != to.fairshare {
            s.fairshare = Some(to.fairshare);
        }
        for k in Scalar::ALL {
            if k.get(from) != k.get(to) {
                s.scalars.insert(k, k.get(to));
            }
        }
        for k in TresLimit::ALL {
            let (a, b) = (k.get(from), k.get(to));
            if a != b {
                let mut m = BTreeMap::new();
                for (name, v) in b {
                    if a.get(name) != Some(v) {
                        m.insert(name.clone(), Some(*v));
                    }
                }
                for name in a.keys() {
                    if !b.contains_key(name) {
                        m.insert(name.clone(), None);
                    }
                }
                s.tres.insert(k, m);
            }
        }
        s
    }

    /// Everything set on a new association (for `add`): no clears.
    pub fn from_assoc(a: &Assoc) -> AssocSet {
        let mut s = AssocSet::limits_between(&Limits::default(), &a.limits);
        if !a.qos.is_inherit() {
            s.qos = Some(a.qos.clone());
        }
        if a.default_qos.is_some() {
            s.default_qos = Some(a.default_qos.clone());
        }
        s
    }

    /// Apply to an association (used by the simulator).
    pub fn apply_to(&self, a: &mut Assoc) {
        if let Some(f) = self.fairshare {
            a.limits.fairshare = f;
        }
        for (k, v) in &self.scalars {
            *k.slot(&mut a.limits) = *v;
        }
        for (k, m) in &self.tres {
            let slot = k.slot(&mut a.limits);
            for (name, v) in m {
                match v {
                    Some(v) => {
                        slot.insert(name.clone(), *v);
                    }
                    None => {
                        slot.remove(name);
                    }
                }
            }
        }
        if let Some(q) = &self.qos {
            a.qos = a.qos.written(q);
        }
        if let Some(d) = &self.default_qos {
            a.default_qos = d.clone();
        }
    }

    /// `key=value` words in a fixed order.
    pub fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(f) = &self.fairshare {
            w.push(format!("Fairshare={}", or_clear(f.map(|f| f.to_arg()))));
        }
        for (k, v) in &self.scalars {
            w.push(format!("{}={}", k.keyword(), or_clear(*v)));
        }
        for (k, m) in &self.tres {
            w.push(format!("{}={}", k.keyword(), tres_words(m)));
        }
        if let Some(q) = &self.qos {
            w.push(match q {
                QosList::Inherit => "qos=".to_string(),
                QosList::Set(s) => format!("qos={}", join(s)),
                QosList::Delta { .. } => format!("qos={}", q.display()),
            });
        }
        if let Some(d) = &self.default_qos {
            w.push(format!("defaultqos={}", or_clear(d.as_ref())));
        }
        w
    }
}

/// QoS object changes. `None` inside = clear.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosSet {
    pub flags: Option<std::collections::BTreeSet<String>>,
    pub grp_tres_mins: BTreeMap<String, Option<u64>>,
    pub grp_tres: BTreeMap<String, Option<u64>>,
    pub grp_submit_jobs: Option<Option<u64>>,
    pub max_wall: Option<Option<u64>>,
    pub description: Option<String>,
}

fn tres_delta(a: &Tres, b: &Tres) -> BTreeMap<String, Option<u64>> {
    let mut m = BTreeMap::new();
    for (k, v) in b {
        if a.get(k) != Some(v) {
            m.insert(k.clone(), Some(*v));
        }
    }
    for k in a.keys() {
        if !b.contains_key(k) {
            m.insert(k.clone(), None);
        }
    }
    m
}

impl QosSet {
    pub fn between(from: &Qos, to: &Qos) -> QosSet {
        QosSet {
            flags: (from.flags != to.flags).then(|| to.flags.clone()),
            grp_tres_mins: tres_delta(&from.grp_tres_mins, &to.grp_tres_mins),
            grp_tres: tres_delta(&from.grp_tres, &to.grp_tres),
            grp_submit_jobs: (from.grp_submit_jobs != to.grp_submit_jobs).then_some(to.grp_submit_jobs),
            max_wall: (from.max_wall != to.max_wall).then_some(to.max_wall),
            description: match (&from.description, &to.description) {
                (_, None) => None,
                (a, Some(b)) if a.as_ref() == Some(b) => None,
                (_, Some(b)) => Some(b.clone()),
            },
        }
    }
    pub fn is_empty(&self) -> bool {
        self == &QosSet::default()
    }
    pub fn apply_to(&self, q: &mut Qos) {
        if let Some(f) = &self.flags {
            q.flags = f.clone();
        }
        for (k, v) in &self.grp_tres_mins {
            match v {
                Some(v) => q.grp_tres_mins.insert(k.clone(), *v),
                None => q.grp_tres_mins.remove(k),
            };
        }
        for (k, v) in &self.grp_tres {
            match v {
                Some(v) => q.grp_tres.insert(k.clone(), *v),
                None => q.grp_tres.remove(k),
            };
        }
        if let Some(v) = self.grp_submit_jobs {
            q.grp_submit_jobs = v;
        }
        if let Some(v) = self.max_wall {
            q.max_wall = v;
        }
        if let Some(d) = &self.description {
            q.description = Some(d.clone());
        }
    }
    pub fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(d) = &self.description {
            w.push(format!("Description={d}"));
        }
        if let Some(f) = &self.flags {
            if f.is_empty() {
                w.push("Flags=-1".into());
            } else {
                w.push(format!("Flags={}", f.iter().cloned().collect::<Vec<_>>().join(",")));
            }
        }
        if !self.grp_tres.is_empty() {
            w.push(format!("GrpTRES={}", tres_words(&self.grp_tres)));
        }
        if !self.grp_tres_mins.is_empty() {
            w.push(format!("GrpTRESMins={}", tres_words(&self.grp_tres_mins)));
        }
        if let Some(v) = self.grp_submit_jobs {
            w.push(format!("GrpSubmitJobs={}", or_clear(v)));
        }
        if let Some(v) = self.max_wall {
            w.push(format!("MaxWall={}", or_clear(v)));
        }
        w
    }
}

/// Every write slurmplan can issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    AddQos {
        names: Vec<Name>,
        set: QosSet,
    },
    ModifyQos {
        names: Vec<Name>,
        set: QosSet,
    },
    DeleteQos {
        names: Vec<Name>,
    },
    AddAccount {
        cluster: Name,
        names: Vec<Name>,
        parent: Name,
        record: AccountRecord,
        set: AssocSet,
    },
    ModifyAccount {
        cluster: Name,
        names: Vec<Name>,
        set: AssocSet,
    },
    ModifyAccountRecord {
        cluster: Name,
        names: Vec<Name>,
        record: AccountRecord,
    },
    Reparent {
        cluster: Name,
        name: Name,
        parent: Name,
    },
    DeleteAccount {
        cluster: Name,
        names: Vec<Name>,
    },
    /// `users` × (`account` + `more_accounts`): every pair is a new association. A batch over
    /// several accounts (users with the same new accounts and settings) names the
    /// `default_account` of its users explicitly: they are all new on the cluster, and it is
    /// always `account`. Both extra fields are empty on a plain one-account add.
    AddUser {
        cluster: Name,
        users: Vec<Name>,
        account: Name,
        partition: Option<Name>,
        set: AssocSet,
        more_accounts: Vec<Name>,
        default_account: Option<Name>,
    },
    ModifyUser {
        cluster: Name,
        users: Vec<Name>,
        account: Name,
        partition: Option<Name>,
        set: AssocSet,
    },
    SetDefaultAccount {
        cluster: Name,
        users: Vec<Name>,
        account: Name,
    },
    DeleteUser {
        cluster: Name,
        users: Vec<Name>,
        account: Name,
        partition: Option<Name>,
    },
    /// Every association of `users` under `account` (all partitions) in one command: no
    /// partition clause. Slurm 24.11 removes rows of a user's DefaultAccount only when the
    /// user's rows go together (docs/planning.md).
    DeleteUserAll {
        cluster: Name,
        users: Vec<Name>,
        account: Name,
    },
    /// New accounts and new users in one `sacctmgr load` of a flat file fed on stdin
    /// (`sacctmgr::load_file`: the file's text, and what it does as other commands).
    Load {
        cluster: Name,
        accounts: Vec<super::load_file::LoadAccount>,
        users: Vec<super::load_file::LoadUser>,
    },
}

fn names(v: &[Name]) -> String {
    v.iter().map(Name::as_str).collect::<Vec<_>>().join(",")
}

impl Command {
    /// The exact argv, program name first (`sacctmgr`; the runner substitutes its path).
    pub fn argv(&self) -> Vec<String> {
        let mut a: Vec<String> = vec!["sacctmgr".into(), "-i".into()];
        let mut push = |w: &str| a.push(w.to_string());
        match self {
            Command::AddQos { names: n, set } => {
                push("add");
                push("qos");
                push(&names(n));
                for w in set.words() {
                    push(&w);
                }
            }
            Command::ModifyQos { names: n, set } => {
                push("modify");
                push("qos");
                push("where");
                push(&format!("name={}", names(n)));
                push("set");
                for w in set.words() {
                    push(&w);
                }
            }
            Command::DeleteQos { names: n } => {
                push("delete");
                push("qos");
                push("where");
                push(&format!("name={}", names(n)));
            }
            Command::AddAccount { cluster, names: n, parent, record, set } => {
                push("add");
                push("account");
                push(&names(n));
                push(&format!("cluster={cluster}"));
                push(&format!("parent={parent}"));
                if let Some(d) = &record.description {
                    push(&format!("description={d}"));
                }
                if let Some(o) = &record.organization {
                    push(&format!("organization={o}"));
                }
                for w in set.words() {
                    push(&w);
                }
            }
            Command::ModifyAccount { cluster, names: n, set } => {
                push("modify");
                push("account");
                push("where");
                push(&format!("name={}", names(n)));
                push(&format!("cluster={cluster}"));
                push("set");
                for w in set.words() {
                    push(&w);
                }
            }
            Command::ModifyAccountRecord { cluster, names: n, record } => {
                push("modify");
                push("account");
                push("where");
                push(&format!("name={}", names(n)));
                push(&format!("cluster={cluster}"));
                push("set");
                if let Some(d) = &record.description {
                    push(&format!("description={d}"));
                }
                if let Some(o) = &record.organization {
                    push(&format!("organization={o}"));
                }
            }
            Command::Reparent { cluster, name, parent } => {
                push("modify");
                push("account");
                push("where");
                push(&format!("name={name}"));
                push(&format!("cluster={cluster}"));
                push("set");
                push(&format!("parent={parent}"));
            }
            Command::DeleteAccount { cluster, names: n } => {
                push("delete");
                push("account");
                push("where");
                push(&format!("name={}", names(n)));
                push(&format!("cluster={cluster}"));
            }
            Command::AddUser { cluster, users, account, partition, set, more_accounts, default_account } => {
                push("add");
                push("user");
                push(&names(users));
                if more_accounts.is_empty() {
                    push(&format!("account={account}"));
                } else {
                    push(&format!("account={account},{}", names(more_accounts)));
                }
                push(&format!("cluster={cluster}"));
                if let Some(p) = partition {
                    push(&format!("partition={p}"));
                }
                if let Some(d) = default_account {
                    push(&format!("defaultaccount={d}"));
                }
                for w in set.words() {
                    push(&w);
                }
            }
            Command::ModifyUser { cluster, users, account, partition, set } => {
                push("modify");
                push("user");
                push("where");
                push(&format!("name={}", names(users)));
                push(&format!("account={account}"));
                push(&format!("cluster={cluster}"));
                push(&format!("partition={}", partition.as_ref().map(Name::as_str).unwrap_or("")));
                push("set");
                for w in set.words() {
                    push(&w);
                }
            }
            Command::SetDefaultAccount { cluster, users, account } => {
                push("modify");
                push("user");
                push("where");
                push(&format!("name={}", names(users)));
                push(&format!("cluster={cluster}"));
                push("set");
                push(&format!("defaultaccount={account}"));
            }
            Command::DeleteUser { cluster, users, account, .. }
            | Command::DeleteUserAll { cluster, users, account } => {
                push("delete");
                push("user");
                push("where");
                push(&format!("name={}", names(users)));
                push(&format!("account={account}"));
                push(&format!("cluster={cluster}"));
                // DeleteUserAll has no partition clause: it removes every row under the account.
                if let Command::DeleteUser { partition, .. } = self {
                    push(&format!("partition={}", partition.as_ref().map(Name::as_str).unwrap_or("")));
                }
            }
            Command::Load { cluster, .. } => {
                push("load");
                push(super::load_file::STDIN_FILE);
                push(&format!("cluster={cluster}"));
            }
        }
        a
    }

    /// What sacctmgr reads on stdin for this command (the flat file of a load; else nothing).
    pub fn stdin(&self) -> Option<String> {
        match self {
            Command::Load { cluster, accounts, users } => Some(super::load_file::write(cluster, accounts, users)),
            _ => None,
        }
    }

    /// The objects a batched command lists (account, QoS or user names); empty for a re-parent.
    pub fn objects(&self) -> &[Name] {
        match self {
            Command::AddQos { names, .. }
            | Command::ModifyQos { names, .. }
            | Command::DeleteQos { names }
            | Command::AddAccount { names, .. }
            | Command::ModifyAccount { names, .. }
            | Command::ModifyAccountRecord { names, .. }
            | Command::DeleteAccount { names, .. } => names,
            Command::AddUser { users, .. }
            | Command::ModifyUser { users, .. }
            | Command::SetDefaultAccount { users, .. }
            | Command::DeleteUser { users, .. }
            | Command::DeleteUserAll { users, .. } => users,
            Command::Reparent { .. } | Command::Load { .. } => &[],
        }
    }

    /// The same command for other objects (see [`Command::objects`]).
    pub fn with_objects(&self, objects: Vec<Name>) -> Command {
        let mut c = self.clone();
        match &mut c {
            Command::AddQos { names, .. }
            | Command::ModifyQos { names, .. }
            | Command::DeleteQos { names }
            | Command::AddAccount { names, .. }
            | Command::ModifyAccount { names, .. }
            | Command::ModifyAccountRecord { names, .. }
            | Command::DeleteAccount { names, .. } => *names = objects,
            Command::AddUser { users, .. }
            | Command::ModifyUser { users, .. }
            | Command::SetDefaultAccount { users, .. }
            | Command::DeleteUser { users, .. }
            | Command::DeleteUserAll { users, .. } => *users = objects,
            Command::Reparent { .. } | Command::Load { .. } => {}
        }
        c
    }

    /// A multi-account `add user` as one-account adds, `account` first, none naming a
    /// default: a user's first association on a cluster becomes its DefaultAccount, and the
    /// batch names `account` as the default of its (new) users, so the singles end in the same
    /// state. A load comes back as the commands it stands for (`load::expand`). Any other
    /// command comes back as is.
    pub fn split_accounts(&self) -> Vec<Command> {
        match self {
            Command::AddUser { cluster, users, account, partition, set, more_accounts, .. }
                if !more_accounts.is_empty() =>
            {
                std::iter::once(account)
                    .chain(more_accounts)
                    .map(|a| Command::AddUser {
                        cluster: cluster.clone(),
                        users: users.clone(),
                        account: a.clone(),
                        partition: partition.clone(),
                        set: set.clone(),
                        more_accounts: Vec::new(),
                        default_account: None,
                    })
                    .collect()
            }
            Command::Load { cluster, accounts, users } => super::load_file::expand(cluster, accounts, users),
            _ => vec![self.clone()],
        }
    }

    /// The same command in two halves of its objects ([`Command::objects`]), in order: together
    /// they do what the whole does, as long as the halves' settings do not depend on each other,
    /// which holds for every batch the planner makes (one setting applied to many names).
    /// `None` when there is one object (or none: a re-parent, a load step). Used when a batch's
    /// name list does not fit in one argv word.
    pub fn halves(&self) -> Option<(Command, Command)> {
        let objects = self.objects();
        (objects.len() >= 2).then(|| {
            let (first, second) = objects.split_at(objects.len() / 2);
            (self.with_objects(first.to_vec()), self.with_objects(second.to_vec()))
        })
    }

    /// The cluster an association command acts on (None for QoS commands).
    pub fn cluster(&self) -> Option<&Name> {
        match self {
            Command::AddQos { .. } | Command::ModifyQos { .. } | Command::DeleteQos { .. } => None,
            Command::AddAccount { cluster, .. }
            | Command::ModifyAccount { cluster, .. }
            | Command::ModifyAccountRecord { cluster, .. }
            | Command::Reparent { cluster, .. }
            | Command::DeleteAccount { cluster, .. }
            | Command::AddUser { cluster, .. }
            | Command::ModifyUser { cluster, .. }
            | Command::SetDefaultAccount { cluster, .. }
            | Command::DeleteUser { cluster, .. }
            | Command::DeleteUserAll { cluster, .. }
            | Command::Load { cluster, .. } => Some(cluster),
        }
    }

    /// What sacctmgr must say for this command to have done anything (`add`, `modify`, `delete`).
    pub fn verb(&self) -> &'static str {
        match self {
            Command::AddQos { .. } | Command::AddAccount { .. } | Command::AddUser { .. } | Command::Load { .. } => {
                "add"
            }
            Command::DeleteQos { .. }
            | Command::DeleteAccount { .. }
            | Command::DeleteUser { .. }
            | Command::DeleteUserAll { .. } => "delete",
            _ => "modify",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurmplan_model::NameKind;

    fn n(s: &str) -> Name {
        Name::keep_case(s, NameKind::Account).unwrap()
    }

    #[test]
    fn swap_keeps_qos_and_default_in_one_command() {
        let set = AssocSet {
            qos: Some(QosList::Set([n("paused")].into())),
            default_qos: Some(Some(n("paused"))),
            ..Default::default()
        };
        let c = Command::ModifyAccount { cluster: n("testcl"), names: vec![n("proj1")], set };
        assert_eq!(
            c.argv().join(" "),
            "sacctmgr -i modify account where name=proj1 cluster=testcl set qos=paused defaultqos=paused"
        );
    }

    #[test]
    fn tres_clears_each_entry() {
        let mut from = Limits::default();
        from.grp_tres_mins.insert("cpu".into(), 10);
        from.grp_tres_mins.insert("mem".into(), 20);
        let mut to = Limits::default();
        to.grp_tres_mins.insert("cpu".into(), 30);
        to.grp_submit_jobs = Some(0);
        let set = AssocSet::limits_between(&from, &to);
        assert_eq!(set.words(), vec!["GrpSubmitJobs=0", "GrpTRESMins=cpu=30,mem=-1"]);
    }
}
