//! Property tests of the planner against the simulator, through the public API only.
//!
//! Random valid (current, desired) pairs are generated from a stream of choice bytes (so that
//! proptest shrinks them towards "fewer, simpler choices"); the desired state is the current one
//! after random mutations (adds, subtree deletes, re-parents, QoS swaps, limits, user
//! associations, DefaultAccount moves, QoS object create/delete), then repaired so that both
//! pass `rules::check_state`. Every plan is replayed on a fresh `RuleModel`, command by command.
//!
//! A failing pair is printed in the compact text form of [`describe`]; [`parse_spec`] reads it
//! back, so a shrunk failure can be pasted into a regular regression test.
//!
//! The model is the oracle here, so these tests say nothing about real Slurm (the differential
//! test, tests/differential_real.rs, checks the model against it); they must not run sacctmgr.

use std::collections::{BTreeMap, BTreeSet};

mod common;

use common::choices::Ch;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestCaseError;

use slurmplan::diff::diff;
use slurmplan::model::names::{Name, NameKind};
use slurmplan::model::{
    AccountGraph, AccountRecord, Assoc, AssocData, ClusterState, Fairshare, Limits, Qos, QosList, State, UserKey,
};
use slurmplan::plan::{Plan, make_plan};
use slurmplan::rules::{RuleModel, check_state};
use slurmplan::sacctmgr::command::Command;

/// The fake sacctmgr's argv parser (a test tool, not part of the library).
#[path = "../crates/dev/src/bin/slurmplan-fake-sacctmgr/argv.rs"]
mod fake_argv;

fn n(s: &str) -> Name {
    Name::keep_case(s, NameKind::Account).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Name pools (choices come from common::choices::Ch)
// ---------------------------------------------------------------------------------------------

const ACCT_POOL: [&str; 8] = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];
const USER_POOL: [&str; 5] = ["u0", "u1", "u2", "u3", "u4"];
const MAX_DEPTH: usize = 4;

thread_local! {
    /// Whether `gen_qos_list` may produce deltas (set while generating the current state).
    static DELTAS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn gen_qos_obj(ch: &mut Ch, name: &str) -> Qos {
    let mut q = Qos {
        description: Some(if ch.chance(25) { format!("{name}-desc") } else { name.to_string() }),
        ..Default::default()
    };
    if ch.chance(30) {
        q.grp_submit_jobs = Some([0, 10, 50][ch.below(3)]);
    }
    if ch.chance(30) {
        q.max_wall = Some([60, 1440][ch.below(2)]);
    }
    if ch.chance(20) {
        q.flags.insert("denyonlimit".into());
    }
    if ch.chance(20) {
        q.grp_tres_mins.insert("cpu".into(), [100, 1000][ch.below(2)]);
    }
    q
}

fn gen_limits(ch: &mut Ch) -> Limits {
    let mut l = Limits::default();
    if ch.chance(30) {
        l.fairshare = Some(match ch.below(4) {
            0 => Fairshare::Parent,
            1 => Fairshare::Shares(0),
            2 => Fairshare::Shares(5),
            _ => Fairshare::Shares(100),
        });
    }
    if ch.chance(35) {
        l.grp_submit_jobs = Some([0, 1, 20][ch.below(3)]);
    }
    if ch.chance(15) {
        l.grp_jobs = Some([0, 7][ch.below(2)]);
    }
    if ch.chance(30) {
        if ch.chance(70) {
            l.grp_tres_mins.insert("cpu".into(), [0, 600, 6000][ch.below(3)]);
        }
        if ch.chance(50) {
            l.grp_tres_mins.insert("mem".into(), [1024, 4096][ch.below(2)]);
        }
    }
    if ch.chance(25) {
        l.max_wall = Some([30, 60, 2880][ch.below(3)]);
    }
    l
}

fn qos_names(s: &State) -> Vec<Name> {
    s.qos.keys().cloned().collect()
}

/// Inherit (mostly) or a non-empty explicit set from `pool`.
fn gen_qos_list(ch: &mut Ch, pool: &[Name]) -> QosList {
    if !ch.chance(40) || pool.is_empty() {
        return QosList::Inherit;
    }
    if DELTAS.with(|d| d.get()) && ch.chance(25) {
        // as read back after `qos+=x` / `qos-=y` (only on the current side)
        let (mut add, mut remove) = (BTreeSet::new(), BTreeSet::new());
        for q in pool {
            match ch.below(4) {
                1 => {
                    add.insert(q.clone());
                }
                2 => {
                    remove.insert(q.clone());
                }
                _ => {}
            }
        }
        if !add.is_empty() || !remove.is_empty() {
            return QosList::Delta { add, remove };
        }
    }
    let mut s: BTreeSet<Name> = BTreeSet::new();
    s.insert(ch.pick(pool).unwrap().clone());
    for q in pool {
        if ch.chance(30) {
            s.insert(q.clone());
        }
    }
    QosList::Set(s)
}

fn gen_default(ch: &mut Ch, pool: &[Name]) -> Option<Name> {
    if ch.chance(40) { ch.pick(pool).cloned() } else { None }
}

fn gen_assoc(ch: &mut Ch, pool: &[Name], qos_pct: u32) -> Assoc {
    let limits = gen_limits(ch);
    let (qos, default_qos) =
        if ch.chance(qos_pct) { (gen_qos_list(ch, pool), gen_default(ch, pool)) } else { (QosList::Inherit, None) };
    AssocData { limits, qos, default_qos }.into()
}

fn gen_root_assoc(ch: &mut Ch, pool: &[Name]) -> Assoc {
    let mut s: BTreeSet<Name> = [n("normal")].into();
    for q in pool {
        if ch.chance(25) {
            s.insert(q.clone());
        }
    }
    let default_qos = if ch.chance(70) { Some(n("normal")) } else { None };
    let limits = if ch.chance(20) { gen_limits(ch) } else { Limits::default() };
    AssocData { limits, qos: QosList::Set(s), default_qos }.into()
}

/// Accounts that may take a child without exceeding MAX_DEPTH.
fn parents_ok(c: &ClusterState) -> Vec<Name> {
    c.accounts.names().into_iter().filter(|a| c.accounts.depth(a.as_str()) < MAX_DEPTH).cloned().collect()
}

fn non_root(c: &ClusterState) -> Vec<Name> {
    c.accounts.names().into_iter().filter(|a| a.as_str() != "root").cloned().collect()
}

fn add_account(ch: &mut Ch, c: &mut ClusterState, pool: &[Name]) -> Option<Name> {
    let name = n(ACCT_POOL[ch.below(ACCT_POOL.len())]);
    if c.accounts.contains(name.as_str()) {
        return None;
    }
    let parent = ch.pick(&parents_ok(c))?.clone();
    let assoc = gen_assoc(ch, pool, 40);
    c.accounts.insert(name.clone(), parent.as_str(), assoc).unwrap();
    Some(name)
}

fn add_user_assoc(ch: &mut Ch, c: &mut ClusterState, pool: &[Name], account: Option<Name>) {
    let accts = non_root(c);
    let Some(account) = account.or_else(|| ch.pick(&accts).cloned()) else { return };
    let user = n(USER_POOL[ch.below(USER_POOL.len())]);
    let partition = if ch.chance(20) { Some(n("gpu")) } else { None };
    let key = UserKey { account, user, partition };
    if c.users.contains_key(&key) {
        return;
    }
    let assoc = gen_assoc(ch, pool, 35);
    c.users.insert(key, assoc);
}

fn delete_subtree(c: &mut ClusterState, top: &Name) {
    let mut sub: Vec<(usize, Name)> =
        c.accounts.subtree(top.as_str()).into_iter().map(|a| (c.accounts.depth(a.as_str()), a.clone())).collect();
    sub.sort();
    let doomed: BTreeSet<Name> = sub.iter().map(|(_, a)| a.clone()).collect();
    c.users.retain(|k, _| !doomed.contains(&k.account));
    for (_, a) in sub.into_iter().rev() {
        c.accounts.remove_leaf(a.as_str()).unwrap();
    }
}

/// Remove every reference to a QoS that no longer exists.
fn strip_qos(s: &mut State, q: &Name) {
    let strip = |a: &mut Assoc, is_root: bool| {
        match &mut a.qos {
            QosList::Set(set) => {
                set.remove(q);
                if set.is_empty() {
                    a.qos = if is_root { QosList::Set([n("normal")].into()) } else { QosList::Inherit };
                }
            }
            QosList::Delta { add, remove } => {
                add.remove(q);
                remove.remove(q);
                if add.is_empty() && remove.is_empty() {
                    a.qos = QosList::Inherit;
                }
            }
            QosList::Inherit => {}
        }
        if a.default_qos.as_ref() == Some(q) {
            a.default_qos = None;
        }
    };
    for c in s.clusters.values_mut() {
        for name in c.accounts.names().into_iter().cloned().collect::<Vec<_>>() {
            let node = c.accounts.get_mut(name.as_str()).unwrap();
            strip(&mut node.assoc, name.as_str() == "root");
        }
        for a in c.users.values_mut() {
            strip(a, false);
        }
    }
}

/// Make every effective DefaultQOS lie in its effective QoS list (top-down), and every user's
/// DefaultAccount point at one of its associations.
fn repair(ch: &mut Ch, s: &mut State) {
    for c in s.clusters.values_mut() {
        let mut order: Vec<(usize, Name)> =
            c.accounts.names().into_iter().map(|a| (c.accounts.depth(a.as_str()), a.clone())).collect();
        order.sort();
        for (_, a) in order {
            let eff = c.accounts.effective_qos(a.as_str());
            let def = c.accounts.effective_default_qos(a.as_str()).cloned();
            if def.as_ref().is_none_or(|d| eff.contains(d)) {
                continue;
            }
            let drop_own = ch.chance(50);
            let node = c.accounts.get_mut(a.as_str()).unwrap();
            if drop_own && node.assoc.default_qos.is_some() {
                node.assoc.default_qos = None;
                let def = c.accounts.effective_default_qos(a.as_str()).cloned();
                if def.as_ref().is_none_or(|d| eff.contains(d)) {
                    continue;
                }
            }
            let v: Vec<Name> = eff.iter().cloned().collect();
            let pick = ch.pick(&v).cloned();
            let node = c.accounts.get_mut(a.as_str()).unwrap();
            match pick {
                Some(p) => node.assoc.default_qos = Some(p),
                None => {
                    // empty effective list: inherit the parent's (valid) list and default
                    node.assoc.qos = QosList::Inherit;
                    node.assoc.default_qos = None;
                }
            }
        }
        let keys: Vec<UserKey> = c.users.keys().cloned().collect();
        for k in keys {
            let acct_eff = c.accounts.effective_qos(k.account.as_str());
            let acct_def = c.accounts.effective_default_qos(k.account.as_str()).cloned();
            let a = c.users.get_mut(&k).unwrap();
            let eff = a.qos.effective(&acct_eff);
            let def = a.default_qos.clone().or(acct_def.clone());
            if def.as_ref().is_none_or(|d| eff.contains(d)) {
                continue;
            }
            if ch.chance(50) && a.default_qos.is_some() && acct_def.as_ref().is_none_or(|d| eff.contains(d)) {
                a.default_qos = None;
                continue;
            }
            let v: Vec<Name> = eff.iter().cloned().collect();
            match ch.pick(&v) {
                Some(p) => a.default_qos = Some(p.clone()),
                None => {
                    a.qos = QosList::Inherit;
                    a.default_qos = None;
                }
            }
        }
        // DefaultAccount
        let index: BTreeMap<Name, Vec<Name>> = {
            let mut m: BTreeMap<Name, Vec<Name>> = BTreeMap::new();
            for k in c.users.keys() {
                let e = m.entry(k.user.clone()).or_default();
                if !e.contains(&k.account) {
                    e.push(k.account.clone());
                }
            }
            m
        };
        c.defaults.retain(|u, _| index.contains_key(u));
        for (u, accts) in &index {
            if c.defaults.get(u).is_none_or(|d| !accts.contains(d)) {
                c.defaults.insert(u.clone(), ch.pick(accts).unwrap().clone());
            }
        }
    }
}

/// Every account on any cluster has a record, as a read from sacctmgr would give.
fn fill_records(ch: &mut Ch, s: &mut State) {
    let names: BTreeSet<Name> =
        s.clusters.values().flat_map(|c| c.accounts.names().into_iter().cloned().collect::<Vec<_>>()).collect();
    for a in names {
        s.accounts.entry(a.clone()).or_insert_with(|| AccountRecord {
            description: Some(if ch.chance(20) { format!("{a}-d") } else { a.to_string() }),
            organization: Some(if ch.chance(20) { "org-x".into() } else { a.to_string() }),
        });
    }
}

fn gen_current(ch: &mut Ch) -> State {
    let mut s = State::default();
    for q in ["normal", "a", "b", "paused"] {
        s.qos.insert(n(q), gen_qos_obj(ch, q));
    }
    if ch.chance(50) {
        s.qos.insert(n("c"), gen_qos_obj(ch, "c"));
    }
    let pool = qos_names(&s);
    DELTAS.with(|d| d.set(true));
    let nclusters = 1 + usize::from(ch.chance(35));
    for ci in 0..nclusters {
        let mut c = ClusterState::with_root();
        c.accounts.get_mut("root").unwrap().assoc = gen_root_assoc(ch, &pool);
        for _ in 0..ch.below(8) {
            add_account(ch, &mut c, &pool);
        }
        for _ in 0..ch.below(9) {
            add_user_assoc(ch, &mut c, &pool, None);
        }
        s.clusters.insert(n(["c1", "c2"][ci]), c);
    }
    DELTAS.with(|d| d.set(false));
    repair(ch, &mut s);
    fill_records(ch, &mut s);
    s
}

fn cluster_pick<'s>(ch: &mut Ch, s: &'s mut State) -> &'s mut ClusterState {
    let names: Vec<Name> = s.clusters.keys().cloned().collect();
    let name = ch.pick(&names).unwrap().clone();
    s.clusters.get_mut(&name).unwrap()
}

fn mutate(ch: &mut Ch, s: &mut State) {
    let pool = qos_names(s);
    let kind = ch.below(15);
    if kind == 12 {
        // toggle QoS `c` (create or delete a QoS object)
        let c = n("c");
        if s.qos.remove(&c).is_some() {
            strip_qos(s, &c);
        } else {
            s.qos.insert(c, gen_qos_obj(ch, "c"));
        }
        return;
    }
    if kind == 13 {
        let names: Vec<Name> = s.accounts.keys().cloned().collect();
        if let Some(a) = ch.pick(&names).cloned() {
            let r = s.accounts.get_mut(&a).unwrap();
            match ch.below(3) {
                0 => r.description = Some(format!("{a}-new")),
                1 => r.organization = Some("org-y".into()),
                _ => r.description = None, // unmanaged on the desired side
            }
        }
        return;
    }
    if kind == 14 {
        if let Some(q) = ch.pick(&pool).cloned() {
            let new = gen_qos_obj(ch, q.as_str());
            s.qos.insert(q, new);
        }
        return;
    }
    let c = cluster_pick(ch, s);
    match kind {
        0 => {
            if let Some(a) = add_account(ch, c, &pool) {
                for _ in 0..ch.below(3) {
                    add_user_assoc(ch, c, &pool, Some(a.clone()));
                }
                // a team in two new allocations: the same users with the same settings
                if ch.chance(40)
                    && let Some(b) = add_account(ch, c, &pool)
                {
                    let team: Vec<(UserKey, Assoc)> =
                        c.users.iter().filter(|(k, _)| k.account == a).map(|(k, v)| (k.clone(), v.clone())).collect();
                    for (k, v) in team {
                        c.users.insert(UserKey { account: b.clone(), ..k }, v);
                    }
                }
            }
        }
        1 => {
            if let Some(a) = ch.pick(&non_root(c)).cloned() {
                delete_subtree(c, &a);
            }
        }
        2 => {
            if let Some(a) = ch.pick(&non_root(c)).cloned() {
                let sub: BTreeSet<Name> = c.accounts.subtree(a.as_str()).into_iter().cloned().collect();
                let cur = c.accounts.parent(a.as_str()).cloned();
                let cands: Vec<Name> = c
                    .accounts
                    .names()
                    .into_iter()
                    .filter(|p| !sub.contains(*p) && Some(*p) != cur.as_ref())
                    .cloned()
                    .collect();
                if let Some(p) = ch.pick(&cands) {
                    c.accounts.reparent(a.as_str(), p.as_str()).unwrap();
                }
            }
        }
        3 => {
            let accts: Vec<Name> = c.accounts.names().into_iter().cloned().collect();
            if let Some(a) = ch.pick(&accts).cloned() {
                let new = if a.as_str() == "root" {
                    gen_root_assoc(ch, &pool)
                } else {
                    let mut x = c.accounts.get(a.as_str()).unwrap().assoc.clone();
                    x.qos = gen_qos_list(ch, &pool);
                    x.default_qos = gen_default(ch, &pool);
                    x
                };
                c.accounts.get_mut(a.as_str()).unwrap().assoc.qos = new.qos.clone();
                c.accounts.get_mut(a.as_str()).unwrap().assoc.default_qos = new.default_qos.clone();
            }
        }
        4 => {
            // swap: qos=Y defaultqos=Y on an account (users with own defaults get repaired)
            if let (Some(a), Some(y)) = (ch.pick(&non_root(c)).cloned(), ch.pick(&pool).cloned()) {
                let node = c.accounts.get_mut(a.as_str()).unwrap();
                node.assoc.qos = QosList::Set([y.clone()].into());
                node.assoc.default_qos = Some(y);
            }
        }
        5 => {
            let accts: Vec<Name> = c.accounts.names().into_iter().cloned().collect();
            if let Some(a) = ch.pick(&accts).cloned() {
                c.accounts.get_mut(a.as_str()).unwrap().assoc.limits = gen_limits(ch);
            }
        }
        6 => {
            let keys: Vec<UserKey> = c.users.keys().cloned().collect();
            if let Some(k) = ch.pick(&keys) {
                c.users.get_mut(k).unwrap().limits = gen_limits(ch);
            }
        }
        7 => add_user_assoc(ch, c, &pool, None),
        8 => {
            let keys: Vec<UserKey> = c.users.keys().cloned().collect();
            if let Some(k) = ch.pick(&keys) {
                c.users.remove(k);
            }
        }
        9 => {
            let users: Vec<Name> = c.defaults.keys().cloned().collect();
            if let Some(u) = ch.pick(&users).cloned() {
                let accts: Vec<Name> = c.user_accounts(u.as_str()).into_iter().map(|k| k.account.clone()).collect();
                if let Some(a) = ch.pick(&accts) {
                    c.defaults.insert(u, a.clone());
                }
            }
        }
        10 => {
            // delete an account that is some user's default
            let defs: Vec<Name> = c.defaults.values().filter(|a| a.as_str() != "root").cloned().collect();
            if let Some(a) = ch.pick(&defs).cloned() {
                delete_subtree(c, &a);
            }
        }
        _ => {
            let keys: Vec<UserKey> = c.users.keys().cloned().collect();
            if let Some(k) = ch.pick(&keys) {
                let a = c.users.get_mut(k).unwrap();
                a.qos = gen_qos_list(ch, &pool);
                a.default_qos = gen_default(ch, &pool);
            }
        }
    }
}

fn gen_desired(ch: &mut Ch, current: &State) -> State {
    let mut s = current.clone();
    for _ in 0..1 + ch.below(7) {
        mutate(ch, &mut s);
    }
    repair(ch, &mut s);
    // records of new accounts: sometimes declared, sometimes left to sacctmgr's defaults
    let names: BTreeSet<Name> =
        s.clusters.values().flat_map(|c| c.accounts.names().into_iter().cloned().collect::<Vec<_>>()).collect();
    for a in names {
        if !s.accounts.contains_key(&a) && ch.chance(50) {
            let description = ch.chance(50).then(|| format!("{a}-new"));
            let organization = ch.chance(50).then(|| "org-z".to_string());
            s.accounts.insert(a, AccountRecord { description, organization });
        }
    }
    s
}

/// Every QoS named anywhere exists.
fn qos_refs_ok(s: &State) -> bool {
    let ok = |a: &Assoc| {
        let set_ok = match &a.qos {
            QosList::Inherit => true,
            QosList::Set(x) => x.iter().all(|q| s.qos.contains_key(q)),
            QosList::Delta { add, remove } => add.iter().chain(remove).all(|q| s.qos.contains_key(q)),
        };
        set_ok && a.default_qos.as_ref().is_none_or(|q| s.qos.contains_key(q))
    };
    s.clusters.values().all(|c| c.accounts.iter_sorted().iter().all(|(_, _, a)| ok(a)) && c.users.values().all(ok))
}

/// Two independent choice streams, so that a long current state cannot starve the mutations.
fn gen_pair((cur, des): &(Vec<u8>, Vec<u8>)) -> (State, State) {
    let current = gen_current(&mut Ch { data: cur, i: 0 });
    let desired = gen_desired(&mut Ch { data: des, i: 0 }, &current);
    (current, desired)
}

// ---------------------------------------------------------------------------------------------
// Compact text form (describe / parse_spec)
// ---------------------------------------------------------------------------------------------

fn qos_list_str(q: &QosList) -> String {
    match q {
        QosList::Inherit => "inherit".into(),
        QosList::Set(s) => s.iter().map(Name::as_str).collect::<Vec<_>>().join(","),
        QosList::Delta { add, remove } => add
            .iter()
            .map(|q| format!("+{q}"))
            .chain(remove.iter().map(|q| format!("-{q}")))
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn assoc_str(a: &Assoc) -> String {
    let mut s = format!("qos={} def={}", qos_list_str(&a.qos), a.default_qos.as_ref().map(Name::as_str).unwrap_or("-"));
    if a.limits != Limits::default() {
        s.push_str(&format!(" lim={}", serde_json::to_string(&a.limits).unwrap()));
    }
    s
}

/// One line per object: `qos`, `record`, `cluster`, `account NAME PARENT ...`,
/// `user USER ACCOUNT PARTITION|- ...`, `default USER ACCOUNT`.
pub fn describe(s: &State) -> String {
    let mut out = String::new();
    for (name, q) in &s.qos {
        out.push_str(&format!("qos {name} {}\n", serde_json::to_string(q).unwrap()));
    }
    for (name, r) in &s.accounts {
        out.push_str(&format!("record {name} {}\n", serde_json::to_string(r).unwrap()));
    }
    for (cname, c) in &s.clusters {
        out.push_str(&format!("cluster {cname}\n"));
        let mut order: Vec<(usize, &Name)> =
            c.accounts.names().into_iter().map(|a| (c.accounts.depth(a.as_str()), a)).collect();
        order.sort();
        for (_, a) in order {
            let p = c.accounts.parent(a.as_str()).map(Name::as_str).unwrap_or("-");
            out.push_str(&format!("account {a} {p} {}\n", assoc_str(&c.accounts.get(a.as_str()).unwrap().assoc)));
        }
        for (k, a) in &c.users {
            let p = k.partition.as_ref().map(Name::as_str).unwrap_or("-");
            out.push_str(&format!("user {} {} {p} {}\n", k.user, k.account, assoc_str(a)));
        }
        for (u, a) in &c.defaults {
            out.push_str(&format!("default {u} {a}\n"));
        }
    }
    out
}

fn parse_assoc(words: &[&str]) -> Assoc {
    let mut a = Assoc::default();
    for w in words {
        let (k, v) = w.split_once('=').unwrap();
        match k {
            "qos" if v == "inherit" => a.qos = QosList::Inherit,
            "qos" if v.starts_with(['+', '-']) => {
                let (mut add, mut remove) = (BTreeSet::new(), BTreeSet::new());
                for q in v.split(',') {
                    match q.split_at(1) {
                        ("+", x) => add.insert(n(x)),
                        (_, x) => remove.insert(n(x)),
                    };
                }
                a.qos = QosList::Delta { add, remove };
            }
            "qos" => a.qos = QosList::Set(v.split(',').map(n).collect()),
            "def" if v == "-" => a.default_qos = None,
            "def" => a.default_qos = Some(n(v)),
            "lim" => a.limits = serde_json::from_str(v).unwrap(),
            _ => panic!("unknown assoc word {w}"),
        }
    }
    a
}

/// Inverse of [`describe`].
pub fn parse_spec(text: &str) -> State {
    let mut s = State::default();
    type Items = Vec<(Name, Option<Name>, Assoc)>;
    let mut clusters: Vec<(Name, Items, ClusterState)> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w[0] {
            "qos" => {
                s.qos.insert(n(w[1]), serde_json::from_str(w[2]).unwrap());
            }
            "record" => {
                s.accounts.insert(n(w[1]), serde_json::from_str(w[2]).unwrap());
            }
            "cluster" => clusters.push((n(w[1]), Vec::new(), ClusterState::default())),
            "account" => {
                let parent = (w[2] != "-").then(|| n(w[2]));
                clusters.last_mut().unwrap().1.push((n(w[1]), parent, parse_assoc(&w[3..])));
            }
            "user" => {
                let partition = (w[3] != "-").then(|| n(w[3]));
                let key = UserKey { user: n(w[1]), account: n(w[2]), partition };
                clusters.last_mut().unwrap().2.users.insert(key, parse_assoc(&w[4..]));
            }
            "default" => {
                clusters.last_mut().unwrap().2.defaults.insert(n(w[1]), n(w[2]));
            }
            other => panic!("unknown line kind {other}"),
        }
    }
    for (cname, items, mut c) in clusters {
        c.accounts = AccountGraph::build(items).unwrap();
        s.clusters.insert(cname, c);
    }
    s
}

// ---------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------

fn show(current: &State, desired: &State) -> String {
    format!("--- current\n{}--- desired\n{}", describe(current), describe(desired))
}

fn show_plan(plan: &Plan) -> String {
    plan.steps.iter().map(|s| format!("  {:>2}. {}\n", s.number, s.argv.join(" "))).collect()
}

fn check_argv(argv: &[String]) -> Result<(), String> {
    let line = argv.join(" ");
    if argv.len() < 4 || argv[0] != "sacctmgr" || argv[1] != "-i" {
        return Err(format!("argv does not start with `sacctmgr -i`: {line}"));
    }
    if matches!(argv[2].as_str(), "modify" | "delete") {
        let ok = argv.windows(2).any(|w| w[0] == "where" && w[1].starts_with("name=") && w[1].len() > 5);
        if !ok {
            return Err(format!("modify/delete without `where name=...`: {line}"));
        }
    }
    if argv[3] != "qos" && !argv.iter().any(|w| w.starts_with("cluster=") && w.len() > 8) {
        return Err(format!("association command without `cluster=`: {line}"));
    }
    Ok(())
}

/// All properties of one (current, desired) pair; `Err` carries a full report.
fn check_pair(current: &State, desired: &State) -> Result<Plan, String> {
    let ctx = || show(current, desired);
    for (what, s) in [("current", current), ("desired", desired)] {
        let errs = check_state(s);
        if !errs.is_empty() || !qos_refs_ok(s) {
            return Err(format!("generator produced an invalid {what} state: {errs:?}\n{}", ctx()));
        }
        if !diff(s, s).is_empty() {
            return Err(format!("diff({what}, {what}) is not empty\n{}", ctx()));
        }
        let p = make_plan(s, s, "x").map_err(|e| format!("make_plan({what}, {what}) failed: {e}\n{}", ctx()))?;
        if !p.steps.is_empty() || !p.changes.is_empty() {
            return Err(format!("make_plan({what}, {what}) is not empty:\n{}{}", show_plan(&p), ctx()));
        }
    }
    let plan = make_plan(current, desired, "x").map_err(|e| format!("make_plan failed: {e}\n{}", ctx()))?;
    let again = make_plan(current, desired, "x").map_err(|e| format!("second make_plan failed: {e}"))?;
    if plan != again {
        return Err(format!("make_plan is not deterministic\n{}", ctx()));
    }
    let mut sim = RuleModel::new(current.clone());
    for step in &plan.steps {
        let line = step.argv.join(" ");
        if step.argv != step.command.argv() {
            return Err(format!("step {} argv differs from its command's argv: {line}", step.number));
        }
        check_argv(&step.argv)
            .map_err(|e| format!("step {}: {e}\nplan:\n{}{}", step.number, show_plan(&plan), ctx()))?;
        let before = sim.state.clone();
        sim.apply(&step.command).map_err(|e| {
            format!(
                "step {} refused by the simulator: {e}\n  {line}\nplan:\n{}{}",
                step.number,
                show_plan(&plan),
                ctx()
            )
        })?;
        let errs = check_state(&sim.state);
        if !errs.is_empty() {
            return Err(format!(
                "step {} leaves an invalid state: {errs:?}\n  {line}\nplan:\n{}{}",
                step.number,
                show_plan(&plan),
                ctx()
            ));
        }
        if sim.state == before {
            return Err(format!("step {} is a no-op: {line}\nplan:\n{}{}", step.number, show_plan(&plan), ctx()));
        }
    }
    let rest = diff(&sim.state, desired);
    if !rest.is_empty() {
        return Err(format!(
            "after applying the plan the state still differs from desired: {:?}\nplan:\n{}{}--- final\n{}",
            rest,
            show_plan(&plan),
            ctx(),
            describe(&sim.state)
        ));
    }
    Ok(plan)
}

/// 256 cases by default; `PROPTEST_CASES=N` runs more (e.g. for a long local search).
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        max_shrink_iters: 20_000,
        // failures are kept as explicit regression tests below, in readable form
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn bytes() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (prop::collection::vec(any::<u8>(), 0..400), prop::collection::vec(any::<u8>(), 0..200))
}

proptest! {
    #![proptest_config(config())]

    /// The key property: every plan between two valid states replays step by step on the
    /// simulator, keeps every invariant after every step, emits no no-op and converges.
    #[test]
    fn plans_are_safe_and_converge(data in bytes()) {
        let (current, desired) = gen_pair(&data);
        if let Err(e) = check_pair(&current, &desired) {
            return Err(TestCaseError::fail(e));
        }
    }

    /// A plan written to a plan file and read back is the same plan, and is written back to
    /// the same bytes: whole-state (format 1), scoped (format 2) and unbatched.
    #[test]
    fn plans_round_trip_through_the_plan_file(data in bytes()) {
        use slurmplan::plan::{Covers, diff_states, file, order, unbatch};
        let (mut current, mut desired) = gen_pair(&data);
        let Ok(whole) = make_plan(&current, &desired, "x") else { return Ok(()) };
        let mut single = whole.clone();
        unbatch(&mut single);
        add_unmanaged(&mut current);
        add_unmanaged(&mut desired);
        let managed = managed_of(&current, &desired);
        let scoped = order(diff_states(&current, &desired, Covers::Managed(&managed)), &current, &desired, "x").ok();
        let path = std::path::Path::new("plan.json");
        for plan in [Some(whole), Some(single), scoped].into_iter().flatten() {
            let text = file::to_json(&plan);
            let back = file::from_json(path, &text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(&back, &plan);
            prop_assert_eq!(file::to_json(&back), text);
        }
    }

    /// `fake_argv::from_argv` is the exact inverse of `Command::argv` on every planned command.
    #[test]
    fn argv_round_trips(data in bytes()) {
        let (current, desired) = gen_pair(&data);
        if let Ok(plan) = make_plan(&current, &desired, "x") {
            for step in &plan.steps {
                let back = fake_argv::from_argv(&step.argv);
                prop_assert_eq!(back.as_ref(), Ok(&step.command), "argv: {}", step.argv.join(" "));
                // argv[0] may be a substituted path
                let mut argv = step.argv.clone();
                argv[0] = "/usr/bin/sacctmgr".into();
                prop_assert_eq!(fake_argv::from_argv(&argv), Ok(step.command.clone()));
            }
        }
    }
}

/// An account outside the managed scope, with users of its own, added to both states of a pair
/// (the planner carries it as it is).
fn add_unmanaged(s: &mut State) {
    for c in s.clusters.values_mut() {
        c.accounts.insert(n("zz_other"), "root", Assoc::default()).unwrap();
        for u in ["zz_u1", "zz_u2"] {
            c.users.insert(UserKey { account: n("zz_other"), user: n(u), partition: None }, Assoc::default());
            c.defaults.insert(n(u), n("zz_other"));
        }
    }
    s.accounts
        .insert(n("zz_other"), AccountRecord { description: Some("other".into()), organization: Some("o".into()) });
}

/// A write by another tool outside the scope, chosen by `k`: a new user under the unmanaged
/// account, new limits on it, a new account below it, or the removal of one of its users.
fn unrelated_write(s: &mut State, k: u8) {
    for c in s.clusters.values_mut() {
        match k % 4 {
            0 => {
                c.users.insert(UserKey { account: n("zz_other"), user: n("zz_u3"), partition: None }, Assoc::default());
                c.defaults.insert(n("zz_u3"), n("zz_other"));
            }
            1 => {
                let node = c.accounts.get_mut("zz_other").unwrap();
                node.assoc =
                    AssocData { limits: Limits { grp_jobs: Some(7), ..Limits::default() }, ..AssocData::default() }
                        .into();
            }
            2 => c.accounts.insert(n("zz_sub"), "zz_other", Assoc::default()).unwrap(),
            _ => {
                c.users.remove(&UserKey { account: n("zz_other"), user: n("zz_u2"), partition: None });
                c.defaults.remove("zz_u2");
            }
        }
    }
    if k % 4 == 2 {
        s.accounts
            .insert(n("zz_sub"), AccountRecord { description: Some("sub".into()), organization: Some("o".into()) });
    }
}

/// The managed accounts of a pair with [`add_unmanaged`]: every account but `root` and the
/// unmanaged subtree.
fn managed_of(current: &State, desired: &State) -> BTreeMap<Name, BTreeSet<Name>> {
    let mut m: BTreeMap<Name, BTreeSet<Name>> = BTreeMap::new();
    for s in [current, desired] {
        for (cname, c) in &s.clusters {
            let e = m.entry(cname.clone()).or_default();
            e.extend(
                c.accounts
                    .names()
                    .into_iter()
                    .filter(|a| !matches!(a.as_str(), "root" | "zz_other" | "zz_sub"))
                    .cloned(),
            );
        }
    }
    m
}

proptest! {
    #![proptest_config(config())]

    /// A saved plan whose scoped fingerprint still matches after a write elsewhere is still
    /// right: replayed on the written state it keeps every invariant after every step and
    /// converges to the desired state with the write carried along. A write inside the scope
    /// (here: a managed account's or a scoped user's association changed) changes the
    /// fingerprint, so such a plan is refused.
    #[test]
    fn a_plan_that_passes_the_scoped_check_still_converges(data in bytes(), k in any::<u8>()) {
        use slurmplan::model::fingerprint::{Scope, scoped_fingerprint};
        let (mut current, mut desired) = gen_pair(&data);
        add_unmanaged(&mut current);
        add_unmanaged(&mut desired);
        prop_assume!(check_state(&current).is_empty() && check_state(&desired).is_empty());
        let Ok(plan) = make_plan(&current, &desired, "x") else { return Ok(()) };
        let scope = Scope::of(&current, &desired, &managed_of(&current, &desired));
        let planned = scoped_fingerprint(&current, &scope);
        let (mut written, mut want) = (current.clone(), desired.clone());
        unrelated_write(&mut written, k);
        unrelated_write(&mut want, k);
        prop_assert!(written != current);
        prop_assert_eq!(scoped_fingerprint(&written, &scope), planned.clone(), "an unrelated write made the plan stale");
        let mut sim = RuleModel::new(written);
        for step in &plan.steps {
            if let Err(e) = sim.apply(&step.command) {
                return Err(TestCaseError::fail(format!("step {} refused after an unrelated write: {e}\n{}", step.number, show(&current, &desired))));
            }
            let errs = check_state(&sim.state);
            prop_assert!(errs.is_empty(), "step {} leaves {:?}", step.number, errs);
        }
        prop_assert!(diff(&sim.state, &want).is_empty(), "not converged after an unrelated write\n{}", show(&current, &desired));
        // inside the scope: every managed account's association, and every scoped user's
        for (cname, sc) in &scope.clusters {
            let Some(c) = current.clusters.get(cname) else { continue };
            if let Some(a) = sc.accounts.iter().find(|a| a.as_str() != "root" && c.accounts.contains(a.as_str())) {
                let mut inside = current.clone();
                let node = inside.clusters.get_mut(cname).unwrap().accounts.get_mut(a.as_str()).unwrap();
                node.assoc = AssocData { limits: Limits { max_jobs: Some(123_457), ..node.assoc.limits.clone() }, ..(*node.assoc).clone() }.into();
                prop_assert_ne!(scoped_fingerprint(&inside, &scope), planned.clone(), "a managed account's change went unseen");
            }
            if let Some((key, _)) = c.users.iter().find(|(key, _)| sc.users.contains(&key.user)) {
                let mut inside = current.clone();
                let key = UserKey { partition: Some(n("zzpart")), ..key.clone() };
                inside.clusters.get_mut(cname).unwrap().users.insert(key, Assoc::default());
                prop_assert_ne!(scoped_fingerprint(&inside, &scope), planned.clone(), "a scoped user's new association went unseen");
            }
        }
    }
}

/// The generator itself: it produces valid, varied pairs (guards against a vacuous property).
#[test]
fn generator_produces_varied_valid_pairs() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut with_steps = 0;
    let mut kinds: BTreeSet<String> = BTreeSet::new();
    for _ in 0..300 {
        let data = bytes().new_tree(&mut runner).unwrap().current();
        let (current, desired) = gen_pair(&data);
        assert!(check_state(&current).is_empty(), "{}", describe(&current));
        assert!(check_state(&desired).is_empty(), "{}", describe(&desired));
        assert_eq!(parse_spec(&describe(&current)), current);
        assert_eq!(parse_spec(&describe(&desired)), desired);
        if let Ok(plan) = make_plan(&current, &desired, "x") {
            if !plan.steps.is_empty() {
                with_steps += 1;
            }
            for s in &plan.steps {
                kinds.insert(format!("{:?}", s.phase));
                if s.note.is_some() {
                    kinds.insert(s.note.clone().unwrap());
                }
                if let Command::AddUser { more_accounts, default_account, .. } = &s.command
                    && !more_accounts.is_empty()
                {
                    kinds.insert(format!("AddUser to several accounts, default named: {}", default_account.is_some()));
                }
            }
        }
    }
    assert!(with_steps > 150, "only {with_steps} of 300 pairs need any step");
    eprintln!("phases/notes seen: {kinds:?}");
    for k in [
        "QosCreate",
        "AccountCreate",
        "Reparent",
        "UserAdd",
        "QosSwap",
        "Limits",
        "DefaultAccount",
        "UserRemove",
        "AccountDelete",
        "QosDelete",
        "AddUser to several accounts, default named: true",
        "AddUser to several accounts, default named: false",
    ] {
        assert!(kinds.contains(k), "phase {k} never exercised: {kinds:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Regression cases found by the properties above (hand-minimised from the shrunk output).
// ---------------------------------------------------------------------------------------------

fn assert_pair_ok(current: &str, desired: &str) {
    if let Err(e) = check_pair(&parse_spec(current), &parse_spec(desired)) {
        panic!("{e}");
    }
}

const QOS_AB: &str = r#"
qos a {"description":"a"}
qos normal {"description":"normal"}
"#;

/// BUG: a user association that is going to be removed still has its own DefaultQOS `normal`;
/// its account swaps to `qos=a defaultqos=a`. The QoS phase runs before user removals and
/// never touches the doomed association, so no order is found (make_plan returns Unsafe).
/// Safe plan: remove u1@p1 first (or set its defaultqos=-1 / widen), then swap.
#[test]
fn doomed_user_with_own_default_blocks_account_swap() {
    let current = format!(
        "{QOS_AB}
cluster c1
account root - qos=a,normal def=normal
account p1 root qos=inherit def=-
user u1 p1 - qos=inherit def=normal
user u2 p1 - qos=inherit def=-
default u1 p1
default u2 p1
"
    );
    let desired = format!(
        "{QOS_AB}
cluster c1
account root - qos=a,normal def=normal
account p1 root qos=a def=a
user u2 p1 - qos=inherit def=-
default u2 p1
"
    );
    assert_pair_ok(&current, &desired);
}

/// BUG: same with an account that is going to be deleted: p2 (doomed) has its own
/// DefaultQOS `a` and inherits its list; its parent p1 narrows to `normal`. Account deletes run
/// last, so the QoS phase is stuck (make_plan returns Unsafe).
#[test]
fn doomed_account_with_own_default_blocks_parent_qos_change() {
    let current = format!(
        "{QOS_AB}
cluster c1
account root - qos=a,normal def=normal
account p1 root qos=inherit def=-
account p2 p1 qos=inherit def=a
"
    );
    let desired = format!(
        "{QOS_AB}
cluster c1
account root - qos=a,normal def=normal
account p1 root qos=normal def=-
"
    );
    assert_pair_ok(&current, &desired);
}

/// BUG: re-parent pin misses descendants with their own QoS list. p0 has no DefaultQOS anywhere
/// above it; moving it under p2 (DefaultQOS `b`) makes u0@p0 (own `qos=a`) inherit DefaultQOS `b`.
/// The pin widens p0's list and pins p0's DefaultQOS only when it has an effective one, so the
/// re-parent step is refused (make_plan returns Unsafe). Setting p0's final `defaultqos=a` (or
/// pinning u0) before the move would be safe.
#[test]
fn reparent_under_default_breaks_user_with_own_list() {
    let current = "
qos a {\"description\":\"a\"}
qos b {\"description\":\"b\"}
qos normal {\"description\":\"normal\"}
cluster c1
account root - qos=a,b,normal def=-
account p0 root qos=inherit def=-
account p2 root qos=inherit def=b
user u0 p0 - qos=a def=-
default u0 p0
";
    let desired = "
qos a {\"description\":\"a\"}
qos b {\"description\":\"b\"}
qos normal {\"description\":\"normal\"}
cluster c1
account root - qos=a,b,normal def=-
account p2 root qos=inherit def=b
account p0 p2 qos=inherit def=a
user u0 p0 - qos=a def=-
default u0 p0
";
    assert_pair_ok(current, desired);
}

/// A small team joining several existing accounts is one `add user` naming the default they want;
/// past `CROSS_ADD_MAX_USERS` (24) it is one `add user` per account (slurmdbd adds
/// multi-account associations several times slower each).
#[test]
fn small_teams_join_several_accounts_in_one_add() {
    let adds = |team: usize| -> Vec<Command> {
        let mut desired = format!(
            "{QOS_AB}
cluster c1
account root - qos=normal def=normal
account x root qos=inherit def=-
account y root qos=inherit def=-
account z root qos=inherit def=-
"
        );
        for i in 0..team {
            desired.push_str(&format!("user t{i:02} x - qos=inherit def=-\nuser t{i:02} y - qos=inherit def=-\n"));
            desired.push_str(&format!("user t{i:02} z - qos=inherit def=-\ndefault t{i:02} y\n"));
        }
        // the accounts exist already: new accounts with this many users would be one `load`
        let current = format!(
            "{QOS_AB}\ncluster c1\naccount root - qos=normal def=normal\naccount x root qos=inherit def=-\n\
             account y root qos=inherit def=-\naccount z root qos=inherit def=-\n"
        );
        let plan = check_pair(&parse_spec(&current), &parse_spec(&desired)).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !plan.steps.iter().any(|s| matches!(s.command, Command::SetDefaultAccount { .. })) || team > 24,
            "the add should name the wanted default"
        );
        plan.steps.into_iter().map(|s| s.command).filter(|c| matches!(c, Command::AddUser { .. })).collect()
    };
    let small = adds(24);
    assert_eq!(small.len(), 1, "{small:?}");
    let Command::AddUser { account, more_accounts, default_account, users, .. } = &small[0] else { unreachable!() };
    assert_eq!((account.as_str(), users.len()), ("y", 24));
    assert_eq!(more_accounts.iter().map(|a| a.as_str()).collect::<Vec<_>>(), ["x", "z"]);
    assert_eq!(default_account.as_ref().map(|a| a.as_str()), Some("y"));
    let large = adds(25);
    assert_eq!(large.len(), 3, "{large:?}");
    assert!(large.iter().all(
        |c| matches!(c, Command::AddUser { more_accounts, default_account: None, .. } if more_accounts.is_empty())
    ));
}

/// BUG (found by `plans_are_safe_and_converge`): moving `p2` under `p3` (DefaultQOS `normal`)
/// widened the list of a user below it that the diff did not name (`u0@p0`: `paused` ->
/// `normal,paused`) so its inherited DefaultQOS stayed valid; the QoS phase only looked at
/// what the diff named, so the widened list was never returned to `paused`.
#[test]
fn list_widened_for_a_move_returns_to_its_desired_value() {
    let current = format!(
        "{QOS_AB}qos paused {{\"description\":\"paused\"}}
cluster c1
account root - qos=normal def=-
account p2 root qos=inherit def=-
account p3 root qos=inherit def=normal
account p0 p2 qos=inherit def=-
user u0 p0 - qos=paused def=-
default u0 p0
"
    );
    let desired = format!(
        "{QOS_AB}qos paused {{\"description\":\"paused\"}}
cluster c1
account root - qos=normal def=-
account p3 root qos=paused def=paused
account p2 p3 qos=inherit def=-
account p0 p2 qos=inherit def=-
user u0 p0 - qos=paused def=-
default u0 p0
"
    );
    assert_pair_ok(&current, &desired);
}

/// BUG (found by `plans_are_safe_and_converge`): `p0` removes `b` from what it inherits
/// (`qos=-b`); its parent `p2` moves under `p3` (DefaultQOS `b`) and `p0` would inherit `b` as
/// its DefaultQOS outside its list. The move's widening handled explicit lists only, so no
/// safe order was found; a `-b` delta is now widened to an explicit list holding `b`.
#[test]
fn delta_list_below_a_move_is_widened() {
    let current = format!(
        "{QOS_AB}qos b {{\"description\":\"b\"}}
cluster c1
account root - qos=normal def=-
account p2 root qos=inherit def=-
account p3 root qos=b def=b
account p0 p2 qos=-b def=-
user u0 p0 - qos=inherit def=-
default u0 p0
"
    );
    let desired = format!(
        "{QOS_AB}qos b {{\"description\":\"b\"}}
cluster c1
account root - qos=normal def=-
account p3 root qos=b def=b
account p2 p3 qos=inherit def=-
account p0 p2 qos=inherit def=-
user u0 p0 - qos=inherit def=-
default u0 p0
"
    );
    assert_pair_ok(&current, &desired);
}

/// BUG (found by `plans_are_safe_and_converge`): moving `p0` (explicit list `a`, no
/// DefaultQOS) under `p1` (DefaultQOS `paused`) pinned its list to `a,paused` and then
/// "widened" `p0` itself to the same list again: a no-op step. Only what is below the moved
/// account is widened now.
#[test]
fn moved_account_is_pinned_once() {
    let current = format!(
        "{QOS_AB}qos paused {{\"description\":\"paused\"}}
cluster c1
account root - qos=normal def=-
account p0 root qos=a def=-
account p1 root qos=paused def=paused
user u1 p0 - qos=-a def=-
default u1 p0
"
    );
    let desired = format!(
        "{QOS_AB}qos paused {{\"description\":\"paused\"}}
cluster c1
account root - qos=normal def=-
account p1 root qos=paused def=paused
account p0 p1 qos=a def=a
user u1 p0 - qos=inherit def=-
default u1 p0
"
    );
    assert_pair_ok(&current, &desired);
}

/// Slurm 22.05 refuses `set defaultqos=b` on an account while a user row under it has its own
/// list without `b`, even with a DefaultQOS of its own (tests/data/differential/2205-2-refused,
/// 2205-219-refused). Here u0 keeps its own list [a] and takes DefaultQOS `a` while p0 swaps to
/// [b] with `b`: u0's list takes `b` first, and gets its final value after p0.
#[test]
fn user_list_takes_the_accounts_new_default_until_the_account_has_it() {
    let qos = "qos a {\"description\":\"a\"}\nqos b {\"description\":\"b\"}\nqos normal {\"description\":\"normal\"}\n";
    let current = format!(
        "{qos}cluster c1
account root - qos=normal def=-
account p0 root qos=inherit def=-
user u0 p0 - qos=a def=-
default u0 p0
"
    );
    let desired = format!(
        "{qos}cluster c1
account root - qos=normal def=-
account p0 root qos=b def=b
user u0 p0 - qos=a def=a
default u0 p0
"
    );
    assert_pair_ok(&current, &desired);
}

/// BUG (found by `plans_are_safe_and_converge` in CI): an account moves to a new parent and
/// takes a new DefaultQOS; a user row under it has its own list without that QoS. The
/// re-parent phase gave the account its final QoS before the move without asking whether
/// Slurm 22.05 takes that command with the user rows under it (it does not: the row lacks the
/// new DefaultQOS), so no order was found. Safe plan: pin, move, then the QoS phase widens the
/// row, sets the account and returns the row to its list.
#[test]
fn reparent_with_new_default_over_user_row_with_own_list() {
    let qos = "qos a {\"description\":\"a\"}
qos normal {\"description\":\"normal\"}
qos paused {\"description\":\"paused\"}
";
    let current = format!(
        "{qos}cluster c1
account root - qos=normal def=-
account p1 root qos=a,normal def=a
account p2 p1 qos=inherit def=a
user u0 p2 - qos=paused def=paused
default u0 p2
"
    );
    let desired = format!(
        "{qos}cluster c1
account root - qos=normal def=-
account p1 root qos=a,normal def=a
account p2 root qos=inherit def=normal
user u0 p2 - qos=paused def=paused
default u0 p2
"
    );
    assert_pair_ok(&current, &desired);
}

/// Found by `plans_are_safe_and_converge` (20,000 cases): `p2` stores `+paused,-c` and moves
/// under `p5`, which inherits `c` with DefaultQOS `c` from `p3`; QoS `c` is deleted (which strips
/// the `-c`, so the desired delta is `+paused`). Under `p5`, `p2`'s list would be `paused`
/// with `c` inherited as DefaultQOS, so the move needs a pin first.
#[test]
fn delta_moved_under_a_default_it_removes_is_pinned() {
    let current = "qos a {\"description\":\"a\"}
qos c {\"description\":\"c\"}
qos normal {\"description\":\"normal\"}
qos paused {\"description\":\"paused\"}
cluster c1
account root - qos=normal def=normal
account p0 root qos=inherit def=-
account p2 p0 qos=+paused,-c def=-
account p3 p0 qos=c def=c
account p5 p3 qos=inherit def=-
user u0 p0 - qos=inherit def=-
default u0 p0
"
    .to_string();
    let desired = "qos a {\"description\":\"a\"}
qos normal {\"description\":\"normal\"}
qos paused {\"description\":\"paused\"}
cluster c1
account root - qos=normal def=normal
account p0 root qos=inherit def=-
account p3 p0 qos=inherit def=-
account p5 p3 qos=inherit def=-
account p2 p5 qos=+paused def=-
user u0 p0 - qos=inherit def=-
default u0 p0
"
    .to_string();
    assert_pair_ok(&current, &desired);
}

/// Found by `.ci/run`'s 4,000 cases: the same with the move straight under the account that
/// has the DefaultQOS (`p0`: `+normal,-c` under `p1`: `c`); the final QoS first is no way out,
/// as `+normal` written on `+normal,-c` leaves the `-c`.
#[test]
fn delta_moved_under_the_default_it_removes_is_pinned() {
    let current = "qos a {\"description\":\"a\"}
qos c {\"description\":\"c\"}
qos normal {\"description\":\"normal\"}
cluster c1
account root - qos=normal def=normal
account p0 root qos=+normal,-c def=-
account p1 root qos=c def=c
account p2 p0 qos=inherit def=-
"
    .to_string();
    let desired = "qos a {\"description\":\"a\"}
qos normal {\"description\":\"normal\"}
cluster c1
account root - qos=normal def=normal
account p1 root qos=a def=a
account p0 p1 qos=+normal def=-
account p2 p0 qos=inherit def=-
"
    .to_string();
    assert_pair_ok(&current, &desired);
}

/// Found by `plans_are_safe_and_converge` (20,000 cases): `p0` stores `+b,+c,-a,-paused` and is
/// to store `+b,-a,-paused` (an undo's target; `c` stays), which takes clearing its list first;
/// cleared, it would leave `u1` (DefaultQOS `b` of its own, inheriting `p0`'s list) without `b`.
/// `u1` gets an explicit list first and inherits again after.
#[test]
fn clearing_a_delta_widens_the_user_rows_it_would_break() {
    let current = "qos a {\"description\":\"a\"}
qos b {\"description\":\"b\"}
qos c {\"description\":\"c\"}
qos normal {\"description\":\"normal\"}
qos paused {\"description\":\"paused\"}
cluster c1
account root - qos=normal def=-
account p0 root qos=+b,+c,-a,-paused def=-
user u1 p0 - qos=inherit def=b
default u1 p0
"
    .to_string();
    let desired = current.replace("account p0 root qos=+b,+c,-a,-paused", "account p0 root qos=+b,-a,-paused");
    assert_pair_ok(&current, &desired);
}

// ---------------------------------------------------------------------------------------------
// Scoped reads: a plan made from some clusters alone stands only when it is the whole plan
// ---------------------------------------------------------------------------------------------

/// What planning one cluster of a two-cluster pair from that cluster alone gave.
#[derive(Debug, PartialEq, Eq)]
enum ScopedOutcome {
    /// The scoped plan asked nothing more of the other cluster, and it is the whole plan, byte
    /// for byte; `users_read`: it asked about users first, whose associations were then read.
    Stood { steps: usize, users_read: bool },
    /// It asked something of the other cluster (or was refused): the whole read is taken.
    FellBack,
}

/// `plan --cluster C` on a two-cluster site, made from the whole state and from cluster C's
/// read alone (`pipeline::plan_scoped`'s attempts; the other cluster as the resolved desired
/// state has it: copied from the current one). When the scoped plan asks about some users, their
/// associations on the other cluster are read (here: looked up in the whole state, as the
/// filtered read answers) and it plans again, as the pipeline does. A scoped plan that asked
/// nothing more of the other cluster must be the whole plan, byte for byte, in its plan file.
fn scoped_plan_matches(current: &State, desired: &State, scope: &Name) -> Result<ScopedOutcome, String> {
    use slurmplan::plan::{Covers, PastScope, Unread, diff_states_scoped, file, order_scoped};
    let others: BTreeSet<Name> = current.clusters.keys().filter(|c| *c != scope).cloned().collect();
    let mut whole_desired = desired.clone();
    for o in &others {
        whole_desired.clusters.insert(o.clone(), current.clusters[o].clone());
    }
    let mut managed = managed_of(current, desired);
    managed.retain(|c, _| c == scope);
    let only = |s: &State| {
        let mut s = s.clone();
        s.clusters.retain(|c, _| c == scope);
        s
    };
    let (scoped_current, scoped_desired) = (only(current), only(&whole_desired));
    let plan_of = |current: &State, desired: &State, unread: Unread| {
        order_scoped(diff_states_scoped(current, desired, Covers::Managed(&managed), unread), current, desired, "x")
    };
    let mut unread = Unread::clusters(others.clone());
    let mut rounds = 0;
    let plan = loop {
        match plan_of(&scoped_current, &scoped_desired, unread.clone()) {
            Ok((plan, past)) if past.is_empty() => break plan,
            Ok((_, PastScope { whole: None, users, .. }))
                if rounds < slurmplan::pipeline::USER_ROUNDS
                    && users.iter().all(|u| slurmplan::sacctmgr::reads::filterable_user(u.as_str())) =>
            {
                rounds += 1;
                for u in users {
                    let elsewhere = others.iter().any(|o| current.clusters[o].users.keys().any(|k| k.user == u));
                    if elsewhere {
                        unread.users_elsewhere.insert(u.clone());
                    }
                    unread.users_asked.insert(u);
                }
            }
            Ok(_) | Err(_) => return Ok(ScopedOutcome::FellBack),
        }
    };
    match plan_of(current, &whole_desired, Unread::default()) {
        Ok((w, past)) if past.is_empty() && file::to_json(&w) == file::to_json(&plan) => {
            Ok(ScopedOutcome::Stood { steps: plan.steps.len(), users_read: rounds > 0 })
        }
        Ok((w, _)) => Err(format!(
            "scope {scope}: the scoped plan (after {rounds} reads of users) differs from the whole plan\nscoped:\n{}\nwhole:\n{}\ncurrent:\n{}\ndesired:\n{}",
            file::to_json(&plan),
            file::to_json(&w),
            describe(current),
            describe(desired)
        )),
        Err(e) => Err(format!(
            "scope {scope}: the scoped plan stood but the whole state refuses it: {e}\ncurrent:\n{}\ndesired:\n{}",
            describe(current),
            describe(desired)
        )),
    }
}

/// The cross-cluster shapes the small pairs never reach, chosen by `k`: on `c1`, a new
/// project with enough associations for a `load` (its users new, or one of them known only on
/// `c2`), and the removal of the last `c1` row of a user whose name has a `_` (kept on `c2`, or
/// gone everywhere beside a name its `LIKE` pattern matches there).
fn cross_cluster_shapes(k: u8, current: &mut State, desired: &mut State) {
    let (c1, c2) = (n("c1"), n("c2"));
    if k & 1 == 1 {
        let d = desired.clusters.get_mut(&c1).unwrap();
        d.accounts.insert(n("newproj"), "root", Assoc::default()).unwrap();
        let known_elsewhere = (k & 2 == 2).then(|| n("o_only"));
        if let Some(u) = &known_elsewhere {
            for s in [&mut *current, &mut *desired] {
                put_user(s.clusters.get_mut(&c2).unwrap(), u);
            }
        }
        let d = desired.clusters.get_mut(&c1).unwrap();
        for i in 0..22 {
            let user = if i == 0 { known_elsewhere.clone().unwrap_or_else(|| n("nu0")) } else { n(&format!("nu{i}")) };
            d.users.insert(UserKey { account: n("newproj"), user: user.clone(), partition: None }, Assoc::default());
            d.defaults.insert(user, n("newproj"));
        }
        desired.accounts.insert(n("newproj"), AccountRecord { description: Some("np".into()), organization: None });
    }
    if k & 4 == 4 {
        let leaving = n("w_y");
        put_user(current.clusters.get_mut(&c1).unwrap(), &leaving);
        let other = if k & 8 == 8 { leaving } else { n("wzy") };
        for s in [&mut *current, &mut *desired] {
            put_user(s.clusters.get_mut(&c2).unwrap(), &other);
        }
    }
}

/// A row of `user` under the cluster's first account below root (or root), as its DefaultAccount.
fn put_user(c: &mut ClusterState, user: &Name) {
    let account = non_root(c).first().cloned().unwrap_or_else(|| n("root"));
    c.users.insert(UserKey { account: account.clone(), user: user.clone(), partition: None }, Assoc::default());
    c.defaults.insert(user.clone(), account);
}

/// Every two-cluster pair, planned for each cluster alone.
fn scoped_outcomes(data: &(Vec<u8>, Vec<u8>)) -> Result<Vec<ScopedOutcome>, String> {
    let (mut current, mut desired) = gen_pair(data);
    if current.clusters.len() < 2 {
        return Ok(Vec::new());
    }
    let k = data.1.first().copied().unwrap_or(0);
    cross_cluster_shapes(k, &mut current, &mut desired);
    if !check_state(&current).is_empty() || !check_state(&desired).is_empty() {
        return Ok(Vec::new());
    }
    current.clusters.keys().map(|scope| scoped_plan_matches(&current, &desired, scope)).collect()
}

proptest! {
    #![proptest_config(config())]

    /// A plan of some clusters made from their read alone is used only when it asked nothing
    /// of the others (`RuleModel::scoped`); then it is the plan of the whole state.
    #[test]
    fn a_scoped_plan_that_stands_is_the_whole_plan(data in bytes()) {
        scoped_outcomes(&data).map_err(TestCaseError::fail)?;
    }
}

/// The same property over a fixed stream of generated pairs, counting: it must not be vacuous
/// (scoped plans with steps stand, and others fall back to the whole read).
#[test]
fn scoped_plans_stand_with_steps_and_fall_back_when_they_ask() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut stood_with_steps, mut stood_empty, mut fell_back, mut users_read) = (0, 0, 0, 0);
    for _ in 0..2500 {
        let cur: Vec<u8> = (0..400).map(|_| next() as u8).collect();
        let des: Vec<u8> = (0..200).map(|_| next() as u8).collect();
        for o in scoped_outcomes(&(cur, des)).unwrap_or_else(|e| panic!("{e}")) {
            match o {
                ScopedOutcome::Stood { steps: 0, .. } => stood_empty += 1,
                ScopedOutcome::Stood { users_read: read, .. } => {
                    stood_with_steps += 1;
                    users_read += read as usize;
                }
                ScopedOutcome::FellBack => fell_back += 1,
            }
        }
    }
    eprintln!(
        "scoped plans: {stood_with_steps} stood with steps ({users_read} after reading users), {stood_empty} stood empty, {fell_back} fell back"
    );
    assert!(
        stood_with_steps > 50 && users_read > 50 && fell_back > 50,
        "{stood_with_steps} stood with steps ({users_read} after reading users), {fell_back} fell back"
    );
}

/// Found by `.ci/run`'s 4000 cases on 2026-12-07: an account swaps from the inherited `normal`
/// to `qos=b defaultqos=b` while its user `u0` moves its own DefaultQOS from `normal` to `b`,
/// beside a user with a delta list (`+normal,-b,-paused`) and a user who goes.
#[test]
fn account_swap_with_a_user_moving_its_own_default_beside_a_delta_user() {
    let qos = r#"
qos a {"description":"a"}
qos b {"description":"b"}
qos c {"description":"c"}
qos normal {"description":"normal"}
qos paused {"description":"paused"}
record p0 {"description":"p0","organization":"p0"}
record root {"description":"root","organization":"root"}
"#;
    let current = format!(
        "{qos}
cluster c1
account root - qos=normal def=-
account p0 root qos=inherit def=normal
user u0 p0 - qos=inherit def=normal lim={{\"grp_tres_mins\":{{\"mem\":1024}}}}
user u1 p0 - qos=inherit def=-
user u2 p0 - qos=inherit def=- lim={{\"max_wall\":30}}
user u3 p0 - qos=+normal,-b,-paused def=normal
default u0 p0
default u1 p0
default u2 p0
default u3 p0
"
    );
    let desired = format!(
        "{qos}
cluster c1
account root - qos=normal def=-
account p0 root qos=b def=b
user u0 p0 - qos=inherit def=b lim={{\"grp_tres_mins\":{{\"mem\":1024}}}}
user u2 p0 - qos=inherit def=- lim={{\"max_wall\":30}}
user u3 p0 - qos=+normal,-b,-paused def=normal
default u0 p0
default u2 p0
default u3 p0
"
    );
    assert_pair_ok(&current, &desired);
}

/// Found by `.ci/run`'s 4000 property cases on 2026-12-07 (second run): `p0` swaps
/// `b,normal`/`normal` for `paused`/`paused` while its child `p2`, whose list is the delta
/// `-normal`, drops its own DefaultQOS `b` to inherit `paused`; `u0` sits under both.
#[test]
fn account_swap_above_a_delta_child_dropping_its_own_default() {
    let qos = r#"
qos a {"grp_tres_mins":{"cpu":100},"max_wall":60,"description":"a"}
qos b {"max_wall":60,"description":"b"}
qos normal {"description":"normal"}
qos paused {"grp_tres_mins":{"cpu":100},"description":"paused"}
record p0 {"description":"p0","organization":"p0"}
record p1 {"description":"p1","organization":"p1"}
record p2 {"description":"p2","organization":"p2"}
record p7 {"description":"p7","organization":"p7"}
record root {"description":"root","organization":"root"}
"#;
    let current = format!(
        "{qos}
cluster c1
account root - qos=normal def=normal
account p0 root qos=b,normal def=normal
account p1 p0 qos=inherit def=- lim={{\"grp_tres_mins\":{{\"mem\":1024}}}}
account p2 p0 qos=-normal def=b
account p7 p0 qos=a def=a
user u0 p0 - qos=inherit def=-
user u0 p2 - qos=inherit def=-
default u0 p0
"
    );
    let desired = format!(
        "{qos}
cluster c1
account root - qos=normal def=normal
account p0 root qos=paused def=paused
account p1 p0 qos=inherit def=- lim={{\"grp_tres_mins\":{{\"mem\":1024}}}}
account p2 p0 qos=-normal def=-
account p7 p0 qos=a def=a
user u0 p0 - qos=inherit def=-
user u0 p2 - qos=inherit def=-
default u0 p0
"
    );
    assert_pair_ok(&current, &desired);
}

/// Found by `.ci/run`'s 4000 property cases on 2026-12-07 (sixth session): `p1`'s list, the
/// delta `+b,-c` over `p3`'s `a`, becomes `+b` (the same QoS in effect), while `u0` below it
/// holds the DefaultQOS `b`, which only that delta grants.
#[test]
fn a_delta_losing_a_removal_keeps_the_default_it_grants() {
    let qos = r#"
qos a {"description":"a"}
qos b {"description":"b"}
qos c {"description":"c"}
qos normal {"description":"normal"}
qos paused {"max_wall":60,"description":"paused"}
record p0 {"description":"p0","organization":"p0"}
record p1 {"description":"p1","organization":"p1"}
record p3 {"description":"p3","organization":"p3"}
record root {"description":"root","organization":"root"}
"#;
    let state = |p1: &str| {
        format!(
            "{qos}
cluster c2
account root - qos=normal def=-
account p3 root qos=a def=a
account p1 p3 qos={p1} def=-
account p0 p1 qos=inherit def=-
user u0 p0 - qos=inherit def=b
user u2 p0 - qos=inherit def=a
user u3 p0 - qos=inherit def=-
default u0 p0
default u2 p0
default u3 p0
"
        )
    };
    assert_pair_ok(&state("+b,-c"), &state("+b"));
}
