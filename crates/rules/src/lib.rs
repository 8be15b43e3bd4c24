//! The rules model: an in-memory model of the slurmdbd rules slurmplan relies on,
//! applied command by command, and the checks of those rules on a state.
//!
//! `RuleModel::apply` refuses what real slurmdbd refuses (missing parent, unknown QoS, DefaultAccount
//! without an association) AND what Slurm 22.05 silently lets through but leaves broken (an
//! effective DefaultQOS outside the effective QoS list, a removed default association leaving a
//! dangling DefaultAccount, deleting an account that still has children or users) AND a user
//! removal that Slurm 23.11+ widens to other users' associations AND an `add user` whose
//! outcome no read can predict (a user with associations but no DefaultAccount). The planner
//! checks every step it emits against it; tests use it as the reference slurmdbd. Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use slurmplan_model::names::NameHash;
use slurmplan_model::{
    AccountGraph, AccountRecord, Assoc, ClusterState, InOrder, Name, Qos, QosList, State, UserIndex, UserKey,
    names::root,
};
use slurmplan_sacctmgr::command::{AssocSet, Command};

/// Why a command would break a rule: its kind, and the message shown to users.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RuleError {
    pub kind: RuleErrorKind,
    pub message: String,
}

/// What kind of refusal a [`RuleError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleErrorKind {
    /// Real slurmdbd refuses the command, or the command (or state) breaks a rule.
    Broken,
    /// Real slurmdbd accepts the command, but what it makes of it cannot be predicted.
    Unpredictable,
}

impl RuleError {
    /// A refusal of kind [`RuleErrorKind::Broken`].
    pub fn broken(message: impl Into<String>) -> RuleError {
        RuleError { kind: RuleErrorKind::Broken, message: message.into() }
    }

    /// The command is refused because what real slurmdbd would make of it cannot be predicted
    /// (not because slurmdbd refuses it or it breaks a rule).
    pub fn is_unpredictable(&self) -> bool {
        self.kind == RuleErrorKind::Unpredictable
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, RuleError> {
    Err(RuleError::broken(msg))
}

/// cluster -> user -> number of associations.
type UserCounts = BTreeMap<Name, HashMap<Name, usize, NameHash>>;

/// What a model of a state read for some clusters only knows of the others
/// ([`RuleModel::scoped`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unread {
    /// The clusters slurmdbd holds that the state leaves out.
    pub clusters: BTreeSet<Name>,
    /// Users whose associations were read on every cluster (a filtered read: docs/decisions.md,
    /// "Reads scoped to the plan's clusters").
    pub users_asked: BTreeSet<Name>,
    /// Those of `users_asked` with an association on a cluster the state leaves out.
    pub users_elsewhere: BTreeSet<Name>,
}

impl Unread {
    /// Some clusters, and nothing known of them.
    pub fn clusters(clusters: BTreeSet<Name>) -> Unread {
        Unread { clusters, ..Unread::default() }
    }
}

/// The questions a scoped model answered from its state although a cluster it leaves out
/// could change the answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PastScope {
    /// The first of them, in words.
    pub first: Option<String>,
    /// Users the questions were about that a read of their associations on every cluster
    /// answers (does the user have one anywhere; does it keep one elsewhere).
    pub users: BTreeSet<Name>,
    /// The first question only a read of every cluster answers, in words.
    pub whole: Option<String>,
}

impl PastScope {
    /// Whether nothing was asked: what the model concluded holds on every cluster.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

/// A state plus per-cluster user counters, mutated by applying commands.
pub struct RuleModel {
    pub state: State,
    /// Counted when first needed: when a user loses the association of its DefaultAccount
    /// (is it gone from the cluster, or left with a dangling DefaultAccount?). Most plans,
    /// including most that remove users, never need it, and counting walks every association.
    /// Once counted, kept up to date by every add and removal.
    user_assocs: Option<UserCounts>,
    /// A scoped state ([`RuleModel::scoped`]): what is known of the clusters slurmdbd holds
    /// that `state` leaves out, and the questions asked whose answer could depend on them.
    unread: Unread,
    past: PastScope,
}

impl RuleModel {
    pub fn new(state: State) -> RuleModel {
        RuleModel { state, user_assocs: None, unread: Unread::default(), past: PastScope::default() }
    }

    /// A model of a state read for some clusters only: `unread.clusters` are the clusters
    /// slurmdbd holds that `state` leaves out. Every question whose answer could depend on them
    /// (does a user have associations anywhere, is a QoS used anywhere, which is the first
    /// cluster holding an account, the `LIKE` scan of a user's removal) is answered from
    /// `state` and recorded ([`RuleModel::past_scope`]), unless `unread` already holds the
    /// answer (a user in `users_asked`); what was concluded from such a model must then be made
    /// again with those answers, or from the whole state (docs/decisions.md, "Reads scoped to
    /// the plan's clusters").
    pub fn scoped(state: State, unread: Unread) -> RuleModel {
        RuleModel { unread, ..RuleModel::new(state) }
    }

    /// The first question answered that could depend on a cluster the state leaves out
    /// (always `None` for a model of the whole state).
    pub fn looked_past_scope(&self) -> Option<&str> {
        self.past.first.as_deref()
    }

    /// Every question answered that could depend on a cluster the state leaves out.
    pub fn past_scope(&self) -> &PastScope {
        &self.past
    }

    /// Record that the answer to `question` came from the clusters read only, when some are
    /// not, and only a read of every cluster would answer it.
    fn asked_of_all(&mut self, question: impl FnOnce() -> String) {
        if !self.unread.clusters.is_empty() && self.past.whole.is_none() {
            let q = question();
            self.past.first.get_or_insert_with(|| q.clone());
            self.past.whole = Some(q);
        }
    }

    /// Whether `user` has an association on a cluster the state leaves out, when the reads
    /// tell (`None`: they do not; the question is then recorded as `question`, which a read of
    /// the user's associations answers).
    fn elsewhere(&mut self, user: &Name, question: impl FnOnce() -> String) -> Option<bool> {
        if self.unread.clusters.is_empty() {
            return Some(false);
        }
        if self.unread.users_asked.contains(user) {
            return Some(self.unread.users_elsewhere.contains(user));
        }
        self.past.first.get_or_insert_with(question);
        self.past.users.insert(user.clone());
        None
    }

    /// The first cluster (by name) where `account` has an association: the cluster a record
    /// change names (`cluster=`). From a scoped model, an answer an unread cluster could change
    /// (one sorting before it, or no answer) is recorded as looking past the scope.
    pub fn first_cluster_holding(&mut self, account: &Name) -> Option<Name> {
        let found =
            self.state.clusters.iter().find(|(_, c)| c.accounts.contains(account.as_str())).map(|(n, _)| n.clone());
        if self.unread.clusters.iter().next().is_some_and(|u| found.as_ref().is_none_or(|f| u < f)) {
            self.asked_of_all(|| format!("the first cluster holding account `{account}`"));
        }
        found
    }

    /// The user counters, counted from the state now if not yet.
    fn counts(&mut self) -> &mut UserCounts {
        let state = &self.state;
        self.user_assocs.get_or_insert_with(|| {
            let count = |c: &ClusterState| {
                let mut counts = HashMap::with_capacity_and_hasher(c.defaults.len(), NameHash::default());
                for k in c.users.keys() {
                    *counts.entry(k.user.clone()).or_insert(0) += 1;
                }
                counts
            };
            state.clusters.iter().map(|(cname, c)| (cname.clone(), count(c))).collect()
        })
    }

    fn cluster_mut(&mut self, name: &Name) -> Result<&mut ClusterState, RuleError> {
        match self.state.clusters.get_mut(name) {
            Some(c) => Ok(c),
            None => err(format!("cluster `{name}` has not been added")),
        }
    }

    /// Every QoS a QoS list and a DefaultQOS name must exist.
    fn check_qos_exist(&self, qos: &QosList, default_qos: Option<&Name>) -> Result<(), RuleError> {
        let mut names: Vec<&Name> = Vec::new();
        match qos {
            QosList::Inherit => {}
            QosList::Set(s) => names.extend(s),
            QosList::Delta { add, remove } => {
                names.extend(add);
                names.extend(remove);
            }
        }
        names.extend(default_qos);
        for n in names {
            if !self.state.qos.contains_key(n) {
                return err(format!("QoS `{n}` does not exist"));
            }
        }
        Ok(())
    }

    /// Apply one command; on error the state is unchanged only where documented (callers
    /// treat any error as fatal and discard the simulation).
    pub fn apply(&mut self, cmd: &Command) -> Result<(), RuleError> {
        match cmd {
            // A load creates what its lines say, as the commands that do the same one by one
            // (`load::expand`); a value it cannot carry is refused, as `plan::check` does.
            Command::Load { cluster, accounts, users } => {
                let problems = slurmplan_sacctmgr::load_file::problems(cluster, accounts, users);
                if let Some(p) = problems.first() {
                    return err(p.clone());
                }
                // A load only creates: each line names an object that exists nowhere yet. On an
                // existing user, real load adds the rows AND moves the user's DefaultAccount to
                // the line's (seen on 22.05.8, tests/e2e_safety.rs); on an existing account it
                // changes what the line states. Neither is what the commands it stands for do.
                // (An account with an association on any cluster has a record, and the records
                // are read whole: a scoped model needs no other cluster for this.)
                for a in accounts {
                    if self.state.accounts.contains_key(&a.name)
                        || self.state.clusters.values().any(|c| c.accounts.contains(a.name.as_str()))
                    {
                        return err(format!(
                            "the load names account `{}`, which exists: a load only creates accounts that exist nowhere",
                            a.name
                        ));
                    }
                }
                for u in users {
                    if self.knows_user(&u.name) {
                        return err(format!(
                            "the load names user `{}`, who exists: a load only creates users with no association anywhere (it would move the user's DefaultAccount)",
                            u.name
                        ));
                    }
                }
                for c in slurmplan_sacctmgr::load_file::expand(cluster, accounts, users) {
                    self.apply(&c)?;
                }
            }
            Command::AddQos { names, set } => {
                for n in names {
                    if self.state.qos.contains_key(n) {
                        return err(format!("QoS `{n}` already exists"));
                    }
                    let mut q = Qos { description: Some(n.to_string()), ..Default::default() };
                    set.apply_to(&mut q);
                    self.state.qos.insert(n.clone(), q);
                }
            }
            Command::ModifyQos { names, set } => {
                for n in names {
                    match self.state.qos.get_mut(n) {
                        Some(q) => set.apply_to(q),
                        None => return err(format!("QoS `{n}` does not exist")),
                    }
                }
            }
            Command::DeleteQos { names } => {
                self.asked_of_all(|| {
                    format!(
                        "whether QoS {} is used on another cluster",
                        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                    )
                });
                for n in names {
                    if self.state.qos.remove(n).is_none() {
                        return err(format!("QoS `{n}` does not exist"));
                    }
                    // slurmdbd strips it from stored deltas (`QosList::delta_stripped`); an
                    // explicit list or a DefaultQOS that names it is refused below (real
                    // slurmdbd would strip those too: plans change them first, in sight).
                    let gone: BTreeSet<Name> = [n.clone()].into();
                    for c in self.state.clusters.values_mut() {
                        let names: Vec<Name> = c.accounts.names().into_iter().cloned().collect();
                        for a in &names {
                            if let Some(node) = c.accounts.get_mut(a.as_str()) {
                                strip_delta(&mut node.assoc, &gone);
                            }
                        }
                        for a in c.users.values_mut() {
                            strip_delta(a, &gone);
                        }
                    }
                    for (cname, c) in &self.state.clusters {
                        let used = c.uses_qos(n);
                        if used {
                            return err(format!("QoS `{n}` is still used by associations on `{cname}`"));
                        }
                    }
                }
            }
            Command::AddAccount { cluster, names, parent, record, set } => {
                self.add_account(cluster, names, parent, record, set)?;
            }
            Command::ModifyAccount { cluster, names, set } => {
                self.modify_account(cluster, names, set)?;
            }
            Command::ModifyAccountRecord { cluster, names, record } => {
                self.modify_account_record(cluster, names, record)?;
            }
            Command::Reparent { cluster, name, parent } => {
                let c = self.cluster_mut(cluster)?;
                if c.accounts.parent(name.as_str()) == Some(parent) {
                    return err(format!("account `{name}` is already under `{parent}` (a no-op)"));
                }
                let before: BTreeSet<Violation> = subtree_violations(c, name).into_iter().map(|(v, _)| v).collect();
                c.accounts.reparent(name.as_str(), parent.as_str()).map_err(RuleError::broken)?;
                refuse_introduced(&before, subtree_violations(c, name))?;
            }
            Command::DeleteAccount { cluster, names } => {
                let c = self.cluster_mut(cluster)?;
                for n in names {
                    if n == &root() {
                        return err("refusing to delete `root`");
                    }
                    if c.users_of_account(n).next().is_some() {
                        return err(format!("account `{n}` on `{cluster}` still has user associations"));
                    }
                    c.accounts.remove_leaf(n.as_str()).map_err(RuleError::broken)?;
                }
            }
            Command::AddUser { cluster, users, account, partition, set, more_accounts, default_account } => {
                let accounts: Vec<&Name> = std::iter::once(account).chain(more_accounts).collect();
                self.add_user(cluster, users, accounts, partition, set, default_account)?;
            }
            Command::ModifyUser { cluster, users, account, partition, set } => {
                self.modify_user(cluster, users, account, partition, set)?;
            }
            Command::SetDefaultAccount { cluster, users, account } => {
                let c = self.cluster_mut(cluster)?;
                for u in users {
                    if !c.is_associated(u, account) {
                        return err(format!(
                            "user `{u}` is not associated with new default account `{account}` on `{cluster}`"
                        ));
                    }
                    if c.defaults.get(u) == Some(account) {
                        return err(format!(
                            "`{account}` is already the default account of `{u}` on `{cluster}` (a no-op)"
                        ));
                    }
                    c.defaults.insert(u.clone(), account.clone());
                    // every row of (user, account) is marked now
                    c.unmarked.retain(|k| &k.user != u);
                }
            }
            Command::DeleteUser { cluster, users, account, partition } => {
                self.delete_user_rows(cluster, users, account, Some(partition.as_ref()))?;
            }
            Command::DeleteUserAll { cluster, users, account } => {
                self.delete_user_rows(cluster, users, account, None)?;
            }
        }
        Ok(())
    }
}

impl RuleModel {
    /// `add account`: new accounts under an existing parent, with sacctmgr's default record text;
    /// refused when one exists, the parent does not, or the new subtree breaks a rule.
    fn add_account(
        &mut self,
        cluster: &Name,
        names: &[Name],
        parent: &Name,
        record: &AccountRecord,
        set: &AssocSet,
    ) -> Result<(), RuleError> {
        let mut assoc = Assoc::default();
        set.apply_to(&mut assoc);
        self.check_qos_exist(&assoc.qos, assoc.default_qos.as_ref())?;
        let c = self.cluster_mut(cluster)?;
        if !c.accounts.contains(parent.as_str()) {
            return err(format!("no parent account `{parent}` on cluster `{cluster}`"));
        }
        for n in names {
            if c.accounts.contains(n.as_str()) {
                return err(format!("account `{n}` already exists on cluster `{cluster}`"));
            }
            c.accounts
                .insert(n.clone(), parent.as_str(), assoc.clone())
                .map_err(|e| RuleError::broken(e.to_string()))?;
        }
        // A new account that sets no QoS list or DefaultQOS of its own carries its parent's: under
        // a parent whose DefaultQOS is outside its list (a state 22.05 leaves), 22.05.8 adds it
        // and it has that same violation (probed; tests/data/differential/2205-20648-plan). It
        // is the parent's violation, not one this command makes.
        let inherited =
            (set.qos.is_none() && set.default_qos.is_none()).then(|| inherited_violation(c, parent)).flatten();
        for n in names {
            let found = subtree_violations(c, n)
                .into_iter()
                .filter(|(v, _)| !(v.user.is_none() && &v.account == n && inherited.as_ref() == Some(&v.default_qos)))
                .collect();
            refuse_introduced(&BTreeSet::new(), found)?;
        }
        for n in names {
            let rec = self.state.accounts.entry(n.clone()).or_default();
            // sacctmgr's defaults: description = name, organization = parent (or name under root)
            if rec.description.is_none() {
                rec.description = Some(record.description.clone().unwrap_or_else(|| n.to_string()));
            }
            if rec.organization.is_none() {
                let default_org = if parent == &root() { n.to_string() } else { parent.to_string() };
                rec.organization = Some(record.organization.clone().unwrap_or(default_org));
            }
        }
        Ok(())
    }

    /// `modify account ... set` on account associations; refused when an account is missing or
    /// the change introduces a rule violation below it.
    fn modify_account(&mut self, cluster: &Name, names: &[Name], set: &AssocSet) -> Result<(), RuleError> {
        let c = self.cluster_mut(cluster)?;
        let mut before = BTreeSet::new();
        for n in names {
            if !c.accounts.contains(n.as_str()) {
                return err(format!("no account `{n}` on cluster `{cluster}`"));
            }
            before.extend(subtree_violations(c, n).into_iter().map(|(v, _)| v));
        }
        for n in names {
            set.apply_to(&mut c.accounts.get_mut(n.as_str()).expect("checked above").assoc);
        }
        for n in names {
            refuse_introduced(&before, subtree_violations(c, n))?;
            check_user_rows_for_account_qos(c, n, set)?;
        }
        let qos = set.qos.as_ref().unwrap_or(&QosList::Inherit);
        self.check_qos_exist(qos, set.default_qos.as_ref().and_then(Option::as_ref))?;
        Ok(())
    }

    /// `modify account ... set Description/Organization`: the records of existing accounts.
    fn modify_account_record(
        &mut self,
        cluster: &Name,
        names: &[Name],
        record: &AccountRecord,
    ) -> Result<(), RuleError> {
        let c = self.cluster_mut(cluster)?;
        for n in names {
            if !c.accounts.contains(n.as_str()) {
                return err(format!("no account `{n}` on cluster `{cluster}`"));
            }
        }
        for n in names {
            let rec = self.state.accounts.entry(n.clone()).or_default();
            if let Some(d) = &record.description {
                rec.description = Some(d.clone());
            }
            if let Some(o) = &record.organization {
                rec.organization = Some(o.clone());
            }
        }
        Ok(())
    }

    /// `add user`: new associations of `users` under `accounts` (the command's account, then its
    /// `more_accounts`), with sacctmgr's DefaultAccount rules; refused when one exists, an
    /// account is missing, or a rule would break.
    fn add_user(
        &mut self,
        cluster: &Name,
        users: &[Name],
        accounts: Vec<&Name>,
        partition: &Option<Name>,
        set: &AssocSet,
        default_account: &Option<Name>,
    ) -> Result<(), RuleError> {
        let mut assoc = Assoc::default();
        set.apply_to(&mut assoc);
        self.check_qos_exist(&assoc.qos, assoc.default_qos.as_ref())?;
        for u in users {
            self.check_add_keeps_default_known(cluster, u)?;
        }
        if let Some(d) = default_account
            && !accounts.contains(&d)
        {
            return err(format!("default account `{d}` is not one of the accounts added"));
        }
        let c = self.cluster_mut(cluster)?;
        for a in &accounts {
            if !c.accounts.contains(a.as_str()) {
                return err(format!("no account `{a}` on cluster `{cluster}`"));
            }
        }
        // Violations already there (rows of these users that 22.05 left with a DefaultQOS
        // outside their list) are not this command's; and a new row that sets no QoS list or
        // DefaultQOS of its own carries its account's, with the account's violation if it has
        // one: 22.05.8 adds it either way (probed; tests/data/differential/2205-70-plan).
        let inherits = set.qos.is_none() && set.default_qos.is_none();
        let mut before: BTreeSet<Violation> = BTreeSet::new();
        for a in &accounts {
            before.extend(user_violations(c, a, users).into_iter().map(|(v, _)| v));
            if inherits && let Some(d) = inherited_violation(c, a) {
                for u in users {
                    let key = UserKey { account: (*a).clone(), user: u.clone(), partition: partition.clone() };
                    before.insert(Violation { account: (*a).clone(), user: Some(key), default_qos: d.clone() });
                }
            }
        }
        let mut added = Vec::new();
        // Users outer, accounts inner, as sacctmgr walks them: a new user's first
        // association becomes its default unless the command names one (which then
        // becomes the default of every user listed, new or not).
        for u in users {
            // A row added under an existing user's DefaultAccount is not marked
            // default; a new user's default rows all are.
            let had_default = c.defaults.get(u).cloned();
            for a in &accounts {
                let key = UserKey { account: (*a).clone(), user: u.clone(), partition: partition.clone() };
                if c.users.contains_key(&key) {
                    return err(format!("user association {} already exists (a no-op)", show_key(&key)));
                }
                if had_default.as_ref() == Some(*a) {
                    c.unmarked.insert(key.clone());
                }
                c.users.insert(key, assoc.clone());
                c.defaults.entry(u.clone()).or_insert_with(|| (*a).clone());
                added.push(u.clone());
            }
            if let Some(d) = default_account {
                c.defaults.insert(u.clone(), d.clone());
            }
            if had_default.as_ref() != c.defaults.get(u) {
                c.unmarked.retain(|k| &k.user != u);
            }
        }
        for a in &accounts {
            refuse_introduced(&before, user_violations(c, a, users))?;
        }
        if let Some(counts) = self.user_assocs.as_mut() {
            let counts = counts.entry(cluster.clone()).or_default();
            for u in added {
                *counts.entry(u).or_insert(0) += 1;
            }
        }
        Ok(())
    }

    /// `modify user ... set` on existing user associations; refused when one is missing or the
    /// change introduces a rule violation.
    fn modify_user(
        &mut self,
        cluster: &Name,
        users: &[Name],
        account: &Name,
        partition: &Option<Name>,
        set: &AssocSet,
    ) -> Result<(), RuleError> {
        let c = self.cluster_mut(cluster)?;
        for u in users {
            let key = UserKey { account: account.clone(), user: u.clone(), partition: partition.clone() };
            if !c.users.contains_key(&key) {
                return err(format!("no user association {}", show_key(&key)));
            }
        }
        let before: BTreeSet<Violation> = user_violations(c, account, users).into_iter().map(|(v, _)| v).collect();
        for u in users {
            let key = UserKey { account: account.clone(), user: u.clone(), partition: partition.clone() };
            set.apply_to(c.users.get_mut(&key).expect("checked above"));
        }
        refuse_introduced(&before, user_violations(c, account, users))?;
        if rows_checked(set) {
            let list = c.accounts.effective_qos(account.as_str());
            let check = RowsCheck {
                list: &list,
                default: c.accounts.effective_default_qos(account.as_str()),
                forced: forced_default(set),
            };
            for u in users {
                let key = UserKey { account: account.clone(), user: u.clone(), partition: partition.clone() };
                if let Some(d) = check.missing(c.users.get(&key).expect("checked above")) {
                    return err(format!(
                        "user association {} would not have `{d}` in its QoS list (Slurm 22.05 checks it)",
                        show_key(&key)
                    ));
                }
            }
        }
        let qos = set.qos.as_ref().unwrap_or(&QosList::Inherit);
        self.check_qos_exist(qos, set.default_qos.as_ref().and_then(Option::as_ref))?;
        Ok(())
    }

    /// Remove the association rows of `users` under `account`: the row of `partition`, or
    /// (`None`) every row (no partition clause). slurmdbd's rules on a user's DefaultAccount,
    /// which it marks per row (see `ClusterState::unmarked`):
    /// - 24.11 refuses removing a marked row while the user keeps any other row on the cluster
    ///   (22.05 lets it through and leaves the DefaultAccount empty: refused here too);
    /// - 22.05 refuses a command that removes both marked and unmarked rows of one user, even
    ///   its last ones (24.11 accepts it: refused here too);
    /// - removing a user's last row removes the user, and its DefaultAccount with it.
    fn delete_user_rows(
        &mut self,
        cluster: &Name,
        users: &[Name],
        account: &Name,
        partition: Option<Option<&Name>>,
    ) -> Result<(), RuleError> {
        let c = self.cluster_mut(cluster)?;
        let mut rows: Vec<(Name, Vec<UserKey>, usize)> = Vec::with_capacity(users.len());
        for u in users {
            let keys: Vec<UserKey> = match partition {
                Some(p) => {
                    let key = UserKey { account: account.clone(), user: u.clone(), partition: p.cloned() };
                    if !c.users.contains_key(&key) {
                        return err(format!("no user association {} (a no-op)", show_key(&key)));
                    }
                    vec![key]
                }
                None => {
                    let lo = UserKey { account: account.clone(), user: u.clone(), partition: None };
                    let keys: Vec<UserKey> = c
                        .users
                        .range(lo..)
                        .take_while(|(k, _)| &k.account == account && &k.user == u)
                        .map(|(k, _)| k.clone())
                        .collect();
                    if keys.is_empty() {
                        return err(format!("no user association `{u}@{account}` (a no-op)"));
                    }
                    keys
                }
            };
            let marked =
                keys.iter().filter(|k| c.defaults.get(u) == Some(&k.account) && !c.unmarked.contains(*k)).count();
            rows.push((u.clone(), keys, marked));
        }
        for (u, keys, marked) in &rows {
            if *marked == 0 {
                continue;
            }
            let total = self.counts().get(cluster).and_then(|m| m.get(u)).copied().unwrap_or(0);
            if total > keys.len() {
                return err(format!(
                    "removing rows of `{u}`'s DefaultAccount `{account}` on `{cluster}` while it keeps other associations (24.11 refuses it; 22.05 leaves the DefaultAccount empty)"
                ));
            }
            if *marked < keys.len() {
                return err(format!(
                    "removing rows of `{u}`'s DefaultAccount `{account}` on `{cluster}` that are marked default together with rows that are not (22.05 refuses it)"
                ));
            }
        }
        let c = self.cluster_mut(cluster)?;
        for (_, keys, _) in &rows {
            for k in keys {
                c.users.remove(k);
                c.unmarked.remove(k);
            }
        }
        if let Some(counts) = self.user_assocs.as_mut().and_then(|all| all.get_mut(cluster)) {
            for (u, keys, _) in &rows {
                if let Some(n) = counts.get_mut(u) {
                    *n -= keys.len();
                }
            }
        }
        for (u, _, _) in &rows {
            // A user that keeps the association of its DefaultAccount keeps some association:
            // nothing to settle (the common case; no counting needed).
            let c = self.cluster_mut(cluster)?;
            if c.defaults.get(u).is_some_and(|d| c.is_associated(u, d)) {
                continue;
            }
            let left = self.counts().get(cluster).and_then(|m| m.get(u)).copied().unwrap_or(0);
            let c = self.cluster_mut(cluster)?;
            if left == 0 {
                // slurmdbd removes a user with its last association.
                c.defaults.remove(u);
            } else if c.defaults.get(u) == Some(account) {
                return err(format!(
                    "removing `{u}` from `{account}` on `{cluster}` would leave its DefaultAccount dangling"
                ));
            }
        }
        for u in users {
            self.check_user_removal_exact(u)?;
        }
        Ok(())
    }
}

impl RuleModel {
    /// The number of associations `user` has on `cluster` (counted from the state the first
    /// time any such number is needed, then kept up to date).
    pub fn user_rows(&mut self, cluster: &Name, user: &Name) -> usize {
        self.counts().get(cluster).and_then(|m| m.get(user)).copied().unwrap_or(0)
    }

    /// Whether `user` has an association or a DefaultAccount on any cluster (from the same
    /// counts as [`RuleModel::user_rows`]).
    pub fn knows_user(&mut self, user: &Name) -> bool {
        let known = self.state.clusters.values().any(|c| c.defaults.contains_key(user))
            || self.counts().values().any(|m| m.get(user).is_some_and(|&n| n > 0));
        // (a DefaultAccount is an association marked default: a user with one elsewhere has
        // an association there)
        known
            || self
                .elsewhere(user, || format!("whether user `{user}` has associations on another cluster"))
                .unwrap_or(false)
    }

    /// Whether `user` has associations on `cluster` but no DefaultAccount there that is one of
    /// them (Slurm 22.05 leaves it so when a user's default rows are removed).
    pub fn lacks_valid_default(&mut self, cluster: &Name, user: &Name) -> bool {
        let Some(c) = self.state.clusters.get(cluster) else { return false };
        if c.defaults.get(user).is_some_and(|a| c.is_associated(user, a)) {
            return false;
        }
        self.user_rows(cluster, user) > 0
    }

    /// An `add user` for a user who has associations on the cluster but no valid DefaultAccount
    /// makes slurmdbd give it one: the account of the user's first association in slurmdbd's
    /// table order (a row added back after a delete keeps its old place), which no read shows.
    /// Real slurmdbd accepts the command, but what it leaves cannot be predicted, so the model
    /// refuses it: a plan sets the DefaultAccount first (docs/planning.md, rule 9).
    fn check_add_keeps_default_known(&mut self, cluster: &Name, user: &Name) -> Result<(), RuleError> {
        if !self.lacks_valid_default(cluster, user) {
            return Ok(());
        }
        Err(RuleError {
            kind: RuleErrorKind::Unpredictable,
            message: format!(
                "`{user}` has associations on `{cluster}` but no DefaultAccount: on an `add user` slurmdbd makes \
                 the account of the user's first association in its table order the default, which no read \
                 shows, so the outcome cannot be predicted (hint: set the DefaultAccount first: `modify user \
                 where name={user} cluster={cluster} set defaultaccount=...`)"
            ),
        })
    }

    /// A `delete user` that takes the last association of `user` on every cluster makes
    /// sacctmgr remove the user too, by the name it reads back from slurmdbd's reply
    /// ([`follow_up_name`]). Slurm 23.11 and later (verified on 24.11.5) then delete every live
    /// association, on every cluster, whose lineage has a component matching `0-<name>` as a SQL
    /// `LIKE` pattern: `_` matches any one character, so removing `w_y` deletes `wzy`'s
    /// associations (22.05 matches exactly). No escaping reaches that pattern, so such a delete
    /// is refused while the pattern matches an association other than the removed user's
    /// (docs/decisions.md). Applied whatever the version: a plan does not record it, and it
    /// may be applied after an upgrade.
    fn check_user_removal_exact(&mut self, user: &Name) -> Result<(), RuleError> {
        let name = follow_up_name(user.as_str());
        if !name.contains('_') || self.counts().values().any(|m| m.get(user).is_some_and(|n| *n > 0)) {
            return Ok(());
        }
        match self.elsewhere(user, || format!("whether user `{user}` keeps associations on another cluster")) {
            Some(true) => return Ok(()),
            // none left anywhere: the scan below needs every name of every cluster
            Some(false) => self.asked_of_all(|| format!("the names on other clusters that `{name}` matches")),
            None => {}
        }
        let component = format!("0-{name}");
        let mut hits: Vec<String> = Vec::new();
        let mut more = 0usize;
        let mut hit = |what: String| {
            if hits.len() < 3 {
                hits.push(what);
            } else {
                more += 1;
            }
        };
        for (cname, c) in &self.state.clusters {
            for a in c.accounts.names() {
                if like(&component, a.as_str()) {
                    hit(format!("account `{a}` on `{cname}`"));
                }
            }
            for k in c.users.keys() {
                let by_user = k.user != *user && like(name, k.user.as_str());
                if by_user || k.partition.as_ref().is_some_and(|p| like(&component, p.as_str())) {
                    hit(format!("{} on `{cname}`", show_key(k)));
                }
            }
        }
        if hits.is_empty() {
            return Ok(());
        }
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        err(format!(
            "it removes the last association of `{user}`, so sacctmgr then removes the user, and Slurm 23.11 \
             and later delete with it every association matching `{name}` with `_` as a wildcard: {}{more} \
             (hint: keep one association of `{user}`, or remove those first; see docs/decisions.md)",
            hits.join(", ")
        ))
    }
}

fn strip_delta(a: &mut Assoc, gone: &BTreeSet<Name>) {
    if matches!(a.qos, QosList::Delta { .. }) {
        a.qos = a.qos.delta_stripped(gone);
    }
}

/// The name sacctmgr reads back from slurmdbd's reply to a `delete user` (`U = w_y`) and
/// removes the user by when it has no association left: the text up to the first character
/// outside `0-9 A-Z a-z _ . - @`.
pub fn follow_up_name(user: &str) -> &str {
    let end =
        user.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '@'))).unwrap_or(user.len());
    &user[..end]
}

/// Whether `text` matches the SQL `LIKE` pattern `pattern` that has no `%` and no `\` (what
/// [`follow_up_name`] leaves): as many characters, `_` matching any one, the others equal
/// ignoring case (MariaDB's default collation).
pub fn like(pattern: &str, text: &str) -> bool {
    pattern.chars().count() == text.chars().count()
        && pattern.chars().zip(text.chars()).all(|(p, t)| p == '_' || p.to_lowercase().eq(t.to_lowercase()))
}

fn show_key(k: &UserKey) -> String {
    match &k.partition {
        Some(p) => format!("`{}@{}` (partition `{p}`)", k.user, k.account),
        None => format!("`{}@{}`", k.user, k.account),
    }
}

/// An association whose effective DefaultQOS is outside its effective QoS list: the account,
/// the user association (`None` for the account's own row) and that DefaultQOS.
///
/// The DefaultQOS rule is "no command introduces one": Slurm 22.05 lets associations keep a
/// DefaultQOS outside their list (24.11 refuses to create one), and such a violation that is
/// already there must not block commands that do not make it (a pause of the account above it,
/// a limit). A violation stays the same one while the association keeps the same DefaultQOS
/// outside its list, whatever else changes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub account: Name,
    pub user: Option<UserKey>,
    pub default_qos: Name,
}

/// Violations found, each with the message that names it.
type Found = Vec<(Violation, RuleError)>;

/// The first violation of `after` that is not in `before`, as an error.
fn refuse_introduced(before: &BTreeSet<Violation>, after: Found) -> Result<(), RuleError> {
    match after.into_iter().find(|(v, _)| !before.contains(v)) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Every association in the subtree of `top` (accounts and their users) keeps its effective
/// DefaultQOS inside its effective QoS list (for new accounts: nothing was there before).
pub fn check_subtree(c: &ClusterState, top: &Name) -> Result<(), RuleError> {
    refuse_introduced(&BTreeSet::new(), subtree_violations(c, top))
}

/// The violations in the subtree of `top`, in its current place.
pub fn subtree_violations(c: &ClusterState, top: &Name) -> Found {
    let (peff, pdef) = parent_context(c, top);
    let mut out = Vec::new();
    walk(c, top, None, &peff, pdef.as_ref(), &mut out);
    out
}

/// What the account's parent passes down: its effective QoS list and DefaultQOS.
fn parent_context(c: &ClusterState, name: &Name) -> (BTreeSet<Name>, Option<Name>) {
    match c.accounts.parent(name.as_str()) {
        Some(p) => (c.accounts.effective_qos(p.as_str()), c.accounts.effective_default_qos(p.as_str()).cloned()),
        None => (BTreeSet::new(), None),
    }
}

/// The rule on one account and its user associations, given the account tree (whole-state
/// checks: every violation counts, the account's and each user association's, so that a
/// caller comparing with the violations already there sees a new user association under an
/// account that was already broken, e.g. by Slurm 22.05).
fn check_default_qos_of_account<'u>(
    accounts: &AccountGraph,
    acct: &Name,
    users: impl Iterator<Item = (&'u UserKey, &'u Assoc)>,
    out: &mut Vec<RuleError>,
) {
    let eff = accounts.effective_qos(acct.as_str());
    let def = accounts.effective_default_qos(acct.as_str());
    out.extend(account_violation(acct, &eff, def).map(|v| v.1));
    out.extend(users.filter_map(|(k, a)| user_violation(&eff, def, k, a)).map(|v| v.1));
}

fn account_violation(acct: &Name, eff: &BTreeSet<Name>, def: Option<&Name>) -> Option<(Violation, RuleError)> {
    let d = def?;
    if eff.contains(d) {
        return None;
    }
    let e =
        RuleError::broken(format!("account `{acct}` would have DefaultQOS `{d}` outside its QoS list [{}]", list(eff)));
    Some((Violation { account: acct.clone(), user: None, default_qos: d.clone() }, e))
}

fn user_violation(
    acct_eff: &BTreeSet<Name>,
    acct_def: Option<&Name>,
    k: &UserKey,
    a: &Assoc,
) -> Option<(Violation, RuleError)> {
    let d = a.default_qos.as_ref().or(acct_def)?;
    // Most user associations inherit: no copy of the account's list then.
    if matches!(a.qos, QosList::Inherit) && acct_eff.contains(d) {
        return None;
    }
    let eff = a.qos.effective(acct_eff);
    if eff.contains(d) {
        return None;
    }
    let e = RuleError::broken(format!(
        "user association {} would have DefaultQOS `{d}` outside its QoS list [{}]",
        show_key(k),
        list(&eff)
    ));
    Some((Violation { account: k.account.clone(), user: Some(k.clone()), default_qos: d.clone() }, e))
}

/// Slurm 22.05's check after `modify account|user ... set` with `qos=` and/or `defaultqos=`
/// (sacctmgr's `sacctmgr_check_default_qos`, client side, after the change and before the
/// commit): nothing is committed (stderr "These associations don't have access to their
/// default qos", exit 0) unless every association the command's `where` selects holds in its
/// effective QoS list (after the change)
/// - the new DefaultQOS `D` when the command sets one (`defaultqos=D`), even a row with a
///   DefaultQOS of its own that never inherits `D`;
/// - else (`defaultqos=-1`, or a change of the list alone) its own effective DefaultQOS, own or
///   inherited, if it has one.
///
/// The rows a `modify account where name=A` selects are A's own row and the user rows directly
/// under A (rows of sub-accounts are not looked at); a `modify user` selects its user rows. It
/// is not "no violation introduced": a row that already had its DefaultQOS outside its list
/// blocks a change of the list that leaves it outside (tests/data/differential/2205-20927-refused).
/// 24.11 dropped the check; the model refuses these commands, so plans hold on both. A refusal
/// by sacctmgr, not a rule over the state. (Seen: tests/data/differential/2205-2-refused,
/// 2205-206-refused, 2205-219-refused, 2205-234-refused.)
pub struct RowsCheck<'a> {
    /// The account's effective QoS list after the command.
    pub list: &'a BTreeSet<Name>,
    /// The account's effective DefaultQOS after the command (what rows without one inherit).
    pub default: Option<&'a Name>,
    /// `D` of `defaultqos=D`, if the command sets one.
    pub forced: Option<&'a Name>,
}

impl RowsCheck<'_> {
    /// The QoS a row with association `a` must find in its effective list, if it lacks it.
    pub fn missing<'r>(&'r self, a: &'r Assoc) -> Option<&'r Name> {
        let d = self.forced.or(a.default_qos.as_ref()).or(self.default)?;
        (!a.qos.effective(self.list).contains(d)).then_some(d)
    }
}

/// Whether Slurm 22.05 runs [`RowsCheck`] after a command with `set`.
pub fn rows_checked(set: &AssocSet) -> bool {
    set.qos.is_some() || set.default_qos.is_some()
}

/// `D` of a `set` with `defaultqos=D`.
pub fn forced_default(set: &AssocSet) -> Option<&Name> {
    set.default_qos.as_ref().and_then(Option::as_ref)
}

/// [`RowsCheck`] for `modify account where name=account ... set <set>` on the state as it is
/// after the command.
pub fn check_user_rows_for_account_qos(c: &ClusterState, account: &Name, set: &AssocSet) -> Result<(), RuleError> {
    if !rows_checked(set) {
        return Ok(());
    }
    let list = c.accounts.effective_qos(account.as_str());
    let check = RowsCheck {
        list: &list,
        default: c.accounts.effective_default_qos(account.as_str()),
        forced: forced_default(set),
    };
    check_account_rows(c, account, &check)
}

/// [`RowsCheck`] on account `account`'s own row and the user rows directly under it.
pub fn check_account_rows(c: &ClusterState, account: &Name, check: &RowsCheck<'_>) -> Result<(), RuleError> {
    if let Some(d) = check.forced.or(check.default)
        && !check.list.contains(d)
    {
        return err(format!(
            "account `{account}` would have DefaultQOS `{d}` outside its QoS list [{}] (Slurm 22.05 checks it)",
            list(check.list)
        ));
    }
    for (k, a) in c.users_of_account(account) {
        if let Some(d) = check.missing(a) {
            return err(format!(
                "changing the QoS settings of account `{account}` needs `{d}` in the QoS list [{}] of user association {} (Slurm 22.05 checks it)",
                list(&a.qos.effective(check.list)),
                show_key(k)
            ));
        }
    }
    Ok(())
}

/// [`RowsCheck`] for `modify account where name=account ... set <set>` before it runs, with
/// `next` the account's association after it (under its current parent).
pub fn check_account_rows_before(
    c: &ClusterState,
    account: &Name,
    next: &Assoc,
    set: &AssocSet,
) -> Result<(), RuleError> {
    if !rows_checked(set) {
        return Ok(());
    }
    let (peff, pdef) = parent_context(c, account);
    let list = next.qos.effective(&peff);
    let check =
        RowsCheck { list: &list, default: next.default_qos.as_ref().or(pdef.as_ref()), forced: forced_default(set) };
    check_account_rows(c, account, &check)
}

/// The DefaultQOS of `account` when it is outside the account's QoS list (effective values: its
/// own, else inherited), the violation its children and user rows inherit.
fn inherited_violation(c: &ClusterState, account: &Name) -> Option<Name> {
    let d = c.accounts.effective_default_qos(account.as_str())?;
    (!c.accounts.effective_qos(account.as_str()).contains(d)).then(|| d.clone())
}

/// The violations of `users`' associations under `account`.
fn user_violations(c: &ClusterState, account: &Name, users: &[Name]) -> Found {
    let eff = c.accounts.effective_qos(account.as_str());
    let def = c.accounts.effective_default_qos(account.as_str());
    // a set: `add user` asks this twice per batch, and a batch may list thousands of users
    let users: std::collections::HashSet<&Name> = users.iter().collect();
    c.users_of_account(account)
        .filter(|(k, _)| users.contains(&k.user))
        .filter_map(|(k, a)| user_violation(&eff, def, k, a))
        .collect()
}

fn list(s: &BTreeSet<Name>) -> String {
    slurmplan_model::values::join(s)
}

/// Check every rule over a whole state (used on desired states and in tests).
pub fn check_state(state: &State) -> Vec<RuleError> {
    let mut out = Vec::new();
    for (cname, c) in &state.clusters {
        out.extend(check_cluster(cname, c, &c.user_index()));
    }
    out
}

/// Check every rule on one cluster; `index` is `c.user_index()` (callers that already have it
/// pass it in rather than build it twice).
pub fn check_cluster(cname: &Name, c: &ClusterState, index: &UserIndex) -> Vec<RuleError> {
    let mut out = check_default_qos_of_accounts(cname, &c.accounts, |a| c.users_of_account(a));
    out.extend(check_default_accounts(cname, &c.defaults, index));
    out
}

/// The account part of [`check_cluster`], over the parts of a cluster: every account, with its
/// user associations (`users_of`), keeps its effective DefaultQOS inside its effective QoS list.
/// Needs no user index (resolve runs it on the other core while it builds the index).
pub fn check_default_qos_of_accounts<'g, 'u, I>(
    cname: &Name,
    accounts: &'g AccountGraph,
    users_of: impl Fn(&'g Name) -> I,
) -> Vec<RuleError>
where
    I: Iterator<Item = (&'u UserKey, &'u Assoc)>,
{
    let mut out = Vec::new();
    let mut found = Vec::new();
    for acct in accounts.names() {
        check_default_qos_of_account(accounts, acct, users_of(acct), &mut found);
        out.extend(
            found.drain(..).map(|e| RuleError { kind: e.kind, message: format!("on `{cname}`: {}", e.message) }),
        );
    }
    out
}

/// The user part of [`check_cluster`]: every associated user has a DefaultAccount it is
/// associated with, and no other user has one.
pub fn check_default_accounts(cname: &Name, defaults: &BTreeMap<Name, Name>, index: &UserIndex) -> Vec<RuleError> {
    let mut out = Vec::new();
    let orphan =
        |user: &Name| RuleError::broken(format!("on `{cname}`: user `{user}` has a DefaultAccount but no association"));
    // Users with a DefaultAccount but no association: reported after the others.
    let mut orphans = Vec::new();
    // Both in user order: one walk side by side instead of a lookup per user.
    let mut defaults = InOrder::new(defaults);
    for (user, accts) in index.iter() {
        match defaults.get_or_pass(user, |u| orphans.push(orphan(u))) {
            Some(d) if accts.contains(d) => {}
            Some(d) => out.push(RuleError::broken(format!(
                "on `{cname}`: user `{user}` has DefaultAccount `{d}` but no association with it"
            ))),
            None => out.push(RuleError::broken(format!("on `{cname}`: user `{user}` has no DefaultAccount"))),
        }
    }
    orphans.extend(defaults.rest().map(|(u, _)| orphan(u)));
    out.extend(orphans);
    out
}

/// Would giving account `name` the association `new` introduce a violation in its subtree, or
/// (a change of its QoS settings) fail [`RowsCheck`] on its own row and its user rows?
/// Computes effective values without mutating anything.
pub fn check_account_change(c: &ClusterState, name: &Name, new: &Assoc) -> Result<(), RuleError> {
    let (peff, pdef) = parent_context(c, name);
    if let Some(have) = c.accounts.get(name.as_str())
        && (have.assoc.qos != new.qos || have.assoc.default_qos != new.default_qos)
    {
        let list = new.qos.effective(&peff);
        let forced = if have.assoc.default_qos != new.default_qos { new.default_qos.as_ref() } else { None };
        let check = RowsCheck { list: &list, default: new.default_qos.as_ref().or(pdef.as_ref()), forced };
        check_account_rows(c, name, &check)?;
    }
    introduced_by(c, name, Some(new), &peff, pdef.as_ref())
}

/// The violations giving account `name` the association `new` would introduce in its subtree
/// (below it too: what [`check_account_change`] refuses besides its own rows' check).
pub fn introduced_by_change(c: &ClusterState, name: &Name, new: &Assoc) -> Vec<Violation> {
    let (peff, pdef) = parent_context(c, name);
    let before: BTreeSet<Violation> = subtree_violations(c, name).into_iter().map(|(v, _)| v).collect();
    let mut after = Vec::new();
    walk(c, name, Some(new), &peff, pdef.as_ref(), &mut after);
    after.into_iter().map(|(v, _)| v).filter(|v| !before.contains(v)).collect()
}

/// Would placing account `name` under `parent` introduce a violation in its subtree?
pub fn check_reparent(c: &ClusterState, name: &Name, parent: &Name) -> Result<(), RuleError> {
    let peff = c.accounts.effective_qos(parent.as_str());
    let pdef = c.accounts.effective_default_qos(parent.as_str()).cloned();
    introduced_by(c, name, None, &peff, pdef.as_ref())
}

/// Would placing account `name`, with association `new`, under `parent` introduce one?
pub fn check_reparent_with(c: &ClusterState, name: &Name, parent: &Name, new: &Assoc) -> Result<(), RuleError> {
    let peff = c.accounts.effective_qos(parent.as_str());
    let pdef = c.accounts.effective_default_qos(parent.as_str()).cloned();
    introduced_by(c, name, Some(new), &peff, pdef.as_ref())
}

/// The subtree of `name` as it is, against the subtree with `over` as its association and
/// `peff`/`pdef` passed down from its (new) parent.
fn introduced_by(
    c: &ClusterState,
    name: &Name,
    over: Option<&Assoc>,
    peff: &BTreeSet<Name>,
    pdef: Option<&Name>,
) -> Result<(), RuleError> {
    if !c.accounts.contains(name.as_str()) {
        return err(format!("no account `{name}`"));
    }
    let before: BTreeSet<Violation> = subtree_violations(c, name).into_iter().map(|(v, _)| v).collect();
    let mut after = Vec::new();
    walk(c, name, over, peff, pdef, &mut after);
    refuse_introduced(&before, after)
}

/// Would giving user association `key` the settings `new` introduce a violation, or (an
/// existing row whose QoS settings change) leave its DefaultQOS outside its list
/// ([`RowsCheck`])?
pub fn check_user_change(c: &ClusterState, key: &UserKey, new: &Assoc) -> Result<(), RuleError> {
    let eff = c.accounts.effective_qos(key.account.as_str());
    let def = c.accounts.effective_default_qos(key.account.as_str());
    let have = c.users.get(key);
    if let Some(have) = have
        && (have.qos != new.qos || have.default_qos != new.default_qos)
    {
        let check = RowsCheck { list: &eff, default: def, forced: None };
        if let Some(d) = check.missing(new) {
            return err(format!(
                "user association {} would not have `{d}` in its QoS list (Slurm 22.05 checks it)",
                show_key(key)
            ));
        }
    }
    let before: BTreeSet<Violation> =
        have.and_then(|a| user_violation(&eff, def, key, a)).map(|(v, _)| v).into_iter().collect();
    refuse_introduced(&before, user_violation(&eff, def, key, new).into_iter().collect())
}

/// Every violation in the subtree of `acct` (with `over` in place of its own association).
fn walk(
    c: &ClusterState,
    acct: &Name,
    over: Option<&Assoc>,
    peff: &BTreeSet<Name>,
    pdef: Option<&Name>,
    out: &mut Found,
) {
    let Some(node) = c.accounts.get(acct.as_str()) else { return };
    let assoc = over.unwrap_or(&node.assoc);
    let eff = assoc.qos.effective(peff);
    let def = assoc.default_qos.as_ref().or(pdef);
    out.extend(account_violation(acct, &eff, def));
    out.extend(c.users_of_account(acct).filter_map(|(k, a)| user_violation(&eff, def, k, a)));
    for child in c.accounts.children(acct.as_str()) {
        walk(c, child, None, &eff, def, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use slurmplan_model::{AssocData, NameKind, user_index};

    fn n(s: &str) -> Name {
        Name::keep_case(s, NameKind::Account).unwrap()
    }

    fn add_user(user: &str, account: &str) -> Command {
        Command::AddUser {
            cluster: n("c1"),
            users: vec![n(user)],
            account: n(account),
            partition: None,
            set: Default::default(),
            more_accounts: vec![],
            default_account: None,
        }
    }

    fn delete_user(user: &str, account: &str) -> Command {
        Command::DeleteUser { cluster: n("c1"), users: vec![n(user)], account: n(account), partition: None }
    }

    /// Accounts a, b, c under root; `u` in a (its default) and b; `v` only in c.
    fn sim() -> RuleModel {
        let mut state = State::default();
        state.clusters.insert(n("c1"), ClusterState::with_root());
        let mut sim = RuleModel::new(state);
        let add = Command::AddAccount {
            cluster: n("c1"),
            names: vec![n("a"), n("b"), n("c")],
            parent: n("root"),
            record: Default::default(),
            set: Default::default(),
        };
        for cmd in [add, add_user("u", "a"), add_user("u", "b"), add_user("v", "c")] {
            sim.apply(&cmd).unwrap();
        }
        sim
    }

    #[test]
    fn follow_up_name_and_like_follow_sacctmgr_and_mariadb() {
        assert_eq!(follow_up_name("w_y"), "w_y");
        assert_eq!(follow_up_name("john@uni.ee"), "john@uni.ee");
        assert_eq!(follow_up_name("a+b_c"), "a");
        assert_eq!(follow_up_name("w%y"), "w");
        assert!(like("w_y", "wzy") && like("w_y", "w_y") && like("w_y", "W%y") && like("w_y", "wüy"));
        assert!(!like("w_y", "wy") && !like("w_y", "wxxy") && !like("wzy", "w_y") && !like("w_y", "w_z"));
    }

    #[test]
    fn removing_the_last_association_of_a_pattern_name_is_refused_while_it_matches_another() {
        let mut s = sim();
        for cmd in [add_user("w_y", "a"), add_user("wzy", "c")] {
            s.apply(&cmd).unwrap();
        }
        let e = s.apply(&delete_user("w_y", "a")).unwrap_err();
        assert!(e.message.contains("`wzy@c`") && e.message.contains("23.11"), "{e}");
        // with another association of `w_y` left, the delete is exact on every version
        let mut s = sim();
        for cmd in [add_user("w_y", "a"), add_user("w_y", "b"), add_user("wzy", "c")] {
            s.apply(&cmd).unwrap();
        }
        s.apply(&delete_user("w_y", "b")).unwrap();
        // the decoy gone, or no wildcard in the name: allowed
        let mut s = sim();
        s.apply(&add_user("w_y", "a")).unwrap();
        s.apply(&delete_user("w_y", "a")).unwrap();
        let mut s = sim();
        for cmd in [add_user("wzy", "a"), add_user("wxy", "c")] {
            s.apply(&cmd).unwrap();
        }
        s.apply(&delete_user("wzy", "a")).unwrap();
        // the decoy on another cluster counts too: sacctmgr removes the user on every cluster
        let mut s = sim();
        s.state.clusters.insert(n("c2"), ClusterState::with_root());
        s.apply(&add_user("w_y", "a")).unwrap();
        let add_c = Command::AddAccount {
            cluster: n("c2"),
            names: vec![n("c")],
            parent: n("root"),
            record: Default::default(),
            set: Default::default(),
        };
        s.apply(&add_c).unwrap();
        let mut add = add_user("wzy", "c");
        if let Command::AddUser { cluster, .. } = &mut add {
            *cluster = n("c2");
        }
        s.apply(&add).unwrap();
        let e = s.apply(&delete_user("w_y", "a")).unwrap_err();
        assert!(e.message.contains("on `c2`"), "{e}");
    }

    fn default_of(sim: &RuleModel, user: &str) -> Option<String> {
        sim.state.clusters[&n("c1")].defaults.get(&n(user)).map(|a| a.to_string())
    }

    #[test]
    fn removing_users_settles_default_accounts_like_slurmdbd() {
        // Not the default: nothing else changes.
        let mut s = sim();
        s.apply(&delete_user("u", "b")).unwrap();
        assert_eq!(default_of(&s, "u").as_deref(), Some("a"));
        // The last association: the user is gone, with its DefaultAccount.
        s.apply(&delete_user("u", "a")).unwrap();
        assert_eq!(default_of(&s, "u"), None);
        s.apply(&delete_user("v", "c")).unwrap();
        assert_eq!(default_of(&s, "v"), None);
        // The default while another association stays: refused (24.11 refuses; 22.05 would
        // leave it dangling).
        let mut s = sim();
        let e = s.apply(&delete_user("u", "a")).unwrap_err();
        assert!(e.message.contains("while it keeps other associations"), "{e}");
    }

    #[test]
    fn an_add_for_a_user_with_rows_but_no_default_is_unpredictable() {
        // what 22.05 leaves after removing u's default rows: rows under b, no DefaultAccount
        let mut s = sim();
        s.state.clusters.get_mut(&n("c1")).unwrap().users.remove(&UserKey {
            account: n("a"),
            user: n("u"),
            partition: None,
        });
        s.state.clusters.get_mut(&n("c1")).unwrap().defaults.remove(&n("u"));
        let e = s.apply(&add_user("u", "c")).unwrap_err();
        assert!(e.is_unpredictable() && e.message.contains("`u` has associations on `c1`"), "{e}");
        // a stale DefaultAccount naming an account u has no row under is no better
        s.state.clusters.get_mut(&n("c1")).unwrap().defaults.insert(n("u"), n("a"));
        assert!(s.apply(&add_user("u", "a")).unwrap_err().is_unpredictable());
        // once it has one, the add is predictable; a new user's add always is
        s.apply(&Command::SetDefaultAccount { cluster: n("c1"), users: vec![n("u")], account: n("b") }).unwrap();
        s.apply(&add_user("u", "c")).unwrap();
        assert_eq!(default_of(&s, "u").as_deref(), Some("b"));
        s.apply(&add_user("x", "c")).unwrap();
        assert_eq!(default_of(&s, "x").as_deref(), Some("c"));
        // other refusals are not "unpredictable"
        assert!(!s.apply(&add_user("x", "c")).unwrap_err().is_unpredictable());
    }

    #[test]
    fn counts_made_on_the_way_follow_later_adds_and_removals() {
        let mut s = sim();
        s.apply(&add_user("v", "b")).unwrap();
        // A DefaultAccount that already dangles (as on a broken site) makes the model count.
        s.state.clusters.get_mut(&n("c1")).unwrap().defaults.insert(n("v"), n("a"));
        s.apply(&delete_user("v", "c")).unwrap();
        assert!(s.user_assocs.is_some());
        assert_eq!(default_of(&s, "v").as_deref(), Some("a"), "v keeps b, so its dangling default stays");
        // From here on the counts are kept: v's last association goes, and v with it.
        s.apply(&add_user("w", "c")).unwrap();
        s.apply(&delete_user("v", "b")).unwrap();
        assert_eq!(default_of(&s, "v"), None);
        s.apply(&add_user("w", "b")).unwrap();
        let e = s.apply(&delete_user("w", "c")).unwrap_err();
        assert!(e.message.contains("keeps other associations"), "w keeps b: {e}");
        let mut s2 = sim();
        s2.apply(&add_user("w", "c")).unwrap();
        s2.apply(&delete_user("w", "c")).unwrap();
        assert_eq!(default_of(&s2, "w"), None);
        s.apply(&delete_user("u", "b")).unwrap();
        s.apply(&delete_user("u", "a")).unwrap();
        assert_eq!(default_of(&s, "u"), None);
    }

    #[test]
    fn the_default_is_marked_per_row_and_removals_follow_slurmdbd() {
        let part = |user: &str, account: &str, p: &str| Command::AddUser {
            cluster: n("c1"),
            users: vec![n(user)],
            account: n(account),
            partition: Some(n(p)),
            set: Default::default(),
            more_accounts: vec![],
            default_account: None,
        };
        let key = |user: &str, account: &str, p: Option<&str>| UserKey {
            account: n(account),
            user: n(user),
            partition: p.map(n),
        };
        let unmarked = |s: &RuleModel| s.state.clusters[&n("c1")].unmarked.clone();
        let all = |user: &str, account: &str| Command::DeleteUserAll {
            cluster: n("c1"),
            users: vec![n(user)],
            account: n(account),
        };
        // u: a (default) and b; a row added later under a is not marked
        let mut s = sim();
        s.apply(&part("u", "a", "gpu")).unwrap();
        assert_eq!(unmarked(&s), [key("u", "a", Some("gpu"))].into());
        // a new user's rows are all marked, in one command or not
        s.apply(&part("w", "c", "gpu")).unwrap();
        assert!(!unmarked(&s).iter().any(|k| k.user == n("w")));
        // removing the marked row while u keeps others: refused
        let e = s.apply(&delete_user("u", "a")).unwrap_err();
        assert!(e.message.contains("keeps other associations"), "{e}");
        // moving the default away and back marks every row of (u, a)
        let set =
            |account: &str| Command::SetDefaultAccount { cluster: n("c1"), users: vec![n("u")], account: n(account) };
        s.apply(&set("b")).unwrap();
        s.apply(&set("a")).unwrap();
        assert!(unmarked(&s).is_empty());
        // u leaves: b first (not the default), then both rows of a in one command
        let e = s.apply(&delete_user("u", "a")).unwrap_err();
        assert!(e.message.contains("keeps other associations"), "{e}");
        s.apply(&all("u", "b")).unwrap();
        s.apply(&all("u", "a")).unwrap();
        assert_eq!(default_of(&s, "u"), None);
        // v: c (marked) and c/gpu (not): leaving in one command mixes them (22.05 refuses)
        let mut s = sim();
        s.apply(&part("v", "c", "gpu")).unwrap();
        let e = s.apply(&all("v", "c")).unwrap_err();
        assert!(e.message.contains("together with rows that are not"), "{e}");
        // the unmarked row first, then the marked one
        let gpu =
            Command::DeleteUser { cluster: n("c1"), users: vec![n("v")], account: n("c"), partition: Some(n("gpu")) };
        s.apply(&gpu).unwrap();
        s.apply(&all("v", "c")).unwrap();
        assert_eq!(default_of(&s, "v"), None);
        assert!(unmarked(&s).is_empty());
    }

    #[test]
    fn only_default_qos_violations_a_command_introduces_are_refused() {
        use slurmplan_sacctmgr::command::{AssocSet, Scalar};
        // u@a keeps DefaultQOS `normal` outside a's list [paused] (as 22.05 allows).
        let key = UserKey { account: n("a"), user: n("u"), partition: None };
        let violated = || {
            let mut s = sim();
            for q in ["normal", "paused", "gold"] {
                s.state.qos.insert(n(q), Qos::default());
            }
            let c = s.state.clusters.get_mut(&n("c1")).unwrap();
            c.accounts.get_mut("a").unwrap().assoc =
                AssocData { qos: QosList::Set([n("paused")].into()), ..Default::default() }.into();
            c.users.insert(key.clone(), AssocData { default_qos: Some(n("normal")), ..Default::default() }.into());
            s
        };
        let modify = |set: AssocSet| Command::ModifyAccount { cluster: n("c1"), names: vec![n("a")], set };
        let user_default = |q: &str| Command::ModifyUser {
            cluster: n("c1"),
            users: vec![n("u")],
            account: n("a"),
            partition: None,
            set: AssocSet { default_qos: Some(Some(n(q))), ..Default::default() },
        };
        // a limit on a: the violation is not its doing
        let mut s = violated();
        let pause = [(Scalar::GrpSubmitJobs, Some(0))].into();
        s.apply(&modify(AssocSet { scalars: pause, ..Default::default() })).unwrap();
        // another list that still lacks `normal`: Slurm 22.05 checks a's rows after any change of
        // its QoS settings, violations it found included (tests/data/differential/2205-20927-refused)
        let e =
            violated().apply(&modify(AssocSet { qos: Some(QosList::Set([n("gold")].into())), ..Default::default() }));
        assert!(e.unwrap_err().message.contains("needs `normal` in the QoS list [gold] of user association `u@a`"));
        // the planner's predicates agree: keeping it is not introducing it, leaving it repairs it
        let c = &s.state.clusters[&n("c1")];
        let with = |q: &str| -> Assoc { AssocData { default_qos: Some(n(q)), ..Default::default() }.into() };
        assert!(check_user_change(c, &key, &with("normal")).is_ok());
        assert!(check_user_change(c, &key, &with("paused")).is_ok());
        assert!(check_user_change(c, &key, &with("gold")).is_err());
        s.apply(&user_default("paused")).unwrap();
        // a DefaultQOS on a outside its list: introduced, refused
        let e = violated().apply(&modify(AssocSet { default_qos: Some(Some(n("normal"))), ..Default::default() }));
        assert!(e.unwrap_err().message.contains("account `a` would have DefaultQOS `normal`"));
        // u moving to another DefaultQOS outside the list: introduced, refused
        let e = violated().apply(&user_default("gold")).unwrap_err();
        assert!(e.message.contains("`u@a` would have DefaultQOS `gold`"), "{e}");
    }

    /// Seen on 22.05.8 (tests/data/differential/2205-2-refused, 2205-219-refused): `set
    /// defaultqos=q0` on an account is refused while a user row directly under it has its own
    /// list without `q0`, even with a DefaultQOS of its own inside that list; a change of the
    /// list alone is checked against each row's own DefaultQOS (2205-20927-refused), and the
    /// default is accepted once the user's list holds `q0`.
    #[test]
    fn account_default_must_be_in_the_lists_of_its_user_rows() {
        let mut s = sim();
        for q in ["normal", "q0"] {
            s.state.qos.insert(n(q), Qos::default());
        }
        let set = |qos: &[&str], def: Option<&str>| AssocSet {
            qos: Some(QosList::Set(qos.iter().map(|q| n(q)).collect())),
            default_qos: def.map(|d| Some(n(d))),
            ..Default::default()
        };
        let modify_account = |set| Command::ModifyAccount { cluster: n("c1"), names: vec![n("a")], set };
        let modify_user =
            |set| Command::ModifyUser { cluster: n("c1"), users: vec![n("u")], account: n("a"), partition: None, set };
        s.apply(&modify_user(set(&["normal"], Some("normal")))).unwrap();
        let ok = RuleModel::new(s.state.clone());
        let e = s.apply(&modify_account(set(&["normal", "q0"], Some("q0")))).unwrap_err();
        assert!(e.message.contains("needs `q0` in the QoS list [normal] of user association `u@a`"), "{e}");
        // a row already outside its list: neither a list change that leaves it outside
        // (2205-20927-refused) nor clearing the account's DefaultQOS passes (2205-234-refused)
        let mut broken = RuleModel::new(ok.state.clone());
        let c = broken.state.clusters.get_mut(&n("c1")).unwrap();
        let row = c.users.get_mut(&UserKey { account: n("a"), user: n("u"), partition: None }).unwrap();
        row.qos = QosList::Inherit;
        row.default_qos = Some(n("q0"));
        let mut list_only = RuleModel::new(broken.state.clone());
        let e = list_only.apply(&modify_account(set(&["normal"], None))).unwrap_err();
        assert!(e.message.contains("needs `q0` in the QoS list [normal] of user association `u@a`"), "{e}");
        let clear = AssocSet { qos: Some(QosList::Inherit), default_qos: Some(None), ..Default::default() };
        let e = broken.apply(&modify_account(clear)).unwrap_err();
        assert!(e.message.contains("needs `q0` in the QoS list []"), "{e}");
        // the list alone is not checked; the user's list widened first lets the default in
        let mut s = RuleModel::new(ok.state.clone());
        s.apply(&modify_account(AssocSet {
            qos: Some(QosList::Set([n("q0"), n("normal")].into())),
            ..Default::default()
        }))
        .unwrap();
        let mut s = RuleModel::new(ok.state.clone());
        s.apply(&modify_user(set(&["normal", "q0"], None))).unwrap();
        s.apply(&modify_account(set(&["normal", "q0"], Some("q0")))).unwrap();
    }

    /// The rule as written: each associated user's DefaultAccount is one of its associations
    /// (in user order), then each user with a DefaultAccount but no association.
    fn naive(cname: &Name, defaults: &BTreeMap<Name, Name>, keys: &[UserKey]) -> Vec<String> {
        let mut of: BTreeMap<&Name, BTreeSet<&Name>> = BTreeMap::new();
        for k in keys {
            of.entry(&k.user).or_default().insert(&k.account);
        }
        let mut out = Vec::new();
        for (user, accts) in &of {
            match defaults.get(*user) {
                Some(d) if accts.contains(d) => {}
                Some(d) => {
                    out.push(format!("on `{cname}`: user `{user}` has DefaultAccount `{d}` but no association with it"))
                }
                None => out.push(format!("on `{cname}`: user `{user}` has no DefaultAccount")),
            }
        }
        for user in defaults.keys().filter(|u| !of.contains_key(u)) {
            out.push(format!("on `{cname}`: user `{user}` has a DefaultAccount but no association"));
        }
        out
    }

    proptest! {
        #[test]
        fn default_account_rule_matches_its_definition(
            assocs in prop::collection::btree_set(("a[0-3]", "u[0-7]"), 0..25),
            defaults in prop::collection::btree_map("u[0-9]", "a[0-4]", 0..10),
        ) {
            let cname = n("c1");
            let keys: Vec<UserKey> =
                assocs.iter().map(|(a, u)| UserKey { account: n(a), user: n(u), partition: None }).collect();
            let defaults: BTreeMap<Name, Name> = defaults.iter().map(|(u, a)| (n(u), n(a))).collect();
            let got: Vec<String> =
                check_default_accounts(&cname, &defaults, &user_index(&keys)).into_iter().map(|e| e.message).collect();
            prop_assert_eq!(got, naive(&cname, &defaults, &keys));
        }
    }
}
