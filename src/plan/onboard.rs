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

use crate::model::{ClusterState, Name, State, UserKey};
use crate::rules::RuleModel;
use crate::sacctmgr::command::{AssocSet, Command};
use crate::sacctmgr::load::{self, LoadAccount, LoadRow, LoadUser};

/// Fewer new associations than this are created with batched commands: a load's output and
/// fixed cost do not pay for a handful of objects, and small plans stay easy to read.
pub const LOAD_MIN_ASSOCS: usize = 20;

/// The most associations one load creates: half of the 10,000 verified in one load on 22.05.8
/// and 24.11.5 with slurmdbd's and MariaDB's defaults; ~50,000 in one load fail inside
/// slurmdbd (`max_allowed_packet`) while sacctmgr reports success (docs/decisions.md).
pub const LOAD_CHUNK_ASSOCS: usize = 5_000;

/// The effective QoS list and DefaultQOS an association inherits.
type Effective = (BTreeSet<Name>, Option<Name>);

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
    let new_accounts = new_accounts(sim, c, d, desired, accounts);
    if new_accounts.is_empty() {
        return Vec::new();
    }
    let new_users = new_users(sim, d, users, &new_accounts);
    let list: Vec<LoadAccount> = new_accounts.into_values().map(|(a, _)| a).collect();
    let mut list = list;
    // parents first (depth in the desired tree), then by name
    list.sort_by_key(|a| (d.accounts.depth(a.name.as_str()), a.name.clone()));
    if load::size(&list, &new_users) < min_assocs {
        return Vec::new();
    }
    chunks(cname, list, new_users)
}

/// Accounts new everywhere whose parent exists or is new too, whose settings the flat file
/// carries and whose QoS settings hold at creation; with what they pass on to their users.
fn new_accounts(
    sim: &RuleModel,
    c: &ClusterState,
    d: &ClusterState,
    desired: &State,
    touched: &BTreeSet<Name>,
) -> BTreeMap<Name, (LoadAccount, Effective)> {
    let mut missing: Vec<(usize, &Name)> = touched
        .iter()
        .filter(|n| d.accounts.contains(n.as_str()) && !c.accounts.contains(n.as_str()))
        .filter(|n| !sim.state.accounts.contains_key(*n))
        .map(|n| (d.accounts.depth(n.as_str()), n))
        .collect();
    missing.sort();
    let mut out: BTreeMap<Name, (LoadAccount, Effective)> = BTreeMap::new();
    for (_, n) in missing {
        let parent = d.accounts.parent(n.as_str()).cloned().unwrap_or_else(crate::model::names::root);
        let inherited: Effective = match out.get(&parent) {
            Some((_, eff)) => eff.clone(),
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
        let record = crate::diff::new_record(desired.accounts.get(n), None);
        let org_default = if parent == crate::model::names::root() { n.to_string() } else { parent.to_string() };
        let account = LoadAccount {
            name: n.clone(),
            parent,
            description: record.description.unwrap_or_else(|| n.to_string()),
            organization: record.organization.unwrap_or(org_default),
            set: AssocSet::from_assoc(want),
        };
        if load::problems(std::slice::from_ref(&account), &[]).is_empty() {
            out.insert(n.clone(), (account, (eff, default)));
        }
    }
    out
}

/// Users with no association on any cluster whose every desired row on this cluster is under a
/// loaded account, without a partition, with settings the file carries and that hold, and who
/// have a declared DefaultAccount among those rows.
fn new_users(
    sim: &mut RuleModel,
    d: &ClusterState,
    touched: &BTreeSet<UserKey>,
    accounts: &BTreeMap<Name, (LoadAccount, Effective)>,
) -> Vec<LoadUser> {
    let candidates: BTreeSet<&Name> =
        touched.iter().filter(|k| accounts.contains_key(&k.account)).map(|k| &k.user).collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let fresh: BTreeSet<&Name> = candidates.into_iter().filter(|u| !sim.knows_user(u)).collect();
    // every desired row of a user new everywhere is an add, so the diff names it
    let mut rows: BTreeMap<&Name, Vec<(&UserKey, &crate::model::Assoc)>> = BTreeMap::new();
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
            let Some((_, (eff, def))) = accounts.get(&k.account) else { continue 'users };
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
        if load::problems(&[], std::slice::from_ref(&u)).is_empty() {
            out.push(u);
        }
    }
    out
}

/// Steps of at most [`LOAD_CHUNK_ASSOCS`] associations: accounts first, then users, a user's
/// rows never split, so every line names only accounts of its own or an earlier chunk.
fn chunks(cname: &Name, accounts: Vec<LoadAccount>, users: Vec<LoadUser>) -> Vec<(Command, Vec<String>)> {
    let mut out = Vec::new();
    let mut cur: (Vec<LoadAccount>, Vec<LoadUser>) = (Vec::new(), Vec::new());
    let flush = |cur: &mut (Vec<LoadAccount>, Vec<LoadUser>), out: &mut Vec<(Command, Vec<String>)>| {
        let (accounts, users) = std::mem::take(cur);
        if accounts.is_empty() && users.is_empty() {
            return;
        }
        let mut objects: Vec<String> = accounts.iter().map(|a| format!("account.{cname}.{}", a.name)).collect();
        for u in &users {
            for r in &u.rows {
                let k = UserKey { account: r.account.clone(), user: u.name.clone(), partition: None };
                objects.push(format!("user_association.{cname}.{}", crate::diff::user_key_label(&k)));
            }
            objects.push(format!("default_account.{cname}.{}", u.name));
        }
        out.push((Command::Load { cluster: cname.clone(), accounts, users }, objects));
    };
    for a in accounts {
        if load::size(&cur.0, &cur.1) + 1 > LOAD_CHUNK_ASSOCS {
            flush(&mut cur, &mut out);
        }
        cur.0.push(a);
    }
    for u in users {
        if load::size(&cur.0, &cur.1) + u.rows.len() > LOAD_CHUNK_ASSOCS {
            flush(&mut cur, &mut out);
        }
        cur.1.push(u);
    }
    flush(&mut cur, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use std::path::Path;

    /// site-a with a new customer `hpc_c_new` (project, two allocations, `n` new users in
    /// both, defaults on the second) plus `extra` account YAML.
    fn plan(n: usize, project_description: &str, extra_users: &str) -> Plan {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/site-a");
        let current = crate::sacctmgr::snapshot::load(&root.join("state")).unwrap();
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
        let desired = crate::desired::load_str(Path::new("desired.yaml"), &text).unwrap();
        let resolved = crate::desired::resolve::resolve(&desired, &current).unwrap();
        crate::plan::make_plan(&current, &resolved.state, "x").unwrap()
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
            assert!(load::size(a, u) <= LOAD_CHUNK_ASSOCS);
        }
        assert_eq!(l.iter().map(|(_, u)| u.len()).sum::<usize>(), 3_000);
        // the plan still replays on the model and ends in the desired state (make_plan checked
        // every step); its saved form round-trips
        let back = crate::plan::file::from_json(Path::new("p.json"), &crate::plan::file::to_json(&p)).unwrap();
        assert_eq!(back, p);
    }
}
