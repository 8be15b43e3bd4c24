//! Unit tests and property tests of the snapshot parsers (real-output tests: tests/sacctmgr_real.rs).

use super::rows::split_cells;
use super::*;
use proptest::prelude::*;
use slurmplan_diag::Diagnostic;
use slurmplan_model::names::{Name, NameKind};
use slurmplan_model::values::{self, Fairshare, QosList, Tres};
use slurmplan_model::{AccountGraph, AccountRecord, Assoc, AssocData, ClusterState, Limits, Qos, State, UserKey};
use std::collections::{BTreeMap, BTreeSet};

fn n(s: &str) -> Name {
    Name::keep_case(s, NameKind::User).unwrap()
}

fn raw(clusters: &str, assocs: &str, defaults: &str, descr: &str, org: &str, qos: &str) -> RawReads {
    RawReads {
        clusters: Source::new("clusters.txt", clusters),
        assocs: Source::new("assocs.txt", assocs),
        defaults: Source::new("defaults.txt", defaults),
        accounts_descr: Source::new("accounts-descr.txt", descr),
        accounts_org: Source::new("accounts-org.txt", org),
        qos: Source::new("qos.txt", qos),
    }
}

/// 18 assoc cells from a few named ones.
fn arow(cells: &[(&str, &str)]) -> String {
    ASSOC_COLUMNS
        .iter()
        .map(|c| cells.iter().find(|(k, _)| k == c).map(|(_, v)| *v).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("|")
}

fn errors_of(r: Result<State, Vec<Diagnostic>>) -> Vec<String> {
    r.unwrap_err().iter().map(|d| d.to_string()).collect()
}

#[test]
fn columns_match_the_reads() {
    let cols = |f| reads::format_columns(reads::read_for(f).unwrap());
    assert_eq!(cols(reads::CLUSTERS), CLUSTER_COLUMNS);
    assert_eq!(cols(reads::ASSOCS), ASSOC_COLUMNS);
    assert_eq!(cols(reads::DEFAULTS), DEFAULT_COLUMNS);
    assert_eq!(cols(reads::ACCOUNTS_DESCR), DESCR_COLUMNS);
    assert_eq!(cols(reads::ACCOUNTS_ORG), ORG_COLUMNS);
    assert_eq!(cols(reads::QOS), QOS_COLUMNS);
}

#[test]
fn association_cell_positions_name_their_columns() {
    let at = [
        (col::CLUSTER, "Cluster"),
        (col::ACCOUNT, "Account"),
        (col::USER, "User"),
        (col::PARTITION, "Partition"),
        (col::PARENT, "ParentName"),
        (col::SHARE, "Share"),
        (col::GRP_JOBS, "GrpJobs"),
        (col::GRP_SUBMIT_JOBS, "GrpSubmitJobs"),
        (col::GRP_TRES, "GrpTRES"),
        (col::GRP_TRES_MINS, "GrpTRESMins"),
        (col::GRP_WALL, "GrpWall"),
        (col::MAX_JOBS, "MaxJobs"),
        (col::MAX_SUBMIT_JOBS, "MaxSubmitJobs"),
        (col::MAX_TRES, "MaxTRES"),
        (col::MAX_TRES_MINS, "MaxTRESMins"),
        (col::MAX_WALL, "MaxWall"),
        (col::QOS, "QOS"),
        (col::DEFAULT_QOS, "DefaultQOS"),
    ];
    assert_eq!(at.len(), ASSOC_COLUMNS.len());
    for (i, name) in at {
        assert_eq!(ASSOC_COLUMNS[i], name);
    }
}

#[test]
fn rows_tolerate_final_newline_and_crlf_only() {
    let s = Source::new("f", "a|b\r\nc|d\r\n");
    let (rows, d) = parse_rows(&s, &["X", "Y"], false);
    assert!(d.is_empty());
    assert_eq!(rows[1].cells, ["c", "d"]);
    assert_eq!(rows[1].line, 2);
    let s = Source::new("f", "a|b\n\nc|d\n");
    let (rows, d) = parse_rows(&s, &["X", "Y"], false);
    assert_eq!(rows.len(), 2);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].location.as_ref().unwrap().line, 2);
    let empty = Source::new("f", "");
    let (rows, d) = parse_rows(&empty, &["X"], false);
    assert!(rows.is_empty() && d.is_empty());
    // too few or too many cells
    let s = Source::new("f", "a\na|b|c\n");
    let (rows, d) = parse_rows(&s, &["X", "Y"], false);
    assert!(rows.is_empty());
    assert_eq!(d.len(), 2);
    assert!(d[0].message.contains("expected 2 fields (X|Y), found 1"), "{}", d[0].message);
    // free text keeps its pipes
    let (rows, d) = parse_rows(&s, &["X", "Y"], true);
    assert_eq!(d.len(), 1);
    assert_eq!(rows[0].cells, ["a", "b|c"]);
}

#[test]
fn qos_lists() {
    assert_eq!(parse_qos_list("").unwrap(), QosList::Inherit);
    assert_eq!(parse_qos_list("hi,normal").unwrap(), QosList::Set([n("hi"), n("normal")].into()));
    assert_eq!(
        parse_qos_list("-normal").unwrap(),
        QosList::Delta { add: BTreeSet::new(), remove: [n("normal")].into() }
    );
    assert_eq!(
        parse_qos_list("+hi,-normal").unwrap(),
        QosList::Delta { add: [n("hi")].into(), remove: [n("normal")].into() }
    );
    assert!(parse_qos_list("hi,-normal").unwrap_err().contains("mixes"));
    assert!(parse_qos_list("hi,,lo").is_err());
    assert_eq!(parse_qos_list("Hi").unwrap(), QosList::Set([Name::from_sacctmgr("Hi", NameKind::Qos).unwrap()].into()));
    assert!(parse_qos_list("--x").is_err());
}

#[test]
fn ints_and_print_forms() {
    assert_eq!(parse_int("").unwrap(), None);
    assert_eq!(parse_int("0").unwrap(), Some(0));
    assert!(parse_int("-1").is_err());
    assert!(parse_int("+1").is_err());
    assert!(parse_int("99999999999999999999").is_err());
    assert_eq!(format_duration(90), "01:30:00");
    assert_eq!(format_duration(1440), "1-00:00:00");
    assert_eq!(format_duration(2), "00:02:00");
    assert_eq!(values::parse_duration(&format_duration(u64::MAX)).unwrap(), u64::MAX);
    let t: Tres = [("cpu".to_string(), 100), ("mem".to_string(), 1536)].into();
    assert_eq!(format_tres(&t), "cpu=100,mem=1536M");
    assert_eq!(values::parse_tres("mem=1536M").unwrap()["mem"], 1536);
    assert_eq!(values::parse_tres(&format_tres(&t)).unwrap(), t);
    assert_eq!(parse_flags("DenyOnLimit,NoDecay").unwrap(), ["denyonlimit".to_string(), "nodecay".to_string()].into());
    assert!(parse_flags("a,,b").is_err());
}

#[test]
fn a_small_state() {
    let assocs = [
        arow(&[("Cluster", "c1"), ("Account", "root"), ("Share", "1"), ("QOS", "normal")]),
        arow(&[("Cluster", "c1"), ("Account", "root"), ("User", "root"), ("Share", "1")]),
        arow(&[
            ("Cluster", "c1"),
            ("Account", "phys"),
            ("ParentName", "root"),
            ("Share", "10"),
            ("GrpTRES", "billing=1000,cpu=100,mem=1.50G,node=2"),
            ("MaxTRES", "mem=2G"),
            ("GrpTRESMins", "billing=500"),
            ("MaxWall", "01:30:00"),
            ("GrpWall", "1-00:00:00"),
            ("MaxJobs", "5"),
            ("GrpSubmitJobs", "0"),
            ("QOS", "hi,normal"),
            ("DefaultQOS", "hi"),
        ]),
        arow(&[
            ("Cluster", "c1"),
            ("Account", "sub1"),
            ("ParentName", "phys"),
            ("Share", "parent"),
            ("QOS", "-normal"),
        ]),
        arow(&[("Cluster", "c1"), ("Account", "sub1"), ("User", "BobUpper"), ("Partition", "debug")]),
    ]
    .join("\n");
    let r = raw(
        "c1\nc2\n",
        &assocs,
        "c1|root|root\nc1|BobUpper|sub1\n",
        "phys|has|pipe\nroot|default root account\nsub1|sub1\n",
        "phys|sci\nroot|root\nsub1|phys\n",
        "normal||||||Normal QOS default\nlo|DenyOnLimit,NoDecay|cpu=10|cpu=4|3|01:00:00|low|er\n",
    );
    let s = parse_state(&r).unwrap();
    assert_eq!(s.clusters["c2"], ClusterState::default());
    let c1 = &s.clusters["c1"];
    assert_eq!(c1.accounts.parent("sub1").unwrap().as_str(), "phys");
    let phys = &c1.accounts.get("phys").unwrap().assoc;
    assert_eq!(phys.limits.fairshare, Some(Fairshare::Shares(10)));
    assert_eq!(phys.limits.grp_tres["mem"], 1536);
    assert_eq!(phys.limits.max_tres["mem"], 2048);
    assert_eq!(phys.limits.max_wall, Some(90));
    assert_eq!(phys.limits.grp_wall, Some(1440));
    assert_eq!(phys.limits.grp_submit_jobs, Some(0));
    assert_eq!(phys.default_qos, Some(n("hi")));
    assert_eq!(c1.accounts.get("root").unwrap().assoc.limits.fairshare, None);
    assert_eq!(c1.accounts.get("sub1").unwrap().assoc.limits.fairshare, Some(Fairshare::Parent));
    assert_eq!(c1.accounts.effective_qos("sub1"), [n("hi")].into());
    let key = UserKey { account: n("sub1"), user: n("BobUpper"), partition: Some(n("debug")) };
    assert!(c1.users.contains_key(&key));
    assert_eq!(c1.defaults[&n("BobUpper")], n("sub1"));
    assert_eq!(s.accounts["phys"].description.as_deref(), Some("has|pipe"));
    assert_eq!(s.accounts["phys"].organization.as_deref(), Some("sci"));
    let lo = &s.qos["lo"];
    assert_eq!(lo.flags.len(), 2);
    assert_eq!(lo.max_wall, Some(60));
    assert_eq!(lo.description.as_deref(), Some("low|er"));
    assert_eq!(s.qos["normal"].description.as_deref(), Some("Normal QOS default"));
    // and the renderer gives it back
    assert_eq!(parse_state(&write_state(&s)).unwrap(), s);
}

#[test]
fn every_error_is_reported_with_file_line_and_field() {
    let assocs = [
        arow(&[("Cluster", "c1"), ("Account", "root")]), // 1 ok
        arow(&[("Cluster", "c1"), ("Account", "a b"), ("ParentName", "root"), ("MaxJobs", "x")]), // 2 bad cell
        arow(&[("Cluster", "c1"), ("Account", "x"), ("ParentName", "root"), ("GrpJobs", "-1")]), // 3 negative
        arow(&[("Cluster", "c1"), ("Account", "y")]),    // 4 no parent
        arow(&[("Cluster", "c1"), ("Account", "z"), ("ParentName", "nope")]), // 5 missing parent
        arow(&[("Cluster", "c1"), ("Account", "w"), ("ParentName", "root"), ("Partition", "p")]), // 6 partition
        arow(&[("Cluster", "c1"), ("Account", "ghost"), ("User", "u1")]), // 7 no account row
        arow(&[("Cluster", "c9"), ("Account", "root")]), // 8 unknown cluster
        arow(&[("Cluster", "c9"), ("Account", "a"), ("ParentName", "root")]), // 9 (reported once)
        arow(&[("Cluster", "c1"), ("Account", "v"), ("ParentName", "root"), ("QOS", "a,+b")]), // 10 mixed qos
        arow(&[("Cluster", "c1"), ("Account", "t"), ("ParentName", "root"), ("MaxWall", "00:00:30")]), // 11 seconds
        arow(&[("Cluster", "c1"), ("Account", "root"), ("ParentName", "x")]), // 12 dup root
        "c1|too|few".to_string(),                        // 13
    ]
    .join("\n");
    let r = raw(
        "c1\n",
        &assocs,
        "c1|u1|a\nc1|u1|b\nc2|u2|a\n",
        "a|A\nb|b\n",
        "a|a\nc|c\n",
        "n|DenyOnLimit||||||\nn||||||\nm|Bogus Flag||||||\n",
    );
    let errs = errors_of(parse_state(&r));
    let want = [
        "assocs.txt:2: error[bad-snapshot]: field MaxJobs: `x` is not a non-negative integer, in the row `c1|a b||",
        "assocs.txt:3: error[bad-snapshot]: field GrpJobs: `-1` is not a non-negative integer",
        "assocs.txt:4: error[bad-snapshot]: field ParentName: account `y` has no parent",
        "assocs.txt:5: error[bad-snapshot]: field ParentName: on cluster `c1`: account `z` names parent `nope`",
        "assocs.txt:6: error[bad-snapshot]: field Partition: account association `w` has partition `p`",
        "assocs.txt:7: error[bad-snapshot]: field Account: user association under account `ghost`",
        "assocs.txt:8: error[bad-snapshot]: field Cluster: cluster `c9` is not in clusters.txt",
        "assocs.txt:10: error[bad-snapshot]: field QOS: `a,+b` mixes",
        "assocs.txt:11: error[bad-snapshot]: field MaxWall: `00:00:30` has seconds",
        "assocs.txt:12: error[bad-snapshot]: field ParentName: account `root` has parent `x`",
        "assocs.txt:12: error[bad-snapshot]: field Account: account `root` is listed twice",
        "assocs.txt:13: error[bad-snapshot]: expected 18 fields",
        "defaults.txt:2: error[bad-snapshot]: field User: user `u1` has two default accounts",
        "defaults.txt:3: error[bad-snapshot]: field Cluster: cluster `c2` is not in clusters.txt",
        "accounts-descr.txt:2: error[bad-snapshot]: field Account: account `b` is not in accounts-org.txt",
        "accounts-org.txt:2: error[bad-snapshot]: field Account: account `c` is not in accounts-descr.txt",
        "qos.txt:2: error[bad-snapshot]: field Name: QoS `n` is listed twice",
        "qos.txt:3: error[bad-snapshot]: field Flags: `Bogus Flag` is not a QoS flag",
    ];
    for w in want {
        assert!(errs.iter().any(|e| e.starts_with(w)), "missing {w:?} in\n{}", errs.join("\n"));
    }
    assert_eq!(errs.len(), want.len(), "{}", errs.join("\n"));
}

#[test]
fn cycles_are_reported() {
    let assocs = [
        arow(&[("Cluster", "c1"), ("Account", "root")]),
        arow(&[("Cluster", "c1"), ("Account", "a"), ("ParentName", "b")]),
        arow(&[("Cluster", "c1"), ("Account", "b"), ("ParentName", "a")]),
    ]
    .join("\n");
    let errs = errors_of(parse_state(&raw("c1", &assocs, "", "", "", "")));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("assocs.txt:2: error[bad-snapshot]: field ParentName: on cluster `c1`: accounts"),
        "{errs:?}"
    );
}

#[test]
fn any_name_sacctmgr_prints_is_read() {
    // Names real 22.05 holds (docs/sacctmgr.md): SSSD-style, `+`, `:`, non-ASCII, a space,
    // upper case kept by PreserveCaseUser.
    let users = ["john@uni.ee", "a+b", "x:y", "ü", "sp ace", "Mixed"];
    let mut assocs = vec![
        arow(&[("Cluster", "c1"), ("Account", "root")]),
        arow(&[("Cluster", "c1"), ("Account", "acc sp"), ("ParentName", "root")]),
    ];
    assocs.extend(users.iter().map(|u| arow(&[("Cluster", "c1"), ("Account", "acc sp"), ("User", u)])));
    let defaults: String = users.iter().map(|u| format!("c1|{u}|acc sp\n")).collect();
    let r = raw("c1\n", &(assocs.join("\n") + "\n"), &defaults, "acc sp|d\nroot|r\n", "acc sp|o\nroot|r\n", "");
    let state = parse_state(&r).unwrap();
    let cs = &state.clusters["c1"];
    for u in users {
        assert_eq!(cs.defaults[u].as_str(), "acc sp", "{u}");
    }
    assert_eq!(cs.users.len(), users.len());
}

#[test]
fn diagnostics_are_capped_per_file() {
    let mut assocs = vec![arow(&[("Cluster", "c1"), ("Account", "root")])];
    assocs.extend(
        (0..50).map(|i| {
            arow(&[("Cluster", "c1"), ("Account", &format!("a{i}")), ("ParentName", "root"), ("MaxJobs", "x")])
        }),
    );
    let r = raw("c1\n", &assocs.join("\n"), "", "", "", "");
    let errs = errors_of(parse_state(&r));
    assert_eq!(errs.len(), MAX_DIAGNOSTICS_PER_FILE + 1, "{errs:?}");
    assert!(errs.last().unwrap().contains("... and 30 more"), "{errs:?}");
}

#[test]
fn only_problems_between_reads_are_out_of_step() {
    let assocs = [arow(&[("Cluster", "c1"), ("Account", "root")]), arow(&[("Cluster", "c2"), ("Account", "root")])];
    let errs = parse_state(&raw("c1\n", &assocs.join("\n"), "", "root|r\n", "root|r\n", "")).unwrap_err();
    assert!(errs.iter().all(is_out_of_step), "{errs:?}");
    let assocs = [arow(&[("Cluster", "c1"), ("Account", "root"), ("MaxJobs", "x")])];
    let errs = parse_state(&raw("c1\n", &assocs.join("\n"), "", "root|r\n", "root|r\n", "")).unwrap_err();
    assert!(!errs.iter().any(is_out_of_step), "{errs:?}");
}

// ---- property tests ------------------------------------------------------------------------

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![".*", "[a-z|\n\r,=+:.0-9-]{0,60}", "(([a-z0-9]{0,4}\\|){0,20}[a-z0-9=,+-]{0,6}\n){0,4}",]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The association read fed in pieces of any size (as a live read arrives) parses to the
    /// same state, or the same diagnostics, as the whole text.
    #[test]
    fn streamed_in_pieces_is_the_same_as_whole(text in any_text(), cuts in proptest::collection::vec(0usize..80, 0..8)) {
        let r = raw("c1\n", &text, "", "root|r\n", "root|r\n", "");
        let whole = parse_state_unsplit(&r);
        let mut s = AssocStream::new("assocs.txt", 0);
        let bytes = text.as_bytes();
        let mut at = 0;
        for c in cuts {
            let end = (at + c).min(bytes.len());
            s.feed(&bytes[at..end]);
            at = end;
        }
        s.feed(&bytes[at..]);
        prop_assert_eq!(parse_state_streamed(&r, StreamedAssocs::All(Box::new(s))), whole);
    }

    #[test]
    fn parsers_never_panic(texts in proptest::collection::vec(any_text(), 6), bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let lossy = String::from_utf8_lossy(&bytes).into_owned();
        let r = raw(&texts[0], &texts[1], &texts[2], &texts[3], &texts[4], &texts[5]);
        let _ = parse_state(&r);
        let r = raw(&lossy, &lossy, &lossy, &lossy, &lossy, &lossy);
        let _ = parse_state(&r);
        for t in texts.iter().chain([&lossy]) {
            let s = Source::new("x", t.clone());
            let _ = parse_rows(&s, ASSOC_COLUMNS, false);
            let _ = parse_rows(&s, &[], true);
            let _ = parse_assoc_rows(&s, ASSOC_COLUMNS);
            let _ = parse_assoc_rows(&s, &["Account", "Bogus"]);
            let _ = parse_clusters(&s);
            let _ = parse_defaults(&s, &mut BTreeMap::new());
            let _ = parse_accounts(&s, &s);
            let _ = parse_qos(&s);
            let _ = parse_qos_list(t);
            let _ = parse_flags(t);
            let _ = parse_int(t);
            let _ = reads::parse_version(t);
        }
    }

    #[test]
    fn all_assoc_rows_of_18_arbitrary_cells_never_panic(cells in proptest::collection::vec("[a-z0-9=,:.+-]{0,12}", 18)) {
        let line = format!("c1|{}", cells[1..].join("|"));
        let _ = parse_state(&raw("c1", &line, "", "", "", ""));
    }

    #[test]
    fn write_then_parse_is_identity(state in state_strategy()) {
        let raw = write_state(&state);
        let back = parse_state(&raw);
        prop_assert!(back.is_ok(), "{:?}\n{}", back.as_ref().err(), raw.assocs.text);
        prop_assert_eq!(back.unwrap(), state);
    }
}

fn name_in(re: &'static str, kind: NameKind) -> impl Strategy<Value = Name> {
    re.prop_filter("not a word of sacctmgr's", |s: &String| slurmplan_model::names::keyword(s).is_none())
        .prop_map(move |s| Name::keep_case(&s, kind).unwrap())
}

fn account_name() -> impl Strategy<Value = Name> {
    name_in("[a-z][a-z0-9_.-]{0,6}", NameKind::Account).prop_filter("not root", |n| n.as_str() != "root")
}

fn qos_name() -> BoxedStrategy<Name> {
    prop_oneof![Just(n("normal")), Just(n("hi")), name_in("[a-z0-9][a-z0-9_.-]{0,5}", NameKind::Qos)].boxed()
}

fn tres() -> impl Strategy<Value = Tres> {
    proptest::collection::btree_map("cpu|mem|node|billing|gres/gpu|gres/gpu:a100", any::<u64>(), 0..3)
}

fn opt<T: std::fmt::Debug + Clone + 'static>(s: impl Strategy<Value = T> + 'static) -> BoxedStrategy<Option<T>> {
    proptest::option::of(s).boxed()
}

fn qos_list() -> impl Strategy<Value = QosList> {
    let set = || proptest::collection::btree_set(qos_name(), 0..3);
    prop_oneof![
        Just(QosList::Inherit),
        proptest::collection::btree_set(qos_name(), 1..3).prop_map(QosList::Set),
        (set(), set())
            .prop_filter("not empty", |(a, r)| !(a.is_empty() && r.is_empty()))
            .prop_map(|(add, remove)| QosList::Delta { add, remove }),
    ]
}

fn assoc() -> impl Strategy<Value = Assoc> {
    let fs = prop_oneof![
        Just(None),
        Just(Some(Fairshare::Parent)),
        any::<u32>().prop_filter("1 is unset", |n| *n != 1).prop_map(|n| Some(Fairshare::Shares(n))),
    ];
    (
        (fs, opt(any::<u64>()), opt(any::<u64>()), tres(), tres(), opt(any::<u64>())),
        (opt(any::<u64>()), opt(any::<u64>()), tres(), tres(), opt(any::<u64>())),
        qos_list(),
        opt(qos_name()),
    )
        .prop_map(
            |(
                (fairshare, grp_jobs, grp_submit_jobs, grp_tres, grp_tres_mins, grp_wall),
                (max_jobs, max_submit_jobs, max_tres, max_tres_mins, max_wall),
                qos,
                default_qos,
            )| {
                Assoc::from(AssocData {
                    limits: Limits {
                        fairshare,
                        grp_jobs,
                        grp_submit_jobs,
                        grp_tres,
                        grp_tres_mins,
                        grp_wall,
                        max_jobs,
                        max_submit_jobs,
                        max_tres,
                        max_tres_mins,
                        max_wall,
                    },
                    qos,
                    default_qos,
                })
            },
        )
}

type UserSpec = (Name, proptest::sample::Index, Option<Name>, Assoc, bool);

fn cluster_state() -> impl Strategy<Value = ClusterState> {
    let accounts = proptest::collection::btree_set(account_name(), 0..6);
    let users = proptest::collection::vec(
        (
            name_in("[a-zA-Z][a-zA-Z0-9_]{0,5}", NameKind::User),
            any::<proptest::sample::Index>(),
            opt(name_in("[a-z][a-z0-9]{0,4}", NameKind::Partition)),
            assoc(),
            any::<bool>(),
        ),
        0..5,
    );
    (any::<bool>(), accounts, proptest::collection::vec((any::<proptest::sample::Index>(), assoc()), 7), users)
        .prop_map(|(empty, accounts, picks, users): (bool, BTreeSet<Name>, Vec<_>, Vec<UserSpec>)| {
            if empty {
                return ClusterState::default();
            }
            let mut order = vec![slurmplan_model::names::root()];
            order.extend(accounts);
            let mut items = Vec::new();
            for (i, name) in order.iter().enumerate() {
                let (pick, a) = &picks[i];
                let parent = if i == 0 { None } else { Some(order[pick.index(i)].clone()) };
                items.push((name.clone(), parent, a.clone()));
            }
            let accounts = AccountGraph::build(items).expect("a valid tree");
            let mut cs = ClusterState { accounts, ..Default::default() };
            for (user, pick, partition, a, is_default) in users {
                let account = order[pick.index(order.len())].clone();
                if is_default {
                    cs.defaults.insert(user.clone(), account.clone());
                }
                cs.users.insert(UserKey { account, user, partition }, a);
            }
            cs
        })
}

fn free_text() -> impl Strategy<Value = String> {
    prop_oneof!["[ -~]{0,20}", "\\PC{0,12}"].prop_filter("no line breaks", |s: &String| !s.contains(['\n', '\r']))
}

fn qos_obj() -> impl Strategy<Value = Qos> {
    (
        proptest::collection::btree_set("[a-z]{1,10}", 0..3),
        tres(),
        tres(),
        opt(any::<u64>()),
        opt(any::<u64>()),
        free_text(),
    )
        .prop_map(|(flags, grp_tres_mins, grp_tres, grp_submit_jobs, max_wall, d)| Qos {
            flags,
            grp_tres_mins,
            grp_tres,
            grp_submit_jobs,
            max_wall,
            description: Some(d),
        })
}

fn state_strategy() -> impl Strategy<Value = State> {
    (
        proptest::collection::btree_map(name_in("[a-z][a-z0-9-]{0,5}", NameKind::Cluster), cluster_state(), 0..3),
        proptest::collection::vec((free_text(), free_text()), 8),
        proptest::collection::btree_map(qos_name(), qos_obj(), 0..4),
    )
        .prop_map(|(clusters, texts, qos)| {
            let names: BTreeSet<Name> =
                clusters.values().flat_map(|c| c.accounts.names().into_iter().cloned()).collect();
            let accounts = names
                .into_iter()
                .enumerate()
                .map(|(i, name)| {
                    let (d, o) = texts[i % texts.len()].clone();
                    (name, AccountRecord { description: Some(d), organization: Some(o) })
                })
                .collect();
            State { clusters, accounts, qos }
        })
}

#[test]
fn user_rows_in_any_order_and_repeated_ones() {
    let acct = |a: &str| arow(&[("Cluster", "c1"), ("Account", a), ("ParentName", "root")]);
    let user = |a: &str, u: &str| arow(&[("Cluster", "c1"), ("Account", a), ("User", u)]);
    let root = arow(&[("Cluster", "c1"), ("Account", "root")]);
    let sorted = [root.clone(), acct("a"), acct("b"), user("a", "u1"), user("a", "u2"), user("b", "u1")].join("\n");
    let shuffled = [root.clone(), acct("b"), user("b", "u1"), acct("a"), user("a", "u2"), user("a", "u1")].join("\n");
    let s1 = parse_state(&raw("c1\n", &sorted, "", "", "", "")).unwrap();
    let s2 = parse_state(&raw("c1\n", &shuffled, "", "", "", "")).unwrap();
    assert_eq!(s1, s2);
    assert_eq!(s1.clusters["c1"].users.len(), 3);
    // A repeated association is reported at its second line, once.
    let repeated = [root, acct("a"), user("a", "u1"), user("a", "u2"), user("a", "u1")].join("\n");
    let errs = errors_of(parse_state(&raw("c1\n", &repeated, "", "", "", "")));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(
            "assocs.txt:5: error[bad-snapshot]: field User: user association (u1, a, None) is listed twice"
        ),
        "{errs:?}"
    );
}

proptest! {
    /// The row splitter cuts exactly where `str::split('|')` does (empty cells, edges, UTF-8).
    #[test]
    fn cells_split_like_str_split(line in "[a-z|é0-9=,]{0,40}") {
        let mut cells = Vec::new();
        split_cells(&line, &mut cells);
        prop_assert_eq!(cells, line.split('|').collect::<Vec<_>>());
    }
}

#[test]
fn a_default_listed_once_per_association_row_is_one_default() {
    // `show assoc onlydefaults` prints one line per association row of the default account
    // (here `ha` and `ha` partition `gpu`, as slurmdbd 22.05 and 24.11 print it).
    let assocs = [
        arow(&[("Cluster", "acc"), ("Account", "root")]),
        arow(&[("Cluster", "acc"), ("Account", "ha"), ("ParentName", "root")]),
        arow(&[("Cluster", "acc"), ("Account", "hb"), ("ParentName", "root")]),
        arow(&[("Cluster", "acc"), ("Account", "ha"), ("User", "pat")]),
        arow(&[("Cluster", "acc"), ("Account", "ha"), ("User", "pat"), ("Partition", "gpu")]),
        arow(&[("Cluster", "acc"), ("Account", "hb"), ("User", "pat")]),
    ]
    .join("\n");
    let r = raw("acc\n", &assocs, "acc|pat|ha\nacc|pat|ha\n", "ha|ha\nhb|hb\n", "ha|ha\nhb|hb\n", "");
    let state = parse_state(&r).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!(state.clusters[&n("acc")].defaults.get(&n("pat")), Some(&n("ha")));
    // With the partition column: which rows carry the mark (here only the `gpu` one).
    let r = raw("acc\n", &assocs, "acc|pat|ha|gpu\n", "ha|ha\nhb|hb\n", "ha|ha\nhb|hb\n", "");
    let state = parse_state(&r).unwrap_or_else(|d| panic!("{d:?}"));
    let c = &state.clusters[&n("acc")];
    assert_eq!(c.defaults.get(&n("pat")), Some(&n("ha")));
    let plain = UserKey { account: n("ha"), user: n("pat"), partition: None };
    assert_eq!(c.unmarked, [plain].into());
    let back = write_state(&state);
    assert_eq!(back.defaults.text, "acc|pat|ha|gpu\n");
    assert_eq!(parse_state(&back).unwrap(), state);
    // Two different defaults for one user stay an error, located at the second row.
    let r = raw("acc\n", &assocs, "acc|pat|ha\nacc|pat|ha\nacc|pat|hb\n", "ha|ha\nhb|hb\n", "ha|ha\nhb|hb\n", "");
    let errs = errors_of(parse_state(&r));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("defaults.txt:3: error[bad-snapshot]: field User: user `pat` has two default accounts"),
        "{errs:?}"
    );
}
