//! The fake sacctmgr's `load file=/dev/stdin`: what real sacctmgr 22.05.8 and 24.11.5 print
//! for a successful load of new accounts and users (stdout, byte for byte; verbatim outputs in
//! tests/data/load/), and for a file it refuses. Applying the load is the rules model's job:
//! this must not change any state.

use std::fmt::Write;

use slurmplan_model::Fairshare;
use slurmplan_sacctmgr::command::{AssocSet, Scalar, TresLimit};
use slurmplan_sacctmgr::load_file::{LoadAccount, LoadUser};

const ASSOC_HEADER: &str = "     Share   GrpTRESMins GrpTRESRunMin       GrpTRES GrpJobs GrpJobsAccrue  GrpMem GrpNodes GrpSubmit     GrpWall   MaxTRESMins       MaxTRES MaxTRESPerNode MaxJobs MaxSubmit MaxNodes     MaxWall                  QOS   Def QOS \n";
const ASSOC_RULE: &str = "--------- ------------- ------------- ------------- ------- ------------- ------- -------- --------- ----------- ------------- ------------- -------------- ------- --------- -------- ----------- -------------------- --------- \n";

/// Right-aligned in `w` columns; longer values keep `w - 1` characters and a `+`.
fn col(v: &str, w: usize) -> String {
    if v.chars().count() > w { format!("{}+ ", v.chars().take(w - 1).collect::<String>()) } else { format!("{v:>w$} ") }
}

fn minutes(m: u64) -> String {
    let (d, h, mi) = (m / 1440, (m % 1440) / 60, m % 60);
    if d > 0 { format!("{d}-{h:02}:{mi:02}:00") } else { format!("{h:02}:{mi:02}:00") }
}

fn limit_cols(set: &AssocSet) -> String {
    let scalar = |k: Scalar| set.scalars.get(&k).copied().flatten();
    let tres = |k: TresLimit| {
        set.tres
            .get(&k)
            .map(|m| m.iter().filter_map(|(n, v)| v.map(|v| format!("{n}={v}"))).collect::<Vec<_>>().join(","))
            .unwrap_or_default()
    };
    let num = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let share = match set.fairshare {
        Some(Some(Fairshare::Shares(n))) => n.to_string(),
        Some(Some(Fairshare::Parent)) => "parent".into(),
        _ => String::new(),
    };
    let qos = match &set.qos {
        Some(slurmplan_model::QosList::Set(q)) => q.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(","),
        _ => String::new(),
    };
    let defq = set.default_qos.clone().flatten().map(|q| q.to_string()).unwrap_or_default();
    [
        col(&share, 9),
        col(&tres(TresLimit::GrpTresMins), 13),
        col("", 13),
        col(&tres(TresLimit::GrpTres), 13),
        col(&num(scalar(Scalar::GrpJobs)), 7),
        col("", 13),
        col("", 7),
        col("", 8),
        col(&num(scalar(Scalar::GrpSubmitJobs)), 9),
        col(&scalar(Scalar::GrpWall).map(minutes).unwrap_or_default(), 11),
        col(&tres(TresLimit::MaxTresMins), 13),
        col(&tres(TresLimit::MaxTres), 13),
        col("", 14),
        col(&num(scalar(Scalar::MaxJobs)), 7),
        col(&num(scalar(Scalar::MaxSubmitJobs)), 9),
        col("", 8),
        col(&scalar(Scalar::MaxWall).map(minutes).unwrap_or_default(), 11),
        col(&qos, 20),
        col(&defq, 9),
    ]
    .concat()
}

/// stdout of a load that added `accounts` and `users` on `cluster`.
pub fn success(cluster: &str, accounts: &[LoadAccount], users: &[LoadUser]) -> String {
    let mut s = format!("For cluster {cluster}\n");
    if !accounts.is_empty() {
        s.push_str("Accounts\n      Name                Descr                  Org                  QOS \n");
        s.push_str("---------- -------------------- -------------------- -------------------- \n");
        for a in accounts {
            let _ = writeln!(
                s,
                "{}{}{}{}",
                col(a.name.as_str(), 10),
                col(&a.description.to_lowercase(), 20),
                col(&a.organization.to_lowercase(), 20),
                col("", 20)
            );
        }
        s.push_str(&"-".repeat(51));
        s.push_str("\n\nAccount Associations\n   Account ParentName");
        s.push_str(ASSOC_HEADER);
        s.push_str("---------- ---------- ");
        s.push_str(ASSOC_RULE);
        for a in accounts {
            let _ = writeln!(s, "{}{}{}", col(a.name.as_str(), 10), col(a.parent.as_str(), 10), limit_cols(&a.set));
        }
        s.push_str(&"-".repeat(62));
        s.push_str("\n\n");
    }
    if !users.is_empty() {
        s.push_str("Users\n      Name   Def Acct  Def WCKey                  QOS     Admin       Coord Accounts \n");
        s.push_str("---------- ---------- ---------- -------------------- --------- -------------------- \n");
        for u in users {
            let _ = writeln!(
                s,
                "{}{}{}{}{}{}",
                col(u.name.as_str(), 10),
                col(u.default_account.as_str(), 10),
                col("", 10),
                col("", 20),
                col("Not Set", 9),
                col("", 20)
            );
        }
        s.push_str(&"-".repeat(51));
        s.push_str("\n\nUser Associations\n      User    Account");
        s.push_str(ASSOC_HEADER);
        s.push_str("---------- ---------- ");
        s.push_str(ASSOC_RULE);
        // rows in file order: grouped by account, accounts in order of first appearance
        let mut order: Vec<&slurmplan_model::Name> = Vec::new();
        for u in users {
            for r in &u.rows {
                if !order.contains(&&r.account) {
                    order.push(&r.account);
                }
            }
        }
        for acct in order {
            for u in users {
                for r in u.rows.iter().filter(|r| &r.account == acct) {
                    let _ = writeln!(s, "{}{}{}", col(u.name.as_str(), 10), col(acct.as_str(), 10), limit_cols(&r.set));
                }
            }
        }
        s.push_str(&"-".repeat(62));
        s.push_str("\n\n");
    }
    s
}

/// stderr of every load that reached slurmdbd (the time varies; the fake's is fixed).
pub const DONE: &str = "sacctmgr: Done adding cluster in usec=100000\n";

#[cfg(test)]
mod tests {
    use super::*;

    /// The fake's stdout equals real sacctmgr's for the same file, on both versions.
    #[test]
    fn load_output_matches_real_sacctmgr() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/load");
        let input = std::fs::read_to_string(dir.join("input.cfg")).unwrap();
        let (cluster, accounts, users) = slurmplan_sacctmgr::load_file::parse(&input).unwrap();
        let ours = success(cluster.as_str(), &accounts, &users);
        for v in ["22", "24"] {
            let real = std::fs::read_to_string(dir.join(format!("{v}.ok.stdout"))).unwrap();
            assert_eq!(ours, real, "{v}");
            let err = std::fs::read_to_string(dir.join(format!("{v}.ok.stderr"))).unwrap();
            assert!(err.starts_with("sacctmgr: Done adding cluster in usec=") && DONE.starts_with(&err[..37]));
        }
    }
}
