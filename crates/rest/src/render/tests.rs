//! The renderer against verbatim slurmrestd answers (Slurm 24.11.5, data parser v0.0.42) and
//! sacctmgr's own output for the same slurmdbd, taken one after the other (tests/data/2411):
//! both parse to the same `State`. The state holds an explicit list, a `+` delta, `-` deltas on
//! an account and on a user's partition row, FairShare=parent, every limit column, a gres TRES,
//! every QoS flag, a description with `|` and two clusters.

use super::*;
use slurmplan_sacctmgr::parse::{RawReads, Source, parse_state};

fn data(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/2411").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn assocs(name: &str) -> Vec<Assoc> {
    let b: AssocsBody = serde_json::from_str(&data(name)).unwrap();
    assert!(b.envelope.errors.is_empty() && b.envelope.warnings.is_empty(), "{name}");
    b.associations
}

const CLUSTERS: [&str; 2] = ["testcl", "testcl2"];

fn rendered() -> RawReads {
    let mut raw = RawReads::default();
    for c in CLUSTERS {
        let reads = AssocReads {
            effective: assocs(&format!("assocs-{c}.json")).into(),
            own: assocs(&format!("assocs-wopl-{c}.json")),
            raw: assocs(&format!("assocs-raw-{c}.json")),
        };
        raw.assocs.text.push_str(&render_assocs(c, &reads).unwrap());
        // the transport takes the marks from the plain read (one request for both reads)
        raw.defaults.text.push_str(&render_defaults(c, &reads.effective).unwrap());
    }
    raw.clusters.text = render_clusters(&serde_json::from_str(&data("clusters.json")).unwrap()).unwrap();
    let accounts: AccountsBody = serde_json::from_str(&data("accounts.json")).unwrap();
    raw.accounts_descr.text = render_accounts(&accounts, AccountText::Description).unwrap();
    raw.accounts_org.text = render_accounts(&accounts, AccountText::Organization).unwrap();
    raw.qos.text = render_qos(&serde_json::from_str(&data("qos.json")).unwrap()).unwrap();
    raw
}

fn sacctmgr() -> RawReads {
    let per = |f: &str| CLUSTERS.iter().map(|c| data(&format!("sacctmgr-{f}-{c}.txt"))).collect::<String>();
    RawReads {
        clusters: Source::new("clusters", data("sacctmgr-clusters.txt")),
        assocs: Source::new("assocs", per("assocs")),
        defaults: Source::new("defaults", per("defaults")),
        accounts_descr: Source::new("descr", data("sacctmgr-accounts-descr.txt")),
        accounts_org: Source::new("org", data("sacctmgr-accounts-org.txt")),
        qos: Source::new("qos", data("sacctmgr-qos.txt")),
    }
}

#[test]
fn the_plain_reads_default_marks_are_the_filtered_reads() {
    for c in CLUSTERS {
        let plain = render_defaults(c, &assocs(&format!("assocs-{c}.json"))).unwrap();
        assert!(plain.lines().count() >= 2, "{c}: {plain}");
        assert_eq!(plain, render_defaults(c, &assocs(&format!("assocs-defaults-{c}.json"))).unwrap(), "{c}");
    }
}

#[test]
fn rest_reads_parse_to_the_state_sacctmgr_reads_give() {
    let rest = parse_state(&rendered()).unwrap();
    let sacct = parse_state(&sacctmgr()).unwrap();
    // each part on its own first, for a readable failure
    assert_eq!(rest.qos, sacct.qos);
    assert_eq!(rest.accounts, sacct.accounts);
    for c in sacct.clusters.keys() {
        let (r, s) = (&rest.clusters[c], &sacct.clusters[c]);
        assert_eq!(r.users, s.users, "{c}");
        assert_eq!(r.defaults, s.defaults, "{c}");
        assert_eq!(r.accounts.iter_sorted(), s.accounts.iter_sorted(), "{c}");
    }
    assert_eq!(rest, sacct);
}

#[test]
fn deltas_are_inferred_from_the_three_reads() {
    let text = render_assocs(
        "testcl",
        &AssocReads {
            effective: assocs("assocs-testcl.json").into(),
            own: assocs("assocs-wopl-testcl.json"),
            raw: assocs("assocs-raw-testcl.json"),
        },
    )
    .unwrap();
    let qos: BTreeMap<String, String> = text
        .lines()
        .map(|l| {
            let c: Vec<&str> = l.split('|').collect();
            (format!("{}/{}/{}", c[1], c[2], c[3]), c[16].to_string())
        })
        .collect();
    assert_eq!(qos["zkd//"], "+zq2");
    assert_eq!(qos["zkr//"], "-normal");
    assert_eq!(qos["zkid/zu1/p1"], "-normal");
    assert_eq!(qos["zpa//"], "normal,zq1");
    assert_eq!(qos["zkid//"], "");
}

#[test]
fn reads_out_of_step_are_refused() {
    let mut own = assocs("assocs-wopl-testcl.json");
    own.pop();
    let e = render_assocs(
        "testcl",
        &AssocReads { effective: assocs("assocs-testcl.json").into(), own, raw: assocs("assocs-raw-testcl.json") },
    )
    .unwrap_err();
    assert!(e.0.contains("different rows"), "{e}");
}

#[test]
fn an_effective_list_no_delta_explains_is_refused() {
    let mut effective = assocs("assocs-testcl.json");
    // zkd adds zq2 to its parent's list; make its effective list lack it
    let zkd = effective.iter_mut().find(|a| a.account == "zkd" && a.user.is_empty()).unwrap();
    zkd.qos = vec!["normal".into(), "zq1".into()];
    let e = render_assocs(
        "testcl",
        &AssocReads {
            effective: effective.into(),
            own: assocs("assocs-wopl-testcl.json"),
            raw: assocs("assocs-raw-testcl.json"),
        },
    )
    .unwrap_err();
    assert!(e.0.contains("cannot tell its raw QoS"), "{e}");
}

#[test]
fn unknown_qos_flags_and_line_breaks_are_refused() {
    let mut q: QosBody = serde_json::from_str(&data("qos.json")).unwrap();
    q.qos[0].flags.push("SOME_NEW_FLAG".into());
    assert!(render_qos(&q).unwrap_err().0.contains("SOME_NEW_FLAG"));
    let mut a: AccountsBody = serde_json::from_str(&data("accounts.json")).unwrap();
    a.accounts[0].description = "two\nlines".into();
    assert!(render_accounts(&a, AccountText::Description).unwrap_err().0.contains("line break"));
    assert!(render_accounts(&a, AccountText::Organization).is_ok());
}

#[test]
fn negative_numbers_are_refused() {
    let mut own = assocs("assocs-wopl-testcl.json");
    own[0].max.jobs.active = Num { set: true, infinite: false, number: -3 };
    let e = render_assocs(
        "testcl",
        &AssocReads { effective: assocs("assocs-testcl.json").into(), own, raw: assocs("assocs-raw-testcl.json") },
    )
    .unwrap_err();
    assert!(e.0.contains("MaxJobs is -3"), "{e}");
}

#[test]
fn a_bar_in_a_name_goes_through_as_sacctmgr_prints_it() {
    let rename = |rows: &mut Vec<Assoc>| {
        for a in rows.iter_mut().filter(|a| a.user == "zu2") {
            a.user = "z|u2".into();
        }
    };
    let (mut effective, mut own, mut raw) =
        (assocs("assocs-testcl.json"), assocs("assocs-wopl-testcl.json"), assocs("assocs-raw-testcl.json"));
    rename(&mut effective);
    rename(&mut own);
    rename(&mut raw);
    let text = render_assocs("testcl", &AssocReads { effective: effective.into(), own, raw }).unwrap();
    assert!(text.lines().any(|l| l.starts_with("testcl|zkd|z|u2|")), "{text}");
    let mut lb = assocs("assocs-testcl.json");
    lb[1].user = "two\nlines".into();
    let e = render_defaults("testcl", &lb).unwrap_err();
    assert!(e.0.contains("line break"), "{e}");
}
