//! The plan file's own types: the on-disk (and `--format json`) schema of a plan, formats 1
//! and 2 (docs/operations.md, "The plan file's schema"), with one conversion each way between them and the
//! planner's internal types ([`FilePlan::of`], [`FilePlan::into_plan`]).
//!
//! Every structure of a plan is described here: the plan, its steps and phases, every kind of
//! command (with its sets of settings and a load's lines), the changes and their actions, the
//! lints and the fingerprint scope. An internal type may be renamed, reordered or reshaped
//! freely; only these types decide the bytes, and tests/data/plan-files holds saved files that
//! must load and be written back byte for byte. Leaf values (names, `Fairshare`, `QosList`, a
//! QoS, an association, an account record, a user key) are written with the model's own serde,
//! the encoding the state fingerprint hashes, so they cannot move without every fingerprint
//! moving too.
//!
//! Writing borrows from the plan (no copy of its data); reading moves the parsed values into
//! the plan. Pure: no I/O, no checks of meaning (that is `plan::check`).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::lints::{Lint, Severity};
use crate::{Phase, Plan, PlannedChange, Step, Summary};
use slurmplan_diff::{Action, Change};
use slurmplan_model::fingerprint::{ClusterScope, Scope};
use slurmplan_model::{AccountRecord, Assoc, Fairshare, Name, Qos, QosList, UserKey};
use slurmplan_sacctmgr::command::{AssocSet, Command, QosSet, Scalar, TresLimit};
use slurmplan_sacctmgr::load_file::{LoadAccount, LoadRow, LoadUser};

type Names<'a> = Cow<'a, [Name]>;
type TresSet<'a> = Cow<'a, BTreeMap<String, Option<u64>>>;

fn empty<T>(v: &[T]) -> bool {
    v.is_empty()
}

fn empty_map(m: &TresSet<'_>) -> bool {
    m.is_empty()
}

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

/// A plan as written: the `plan` member of the file, and the whole `--format json` output.
#[derive(Serialize, Deserialize)]
pub struct FilePlan<'a> {
    format_version: u32,
    generator: Cow<'a, str>,
    current_fingerprint: Cow<'a, str>,
    desired_hash: Cow<'a, str>,
    changes: Vec<FileChange<'a>>,
    steps: Vec<FileStep<'a>>,
    summary: FileSummary,
    #[serde(default, skip_serializing_if = "empty")]
    warnings: Cow<'a, [String]>,
    /// Absent in format-1 files written before lints existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    lints: Vec<FileLint<'a>>,
    /// Format 2 only: what `current_fingerprint` covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<FileScope<'a>>,
}

#[derive(Serialize, Deserialize)]
struct FileStep<'a> {
    number: usize,
    phase: FilePhase,
    command: FileCommand<'a>,
    argv: Cow<'a, [String]>,
    causes: Cow<'a, [String]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<Cow<'a, str>>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FilePhase {
    QosCreate,
    AccountCreate,
    UserAdd,
    DefaultAccount,
    UserRemove,
    AccountDelete,
    Reparent,
    QosSwap,
    Limits,
    QosDelete,
}

#[derive(Serialize, Deserialize)]
struct FileSummary {
    add: usize,
    change: usize,
    destroy: usize,
}

#[derive(Serialize, Deserialize)]
struct FileChange<'a> {
    address: Cow<'a, str>,
    action: FileAction,
    #[serde(flatten)]
    change: FileDiff<'a>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FileAction {
    Create,
    Update,
    Reparent,
    Delete,
}

/// One object-level difference (`kind`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum FileDiff<'a> {
    QosCreate {
        name: Cow<'a, Name>,
        qos: Cow<'a, Qos>,
    },
    QosUpdate {
        name: Cow<'a, Name>,
        from: Cow<'a, Qos>,
        to: Cow<'a, Qos>,
    },
    QosDelete {
        name: Cow<'a, Name>,
        qos: Cow<'a, Qos>,
    },
    AccountCreate {
        cluster: Cow<'a, Name>,
        name: Cow<'a, Name>,
        parent: Cow<'a, Name>,
        assoc: Cow<'a, Assoc>,
        record: Cow<'a, AccountRecord>,
    },
    AccountReparent {
        cluster: Cow<'a, Name>,
        name: Cow<'a, Name>,
        from: Cow<'a, Name>,
        to: Cow<'a, Name>,
    },
    AccountUpdate {
        cluster: Cow<'a, Name>,
        name: Cow<'a, Name>,
        from: Cow<'a, Assoc>,
        to: Cow<'a, Assoc>,
    },
    AccountRecordUpdate {
        name: Cow<'a, Name>,
        from: Cow<'a, AccountRecord>,
        to: Cow<'a, AccountRecord>,
    },
    AccountDelete {
        cluster: Cow<'a, Name>,
        name: Cow<'a, Name>,
        parent: Cow<'a, Name>,
        assoc: Cow<'a, Assoc>,
    },
    UserCreate {
        cluster: Cow<'a, Name>,
        key: Cow<'a, UserKey>,
        assoc: Cow<'a, Assoc>,
    },
    UserUpdate {
        cluster: Cow<'a, Name>,
        key: Cow<'a, UserKey>,
        from: Cow<'a, Assoc>,
        to: Cow<'a, Assoc>,
    },
    UserDelete {
        cluster: Cow<'a, Name>,
        key: Cow<'a, UserKey>,
        assoc: Cow<'a, Assoc>,
    },
    DefaultAccount {
        cluster: Cow<'a, Name>,
        user: Cow<'a, Name>,
        from: Option<Cow<'a, Name>>,
        to: Cow<'a, Name>,
    },
}

/// One sacctmgr command (`verb`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "snake_case")]
enum FileCommand<'a> {
    AddQos {
        names: Names<'a>,
        set: FileQosSet<'a>,
    },
    ModifyQos {
        names: Names<'a>,
        set: FileQosSet<'a>,
    },
    DeleteQos {
        names: Names<'a>,
    },
    AddAccount {
        cluster: Cow<'a, Name>,
        names: Names<'a>,
        parent: Cow<'a, Name>,
        record: Cow<'a, AccountRecord>,
        set: FileAssocSet<'a>,
    },
    ModifyAccount {
        cluster: Cow<'a, Name>,
        names: Names<'a>,
        set: FileAssocSet<'a>,
    },
    ModifyAccountRecord {
        cluster: Cow<'a, Name>,
        names: Names<'a>,
        record: Cow<'a, AccountRecord>,
    },
    Reparent {
        cluster: Cow<'a, Name>,
        name: Cow<'a, Name>,
        parent: Cow<'a, Name>,
    },
    DeleteAccount {
        cluster: Cow<'a, Name>,
        names: Names<'a>,
    },
    AddUser {
        cluster: Cow<'a, Name>,
        users: Names<'a>,
        account: Cow<'a, Name>,
        partition: Option<Cow<'a, Name>>,
        set: FileAssocSet<'a>,
        #[serde(default, skip_serializing_if = "empty")]
        more_accounts: Names<'a>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default_account: Option<Cow<'a, Name>>,
    },
    ModifyUser {
        cluster: Cow<'a, Name>,
        users: Names<'a>,
        account: Cow<'a, Name>,
        partition: Option<Cow<'a, Name>>,
        set: FileAssocSet<'a>,
    },
    SetDefaultAccount {
        cluster: Cow<'a, Name>,
        users: Names<'a>,
        account: Cow<'a, Name>,
    },
    DeleteUser {
        cluster: Cow<'a, Name>,
        users: Names<'a>,
        account: Cow<'a, Name>,
        partition: Option<Cow<'a, Name>>,
    },
    DeleteUserAll {
        cluster: Cow<'a, Name>,
        users: Names<'a>,
        account: Cow<'a, Name>,
    },
    /// `sacctmgr load` of a flat file on stdin; the file's text is made from these lines.
    Load {
        cluster: Cow<'a, Name>,
        accounts: Vec<FileLoadAccount<'a>>,
        users: Vec<FileLoadUser<'a>>,
    },
}

/// Association settings a command changes; `null` inside = clear (`-1`).
#[derive(Default, Serialize, Deserialize)]
struct FileAssocSet<'a> {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    fairshare: Option<Option<Fairshare>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    scalars: BTreeMap<FileScalar, Option<u64>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    tres: BTreeMap<FileTresLimit, TresSet<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    qos: Option<Cow<'a, QosList>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    default_qos: Option<Option<Cow<'a, Name>>>,
}

impl FileAssocSet<'_> {
    fn is_empty(&self) -> bool {
        self.fairshare.is_none()
            && self.scalars.is_empty()
            && self.tres.is_empty()
            && self.qos.is_none()
            && self.default_qos.is_none()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum FileScalar {
    GrpJobs,
    GrpSubmitJobs,
    GrpWall,
    MaxJobs,
    MaxSubmitJobs,
    MaxWall,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum FileTresLimit {
    GrpTres,
    GrpTresMins,
    MaxTres,
    MaxTresMins,
}

/// QoS settings a command changes; `null` inside = clear.
#[derive(Serialize, Deserialize)]
struct FileQosSet<'a> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flags: Option<Cow<'a, BTreeSet<String>>>,
    #[serde(default, skip_serializing_if = "empty_map")]
    grp_tres_mins: TresSet<'a>,
    #[serde(default, skip_serializing_if = "empty_map")]
    grp_tres: TresSet<'a>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    grp_submit_jobs: Option<Option<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]
    max_wall: Option<Option<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<Cow<'a, str>>,
}

#[derive(Serialize, Deserialize)]
struct FileLoadAccount<'a> {
    name: Cow<'a, Name>,
    parent: Cow<'a, Name>,
    description: Cow<'a, str>,
    organization: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "FileAssocSet::is_empty")]
    set: FileAssocSet<'a>,
}

#[derive(Serialize, Deserialize)]
struct FileLoadRow<'a> {
    account: Cow<'a, Name>,
    #[serde(default, skip_serializing_if = "FileAssocSet::is_empty")]
    set: FileAssocSet<'a>,
}

#[derive(Serialize, Deserialize)]
struct FileLoadUser<'a> {
    name: Cow<'a, Name>,
    default_account: Cow<'a, Name>,
    rows: Vec<FileLoadRow<'a>>,
}

#[derive(Serialize, Deserialize)]
struct FileLint<'a> {
    code: Cow<'a, str>,
    name: Cow<'a, str>,
    severity: FileSeverity,
    message: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<usize>,
    address: Cow<'a, str>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FileSeverity {
    Info,
    Warning,
}

#[derive(Serialize, Deserialize)]
struct FileScope<'a> {
    qos: Cow<'a, BTreeSet<Name>>,
    clusters: BTreeMap<Cow<'a, Name>, FileClusterScope<'a>>,
}

#[derive(Serialize, Deserialize)]
struct FileClusterScope<'a> {
    accounts: Cow<'a, BTreeSet<Name>>,
    users: Cow<'a, BTreeSet<Name>>,
}

/// One command in the plan file's JSON (`verb` and its fields), for records that hold commands
/// outside a plan (the differential tests' saved steps): `#[serde(with = "...::command_json")]`.
pub mod command_json {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::FileCommand;
    use slurmplan_sacctmgr::command::Command;

    pub fn serialize<S: Serializer>(c: &Command, s: S) -> Result<S::Ok, S::Error> {
        FileCommand::of(c).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Command, D::Error> {
        FileCommand::deserialize(d).map(FileCommand::into_command)
    }
}

// ---- internal -> file (borrowing) ----

fn b<T: Clone>(v: &T) -> Cow<'_, T> {
    Cow::Borrowed(v)
}

fn bs<T: Clone>(v: &[T]) -> Cow<'_, [T]> {
    Cow::Borrowed(v)
}

fn bo<T: Clone>(v: &Option<T>) -> Option<Cow<'_, T>> {
    v.as_ref().map(Cow::Borrowed)
}

impl<'a> FilePlan<'a> {
    /// The file form of `plan`, borrowing from it.
    pub fn of(plan: &'a Plan) -> FilePlan<'a> {
        FilePlan {
            format_version: plan.format_version,
            generator: Cow::Borrowed(&plan.generator),
            current_fingerprint: Cow::Borrowed(&plan.current_fingerprint),
            desired_hash: Cow::Borrowed(&plan.desired_hash),
            changes: plan.changes.iter().map(FileChange::of).collect(),
            steps: plan.steps.iter().map(FileStep::of).collect(),
            summary: FileSummary { add: plan.summary.add, change: plan.summary.change, destroy: plan.summary.destroy },
            warnings: bs(&plan.warnings),
            lints: plan.lints.iter().map(FileLint::of).collect(),
            scope: plan.scope.as_ref().map(FileScope::of),
        }
    }

    /// The format version this plan declares.
    pub fn format_version(&self) -> u32 {
        self.format_version
    }

    /// The internal plan, moving what was parsed.
    pub fn into_plan(self) -> Plan {
        Plan {
            format_version: self.format_version,
            generator: self.generator.into_owned(),
            current_fingerprint: self.current_fingerprint.into_owned(),
            desired_hash: self.desired_hash.into_owned(),
            changes: self.changes.into_iter().map(FileChange::into_change).collect(),
            steps: self.steps.into_iter().map(FileStep::into_step).collect(),
            summary: Summary { add: self.summary.add, change: self.summary.change, destroy: self.summary.destroy },
            warnings: self.warnings.into_owned(),
            lints: self.lints.into_iter().map(FileLint::into_lint).collect(),
            scope: self.scope.map(FileScope::into_scope),
        }
    }
}

impl<'a> FileStep<'a> {
    fn of(s: &'a Step) -> FileStep<'a> {
        FileStep {
            number: s.number,
            phase: FilePhase::of(s.phase),
            command: FileCommand::of(&s.command),
            argv: bs(&s.argv),
            causes: bs(&s.causes),
            note: s.note.as_deref().map(Cow::Borrowed),
        }
    }

    fn into_step(self) -> Step {
        Step {
            number: self.number,
            phase: self.phase.into_phase(),
            command: self.command.into_command(),
            argv: self.argv.into_owned(),
            causes: self.causes.into_owned(),
            note: self.note.map(Cow::into_owned),
        }
    }
}

impl FilePhase {
    fn of(p: Phase) -> FilePhase {
        match p {
            Phase::QosCreate => FilePhase::QosCreate,
            Phase::AccountCreate => FilePhase::AccountCreate,
            Phase::UserAdd => FilePhase::UserAdd,
            Phase::DefaultAccount => FilePhase::DefaultAccount,
            Phase::UserRemove => FilePhase::UserRemove,
            Phase::AccountDelete => FilePhase::AccountDelete,
            Phase::Reparent => FilePhase::Reparent,
            Phase::QosSwap => FilePhase::QosSwap,
            Phase::Limits => FilePhase::Limits,
            Phase::QosDelete => FilePhase::QosDelete,
        }
    }

    fn into_phase(self) -> Phase {
        match self {
            FilePhase::QosCreate => Phase::QosCreate,
            FilePhase::AccountCreate => Phase::AccountCreate,
            FilePhase::UserAdd => Phase::UserAdd,
            FilePhase::DefaultAccount => Phase::DefaultAccount,
            FilePhase::UserRemove => Phase::UserRemove,
            FilePhase::AccountDelete => Phase::AccountDelete,
            FilePhase::Reparent => Phase::Reparent,
            FilePhase::QosSwap => Phase::QosSwap,
            FilePhase::Limits => Phase::Limits,
            FilePhase::QosDelete => Phase::QosDelete,
        }
    }
}

impl FileAction {
    fn of(a: Action) -> FileAction {
        match a {
            Action::Create => FileAction::Create,
            Action::Update => FileAction::Update,
            Action::Reparent => FileAction::Reparent,
            Action::Delete => FileAction::Delete,
        }
    }

    fn into_action(self) -> Action {
        match self {
            FileAction::Create => Action::Create,
            FileAction::Update => Action::Update,
            FileAction::Reparent => Action::Reparent,
            FileAction::Delete => Action::Delete,
        }
    }
}

impl<'a> FileChange<'a> {
    fn of(c: &'a PlannedChange) -> FileChange<'a> {
        FileChange {
            address: Cow::Borrowed(&c.address),
            action: FileAction::of(c.action),
            change: FileDiff::of(&c.change),
        }
    }

    fn into_change(self) -> PlannedChange {
        PlannedChange {
            address: self.address.into_owned(),
            action: self.action.into_action(),
            change: self.change.into_change(),
        }
    }
}

impl<'a> FileDiff<'a> {
    fn of(c: &'a Change) -> FileDiff<'a> {
        match c {
            Change::QosCreate { name, qos } => FileDiff::QosCreate { name: b(name), qos: b(qos) },
            Change::QosUpdate { name, from, to } => FileDiff::QosUpdate { name: b(name), from: b(from), to: b(to) },
            Change::QosDelete { name, qos } => FileDiff::QosDelete { name: b(name), qos: b(qos) },
            Change::AccountCreate { cluster, name, parent, assoc, record } => FileDiff::AccountCreate {
                cluster: b(cluster),
                name: b(name),
                parent: b(parent),
                assoc: b(assoc),
                record: b(record),
            },
            Change::AccountReparent { cluster, name, from, to } => {
                FileDiff::AccountReparent { cluster: b(cluster), name: b(name), from: b(from), to: b(to) }
            }
            Change::AccountUpdate { cluster, name, from, to } => {
                FileDiff::AccountUpdate { cluster: b(cluster), name: b(name), from: b(from), to: b(to) }
            }
            Change::AccountRecordUpdate { name, from, to } => {
                FileDiff::AccountRecordUpdate { name: b(name), from: b(from), to: b(to) }
            }
            Change::AccountDelete { cluster, name, parent, assoc } => {
                FileDiff::AccountDelete { cluster: b(cluster), name: b(name), parent: b(parent), assoc: b(assoc) }
            }
            Change::UserCreate { cluster, key, assoc } => {
                FileDiff::UserCreate { cluster: b(cluster), key: b(key), assoc: b(assoc) }
            }
            Change::UserUpdate { cluster, key, from, to } => {
                FileDiff::UserUpdate { cluster: b(cluster), key: b(key), from: b(from), to: b(to) }
            }
            Change::UserDelete { cluster, key, assoc } => {
                FileDiff::UserDelete { cluster: b(cluster), key: b(key), assoc: b(assoc) }
            }
            Change::DefaultAccount { cluster, user, from, to } => {
                FileDiff::DefaultAccount { cluster: b(cluster), user: b(user), from: bo(from), to: b(to) }
            }
        }
    }

    fn into_change(self) -> Change {
        match self {
            FileDiff::QosCreate { name, qos } => Change::QosCreate { name: name.into_owned(), qos: qos.into_owned() },
            FileDiff::QosUpdate { name, from, to } => {
                Change::QosUpdate { name: name.into_owned(), from: from.into_owned(), to: to.into_owned() }
            }
            FileDiff::QosDelete { name, qos } => Change::QosDelete { name: name.into_owned(), qos: qos.into_owned() },
            FileDiff::AccountCreate { cluster, name, parent, assoc, record } => Change::AccountCreate {
                cluster: cluster.into_owned(),
                name: name.into_owned(),
                parent: parent.into_owned(),
                assoc: assoc.into_owned(),
                record: record.into_owned(),
            },
            FileDiff::AccountReparent { cluster, name, from, to } => Change::AccountReparent {
                cluster: cluster.into_owned(),
                name: name.into_owned(),
                from: from.into_owned(),
                to: to.into_owned(),
            },
            FileDiff::AccountUpdate { cluster, name, from, to } => Change::AccountUpdate {
                cluster: cluster.into_owned(),
                name: name.into_owned(),
                from: from.into_owned(),
                to: to.into_owned(),
            },
            FileDiff::AccountRecordUpdate { name, from, to } => {
                Change::AccountRecordUpdate { name: name.into_owned(), from: from.into_owned(), to: to.into_owned() }
            }
            FileDiff::AccountDelete { cluster, name, parent, assoc } => Change::AccountDelete {
                cluster: cluster.into_owned(),
                name: name.into_owned(),
                parent: parent.into_owned(),
                assoc: assoc.into_owned(),
            },
            FileDiff::UserCreate { cluster, key, assoc } => {
                Change::UserCreate { cluster: cluster.into_owned(), key: key.into_owned(), assoc: assoc.into_owned() }
            }
            FileDiff::UserUpdate { cluster, key, from, to } => Change::UserUpdate {
                cluster: cluster.into_owned(),
                key: key.into_owned(),
                from: from.into_owned(),
                to: to.into_owned(),
            },
            FileDiff::UserDelete { cluster, key, assoc } => {
                Change::UserDelete { cluster: cluster.into_owned(), key: key.into_owned(), assoc: assoc.into_owned() }
            }
            FileDiff::DefaultAccount { cluster, user, from, to } => Change::DefaultAccount {
                cluster: cluster.into_owned(),
                user: user.into_owned(),
                from: from.map(Cow::into_owned),
                to: to.into_owned(),
            },
        }
    }
}

impl<'a> FileCommand<'a> {
    fn of(c: &'a Command) -> FileCommand<'a> {
        match c {
            Command::AddQos { names, set } => FileCommand::AddQos { names: bs(names), set: FileQosSet::of(set) },
            Command::ModifyQos { names, set } => FileCommand::ModifyQos { names: bs(names), set: FileQosSet::of(set) },
            Command::DeleteQos { names } => FileCommand::DeleteQos { names: bs(names) },
            Command::AddAccount { cluster, names, parent, record, set } => FileCommand::AddAccount {
                cluster: b(cluster),
                names: bs(names),
                parent: b(parent),
                record: b(record),
                set: FileAssocSet::of(set),
            },
            Command::ModifyAccount { cluster, names, set } => {
                FileCommand::ModifyAccount { cluster: b(cluster), names: bs(names), set: FileAssocSet::of(set) }
            }
            Command::ModifyAccountRecord { cluster, names, record } => {
                FileCommand::ModifyAccountRecord { cluster: b(cluster), names: bs(names), record: b(record) }
            }
            Command::Reparent { cluster, name, parent } => {
                FileCommand::Reparent { cluster: b(cluster), name: b(name), parent: b(parent) }
            }
            Command::DeleteAccount { cluster, names } => {
                FileCommand::DeleteAccount { cluster: b(cluster), names: bs(names) }
            }
            Command::AddUser { cluster, users, account, partition, set, more_accounts, default_account } => {
                FileCommand::AddUser {
                    cluster: b(cluster),
                    users: bs(users),
                    account: b(account),
                    partition: bo(partition),
                    set: FileAssocSet::of(set),
                    more_accounts: bs(more_accounts),
                    default_account: bo(default_account),
                }
            }
            Command::ModifyUser { cluster, users, account, partition, set } => FileCommand::ModifyUser {
                cluster: b(cluster),
                users: bs(users),
                account: b(account),
                partition: bo(partition),
                set: FileAssocSet::of(set),
            },
            Command::SetDefaultAccount { cluster, users, account } => {
                FileCommand::SetDefaultAccount { cluster: b(cluster), users: bs(users), account: b(account) }
            }
            Command::DeleteUser { cluster, users, account, partition } => FileCommand::DeleteUser {
                cluster: b(cluster),
                users: bs(users),
                account: b(account),
                partition: bo(partition),
            },
            Command::DeleteUserAll { cluster, users, account } => {
                FileCommand::DeleteUserAll { cluster: b(cluster), users: bs(users), account: b(account) }
            }
            Command::Load { cluster, accounts, users } => FileCommand::Load {
                cluster: b(cluster),
                accounts: accounts.iter().map(FileLoadAccount::of).collect(),
                users: users.iter().map(FileLoadUser::of).collect(),
            },
        }
    }

    fn into_command(self) -> Command {
        fn names(n: Names<'_>) -> Vec<Name> {
            n.into_owned()
        }
        fn own<T: Clone>(v: Cow<'_, T>) -> T {
            v.into_owned()
        }
        match self {
            FileCommand::AddQos { names: n, set } => Command::AddQos { names: names(n), set: set.into_set() },
            FileCommand::ModifyQos { names: n, set } => Command::ModifyQos { names: names(n), set: set.into_set() },
            FileCommand::DeleteQos { names: n } => Command::DeleteQos { names: names(n) },
            FileCommand::AddAccount { cluster, names: n, parent, record, set } => Command::AddAccount {
                cluster: own(cluster),
                names: names(n),
                parent: own(parent),
                record: own(record),
                set: set.into_set(),
            },
            FileCommand::ModifyAccount { cluster, names: n, set } => {
                Command::ModifyAccount { cluster: own(cluster), names: names(n), set: set.into_set() }
            }
            FileCommand::ModifyAccountRecord { cluster, names: n, record } => {
                Command::ModifyAccountRecord { cluster: own(cluster), names: names(n), record: own(record) }
            }
            FileCommand::Reparent { cluster, name, parent } => {
                Command::Reparent { cluster: own(cluster), name: own(name), parent: own(parent) }
            }
            FileCommand::DeleteAccount { cluster, names: n } => {
                Command::DeleteAccount { cluster: own(cluster), names: names(n) }
            }
            FileCommand::AddUser { cluster, users, account, partition, set, more_accounts, default_account } => {
                Command::AddUser {
                    cluster: own(cluster),
                    users: names(users),
                    account: own(account),
                    partition: partition.map(own),
                    set: set.into_set(),
                    more_accounts: names(more_accounts),
                    default_account: default_account.map(own),
                }
            }
            FileCommand::ModifyUser { cluster, users, account, partition, set } => Command::ModifyUser {
                cluster: own(cluster),
                users: names(users),
                account: own(account),
                partition: partition.map(own),
                set: set.into_set(),
            },
            FileCommand::SetDefaultAccount { cluster, users, account } => {
                Command::SetDefaultAccount { cluster: own(cluster), users: names(users), account: own(account) }
            }
            FileCommand::DeleteUser { cluster, users, account, partition } => Command::DeleteUser {
                cluster: own(cluster),
                users: names(users),
                account: own(account),
                partition: partition.map(own),
            },
            FileCommand::DeleteUserAll { cluster, users, account } => {
                Command::DeleteUserAll { cluster: own(cluster), users: names(users), account: own(account) }
            }
            FileCommand::Load { cluster, accounts, users } => Command::Load {
                cluster: own(cluster),
                accounts: accounts.into_iter().map(FileLoadAccount::into_account).collect(),
                users: users.into_iter().map(FileLoadUser::into_user).collect(),
            },
        }
    }
}

impl FileScalar {
    fn of(s: Scalar) -> FileScalar {
        match s {
            Scalar::GrpJobs => FileScalar::GrpJobs,
            Scalar::GrpSubmitJobs => FileScalar::GrpSubmitJobs,
            Scalar::GrpWall => FileScalar::GrpWall,
            Scalar::MaxJobs => FileScalar::MaxJobs,
            Scalar::MaxSubmitJobs => FileScalar::MaxSubmitJobs,
            Scalar::MaxWall => FileScalar::MaxWall,
        }
    }

    fn into_scalar(self) -> Scalar {
        match self {
            FileScalar::GrpJobs => Scalar::GrpJobs,
            FileScalar::GrpSubmitJobs => Scalar::GrpSubmitJobs,
            FileScalar::GrpWall => Scalar::GrpWall,
            FileScalar::MaxJobs => Scalar::MaxJobs,
            FileScalar::MaxSubmitJobs => Scalar::MaxSubmitJobs,
            FileScalar::MaxWall => Scalar::MaxWall,
        }
    }
}

impl FileTresLimit {
    fn of(t: TresLimit) -> FileTresLimit {
        match t {
            TresLimit::GrpTres => FileTresLimit::GrpTres,
            TresLimit::GrpTresMins => FileTresLimit::GrpTresMins,
            TresLimit::MaxTres => FileTresLimit::MaxTres,
            TresLimit::MaxTresMins => FileTresLimit::MaxTresMins,
        }
    }

    fn into_limit(self) -> TresLimit {
        match self {
            FileTresLimit::GrpTres => TresLimit::GrpTres,
            FileTresLimit::GrpTresMins => TresLimit::GrpTresMins,
            FileTresLimit::MaxTres => TresLimit::MaxTres,
            FileTresLimit::MaxTresMins => TresLimit::MaxTresMins,
        }
    }
}

impl<'a> FileAssocSet<'a> {
    fn of(s: &'a AssocSet) -> FileAssocSet<'a> {
        FileAssocSet {
            fairshare: s.fairshare,
            scalars: s.scalars.iter().map(|(k, v)| (FileScalar::of(*k), *v)).collect(),
            tres: s.tres.iter().map(|(k, m)| (FileTresLimit::of(*k), Cow::Borrowed(m))).collect(),
            qos: bo(&s.qos),
            default_qos: s.default_qos.as_ref().map(|d| d.as_ref().map(Cow::Borrowed)),
        }
    }

    fn into_set(self) -> AssocSet {
        AssocSet {
            fairshare: self.fairshare,
            scalars: self.scalars.into_iter().map(|(k, v)| (k.into_scalar(), v)).collect(),
            tres: self.tres.into_iter().map(|(k, m)| (k.into_limit(), m.into_owned())).collect(),
            qos: self.qos.map(Cow::into_owned),
            default_qos: self.default_qos.map(|d| d.map(Cow::into_owned)),
        }
    }
}

impl<'a> FileQosSet<'a> {
    fn of(s: &'a QosSet) -> FileQosSet<'a> {
        FileQosSet {
            flags: bo(&s.flags),
            grp_tres_mins: Cow::Borrowed(&s.grp_tres_mins),
            grp_tres: Cow::Borrowed(&s.grp_tres),
            grp_submit_jobs: s.grp_submit_jobs,
            max_wall: s.max_wall,
            description: s.description.as_deref().map(Cow::Borrowed),
        }
    }

    fn into_set(self) -> QosSet {
        QosSet {
            flags: self.flags.map(Cow::into_owned),
            grp_tres_mins: self.grp_tres_mins.into_owned(),
            grp_tres: self.grp_tres.into_owned(),
            grp_submit_jobs: self.grp_submit_jobs,
            max_wall: self.max_wall,
            description: self.description.map(Cow::into_owned),
        }
    }
}

impl<'a> FileLoadAccount<'a> {
    fn of(a: &'a LoadAccount) -> FileLoadAccount<'a> {
        FileLoadAccount {
            name: b(&a.name),
            parent: b(&a.parent),
            description: Cow::Borrowed(&a.description),
            organization: Cow::Borrowed(&a.organization),
            set: FileAssocSet::of(&a.set),
        }
    }

    fn into_account(self) -> LoadAccount {
        LoadAccount {
            name: self.name.into_owned(),
            parent: self.parent.into_owned(),
            description: self.description.into_owned(),
            organization: self.organization.into_owned(),
            set: self.set.into_set(),
        }
    }
}

impl<'a> FileLoadUser<'a> {
    fn of(u: &'a LoadUser) -> FileLoadUser<'a> {
        FileLoadUser {
            name: b(&u.name),
            default_account: b(&u.default_account),
            rows: u
                .rows
                .iter()
                .map(|r| FileLoadRow { account: b(&r.account), set: FileAssocSet::of(&r.set) })
                .collect(),
        }
    }

    fn into_user(self) -> LoadUser {
        LoadUser {
            name: self.name.into_owned(),
            default_account: self.default_account.into_owned(),
            rows: self
                .rows
                .into_iter()
                .map(|r| LoadRow { account: r.account.into_owned(), set: r.set.into_set() })
                .collect(),
        }
    }
}

impl<'a> FileLint<'a> {
    fn of(l: &'a Lint) -> FileLint<'a> {
        FileLint {
            code: Cow::Borrowed(&l.code),
            name: Cow::Borrowed(&l.name),
            severity: match l.severity {
                Severity::Info => FileSeverity::Info,
                Severity::Warning => FileSeverity::Warning,
            },
            message: Cow::Borrowed(&l.message),
            step: l.step,
            address: Cow::Borrowed(&l.address),
        }
    }

    fn into_lint(self) -> Lint {
        Lint {
            code: self.code.into_owned(),
            name: self.name.into_owned(),
            severity: match self.severity {
                FileSeverity::Info => Severity::Info,
                FileSeverity::Warning => Severity::Warning,
            },
            message: self.message.into_owned(),
            step: self.step,
            address: self.address.into_owned(),
        }
    }
}

impl<'a> FileScope<'a> {
    fn of(s: &'a Scope) -> FileScope<'a> {
        FileScope {
            qos: b(&s.qos),
            clusters: s
                .clusters
                .iter()
                .map(|(n, c)| (b(n), FileClusterScope { accounts: b(&c.accounts), users: b(&c.users) }))
                .collect(),
        }
    }

    fn into_scope(self) -> Scope {
        Scope {
            qos: self.qos.into_owned(),
            clusters: self
                .clusters
                .into_iter()
                .map(|(n, c)| {
                    (n.into_owned(), ClusterScope { accounts: c.accounts.into_owned(), users: c.users.into_owned() })
                })
                .collect(),
        }
    }
}
