//! Resolve a loaded [`Desired`] against the current [`State`] into a complete desired `State`.
//!
//! Unmanaged objects are copied from the current state unchanged, so the diff of the two
//! states only ever touches what slurmplan manages. This is also where the checks that need
//! the current state happen: clusters exist, undeclared parents exist, referenced QoS exist,
//! protected accounts are not deleted, unmanaged accounts are not orphaned, DefaultAccounts
//! stay valid, and the result obeys slurmdbd's rules. Pure: no I/O, no printing.

use std::collections::{BTreeMap, BTreeSet};

use super::{Decl, DeclaredUser, Desired, DesiredCluster, Scope};
use slurmplan_diag::{Diagnostic, Location};
use slurmplan_model::names::root;
use slurmplan_model::{
    AccountGraph, AccountRecord, Assoc, ClusterState, GraphError, InOrder, Name, Qos, QosList, State, UserIndex,
    UserKey, user_index,
};
use slurmplan_rules as rules;

/// The complete desired state plus warnings (e.g. DefaultAccounts slurmplan had to choose).
pub struct Resolved {
    pub state: State,
    pub warnings: Vec<Diagnostic>,
    /// Managed account names per cluster (current ∪ desired), for guards and reports.
    pub managed: BTreeMap<Name, BTreeSet<Name>>,
}

/// Is `name` managed on a cluster, given the current tree?
pub fn is_managed(scope: &Scope, declared: bool, name: &Name, tree: &AccountGraph) -> bool {
    declared || scope.manages_account(name, tree.ancestors(name.as_str()))
}

/// Make the user associations of one account in `users`, now `old`, the `new` ones (both in
/// key order): remove, add and change only what differs.
fn replace_run<'a>(
    users: &mut BTreeMap<UserKey, Assoc>,
    old: impl Iterator<Item = (&'a UserKey, &'a Assoc)>,
    new: &[DeclaredUser],
) {
    let mut old = old.peekable();
    for u in new {
        while let Some((gone, _)) = old.next_if(|(k, _)| *k < &u.key) {
            users.remove(gone);
        }
        match old.next_if(|(k, _)| *k == &u.key) {
            Some((_, same)) if *same == u.assoc => {}
            _ => {
                users.insert(u.key.clone(), u.assoc.clone());
            }
        }
    }
    for (gone, _) in old {
        users.remove(gone);
    }
}

/// The complete desired state: the current one with what the file manages replaced, after
/// every check that needs the current state (see the module comment).
pub fn resolve(d: &Desired, current: &State) -> Result<Resolved, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    // Clusters the file declares are rebuilt below; only the others are copied.
    let mut state = State {
        clusters: current
            .clusters
            .iter()
            .filter(|(c, _)| !d.clusters.contains_key(*c))
            .map(|(c, s)| (c.clone(), s.clone()))
            .collect(),
        accounts: current.accounts.clone(),
        qos: current.qos.clone(),
    };
    let mut managed_all = BTreeMap::new();
    let mut after: Vec<rules::RuleError> = Vec::new();
    let doomed_qos = resolve_qos(d, current, &mut state);
    for (cname, dc) in &d.clusters {
        let Some(cur) = current.clusters.get(cname) else {
            errors.push(
                Diagnostic::error("unknown-cluster", format!("cluster `{cname}` is not registered in slurmdbd"))
                    .at(d.location(&Decl::Cluster(cname.clone())))
                    .hint(format!("register it first (`sacctmgr -i add cluster {cname}`) or fix the name")),
            );
            continue;
        };
        let managed = managed_accounts(d, dc, cur);
        let Some(accounts) = account_tree(d, cname, dc, cur, &managed, &mut errors) else { continue };
        let (users, index, defaults, broken) =
            users_and_defaults(d, cname, dc, cur, &managed, &accounts, &mut errors, &mut warnings);
        check_declared_defaults(d, cname, dc, &index, &mut errors);
        let new = ClusterState { accounts, users, defaults, ..Default::default() };
        check_referenced_qos(d, cname, dc, &state.qos, &mut errors);
        // The rebuilt cluster must obey slurmdbd's rules (checked below; clusters the file
        // does not declare are copied unchanged).
        if errors.is_empty() {
            after.extend(broken);
        }
        managed_all.insert(cname.clone(), managed);
        state.clusters.insert(cname.clone(), new);
    }
    // Account records of declared accounts.
    for (name, rec) in &d.accounts {
        let cur = current.accounts.get(name).cloned().unwrap_or_default();
        let merged = AccountRecord {
            description: rec.description.clone().or(cur.description),
            organization: rec.organization.clone().or(cur.organization),
        };
        state.accounts.insert(name.clone(), merged);
    }
    check_doomed_qos(&doomed_qos, &state, &mut errors);
    if errors.is_empty() {
        check_rules(d, current, after, &mut errors);
    }
    if errors.is_empty() {
        Ok(Resolved { state, warnings, managed: managed_all })
    } else {
        errors.extend(warnings);
        Err(errors)
    }
}

/// QoS: the attributes a declared QoS gives replace the current ones (the others are not
/// managed: a QoS is shared by the whole site); managed undeclared ones go. Returns those.
fn resolve_qos(d: &Desired, current: &State, state: &mut State) -> Vec<Name> {
    for (name, q) in &d.qos {
        let fields = d.qos_managed.get(name).copied().unwrap_or_default();
        state.qos.insert(name.clone(), fields.over(q, current.qos.get(name)));
    }
    let doomed_qos: Vec<Name> =
        current.qos.keys().filter(|n| !d.qos.contains_key(*n) && d.scope.manages_qos(n)).cloned().collect();
    for n in &doomed_qos {
        state.qos.remove(n);
    }
    doomed_qos
}

/// The managed accounts of a cluster: current ones in the managed scope, and every declared one.
fn managed_accounts(d: &Desired, dc: &DesiredCluster, cur: &ClusterState) -> BTreeSet<Name> {
    cur.accounts
        .names()
        .into_iter()
        .filter(|n| is_managed(&d.scope, dc.accounts.contains_key(*n), n, &cur.accounts))
        .cloned()
        .chain(dc.accounts.keys().cloned())
        .collect()
}

/// The desired account tree of a cluster: unmanaged accounts from the current one, managed ones
/// from the file. Reports protected accounts the file removes, unmanaged accounts it orphans,
/// and a tree that does not hold (None then).
fn account_tree(
    d: &Desired,
    cname: &Name,
    dc: &DesiredCluster,
    cur: &ClusterState,
    managed: &BTreeSet<Name>,
    errors: &mut Vec<Diagnostic>,
) -> Option<AccountGraph> {
    let mut items: Vec<(Name, Option<Name>, Assoc)> = Vec::new();
    for (name, parent, assoc) in cur.accounts.iter_sorted() {
        let declared = dc.accounts.contains_key(name);
        if declared {
            continue;
        }
        if managed.contains(name) {
            if name == &root() {
                items.push((name.clone(), None, assoc.clone()));
                continue;
            }
            if d.protect.contains(name) {
                errors.push(
                    Diagnostic::error(
                        "protected",
                        format!("account `{name}` on `{cname}` is protected but the desired state removes it"),
                    )
                    .at(d.location(&Decl::Cluster(cname.clone())))
                    .hint(format!("declare `{name}` under clusters.{cname}.accounts, or remove it from `protect`")),
                );
                items.push((name.clone(), parent.cloned(), assoc.clone()));
            }
            continue;
        }
        items.push((name.clone(), parent.cloned(), assoc.clone()));
        if let Some(p) = parent
            && managed.contains(p)
            && !dc.accounts.contains_key(p)
            && p != &root()
            && !d.protect.contains(p)
        {
            errors.push(
                Diagnostic::error("orphaned-unmanaged", format!(
                    "account `{name}` on `{cname}` is not managed, but its parent `{p}` is removed by the desired state"
                ))
                .at(d.location(&Decl::Cluster(cname.clone())))
                .hint(format!("declare `{p}`, or move `{name}` elsewhere first")),
            );
        }
    }
    for (name, da) in &dc.accounts {
        let parent = if name == &root() { None } else { Some(da.parent.clone()) };
        items.push((name.clone(), parent, da.assoc.clone()));
    }
    match AccountGraph::build(items) {
        Ok(mut g) => {
            keep_equal_qos_lists(&mut g, dc.accounts.keys(), &cur.accounts);
            Some(g)
        }
        Err(errs) => {
            for e in errs {
                let (msg, key, hint) = match &e {
                    GraphError::MissingParent { child, parent } => (
                        format!("parent `{parent}` of account `{child}` does not exist on cluster `{cname}`"),
                        Decl::Account(cname.clone(), child.clone()),
                        format!("declare `{parent}` under clusters.{cname}.accounts or use an existing account"),
                    ),
                    GraphError::Cycle(v) => (
                        format!(
                            "accounts on `{cname}` would form a cycle of parents: {}",
                            v.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ),
                        Decl::Cluster(cname.clone()),
                        "give one of them a parent outside the cycle".to_string(),
                    ),
                    other => (other.to_string(), Decl::Cluster(cname.clone()), "fix the account tree".to_string()),
                };
                errors.push(Diagnostic::error("bad-tree", msg).at(d.location(&key)).hint(hint));
            }
            None
        }
    }
}

/// What `users_and_defaults` makes: the user map, the user index, the DefaultAccounts, and what
/// breaks slurmdbd's rules on the rebuilt cluster.
type UsersAndDefaults = (BTreeMap<UserKey, Assoc>, UserIndex, BTreeMap<Name, Name>, Vec<rules::RuleError>);

/// Users: unmanaged accounts keep theirs; managed accounts get exactly the declared ones. Then
/// the DefaultAccounts (`choose_defaults`) and slurmdbd's rules on the result, split over two
/// cores (the user map and the rules per account on one, the index, the defaults and the rules
/// per user on this one).
#[allow(clippy::too_many_arguments)]
fn users_and_defaults(
    d: &Desired,
    cname: &Name,
    dc: &DesiredCluster,
    cur: &ClusterState,
    managed: &BTreeSet<Name>,
    accounts: &AccountGraph,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> UsersAndDefaults {
    // `sources` walks them account by account in name order, so in key order.
    let users_of = |a| {
        let managed = managed.contains(a);
        let declared = if managed { dc.users.of_account(a) } else { &[] };
        let kept = (!managed).then(|| cur.users_of_account(a)).into_iter().flatten();
        declared.iter().map(|u| (&u.key, &u.assoc)).chain(kept)
    };
    let names = accounts.names();
    let sources = || names.iter().flat_map(|a| users_of(a));
    std::thread::scope(|s| {
        let users = s.spawn(|| {
            // The current map with the runs of managed accounts replaced by the declared ones:
            // a copy, node by node, and a walk of the runs, instead of collecting every entry
            // into a new map (docs/performance.md).
            let mut users = cur.users.clone();
            for a in managed {
                replace_run(&mut users, cur.users_of_account(a), dc.users.of_account(a));
            }
            (users, rules::check_default_qos_of_accounts(cname, accounts, users_of))
        });
        let index = user_index(sources().map(|(k, _)| k));
        let defaults = choose_defaults(d, cname, dc, cur, &index, errors, warnings);
        // slurmdbd's rules on the rebuilt cluster (used only if nothing else failed): the same
        // checks as `rules::check_cluster`, split over the two cores.
        let broken_users = rules::check_default_accounts(cname, &defaults, &index);
        let (users, mut broken) = users.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        broken.extend(broken_users);
        (users, index, defaults, broken)
    })
}

/// DefaultAccounts: declared, else current if still associated, else the first remaining
/// (with a warning). Settled in user order, so collected in a list and bulk-built; the current
/// DefaultAccounts are in user order too, walked beside the index.
fn choose_defaults(
    d: &Desired,
    cname: &Name,
    dc: &DesiredCluster,
    cur: &ClusterState,
    index: &UserIndex,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> BTreeMap<Name, Name> {
    let mut defaults: Vec<(Name, Name)> = Vec::with_capacity(index.len());
    let mut current_defaults = InOrder::new(&cur.defaults);
    for (user, accts) in index.iter() {
        let current_default = current_defaults.get(user);
        if let Some(want) = dc.defaults.get(user) {
            if accts.contains(want) {
                defaults.push((user.clone(), want.clone()));
            } else {
                errors.push(
                    Diagnostic::error(
                        "default-account-not-associated",
                        format!("user `{user}` on `{cname}` has default_account `{want}` but no association with it"),
                    )
                    .at(d.location(&Decl::User(cname.clone(), user.clone())))
                    .hint(format!(
                        "add `{user}` to the users of `{want}`, or choose one of: {}",
                        accts.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
                    )),
                );
            }
            continue;
        }
        match current_default {
            Some(cd) if accts.contains(cd) => {
                defaults.push((user.clone(), cd.clone()));
            }
            old => {
                let first = accts.first().expect("non-empty").clone();
                if let Some(old) = old {
                    warnings.push(
                        Diagnostic::warning("default-account-moved", format!(
                            "user `{user}` on `{cname}` loses DefaultAccount `{old}`; it will move to `{first}` (first remaining association, by name)"
                        ))
                        .hint(format!("set clusters.{cname}.users.{user}.default_account to choose")),
                    );
                }
                defaults.push((user.clone(), first));
            }
        }
    }
    defaults.into_iter().collect()
}

/// A declared default_account of a user without any association on the cluster.
fn check_declared_defaults(
    d: &Desired,
    cname: &Name,
    dc: &DesiredCluster,
    index: &UserIndex,
    errors: &mut Vec<Diagnostic>,
) {
    for (user, want) in &dc.defaults {
        if !index.contains_key(user) {
            errors.push(
                Diagnostic::error(
                    "default-account-not-associated",
                    format!(
                        "user `{user}` on `{cname}` has default_account `{want}` but no association on the cluster"
                    ),
                )
                .at(d.location(&Decl::User(cname.clone(), (*user).clone())))
                .hint(format!("add `{user}` to the users of `{want}`")),
            );
        }
    }
}

/// QoS the cluster's declared associations name must exist (after the file's own QoS).
fn check_referenced_qos(
    d: &Desired,
    cname: &Name,
    dc: &DesiredCluster,
    qos: &BTreeMap<Name, Qos>,
    errors: &mut Vec<Diagnostic>,
) {
    let mut referenced: BTreeMap<Name, Decl> = BTreeMap::new();
    let mut note = |a: &Assoc, what: &dyn Fn() -> Decl| {
        let set = match &a.qos {
            QosList::Set(s) => Some(s),
            _ => None,
        };
        for n in a.default_qos.iter().chain(set.into_iter().flatten()) {
            if !referenced.contains_key(n) {
                referenced.insert(n.clone(), what());
            }
        }
    };
    for (name, da) in &dc.accounts {
        note(&da.assoc, &|| Decl::Account(cname.clone(), name.clone()));
    }
    for (k, a) in dc.users.iter() {
        note(a, &|| Decl::UserAssoc(cname.clone(), k.clone()));
    }
    for (q, key) in referenced {
        if !qos.contains_key(&q) {
            errors.push(
                Diagnostic::error(
                    "missing-qos",
                    format!("QoS `{q}` is used on `{cname}` but does not exist in slurmdbd and is not declared"),
                )
                .at(d.location(&key))
                .hint(format!(
                    "declare it under `qos:` (slurmplan creates it) or create it with `sacctmgr -i add qos {q}`"
                )),
            );
        }
    }
}

/// QoS removed while still used by what remains.
fn check_doomed_qos(doomed_qos: &[Name], state: &State, errors: &mut Vec<Diagnostic>) {
    for n in doomed_qos {
        for (cname, c) in &state.clusters {
            if c.uses_qos(n) {
                errors.push(Diagnostic::error("qos-in-use", format!(
                    "QoS `{n}` matches managed.qos_prefixes and is not declared, but associations on `{cname}` still use it"
                )).hint(format!("declare `{n}` under `qos:` or stop using it")));
                break;
            }
        }
    }
}

/// The result must obey slurmdbd's rules: `after` holds what the rebuilt clusters break; only
/// what the current state does not already break is reported.
fn check_rules(d: &Desired, current: &State, after: Vec<rules::RuleError>, errors: &mut Vec<Diagnostic>) {
    let before: BTreeSet<String> = if after.is_empty() {
        BTreeSet::new()
    } else {
        rules::check_state(current).into_iter().map(|e| e.message).collect()
    };
    for e in after {
        if !before.contains(&e.message) {
            errors.push(
                Diagnostic::error("invalid-desired", format!("the desired state breaks a Slurm rule {}", e.message))
                    .at_opt(Some(Location { file: d.path.clone(), line: 0, column: 0 }))
                    .hint("give the association a QoS list that contains its DefaultQOS"),
            );
        }
    }
}

/// A declared account whose QoS list differs from the current one only in form (an explicit
/// list equal to what it would inherit, or the other way round) keeps the current form: both
/// give jobs the same QoS, so the difference is not worth a command. Each replacement keeps the
/// account's effective list, so the order of the walk does not matter.
fn keep_equal_qos_lists<'a>(g: &mut AccountGraph, declared: impl Iterator<Item = &'a Name>, cur: &AccountGraph) {
    for name in declared {
        let (Some(now), Some(node)) = (cur.get(name.as_str()), g.get(name.as_str())) else { continue };
        let keep = match (&node.assoc.qos, &now.assoc.qos) {
            (QosList::Set(want), QosList::Inherit) | (QosList::Inherit, QosList::Set(want)) => {
                let inherited = g.parent(name.as_str()).map(|p| g.effective_qos(p.as_str())).unwrap_or_default();
                &inherited == want
            }
            _ => false,
        };
        if keep && let Some(n) = g.get_mut(name.as_str()) {
            n.assoc.qos = now.assoc.qos.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use slurmplan_sacctmgr::parse::{RawReads, Source, parse_state};

    /// A declared QoS manages only the attributes the file gives: `normal: {}` keeps its
    /// flags and limits; `null` manages a scalar as unset.
    #[test]
    fn a_declared_qos_manages_only_what_the_file_gives() {
        let raw = RawReads {
            clusters: Source::new("clusters.txt", "c1\n"),
            assocs: Source::new("assocs.txt", row("root", "", "", "", "")),
            defaults: Source::new("defaults.txt", ""),
            accounts_descr: Source::new("accounts-descr.txt", "root|r\n"),
            accounts_org: Source::new("accounts-org.txt", "root|r\n"),
            qos: Source::new("qos.txt", "normal|DenyOnLimit||cpu=10|5|01:00:00|Normal QOS\n"),
        };
        let current = parse_state(&raw).unwrap();
        let resolved = |qos: &str| {
            let text = format!("version: 1\nmanaged:\n  prefixes: [hpc_]\nqos:\n  normal: {qos}\n");
            let desired = crate::load_str(std::path::Path::new("d.yaml"), &text).unwrap();
            super::resolve(&desired, &current).unwrap_or_else(|e| panic!("{e:?}")).state.qos
        };
        assert_eq!(resolved("{}"), current.qos);
        let q = &resolved("{grp_submit_jobs: null, flags: []}")
            [&slurmplan_model::Name::keep_case("normal", slurmplan_model::NameKind::Qos).unwrap()];
        let cur = current.qos.values().next().unwrap();
        assert_eq!((q.grp_submit_jobs, q.flags.len()), (None, 0));
        assert_eq!((&q.grp_tres, q.max_wall, &q.description), (&cur.grp_tres, cur.max_wall, &cur.description));
    }

    /// 18 association cells: cluster, account, user, parent, QOS list, DefaultQOS.
    fn row(account: &str, user: &str, parent: &str, qos: &str, default_qos: &str) -> String {
        format!("c1|{account}|{user}||{parent}|1|||||||||||{qos}|{default_qos}")
    }

    /// slurmdbd's DefaultQOS rule on the rebuilt cluster: a declared account and a declared
    /// user association that inherit a list without their DefaultQOS, and a kept (unmanaged)
    /// user association whose inherited list a managed parent changes, are each reported once;
    /// what the current state already breaks is not.
    #[test]
    fn default_qos_outside_the_inherited_list_is_reported() {
        let assocs = [
            row("root", "", "", "normal", ""),
            row("hpc_p", "", "root", "normal", ""),
            row("lab2", "", "hpc_p", "", ""),
            row("lab2", "u3", "", "", "normal"),
            row("old", "", "root", "hi", "normal"), // already broken, unmanaged: not reported
        ]
        .join("\n");
        let names = "root|r\nhpc_p|p\nlab2|l\nold|o\n";
        let raw = RawReads {
            clusters: Source::new("clusters.txt", "c1\n"),
            assocs: Source::new("assocs.txt", assocs),
            defaults: Source::new("defaults.txt", "c1|u3|lab2\n"),
            accounts_descr: Source::new("accounts-descr.txt", names),
            accounts_org: Source::new("accounts-org.txt", names),
            qos: Source::new("qos.txt", "hi||||||\nnormal||||||\n"),
        };
        let current = parse_state(&raw).unwrap();
        let desired = crate::load_str(
            std::path::Path::new("d.yaml"),
            "version: 1\nmanaged:\n  prefixes: [hpc_]\nclusters:\n  c1:\n    accounts:\n      hpc_p:\n        qos: [hi]\n        default_qos: hi\n      hpc_c:\n        parent: hpc_p\n        default_qos: normal\n      hpc_a:\n        parent: hpc_p\n        users:\n          - {name: u2, default_qos: normal}\n",
        )
        .unwrap();
        let errors = match super::resolve(&desired, &current) {
            Ok(_) => panic!("resolved"),
            Err(d) => d.into_iter().filter(|d| d.is_error()).map(|d| d.message).collect::<Vec<_>>(),
        };
        assert_eq!(errors.len(), 3, "{errors:#?}");
        for what in ["account `hpc_c`", "`u2@hpc_a`", "`u3@lab2`"] {
            assert!(
                errors.iter().any(|e| e.contains(what) && e.contains("DefaultQOS `normal`")),
                "{what}: {errors:#?}"
            );
        }
    }

    /// An account that Slurm 22.05 left with an inherited DefaultQOS outside its list (its
    /// parent's DefaultQOS was set later) stays as it is, but a new user association under it
    /// would inherit that DefaultQOS: the desired file is refused (no planner can reach it),
    /// not left to the planner (which found "no safe order" and called it a slurmplan bug).
    #[test]
    fn a_new_user_row_under_an_account_already_broken_is_reported() {
        let assocs = [
            row("root", "", "", "normal", ""),
            row("hpc_p", "", "root", "normal", "normal"),
            row("hpc_c", "", "hpc_p", "hi", ""),
            row("hpc_c", "u1", "", "", "hi"),
        ]
        .join("\n");
        let names = "root|r\nhpc_p|p\nhpc_c|c\n";
        let raw = RawReads {
            clusters: Source::new("clusters.txt", "c1\n"),
            assocs: Source::new("assocs.txt", assocs),
            defaults: Source::new("defaults.txt", "c1|u1|hpc_c\n"),
            accounts_descr: Source::new("accounts-descr.txt", names),
            accounts_org: Source::new("accounts-org.txt", names),
            qos: Source::new("qos.txt", "hi||||||\nnormal||||||\n"),
        };
        let current = parse_state(&raw).unwrap();
        let file = |users: &str| {
            format!(
                "version: 1\nmanaged:\n  prefixes: [hpc_]\nclusters:\n  c1:\n    accounts:\n      hpc_p:\n        qos: [normal]\n        default_qos: normal\n      hpc_c:\n        parent: hpc_p\n        qos: [hi]\n        users:\n          - {{name: u1, default_qos: hi}}\n{users}"
            )
        };
        let resolve = |users: &str| {
            let desired = crate::load_str(std::path::Path::new("d.yaml"), &file(users)).unwrap();
            match super::resolve(&desired, &current) {
                Ok(_) => Vec::new(),
                Err(d) => d.into_iter().filter(|d| d.is_error()).map(|d| d.message).collect::<Vec<_>>(),
            }
        };
        // the state as it is: resolves (the broken account is not ours to report)
        assert!(resolve("").is_empty(), "{:#?}", resolve(""));
        let errors = resolve("          - {name: u2}\n");
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].contains("`u2@hpc_c`") && errors[0].contains("DefaultQOS `normal`"), "{errors:#?}");
    }
}

#[cfg(test)]
mod replace_run_tests {
    use super::*;
    use crate::DeclaredUsers;
    use proptest::prelude::*;
    use slurmplan_model::NameKind;

    fn key(account: &str, user: &str, partition: &Option<String>) -> UserKey {
        let n = |s: &str| Name::keep_case(s, NameKind::User).unwrap();
        UserKey { account: n(account), user: n(user), partition: partition.as_deref().map(n) }
    }

    /// Three kinds of association: empty, and two different limits.
    fn assoc(kind: u8) -> Assoc {
        let mut a = Assoc::default();
        if kind > 0 {
            a.limits.grp_jobs = Some(u64::from(kind));
        }
        a
    }

    type Raw = Vec<((String, String, Option<String>), u8)>;

    fn entries() -> impl Strategy<Value = Raw> {
        prop::collection::vec((("a[0-3]", "u[0-5]", prop::option::of("p[12]")), 0..3u8), 0..40)
    }

    proptest! {
        /// Replacing the runs of the managed accounts gives what the definition says: the
        /// current associations of the other accounts and the declared ones of the managed.
        #[test]
        fn replacing_runs_gives_the_declared_users(
            current in entries(),
            declared in entries(),
            managed in prop::collection::btree_set("a[0-4]", 0..5),
        ) {
            let cur = ClusterState {
                users: current.iter().map(|((a, u, p), k)| (key(a, u, p), assoc(*k))).collect(),
                ..Default::default()
            };
            let declared: BTreeMap<UserKey, Assoc> =
                declared.iter().map(|((a, u, p), k)| (key(a, u, p), assoc(*k))).collect();
            let listed = DeclaredUsers::from_unsorted(
                declared.iter().map(|(key, assoc)| DeclaredUser { key: key.clone(), assoc: assoc.clone(), at: (1, 1) }).collect(),
            )
            .unwrap();
            let managed: Vec<Name> = managed.iter().map(|a| Name::keep_case(a, NameKind::Account).unwrap()).collect();
            let mut users = cur.users.clone();
            for a in &managed {
                replace_run(&mut users, cur.users_of_account(a), listed.of_account(a));
            }
            let expected: BTreeMap<UserKey, Assoc> = cur
                .users
                .iter()
                .filter(|(k, _)| !managed.contains(&k.account))
                .chain(declared.iter().filter(|(k, _)| managed.contains(&k.account)))
                .map(|(k, a)| (k.clone(), a.clone()))
                .collect();
            prop_assert_eq!(users, expected);
        }
    }
}
