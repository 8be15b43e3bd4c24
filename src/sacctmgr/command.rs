//! The pure sacctmgr command builder: structured [`Command`]s and their exact argv.
//!
//! Every write slurmplan can issue is a `Command`; `argv()` is the one place that turns it into
//! words. Rules enforced here: `-i` always; every modify/delete has `where` with explicit names;
//! every association command carries `cluster=`. QoS objects are global in slurmdbd, so QoS
//! commands carry names but no cluster. This module spawns nothing and prints nothing.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::model::values::join;
use crate::model::{AccountRecord, Assoc, Fairshare, Limits, Name, NameKind, Qos, QosList, Tres};

/// Serde for `Option<Option<T>>`: absent = no change, `null` = clear, value = set.
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(v: &Option<Option<T>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

/// Scalar association limits (cleared with `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    /// Durations are shown in plans as minutes with a unit.
    pub fn is_duration(self) -> bool {
        matches!(self, Scalar::GrpWall | Scalar::MaxWall)
    }
}

/// TRES association limits (merged per TRES; one entry cleared with `name=-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
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
            a.qos = q.clone();
        }
        if let Some(d) = &self.default_qos {
            a.default_qos = d.clone();
        }
    }

    /// `key=value` words in a fixed order.
    pub fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(f) = &self.fairshare {
            w.push(format!("Fairshare={}", f.map(|f| f.to_arg()).unwrap_or_else(|| "-1".into())));
        }
        for (k, v) in &self.scalars {
            w.push(format!("{}={}", k.keyword(), v.map(|v| v.to_string()).unwrap_or_else(|| "-1".into())));
        }
        for (k, m) in &self.tres {
            let parts: Vec<String> = m
                .iter()
                .map(|(n, v)| format!("{n}={}", v.map(|v| v.to_string()).unwrap_or_else(|| "-1".into())))
                .collect();
            w.push(format!("{}={}", k.keyword(), parts.join(",")));
        }
        if let Some(q) = &self.qos {
            w.push(match q {
                QosList::Inherit => "qos=".to_string(),
                QosList::Set(s) => format!("qos={}", join(s)),
                QosList::Delta { .. } => format!("qos={}", q.display()),
            });
        }
        if let Some(d) = &self.default_qos {
            w.push(format!("defaultqos={}", d.as_ref().map(|n| n.as_str()).unwrap_or("-1")));
        }
        w
    }
}

/// QoS object changes. `None` inside = clear.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QosSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<std::collections::BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grp_tres_mins: BTreeMap<String, Option<u64>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grp_tres: BTreeMap<String, Option<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    pub grp_submit_jobs: Option<Option<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    pub max_wall: Option<Option<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
        let tres = |m: &BTreeMap<String, Option<u64>>| {
            m.iter()
                .map(|(n, v)| format!("{n}={}", v.map(|v| v.to_string()).unwrap_or_else(|| "-1".into())))
                .collect::<Vec<_>>()
                .join(",")
        };
        if !self.grp_tres.is_empty() {
            w.push(format!("GrpTRES={}", tres(&self.grp_tres)));
        }
        if !self.grp_tres_mins.is_empty() {
            w.push(format!("GrpTRESMins={}", tres(&self.grp_tres_mins)));
        }
        if let Some(v) = self.grp_submit_jobs {
            w.push(format!("GrpSubmitJobs={}", v.map(|v| v.to_string()).unwrap_or_else(|| "-1".into())));
        }
        if let Some(v) = self.max_wall {
            w.push(format!("MaxWall={}", v.map(|v| v.to_string()).unwrap_or_else(|| "-1".into())));
        }
        w
    }
}

/// Every write slurmplan can issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "snake_case")]
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
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        more_accounts: Vec<Name>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
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
    /// (`sacctmgr::load`: the file's text, and what it does as other commands).
    Load {
        cluster: Name,
        accounts: Vec<super::load::LoadAccount>,
        users: Vec<super::load::LoadUser>,
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
                push(super::load::STDIN_FILE);
                push(&format!("cluster={cluster}"));
            }
        }
        a
    }

    /// What sacctmgr reads on stdin for this command (the flat file of a load; else nothing).
    pub fn stdin(&self) -> Option<String> {
        match self {
            Command::Load { cluster, accounts, users } => Some(super::load::render(cluster, accounts, users)),
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
            Command::Load { cluster, accounts, users } => super::load::expand(cluster, accounts, users),
            _ => vec![self.clone()],
        }
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

// ---------------------------------------------------------------------------------------------
// Parsing argv back into a Command (for a fake sacctmgr in tests): the exact inverse of `argv()`.
// ---------------------------------------------------------------------------------------------

fn parse_names(s: &str, kind: NameKind) -> Result<Vec<Name>, String> {
    if s.is_empty() {
        return Err("empty name list".into());
    }
    s.split(',').map(|n| Name::strict(n, kind).map_err(|e| e.to_string())).collect()
}

fn parse_name(s: &str, kind: NameKind) -> Result<Name, String> {
    Name::strict(s, kind).map_err(|e| e.to_string())
}

/// `-1` = clear, else an integer.
fn parse_opt_u64(v: &str) -> Result<Option<u64>, String> {
    if v == "-1" { Ok(None) } else { v.parse::<u64>().map(Some).map_err(|_| format!("`{v}` is not a number")) }
}

/// `cpu=10,mem=-1` as written by `words()`.
fn parse_tres_words(v: &str) -> Result<BTreeMap<String, Option<u64>>, String> {
    let mut m = BTreeMap::new();
    for part in v.split(',') {
        let (k, x) = part.split_once('=').ok_or_else(|| format!("TRES entry `{part}` has no `=`"))?;
        if m.insert(k.to_string(), parse_opt_u64(x)?).is_some() {
            return Err(format!("TRES `{k}` appears twice"));
        }
    }
    Ok(m)
}

fn parse_qos_list(v: &str) -> Result<QosList, String> {
    if v.is_empty() {
        return Ok(QosList::Inherit);
    }
    let parts: Vec<&str> = v.split(',').collect();
    if parts.iter().any(|p| p.starts_with('+') || p.starts_with('-')) {
        let (mut add, mut remove) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        for p in parts {
            if let Some(n) = p.strip_prefix('+') {
                add.insert(parse_name(n, NameKind::Qos)?);
            } else if let Some(n) = p.strip_prefix('-') {
                remove.insert(parse_name(n, NameKind::Qos)?);
            } else {
                return Err(format!("QoS delta `{v}` mixes plain names and +/- entries"));
            }
        }
        return Ok(QosList::Delta { add, remove });
    }
    Ok(QosList::Set(parts.into_iter().map(|n| parse_name(n, NameKind::Qos)).collect::<Result<_, _>>()?))
}

impl AssocSet {
    /// Parse the words produced by [`AssocSet::words`].
    pub fn from_words(words: &[String]) -> Result<AssocSet, String> {
        let mut s = AssocSet::default();
        for w in words {
            let (k, v) = w.split_once('=').ok_or_else(|| format!("`{w}` is not key=value"))?;
            if k == "Fairshare" {
                let f = match v {
                    "-1" => None,
                    "parent" => Some(Fairshare::Parent),
                    n => Some(Fairshare::Shares(n.parse().map_err(|_| format!("bad fairshare `{n}`"))?)),
                };
                s.fairshare = Some(f);
            } else if let Some(sc) = Scalar::ALL.into_iter().find(|x| x.keyword() == k) {
                s.scalars.insert(sc, parse_opt_u64(v)?);
            } else if let Some(t) = TresLimit::ALL.into_iter().find(|x| x.keyword() == k) {
                s.tres.insert(t, parse_tres_words(v)?);
            } else if k == "qos" {
                s.qos = Some(parse_qos_list(v)?);
            } else if k == "defaultqos" {
                s.default_qos = Some(if v == "-1" { None } else { Some(parse_name(v, NameKind::Qos)?) });
            } else {
                return Err(format!("unknown association setting `{k}`"));
            }
        }
        Ok(s)
    }
}

impl QosSet {
    /// Parse the words produced by [`QosSet::words`].
    pub fn from_words(words: &[String]) -> Result<QosSet, String> {
        let mut s = QosSet::default();
        for w in words {
            let (k, v) = w.split_once('=').ok_or_else(|| format!("`{w}` is not key=value"))?;
            match k {
                "Description" => s.description = Some(v.to_string()),
                "Flags" if v == "-1" => s.flags = Some(Default::default()),
                "Flags" => s.flags = Some(v.split(',').map(str::to_string).collect()),
                "GrpTRES" => s.grp_tres = parse_tres_words(v)?,
                "GrpTRESMins" => s.grp_tres_mins = parse_tres_words(v)?,
                "GrpSubmitJobs" => s.grp_submit_jobs = Some(parse_opt_u64(v)?),
                "MaxWall" => s.max_wall = Some(parse_opt_u64(v)?),
                _ => return Err(format!("unknown QoS setting `{k}`")),
            }
        }
        Ok(s)
    }
}

/// A cursor over argv words with `key=value` helpers.
struct Words<'a> {
    w: &'a [String],
    i: usize,
}

impl<'a> Words<'a> {
    fn next(&mut self) -> Result<&'a str, String> {
        let w = self.w.get(self.i).ok_or("argv ends too early")?;
        self.i += 1;
        Ok(w.as_str())
    }
    fn expect(&mut self, word: &str) -> Result<(), String> {
        match self.next()? {
            w if w == word => Ok(()),
            w => Err(format!("expected `{word}`, found `{w}`")),
        }
    }
    fn kv(&mut self, key: &str) -> Result<&'a str, String> {
        let w = self.next()?;
        w.strip_prefix(key)
            .and_then(|r| r.strip_prefix('='))
            .ok_or_else(|| format!("expected `{key}=...`, found `{w}`"))
    }
    /// An optional `key=value` (only if the next word has that key).
    fn opt_kv(&mut self, key: &str) -> Option<&'a str> {
        let w = self.w.get(self.i)?;
        let v = w.strip_prefix(key).and_then(|r| r.strip_prefix('='))?;
        self.i += 1;
        Some(v)
    }
    fn rest(&mut self) -> &'a [String] {
        let r = &self.w[self.i.min(self.w.len())..];
        self.i = self.w.len();
        r
    }
    fn done(&self) -> Result<(), String> {
        match self.w.get(self.i) {
            None => Ok(()),
            Some(w) => Err(format!("unexpected word `{w}`")),
        }
    }
}

fn opt_partition(v: &str) -> Result<Option<Name>, String> {
    if v.is_empty() { Ok(None) } else { parse_name(v, NameKind::Partition).map(Some) }
}

impl Command {
    /// Parse exactly what [`Command::argv`] produces (argv[0] is the program and is not checked,
    /// so a runner-substituted path is accepted). Used by fakes of sacctmgr in tests.
    ///
    /// Ambiguities inherent in the argv form: `qos=` always parses as `QosList::Inherit` (so an
    /// explicit empty `QosList::Set` does not round-trip), and `modify account ... set` with
    /// nothing after `set` parses as a `ModifyAccount` with an empty `AssocSet`.
    pub fn from_argv(argv: &[String]) -> Result<Command, String> {
        let mut w = Words { w: argv, i: 0 };
        w.next()?; // program
        w.expect("-i")?;
        let verb = w.next()?;
        let entity = w.next()?;
        let cmd = match (verb, entity) {
            ("add", "qos") => {
                let names = parse_names(w.next()?, NameKind::Qos)?;
                Command::AddQos { names, set: QosSet::from_words(w.rest())? }
            }
            ("modify", "qos") => {
                w.expect("where")?;
                let names = parse_names(w.kv("name")?, NameKind::Qos)?;
                w.expect("set")?;
                Command::ModifyQos { names, set: QosSet::from_words(w.rest())? }
            }
            ("delete", "qos") => {
                w.expect("where")?;
                Command::DeleteQos { names: parse_names(w.kv("name")?, NameKind::Qos)? }
            }
            ("add", "account") => {
                let names = parse_names(w.next()?, NameKind::Account)?;
                let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
                let parent = parse_name(w.kv("parent")?, NameKind::Account)?;
                let record = AccountRecord {
                    description: w.opt_kv("description").map(str::to_string),
                    organization: w.opt_kv("organization").map(str::to_string),
                };
                Command::AddAccount { cluster, names, parent, record, set: AssocSet::from_words(w.rest())? }
            }
            ("modify", "account") => {
                w.expect("where")?;
                let names = parse_names(w.kv("name")?, NameKind::Account)?;
                let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
                w.expect("set")?;
                let rest = w.rest();
                let first = rest.first().map(String::as_str).unwrap_or("");
                if let Some(p) = first.strip_prefix("parent=") {
                    if rest.len() != 1 || names.len() != 1 {
                        return Err("a re-parent names one account and sets only `parent=`".into());
                    }
                    let name = names.into_iter().next().expect("one name");
                    Command::Reparent { cluster, name, parent: parse_name(p, NameKind::Account)? }
                } else if first.starts_with("description=") || first.starts_with("organization=") {
                    let mut r = Words { w: rest, i: 0 };
                    let record = AccountRecord {
                        description: r.opt_kv("description").map(str::to_string),
                        organization: r.opt_kv("organization").map(str::to_string),
                    };
                    r.done()?;
                    Command::ModifyAccountRecord { cluster, names, record }
                } else {
                    Command::ModifyAccount { cluster, names, set: AssocSet::from_words(rest)? }
                }
            }
            ("delete", "account") => {
                w.expect("where")?;
                let names = parse_names(w.kv("name")?, NameKind::Account)?;
                let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
                Command::DeleteAccount { cluster, names }
            }
            ("add", "user") => {
                let users = parse_names(w.next()?, NameKind::User)?;
                let mut more_accounts = parse_names(w.kv("account")?, NameKind::Account)?;
                let account = more_accounts.remove(0);
                let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
                let partition = w.opt_kv("partition").map(|p| parse_name(p, NameKind::Partition)).transpose()?;
                let default_account =
                    w.opt_kv("defaultaccount").map(|d| parse_name(d, NameKind::Account)).transpose()?;
                let set = AssocSet::from_words(w.rest())?;
                Command::AddUser { cluster, users, account, partition, set, more_accounts, default_account }
            }
            ("modify", "user") => {
                w.expect("where")?;
                let users = parse_names(w.kv("name")?, NameKind::User)?;
                if let Some(c) = w.opt_kv("cluster") {
                    let cluster = parse_name(c, NameKind::Cluster)?;
                    w.expect("set")?;
                    let account = parse_name(w.kv("defaultaccount")?, NameKind::Account)?;
                    Command::SetDefaultAccount { cluster, users, account }
                } else {
                    let account = parse_name(w.kv("account")?, NameKind::Account)?;
                    let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
                    let partition = opt_partition(w.kv("partition")?)?;
                    w.expect("set")?;
                    Command::ModifyUser { cluster, users, account, partition, set: AssocSet::from_words(w.rest())? }
                }
            }
            ("delete", "user") => {
                w.expect("where")?;
                let users = parse_names(w.kv("name")?, NameKind::User)?;
                let account = parse_name(w.kv("account")?, NameKind::Account)?;
                let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
                match w.opt_kv("partition") {
                    Some(p) => Command::DeleteUser { cluster, users, account, partition: opt_partition(p)? },
                    None => Command::DeleteUserAll { cluster, users, account },
                }
            }
            (v, e) => return Err(format!("unknown command `{v} {e}`")),
        };
        w.done()?;
        Ok(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::strict(s, NameKind::Account).unwrap()
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
    fn clears_survive_json() {
        let set = AssocSet { default_qos: Some(None), fairshare: Some(None), ..Default::default() };
        let back: AssocSet = serde_json::from_str(&serde_json::to_string(&set).unwrap()).unwrap();
        assert_eq!(back, set);
        let q = QosSet { max_wall: Some(None), grp_submit_jobs: Some(Some(0)), ..Default::default() };
        let back: QosSet = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back, q);
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

    #[test]
    fn from_argv_inverts_argv_for_every_variant() {
        let c = n("c1");
        let mut tres = BTreeMap::new();
        tres.insert("cpu".to_string(), Some(10));
        tres.insert("mem".to_string(), None);
        let set = AssocSet {
            fairshare: Some(Some(Fairshare::Parent)),
            scalars: [(Scalar::GrpSubmitJobs, Some(0)), (Scalar::MaxWall, None)].into(),
            tres: [(TresLimit::GrpTresMins, tres.clone())].into(),
            qos: Some(QosList::Delta { add: [n("a")].into(), remove: [n("b")].into() }),
            default_qos: Some(None),
        };
        let qset = QosSet {
            flags: Some(Default::default()),
            grp_tres: tres,
            grp_submit_jobs: Some(None),
            max_wall: Some(Some(60)),
            description: Some("two words".into()),
            ..Default::default()
        };
        let rec = AccountRecord { description: Some("d x".into()), organization: None };
        let cmds = vec![
            Command::AddQos { names: vec![n("a"), n("b")], set: qset.clone() },
            Command::ModifyQos { names: vec![n("a")], set: qset },
            Command::DeleteQos { names: vec![n("a")] },
            Command::AddAccount {
                cluster: c.clone(),
                names: vec![n("p")],
                parent: n("root"),
                record: rec.clone(),
                set: set.clone(),
            },
            Command::ModifyAccount { cluster: c.clone(), names: vec![n("p"), n("q")], set: set.clone() },
            Command::ModifyAccountRecord { cluster: c.clone(), names: vec![n("p")], record: rec },
            Command::Reparent { cluster: c.clone(), name: n("p"), parent: n("q") },
            Command::DeleteAccount { cluster: c.clone(), names: vec![n("p")] },
            Command::AddUser {
                cluster: c.clone(),
                users: vec![n("u")],
                account: n("p"),
                partition: Some(n("gpu")),
                set: set.clone(),
                more_accounts: vec![],
                default_account: None,
            },
            Command::AddUser {
                cluster: c.clone(),
                users: vec![n("u"), n("v")],
                account: n("p"),
                partition: None,
                set: set.clone(),
                more_accounts: vec![n("q"), n("r")],
                default_account: Some(n("p")),
            },
            Command::ModifyUser { cluster: c.clone(), users: vec![n("u")], account: n("p"), partition: None, set },
            Command::SetDefaultAccount { cluster: c.clone(), users: vec![n("u"), n("v")], account: n("p") },
            Command::DeleteUser { cluster: c.clone(), users: vec![n("u")], account: n("p"), partition: Some(n("gpu")) },
            Command::DeleteUser { cluster: c.clone(), users: vec![n("u")], account: n("p"), partition: None },
            Command::DeleteUserAll { cluster: c, users: vec![n("u"), n("v")], account: n("p") },
        ];
        for cmd in cmds {
            assert_eq!(Command::from_argv(&cmd.argv()), Ok(cmd.clone()), "{}", cmd.argv().join(" "));
        }
        let bad = |s: &str| Command::from_argv(&s.split(' ').map(String::from).collect::<Vec<_>>());
        assert!(bad("sacctmgr modify account where name=p cluster=c set GrpJobs=1").is_err()); // no -i
        assert!(bad("sacctmgr -i modify account where name=p cluster=c set Bogus=1").is_err());
        assert!(bad("sacctmgr -i delete account where name=p cluster=c extra").is_err());
    }
}
