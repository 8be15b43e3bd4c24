//! Tests of the desired-state loader: a full valid file, one test per check with its
//! line:column, a file with several errors at once (snapshot), warnings, and a no-panic property.

use super::*;
use slurmplan_diag::Severity;
use slurmplan_model::{Fairshare, QosList, Tres};
use std::path::Path;

const FULL: &str = include_str!("../../../tests/data/desired/full.yaml");
const FIVE: &str = include_str!("../../../tests/data/desired/five_errors.yaml");
const UPPER: &str = include_str!("../../../tests/data/desired/uppercase.yaml");

fn n(s: &str) -> Name {
    Name::keep_case(s, slurmplan_model::NameKind::Account).unwrap()
}

fn load(text: &str) -> Result<Desired, Vec<Diagnostic>> {
    load_str(Path::new("d.yaml"), text)
}

/// (severity, code, line, column) of every diagnostic.
fn codes(diags: &[Diagnostic]) -> Vec<(Severity, &'static str, usize, usize)> {
    diags
        .iter()
        .map(|d| {
            let l = d.location.clone().unwrap();
            (d.severity, d.code, l.line, l.column)
        })
        .collect()
}

fn errors_of(text: &str) -> Vec<(&'static str, usize, usize)> {
    let diags = load(text).expect_err("expected errors");
    codes(&diags).into_iter().filter(|(s, ..)| *s == Severity::Error).map(|(_, c, l, col)| (c, l, col)).collect()
}

fn warnings_of(text: &str) -> Vec<(&'static str, usize, usize)> {
    let d = load(text).unwrap_or_else(|e| panic!("{}", render(&e)));
    codes(&d.warnings).into_iter().map(|(_, c, l, col)| (c, l, col)).collect()
}

fn render(diags: &[Diagnostic]) -> String {
    diags.iter().map(|d| format!("{d}\n")).collect()
}

/// A minimal valid header for small cases.
const HEAD: &str = "version: 1\nmanaged:\n  roots: [hpc]\n";

#[test]
fn full_file_loads() {
    let d = load_str(Path::new("tests/data/desired/full.yaml"), FULL).unwrap_or_else(|e| panic!("{}", render(&e)));
    assert!(d.hash.starts_with("sha256:"));
    assert!(!d.preserve_user_case);
    assert_eq!(d.scope.roots, BTreeSet::from([n("hpc")]));
    assert_eq!(d.scope.prefixes, vec!["hpc_".to_string()]);
    assert_eq!(d.scope.qos_prefixes, vec!["hpc_".to_string()]);
    assert_eq!(d.protect, BTreeSet::from([n("hpc_keep")]));

    let paused = &d.qos[&n("paused")];
    assert_eq!(paused.description.as_deref(), Some("paused allocations"));
    assert_eq!(paused.flags, BTreeSet::from(["denyonlimit".to_string(), "nodecay".to_string()]));
    assert_eq!(paused.grp_tres_mins, Tres::from([("cpu".into(), 1000), ("mem".into(), 2048)]));
    assert_eq!(paused.grp_submit_jobs, Some(0));
    assert_eq!(paused.max_wall, Some(90));
    assert_eq!(d.qos[&n("normal")], Qos::default());

    let c = &d.clusters[&n("testcl")];
    let hpc = &c.accounts[&n("hpc")];
    assert_eq!(hpc.parent, n("root"));
    let l = &hpc.assoc.limits;
    assert_eq!(l.fairshare, Some(Fairshare::Shares(10)));
    assert_eq!((l.grp_jobs, l.grp_submit_jobs, l.max_jobs, l.max_submit_jobs), (Some(5), Some(0), Some(10), Some(20)));
    assert_eq!(l.grp_tres_mins["gres/gpu"], 60);
    assert_eq!(l.grp_tres_mins["mem"], 1024);
    assert_eq!((l.grp_wall, l.max_wall), (Some(60), Some(1440)));
    assert_eq!(hpc.assoc.qos, QosList::Set(BTreeSet::from([n("normal"), n("paused")])));
    assert_eq!(hpc.assoc.default_qos, Some(n("normal")));
    assert_eq!(c.accounts[&n("hpc_proj1")].assoc.limits.fairshare, Some(Fairshare::Parent));
    assert_eq!(c.accounts[&n("hpc_keep")].assoc.limits.fairshare, None, "fairshare 1 is Slurm's default");

    let bob = UserKey { account: n("hpc"), user: n("bob"), partition: Some(n("gpu")) };
    assert_eq!(c.users.get(&bob).unwrap().assoc.limits.max_jobs, Some(2));
    assert_eq!(c.users.get(&bob).unwrap().assoc.default_qos, Some(n("normal")));
    let alice = UserKey { account: n("hpc"), user: n("alice"), partition: None };
    assert_eq!(c.users.get(&alice).unwrap().assoc, Assoc::default());
    assert_eq!(c.users.len(), 4);
    assert_eq!(c.defaults[&n("alice")], n("hpc"));
    assert_eq!(c.defaults[&n("carol")], n("hpc_proj1"));

    // Records merged over clusters.
    assert_eq!(d.accounts[&n("hpc")].description.as_deref(), Some("hpc customers"));
    assert_eq!(d.accounts[&n("hpc")].organization.as_deref(), Some("hpc"));
    assert_eq!(d.accounts[&n("hpc_keep")], AccountRecord::default());
    assert!(d.clusters[&n("second")].accounts[&n("hpc")].assoc.qos.is_inherit());

    let loc = d.location(&Decl::Account(n("testcl"), n("hpc")));
    assert_eq!((loc.line, loc.column), (21, 7));
    assert_eq!(loc.file, d.path);
    assert_eq!(d.location(&Decl::Qos(n("paused"))).line, 11);
    assert_eq!(d.location(&Decl::User(n("testcl"), n("alice"))).line, 54);
    let bob_gpu = UserKey { account: n("hpc"), user: n("bob"), partition: Some(n("gpu")) };
    assert_eq!(d.location(&Decl::UserAssoc(n("testcl"), bob_gpu)).line, 40);
    let alice = UserKey { account: n("hpc"), user: n("alice"), partition: None };
    assert_eq!(d.location(&Decl::UserAssoc(n("testcl"), alice)).line, 39);
    assert_eq!(d.location(&Decl::Qos(n("undeclared"))).line, 0);

    assert_eq!(codes(&d.warnings), vec![], "the full example is clean");
}

#[test]
fn scope_matching() {
    let s =
        Scope { roots: BTreeSet::from([n("hpc")]), prefixes: vec!["proj_".into()], qos_prefixes: vec!["hpc_".into()] };
    assert!(s.manages_account(&n("hpc"), []));
    assert!(s.manages_account(&n("x"), [&n("hpc"), &n("root")]));
    assert!(s.manages_account(&n("proj_1"), [&n("root")]));
    assert!(!s.manages_account(&n("other"), [&n("root")]));
    assert!(!s.manages_account(&n("root"), []));
    assert!(s.manages_qos(&n("hpc_paused")));
    assert!(!s.manages_qos(&n("normal")));
}

#[test]
fn yaml_syntax_error_has_location() {
    let diags = load("version: 1\nmanaged: [\n").unwrap_err();
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "yaml-syntax");
    assert!(diags[0].location.as_ref().unwrap().line >= 2, "{}", render(&diags));
}

#[test]
fn unknown_keys_suggest_or_list() {
    let text = format!("{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        max_wal: 5\n        zzz: 1\n");
    let diags = load(&text).unwrap_err();
    assert_eq!(codes(&diags), vec![(Severity::Error, "unknown-key", 8, 9), (Severity::Error, "unknown-key", 9, 9)]);
    assert_eq!(diags[0].hint.as_deref(), Some("did you mean `max_wall`?"));
    assert!(diags[1].hint.as_deref().unwrap().starts_with("allowed keys here: parent, description"));
    assert_eq!(errors_of("version: 1\nmanage:\n  roots: [a]\n"), vec![("empty-scope", 1, 1), ("unknown-key", 2, 1)]);
}

#[test]
fn wrong_types() {
    let text = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        max_jobs: \"5\"\n        grp_tres: [cpu]\n        description: 42\n"
    );
    assert_eq!(errors_of(&text), vec![("wrong-type", 8, 19), ("wrong-type", 9, 19), ("wrong-type", 10, 22)]);
    assert_eq!(errors_of("version: 1\nmanaged: {roots: hpc}\n"), vec![("wrong-type", 2, 18)]);
    assert_eq!(errors_of("- a\n"), vec![("wrong-type", 1, 1)]);
    assert_eq!(errors_of(""), vec![("wrong-type", 0, 0)]);
}

#[test]
fn version_and_scope() {
    assert_eq!(errors_of("managed: {roots: [a]}\n"), vec![("missing-key", 1, 1)]);
    assert_eq!(errors_of("version: 2\nmanaged: {roots: [a]}\n"), vec![("bad-version", 1, 10)]);
    assert_eq!(errors_of("version: 1\n"), vec![("empty-scope", 1, 1)]);
    assert_eq!(errors_of("version: 1\nmanaged:\n  qos_prefixes: [x]\n"), vec![("empty-scope", 2, 1)]);
    assert_eq!(errors_of("version: 1\nmanaged:\n"), vec![("empty-scope", 2, 1)]);
    assert_eq!(errors_of("version: 1\nmanaged:\n  roots: []\n"), vec![("empty-scope", 3, 3)]);
}

#[test]
fn bad_names_and_text() {
    let text = format!(
        "{HEAD}qos:\n  \"a b\": {{}}\nclusters:\n  c:\n    accounts:\n      \"co,mma\": {{}}\n      hpc:\n        organization: \"it's\"\n        users: [\"-x\", {{name: ok, partition: \"p[1-2]\"}}]\n"
    );
    assert_eq!(
        errors_of(&text),
        vec![("bad-name", 5, 3), ("bad-name", 9, 7), ("bad-text", 11, 23), ("bad-name", 12, 17), ("bad-name", 12, 45)]
    );
    let diags = load(&text).unwrap_err();
    assert!(
        diags[1].message.contains("co,mma")
            && diags[1].hint.as_deref() == Some("write one name per entry, without commas")
    );
}

#[test]
fn duplicates() {
    // Account twice by case, and a YAML duplicate key.
    let text = format!(
        "{HEAD}qos:\n  normal: {{}}\n  Normal: {{}}\nclusters:\n  c:\n    accounts:\n      hpc: {{}}\n      Hpc: {{}}\n      hpc: {{}}\n      x:\n        max_jobs: 1\n        max_jobs: 2\n        users: [al, {{name: al}}, {{name: al, partition: gpu}}, {{name: al, partition: GPU}}]\n"
    );
    assert_eq!(
        errors_of(&text),
        vec![
            ("duplicate-qos", 6, 3),
            ("duplicate-account", 11, 7),
            ("duplicate-account", 12, 7),
            ("duplicate-key", 15, 9),
            ("duplicate-user", 16, 21),
            ("duplicate-user", 16, 61),
        ]
    );
    // Out of order, the repeat not next to the first, and over several lines: each later
    // entry is refused and points at the first; the users in between are kept.
    let text = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        users:\n          - zed\n          - al\n          - {{name: zed}}\n          - bo\n          - al\n"
    );
    let diags = load(&text).unwrap_err();
    assert_eq!(errors_of(&text), vec![("duplicate-user", 11, 13), ("duplicate-user", 13, 13)]);
    assert!(diags[0].message.contains("user `zed` is listed twice under account `hpc`"), "{}", diags[0].message);
    assert_eq!(diags[0].hint.as_deref(), Some("merge it with the entry at line 9"));
    assert_eq!(diags[1].hint.as_deref(), Some("merge it with the entry at line 10"));
    // The same users without the repeats load, in key order.
    let text = format!("{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        users: [zed, al, bo]\n");
    let d = load(&text).unwrap_or_else(|e| panic!("{}", render(&e)));
    let users: Vec<&str> = d.clusters.values().next().unwrap().users.keys().map(|k| k.user.as_str()).collect();
    assert_eq!(users, ["al", "bo", "zed"]);
}

#[test]
fn parents() {
    let text = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc: {{parent: elsewhere}}\n      a: {{parent: b}}\n      b: {{parent: c}}\n      c: {{parent: a}}\n      root: {{parent: hpc}}\n"
    );
    let diags = load(&text).unwrap_err();
    assert_eq!(
        codes(&diags),
        vec![
            (Severity::Warning, "undeclared-parent", 7, 21),
            (Severity::Error, "parent-cycle", 8, 19),
            (Severity::Error, "root-parent", 11, 22),
        ]
    );
    assert!(diags[1].message.ends_with("`a` -> `b` -> `c` -> `a`"), "{}", diags[1].message);
    assert_eq!(diags[0].hint.as_deref(), Some("it must already exist on the cluster; checked at plan time"));
    // Self-parent is a cycle of one.
    let text = format!("{HEAD}clusters:\n  c:\n    accounts:\n      a: {{parent: a}}\n");
    assert_eq!(errors_of(&text), vec![("parent-cycle", 7, 19)]);
}

#[test]
fn default_qos_rules() {
    let text = format!(
        "{HEAD}qos: {{normal: {{}}, hi: {{}}}}\nclusters:\n  c:\n    accounts:\n      hpc:\n        qos: [normal]\n        default_qos: hi\n        users:\n          - {{name: u, qos: [hi], default_qos: normal}}\n          - {{name: v, default_qos: hi}}\n      other:\n        default_qos: normal\n        qos: []\n"
    );
    let diags = load(&text).unwrap_err();
    assert_eq!(
        codes(&diags),
        vec![
            (Severity::Error, "default-qos-not-in-qos", 10, 22),
            (Severity::Error, "default-qos-not-in-qos", 12, 47),
            (Severity::Warning, "default-qos-unchecked", 13, 36),
            (Severity::Error, "empty-qos-list", 16, 14),
        ]
    );
    assert_eq!(diags[3].hint.as_deref(), Some("omit `qos` to inherit the parent's list"));
}

#[test]
fn default_account_rules() {
    let text = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc: {{users: [alice]}}\n      proj: {{}}\n    users:\n      alice: {{default_account: hpc}}\n      bob: {{default_account: proj}}\n      carol: {{default_account: existing}}\n      dave: {{}}\n"
    );
    let diags = load(&text).unwrap_err();
    assert_eq!(
        codes(&diags),
        vec![
            (Severity::Error, "default-account-not-associated", 11, 30),
            (Severity::Warning, "default-account-unchecked", 12, 32),
            (Severity::Warning, "user-without-association", 13, 7),
        ]
    );
}

#[test]
fn undeclared_qos_is_a_warning_once_per_name() {
    let text = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        qos: [gold, normal]\n        default_qos: gold\n"
    );
    let w = warnings_of(&text);
    assert_eq!(w, vec![("undeclared-qos", 8, 15), ("undeclared-qos", 8, 21)]);
    let d = load(&text).unwrap();
    assert_eq!(d.warnings[0].message, "QoS `gold` is not declared under `qos:` (referenced 2 times)");
}

#[test]
fn values_tres_and_limits() {
    let text = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        grp_tres: {{cpu: -1, CPU: 2, mem: 1.5X, gres/gpu: 2G}}\n        max_wall: \"00:00:30\"\n        fairshare: -3\n        grp_wall: lots\n"
    );
    assert_eq!(
        errors_of(&text),
        vec![
            ("bad-value", 8, 25),
            ("bad-tres", 8, 29),
            ("bad-value", 8, 42),
            ("bad-value", 9, 19),
            ("bad-value", 10, 20),
            ("bad-value", 11, 19),
        ]
    );
    let diags = load(&text).unwrap_err();
    assert_eq!(diags[0].hint.as_deref(), Some("omit `clusters.c.accounts.hpc.grp_tres.cpu` to leave it unset"));
    assert_eq!(diags[1].hint.as_deref(), Some("TRES names are lower case: write `cpu`"));
    // Units on any TRES and fairshare 0 are fine.
    let ok = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        grp_tres: {{billing: 1G, mem: 1T}}\n        fairshare: 0\n"
    );
    let d = load(&ok).unwrap();
    let a = &d.clusters[&n("c")].accounts[&n("hpc")].assoc.limits;
    assert_eq!(a.grp_tres["mem"], 1024 * 1024);
    // as sacctmgr reads it: a count times 1024 per step (mem counts MiB)
    assert_eq!(a.grp_tres["billing"], 1 << 30);
    assert_eq!(a.fairshare, Some(Fairshare::Shares(0)));
}

#[test]
fn account_record_conflict_across_clusters() {
    let text = format!(
        "{HEAD}clusters:\n  a:\n    accounts:\n      hpc: {{description: One}}\n  b:\n    accounts:\n      hpc: {{description: two, organization: x}}\n"
    );
    assert_eq!(errors_of(&text), vec![("account-record-conflict", 10, 26)]);
    let same = format!(
        "{HEAD}clusters:\n  a:\n    accounts:\n      hpc: {{description: One}}\n  b:\n    accounts:\n      hpc: {{description: one, organization: x}}\n"
    );
    let d = load(&same).unwrap();
    assert_eq!(
        d.accounts[&n("hpc")],
        AccountRecord { description: Some("one".into()), organization: Some("x".into()) }
    );
}

#[test]
fn five_errors_reported_at_once() {
    let diags = load_str(Path::new("tests/data/desired/five_errors.yaml"), FIVE).unwrap_err();
    assert_eq!(diags.iter().filter(|d| d.is_error()).count(), 5, "{}", render(&diags));
    insta::assert_snapshot!(render(&diags));
}

#[test]
fn upper_case_names_warn_and_fold() {
    let d =
        load_str(Path::new("tests/data/desired/uppercase.yaml"), UPPER).unwrap_or_else(|e| panic!("{}", render(&e)));
    let w: Vec<_> = d.warnings.iter().map(|w| (w.code, w.location.as_ref().unwrap().line)).collect();
    assert_eq!(
        w,
        vec![
            ("lowercased-name", 3),
            ("lowercased-name", 5),
            ("lowercased-name", 7),
            ("lowercased-name", 9),
            ("lowercased-name", 10),
            ("lowercased-name", 11),
            ("lowercased-name", 13),
        ]
    );
    assert!(d.warnings[0].message.contains("sacctmgr lower-cases it too"));
    assert_eq!(d.scope.prefixes, vec!["hpc_".to_string()]);
    let c = &d.clusters[&n("testcl")];
    assert_eq!(c.defaults[&n("alice")], n("hpc_a"));
    assert!(c.users.contains_key(&UserKey { account: n("hpc_a"), user: n("alice"), partition: None }));

    // With PreserveCaseUser, user names keep case (and `Alice` is not `ALICE`).
    let preserved = UPPER.replace("version: 1\n", "version: 1\nsettings: {preserve_user_case: true}\n");
    let diags = load(&preserved).unwrap_err();
    assert_eq!(
        diags.iter().filter(|d| d.is_error()).map(|d| d.code).collect::<Vec<_>>(),
        vec!["default-account-not-associated"]
    );
}

#[test]
fn io_error_is_one_diagnostic() {
    let diags = load_file(Path::new("/nonexistent/desired.yaml")).unwrap_err();
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "io");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.yaml");
    std::fs::write(&p, FULL).unwrap();
    let d = load_file(&p).unwrap();
    assert_eq!(d.path, p);
    assert_eq!(d.hash, slurmplan_model::fingerprint::hash_bytes(FULL.as_bytes()));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn never_panics_on_arbitrary_text(s in "\\PC{0,200}") {
        let _ = load(&s);
    }

    #[test]
    fn never_panics_on_yamlish_text(s in "[a-zA-Z_:{}\\[\\], \\-\"'\n0-9#&*!|>%@]{0,300}") {
        let _ = load(&s);
        let _ = load(&format!("{HEAD}{s}"));
    }
}

#[test]
fn huge_numbers_are_errors_not_panics() {
    let text = format!(
        "{HEAD}clusters:\n  c:\n    accounts:\n      hpc:\n        grp_tres: {{mem: 999999999999999999999999999999999999P, cpu: 99999999999999999999999}}\n        max_wall: \"99999999999999999999-00:00:00\"\n        fairshare: 99999999999\n"
    );
    let errs = errors_of(&text);
    assert_eq!(errs.len(), 4, "{errs:?}");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for text in ["[".repeat(100_000), format!("a: {}", "- ".repeat(50_000)), "{a: ".repeat(20_000)] {
        assert!(load(&text).is_err());
    }
}

#[test]
fn docs_example_loads_cleanly() {
    let doc = include_str!("../../../docs/desired-format.md");
    let start = doc.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let len = doc[start..].find("```").expect("closed block");
    let d = load_str(Path::new("docs/desired-format.md"), &doc[start..start + len])
        .unwrap_or_else(|e| panic!("{}", render(&e)));
    assert_eq!(render(&d.warnings), "");
    assert_eq!(d.clusters.len(), 2);
}

mod declared_users {
    use super::super::{DeclaredUser, DeclaredUsers};
    use proptest::prelude::*;
    use slurmplan_model::{Assoc, Name, NameKind, UserKey};

    fn key(a: &str, u: &str, p: Option<&str>) -> UserKey {
        let n = |s: &str| Name::keep_case(s, NameKind::Account).unwrap();
        UserKey { account: n(a), user: n(u), partition: p.map(n) }
    }

    proptest! {
        /// Any declaration order (grouped by account as the loader lists them, or not at
        /// all): walked in key order, found by key, refused when a key repeats.
        #[test]
        fn ordered_found_and_unique(
            raw in prop::collection::vec(("a[0-9]{1,2}", "u[0-9]{1,2}", prop::option::of("p[12]")), 0..80),
            grouped in any::<bool>(),
        ) {
            let mut keys: Vec<UserKey> = raw.iter().map(|(a, u, p)| key(a, u, p.as_deref())).collect();
            if grouped {
                // stable: accounts together, in first-seen order, users in declaration order
                let order: Vec<Name> = keys.iter().map(|k| k.account.clone()).fold(Vec::new(), |mut v, a| {
                    if !v.contains(&a) { v.push(a); }
                    v
                });
                keys.sort_by_key(|k| order.iter().position(|a| *a == k.account));
            }
            let list: Vec<DeclaredUser> =
                keys.iter().enumerate().map(|(i, k)| DeclaredUser { key: k.clone(), assoc: Assoc::default(), at: (i as u32, 1) }).collect();
            let mut want = keys.clone();
            want.sort();
            let repeated = want.windows(2).any(|w| w[0] == w[1]);
            match DeclaredUsers::from_unsorted(list) {
                None => prop_assert!(repeated),
                Some(d) => {
                    prop_assert!(!repeated);
                    prop_assert_eq!(d.keys().cloned().collect::<Vec<_>>(), want.clone());
                    for (i, k) in keys.iter().enumerate() {
                        prop_assert_eq!(d.get(k).map(|u| u.at), Some((i as u32, 1)));
                    }
                    prop_assert!(d.get(&key("b1", "u1", None)).is_none());
                    prop_assert_eq!(d.len(), keys.len());
                }
            }
        }
    }
}
