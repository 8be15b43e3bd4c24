//! Differential testing of the rules model (`rules`) against real slurmdbd: the case
//! generator (small, messy sites and desired files drifted from them), the invariants every
//! step must keep, and the regression fixtures that `cargo test` replays offline.
//!
//! Shared by `tests/differential_real.rs` (seeds, plans and applies cases on a real test bed)
//! and `tests/differential_fixtures.rs` (replays saved failures against the model, no bed).
//! This module never runs sacctmgr: it builds argv lists and reads/writes fixture files; its
//! `bed` submodule is the side that runs them on a real bed (with `tests/undo_real.rs`).
//!
//! A case is a seed plus three lists that shrinking removes elements from: the `base` site
//! (accounts with their users and record text, QoS, account records), `mess` (writes a real
//! site accumulates: QoS deltas, DefaultAccounts moved, and on 22.05 the violations it lets
//! through), and `edits` (what the desired file changes relative to the base). Every seeding
//! write must succeed on real slurmdbd, so the generator makes only writes its version
//! accepts and none that changes nothing. The same seed always makes the same case.

#![allow(dead_code)]

pub mod bed;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use slurmplan::model::State;
use slurmplan::plan::make_plan;
use slurmplan::rules::{RuleModel, check_default_accounts};
use slurmplan::sacctmgr::command::Command;
use slurmplan::sacctmgr::snapshot;

// ------------------------------------------------------------------------------------------
// Random numbers (splitmix64: small, deterministic, no dependency on proptest's runner)
// ------------------------------------------------------------------------------------------

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x005e_ed0f_d1ff)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 { 0 } else { (self.next() % n as u64) as usize }
    }
    pub fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        if v.is_empty() { None } else { Some(&v[self.below(v.len())]) }
    }
}

// ------------------------------------------------------------------------------------------
// The site description
// ------------------------------------------------------------------------------------------

/// What is set on one association (account or user row).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssocSpec {
    /// `parent` or a number of shares.
    pub fairshare: Option<String>,
    pub grp_jobs: Option<u64>,
    pub grp_submit_jobs: Option<u64>,
    /// TRES name -> value as written (`2G`, `10K`, `600`).
    pub grp_tres_mins: Vec<(String, String)>,
    pub max_wall: Option<u64>,
    pub qos: Option<Vec<String>>,
    pub default_qos: Option<String>,
}

impl AssocSpec {
    /// sacctmgr words for `add account`/`add user`.
    fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(f) = &self.fairshare {
            w.push(format!("fairshare={f}"));
        }
        if let Some(n) = self.grp_jobs {
            w.push(format!("grpjobs={n}"));
        }
        if let Some(n) = self.grp_submit_jobs {
            w.push(format!("grpsubmitjobs={n}"));
        }
        if !self.grp_tres_mins.is_empty() {
            let v: Vec<String> = self.grp_tres_mins.iter().map(|(k, v)| format!("{k}={v}")).collect();
            w.push(format!("grptresmins={}", v.join(",")));
        }
        if let Some(n) = self.max_wall {
            w.push(format!("maxwall={n}"));
        }
        if let Some(q) = &self.qos {
            w.push(format!("qos={}", q.join(",")));
        }
        if let Some(d) = &self.default_qos {
            w.push(format!("defaultqos={d}"));
        }
        w
    }

    /// `key: value` entries of the desired format.
    fn yaml(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(f) = &self.fairshare {
            w.push(format!("fairshare: {f}"));
        }
        if let Some(n) = self.grp_jobs {
            w.push(format!("grp_jobs: {n}"));
        }
        if let Some(n) = self.grp_submit_jobs {
            w.push(format!("grp_submit_jobs: {n}"));
        }
        if !self.grp_tres_mins.is_empty() {
            let v: Vec<String> = self.grp_tres_mins.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            w.push(format!("grp_tres_mins: {{{}}}", v.join(", ")));
        }
        if let Some(n) = self.max_wall {
            w.push(format!("max_wall: {n}"));
        }
        if let Some(q) = &self.qos {
            let v: Vec<String> = q.iter().map(|x| yq(x)).collect();
            w.push(format!("qos: [{}]", v.join(", ")));
        }
        if let Some(d) = &self.default_qos {
            w.push(format!("default_qos: {}", yq(d)));
        }
        w
    }
}

/// A double-quoted YAML scalar (JSON string escapes are valid YAML).
fn yq(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSpec {
    pub name: String,
    pub partition: Option<String>,
    pub a: AssocSpec,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcctSpec {
    pub name: String,
    pub parent: String,
    pub a: AssocSpec,
    pub users: Vec<UserSpec>,
    /// The account record's Description and Organization (global: the same on every cluster
    /// the account is on; `None` = not set when seeded, not managed in the desired file).
    pub text: Text,
}

/// Free text of an account record: (description, organization).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text {
    pub desc: Option<String>,
    pub org: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    pub name: String,
    /// Parents before children (in the base; edits may move accounts).
    pub accounts: Vec<AcctSpec>,
    /// user -> DefaultAccount (in the desired file: only the declared ones).
    pub defaults: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosSpec {
    pub name: String,
    pub grp_submit_jobs: Option<u64>,
    pub max_wall: Option<u64>,
    pub deny_on_limit: bool,
    pub cpu_mins: Option<u64>,
    pub desc: Option<String>,
    /// Whether the desired file states the attributes (else `{}`: declared, nothing managed).
    pub managed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spec {
    pub qos: Vec<QosSpec>,
    pub clusters: Vec<ClusterSpec>,
    /// (cluster, account): account records left without associations (added, then removed).
    pub records: Vec<(String, String)>,
}

impl ClusterSpec {
    fn find(&self, name: &str) -> Option<usize> {
        self.accounts.iter().position(|a| a.name == name)
    }
    /// `name` and every account below it.
    fn subtree(&self, name: &str) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = BTreeSet::from([name.to_string()]);
        loop {
            let more: Vec<String> = self
                .accounts
                .iter()
                .filter(|a| out.contains(&a.parent) && !out.contains(&a.name))
                .map(|a| a.name.clone())
                .collect();
            if more.is_empty() {
                return out;
            }
            out.extend(more);
        }
    }
    fn user_accounts(&self, user: &str) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for a in &self.accounts {
            if a.users.iter().any(|u| u.name == user) && !v.contains(&a.name) {
                v.push(a.name.clone());
            }
        }
        v
    }
}

// ------------------------------------------------------------------------------------------
// Mess and edits
// ------------------------------------------------------------------------------------------

/// Writes made after the base: concrete sacctmgr argv (without `-i`); each must succeed unless
/// `may_refuse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mess {
    pub what: String,
    pub argv: Vec<Vec<String>>,
    pub may_refuse: bool,
}

/// One seeding write: sacctmgr argv without `-i`; `mess` for the writes made after the base.
/// `may_refuse`: a write whose refusal real 22.05 does not let the generator predict (the
/// harness runs the case on without it, says so, and counts it); every other write must succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedWrite {
    pub argv: Vec<String>,
    pub mess: bool,
    pub may_refuse: bool,
}

/// One change the desired file makes relative to the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    AddAccount {
        cluster: String,
        acct: AcctSpec,
    },
    DeleteSubtree {
        cluster: String,
        name: String,
    },
    Reparent {
        cluster: String,
        name: String,
        parent: String,
    },
    SetAssoc {
        cluster: String,
        name: String,
        a: AssocSpec,
    },
    SetUsers {
        cluster: String,
        name: String,
        users: Vec<UserSpec>,
    },
    SetDefault {
        cluster: String,
        user: String,
        account: Option<String>,
    },
    /// The account record's free text, on every cluster (the record is global).
    SetText {
        name: String,
        text: Text,
    },
    SetQos {
        q: QosSpec,
    },
    DropQos {
        name: String,
    },
}

impl Edit {
    /// Apply to `s`; an edit whose objects are gone (after shrinking) does nothing.
    fn apply(&self, s: &mut Spec) {
        let cl = |s: &mut Spec, c: &str| s.clusters.iter().position(|x| x.name == c);
        match self {
            Edit::AddAccount { cluster, acct } => {
                if let Some(i) = cl(s, cluster) {
                    let c = &mut s.clusters[i];
                    if c.find(&acct.name).is_none() && (acct.parent == "root" || c.find(&acct.parent).is_some()) {
                        c.accounts.push(acct.clone());
                        // The record's text is global: an account that is also on another
                        // cluster carries the edit's text there too (else the desired file
                        // would state two texts for one record; seed 32362 on 24.11).
                        for a in
                            s.clusters.iter_mut().flat_map(|c| c.accounts.iter_mut()).filter(|a| a.name == acct.name)
                        {
                            a.text = acct.text.clone();
                        }
                    }
                }
            }
            Edit::DeleteSubtree { cluster, name } => {
                if let Some(i) = cl(s, cluster) {
                    let c = &mut s.clusters[i];
                    if c.find(name).is_some() {
                        let gone = c.subtree(name);
                        c.accounts.retain(|a| !gone.contains(&a.name));
                    }
                }
            }
            Edit::Reparent { cluster, name, parent } => {
                if let Some(i) = cl(s, cluster) {
                    let c = &mut s.clusters[i];
                    let ok = c.find(name).is_some()
                        && (parent == "root" || c.find(parent).is_some())
                        && !c.subtree(name).contains(parent);
                    if ok && let Some(j) = c.find(name) {
                        c.accounts[j].parent = parent.clone();
                    }
                }
            }
            Edit::SetAssoc { cluster, name, a } => {
                if let Some(i) = cl(s, cluster)
                    && let Some(j) = s.clusters[i].find(name)
                {
                    s.clusters[i].accounts[j].a = a.clone();
                }
            }
            Edit::SetUsers { cluster, name, users } => {
                if let Some(i) = cl(s, cluster)
                    && let Some(j) = s.clusters[i].find(name)
                {
                    s.clusters[i].accounts[j].users = users.clone();
                }
            }
            Edit::SetDefault { cluster, user, account } => {
                if let Some(i) = cl(s, cluster) {
                    match account {
                        Some(a) => s.clusters[i].defaults.insert(user.clone(), a.clone()),
                        None => s.clusters[i].defaults.remove(user),
                    };
                }
            }
            Edit::SetText { name, text } => {
                for a in s.clusters.iter_mut().flat_map(|c| c.accounts.iter_mut()).filter(|a| &a.name == name) {
                    a.text = text.clone();
                }
            }
            Edit::SetQos { q } => match s.qos.iter().position(|x| x.name == q.name) {
                Some(i) => s.qos[i] = q.clone(),
                None => s.qos.push(q.clone()),
            },
            Edit::DropQos { name } => s.qos.retain(|q| &q.name != name),
        }
    }
}

// ------------------------------------------------------------------------------------------
// The case
// ------------------------------------------------------------------------------------------

pub const CLUSTERS: [&str; 2] = ["testcl", "testcl2"];
/// Partition names of user rows (no slurmctld: slurmdbd takes any name); one with odd characters.
const PARTITIONS: [&str; 3] = ["gpu", "debug", "a100+x~1"];

#[derive(Debug, Clone)]
pub struct Case {
    pub seed: u64,
    pub v2205: bool,
    /// Every name of the case starts with it: `<p>m*` managed accounts, `<p>x*` unmanaged
    /// ones, `<p>u*` users, `<p>q*` QoS.
    pub prefix: String,
    pub base: Spec,
    pub mess: Vec<Mess>,
    pub edits: Vec<Edit>,
}

fn base36(mut n: u64, len: usize) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = Vec::new();
    for _ in 0..len {
        s.push(digits[(n % 36) as usize]);
        n /= 36;
    }
    String::from_utf8(s).unwrap()
}

impl Case {
    pub fn managed_prefix(&self) -> String {
        format!("{}m", self.prefix)
    }

    /// The desired-side spec: the base with the edits, made valid.
    pub fn desired_spec(&self) -> Spec {
        let mut s = self.base.clone();
        for e in &self.edits {
            e.apply(&mut s);
        }
        // A QoS the unmanaged part of the site uses stays declared (resolve refuses to delete
        // a QoS in use, rightly).
        let mp = self.managed_prefix();
        let uses = |q: &str| {
            let unmanaged = s.clusters.iter().flat_map(|c| &c.accounts).filter(|a| !a.name.starts_with(&mp));
            let in_assoc =
                |a: &AssocSpec| a.qos.iter().flatten().any(|x| x == q) || a.default_qos.as_deref() == Some(q);
            unmanaged.clone().any(|a| in_assoc(&a.a) || a.users.iter().any(|u| in_assoc(&u.a)))
                || self.mess.iter().flat_map(|m| m.argv.iter().flatten()).any(|w| w.ends_with(&format!("={q}")))
        };
        let kept: Vec<QosSpec> = self
            .base
            .qos
            .iter()
            .filter(|q| !s.qos.iter().any(|x| x.name == q.name) && uses(&q.name))
            .cloned()
            .collect();
        s.qos.extend(kept);
        // DefaultAccounts are declared only in managed accounts: the mess may have removed a
        // user from an unmanaged one, which the spec does not follow.
        for c in &mut s.clusters {
            c.defaults.retain(|_, a| a.starts_with(&mp));
        }
        repair(&mut s, false);
        s
    }

    /// The sacctmgr writes that create the base site, then the mess, in order. Each argv is
    /// without the program name and without `-i`. Every one must succeed (the harness stops the
    /// case at the first that does not): a case is a state real slurmdbd accepted, write by
    /// write. A shrunk case whose mess needs an element the shrink removed therefore fails
    /// seeding and is not taken as a smaller version of the failure.
    pub fn seed_argv(&self) -> Vec<SeedWrite> {
        let mut out: Vec<SeedWrite> = Vec::new();
        let v = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        for q in &self.base.qos {
            let mut w = v(&["add", "qos", &q.name]);
            if let Some(n) = q.grp_submit_jobs {
                w.push(format!("grpsubmitjobs={n}"));
            }
            if let Some(n) = q.max_wall {
                w.push(format!("maxwall={n}"));
            }
            if q.deny_on_limit {
                w.push("flags=DenyOnLimit".into());
            }
            if let Some(n) = q.cpu_mins {
                w.push(format!("grptresmins=cpu={n}"));
            }
            if let Some(d) = &q.desc {
                w.push(format!("description={d}"));
            }
            out.push(SeedWrite { argv: w, mess: false, may_refuse: false });
        }
        for c in &self.base.clusters {
            for a in &c.accounts {
                let mut w =
                    v(&["add", "account", &a.name, &format!("cluster={}", c.name), &format!("parent={}", a.parent)]);
                // the record's text goes with every add (slurmdbd keeps the first; the generator
                // gives one name one text, so a shrink that drops a cluster keeps it)
                if let Some(d) = &a.text.desc {
                    w.push(format!("description={d}"));
                }
                if let Some(o) = &a.text.org {
                    w.push(format!("organization={o}"));
                }
                w.extend(a.a.words());
                out.push(SeedWrite { argv: w, mess: false, may_refuse: false });
            }
            let mut first: BTreeMap<&str, &str> = BTreeMap::new();
            for a in &c.accounts {
                // plain rows (no partition, nothing set) in one write per 100 users: an account
                // with hundreds of users is seeded in a few calls
                let plain: Vec<&UserSpec> =
                    a.users.iter().filter(|u| u.partition.is_none() && u.a == AssocSpec::default()).collect();
                for chunk in plain.chunks(100) {
                    let names: Vec<&str> = chunk.iter().map(|u| u.name.as_str()).collect();
                    for u in &names {
                        first.entry(u).or_insert(&a.name);
                    }
                    out.push(SeedWrite {
                        argv: v(&[
                            "add",
                            "user",
                            &names.join(","),
                            &format!("account={}", a.name),
                            &format!("cluster={}", c.name),
                        ]),
                        mess: false,
                        may_refuse: false,
                    });
                }
                for u in a.users.iter().filter(|u| !(u.partition.is_none() && u.a == AssocSpec::default())) {
                    first.entry(&u.name).or_insert(&a.name);
                    let mut w =
                        v(&["add", "user", &u.name, &format!("account={}", a.name), &format!("cluster={}", c.name)]);
                    if let Some(p) = &u.partition {
                        w.push(format!("partition={p}"));
                    }
                    w.extend(u.a.words());
                    out.push(SeedWrite { argv: w, mess: false, may_refuse: false });
                }
            }
            for (u, d) in &c.defaults {
                if first.get(u.as_str()) != Some(&d.as_str()) {
                    out.push(SeedWrite {
                        argv: v(&[
                            "modify",
                            "user",
                            "where",
                            &format!("name={u}"),
                            &format!("cluster={}", c.name),
                            "set",
                        ])
                        .into_iter()
                        .chain([format!("defaultaccount={d}")])
                        .collect(),
                        mess: false,
                        may_refuse: false,
                    });
                }
            }
        }
        for (c, r) in &self.base.records {
            out.push(SeedWrite {
                argv: v(&["add", "account", r, &format!("cluster={c}")]),
                mess: false,
                may_refuse: false,
            });
            out.push(SeedWrite {
                argv: v(&["delete", "account", "where", &format!("name={r}"), &format!("cluster={c}")]),
                mess: false,
                may_refuse: false,
            });
        }
        for m in &self.mess {
            for a in &m.argv {
                out.push(SeedWrite { argv: a.clone(), mess: true, may_refuse: m.may_refuse });
            }
        }
        out
    }

    /// The desired file. Every name and text is double-quoted (names may hold `#`, `:`, `{`,
    /// `&`, `*` and the rest of what the format accepts).
    pub fn desired_yaml(&self) -> String {
        let s = self.desired_spec();
        let mut y = String::new();
        y.push_str("version: 1\nmanaged:\n");
        y.push_str(&format!(
            "  prefixes: [{}]\n  qos_prefixes: [{}]\n",
            yq(&self.managed_prefix()),
            yq(&format!("{}q", self.prefix))
        ));
        y.push_str("qos:\n  normal: {}\n");
        for q in &s.qos {
            let mut w = Vec::new();
            if q.managed {
                if let Some(n) = q.grp_submit_jobs {
                    w.push(format!("grp_submit_jobs: {n}"));
                }
                if let Some(n) = q.max_wall {
                    w.push(format!("max_wall: {n}"));
                }
                if q.deny_on_limit {
                    w.push("flags: [DenyOnLimit]".into());
                }
                if let Some(n) = q.cpu_mins {
                    w.push(format!("grp_tres_mins: {{cpu: {n}}}"));
                }
                if let Some(d) = &q.desc {
                    w.push(format!("description: {}", yq(d)));
                }
            }
            y.push_str(&format!("  {}: {{{}}}\n", yq(&q.name), w.join(", ")));
        }
        y.push_str("clusters:\n");
        let mp = self.managed_prefix();
        for c in &s.clusters {
            y.push_str(&format!("  {}:\n", yq(&c.name)));
            let managed: Vec<&AcctSpec> = c.accounts.iter().filter(|a| a.name.starts_with(&mp)).collect();
            if managed.is_empty() {
                y.push_str("    accounts: {}\n");
            } else {
                y.push_str("    accounts:\n");
            }
            for a in managed {
                y.push_str(&format!("      {}:\n        parent: {}\n", yq(&a.name), yq(&a.parent)));
                if let Some(d) = &a.text.desc {
                    y.push_str(&format!("        description: {}\n", yq(d)));
                }
                if let Some(o) = &a.text.org {
                    y.push_str(&format!("        organization: {}\n", yq(o)));
                }
                for l in a.a.yaml() {
                    y.push_str(&format!("        {l}\n"));
                }
                if !a.users.is_empty() {
                    y.push_str("        users:\n");
                    for u in &a.users {
                        let mut w = vec![format!("name: {}", yq(&u.name))];
                        if let Some(p) = &u.partition {
                            w.push(format!("partition: {}", yq(p)));
                        }
                        w.extend(u.a.yaml());
                        if w.len() == 1 {
                            y.push_str(&format!("          - {}\n", yq(&u.name)));
                        } else {
                            y.push_str(&format!("          - {{{}}}\n", w.join(", ")));
                        }
                    }
                }
            }
            if !c.defaults.is_empty() {
                y.push_str("    users:\n");
                for (u, d) in &c.defaults {
                    y.push_str(&format!("      {}: {{default_account: {}}}\n", yq(u), yq(d)));
                }
            }
        }
        y
    }

    /// One line per element, for messages and `case.txt`.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "seed {} ({}), prefix {}\nbase seed writes:\n",
            self.seed,
            if self.v2205 { "22.05" } else { "24.11" },
            self.prefix
        );
        for w in self.seed_argv() {
            let tag = match (w.mess, w.may_refuse) {
                (true, true) => "(mess, may be refused) ",
                (true, false) => "(mess) ",
                _ => "",
            };
            out.push_str(&format!("  {tag}sacctmgr -i {}\n", w.argv.join(" ")));
        }
        out.push_str("edits:\n");
        for e in &self.edits {
            out.push_str(&format!("  {e:?}\n"));
        }
        out
    }

    /// Smaller variants of this case, one element removed each (for shrinking).
    /// Halves first (a case with an onboarded project has a dozen edits: one at a time, a
    /// shrink budget of 20 runs went on them alone), then one element at a time.
    pub fn smaller(&self) -> Vec<Case> {
        let mut out = Vec::new();
        if self.edits.len() > 3 {
            let half = self.edits.len() / 2;
            for keep in [self.edits[half..].to_vec(), self.edits[..half].to_vec()] {
                let mut c = self.clone();
                c.edits = keep;
                out.push(c);
            }
        }
        if self.mess.len() > 1 {
            let mut c = self.clone();
            c.mess.clear();
            out.push(c);
        }
        for i in 0..self.edits.len() {
            let mut c = self.clone();
            c.edits.remove(i);
            out.push(c);
        }
        for i in 0..self.mess.len() {
            let mut c = self.clone();
            c.mess.remove(i);
            out.push(c);
        }
        for i in 0..self.base.records.len() {
            let mut c = self.clone();
            c.base.records.remove(i);
            out.push(c);
        }
        for ci in 0..self.base.clusters.len() {
            if self.base.clusters.len() > 1 {
                let mut c = self.clone();
                c.base.clusters.remove(ci);
                out.push(c);
            }
            let cs = &self.base.clusters[ci];
            // leaves first: removing a leaf keeps the rest of the tree as it was
            for (ai, a) in cs.accounts.iter().enumerate().rev() {
                if cs.accounts.iter().all(|x| x.parent != a.name) {
                    let mut c = self.clone();
                    c.base.clusters[ci].accounts.remove(ai);
                    repair(&mut c.base, true);
                    out.push(c);
                }
            }
            for (ai, a) in cs.accounts.iter().enumerate() {
                // an account with many users: halve them first (one run instead of hundreds)
                if a.users.len() > 8 {
                    let mut c = self.clone();
                    let half = a.users.len() / 2;
                    c.base.clusters[ci].accounts[ai].users.truncate(half);
                    repair(&mut c.base, true);
                    out.push(c);
                }
                if a.text != Text::default() {
                    let mut c = self.clone();
                    for x in c.base.clusters.iter_mut().flat_map(|c| c.accounts.iter_mut()) {
                        if x.name == a.name {
                            x.text = Text::default();
                        }
                    }
                    out.push(c);
                }
                for ui in 0..a.users.len() {
                    let mut c = self.clone();
                    c.base.clusters[ci].accounts[ai].users.remove(ui);
                    repair(&mut c.base, true);
                    out.push(c);
                }
                if a.a != AssocSpec::default() {
                    let mut c = self.clone();
                    c.base.clusters[ci].accounts[ai].a = AssocSpec::default();
                    repair(&mut c.base, true);
                    out.push(c);
                }
            }
        }
        out
    }
}

// ------------------------------------------------------------------------------------------
// Making a spec valid
// ------------------------------------------------------------------------------------------

/// Make every association's effective DefaultQOS part of its effective QoS list (root: list
/// `normal`, no default, as `sacctmgr add cluster` makes it), drop QoS names that are not
/// declared, and keep DefaultAccounts to accounts the user is in. `base`: every user with an
/// association gets a DefaultAccount (slurmdbd gives one), and the order stays parents first.
pub fn repair(s: &mut Spec, base: bool) {
    let pool: BTreeSet<String> = s.qos.iter().map(|q| q.name.clone()).chain(["normal".to_string()]).collect();
    for c in &mut s.clusters {
        // order parents first (edits may have moved accounts)
        let mut ordered: Vec<AcctSpec> = Vec::new();
        let mut placed: BTreeSet<String> = BTreeSet::from(["root".to_string()]);
        let mut left = std::mem::take(&mut c.accounts);
        while !left.is_empty() {
            let before = left.len();
            let mut rest = Vec::new();
            for a in left {
                if placed.contains(&a.parent) {
                    placed.insert(a.name.clone());
                    ordered.push(a);
                } else {
                    rest.push(a);
                }
            }
            left = rest;
            if left.len() == before {
                break; // parents gone: those accounts go too
            }
        }
        c.accounts = ordered;
        let mut eff: BTreeMap<String, (BTreeSet<String>, Option<String>)> = BTreeMap::new();
        eff.insert("root".into(), (BTreeSet::from(["normal".to_string()]), None));
        for a in &mut c.accounts {
            let (peff, pdef) = eff[&a.parent].clone();
            fix_assoc(&mut a.a, &pool, &peff, pdef.as_ref());
            let e = a.a.qos.clone().map(|v| v.into_iter().collect()).unwrap_or(peff);
            let d = a.a.default_qos.clone().or(pdef);
            let mut seen = BTreeSet::new();
            a.users.retain(|u| seen.insert((u.name.clone(), u.partition.clone())));
            for u in &mut a.users {
                fix_assoc(&mut u.a, &pool, &e, d.as_ref());
            }
            eff.insert(a.name.clone(), (e, d));
        }
        let users: BTreeSet<String> = c.accounts.iter().flat_map(|a| a.users.iter().map(|u| u.name.clone())).collect();
        let snapshot = c.clone();
        c.defaults.retain(|u, d| snapshot.user_accounts(u).contains(d));
        if base {
            for u in users {
                c.defaults.entry(u).or_insert_with_key(|u| snapshot.user_accounts(u)[0].clone());
            }
        }
    }
    let names: BTreeSet<String> = s.clusters.iter().flat_map(|c| c.accounts.iter().map(|a| a.name.clone())).collect();
    s.records.retain(|(_, r)| !names.contains(r));
}

fn fix_assoc(a: &mut AssocSpec, pool: &BTreeSet<String>, peff: &BTreeSet<String>, pdef: Option<&String>) {
    if let Some(q) = &mut a.qos {
        q.retain(|x| pool.contains(x));
        q.sort();
        q.dedup();
        if q.is_empty() {
            a.qos = None;
        }
    }
    if a.default_qos.as_ref().is_some_and(|d| !pool.contains(d)) {
        a.default_qos = None;
    }
    let eff: BTreeSet<String> = a.qos.clone().map(|v| v.into_iter().collect()).unwrap_or_else(|| peff.clone());
    let ok = |d: Option<&String>| d.is_none_or(|d| eff.contains(d));
    if !ok(a.default_qos.as_ref().or(pdef)) {
        a.default_qos = None;
        if !ok(pdef) {
            a.default_qos = eff.iter().next().cloned();
        }
    }
}

// ------------------------------------------------------------------------------------------
// The generator
// ------------------------------------------------------------------------------------------

fn gen_assoc(r: &mut Rng, pool: &[String], user: bool) -> AssocSpec {
    let mut a = AssocSpec::default();
    let busy = if user { 20 } else { 45 };
    if r.chance(busy) {
        a.fairshare = Some(["parent", "0", "5", "100"][r.below(4)].to_string());
    }
    if r.chance(busy) {
        a.grp_submit_jobs = Some([0, 0, 5][r.below(3)]);
    }
    if r.chance(busy / 3) {
        a.grp_jobs = Some([0, 7][r.below(2)]);
    }
    if !user && r.chance(40) {
        let all = [
            ("cpu", ["600", "10K", "6000"]),
            ("mem", ["2G", "1024", "512M"]),
            ("billing", ["5000", "1M", "70"]),
            ("gres/gpu", ["60", "2K", "0"]),
        ];
        for (k, vals) in all {
            if r.chance(50) {
                a.grp_tres_mins.push((k.to_string(), vals[r.below(3)].to_string()));
            }
        }
    }
    if r.chance(busy / 2) {
        a.max_wall = Some([30, 60, 2880][r.below(3)]);
    }
    if r.chance(if user { 25 } else { 40 }) {
        let mut q: Vec<String> = pool.iter().filter(|_| r.chance(50)).cloned().collect();
        if q.is_empty() {
            q.push(r.pick(pool).unwrap().clone());
        }
        a.qos = Some(q);
    }
    if r.chance(35) {
        a.default_qos = r.pick(pool).cloned();
    }
    a
}

/// Characters beyond letters and digits that the desired format accepts in names
/// (docs/desired-format.md, `Name::parse`), `ü` for non-ASCII.
const ODD: [&str; 24] = [
    "@", "+", ":", "~", "!", "#", "$", "%", "^", "&", "*", "(", ")", "{", "}", "/", "?", "<", ">", ";", ".", "-", "_",
    "ü",
];
const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Names of one case. In a case with odd names, half of them get a suffix made of [`ODD`]
/// characters and letters (now and then up to the 64-byte limit). The suffix starts with an
/// [`ODD`] character, so `…u1` and `…u10` stay distinct, and the stem keeps the case's
/// prefixes (`<p>m`, `<p>u`, `<p>q`, ...), so scopes and the clean-up still see them.
pub struct Namer {
    pub odd: bool,
}

impl Namer {
    pub fn name(&self, r: &mut Rng, stem: String) -> String {
        if !self.odd || !r.chance(50) {
            return stem;
        }
        let max = 64usize.saturating_sub(stem.len());
        if max < 3 {
            return stem;
        }
        let len = if r.chance(20) { max } else { (2 + r.below(10)).min(max) };
        let target = stem.len() + len;
        let mut s = stem;
        s.push_str(ODD[r.below(ODD.len())]);
        while s.len() < target {
            let c = if r.chance(50) {
                ODD[r.below(ODD.len())].to_string()
            } else {
                (ALNUM[r.below(ALNUM.len())] as char).to_string()
            };
            if s.len() + c.len() > target {
                s.push('x');
            } else {
                s.push_str(&c);
            }
        }
        s
    }
}

/// Words of free text: what the format accepts (no quotes, no control characters), with the
/// characters sacctmgr gives meaning to elsewhere (`,` `=` `:` `'`-free).
const WORDS: [&str; 26] = [
    "physics",
    "dept.",
    "grant",
    "no.42",
    "ü-lab",
    "a/b",
    "(x)",
    "x,y",
    "k=v",
    "50%",
    "r&d",
    "#1",
    "john@uni.ee",
    "t:1",
    "semi;colon",
    "<tag>",
    "~home",
    "*",
    "?",
    "{x}",
    "!",
    "$5",
    "^",
    "+1",
    "_",
    "mixed",
];

/// Free text of up to `max` bytes: short mostly, a quarter of it long (hundreds of bytes).
fn gen_text(r: &mut Rng, max: usize) -> String {
    let target = if r.chance(25) { 200 + r.below(max - 200) } else { 3 + r.below(40) };
    let mut s = String::new();
    while s.len() < target {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(WORDS[r.below(WORDS.len())]);
    }
    while s.len() > max {
        s.pop();
    }
    s.trim_end().to_string()
}

/// Longest free text the generator writes (below any limit `validate` sets on free text).
pub const TEXT_MAX: usize = 1000;

fn gen_acct_text(r: &mut Rng) -> Text {
    Text {
        desc: if r.chance(40) { Some(gen_text(r, TEXT_MAX)) } else { None },
        org: if r.chance(15) { Some(gen_text(r, 200)) } else { None },
    }
}

fn partition(r: &mut Rng) -> String {
    PARTITIONS[r.below(PARTITIONS.len())].to_string()
}

fn gen_users(r: &mut Rng, users: &[String], pool: &[String], max: usize) -> Vec<UserSpec> {
    let mut out = Vec::new();
    for _ in 0..r.below(max + 1) {
        let name = r.pick(users).unwrap().clone();
        let p = if r.chance(20) { Some(partition(r)) } else { None };
        out.push(UserSpec { name: name.clone(), partition: p.clone(), a: gen_assoc(r, pool, true) });
        // a partition row beside the plain one (the shape of issue 15's first problem), often
        // with its own QoS list and DefaultQOS
        if p.is_none() && r.chance(25) {
            out.push(UserSpec { name, partition: Some(partition(r)), a: gen_partition_assoc(r, pool) });
        }
    }
    out
}

/// A partition row's settings: nothing, or its own QoS list and DefaultQOS (and more).
fn gen_partition_assoc(r: &mut Rng, pool: &[String]) -> AssocSpec {
    if r.chance(40) {
        return AssocSpec::default();
    }
    let mut a = gen_assoc(r, pool, true);
    if r.chance(60) {
        let mut q: Vec<String> = pool.iter().filter(|_| r.chance(50)).cloned().collect();
        if q.is_empty() {
            q.push(r.pick(pool).unwrap().clone());
        }
        a.default_qos = r.pick(&q).cloned();
        a.qos = Some(q);
    }
    a
}

fn gen_qos(r: &mut Rng, name: String) -> QosSpec {
    QosSpec {
        name,
        grp_submit_jobs: if r.chance(30) { Some([0, 10][r.below(2)]) } else { None },
        max_wall: if r.chance(30) { Some([60, 1440][r.below(2)]) } else { None },
        deny_on_limit: r.chance(20),
        cpu_mins: if r.chance(20) { Some([100, 1000][r.below(2)]) } else { None },
        desc: if r.chance(30) { Some(gen_text(r, TEXT_MAX)) } else { None },
        managed: r.chance(50),
    }
}

/// A case for `seed`; `v2205` allows the violations only 22.05 lets a site reach.
///
/// Shapes, each in some cases: one or two clusters (one account record can have trees on
/// both); deep trees (6 to 8 levels, a quarter of the trees); a user with rows in most
/// accounts of a cluster, partition rows among them; an account with 120 to 300 users (1 case
/// in 20: the expensive shape); names with every character the format accepts (a third of the
/// cases), up to 64 bytes; account and QoS descriptions up to [`TEXT_MAX`] bytes.
pub fn gen_case(seed: u64, v2205: bool) -> Case {
    let mut r = Rng::new(seed);
    let prefix = format!("z{}", base36(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 20, 4));
    let mp = format!("{prefix}m");
    let namer = Namer { odd: r.chance(35) };
    let mut base = Spec::default();
    for i in 0..1 + r.below(3) {
        let name = namer.name(&mut r, format!("{prefix}q{i}"));
        base.qos.push(gen_qos(&mut r, name));
    }
    let pool: Vec<String> = base.qos.iter().map(|q| q.name.clone()).chain(["normal".to_string()]).collect();
    let mut users: Vec<String> = Vec::new();
    for i in 0..2 + r.below(4) {
        users.push(namer.name(&mut r, format!("{prefix}u{i}")));
    }
    let nclusters = if r.chance(50) { 2 } else { 1 };
    let first = r.below(2);
    // managed account names made so far, with their record's text (one name, one text)
    let mut made: Vec<(String, Text)> = Vec::new();
    let mut unmanaged: Vec<(String, Text)> = Vec::new();
    for k in 0..nclusters {
        let cname = CLUSTERS[(first + k) % 2].to_string();
        let mut c = ClusterSpec { name: cname, accounts: Vec::new(), defaults: BTreeMap::new() };
        let deep = r.chance(25);
        let n = if deep { 6 + r.below(3) } else { 1 + r.below(5) };
        for i in 0..n {
            let parent = if i == 0 || c.accounts.is_empty() || r.chance(if deep { 5 } else { 25 }) {
                "root".to_string()
            } else if deep {
                c.accounts.last().unwrap().name.clone()
            } else {
                c.accounts[r.below(c.accounts.len())].name.clone()
            };
            // on a second cluster, reuse names of the first now and then (one record, two trees)
            let (name, text) = if k > 0 && r.chance(40) && i < made.len() {
                made[i].clone()
            } else {
                let name = namer.name(&mut r, format!("{mp}{}", made.len()));
                let text = gen_acct_text(&mut r);
                made.push((name.clone(), text.clone()));
                (name, text)
            };
            if c.find(&name).is_some() {
                continue;
            }
            let users = gen_users(&mut r, &users, &pool, 3);
            c.accounts.push(AcctSpec { name, parent, a: gen_assoc(&mut r, &pool, false), users, text });
        }
        // unmanaged accounts (not in the desired file's scope), some users in both
        for i in 0..r.below(3) {
            if unmanaged.len() <= i {
                let name = namer.name(&mut r, format!("{prefix}x{i}"));
                unmanaged.push((name, gen_acct_text(&mut r)));
            }
            let users = gen_users(&mut r, &users, &pool, 2);
            c.accounts.push(AcctSpec {
                name: unmanaged[i].0.clone(),
                parent: "root".into(),
                a: if r.chance(30) { gen_assoc(&mut r, &pool, false) } else { AssocSpec::default() },
                users,
                text: unmanaged[i].1.clone(),
            });
        }
        // a user with rows in most accounts of the cluster, partition rows among them
        if c.accounts.len() >= 4 && r.chance(30) {
            let u = r.pick(&users).unwrap().clone();
            for a in &mut c.accounts {
                if r.chance(70) {
                    a.users.push(UserSpec { name: u.clone(), partition: None, a: gen_assoc(&mut r, &pool, true) });
                    if r.chance(30) {
                        let pa = gen_partition_assoc(&mut r, &pool);
                        a.users.push(UserSpec { name: u.clone(), partition: Some(partition(&mut r)), a: pa });
                    }
                }
            }
        }
        for u in &users {
            let accts = c.user_accounts(u);
            if !accts.is_empty() {
                c.defaults.insert(u.clone(), r.pick(&accts).unwrap().clone());
            }
        }
        base.clusters.push(c);
    }
    // rare and expensive: an account with hundreds of users (plain rows; seeded 100 a write)
    if r.chance(5) {
        let name = namer.name(&mut r, format!("{mp}{}", made.len()));
        let text = gen_acct_text(&mut r);
        made.push((name.clone(), text.clone()));
        let c = &mut base.clusters[0];
        let parent = if r.chance(50) { "root".to_string() } else { r.pick(&c.accounts).unwrap().name.clone() };
        let mut us = Vec::new();
        for i in 0..120 + r.below(181) {
            us.push(UserSpec {
                name: namer.name(&mut r, format!("{prefix}b{i}")),
                partition: None,
                a: AssocSpec::default(),
            });
        }
        c.accounts.push(AcctSpec { name, parent, a: gen_assoc(&mut r, &pool, false), users: us, text });
    }
    let mut next_acct = made.len();
    if r.chance(30) {
        let c = base.clusters[0].name.clone();
        base.records.push((c, namer.name(&mut r, format!("{mp}{}", next_acct + 7))));
    }
    repair(&mut base, true);

    let mut case = Case { seed, v2205, prefix: prefix.clone(), base, mess: Vec::new(), edits: Vec::new() };
    gen_mess(&mut r, &mut case, &pool);
    gen_edits(&mut r, &mut case, &pool, &users, &mut next_acct, &namer);
    case
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

/// Own QoS lists of the associations below account `name` (its user rows, the accounts under
/// it and their user rows) as the mess has left them. 22.05 refuses a DefaultQOS on an account
/// when one of these lacks it ("These associations don't have access to their default qos").
fn lists_below(
    c: &ClusterSpec,
    name: &str,
    lists: &BTreeMap<String, (bool, BTreeSet<String>)>,
) -> Vec<BTreeSet<String>> {
    let sub = c.subtree(name);
    let mut out = Vec::new();
    for a in c.accounts.iter().filter(|a| sub.contains(&a.name)) {
        if a.name != name
            && let Some((false, l)) = lists.get(&a.name)
        {
            out.push(l.clone());
        }
        for u in &a.users {
            if let Some(q) = &u.a.qos {
                out.push(q.iter().cloned().collect());
            }
        }
    }
    out
}

/// Writes a real site accumulates after the base. Each must succeed on its version (the
/// harness fails the case otherwise), so none is a no-op: a QoS added with `qos+=` is one the
/// account's own list lacks and no earlier mess added, a DefaultAccount moves to another
/// account, a DefaultQOS changes.
fn gen_mess(r: &mut Rng, case: &mut Case, pool: &[String]) {
    let base = case.base.clone();
    for c in &base.clusters {
        let cl = format!("cluster={}", c.name);
        // each account's own QoS list as the mess leaves it: (inherits?, names in the list or
        // added as deltas); `qos+=q` changes the row only when q is not among them
        let mut lists: BTreeMap<String, (bool, BTreeSet<String>)> = c
            .accounts
            .iter()
            .map(|a| (a.name.clone(), (a.a.qos.is_none(), a.a.qos.iter().flatten().cloned().collect())))
            .collect();
        // accounts with a DefaultQOS violation at or below them (left by the mess)
        let mut poisoned: BTreeSet<String> = BTreeSet::new();
        let plus = |a: &AcctSpec, q: &str, lists: &mut BTreeMap<String, (bool, BTreeSet<String>)>| {
            lists.get_mut(&a.name).is_some_and(|l| l.1.insert(q.to_string()))
        };
        let modify_acct = |a: &str, set: &[String]| {
            let mut w = argv(&["modify", "account", "where", &format!("name={a}"), &cl, "set"]);
            w.extend_from_slice(set);
            w
        };
        // QoS stored as a delta (`qos+=`), on either version
        if r.chance(25)
            && let Some(a) = r.pick(&c.accounts)
        {
            let q = r.pick(pool).unwrap();
            if plus(a, q, &mut lists) {
                case.mess.push(Mess {
                    may_refuse: false,
                    what: format!("qos+= on {}", a.name),
                    argv: vec![modify_acct(&a.name, &[format!("qos+={q}")])],
                });
            }
        }
        // a DefaultAccount moved to another of the user's accounts (managed or not)
        if r.chance(25) {
            let users: Vec<&String> = c.defaults.keys().collect();
            if let Some(u) = r.pick(&users) {
                let accts: Vec<String> =
                    c.user_accounts(u).into_iter().filter(|a| c.defaults.get(*u) != Some(a)).collect();
                if let Some(a) = r.pick(&accts) {
                    case.mess.push(Mess {
                        may_refuse: false,
                        what: format!("default of {u} -> {a}"),
                        argv: vec![argv(&[
                            "modify",
                            "user",
                            "where",
                            &format!("name={u}"),
                            &cl,
                            "set",
                            &format!("defaultaccount={a}"),
                        ])],
                    });
                }
            }
        }
        if !case.v2205 {
            continue;
        }
        // 22.05: a user row's (often a partition row's) own DefaultQOS left outside the
        // account's new list
        if r.chance(40) {
            let cands: Vec<(&AcctSpec, &UserSpec)> = c
                .accounts
                .iter()
                .flat_map(|a| a.users.iter().filter(|u| u.a.qos.is_none()).map(move |u| (a, u)))
                .collect();
            let parts: Vec<(&AcctSpec, &UserSpec)> =
                cands.iter().filter(|(_, u)| u.partition.is_some()).cloned().collect();
            let pick = if !parts.is_empty() && r.chance(50) { r.pick(&parts) } else { r.pick(&cands) };
            if let Some((a, u)) = pick {
                // without `partition=` the write reaches the user's partition rows in the account
                // too: each of their own lists must hold the new DefaultQOS
                let rows: Vec<&UserSpec> = a
                    .users
                    .iter()
                    .filter(|x| x.name == u.name && (u.partition.is_none() || x.partition == u.partition))
                    .collect();
                let ds: Vec<String> = pool
                    .iter()
                    .filter(|d| u.a.default_qos.as_ref() != Some(*d))
                    .filter(|d| rows.iter().all(|x| x.a.qos.as_ref().is_none_or(|l| l.contains(*d))))
                    .cloned()
                    .collect();
                let Some(d) = r.pick(&ds).cloned() else { continue };
                // the narrowed list's default must be in every own list below the account
                let below = lists_below(c, &a.name, &lists);
                let qs: Vec<&String> =
                    pool.iter().filter(|x| **x != d && below.iter().all(|l| l.contains(*x))).collect();
                let Some(q) = qs.first().map(|q| q.to_string()) else { continue };
                let mut user_where = vec![format!("name={}", u.name), format!("account={}", a.name), cl.clone()];
                if let Some(p) = &u.partition {
                    user_where.push(format!("partition={p}"));
                }
                let mut w = Vec::new();
                if plus(a, &d, &mut lists) {
                    w.push(modify_acct(&a.name, &[format!("qos+={d}")]));
                }
                lists.insert(a.name.clone(), (false, BTreeSet::from([q.clone()])));
                // 22.05 now refuses QoS writes on this account, those above it and those below
                // it (whose rows may now inherit a list without their DefaultQOS): "These
                // associations don't have access to their default qos"
                poisoned.extend(c.subtree(&a.name));
                let mut at = a.name.clone();
                while let Some(x) = c.accounts.iter().find(|x| x.name == at) {
                    poisoned.insert(at.clone());
                    at = x.parent.clone();
                }
                let mut second = argv(&["modify", "user", "where"]);
                second.extend(user_where);
                second.extend(argv(&["set", &format!("defaultqos={d}")]));
                w.push(second);
                w.push(modify_acct(&a.name, &[format!("qos={q}"), format!("defaultqos={q}")]));
                case.mess.push(Mess {
                    may_refuse: false,
                    what: format!(
                        "DefaultQOS {d} of {}@{}{} outside [{q}]",
                        u.name,
                        a.name,
                        u.partition.as_ref().map(|p| format!(" partition {p}")).unwrap_or_default()
                    ),
                    argv: w,
                });
                if r.chance(50) {
                    // the desired file keeps the narrowed list (the user's default must go)
                    let mut na = a.a.clone();
                    na.qos = Some(vec![q.clone()]);
                    na.default_qos = Some(q);
                    case.edits.push(Edit::SetAssoc { cluster: c.name.clone(), name: a.name.clone(), a: na });
                }
            }
        }
        // 22.05: an account's own DefaultQOS left outside the list it inherits, when the
        // parent's list is narrowed
        if r.chance(30) {
            let cands: Vec<(&AcctSpec, &AcctSpec)> = c
                .accounts
                .iter()
                .filter(|a| lists.get(&a.name).is_some_and(|l| l.0 && l.1.is_empty()))
                .filter_map(|a| c.accounts.iter().find(|p| p.name == a.parent).map(|p| (a, p)))
                .filter(|(_, p)| !poisoned.contains(&p.name))
                .collect();
            if let Some((a, p)) = r.pick(&cands) {
                let below_a = lists_below(c, &a.name, &lists);
                let below_p = lists_below(c, &p.name, &lists);
                let ds: Vec<String> = pool
                    .iter()
                    .filter(|d| a.a.default_qos.as_ref() != Some(*d) && below_a.iter().all(|l| l.contains(*d)))
                    .cloned()
                    .collect();
                let Some(d) = r.pick(&ds).cloned() else { continue };
                let qs: Vec<&String> =
                    pool.iter().filter(|x| **x != d && below_p.iter().all(|l| l.contains(*x))).collect();
                let Some(q) = qs.first().map(|q| q.to_string()) else { continue };
                let mut w = Vec::new();
                if plus(p, &d, &mut lists) {
                    w.push(modify_acct(&p.name, &[format!("qos+={d}")]));
                }
                lists.insert(p.name.clone(), (false, BTreeSet::from([q.clone()])));
                w.push(modify_acct(&a.name, &[format!("defaultqos={d}")]));
                w.push(modify_acct(&p.name, &[format!("qos={q}"), format!("defaultqos={q}")]));
                case.mess.push(Mess {
                    what: format!("DefaultQOS {d} of account {} outside [{q}]", a.name),
                    argv: w,
                    may_refuse: false,
                });
                if r.chance(50) {
                    let mut na = p.a.clone();
                    na.qos = Some(vec![q.clone()]);
                    na.default_qos = Some(q);
                    case.edits.push(Edit::SetAssoc { cluster: c.name.clone(), name: p.name.clone(), a: na });
                }
            }
        }
        // 22.05: a user's default account deleted (a leaf) while the user keeps another: the
        // user is left without a DefaultAccount (22.05 and 24.11 both refuse `delete user` of
        // the default association; 22.05 lets `delete account` take it)
        if r.chance(30) {
            let cands: Vec<(&String, &String)> = c
                .defaults
                .iter()
                .filter(|(u, d)| c.user_accounts(u).len() > 1 && c.accounts.iter().all(|x| &x.parent != *d))
                // (22.05 refuses it when the user has a partition row there)
                .filter(|(u, d)| {
                    c.accounts
                        .iter()
                        .filter(|a| &a.name == *d)
                        .flat_map(|a| &a.users)
                        .all(|x| &x.name != *u || x.partition.is_none())
                })
                .collect();
            if let Some((u, d)) = r.pick(&cands) {
                case.mess.push(Mess {
                    what: format!("dangling default {d} of {u} (account deleted)"),
                    argv: vec![argv(&["delete", "account", "where", &format!("name={d}"), &cl])],
                    // 22.05.8 takes it in most such sites and refuses it ("You can not remove
                    // the default account of a user") in some (seed 31) for reasons not found
                    may_refuse: true,
                });
            }
        }
    }
}

fn gen_edits(r: &mut Rng, case: &mut Case, pool: &[String], users: &[String], next_acct: &mut usize, namer: &Namer) {
    let mp = case.managed_prefix();
    let n = 1 + r.below(5);
    for _ in 0..n {
        let mut s = case.base.clone();
        for e in &case.edits {
            e.apply(&mut s);
        }
        let c = &s.clusters[r.below(s.clusters.len())];
        let managed: Vec<&AcctSpec> = c.accounts.iter().filter(|a| a.name.starts_with(&mp)).collect();
        let cluster = c.name.clone();
        let pick = r.below(13);
        let edit = match (pick, r.pick(&managed)) {
            (0, _) | (_, None) => {
                let parent = if r.chance(40) || managed.is_empty() {
                    "root".to_string()
                } else {
                    r.pick(&managed).unwrap().name.clone()
                };
                // sometimes the name of an account record without associations
                let name = match s.records.first() {
                    Some((_, rec)) if r.chance(50) => rec.clone(),
                    _ => {
                        *next_acct += 1;
                        namer.name(r, format!("{mp}{}", *next_acct + 20))
                    }
                };
                // a record that exists keeps its text unless the edit states one
                let text = gen_acct_text(r);
                let a = gen_assoc(r, pool, false);
                Edit::AddAccount {
                    cluster,
                    acct: AcctSpec { name, parent, a, users: gen_users(r, users, pool, 3), text },
                }
            }
            (1, Some(a)) => Edit::DeleteSubtree { cluster, name: a.name.clone() },
            (2, Some(a)) => {
                let sub = c.subtree(&a.name);
                let targets: Vec<String> = std::iter::once("root".to_string())
                    .chain(managed.iter().map(|x| x.name.clone()))
                    .filter(|t| !sub.contains(t) && *t != a.parent)
                    .collect();
                match r.pick(&targets) {
                    Some(t) => Edit::Reparent { cluster, name: a.name.clone(), parent: t.clone() },
                    None => Edit::DeleteSubtree { cluster, name: a.name.clone() },
                }
            }
            (3, Some(a)) => {
                // pause or restore
                let mut na = a.a.clone();
                na.grp_submit_jobs = if na.grp_submit_jobs == Some(0) { None } else { Some(0) };
                Edit::SetAssoc { cluster, name: a.name.clone(), a: na }
            }
            (4, Some(a)) => {
                // QoS swap (list and default together)
                let mut na = a.a.clone();
                let q = r.pick(pool).unwrap().clone();
                na.qos = Some(if r.chance(50) { vec![q.clone()] } else { pool.to_vec() });
                na.default_qos = if r.chance(70) { Some(q) } else { None };
                Edit::SetAssoc { cluster, name: a.name.clone(), a: na }
            }
            (5, Some(a)) => {
                let mut na = gen_assoc(r, pool, false);
                if r.chance(50) {
                    na.qos = a.a.qos.clone();
                    na.default_qos = a.a.default_qos.clone();
                }
                Edit::SetAssoc { cluster, name: a.name.clone(), a: na }
            }
            (6, Some(a)) | (7, Some(a)) => {
                // membership churn: drop some, add some, change some
                // (an account with hundreds of users loses a few: each is a step)
                let keep = if a.users.len() > 30 { 98 } else { 60 };
                let mut us: Vec<UserSpec> = a.users.iter().filter(|_| r.chance(keep)).cloned().collect();
                for u in &mut us {
                    if r.chance(30) {
                        u.a = gen_assoc(r, pool, true);
                    }
                }
                us.extend(gen_users(r, users, pool, 2));
                Edit::SetUsers { cluster, name: a.name.clone(), users: us }
            }
            (8, _) => {
                let u = r.pick(users).unwrap().clone();
                let accts = c.user_accounts(&u);
                Edit::SetDefault { cluster, user: u, account: r.pick(&accts).cloned() }
            }
            (9, Some(a)) => {
                let mut na = a.a.clone();
                na.fairshare = if na.fairshare.as_deref() == Some("parent") { None } else { Some("parent".into()) };
                Edit::SetAssoc { cluster, name: a.name.clone(), a: na }
            }
            (10, _) => {
                let i = r.below(s.qos.len() + 1);
                let name = match s.qos.get(i) {
                    Some(q) => q.name.clone(),
                    None => namer.name(r, format!("{}q{i}", case.prefix)),
                };
                let mut q = gen_qos(r, name);
                q.managed = true;
                Edit::SetQos { q }
            }
            (12, Some(a)) => {
                // the record's text: new, the same in upper case (the file's text is stored
                // lower-cased: nothing to do), or not managed
                let text = match r.below(3) {
                    0 => gen_acct_text(r),
                    1 => Text {
                        desc: a.text.desc.as_ref().map(|d| d.to_uppercase()),
                        org: a.text.org.as_ref().map(|o| o.to_uppercase()),
                    },
                    _ => Text::default(),
                };
                Edit::SetText { name: a.name.clone(), text }
            }
            (_, _) => match r.pick(&s.qos) {
                Some(q) if r.chance(40) => Edit::DropQos { name: q.name.clone() },
                _ => Edit::SetDefault { cluster, user: r.pick(users).unwrap().clone(), account: None },
            },
        };
        case.edits.push(edit);
    }
    // a new project onboarded: new accounts, users new on every cluster, most with a declared
    // DefaultAccount; big enough for the planner to use `sacctmgr load` (plan::onboard)
    if r.chance(50) {
        let cluster = case.base.clusters[r.below(case.base.clusters.len())].name.clone();
        *next_acct += 1;
        let project = namer.name(r, format!("{mp}{}", *next_acct + 40));
        let a = gen_assoc(r, pool, false);
        let text = gen_acct_text(r);
        case.edits.push(Edit::AddAccount {
            cluster: cluster.clone(),
            acct: AcctSpec { name: project.clone(), parent: "root".into(), a, users: Vec::new(), text },
        });
        let mut newcomers: Vec<String> = Vec::new();
        for i in 0..10 + r.below(6) {
            newcomers.push(namer.name(r, format!("{}n{i}", case.prefix)));
        }
        let mut joined: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for _ in 0..2 + r.below(3) {
            *next_acct += 1;
            let name = namer.name(r, format!("{mp}{}", *next_acct + 40));
            let mut us = Vec::new();
            for u in &newcomers {
                if r.chance(80) {
                    let partition = if r.chance(3) { Some(partition(r)) } else { None };
                    let a = if r.chance(80) { AssocSpec::default() } else { gen_assoc(r, pool, true) };
                    us.push(UserSpec { name: u.clone(), partition, a });
                    joined.entry(u.clone()).or_default().push(name.clone());
                }
            }
            let a = if r.chance(50) { AssocSpec::default() } else { gen_assoc(r, pool, false) };
            let text = gen_acct_text(r);
            case.edits.push(Edit::AddAccount {
                cluster: cluster.clone(),
                acct: AcctSpec { name, parent: project.clone(), a, users: us, text },
            });
        }
        for (u, accts) in joined {
            let account = if r.chance(90) { r.pick(&accts).cloned() } else { None };
            case.edits.push(Edit::SetDefault { cluster: cluster.clone(), user: u, account });
        }
    }
    // users with no declared default: the desired file leaves some out
    for c in &case.base.clusters {
        for u in c.defaults.keys() {
            if r.chance(40) {
                case.edits.push(Edit::SetDefault { cluster: c.name.clone(), user: u.clone(), account: None });
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Invariants
// ------------------------------------------------------------------------------------------

/// Every rule violation of a state, one message each: an association (account or user row)
/// whose effective DefaultQOS is outside its effective QoS list, a user with associations and
/// no or a dangling DefaultAccount, a DefaultAccount without associations. (`check_state`
/// stops at the first per account; a step that repairs one row would then show the next one,
/// already there before, as new.)
pub fn violations(s: &State) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (cname, c) in &s.clusters {
        for acct in c.accounts.names() {
            let eff = c.accounts.effective_qos(acct.as_str());
            let def = c.accounts.effective_default_qos(acct.as_str());
            if let Some(d) = def
                && !eff.contains(d)
            {
                out.insert(format!("{cname}: account {acct}: DefaultQOS {d} outside its list"));
            }
            for (k, a) in c.users_of_account(acct) {
                let ueff = a.qos.effective(&eff);
                if let Some(d) = a.default_qos.as_ref().or(def)
                    && !ueff.contains(d)
                {
                    out.insert(format!("{cname}: user row {k:?}: DefaultQOS {d} outside its list"));
                }
            }
        }
        for e in check_default_accounts(cname, &c.defaults, &c.user_index()) {
            out.insert(e.message);
        }
    }
    out
}

/// Violations in `after` that were not in `before`.
pub fn new_violations(before: &BTreeSet<String>, after: &State) -> Vec<String> {
    violations(after).into_iter().filter(|v| !before.contains(v)).collect()
}

/// What differs between two states, for messages (the diff from `a` to `b`, and a fallback
/// when the diff sees nothing the equality does).
pub fn state_diff(real: &State, model: &State) -> String {
    let changes = slurmplan::diff::diff(model, real);
    let mut out = String::new();
    for c in &changes {
        out.push_str(&format!("  model -> real: {c:?}\n"));
    }
    for (cname, rc) in &real.clusters {
        if let Some(mc) = model.clusters.get(cname)
            && rc.defaults != mc.defaults
        {
            for (u, d) in &rc.defaults {
                if mc.defaults.get(u) != Some(d) {
                    out.push_str(&format!("  {cname}: real default of {u} = {d}, model {:?}\n", mc.defaults.get(u)));
                }
            }
            for (u, d) in &mc.defaults {
                if !rc.defaults.contains_key(u) {
                    out.push_str(&format!("  {cname}: model default of {u} = {d}, real none\n"));
                }
            }
        }
    }
    if out.is_empty() && real != model {
        out.push_str(&format!(
            "  (states differ where the diff does not look)\n  real: {real:?}\n  model: {model:?}\n"
        ));
    }
    out
}

// ------------------------------------------------------------------------------------------
// Fixtures: tests/data/differential/<name>/
//   case.txt         what failed, the seed and the case
//   before/          snapshot of the real state the plan was made from (raw sacctmgr reads)
//   desired.yaml     the desired file
//   steps.json       each command run, and whether real slurmdbd accepted it
//   after-NNN/       snapshot of the real state after step NNN
// ------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedStep {
    #[serde(with = "slurmplan::plan::file::schema::command_json")]
    pub command: Command,
    pub argv: Vec<String>,
    /// Real slurmdbd's verdict (apply's classification of its output).
    pub accepted: bool,
    pub output: String,
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/differential")
}

pub fn after_dir(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("after-{:03}", i + 1))
}

fn load_snapshot(dir: &Path) -> Result<State, String> {
    snapshot::load(dir).map_err(|d| format!("{}: {d:?}", dir.display()))
}

/// Replay a fixture against the model: each recorded command on the model from the recorded
/// real state must give what real slurmdbd gave (the same verdict and the same state; a
/// command the model refuses because it breaks a rule 22.05 does not enforce counts as a
/// refusal when the real state after it shows the broken rule, and so does one it refuses
/// because no read can predict what slurmdbd makes of it, which a plan never runs); and a
/// plan made now from
/// the same state and desired file must replay on the model, keep the invariants, and
/// converge (a second plan is empty).
pub fn replay_fixture(dir: &Path) -> Result<(), String> {
    let before = load_snapshot(&dir.join("before"))?;
    let steps: Vec<RecordedStep> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("steps.json")).map_err(|e| format!("steps.json: {e}"))?)
            .map_err(|e| format!("steps.json: {e}"))?;
    let mut errors = Vec::new();
    let mut sim = RuleModel::new(before.clone());
    let mut prev = before.clone();
    for (i, st) in steps.iter().enumerate() {
        let real = load_snapshot(&after_dir(dir, i))?;
        let model = sim.apply(&st.command);
        match (st.accepted, model) {
            (true, Ok(())) => {
                if sim.state != real {
                    errors.push(format!(
                        "step {} `{}`: the model's state differs from real slurmdbd's:\n{}",
                        i + 1,
                        st.argv.join(" "),
                        state_diff(&real, &sim.state)
                    ));
                    break;
                }
            }
            (true, Err(e)) => {
                let broke = new_violations(&violations(&prev), &real);
                if broke.is_empty() && !e.is_unpredictable() {
                    errors.push(format!(
                        "step {} `{}`: real slurmdbd accepted it, the model refuses: {e}",
                        i + 1,
                        st.argv.join(" ")
                    ));
                }
                break;
            }
            (false, Ok(())) => {
                errors.push(format!(
                    "step {} `{}`: real slurmdbd refused it ({}), the model accepts it",
                    i + 1,
                    st.argv.join(" "),
                    st.output.trim()
                ));
                break;
            }
            (false, Err(_)) => break,
        }
        prev = real;
    }
    if let Err(e) = check_plan_on_model(dir, &before) {
        errors.push(e);
    }
    if errors.is_empty() { Ok(()) } else { Err(errors.join("\n")) }
}

/// A plan from `before` to the fixture's desired file replays on the model, keeps the
/// invariants after every step, and leaves nothing to do.
pub fn check_plan_on_model(dir: &Path, before: &State) -> Result<(), String> {
    let path = dir.join("desired.yaml");
    let desired = slurmplan::desired::load_file(&path).map_err(|d| format!("desired.yaml: {d:?}"))?;
    let resolved = slurmplan::desired::resolve::resolve(&desired, before).map_err(|d| format!("resolve: {d:?}"))?;
    let plan = make_plan(before, &resolved.state, "fixture").map_err(|e| format!("plan: {e}"))?;
    let was = violations(before);
    let mut sim = RuleModel::new(before.clone());
    for s in &plan.steps {
        sim.apply(&s.command)
            .map_err(|e| format!("plan step {} `{}` refused by the model: {e}", s.number, s.argv.join(" ")))?;
        let broke = new_violations(&was, &sim.state);
        if !broke.is_empty() {
            return Err(format!("plan step {} `{}` breaks {broke:?}", s.number, s.argv.join(" ")));
        }
    }
    let again =
        slurmplan::desired::resolve::resolve(&desired, &sim.state).map_err(|d| format!("resolve again: {d:?}"))?;
    let second = make_plan(&sim.state, &again.state, "fixture").map_err(|e| format!("second plan: {e}"))?;
    if !second.is_empty() {
        let argv: Vec<String> = second.steps.iter().map(|s| s.argv.join(" ")).collect();
        return Err(format!("the plan does not converge on the model; a second plan has {argv:#?}"));
    }
    Ok(())
}
