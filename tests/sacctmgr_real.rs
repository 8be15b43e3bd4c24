//! The snapshot parsers on real sacctmgr outputs (Slurm 22.05.8 and 24.11.5), copied verbatim
//! into `tests/data/` (see its README for the command of each file). Real captures were taken
//! with other `format=` lists than the snapshot reads, so a small adapter maps their columns.
//! Must not run sacctmgr, nor take outputs from anywhere but those verbatim captures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use slurmplan::model::names::{Name, NameKind};
use slurmplan::model::{Fairshare, QosList, UserKey};
use slurmplan::sacctmgr::parse::{self, RawReads, Source};
use slurmplan::sacctmgr::reads;

fn data(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Split off the `-P` header line and turn its display names into format keywords.
fn header_and_body(text: &str) -> (Vec<String>, String) {
    let (h, body) = text.split_once('\n').unwrap();
    let cols = h
        .split('|')
        .map(|c| {
            match c {
                "Def QOS" => "DefaultQOS",
                "GrpSubmit" => "GrpSubmitJobs",
                "MaxSubmit" => "MaxSubmitJobs",
                "Descr" => "Description",
                "Org" => "Organization",
                other => other,
            }
            .to_string()
        })
        .collect();
    (cols, body.to_string())
}

/// Rewrite rows from columns `from` into columns `to` (absent ones from `fill`, else empty).
fn project(body: &str, from: &[String], to: &[&str], fill: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for line in body.lines() {
        let cells: Vec<&str> = line.split('|').collect();
        assert_eq!(cells.len(), from.len(), "{line}");
        let row: Vec<&str> = to
            .iter()
            .map(|c| {
                from.iter()
                    .position(|f| f == c)
                    .map(|i| cells[i])
                    .or_else(|| fill.iter().find(|(k, _)| k == c).map(|(_, v)| *v))
                    .unwrap_or("")
            })
            .collect();
        out.push_str(&row.join("|"));
        out.push('\n');
    }
    out
}

fn n(s: &str) -> Name {
    Name::keep_case(s, NameKind::User).unwrap()
}

fn names(v: &[&str]) -> BTreeSet<Name> {
    v.iter().map(|s| n(s)).collect()
}

fn raw_with(clusters: &str, assocs: String) -> RawReads {
    RawReads {
        clusters: Source::new("clusters.txt", clusters),
        assocs: Source::new("assocs.txt", assocs),
        defaults: Source::new("defaults.txt", ""),
        accounts_descr: Source::new("accounts-descr.txt", ""),
        accounts_org: Source::new("accounts-org.txt", ""),
        qos: Source::new("qos.txt", ""),
    }
}

#[test]
fn the_5200_row_show_assoc_of_22_05() {
    let (cols, body) = header_and_body(&data("22.05.8/show-assoc-5200-rows.txt"));
    assert_eq!(cols.len(), 9);
    let col_refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    // by column mapping, straight from the 9-column text
    let src = Source::new("show-assoc-5200-rows.txt", body.clone());
    let (rows, diags) = parse::parse_assoc_rows(&src, &col_refs);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(rows.len(), 6202);
    let clusters: BTreeSet<Name> = [n("loadcl")].into();
    let (states, diags) = parse::build_clusters(&src, &clusters, rows);
    assert!(diags.is_empty(), "{diags:?}");
    let c = &states["loadcl"];
    assert_eq!(c.accounts.len(), 1001);
    assert_eq!(c.users.len(), 5201);
    assert!(c.accounts.get("l1").is_some());
    assert_eq!(c.accounts.parent("l1").unwrap().as_str(), "root");
    // this read is not `wopl withrawqos`: the inherited QOS shows on every row
    assert!(c.users.values().all(|a| a.qos == QosList::Set(names(&["normal"]))));
    // and through the full snapshot parser after projecting onto the snapshot's columns
    let assocs = project(&body, &cols, parse::ASSOC_COLUMNS, &[]);
    let state = parse::parse_state(&raw_with("loadcl\n", assocs)).unwrap();
    assert_eq!(&state.clusters["loadcl"], c);
    // write_state renders it back to the same state
    assert_eq!(parse::parse_state(&parse::write_state(&state)).unwrap(), state);
}

#[test]
fn the_9_column_show_assoc_of_both_versions() {
    for v in ["22.05.8", "24.11.5"] {
        let (cols, body) = header_and_body(&data(&format!("{v}/assoc-9col.txt")));
        let assocs = project(&body, &cols, parse::ASSOC_COLUMNS, &[]);
        let state = parse::parse_state(&raw_with("testcl\n", assocs)).unwrap();
        let c = &state.clusters["testcl"];
        let proj1 = &c.accounts.get("proj1").unwrap().assoc;
        assert_eq!(proj1.limits.grp_submit_jobs, Some(0), "{v}: GrpSubmit=0 is a real value");
        assert_eq!(proj1.default_qos, Some(n("normal")));
        assert_eq!(c.accounts.parent("proj1").unwrap().as_str(), "acme");
        let alice = UserKey { account: n("proj1"), user: n("alice"), partition: None };
        assert!(c.users.contains_key(&alice), "{v}");
    }
}

#[test]
fn wopl_withrawqos_limits_and_deltas_22_05() {
    let (cols, body) = header_and_body(&data("22.05.8/assoc-wopl-rawqos-limits.txt"));
    let src = Source::new("limits", project(&body, &cols, parse::ASSOC_COLUMNS, &[("Cluster", "c1")]));
    let (rows, diags) = parse::parse_assoc_rows(&src, parse::ASSOC_COLUMNS);
    assert!(diags.is_empty(), "{diags:?}");
    let phys = &rows[0];
    assert_eq!((phys.account.as_str(), phys.user.is_none()), ("phys", true));
    let l = &phys.assoc.limits;
    assert_eq!(
        l.grp_tres,
        [("billing".into(), 1000), ("cpu".into(), 100), ("mem".into(), 1536), ("node".into(), 2)].into()
    );
    assert_eq!(l.max_tres, [("mem".into(), 2048)].into());
    assert_eq!(l.grp_tres_mins, [("billing".into(), 500)].into());
    assert_eq!((l.max_wall, l.grp_wall, l.max_jobs), (Some(90), Some(1440), Some(5)));
    assert_eq!(phys.assoc.qos, QosList::Set(names(&["hi", "normal"])));
    assert_eq!(phys.assoc.default_qos, Some(n("hi")));
    // wopl: nothing inherited on the child rows
    assert_eq!(rows[1].assoc, Default::default());
    assert_eq!(rows[2].assoc, Default::default());
    assert_eq!(rows[3].assoc.qos, QosList::Set(names(&["normal"])));

    let (cols, body) = header_and_body(&data("22.05.8/assoc-wopl-rawqos-deltas.txt"));
    let src = Source::new("deltas", project(&body, &cols, parse::ASSOC_COLUMNS, &[("Cluster", "c1")]));
    let (rows, diags) = parse::parse_assoc_rows(&src, parse::ASSOC_COLUMNS);
    assert!(diags.is_empty(), "{diags:?}");
    let sub1 = rows.iter().find(|r| r.account.as_str() == "sub1" && r.user.is_none()).unwrap();
    assert_eq!(sub1.assoc.qos, QosList::Delta { add: BTreeSet::new(), remove: names(&["normal"]) });
    assert_eq!(sub1.assoc.default_qos, None);
}

#[test]
fn a_whole_cluster_read_wopl_withrawqos_22_05() {
    let (cols, body) = header_and_body(&data("22.05.8/assoc-wopl-rawqos-c1.txt"));
    let assocs = project(&body, &cols, parse::ASSOC_COLUMNS, &[("Cluster", "c1")]);
    // the real database holds an account named `a b` (a space): read as printed
    let whole = parse::parse_state(&raw_with("c1\n", assocs.clone())).unwrap();
    assert!(whole.clusters["c1"].accounts.get("a b").is_some());
    let cleaned: String = assocs.lines().filter(|l| !l.starts_with("c1|a b|")).map(|l| format!("{l}\n")).collect();
    let state = parse::parse_state(&raw_with("c1\n", cleaned)).unwrap();
    let c = &state.clusters["c1"];
    assert_eq!(c.accounts.parent("phys").unwrap().as_str(), "sub2");
    assert_eq!(c.accounts.parent("newacct").unwrap().as_str(), "chem");
    assert_eq!(c.accounts.get("newacct").unwrap().assoc.limits.grp_submit_jobs, Some(4));
    assert_eq!(c.accounts.get("chem").unwrap().assoc.limits.grp_jobs, Some(6));
    assert_eq!(c.accounts.get("root").unwrap().assoc.qos, QosList::Set(names(&["normal"])));
    assert_eq!(c.accounts.effective_qos("sub1"), names(&["hi"]));
    let debug = UserKey { account: n("chem"), user: n("u1"), partition: Some(n("debug")) };
    assert!(c.users.contains_key(&debug));
    let u2 = UserKey { account: n("sub1"), user: n("u2"), partition: None };
    assert_eq!(c.user_effective_qos(&u2, &c.users[&u2]), names(&["hi", "normal"]));
    assert_eq!(c.users.len(), 6);

    // the same cluster after a `sacctmgr load` moved phys under root and set its QOS to lo
    let (cols, body) = header_and_body(&data("22.05.8/assoc-wopl-rawqos-c1-reloaded.txt"));
    let assocs: String = project(&body, &cols, parse::ASSOC_COLUMNS, &[("Cluster", "c1")])
        .lines()
        .filter(|l| !l.starts_with("c1|a b|"))
        .map(|l| format!("{l}\n"))
        .collect();
    let state = parse::parse_state(&raw_with("c1\n", assocs)).unwrap();
    let c = &state.clusters["c1"];
    assert_eq!(c.accounts.parent("phys").unwrap().as_str(), "root");
    assert_eq!(c.accounts.get("phys").unwrap().assoc.qos, QosList::Set(names(&["lo"])));
}

#[test]
fn onlydefaults_22_05() {
    let (cols, body) = header_and_body(&data("22.05.8/assoc-onlydefaults.txt"));
    let defaults = project(&body, &cols, parse::DEFAULT_COLUMNS, &[]);
    let mut clusters = BTreeMap::new();
    clusters.insert(n("c1"), Default::default());
    clusters.insert(n("c2"), Default::default());
    let diags = parse::parse_defaults(&Source::new("defaults.txt", defaults), &mut clusters);
    assert!(diags.is_empty(), "{diags:?}");
    let c1 = &clusters[&n("c1")].defaults;
    assert_eq!(c1[&n("u1")], n("phys"));
    assert_eq!(c1[&n("u2")], n("sub1"));
    assert_eq!(c1[&n("root")], n("root"));
    assert_eq!(clusters[&n("c2")].defaults.len(), 1);
}

#[test]
fn free_text_with_pipes_both_versions() {
    let (_, body) = header_and_body(&data("22.05.8/account-descr-pipe.txt"));
    let (m, diags) = parse::parse_account_text(&Source::new("d", body), parse::DESCR_COLUMNS);
    assert!(diags.is_empty());
    assert_eq!(m[&n("descr2")].1, "has|pipe,and comma");

    // 24.11: Descr then Org; only the LAST column may hold a `|`
    let (_, body) = header_and_body(&data("24.11.5/account-descr-org-pipe.txt"));
    let (m, diags) = parse::parse_account_text(&Source::new("d", body), &["Account", "Description", "Organization"]);
    assert!(diags.is_empty());
    assert_eq!(m[&n("dtest")].1, "org|pipe");

    for (v, file) in [("22.05.8", "account-descr-org.txt"), ("24.11.5", "account-descr-org.txt")] {
        let (cols, body) = header_and_body(&data(&format!("{v}/{file}")));
        let descr = project(&body, &cols, parse::DESCR_COLUMNS, &[]);
        let org = project(&body, &cols, parse::ORG_COLUMNS, &[]);
        let (accounts, diags) = parse::parse_accounts(&Source::new("d", descr), &Source::new("o", org));
        assert!(diags.is_empty(), "{v}: {diags:?}");
        assert_eq!(accounts["root"].description.as_deref(), Some("default root account"));
        assert_eq!(accounts["root"].organization.as_deref(), Some("root"));
    }
}

#[test]
fn show_qos_both_versions() {
    let (cols, body) = header_and_body(&data("22.05.8/qos-lo-flags.txt"));
    let qos = project(&body, &cols, parse::QOS_COLUMNS, &[]);
    let (m, diags) = parse::parse_qos(&Source::new("qos.txt", qos));
    assert!(diags.is_empty(), "{diags:?}");
    let lo = &m["lo"];
    assert_eq!(lo.flags, ["denyonlimit".to_string(), "nodecay".to_string()].into());
    assert_eq!(lo.max_wall, Some(60));

    let cols: Vec<String> = ["Name", "Description"].map(String::from).into();
    let qos = project(&data("22.05.8/qos-name-descr-n.txt"), &cols, parse::QOS_COLUMNS, &[]);
    let (m, diags) = parse::parse_qos(&Source::new("qos.txt", qos));
    assert!(diags.is_empty(), "{diags:?}");
    // slurmdbd's own default description keeps its case
    assert_eq!(m["normal"].description.as_deref(), Some("Normal QOS default"));
    assert_eq!(m["hi"].description.as_deref(), Some("mixeddesc"));

    let (cols, body) = header_and_body(&data("24.11.5/qos.txt"));
    let qos = project(&body, &cols, parse::QOS_COLUMNS, &[]);
    let (m, diags) = parse::parse_qos(&Source::new("qos.txt", qos));
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(m.keys().map(Name::as_str).collect::<Vec<_>>(), ["normal", "q1", "upperq"]);
    assert!(m["q1"].flags.is_empty());
}

#[test]
fn assoc_limits_and_fairshare_24_11() {
    let (cols, body) = header_and_body(&data("24.11.5/assoc-all-limits.txt"));
    let assocs = project(&body, &cols, parse::ASSOC_COLUMNS, &[]); // drops MaxTRESPerNode
    let src = Source::new("assocs.txt", assocs);
    let (rows, diags) = parse::parse_assoc_rows(&src, parse::ASSOC_COLUMNS);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(rows[0].parent, Some(n("acme")));
    assert_eq!(rows[0].assoc.limits.grp_submit_jobs, Some(5));
    assert_eq!(rows[0].assoc.limits.fairshare, None, "Share 1 is the default");
    assert_eq!(rows[1].user, Some(n("alice")));

    // `-n` output (no header) read directly by column mapping
    let body = data("24.11.5/assoc-fairshare-n.txt");
    let cols = ["Account", "User", "GrpTRESMins", "GrpSubmitJobs", "MaxSubmitJobs", "Share", "QOS", "Cluster"];
    let body: String = body.lines().map(|l| format!("{l}|testcl\n")).collect();
    let (rows, diags) = parse::parse_assoc_rows(&Source::new("f", body), &cols);
    assert!(diags.is_empty(), "{diags:?}");
    let acme = &rows[0].assoc.limits;
    assert_eq!(acme.fairshare, Some(Fairshare::Shares(333)));
    assert_eq!(acme.grp_tres_mins, [("billing".into(), 72000)].into());
    assert_eq!(acme.max_submit_jobs, Some(10));
    assert_eq!(rows[1].assoc.limits.fairshare, None);
}

#[test]
fn a_real_account_name_with_a_space_24_11() {
    let (_, clusters) = header_and_body(&data("24.11.5/clusters.txt"));
    let (set, diags) = parse::parse_clusters(&Source::new("clusters.txt", clusters.clone()));
    assert!(diags.is_empty());
    assert_eq!(set.iter().map(Name::as_str).collect::<Vec<_>>(), ["testcl"]);
    let cols: Vec<String> = ["Cluster", "Account", "User", "ParentName"].map(String::from).into();
    let assocs = project(&data("24.11.5/assoc-4col-n.txt"), &cols, parse::ASSOC_COLUMNS, &[]);
    // read as printed (a desired file cannot name it; objects outside the scope are left alone)
    let whole = parse::parse_state(&raw_with(&clusters, assocs.clone())).unwrap();
    assert_eq!(whole.clusters["testcl"].accounts.len(), 7);
    assert!(whole.clusters["testcl"].accounts.get("descr test").is_some());
    let cleaned: String = assocs.lines().filter(|l| !l.contains("descr test")).map(|l| format!("{l}\n")).collect();
    let state = parse::parse_state(&raw_with(&clusters, cleaned)).unwrap();
    assert_eq!(state.clusters["testcl"].accounts.len(), 6);
}

#[test]
fn sacctmgr_version_both_versions() {
    assert_eq!(reads::parse_version(&data("22.05.8/version.txt")).as_deref(), Some("22.05.8"));
    assert_eq!(reads::parse_version(&data("24.11.5/version.txt")).as_deref(), Some("24.11.5"));
}
