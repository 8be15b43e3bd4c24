//! Offline half of the differential test (tests/differential_real.rs): every fixture saved
//! under tests/data/differential/ from a real slurmdbd run is replayed against the model. The
//! model must give each recorded command the verdict and the state real slurmdbd gave, and a
//! plan made now from the recorded state and desired file must be valid on the model and
//! converge. No test bed needed. Must not edit or drop a fixture to make it pass: a fixture is
//! what real slurmdbd did, and the model must match it.

mod common;
mod differential;

use differential::{fixtures_dir, gen_case, replay_fixture};

#[test]
fn saved_real_slurmdbd_runs_replay_on_the_model() {
    let dir = fixtures_dir();
    let mut names: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.join("steps.json").exists()).collect(),
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    names.sort();
    assert!(!names.is_empty(), "no fixtures in {}", dir.display());
    let mut errors = Vec::new();
    for p in &names {
        if let Err(e) = replay_fixture(p) {
            errors.push(format!("{}:\n{e}", p.display()));
        }
    }
    assert!(errors.is_empty(), "{} of {} fixtures fail:\n{}", errors.len(), names.len(), errors.join("\n\n"));
}

/// The generator's desired files load, the same seed makes the same case, and what it seeds is
/// varied: several clusters, partitions (rows with their own QoS list and DefaultQOS), user QoS
/// lists, deep trees, a user in many accounts, an account with hundreds of users, every odd
/// character a name may hold and 64-byte names, long descriptions, the violations only 22.05
/// lets through at every level, and every kind of edit.
#[test]
fn generated_cases_load_and_cover_the_listed_shapes() {
    let mut seen = std::collections::BTreeSet::new();
    let mut odd_chars = std::collections::BTreeSet::new();
    for seed in 0..400u64 {
        let case = gen_case(seed, seed % 2 == 0);
        let yaml = case.desired_yaml();
        if let Err(d) = slurmplan::desired::load_str(std::path::Path::new("d.yaml"), &yaml) {
            panic!("seed {seed}: the desired file does not load: {d:?}\n{yaml}");
        }
        let again = gen_case(seed, seed % 2 == 0);
        assert_eq!(
            (again.describe(), again.desired_yaml()),
            (case.describe(), yaml.clone()),
            "seed {seed}: the same seed made another case"
        );
        // the shrinker tries half of many edits first
        if case.edits.len() > 3 {
            assert!(
                case.smaller()[0].edits.len() <= case.edits.len() / 2 + 1,
                "seed {seed}: shrinking starts with halves"
            );
        }
        let seeds: Vec<String> = case.seed_argv().into_iter().map(|w| w.argv.join(" ")).collect();
        let all = seeds.join("\n");
        let names: Vec<&String> = case
            .base
            .clusters
            .iter()
            .flat_map(|c| {
                c.accounts.iter().flat_map(|a| std::iter::once(&a.name).chain(a.users.iter().map(|u| &u.name)))
            })
            .collect();
        for n in &names {
            odd_chars.extend(n.chars().filter(|c| !c.is_ascii_alphanumeric()));
        }
        let depth = |c: &differential::ClusterSpec| {
            c.accounts
                .iter()
                .map(|a| {
                    let (mut at, mut d) = (a.parent.clone(), 1);
                    while let Some(p) = c.accounts.iter().find(|x| x.name == at) {
                        at = p.parent.clone();
                        d += 1;
                    }
                    d
                })
                .max()
                .unwrap_or(0)
        };
        let rows_of_one_user = case
            .base
            .clusters
            .iter()
            .flat_map(|c| {
                let mut per: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> = Default::default();
                for a in &c.accounts {
                    for u in &a.users {
                        per.entry(&u.name).or_default().insert(&a.name);
                    }
                }
                per.into_values().map(|s| s.len())
            })
            .max()
            .unwrap_or(0);
        let part_own = case
            .base
            .clusters
            .iter()
            .flat_map(|c| &c.accounts)
            .flat_map(|a| &a.users)
            .any(|u| u.partition.is_some() && u.a.qos.is_some() && u.a.default_qos.is_some());
        for (what, hit) in [
            ("two clusters", case.base.clusters.len() == 2),
            ("partition", all.contains("partition=")),
            ("partition row with own qos and defaultqos", part_own),
            ("user qos list", seeds.iter().any(|s| s.starts_with("add user") && s.contains(" qos="))),
            ("user defaultqos", seeds.iter().any(|s| s.starts_with("add user") && s.contains("defaultqos="))),
            ("fairshare parent", all.contains("fairshare=parent")),
            ("gres/gpu with unit", all.contains("gres/gpu=2K")),
            ("mem with unit", all.contains("mem=2G")),
            ("pause 0", all.contains("grpsubmitjobs=0")),
            ("record only", !case.base.records.is_empty()),
            ("qos delta", all.contains("qos+=")),
            ("tree 6 deep", case.base.clusters.iter().any(|c| depth(c) >= 6)),
            ("user in 6 accounts", rows_of_one_user >= 6),
            (
                "account with 120 users",
                case.base.clusters.iter().flat_map(|c| &c.accounts).any(|a| a.users.len() >= 120),
            ),
            ("64-byte name", names.iter().any(|n| n.len() == 64)),
            ("description of 500 bytes", all.lines().any(|l| l.contains("description=") && l.len() > 500)),
            ("organization", all.contains("organization=")),
            (
                "22.05 user default qos outside",
                case.mess.iter().any(|m| {
                    m.what.contains("outside") && !m.what.contains("account ") && !m.what.contains("partition")
                }),
            ),
            (
                "22.05 partition row default qos outside",
                case.mess.iter().any(|m| m.what.contains("outside") && m.what.contains("partition")),
            ),
            ("22.05 account default qos outside", case.mess.iter().any(|m| m.what.contains("of account"))),
            ("22.05 dangling default", case.mess.iter().any(|m| m.what.contains("dangling"))),
            ("reparent", yaml_has(&case, "Reparent")),
            ("subtree delete", yaml_has(&case, "DeleteSubtree")),
            ("membership churn", yaml_has(&case, "SetUsers")),
            ("no declared default", yaml_has(&case, "account: None")),
            ("qos attributes", yaml_has(&case, "SetQos")),
            ("record text", yaml_has(&case, "SetText")),
        ] {
            if hit {
                seen.insert(what);
            }
        }
    }
    assert_eq!(seen.len(), 27, "shapes seen: {seen:?}");
    let want: std::collections::BTreeSet<char> = "@+:~!#$%^&*(){}/?<>;.-_ü".chars().collect();
    assert_eq!(odd_chars, want, "characters in generated names");
}

fn yaml_has(case: &differential::Case, what: &str) -> bool {
    case.edits.iter().any(|e| format!("{e:?}").contains(what))
}

/// The generator never writes a desired file slurmplan refuses (a generator bug, not a model
/// one): the seeds where real runs found one (32362 on 24.11: one account record with two
/// descriptions on two clusters), and a thousand more, on both versions' generators.
#[test]
fn generated_desired_files_load_on_seeds_real_runs_tried() {
    for seed in std::iter::once(32362).chain(30000..31000u64) {
        for is_2205 in [false, true] {
            let yaml = gen_case(seed, is_2205).desired_yaml();
            if let Err(d) = slurmplan::desired::load_str(std::path::Path::new("d.yaml"), &yaml) {
                panic!("seed {seed} (22.05: {is_2205}): the desired file does not load: {d:?}\n{yaml}");
            }
        }
    }
}
