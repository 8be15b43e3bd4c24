//! The desired-state YAML (format version 1, see `docs/desired-format.md`) and its
//! loader.
//!
//! [`load_file`] / [`load_str`] turn the file into a [`Desired`]: validated [`Name`]s,
//! normalised limit values (TRES in MiB, durations in minutes), the managed [`Scope`], and a
//! source [`Location`] for every declared object so later layers can point back at the file.
//! Every problem in the file is reported at once, each with `file:line:column` and a hint.
//!
//! This module must not run sacctmgr, spawn processes, print, or read anything but the one file
//! it is given. It knows nothing about the current state: checks that need it (does an
//! undeclared parent exist? is a QoS defined in slurmdbd?) are warnings here and happen at plan
//! time.

pub mod export;
mod load;
pub mod resolve;
mod tree;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use slurmplan_diag::{Diagnostic, Location};
use slurmplan_model::{AccountRecord, Assoc, Name, Qos, UserKey};

/// The desired state as declared in one YAML file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// The file it was loaded from (as given, for messages).
    pub path: PathBuf,
    /// `sha256:<hex>` of the file bytes (`model::fingerprint::hash_bytes`).
    pub hash: String,
    /// `settings.preserve_user_case`: user names keep their case (slurmdbd `PreserveCaseUser`).
    pub preserve_user_case: bool,
    /// What slurmplan owns.
    pub scope: Scope,
    /// Accounts never deleted.
    pub protect: BTreeSet<Name>,
    /// QoS objects (global). Only the attributes in `qos_managed` are managed.
    pub qos: BTreeMap<Name, Qos>,
    /// Which attributes of each declared QoS the file gives (a QoS is shared by the whole site:
    /// an attribute absent from the file keeps its current value). The description is managed
    /// when `Some` in `qos`.
    pub qos_managed: BTreeMap<Name, QosFields>,
    /// Account records (description, organization), merged over clusters.
    pub accounts: BTreeMap<Name, AccountRecord>,
    pub clusters: BTreeMap<Name, DesiredCluster>,
    /// Warnings found while loading (sorted by location).
    pub warnings: Vec<Diagnostic>,
    /// Where each object was declared, see [`Desired::location`].
    pub locations: Locations,
}

/// 1-based (line, column) in the desired file.
pub type LineColumn = (u32, u32);

/// (line, column) in `Desired::path` of each declared object except user associations,
/// whose locations sit next to them in [`DeclaredUsers`] (a site declares up to a million, and
/// a second copy of each key only to find a line number on an error path is not worth it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Locations {
    pub(crate) decls: HashMap<Decl, LineColumn>,
}

impl Locations {
    /// Record where `decl` is declared. User associations are not stored here (see above).
    pub(crate) fn insert(&mut self, decl: Decl, at: LineColumn) {
        if !matches!(decl, Decl::UserAssoc(..)) {
            self.decls.insert(decl, at);
        }
    }
}

/// A declared object, as a key of [`Desired::locations`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Decl {
    Qos(Name),
    Cluster(Name),
    /// `clusters.C.accounts.A`
    Account(Name, Name),
    /// An entry of `clusters.C.accounts.A.users`.
    UserAssoc(Name, UserKey),
    /// `clusters.C.users.U` (the per-user settings).
    User(Name, Name),
}

impl Desired {
    /// Where `decl` was declared; the file itself (line 0) when it was not.
    pub fn location(&self, decl: &Decl) -> Location {
        let at = match decl {
            Decl::UserAssoc(cluster, key) => self.clusters.get(cluster).and_then(|c| c.users.get(key)).map(|u| u.at),
            other => self.locations.decls.get(other).copied(),
        };
        let (line, column) = at.unwrap_or((0, 0));
        Location { file: self.path.clone(), line: line as usize, column: column as usize }
    }
}

/// One cluster of the desired state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DesiredCluster {
    pub accounts: BTreeMap<Name, DesiredAccount>,
    pub users: DeclaredUsers,
    /// user -> DefaultAccount.
    pub defaults: BTreeMap<Name, Name>,
}

/// One declared user association and where it is declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredUser {
    pub key: UserKey,
    pub assoc: Assoc,
    pub at: LineColumn,
}

/// The declared user associations of a cluster, each key once, walked in key order.
///
/// A list rather than a map: a site declares up to a million, and they are only walked in
/// order (resolve merges them into the desired state) or looked up on error paths; a B-tree of
/// them costs memory and time at that size (docs/performance.md). They stay in declaration
/// order, one run per account (the loader lists an account's users together): only the runs
/// are put in account order, and each run in user order (usually it already is), instead of
/// sorting a million entries by string comparisons.
#[derive(Debug, Clone, Default)]
pub struct DeclaredUsers {
    users: Vec<DeclaredUser>,
    /// `users[start..end]` of each account, in account order; each run in key order.
    runs: Vec<(usize, usize)>,
}

impl DeclaredUsers {
    /// Order `users` by key; `None` if a key appears twice.
    pub fn from_unsorted(mut users: Vec<DeclaredUser>) -> Option<DeclaredUsers> {
        let mut runs = account_runs(&users);
        let by_key = |a: &DeclaredUser, b: &DeclaredUser| a.key.cmp(&b.key);
        for &(start, end) in &runs {
            let run = &mut users[start..end];
            if !run.windows(2).all(|w| w[0].key < w[1].key) {
                run.sort_unstable_by(by_key);
            }
        }
        runs.sort_unstable_by(|a, b| users[a.0].key.account.cmp(&users[b.0].key.account));
        // An account in two runs (not from the loader): sort the whole list instead.
        if runs.windows(2).any(|w| users[w[0].0].key.account == users[w[1].0].key.account) {
            users.sort_unstable_by(by_key);
            runs = account_runs(&users);
        }
        let unique = runs.iter().all(|&(start, end)| users[start..end].windows(2).all(|w| w[0].key < w[1].key));
        unique.then_some(DeclaredUsers { users, runs })
    }
    pub fn get(&self, key: &UserKey) -> Option<&DeclaredUser> {
        let r = self.runs.binary_search_by(|&(start, _)| self.users[start].key.account.cmp(&key.account)).ok()?;
        let run = &self.users[self.runs[r].0..self.runs[r].1];
        run.binary_search_by(|u| u.key.cmp(key)).ok().map(|i| &run[i])
    }
    pub fn contains_key(&self, key: &UserKey) -> bool {
        self.get(key).is_some()
    }
    /// The user associations declared under `account`, in key order.
    pub fn of_account(&self, account: &Name) -> &[DeclaredUser] {
        match self.runs.binary_search_by(|&(start, _)| self.users[start].key.account.cmp(account)) {
            Ok(r) => &self.users[self.runs[r].0..self.runs[r].1],
            Err(_) => &[],
        }
    }
    /// (key, association) in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&UserKey, &Assoc)> + Clone {
        self.runs.iter().flat_map(|&(start, end)| self.users[start..end].iter()).map(|u| (&u.key, &u.assoc))
    }
    pub fn keys(&self) -> impl Iterator<Item = &UserKey> + Clone {
        self.iter().map(|(k, _)| k)
    }
    pub fn len(&self) -> usize {
        self.users.len()
    }
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// Equal when they hold the same entries (whatever order they were declared in).
impl PartialEq for DeclaredUsers {
    fn eq(&self, other: &DeclaredUsers) -> bool {
        self.len() == other.len()
            && self
                .runs
                .iter()
                .flat_map(|&(a, b)| &self.users[a..b])
                .eq(other.runs.iter().flat_map(|&(a, b)| &other.users[a..b]))
    }
}
impl Eq for DeclaredUsers {}

/// Maximal runs of consecutive entries with the same account.
fn account_runs(users: &[DeclaredUser]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=users.len() {
        if i == users.len() || users[i].key.account != users[start].key.account {
            if start < i {
                runs.push((start, i));
            }
            start = i;
        }
    }
    runs
}

/// One declared account association. `parent` defaults to `root`; for `root` itself it is
/// `root` too (callers treat `root` as the tree's top and never re-parent it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredAccount {
    pub parent: Name,
    pub assoc: Assoc,
}

/// The QoS attributes a desired file gives for one QoS (given = managed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosFields {
    pub flags: bool,
    pub grp_tres_mins: bool,
    pub grp_tres: bool,
    pub grp_submit_jobs: bool,
    pub max_wall: bool,
}

impl QosFields {
    /// `want`'s managed attributes over `current` (or over an empty QoS for a new one).
    pub fn over(&self, want: &Qos, current: Option<&Qos>) -> Qos {
        let mut q = current.cloned().unwrap_or_default();
        if self.flags {
            q.flags = want.flags.clone();
        }
        if self.grp_tres_mins {
            q.grp_tres_mins = want.grp_tres_mins.clone();
        }
        if self.grp_tres {
            q.grp_tres = want.grp_tres.clone();
        }
        if self.grp_submit_jobs {
            q.grp_submit_jobs = want.grp_submit_jobs;
        }
        if self.max_wall {
            q.max_wall = want.max_wall;
        }
        if want.description.is_some() {
            q.description = want.description.clone();
        }
        q
    }
}

/// The managed scope: what slurmplan may create, change and delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Account subtrees owned entirely (the root account of each subtree included).
    pub roots: BTreeSet<Name>,
    /// Any account whose name starts with one of these.
    pub prefixes: Vec<String>,
    /// QoS objects whose name starts with one of these may be deleted when not declared.
    pub qos_prefixes: Vec<String>,
}

impl Scope {
    /// Managed if the name matches a prefix, or it or one of `ancestors` is a root.
    pub fn manages_account<'a>(&self, name: &Name, ancestors: impl IntoIterator<Item = &'a Name>) -> bool {
        self.prefixes.iter().any(|p| name.as_str().starts_with(p.as_str()))
            || self.roots.contains(name)
            || ancestors.into_iter().any(|a| self.roots.contains(a))
    }

    /// Managed if the QoS name matches one of `qos_prefixes`.
    pub fn manages_qos(&self, name: &Name) -> bool {
        self.qos_prefixes.iter().any(|p| name.as_str().starts_with(p.as_str()))
    }
}

/// Read and load a desired-state file. An I/O error becomes one diagnostic.
pub fn load_file(path: &Path) -> Result<Desired, Vec<Diagnostic>> {
    match slurmplan_input::read_text(path) {
        Ok(text) => load_str(path, &text),
        Err(e) => Err(vec![
            Diagnostic::error("io", format!("cannot read `{}`: {e}", path.display()))
                .at(Location { file: path.to_path_buf(), line: 0, column: 0 })
                .hint(match e {
                    slurmplan_input::InputError::NotText => "save the file as UTF-8",
                    _ => "give the path of a desired-state YAML file with `-d`",
                }),
        ]),
    }
}

/// Load a desired-state document from `text`; `path` is used for messages and `Desired::path`.
/// `Err` holds every error and warning (sorted); `Ok` holds the warnings in `Desired::warnings`.
pub fn load_str(path: &Path, text: &str) -> Result<Desired, Vec<Diagnostic>> {
    load::load(path, text)
}
