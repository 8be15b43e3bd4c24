//! One cluster of a desired file: its accounts and their user lists, account records merged
//! across clusters, and the checks that need the whole cluster (repeated users, parent cycles).
//!
//! Part of the desired-file loader (methods of `Loader`): pure, no I/O, no sacctmgr, no printing.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    ACCOUNT_ONLY_KEYS, ASSOC_KEYS, CLUSTER_KEYS, CLUSTER_USER_KEYS, Loader, RecordSeen, USER_ASSOC_ONLY_KEYS,
    merge_hint,
};
use crate::tree::{Node, SNode};
use crate::{Decl, DeclaredUser, DeclaredUsers, DesiredAccount, DesiredCluster, LineColumn, Locations};
use slurmplan_diag::{Diagnostic, Location};
use slurmplan_model::names::{self, Name, NameKind};
use slurmplan_model::{Assoc, UserKey, user_index};

/// account -> (key node, parent value node)
type Declared<'n> = BTreeMap<Name, (&'n SNode<'n>, Option<&'n SNode<'n>>)>;

impl Loader<'_> {
    pub(super) fn cluster(
        &mut self,
        cname: &Name,
        node: &SNode,
        records: &mut BTreeMap<Name, RecordSeen>,
        locations: &mut Locations,
    ) -> DesiredCluster {
        let what = format!("clusters.{cname}");
        let f = self.fields(node, &what, CLUSTER_KEYS);
        let mut cluster = DesiredCluster::default();
        // account -> (key node, parent value node)
        let mut declared: BTreeMap<Name, (&SNode, Option<&SNode>)> = BTreeMap::new();
        // Every declared user association, in file order (one sorted bulk build below); sized
        // once, as are their locations, so a million entries are not grown by doubling.
        let declared_users = f.get("accounts").map_or(0, count_user_entries);
        let mut user_assocs: Vec<DeclaredUser> = Vec::with_capacity(declared_users);

        if let Some(accts) = f.get("accounts") {
            for e in self.entries(accts, &format!("{what}.accounts")) {
                let Some(aname) = self.name_text(e.key, &e.text, NameKind::Account) else {
                    continue;
                };
                if let Some((first, _)) = declared.get(&aname) {
                    self.error(
                        "duplicate-account",
                        e.key,
                        format!("account `{aname}` is declared twice on cluster `{cname}`"),
                        merge_hint(first, &e.text),
                    );
                    continue;
                }
                let awhat = format!("{what}.accounts.{aname}");
                let allowed: Vec<&'static str> = ACCOUNT_ONLY_KEYS.iter().chain(ASSOC_KEYS).copied().collect();
                let af = self.fields(e.value, &awhat, &allowed);
                let parent_node = af.get("parent");
                let parent = self.account_parent(&aname, parent_node, &awhat);
                declared.insert(aname.clone(), (e.key, parent_node.filter(|_| aname.as_str() != "root")));
                locations.insert(Decl::Account(cname.clone(), aname.clone()), self.pos(e.key));

                // The global account record.
                let description =
                    af.get("description").and_then(|n| self.text(n, &format!("{awhat}.description")).map(|t| (t, n)));
                let organization =
                    af.get("organization").and_then(|n| self.text(n, &format!("{awhat}.organization")).map(|t| (t, n)));
                self.merge_record(records, &aname, cname, description, organization);

                let assoc = self.assoc(&af, &awhat);
                cluster.accounts.insert(aname.clone(), DesiredAccount { parent, assoc });

                if let Some(users) = af.get("users") {
                    self.account_users(cname, &aname, users, &awhat, &mut user_assocs);
                }
            }
        }

        // Each (account, user, partition) is listed once per account (duplicates were refused
        // above), so the keys are unique.
        cluster.users = DeclaredUsers::from_unsorted(user_assocs).expect("user associations are unique per account");

        self.undeclared_parents(cname, &cluster, &declared);
        self.cycles(cname, &cluster, &declared);

        if let Some(users) = f.get("users") {
            self.cluster_users(cname, &format!("{what}.users"), users, &mut cluster, &declared, locations);
        }
        cluster
    }

    /// The parent of account `aname` (`root` when not given, or not valid).
    fn account_parent(&mut self, aname: &Name, parent_node: Option<&SNode>, awhat: &str) -> Name {
        let mut parent = names::root();
        if let Some(p) = parent_node {
            if aname.as_str() == "root" {
                self.error(
                    "root-parent",
                    p,
                    "account `root` cannot have a parent".into(),
                    "remove `parent` from `root`; it is the top of every cluster's tree",
                );
            } else if let Some(pn) = self.name(p, NameKind::Account, &format!("{awhat}.parent")) {
                parent = pn;
            }
        }
        parent
    }

    /// Parents: declared here, root, or (warning) expected on the cluster already.
    fn undeclared_parents(&mut self, cname: &Name, cluster: &DesiredCluster, declared: &Declared<'_>) {
        for (aname, (_, parent_node)) in declared {
            let Some(pnode) = parent_node else { continue };
            let parent = &cluster.accounts[aname].parent;
            if parent.as_str() == "root" || declared.contains_key(parent) {
                continue;
            }
            self.warn(
                "undeclared-parent",
                pnode,
                format!("parent `{parent}` of account `{aname}` is not declared on cluster `{cname}`"),
                "it must already exist on the cluster; checked at plan time",
            );
        }
    }

    /// The cluster's `users` (DefaultAccounts) at `uwhat`, checked against the associations
    /// declared under its accounts.
    fn cluster_users(
        &mut self,
        cname: &Name,
        uwhat: &str,
        users: &SNode,
        cluster: &mut DesiredCluster,
        declared: &Declared<'_>,
        locations: &mut Locations,
    ) {
        let mut seen: BTreeMap<Name, &SNode> = BTreeMap::new();
        // user -> accounts with an association (only needed here)
        let assocs_of = user_index(cluster.users.keys());
        for e in self.entries(users, uwhat) {
            let Some(user) = self.name_text(e.key, &e.text, NameKind::User) else {
                continue;
            };
            if let Some(first) = seen.get(&user) {
                let first_at = self.at(first);
                self.error(
                    "duplicate-user",
                    e.key,
                    format!("user `{user}` appears twice in `{uwhat}`"),
                    format!("merge it with the one at line {}", first_at.line),
                );
                continue;
            }
            seen.insert(user.clone(), e.key);
            locations.insert(Decl::User(cname.clone(), user.clone()), self.pos(e.key));
            let uf = self.fields(e.value, &format!("{uwhat}.{user}"), CLUSTER_USER_KEYS);
            let associated = assocs_of.get(&user);
            match uf.get("default_account") {
                Some(dn) => {
                    let Some(acct) = self.name(dn, NameKind::Account, &format!("{uwhat}.{user}.default_account"))
                    else {
                        continue;
                    };
                    if associated.is_some_and(|s| s.contains(&acct)) {
                        // fine
                    } else if declared.contains_key(&acct) {
                        self.error(
                            "default-account-not-associated",
                            dn,
                            format!("default_account `{acct}` of user `{user}`: the user is not associated with `{acct}` on cluster `{cname}`"),
                            format!("add `{user}` under `accounts.{acct}.users`, or pick one of the user's accounts"),
                        );
                    } else {
                        self.warn(
                            "default-account-unchecked",
                            dn,
                            format!("default_account `{acct}` of user `{user}` is not declared on cluster `{cname}`"),
                            "it must be an existing association of the user; checked at plan time",
                        );
                    }
                    cluster.defaults.insert(user, acct);
                }
                None if associated.is_none() => self.warn(
                    "user-without-association",
                    e.key,
                    format!("user `{user}` has no association and no default_account on cluster `{cname}`"),
                    "add the user under an account's `users`, or remove this entry",
                ),
                None => {}
            }
        }
    }

    fn account_users(
        &mut self,
        cname: &Name,
        aname: &Name,
        node: &SNode,
        awhat: &str,
        user_assocs: &mut Vec<DeclaredUser>,
    ) {
        let what = format!("{awhat}.users");
        let Node::Seq(items) = &node.value else {
            self.wrong_type(node, &what, "a list of user names or `{name: ...}` mappings");
            return;
        };
        let start = user_assocs.len();
        for item in items {
            let (user, partition, assoc) = match &item.value {
                Node::Str(s) => {
                    let Some(u) = self.name_text(item, s, NameKind::User) else {
                        continue;
                    };
                    (u, None, Assoc::default())
                }
                Node::Map(_) => {
                    let allowed: Vec<&'static str> = USER_ASSOC_ONLY_KEYS.iter().chain(ASSOC_KEYS).copied().collect();
                    let f = self.fields(item, &what, &allowed);
                    let Some(nn) = f.get("name") else {
                        self.error(
                            "missing-key",
                            item,
                            format!("a user entry in `{what}` has no `name`"),
                            "add `name: <user>`",
                        );
                        continue;
                    };
                    let Some(u) = self.name(nn, NameKind::User, &format!("{what}[].name")) else {
                        continue;
                    };
                    let partition = match f.get("partition") {
                        Some(p) => match self.name(p, NameKind::Partition, &format!("{what}.{u}.partition")) {
                            Some(p) => Some(p),
                            None => continue,
                        },
                        None => None,
                    };
                    let assoc = self.assoc(&f, &format!("{what}.{u}"));
                    (u, partition, assoc)
                }
                _ => {
                    self.wrong_type(item, &what, "a user name or a `{name: ...}` mapping");
                    continue;
                }
            };
            let key = UserKey { account: aname.clone(), user, partition };
            user_assocs.push(DeclaredUser { key, assoc, at: self.pos(item) });
        }
        // A user (and partition) listed twice: the later entries are refused. Lists are
        // usually in order, and then each entry differs from the one before: one pass, no
        // map of a million entries.
        let run = &user_assocs[start..];
        if !run.windows(2).all(|w| w[0].key < w[1].key) {
            self.refuse_repeated_users(cname, aname, user_assocs, start);
        }
    }

    /// Report and drop the entries of `user_assocs[start..]` (one account's users, in file
    /// order) whose user and partition came before; the first of each stays.
    fn refuse_repeated_users(&mut self, cname: &Name, aname: &Name, user_assocs: &mut Vec<DeclaredUser>, start: usize) {
        let mut first: BTreeMap<(Name, Option<Name>), LineColumn> = BTreeMap::new();
        let mut kept = Vec::new();
        for u in user_assocs.drain(start..) {
            let k = (u.key.user.clone(), u.key.partition.clone());
            if let Some((line, _)) = first.get(&k) {
                let on = match &u.key.partition {
                    Some(p) => format!(" (partition `{p}`)"),
                    None => String::new(),
                };
                let (at_line, at_column) = u.at;
                self.diags.push(
                    Diagnostic::error(
                        "duplicate-user",
                        format!(
                            "user `{}`{on} is listed twice under account `{aname}` on cluster `{cname}`",
                            u.key.user
                        ),
                    )
                    .at(Location { file: self.file.to_path_buf(), line: at_line as usize, column: at_column as usize })
                    .hint(format!("merge it with the entry at line {line}")),
                );
                continue;
            }
            first.insert(k, u.at);
            kept.push(u);
        }
        user_assocs.extend(kept);
    }

    fn merge_record(
        &mut self,
        records: &mut BTreeMap<Name, RecordSeen>,
        aname: &Name,
        cname: &Name,
        description: Option<(String, &SNode)>,
        organization: Option<(String, &SNode)>,
    ) {
        let seen = records.entry(aname.clone()).or_default();
        let mut conflicts = Vec::new();
        for (field, new) in [("description", description), ("organization", organization)] {
            let Some((value, node)) = new else { continue };
            let (slot, from) = if field == "description" {
                (&mut seen.record.description, &mut seen.description_from)
            } else {
                (&mut seen.record.organization, &mut seen.organization_from)
            };
            match slot {
                Some(old) if *old != value => {
                    conflicts.push((field, value, old.clone(), from.clone(), node));
                }
                Some(_) => {}
                None => {
                    *slot = Some(value);
                    *from = Some((cname.clone(), node.line));
                }
            }
        }
        for (field, value, old, from, node) in conflicts {
            let (other_cluster, line) = from.expect("set together with the value");
            self.error(
                "account-record-conflict",
                node,
                format!("account `{aname}` has {field} `{value}` here but `{old}` on cluster `{other_cluster}` (line {line})"),
                format!("an account's {field} is global in slurmdbd: use the same value on every cluster, or give it once"),
            );
        }
    }

    /// Report cycles among declared accounts (each once, named in order).
    fn cycles(&mut self, cname: &Name, cluster: &DesiredCluster, declared: &BTreeMap<Name, (&SNode, Option<&SNode>)>) {
        let mut done: BTreeSet<&Name> = BTreeSet::new();
        for start in cluster.accounts.keys() {
            let mut path: Vec<&Name> = Vec::new();
            let mut cur = start;
            loop {
                if done.contains(cur) || cur.as_str() == "root" {
                    break;
                }
                if let Some(pos) = path.iter().position(|n| *n == cur) {
                    let cycle: Vec<&Name> = path[pos..].to_vec();
                    let first = cycle.iter().min().copied().expect("non-empty cycle");
                    let i = cycle.iter().position(|n| *n == first).expect("member");
                    let mut names: Vec<String> =
                        cycle[i..].iter().chain(&cycle[..i]).map(|n| format!("`{n}`")).collect();
                    names.push(format!("`{first}`"));
                    let (_, pnode) = declared[first];
                    let at = pnode.unwrap_or(declared[first].0);
                    self.error(
                        "parent-cycle",
                        at,
                        format!("accounts on cluster `{cname}` form a cycle of parents: {}", names.join(" -> ")),
                        "every account must lead up to `root`; change one `parent`",
                    );
                    break;
                }
                path.push(cur);
                match cluster.accounts.get(cur) {
                    Some(a) if cluster.accounts.contains_key(&a.parent) => cur = &a.parent,
                    _ => break,
                }
            }
            done.extend(path);
        }
    }
}

/// How many entries the `users` lists under an `accounts` mapping hold (an upper bound of the
/// user associations it declares; malformed parts count as nothing).
fn count_user_entries(accounts: &SNode) -> usize {
    let Node::Map(entries) = &accounts.value else { return 0 };
    entries
        .iter()
        .filter_map(|(_, account)| match &account.value {
            Node::Map(fields) => fields.iter().find_map(|(k, v)| match (&k.value, &v.value) {
                (Node::Str(key), Node::Seq(items)) if key == "users" => Some(items.len()),
                _ => None,
            }),
            _ => None,
        })
        .sum()
}
