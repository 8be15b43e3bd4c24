//! The one model type on both sides of the diff: [`State`].
//!
//! Clusters hold an [`AccountGraph`] (a petgraph tree with a name index), user associations and
//! users' DefaultAccount; QoS objects and account records (Description, Organization) are global
//! as in slurmdbd. Everything iterates in a deterministic order. No I/O, no parsing of
//! sacctmgr text (that is `sacctmgr::parse`), no YAML (that is `desired`).

use petgraph::Direction;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::names::{Name, root};
use super::values::{Fairshare, QosList, Tres};

/// Limits slurmplan manages on an association. `None`/empty = unset (sacctmgr prints nothing).
/// Ordered field by field (an arbitrary total order, for keys).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairshare: Option<Fairshare>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grp_jobs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grp_submit_jobs: Option<u64>,
    #[serde(default, skip_serializing_if = "Tres::is_empty")]
    pub grp_tres: Tres,
    #[serde(default, skip_serializing_if = "Tres::is_empty")]
    pub grp_tres_mins: Tres,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grp_wall: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_jobs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_submit_jobs: Option<u64>,
    #[serde(default, skip_serializing_if = "Tres::is_empty")]
    pub max_tres: Tres,
    #[serde(default, skip_serializing_if = "Tres::is_empty")]
    pub max_tres_mins: Tres,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall: Option<u64>,
}

/// What is explicitly set on one association (account row or user row), shared.
///
/// Why shared: a site holds up to a million user associations and nearly all of them set
/// nothing, while every state (current, desired, the planner's model) holds a copy of each.
/// `Assoc` is a cheap handle to an immutable [`AssocData`]: an association that sets nothing
/// holds nothing (no allocation, and no reference count that two threads making a million
/// empty associations each would fight over); one that sets something shares its data, and
/// writing through `DerefMut` copies on write. Reads see the fields directly (`assoc.limits`,
/// `assoc.qos`).
#[derive(Clone, Default)]
pub struct Assoc(Option<std::sync::Arc<AssocData>>);

/// What every empty association reads as.
static EMPTY_ASSOC: AssocData = AssocData {
    limits: Limits {
        fairshare: None,
        grp_jobs: None,
        grp_submit_jobs: None,
        grp_tres: BTreeMap::new(),
        grp_tres_mins: BTreeMap::new(),
        grp_wall: None,
        max_jobs: None,
        max_submit_jobs: None,
        max_tres: BTreeMap::new(),
        max_tres_mins: BTreeMap::new(),
        max_wall: None,
    },
    qos: QosList::Inherit,
    default_qos: None,
};

impl From<AssocData> for Assoc {
    fn from(d: AssocData) -> Assoc {
        if d == EMPTY_ASSOC { Assoc(None) } else { Assoc(Some(std::sync::Arc::new(d))) }
    }
}

impl std::ops::Deref for Assoc {
    type Target = AssocData;
    fn deref(&self) -> &AssocData {
        self.0.as_deref().unwrap_or(&EMPTY_ASSOC)
    }
}

impl std::ops::DerefMut for Assoc {
    fn deref_mut(&mut self) -> &mut AssocData {
        std::sync::Arc::make_mut(self.0.get_or_insert_with(Default::default))
    }
}

/// Equal when the data is (an empty association may also be held as data after a write).
impl PartialEq for Assoc {
    fn eq(&self, other: &Assoc) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) if std::sync::Arc::ptr_eq(a, b) => true,
            _ => **self == **other,
        }
    }
}

impl Eq for Assoc {}

/// As its fields ([`AssocData`]).
impl Ord for Assoc {
    fn cmp(&self, other: &Assoc) -> std::cmp::Ordering {
        if self == other { std::cmp::Ordering::Equal } else { (**self).cmp(&**other) }
    }
}

impl PartialOrd for Assoc {
    fn partial_cmp(&self, other: &Assoc) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for Assoc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Assoc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Assoc, D::Error> {
        AssocData::deserialize(d).map(Assoc::from)
    }
}

impl std::fmt::Debug for Assoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// The fields of an [`Assoc`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct AssocData {
    #[serde(flatten)]
    pub limits: Limits,
    #[serde(default)]
    pub qos: QosList,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_qos: Option<Name>,
}

impl AssocData {
    /// Every QoS the association names: its DefaultQOS, then its list (both sides of a delta).
    pub fn qos_names(&self) -> impl Iterator<Item = &Name> {
        let (first, second) = match &self.qos {
            QosList::Inherit => (None, None),
            QosList::Set(s) => (Some(s), None),
            QosList::Delta { add, remove } => (Some(add), Some(remove)),
        };
        self.default_qos.iter().chain(first.into_iter().flatten()).chain(second.into_iter().flatten())
    }

    /// Does the association name QoS `q` (as its DefaultQOS or in its list)?
    pub fn uses_qos(&self, q: &Name) -> bool {
        self.qos_names().any(|n| n == q)
    }
}

/// The account record, global across clusters. `None` = not managed (desired) / not read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct AccountRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
}

/// A QoS object (global).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Qos {
    /// Lower-cased flag names (`denyonlimit`, `nodecay`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub flags: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Tres::is_empty")]
    pub grp_tres_mins: Tres,
    #[serde(default, skip_serializing_if = "Tres::is_empty")]
    pub grp_tres: Tres,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grp_submit_jobs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall: Option<u64>,
    /// `None` = not managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Key of a user association: (user, account, partition). Sorted by account first so that
/// batching per account is a range walk.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UserKey {
    pub account: Name,
    pub user: Name,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Name>,
}

/// `alice@proj1` or `alice@proj1:gpu`.
pub fn user_key_label(k: &UserKey) -> String {
    match &k.partition {
        Some(p) => format!("{}@{}:{p}", k.user, k.account),
        None => format!("{}@{}", k.user, k.account),
    }
}

/// One account association on a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountNode {
    pub name: Name,
    pub assoc: Assoc,
}

/// The account tree of one cluster: a petgraph graph (edge parent -> child) with a name index.
#[derive(Debug, Clone, Default)]
pub struct AccountGraph {
    graph: StableDiGraph<AccountNode, ()>,
    index: HashMap<Name, NodeIndex, super::names::NameHash>,
}

/// Why an account could not be placed in the tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("account `{0}` is listed twice")]
    Duplicate(Name),
    #[error("account `{child}` names parent `{parent}`, which does not exist")]
    MissingParent { child: Name, parent: Name },
    #[error("accounts {0:?} form a cycle of parents")]
    Cycle(Vec<Name>),
    #[error("account `{0}` has no parent (only `root` may)")]
    NoParent(Name),
}

impl AccountGraph {
    /// Build from (name, parent, assoc) triples. `root` has parent `None`; every other account
    /// needs a parent that is in the list. Checks duplicates, missing parents and cycles.
    pub fn build(
        items: impl IntoIterator<Item = (Name, Option<Name>, Assoc)>,
    ) -> Result<AccountGraph, Vec<GraphError>> {
        let mut g = AccountGraph::default();
        let mut parents: Vec<(Name, Option<Name>)> = Vec::new();
        let mut errors = Vec::new();
        for (name, parent, assoc) in items {
            if g.index.contains_key(&name) {
                errors.push(GraphError::Duplicate(name));
                continue;
            }
            let ix = g.graph.add_node(AccountNode { name: name.clone(), assoc });
            g.index.insert(name.clone(), ix);
            parents.push((name, parent));
        }
        for (name, parent) in parents {
            match parent {
                None if name.as_str() == "root" => {}
                None => errors.push(GraphError::NoParent(name)),
                Some(p) => match g.index.get(&p) {
                    Some(&pix) => {
                        g.graph.add_edge(pix, g.index[&name], ());
                    }
                    None => errors.push(GraphError::MissingParent { child: name, parent: p }),
                },
            }
        }
        if errors.is_empty()
            && let Some(cycle) = g.find_cycle()
        {
            errors.push(GraphError::Cycle(cycle));
        }
        if errors.is_empty() { Ok(g) } else { Err(errors) }
    }

    fn find_cycle(&self) -> Option<Vec<Name>> {
        let sccs = petgraph::algo::tarjan_scc(&self.graph);
        let mut cycles: Vec<Vec<Name>> = sccs
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut v: Vec<Name> = c.iter().map(|ix| self.graph[*ix].name.clone()).collect();
                v.sort();
                v
            })
            .collect();
        cycles.sort();
        cycles.into_iter().next()
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }
    pub fn get(&self, name: &str) -> Option<&AccountNode> {
        self.index.get(name).map(|ix| &self.graph[*ix])
    }
    pub fn get_mut(&mut self, name: &str) -> Option<&mut AccountNode> {
        let ix = *self.index.get(name)?;
        Some(&mut self.graph[ix])
    }

    /// The parent of `name` (None for root or an unknown account).
    pub fn parent(&self, name: &str) -> Option<&Name> {
        let ix = *self.index.get(name)?;
        self.graph.edges_directed(ix, Direction::Incoming).next().map(|e| &self.graph[e.source()].name)
    }

    /// Children of `name`, sorted.
    pub fn children(&self, name: &str) -> Vec<&Name> {
        let Some(&ix) = self.index.get(name) else { return Vec::new() };
        let mut v: Vec<&Name> =
            self.graph.edges_directed(ix, Direction::Outgoing).map(|e| &self.graph[e.target()].name).collect();
        v.sort();
        v
    }

    /// Ancestors of `name`, nearest first (excluding `name`).
    pub fn ancestors(&self, name: &str) -> Vec<&Name> {
        self.chain(name).skip(1).map(|n| &n.name).collect()
    }

    /// `name`'s node, then its parent's, up to root: walked by graph edges (no lookup of each
    /// ancestor's name; callers walk this for every account and every changed user).
    fn chain(&self, name: &str) -> impl Iterator<Item = &AccountNode> {
        let mut cur = self.index.get(name).copied();
        let mut steps = 0;
        std::iter::from_fn(move || {
            let ix = cur?;
            // Defensive: the graph is a tree by construction.
            steps += 1;
            if steps > self.len() + 1 {
                return None;
            }
            cur = self.graph.neighbors_directed(ix, Direction::Incoming).next();
            Some(&self.graph[ix])
        })
    }

    /// All account names in sorted order.
    pub fn names(&self) -> Vec<&Name> {
        let mut v: Vec<&Name> = self.index.keys().collect();
        v.sort();
        v
    }

    /// Depth of each account (root = 0), for ordering creates (parents first) and deletes.
    pub fn depth(&self, name: &str) -> usize {
        self.ancestors(name).len()
    }

    /// Every account in the subtree under `name` (including it), sorted.
    pub fn subtree(&self, name: &str) -> Vec<&Name> {
        let mut out = Vec::new();
        let Some(&start) = self.index.get(name) else { return out };
        let mut stack = vec![start];
        while let Some(ix) = stack.pop() {
            out.push(&self.graph[ix].name);
            stack.extend(self.graph.neighbors_directed(ix, Direction::Outgoing));
        }
        out.sort();
        out
    }

    /// Insert a new account under an existing parent.
    pub fn insert(&mut self, name: Name, parent: &str, assoc: Assoc) -> Result<(), GraphError> {
        if self.index.contains_key(&name) {
            return Err(GraphError::Duplicate(name));
        }
        let Some(&pix) = self.index.get(parent) else {
            return Err(GraphError::MissingParent {
                child: name,
                parent: Name::keep_case(parent, super::names::NameKind::Account).unwrap_or_else(|_| root()),
            });
        };
        let ix = self.graph.add_node(AccountNode { name: name.clone(), assoc });
        self.graph.add_edge(pix, ix, ());
        self.index.insert(name, ix);
        Ok(())
    }

    /// Move `name` (with its subtree) under `new_parent`. Refuses a move into its own subtree.
    pub fn reparent(&mut self, name: &str, new_parent: &str) -> Result<(), String> {
        let ix = *self.index.get(name).ok_or_else(|| format!("no account `{name}`"))?;
        let pix = *self.index.get(new_parent).ok_or_else(|| format!("no parent account `{new_parent}`"))?;
        if self.subtree(name).iter().any(|n| n.as_str() == new_parent) {
            return Err(format!("`{new_parent}` is inside the subtree of `{name}`"));
        }
        let old: Vec<_> = self.graph.edges_directed(ix, Direction::Incoming).map(|e| e.id()).collect();
        for e in old {
            self.graph.remove_edge(e);
        }
        self.graph.add_edge(pix, ix, ());
        Ok(())
    }

    /// Remove a leaf account. Refuses an account with children.
    pub fn remove_leaf(&mut self, name: &str) -> Result<AccountNode, String> {
        let ix = *self.index.get(name).ok_or_else(|| format!("no account `{name}`"))?;
        if self.graph.neighbors_directed(ix, Direction::Outgoing).next().is_some() {
            return Err(format!("account `{name}` still has child accounts"));
        }
        self.index.remove(name);
        Ok(self.graph.remove_node(ix).expect("index and graph agree"))
    }

    /// Effective QoS list of an account: its own list applied on its parent's effective list.
    pub fn effective_qos(&self, name: &str) -> BTreeSet<Name> {
        let chain: Vec<&AccountNode> = self.chain(name).collect();
        let mut eff = BTreeSet::new();
        for n in chain.iter().rev() {
            eff = n.assoc.qos.effective(&eff);
        }
        eff
    }

    /// Effective DefaultQOS of an account: its own, else the nearest ancestor's.
    pub fn effective_default_qos(&self, name: &str) -> Option<&Name> {
        self.chain(name).find_map(|n| n.assoc.default_qos.as_ref())
    }

    /// (name, parent, assoc) for every account, sorted by name.
    pub fn iter_sorted(&self) -> Vec<(&Name, Option<&Name>, &Assoc)> {
        self.names()
            .into_iter()
            .map(|n| {
                let node = self.get(n.as_str()).expect("name from index");
                (n, self.parent(n.as_str()), &node.assoc)
            })
            .collect()
    }
}

impl PartialEq for AccountGraph {
    fn eq(&self, other: &Self) -> bool {
        self.iter_sorted() == other.iter_sorted()
    }
}
impl Eq for AccountGraph {}

/// The accounting state of one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterState {
    pub accounts: AccountGraph,
    pub users: BTreeMap<UserKey, Assoc>,
    /// Each user's DefaultAccount on this cluster (users with none are absent).
    pub defaults: BTreeMap<Name, Name>,
    /// User associations under their user's DefaultAccount that do not carry slurmdbd's
    /// default mark. slurmdbd marks the default per association row: `modify user set
    /// defaultaccount=A` and a new user's first `add user` mark every row of (user, A), but a
    /// row added later under the default is not marked. Which rows are marked decides what a
    /// removal does (docs/planning.md); usually empty.
    pub unmarked: BTreeSet<UserKey>,
}

impl ClusterState {
    /// Does any association on the cluster name QoS `q`?
    pub fn uses_qos(&self, q: &Name) -> bool {
        self.accounts.iter_sorted().iter().any(|(_, _, a)| a.uses_qos(q)) || self.users.values().any(|a| a.uses_qos(q))
    }

    /// A cluster with only `root` (what `sacctmgr add cluster` creates).
    pub fn with_root() -> ClusterState {
        let accounts = AccountGraph::build([(root(), None, Assoc::default())]).expect("one root");
        ClusterState { accounts, ..Default::default() }
    }

    /// User associations under `account` (all users, all partitions), in key order.
    pub fn users_of_account<'a>(&'a self, account: &Name) -> impl Iterator<Item = (&'a UserKey, &'a Assoc)> + use<'a> {
        let account = account.clone();
        let lo = UserKey { account: account.clone(), user: Name::min_value(), partition: None };
        self.users.range(lo..).take_while(move |(k, _)| k.account == account)
    }

    /// Whether `user` has any association (any partition) under `account`.
    pub fn is_associated(&self, user: &Name, account: &Name) -> bool {
        let lo = UserKey { account: account.clone(), user: user.clone(), partition: None };
        self.users.range(lo..).next().is_some_and(|(k, _)| &k.account == account && &k.user == user)
    }

    /// The user associations of `user`, in key order. Linear scan; callers that need it for
    /// many users build an index (see `user_index`).
    pub fn user_accounts(&self, user: &str) -> Vec<&UserKey> {
        self.users.keys().filter(|k| k.user.as_str() == user).collect()
    }

    /// user -> the accounts the user is associated with (any partition).
    pub fn user_index(&self) -> UserIndex {
        user_index(self.users.keys())
    }

    /// Effective QoS list of a user association.
    pub fn user_effective_qos(&self, key: &UserKey, assoc: &Assoc) -> BTreeSet<Name> {
        assoc.qos.effective(&self.accounts.effective_qos(key.account.as_str()))
    }

    /// Effective DefaultQOS of a user association.
    pub fn user_effective_default_qos<'a>(&'a self, key: &UserKey, assoc: &'a Assoc) -> Option<&'a Name> {
        assoc.default_qos.as_ref().or_else(|| self.accounts.effective_default_qos(key.account.as_str()))
    }
}

/// user -> the accounts the user is associated with (any partition), both in name order.
///
/// Two flat lists rather than a map of sets: a site has up to 200,000 users and a million
/// associations, and every plan builds this (a small set per user costs far more; figures in
/// docs/performance.md). Callers walk it
/// in user order (often beside another map sorted by user) or look a user up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserIndex {
    /// Each user, and the end of its accounts in `accounts` (they start where the previous
    /// user's end).
    users: Vec<(Name, u32)>,
    accounts: Vec<Name>,
}

impl UserIndex {
    /// (user, accounts) in user order.
    pub fn iter(&self) -> impl Iterator<Item = (&Name, &[Name])> {
        (0..self.users.len()).map(|i| (&self.users[i].0, self.accounts_of(i)))
    }

    /// The accounts of `user`, if it has any association.
    pub fn get(&self, user: &Name) -> Option<&[Name]> {
        let i = self.users.binary_search_by(|(u, _)| u.cmp(user)).ok()?;
        Some(self.accounts_of(i))
    }

    /// The accounts of the `i`-th user.
    fn accounts_of(&self, i: usize) -> &[Name] {
        let start = if i == 0 { 0 } else { self.users[i - 1].1 as usize };
        &self.accounts[start..self.users[i].1 as usize]
    }

    pub fn contains_key(&self, user: &Name) -> bool {
        self.get(user).is_some()
    }

    /// The number of users.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// The [`UserIndex`] of association keys.
pub fn user_index<'a>(keys: impl IntoIterator<Item = &'a UserKey>) -> UserIndex {
    // One sort of (user, account) copies (small values, see `Name`: no pointer to follow per
    // comparison). Keys come in key order, account first, from every caller: then a stable
    // sort by user alone leaves each user's accounts in order. Checked, not assumed.
    let mut pairs: Vec<(Name, Name)> = keys.into_iter().map(|k| (k.user.clone(), k.account.clone())).collect();
    if pairs.windows(2).all(|w| w[0].1 <= w[1].1) {
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
    } else {
        pairs.sort_unstable();
    }
    // A pair repeats once per partition.
    pairs.dedup();
    let mut index = UserIndex { users: Vec::new(), accounts: Vec::with_capacity(pairs.len()) };
    for (user, account) in pairs {
        if index.users.last().is_none_or(|(last, _)| *last != user) {
            index.users.push((user, 0));
        }
        index.accounts.push(account);
        let end = u32::try_from(index.accounts.len()).expect("fewer than 2^32 associations");
        index.users.last_mut().expect("pushed above").1 = end;
    }
    index
}

/// The whole accounting state: what `sacctmgr` reads back, or what the desired file declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub clusters: BTreeMap<Name, ClusterState>,
    pub accounts: BTreeMap<Name, AccountRecord>,
    pub qos: BTreeMap<Name, Qos>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NameKind;
    use proptest::prelude::*;

    #[test]
    fn empty_associations_hold_nothing_and_equal_emptied_ones() {
        let mut a = Assoc::default();
        assert!(a.0.is_none());
        a.limits.grp_jobs = Some(3);
        assert_ne!(a, Assoc::default());
        let shared = a.clone();
        assert_eq!(a, shared);
        a.limits.grp_jobs = None; // copied on write; now data that sets nothing
        assert_eq!(shared.limits.grp_jobs, Some(3));
        assert_eq!(a, Assoc::default());
        assert_eq!(Assoc::default(), a);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, serde_json::to_string(&Assoc::default()).unwrap());
        let back: Assoc = serde_json::from_str(&json).unwrap();
        assert!(back.0.is_none());
        assert_eq!(Assoc::from(AssocData::default()).0, None);
    }

    /// The index as the plain definition says: user -> accounts, by string order.
    fn naive(keys: &[UserKey]) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut m: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for k in keys {
            m.entry(k.user.as_str()).or_default().insert(k.account.as_str());
        }
        m
    }

    /// What the index holds, as the plain definition's types (and every lookup agrees).
    fn seen(index: &UserIndex) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut m = BTreeMap::new();
        for (user, accounts) in index.iter() {
            assert!(accounts.windows(2).all(|w| w[0] < w[1]), "accounts of {user} in order, once each");
            assert_eq!(index.get(user), Some(accounts));
            m.insert(user.as_str(), accounts.iter().map(Name::as_str).collect());
        }
        assert_eq!(index.len(), m.len());
        m
    }

    proptest! {
        /// Short (inline) and long (past 15 bytes, sharing their first 11) names, partitions
        /// repeating a pair.
        #[test]
        fn user_index_matches_its_definition(
            raw in prop::collection::vec(("(u|user_nam|user_name_|user_name_x|user_name_long_)[0-9]{0,3}", "a[0-9]", prop::option::of("p[12]")), 0..60)
        ) {
            let n = |s: &str| Name::keep_case(s, NameKind::User).unwrap();
            let keys: Vec<UserKey> = raw
                .iter()
                .map(|(u, a, p)| UserKey { account: n(a), user: n(u), partition: p.as_deref().map(n) })
                .collect();
            // In any order, and in key order (as callers pass them).
            let index = user_index(&keys);
            prop_assert_eq!(seen(&index), naive(&keys));
            let mut sorted = keys.clone();
            sorted.sort();
            prop_assert_eq!(&user_index(&sorted), &index);
            prop_assert!(!index.contains_key(&n("nobody")));
        }
    }
}
