//! Onboarding with `sacctmgr load`: the new subtrees of a cluster (accounts that exist nowhere,
//! with their limits and QoS, and users with no association on any cluster, with their rows
//! and DefaultAccounts) as a few `load` steps instead of many `add` commands. slurmdbd does a
//! load's whole creation in one RPC, where every `add` pays its own (docs/performance.md).
//!
//! Used only where load does exactly what the plan intends (docs/planning.md, "When a plan
//! uses `sacctmgr load`"): anything that touches an existing object, a value the flat file
//! cannot carry, a partition row, a QoS setting not valid at creation, or a creation too small
//! to pay for the load stays with the batched commands of `plan::build`. Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_model::{ClusterState, Name, State, UserKey};
use slurmplan_rules::RuleModel;
use slurmplan_sacctmgr::command::{AssocSet, Command};
use slurmplan_sacctmgr::load_file::{self, LoadAccount, LoadRow, LoadUser};

/// Fewer new associations than this are created with batched commands: a load's output and
/// fixed cost do not pay for a handful of objects, and small plans stay easy to read.
pub const LOAD_MIN_ASSOCS: usize = 20;

/// The most associations one load step creates. A step's time grows with its size (one RPC,
/// no progress meanwhile) and must stay well inside `--timeout` (default 120 s); measured on
/// 22.05.8 and 24.11.5 (docs/performance.md, "Chunk size of a load step"; docs/decisions.md).
pub const LOAD_CHUNK_ASSOCS: usize = 5_000;

/// The most bytes of transaction record one load step may make slurmdbd write: half of
/// MariaDB's default `max_allowed_packet` (16 MiB). slurmdbd records a load's creations as one
/// `insert into txn_table` per kind of object, a row per object holding its settings as SQL
/// text (`as_mysql_add_assocs`, `as_mysql_add_accts` in SchedMD/slurm); a statement past the
/// packet fails, the load is lost, and sacctmgr still prints "Done" and exits 0.
pub const LOAD_CHUNK_TXN_BYTES: usize = 8 << 20;

/// Per txn row, the bytes that are neither names nor values of the object's line in the file:
/// the column template (~330 bytes measured on 22.05.8 and 24.11.5: every unset limit column
/// written as `NULL`), timestamp, action, id, actor, quotes and separators, with room to spare.
pub const TXN_ROW_BYTES: usize = 512;

/// How `account` is named from root in slurmdbd 24.11's `lineage` column (`/a/b/c/`), an upper
/// bound (root counted too) for accounts of the desired tree `d`.
fn lineage_bytes(d: &ClusterState, account: &Name) -> usize {
    1 + account.as_str().len()
        + 1
        + d.accounts.ancestors(account.as_str()).iter().map(|n| n.as_str().len() + 1).sum::<usize>()
}

/// An upper bound of the txn bytes of new account `a` on cluster `cname`: its account row and
/// its association row, each with its names (the association's lineage `lineage` bytes), plus
/// its line of the file (description, organization and limits, which TRES and QoS ids never
/// make longer).
fn account_txn_bytes(cname: &Name, a: &LoadAccount, lineage: usize) -> usize {
    2 * TXN_ROW_BYTES
        + cname.as_str().len()
        + 2 * a.name.as_str().len()
        + a.parent.as_str().len()
        + lineage
        + load_file::account_line(a).len()
}

/// An upper bound of the txn bytes of new user `u`: its user row, and per association a row with
/// the cluster, account and user names and the lineage (the account's, then `0-user/`), plus its
/// line of the file.
fn user_txn_bytes(cname: &Name, u: &LoadUser, lineage: &dyn Fn(&Name) -> usize) -> usize {
    let user = u.name.as_str().len();
    let rows: usize = u
        .rows
        .iter()
        .map(|r| {
            TXN_ROW_BYTES
                + cname.as_str().len()
                + r.account.as_str().len()
                + user
                + lineage(&r.account)
                + user
                + 3
                + load_file::user_line(u, r).len()
        })
        .sum();
    TXN_ROW_BYTES + user + rows
}

/// Whether one object's associations and txn bytes fit in a step on their own; one that does not
/// is created with the batched commands.
fn fits_alone(assocs: usize, txn_bytes: usize) -> bool {
    assocs <= LOAD_CHUNK_ASSOCS && txn_bytes <= LOAD_CHUNK_TXN_BYTES
}

/// The effective QoS list and DefaultQOS an association inherits.
type Effective = (BTreeSet<Name>, Option<Name>);

/// A new account a load step can create, with what its users need from it: what it passes on
/// (QoS), the bytes of its 24.11 lineage, and its own txn bytes (each measured once).
struct NewAccount {
    load: LoadAccount,
    passes_on: Effective,
    lineage: usize,
    txn: usize,
}

/// The load steps for cluster `cname` (possibly none), each with the addresses it serves.
/// `accounts`/`users` are the objects the diff names on this cluster.
pub fn loads(
    sim: &mut RuleModel,
    cname: &Name,
    d: &ClusterState,
    desired: &State,
    accounts: &BTreeSet<Name>,
    users: &BTreeSet<UserKey>,
    min_assocs: usize,
) -> Vec<(Command, Vec<String>)> {
    let Some(c) = sim.state.clusters.get(cname) else { return Vec::new() };
    let new_accounts = new_accounts(sim, cname, c, d, desired, accounts);
    if new_accounts.is_empty() {
        return Vec::new();
    }
    let new_users = new_users(sim, cname, d, users, &new_accounts);
    let mut list: Vec<(LoadAccount, usize)> = new_accounts.into_values().map(|a| (a.load, a.txn)).collect();
    // parents first (depth in the desired tree), then by name
    list.sort_by_key(|(a, _)| (d.accounts.depth(a.name.as_str()), a.name.clone()));
    if list.len() + new_users.iter().map(|(u, _)| u.rows.len()).sum::<usize>() < min_assocs {
        return Vec::new();
    }
    chunks(cname, list, new_users)
}

/// Accounts new everywhere whose parent exists or is new too, whose settings the flat file
/// carries and whose QoS settings hold at creation; with what they pass on to their users.
fn new_accounts(
    sim: &RuleModel,
    cname: &Name,
    c: &ClusterState,
    d: &ClusterState,
    desired: &State,
    touched: &BTreeSet<Name>,
) -> BTreeMap<Name, NewAccount> {
    let mut missing: Vec<(usize, &Name)> = touched
        .iter()
        .filter(|n| d.accounts.contains(n.as_str()) && !c.accounts.contains(n.as_str()))
        .filter(|n| !sim.state.accounts.contains_key(*n))
        .map(|n| (d.accounts.depth(n.as_str()), n))
        .collect();
    missing.sort();
    let mut out: BTreeMap<Name, NewAccount> = BTreeMap::new();
    for (_, n) in missing {
        let parent = d.accounts.parent(n.as_str()).cloned().unwrap_or_else(slurmplan_model::names::root);
        let inherited: Effective = match out.get(&parent) {
            Some(a) => a.passes_on.clone(),
            None if c.accounts.contains(parent.as_str()) => {
                (c.accounts.effective_qos(parent.as_str()), c.accounts.effective_default_qos(parent.as_str()).cloned())
            }
            None => continue,
        };
        let want = &d.accounts.get(n.as_str()).expect("desired account").assoc;
        let eff = want.qos.effective(&inherited.0);
        let default = want.default_qos.clone().or(inherited.1.clone());
        if default.as_ref().is_some_and(|q| !eff.contains(q)) {
            continue;
        }
        let record = slurmplan_diff::new_record(desired.accounts.get(n), None);
        let org_default = if parent == slurmplan_model::names::root() { n.to_string() } else { parent.to_string() };
        let account = LoadAccount {
            name: n.clone(),
            parent,
            description: record.description.unwrap_or_else(|| n.to_string()),
            organization: record.organization.unwrap_or(org_default),
            set: AssocSet::from_assoc(want),
        };
        if !load_file::problems(cname, std::slice::from_ref(&account), &[]).is_empty() {
            continue;
        }
        let lineage = lineage_bytes(d, n);
        let txn = account_txn_bytes(cname, &account, lineage);
        if fits_alone(1, txn) {
            out.insert(n.clone(), NewAccount { load: account, passes_on: (eff, default), lineage, txn });
        }
    }
    out
}

/// Users with no association on any cluster whose every desired row on this cluster is under a
/// loaded account, without a partition, with settings the file carries and that hold, and who
/// have a declared DefaultAccount among those rows.
fn new_users(
    sim: &mut RuleModel,
    cname: &Name,
    d: &ClusterState,
    touched: &BTreeSet<UserKey>,
    accounts: &BTreeMap<Name, NewAccount>,
) -> Vec<(LoadUser, usize)> {
    let candidates: BTreeSet<&Name> =
        touched.iter().filter(|k| accounts.contains_key(&k.account)).map(|k| &k.user).collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let fresh: BTreeSet<&Name> = candidates.into_iter().filter(|u| !sim.knows_user(u)).collect();
    // every desired row of a user new everywhere is an add, so the diff names it
    let mut rows: BTreeMap<&Name, Vec<(&UserKey, &slurmplan_model::Assoc)>> = BTreeMap::new();
    for k in touched.iter().filter(|k| fresh.contains(&k.user)) {
        if let Some((k, a)) = d.users.get_key_value(k) {
            rows.entry(&k.user).or_default().push((k, a));
        }
    }
    let mut out = Vec::new();
    'users: for (user, rows) in rows {
        let Some(default_account) = d.defaults.get(user) else { continue };
        let mut load_rows = Vec::new();
        for (k, a) in rows {
            let Some(NewAccount { passes_on: (eff, def), .. }) = accounts.get(&k.account) else { continue 'users };
            if k.partition.is_some() {
                continue 'users;
            }
            let own = a.qos.effective(eff);
            if a.default_qos.as_ref().or(def.as_ref()).is_some_and(|q| !own.contains(q)) {
                continue 'users;
            }
            load_rows.push(LoadRow { account: k.account.clone(), set: AssocSet::from_assoc(a) });
        }
        let u = LoadUser { name: user.clone(), default_account: default_account.clone(), rows: load_rows };
        if !load_file::problems(cname, &[], std::slice::from_ref(&u)).is_empty() {
            continue;
        }
        // every row's account is one of `accounts` (checked above)
        let txn = user_txn_bytes(cname, &u, &|a: &Name| accounts[a].lineage);
        if fits_alone(u.rows.len(), txn) {
            out.push((u, txn));
        }
    }
    out
}

/// Steps of at most [`LOAD_CHUNK_ASSOCS`] associations and [`LOAD_CHUNK_TXN_BYTES`] txn bytes:
/// accounts first, then users, a user's rows never split, so every line names only accounts of
/// its own or an earlier chunk. Each object comes with its txn bytes; every object fits alone
/// (`fits_alone`), so no step passes a bound.
fn chunks(
    cname: &Name,
    accounts: Vec<(LoadAccount, usize)>,
    users: Vec<(LoadUser, usize)>,
) -> Vec<(Command, Vec<String>)> {
    let mut out = Vec::new();
    let mut cur: (Vec<LoadAccount>, Vec<LoadUser>) = (Vec::new(), Vec::new());
    let (mut assocs, mut bytes) = (0usize, 0usize);
    let flush = |cur: &mut (Vec<LoadAccount>, Vec<LoadUser>), out: &mut Vec<(Command, Vec<String>)>| {
        let (accounts, users) = std::mem::take(cur);
        if accounts.is_empty() && users.is_empty() {
            return;
        }
        let mut objects: Vec<String> = accounts.iter().map(|a| format!("account.{cname}.{}", a.name)).collect();
        for u in &users {
            for r in &u.rows {
                let k = UserKey { account: r.account.clone(), user: u.name.clone(), partition: None };
                objects.push(format!("user_association.{cname}.{}", slurmplan_diff::user_key_label(&k)));
            }
            objects.push(format!("default_account.{cname}.{}", u.name));
        }
        out.push((Command::Load { cluster: cname.clone(), accounts, users }, objects));
    };
    for (a, b) in accounts {
        if assocs + 1 > LOAD_CHUNK_ASSOCS || bytes + b > LOAD_CHUNK_TXN_BYTES {
            flush(&mut cur, &mut out);
            (assocs, bytes) = (0, 0);
        }
        (assocs, bytes) = (assocs + 1, bytes + b);
        cur.0.push(a);
    }
    for (u, b) in users {
        if assocs + u.rows.len() > LOAD_CHUNK_ASSOCS || bytes + b > LOAD_CHUNK_TXN_BYTES {
            flush(&mut cur, &mut out);
            (assocs, bytes) = (0, 0);
        }
        (assocs, bytes) = (assocs + u.rows.len(), bytes + b);
        cur.1.push(u);
    }
    flush(&mut cur, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Plan;
    use std::path::Path;

    /// site-a with a new customer `hpc_c_new` (project, two allocations, `n` new users in
    /// both, defaults on the second) plus `extra` account YAML.
    fn plan(n: usize, project_description: &str, extra_users: &str) -> Plan {
        plan_edited(n, project_description, extra_users, |t| t)
    }

    /// [`plan`] with the desired file's text passed through `edit` before it is loaded.
    fn plan_edited(n: usize, project_description: &str, extra_users: &str, edit: impl Fn(String) -> String) -> Plan {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site-a");
        let current = slurmplan_sacctmgr::snapshot::load(&root.join("state")).unwrap();
        let text = std::fs::read_to_string(root.join("desired.yaml")).unwrap();
        let users: Vec<String> = (0..n).map(|i| format!("nu{i}")).collect();
        let list = format!("{}{extra_users}", users.join(", "));
        let block = format!(
            "      hpc_c_new:\n        parent: hpc_customers\n        description: '{project_description}'\n      hpc_a_n1:\n        parent: hpc_c_new\n        qos: [normal]\n        default_qos: normal\n        grp_tres_mins: {{cpu: 600}}\n        users: [{list}]\n      hpc_a_n2:\n        parent: hpc_c_new\n        users: [{list}]\n"
        );
        let defaults: String =
            users.iter().map(|u| format!("      {u}:\n        default_account: hpc_a_n2\n")).collect();
        let text = text.replacen("    accounts:\n", &format!("    accounts:\n{block}"), 1).replacen(
            "\n    users:\n      dave:",
            &format!("\n    users:\n{defaults}      dave:"),
            1,
        );
        let desired = slurmplan_desired::load_str(Path::new("desired.yaml"), &edit(text)).unwrap();
        let resolved = slurmplan_desired::resolve::resolve(&desired, &current).unwrap();
        crate::make_plan(&current, &resolved.state, "x").unwrap()
    }

    fn loads_of(p: &Plan) -> Vec<(&[LoadAccount], &[LoadUser])> {
        p.steps
            .iter()
            .filter_map(|s| match &s.command {
                Command::Load { accounts, users, .. } => Some((accounts.as_slice(), users.as_slice())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_new_customer_is_one_load_with_its_users_and_defaults() {
        let p = plan(10, "new customer: genome, x=1", "");
        let l = loads_of(&p);
        assert_eq!(l.len(), 1);
        let names: Vec<&str> = l[0].0.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["hpc_c_new", "hpc_a_n1", "hpc_a_n2"]);
        assert_eq!(l[0].1.len(), 10);
        assert!(l[0].1.iter().all(|u| u.default_account.as_str() == "hpc_a_n2" && u.rows.len() == 2));
        // nothing else creates them
        let argv: Vec<String> = p.steps.iter().map(|s| s.argv.join(" ")).collect();
        assert!(!argv.iter().any(|a| a.contains("hpc_a_n1") || a.contains("nu0")), "{argv:#?}");
    }

    #[test]
    fn an_existing_user_joining_new_accounts_is_added_the_batched_way() {
        // alice exists on rocket: load would move her DefaultAccount
        let p = plan(10, "new", ", alice");
        let l = loads_of(&p);
        assert_eq!(l.len(), 1);
        assert!(l[0].1.iter().all(|u| u.name.as_str() != "alice"));
        let adds: Vec<String> = p
            .steps
            .iter()
            .map(|s| s.argv.join(" "))
            .filter(|a| a.contains("add user") && a.contains("alice"))
            .collect();
        assert!(!adds.is_empty() && adds.iter().all(|a| !a.contains("defaultaccount")), "{adds:?}");
    }

    #[test]
    fn a_description_load_cannot_carry_keeps_the_subtree_batched() {
        let p = plan(10, "room #4", "");
        let l = loads_of(&p);
        // the project falls back, so its allocations have no loaded parent: nothing is loaded
        assert!(l.is_empty(), "{l:?}");
        let argv: Vec<String> = p.steps.iter().map(|s| s.argv.join(" ")).collect();
        assert!(argv.iter().any(|a| a.contains("add account hpc_c_new")), "{argv:#?}");
    }

    /// A QoS name load cannot carry (`#` starts a comment in the file) keeps the accounts that
    /// name it, in `QOS=` or `DefaultQOS=`, out of every load step; they are added with plain
    /// commands, as an account name load cannot carry is.
    #[test]
    fn a_qos_name_load_cannot_carry_keeps_its_accounts_batched() {
        let p = plan_edited(30, "new", "", |t| {
            t.replacen("qos:\n  normal: {}\n", "qos:\n  normal: {}\n  'q#1': {}\n", 1).replacen(
                "qos: [normal]\n        default_qos: normal\n",
                "qos: ['q#1']\n        default_qos: 'q#1'\n",
                1,
            )
        });
        let stdin: Vec<String> = p.steps.iter().filter_map(|s| s.command.stdin()).collect();
        assert!(stdin.iter().all(|t| !t.contains('#')), "{stdin:#?}");
        let argv: Vec<String> = p.steps.iter().map(|s| s.argv.join(" ")).collect();
        assert!(argv.iter().any(|a| a.contains("add account hpc_a_n1") && a.contains("qos=q#1")), "{argv:#?}");
        // the check a plan file passes agrees
        assert_eq!(crate::check::step_problems(&p), Vec::<String>::new());
    }

    #[test]
    fn a_small_creation_stays_batched() {
        // 3 accounts + 2 x 5 rows = 13 associations < LOAD_MIN_ASSOCS
        assert!(loads_of(&plan(5, "new", "")).is_empty());
    }

    #[test]
    fn large_creations_are_chunked_without_splitting_a_user() {
        let p = plan(3_000, "new", "");
        let l = loads_of(&p);
        assert_eq!(l.len(), 2);
        for (a, u) in &l {
            assert!(load_file::size(a, u) <= LOAD_CHUNK_ASSOCS);
        }
        assert_eq!(l.iter().map(|(_, u)| u.len()).sum::<usize>(), 3_000);
        // the plan still replays on the model and ends in the desired state (make_plan checked
        // every step); its saved form round-trips
        let back = crate::file::from_json(Path::new("p.json"), &crate::file::to_json(&p)).unwrap();
        assert_eq!(back, p);
    }

    fn name(s: String, k: slurmplan_model::NameKind) -> Name {
        Name::keep_case(&s, k).unwrap()
    }

    /// [`chunks`] of objects measured with `lineage`.
    fn chunks_of(
        cname: &Name,
        accounts: Vec<LoadAccount>,
        users: Vec<LoadUser>,
        lineage: &dyn Fn(&Name) -> usize,
    ) -> Vec<(Command, Vec<String>)> {
        let accounts = accounts
            .into_iter()
            .map(|a| {
                let bytes = account_txn_bytes(cname, &a, lineage(&a.name));
                (a, bytes)
            })
            .collect();
        let users = users
            .into_iter()
            .map(|u| {
                let bytes = user_txn_bytes(cname, &u, lineage);
                (u, bytes)
            })
            .collect();
        chunks(cname, accounts, users)
    }

    /// The txn bytes and associations of each step `chunks` makes.
    fn bounds_of(
        cname: &Name,
        steps: &[(Command, Vec<String>)],
        lineage: &dyn Fn(&Name) -> usize,
    ) -> Vec<(usize, usize)> {
        steps
            .iter()
            .map(|(c, _)| match c {
                Command::Load { accounts, users, .. } => (
                    load_file::size(accounts, users),
                    accounts.iter().map(|a| account_txn_bytes(cname, a, lineage(&a.name))).sum::<usize>()
                        + users.iter().map(|u| user_txn_bytes(cname, u, lineage)).sum::<usize>(),
                ),
                other => panic!("not a load: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn no_step_passes_either_bound_with_names_and_descriptions_at_maximal_length() {
        use slurmplan_model::NameKind::{Account, User};
        let cname = name("c".repeat(64), slurmplan_model::NameKind::Cluster);
        let mut set = AssocSet::default();
        set.tres.insert(
            slurmplan_sacctmgr::command::TresLimit::GrpTresMins,
            [("cpu".to_string(), Some(u64::MAX / 2)), ("mem".into(), Some(u64::MAX / 2))].into(),
        );
        set.default_qos = Some(Some(name("normal".into(), slurmplan_model::NameKind::Qos)));
        let acc = |i: usize| name(format!("{i:0>64}"), Account);
        // 300 accounts whose descriptions and organizations fill slurmdbd's `text` column
        let accounts: Vec<LoadAccount> = (0..300)
            .map(|i| LoadAccount {
                name: acc(i),
                parent: if i == 0 { slurmplan_model::names::root() } else { acc(0) },
                description: "d".repeat(65_535),
                organization: "o".repeat(65_535),
                set: set.clone(),
            })
            .collect();
        // 6,000 users of 64 bytes, each in three of those accounts, with limits on every row
        let mk_users = || -> Vec<LoadUser> {
            (0..6_000)
                .map(|i| LoadUser {
                    name: name(format!("u{i:0>63}"), User),
                    default_account: acc(i % 300),
                    rows: (0..3).map(|k| LoadRow { account: acc((i + k) % 300), set: set.clone() }).collect(),
                })
                .collect()
        };
        let users = mk_users();
        let (n_accounts, n_assocs) = (accounts.len(), load_file::size(&accounts, &users));
        // as deep as 32 levels of 64-byte names
        let lineage = |_: &Name| 32 * 65 + 1;
        let steps = chunks_of(&cname, accounts, users, &lineage);
        let b = bounds_of(&cname, &steps, &lineage);
        assert!(b.len() > 2, "{b:?}");
        for (assocs, bytes) in &b {
            assert!(*assocs <= LOAD_CHUNK_ASSOCS && *bytes <= LOAD_CHUNK_TXN_BYTES, "{b:?}");
        }
        // the bytes bound the account steps, and deep lineages the user steps
        assert!(b[0].0 < 100, "{b:?}");
        assert!(b.iter().all(|(a, _)| *a < LOAD_CHUNK_ASSOCS - 3), "{b:?}");
        // with a shallow tree the association count binds
        let shallow = |a: &Name| a.as_str().len() + 2;
        let b2 = bounds_of(&cname, &chunks_of(&cname, Vec::new(), mk_users(), &shallow), &shallow);
        assert!(b2.iter().all(|(a, t)| *a <= LOAD_CHUNK_ASSOCS && *t <= LOAD_CHUNK_TXN_BYTES), "{b2:?}");
        assert!(b2.iter().any(|(a, _)| *a > LOAD_CHUNK_ASSOCS - 3), "{b2:?}");
        assert_eq!(b.iter().map(|(a, _)| a).sum::<usize>(), n_assocs);
        // every object once, accounts before the users that name them
        let mut seen_accounts = 0;
        for (c, _) in &steps {
            let Command::Load { accounts, users, .. } = c else { unreachable!() };
            seen_accounts += accounts.len();
            assert!(users.is_empty() || seen_accounts == n_accounts);
            // the rendered file is never larger than what its txn estimate allows
            assert!(load_file::write(&cname, accounts, users).len() <= LOAD_CHUNK_TXN_BYTES);
        }
    }

    #[test]
    fn an_account_at_the_free_text_limit_fits_a_step_alone() {
        // Free text is bounded (names::MAX_FREE_TEXT_BYTES), so one account's txn bytes stay far
        // below a step's byte bound: the subtree is loaded.
        let limit = slurmplan_model::names::MAX_FREE_TEXT_BYTES;
        let p = plan(30, &"x".repeat(limit), "");
        let l = loads_of(&p);
        assert_eq!(l.len(), 1);
        assert!(l[0].0.iter().any(|a| a.name.as_str() == "hpc_c_new" && a.description.len() == limit));
        let a = LoadAccount { organization: "o".repeat(limit), ..l[0].0[0].clone() };
        let cname = name("c".repeat(64), slurmplan_model::NameKind::Cluster);
        assert!(fits_alone(1, account_txn_bytes(&cname, &a, 64 * 64)));
    }

    #[test]
    fn a_chunk_boundary_falls_on_the_byte_bound_when_descriptions_are_long() {
        // 40 accounts of ~0.5 MiB descriptions: 16 per step at most
        let cname = name("rocket".into(), slurmplan_model::NameKind::Cluster);
        let accounts: Vec<LoadAccount> = (0..40)
            .map(|i| LoadAccount {
                name: name(format!("a{i}"), slurmplan_model::NameKind::Account),
                parent: slurmplan_model::names::root(),
                description: "d".repeat(1 << 19),
                organization: "o".into(),
                set: AssocSet::default(),
            })
            .collect();
        let lineage = |a: &Name| a.as_str().len() + 2;
        let b = bounds_of(&cname, &chunks_of(&cname, accounts, Vec::new(), &lineage), &lineage);
        assert_eq!(b.iter().map(|(a, _)| *a).collect::<Vec<_>>(), [15, 15, 10], "{b:?}");
    }
}
