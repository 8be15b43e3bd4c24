//! The `--format script` form of `--transport rest` (`render::rest_script`) applies the same
//! changes as `apply --transport rest`: its jq program (`rest::write::JQ_OPS`) must turn what it
//! reads into the bodies `rest::write` makes in Rust, on rows, QoS objects and account records,
//! and refuse reads that are not what the plan names. Needs jq (`.ci/run` installs it); the
//! script itself runs against a real slurmrestd in tests/rest_real.rs.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use slurmplan::model::{AccountRecord, Fairshare, Name, NameKind, QosList};
use slurmplan::rest::write::{
    ASSOC_TRES_LISTS, JQ_OPS, Op, RowChange, changed_row, patch_qos, patch_record, qos_ops, record_ops, row_ops,
};
use slurmplan::sacctmgr::command::{AssocSet, QosSet, Scalar, TresLimit};

fn n(s: &str) -> Name {
    Name::keep_case(s, NameKind::Account).unwrap()
}

/// `filter` (after the ops program) on `input` with jq: its output, or jq's error.
fn jq(input: &Value, filter: &str) -> Result<Value, String> {
    let mut child = Command::new("jq")
        .args(["-c", &format!("{JQ_OPS}\n{filter}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jq is needed by this test (apt-get install jq)");
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    if o.status.success() {
        Ok(serde_json::from_slice(&o.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

fn ops(ops: &[Op]) -> String {
    Value::Array(ops.iter().map(Op::json).collect()).to_string()
}

fn row(account: &str, user: &str, partition: &str) -> Value {
    json!({
        "account": account, "cluster": "c1", "user": user, "partition": partition,
        "qos": ["normal"], "shares_raw": 5, "is_default": false, "lineage": "/x/",
        "max": {"jobs": {"active": {"set": true, "infinite": false, "number": 3}}, "tres": {
            "total": [{"type": "cpu", "name": "", "id": 1, "count": 8}, {"type": "mem", "name": "", "id": 2, "count": 100}],
            "group": {"minutes": [], "active": [{"type": "cpu", "name": "", "id": 1, "count": 7}]},
            "minutes": {"total": [], "per": {"job": []}},
            "per": {"job": [], "node": [{"type": "gres", "name": "gpu", "id": 1001, "count": 2}]},
        }},
    })
}

#[test]
fn the_scripts_jq_changes_rows_as_apply_does() {
    let mut set = AssocSet {
        default_qos: Some(None),
        fairshare: Some(Some(Fairshare::Parent)),
        qos: Some(QosList::Set([n("gpu"), n("normal")].into())),
        ..Default::default()
    };
    set.tres.insert(TresLimit::GrpTres, [("mem".to_string(), None), ("gres/gpu".to_string(), Some(4))].into());
    set.tres.insert(TresLimit::MaxTresMins, [("cpu".to_string(), Some(60))].into());
    set.scalars.insert(Scalar::GrpJobs, Some(9));
    set.scalars.insert(Scalar::MaxJobs, None);
    let read =
        json!({"associations": [row("a1", "", ""), row("a1", "u1", ""), row("a1", "u1", "gpu"), row("a2", "", "")]});
    let lists = serde_json::to_string(&ASSOC_TRES_LISTS).unwrap();
    for (keys, any, change, picked) in [
        (json!([{"account": "a1", "user": "", "partition": null}]), false, RowChange::Set(set.clone()), vec![0]),
        (json!([{"account": "a1", "user": "u1", "partition": "gpu"}]), false, RowChange::Parent("p".into()), vec![2]),
        (json!([{"account": "a1", "user": "u1", "partition": null}]), true, RowChange::MakeDefault, vec![1, 2]),
    ] {
        let filter = format!("rows(\"c1\"; {keys}; {any}; {lists}; {})", ops(&row_ops(&change)));
        let rows = read["associations"].as_array().unwrap();
        let rust = json!({"associations": picked.iter().map(|i| changed_row(&rows[*i], &change)).collect::<Vec<_>>()});
        assert_eq!(jq(&read, &filter).unwrap(), rust, "{filter}");
    }
    // a key that finds no row, or two where one is named: refused, as apply refuses
    let none = format!("rows(\"c1\"; [{{\"account\":\"a9\",\"user\":\"\",\"partition\":null}}]; false; {lists}; [])");
    assert!(jq(&read, &none).unwrap_err().contains("0 association(s) of account a9"));
    let two = json!({"associations": [row("a1", "", ""), row("a1", "", "")]});
    let one = format!("rows(\"c1\"; [{{\"account\":\"a1\",\"user\":\"\",\"partition\":null}}]; false; {lists}; [])");
    assert!(jq(&two, &one).unwrap_err().contains("2 association(s)"));
}

#[test]
fn the_scripts_jq_changes_qos_and_records_as_apply_does() {
    let qos = json!({"name": "q1", "flags": ["NO_DECAY"], "description": "d", "priority": {"set": true, "number": 5},
        "usage_factor": {"set": true, "infinite": false, "number": 1.0},
        "limits": {"max": {"tres": {"total": [{"type": "cpu", "name": "", "count": 5}], "minutes": {"total": []}},
        "jobs": {"count": {"set": false, "infinite": true, "number": 0}}}, "factor": {"set": false, "number": 0.0}}});
    let set = QosSet {
        flags: Some(["DenyOnLimit".to_string()].into()),
        grp_tres: [("cpu".to_string(), None)].into(),
        grp_tres_mins: [("cpu".to_string(), Some(600))].into(),
        grp_submit_jobs: Some(Some(0)),
        max_wall: Some(None),
        description: Some("new".into()),
    };
    let mut rust = qos.clone();
    patch_qos(&mut rust, &set).unwrap();
    // the doubles stay out of what goes back (jq would print them as integers)
    assert!(rust.get("usage_factor").is_none() && rust["limits"].get("factor").is_none(), "{rust}");
    let read = json!({"qos": [qos, {"name": "q2"}]});
    assert_eq!(
        jq(&read, &format!("one_qos(\"q1\"; {})", ops(&qos_ops(&set).unwrap()))).unwrap(),
        json!({"qos": [rust]})
    );
    assert!(jq(&read, "one_qos(\"q9\"; [])").unwrap_err().contains("brought 0 objects"));

    let account = json!({"name": "a1", "description": "old", "organization": "org", "coordinators": []});
    let record = AccountRecord { description: Some("new text".into()), organization: None };
    let read = json!({"accounts": [account.clone()]});
    let filter = format!("one_account(\"a1\"; {})", ops(&record_ops(&record)));
    assert_eq!(jq(&read, &filter).unwrap(), json!({"accounts": [patch_record(&account, &record)]}));
}
