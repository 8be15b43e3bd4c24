//! BENCHMARK TOOL: writes a synthetic site (a snapshot directory + a desired YAML file) of a
//! given size with a given fraction of drift of every kind, for `bench/plan-scale.sh`.
//! Deterministic for a given seed. Not used by slurmplan itself; must not write outside `--out`.
//!
//! usage: slurmplan-gen --out DIR [--accounts N] [--users N] [--assocs N] [--drift F] [--seed S]
//!                      [--long-names] [--cluster NAME]
//!
//! `--long-names` names accounts and users the way many real sites do, past 15 characters
//! (`hpc_a17-waldur-allocation`, `user17.lastname`), instead of `hpc_a17` and `u17`.
//! `--cluster NAME` (default `big`) names the one cluster of the snapshot and of both desired
//! files. Account names depend only on the sizes, and account records (description and
//! organization, in the snapshot only) are the account's name, so sites generated for several
//! clusters share accounts without conflicting records and their desired files can be merged
//! into one `clusters:` map (`bench/multi-cluster.sh`). The seed only draws the drift: with
//! `--drift 0` the output does not depend on it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use slurmplan_model::{
    AccountGraph, AccountRecord, Assoc, AssocData, ClusterState, Name, NameKind, Qos, QosList, State, UserKey,
};
use slurmplan_sacctmgr::{parse::write_state, snapshot};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }
}

fn n(s: &str) -> Name {
    Name::keep_case(s, NameKind::Account).expect("generated names are valid")
}

struct Acct {
    name: Name,
    parent: Name,
    assoc: Assoc,
}

fn main() {
    let mut out = None;
    let mut long = false;
    let mut cluster = String::from("big");
    let (mut accounts, mut users, mut assocs, mut drift, mut seed) =
        (50_000usize, 200_000usize, 1_000_000usize, 0.01f64, 42u64);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().expect("flag needs a value");
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(v())),
            "--accounts" => accounts = v().parse().expect("number"),
            "--users" => users = v().parse().expect("number"),
            "--assocs" => assocs = v().parse().expect("number"),
            "--drift" => drift = v().parse().expect("fraction"),
            "--seed" => seed = v().parse().expect("number"),
            "--long-names" => long = true,
            "--cluster" => cluster = v(),
            other => {
                eprintln!("unknown argument `{other}`");
                std::process::exit(64);
            }
        }
    }
    let Some(out) = out else {
        eprintln!(
            "usage: slurmplan-gen --out DIR [--accounts N] [--users N] [--assocs N] [--drift F] [--seed S] [--long-names] [--cluster NAME]"
        );
        std::process::exit(64);
    };
    // written unquoted into YAML: only names that need no quoting there
    let plain = !cluster.is_empty()
        && cluster.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    let cluster = match Name::keep_case(&cluster, NameKind::Cluster) {
        Ok(c) if plain => c,
        Ok(_) => {
            eprintln!("--cluster `{cluster}`: use lower-case letters, digits, `_` and `-` only");
            std::process::exit(64);
        }
        Err(e) => {
            eprintln!("--cluster: {e}");
            std::process::exit(64);
        }
    };
    let mut rng = Rng(seed | 1);
    let acct = |kind: &str, i: usize| {
        if long { format!("hpc_{kind}{i}-waldur-allocation") } else { format!("hpc_{kind}{i}") }
    };
    let user = |k: usize| if long { format!("user{k}.lastname") } else { format!("u{k}") };
    // 4-level tree: root -> customers (1%) -> projects (10%) -> allocations (the rest)
    let customers = (accounts / 100).max(1);
    let projects = (accounts / 10).max(1);
    let allocs = accounts.saturating_sub(customers + projects).max(1);
    let mut tree: Vec<Acct> = Vec::new();
    for i in 0..customers {
        tree.push(Acct { name: n(&acct("c", i)), parent: n("root"), assoc: Assoc::default() });
    }
    for i in 0..projects {
        tree.push(Acct { name: n(&acct("p", i)), parent: n(&acct("c", i % customers)), assoc: Assoc::default() });
    }
    let normal: BTreeSet<Name> = [n("normal")].into();
    for i in 0..allocs {
        let mut assoc = Assoc::from(AssocData {
            qos: QosList::Set(normal.clone()),
            default_qos: Some(n("normal")),
            ..Default::default()
        });
        assoc.limits.grp_tres_mins.insert("cpu".into(), 60_000 * (1 + (i as u64 % 100)));
        assoc.limits.grp_tres_mins.insert("mem".into(), 1024 * (1 + (i as u64 % 50)));
        tree.push(Acct { name: n(&acct("a", i)), parent: n(&acct("p", i % projects)), assoc });
    }
    let mut user_assocs: BTreeMap<UserKey, Assoc> = BTreeMap::new();
    let per_alloc = (assocs / allocs).max(1);
    let mut k = 0usize;
    for i in 0..allocs {
        for _ in 0..per_alloc {
            let u = n(&user(k % users));
            k += 1;
            user_assocs.insert(UserKey { account: n(&acct("a", i)), user: u, partition: None }, Assoc::default());
        }
    }
    let current = build(&cluster, &tree, &user_assocs);
    // drift: the desired side differs by `drift` of every kind
    let mut dtree: Vec<Acct> = Vec::new();
    let mut deleted: BTreeSet<Name> = BTreeSet::new();
    for (i, a) in tree.iter().enumerate() {
        let is_alloc = a.name.as_str().starts_with("hpc_a");
        if is_alloc && rng.chance(drift) {
            deleted.insert(a.name.clone());
            continue;
        }
        let mut b = Acct { name: a.name.clone(), parent: a.parent.clone(), assoc: a.assoc.clone() };
        if is_alloc && rng.chance(drift) {
            b.parent = n(&acct("p", rng.below(projects)));
        }
        if is_alloc && rng.chance(drift) {
            b.assoc.qos = QosList::Set([n("paused")].into());
            b.assoc.default_qos = Some(n("paused"));
        }
        if is_alloc && rng.chance(drift) {
            b.assoc.limits.grp_submit_jobs = Some(0);
        }
        if is_alloc && rng.chance(drift) {
            b.assoc.limits.grp_tres_mins.insert("cpu".into(), 123_000 + i as u64);
        }
        dtree.push(b);
    }
    let new_accounts = ((allocs as f64) * drift) as usize;
    for i in 0..new_accounts {
        let assoc = Assoc::from(AssocData {
            qos: QosList::Set(normal.clone()),
            default_qos: Some(n("normal")),
            ..Default::default()
        });
        dtree.push(Acct { name: n(&acct("new", i)), parent: n(&acct("p", rng.below(projects))), assoc });
    }
    let mut dusers: BTreeMap<UserKey, Assoc> = BTreeMap::new();
    for (key, a) in &user_assocs {
        if deleted.contains(&key.account) || rng.chance(drift) {
            continue;
        }
        dusers.insert(key.clone(), a.clone());
    }
    let adds = ((user_assocs.len() as f64) * drift) as usize;
    for _ in 0..adds {
        let acct = if new_accounts > 0 && rng.chance(0.1) {
            n(&acct("new", rng.below(new_accounts)))
        } else {
            n(&acct("a", rng.below(allocs)))
        };
        if deleted.contains(&acct) {
            continue;
        }
        dusers.insert(UserKey { account: acct, user: n(&user(rng.below(users))), partition: None }, Assoc::default());
    }
    std::fs::create_dir_all(out.join("state")).expect("create output dir");
    let raw = write_state(&current);
    let manifest = snapshot::Manifest::new(Some("22.05.8".into()), "2026-01-01T00:00:00Z", vec![cluster.to_string()]);
    snapshot::write_dir(&out.join("state"), &raw.to_files(), &manifest).expect("write snapshot");
    std::fs::write(out.join("desired.yaml"), desired_yaml(&cluster, &dtree, &dusers)).expect("write desired");
    // a desired file equal to the current state, for the no-change benchmark
    std::fs::write(out.join("desired-same.yaml"), desired_yaml(&cluster, &tree, &user_assocs)).expect("write desired");
    eprintln!(
        "wrote {}: {} accounts, {} user associations (desired: {} accounts, {} user associations)",
        out.display(),
        tree.len() + 1,
        user_assocs.len(),
        dtree.len() + 1,
        dusers.len()
    );
}

fn build(cluster_name: &Name, tree: &[Acct], users: &BTreeMap<UserKey, Assoc>) -> State {
    let root = Assoc::from(AssocData { qos: QosList::Set([n("normal")].into()), ..Default::default() });
    let items = std::iter::once((n("root"), None, root))
        .chain(tree.iter().map(|a| (a.name.clone(), Some(a.parent.clone()), a.assoc.clone())));
    let accounts = AccountGraph::build(items).expect("generated tree is valid");
    let mut defaults = BTreeMap::new();
    for k in users.keys() {
        defaults.entry(k.user.clone()).or_insert_with(|| k.account.clone());
    }
    let cluster = ClusterState { accounts, users: users.clone(), defaults, ..Default::default() };
    let mut state = State::default();
    state.clusters.insert(cluster_name.clone(), cluster);
    for name in ["normal", "paused", "downscaled"] {
        state.qos.insert(n(name), Qos { description: Some(name.to_string()), ..Default::default() });
    }
    let mut names: Vec<&Name> = tree.iter().map(|a| &a.name).collect();
    let root = n("root");
    names.push(&root);
    for name in names {
        state.accounts.insert(
            name.clone(),
            AccountRecord { description: Some(name.to_string()), organization: Some(name.to_string()) },
        );
    }
    state
}

fn desired_yaml(cluster: &Name, tree: &[Acct], users: &BTreeMap<UserKey, Assoc>) -> String {
    let mut by_account: BTreeMap<&Name, Vec<&Name>> = BTreeMap::new();
    for k in users.keys() {
        by_account.entry(&k.account).or_default().push(&k.user);
    }
    let mut s = String::with_capacity(64 * users.len() + 128 * tree.len());
    s.push_str("version: 1\nmanaged:\n  prefixes: [hpc_]\nqos:\n  normal: {}\n  paused: {}\n  downscaled: {}\n");
    let _ = write!(s, "clusters:\n  {cluster}:\n    accounts:\n");
    for a in tree {
        let _ = write!(s, "      {}:\n        parent: {}\n", a.name, a.parent);
        if let QosList::Set(q) = &a.assoc.qos {
            let _ = writeln!(s, "        qos: [{}]", q.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(", "));
        }
        if let Some(d) = &a.assoc.default_qos {
            let _ = writeln!(s, "        default_qos: {d}");
        }
        if let Some(g) = a.assoc.limits.grp_submit_jobs {
            let _ = writeln!(s, "        grp_submit_jobs: {g}");
        }
        if !a.assoc.limits.grp_tres_mins.is_empty() {
            let t: Vec<String> = a.assoc.limits.grp_tres_mins.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let _ = writeln!(s, "        grp_tres_mins: {{{}}}", t.join(", "));
        }
        if let Some(us) = by_account.get(&a.name) {
            let _ = writeln!(s, "        users: [{}]", us.iter().map(|u| u.as_str()).collect::<Vec<_>>().join(", "));
        }
    }
    s
}
