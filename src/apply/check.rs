//! What `apply PLAN` checks before the first write, so that a plan file edited by hand (or by
//! anyone who can write it and recompute its checksum) runs nothing it could not have been
//! planned with: every name and value as the desired-state loader would accept it, every argv
//! equal to the one its command builds, no step that deletes or moves `root`, and the whole
//! sequence replayed on the current state in the rules model (`sacctmgr::sim`). Pure: no I/O.

use crate::model::values::{self, MAX_COUNT, MAX_SHARES, MAX_TRES};
use crate::model::{AccountRecord, Fairshare, Name, NameKind, QosList, State, names};
use crate::plan::{Plan, Step};
use crate::sacctmgr::command::{AssocSet, Command, QosSet};
use crate::sacctmgr::sim::Sim;

/// Every problem of `plan` against `current`; empty when it may run. The replay stops at the
/// first step that does not apply (the later ones would only repeat it).
pub fn check(plan: &Plan, current: &State) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let mut p = |what: String| problems.push(format!("step {}: {what}", step.number));
        if step.number != i + 1 {
            p(format!("is numbered {} but is step {} of the plan", step.number, i + 1));
        }
        if step.argv != step.command.argv() {
            p("its argv is not the one its command builds".into());
        }
        check_command(step, &mut p);
    }
    if !problems.is_empty() {
        return problems;
    }
    let mut sim = Sim::new(current.clone());
    for step in &plan.steps {
        if let Err(e) = sim.apply(&step.command) {
            problems.push(format!("step {} does not apply to the current state: {}", step.number, e.0));
            break;
        }
    }
    problems
}

fn name(n: &Name, kind: NameKind, p: &mut impl FnMut(String)) {
    match Name::parse(n.as_str(), kind, kind == NameKind::User) {
        Ok(parsed) if !parsed.lowercased => {}
        Ok(_) => p(format!("{kind} name `{n}` is not lower case")),
        Err(e) => p(e.to_string()),
    }
}

fn list(v: &[Name], kind: NameKind, p: &mut impl FnMut(String)) {
    if v.is_empty() {
        p(format!("it names no {kind}"));
    }
    let mut seen = std::collections::HashSet::with_capacity(v.len());
    for n in v {
        name(n, kind, p);
        if !seen.insert(n) {
            p(format!("{kind} `{n}` is listed twice"));
        }
    }
}

fn text(field: &str, t: &Option<String>, p: &mut impl FnMut(String)) {
    if let Some(t) = t {
        match names::free_text(t) {
            Ok(ok) if ok == *t => {}
            Ok(_) => p(format!("{field} `{t}` is not lower case")),
            Err(reason) => p(format!("{field} `{t}`: {reason}")),
        }
    }
}

fn record(r: &AccountRecord, p: &mut impl FnMut(String)) {
    text("description", &r.description, p);
    text("organization", &r.organization, p);
}

fn tres(what: &str, m: &std::collections::BTreeMap<String, Option<u64>>, p: &mut impl FnMut(String)) {
    for (k, v) in m {
        if !values::valid_tres_name(k) {
            p(format!("`{k}` in {what} is not a TRES name"));
        }
        if let Some(v) = v
            && let Err(e) = values::in_range(*v, MAX_TRES, &format!("{what} {k}"))
        {
            p(e);
        }
    }
}

fn count(what: &str, v: &Option<u64>, p: &mut impl FnMut(String)) {
    if let Some(v) = v
        && let Err(e) = values::in_range(*v, MAX_COUNT, what)
    {
        p(e);
    }
}

fn qos_list(l: &QosList, p: &mut impl FnMut(String)) {
    match l {
        QosList::Inherit => {}
        QosList::Set(s) => s.iter().for_each(|n| name(n, NameKind::Qos, p)),
        QosList::Delta { add, remove } => add.iter().chain(remove).for_each(|n| name(n, NameKind::Qos, p)),
    }
}

fn assoc_set(s: &AssocSet, p: &mut impl FnMut(String)) {
    if let Some(Some(Fairshare::Shares(n))) = s.fairshare
        && n > MAX_SHARES
    {
        p(format!("fairshare {n} is above {MAX_SHARES}"));
    }
    for (k, v) in &s.scalars {
        count(k.keyword(), v, p);
    }
    for (k, m) in &s.tres {
        tres(k.keyword(), m, p);
    }
    if let Some(q) = &s.qos {
        qos_list(q, p);
    }
    if let Some(Some(d)) = &s.default_qos {
        name(d, NameKind::Qos, p);
    }
}

fn qos_set(s: &QosSet, p: &mut impl FnMut(String)) {
    text("description", &s.description, p);
    for f in s.flags.iter().flatten() {
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
            p(format!("`{f}` is not a QoS flag name"));
        }
    }
    tres("GrpTRESMins", &s.grp_tres_mins, p);
    tres("GrpTRES", &s.grp_tres, p);
    count("GrpSubmitJobs", &s.grp_submit_jobs.flatten(), p);
    count("MaxWall", &s.max_wall.flatten(), p);
}

fn is_root(n: &Name) -> bool {
    n.as_str() == "root"
}

fn check_command(step: &Step, p: &mut impl FnMut(String)) {
    use NameKind::{Account, Cluster, Partition, Qos, User};
    let c = &step.command;
    if let Some(cl) = c.cluster() {
        name(cl, Cluster, p);
    }
    match c {
        Command::AddQos { names, set } | Command::ModifyQos { names, set } => {
            list(names, Qos, p);
            qos_set(set, p);
        }
        Command::DeleteQos { names } => list(names, Qos, p),
        Command::AddAccount { names, parent, record: r, set, .. } => {
            list(names, Account, p);
            name(parent, Account, p);
            record(r, p);
            assoc_set(set, p);
        }
        Command::ModifyAccount { names, set, .. } => {
            list(names, Account, p);
            assoc_set(set, p);
        }
        Command::ModifyAccountRecord { names, record: r, .. } => {
            list(names, Account, p);
            record(r, p);
        }
        Command::Reparent { name: n, parent, .. } => {
            name(n, Account, p);
            name(parent, Account, p);
            if is_root(n) {
                p("it moves account `root`".into());
            }
        }
        Command::DeleteAccount { names, .. } => {
            list(names, Account, p);
            if names.iter().any(is_root) {
                p("it deletes account `root`".into());
            }
        }
        Command::AddUser { users, account, partition, set, more_accounts, default_account, .. } => {
            list(users, User, p);
            name(account, Account, p);
            more_accounts.iter().for_each(|a| name(a, Account, p));
            if let Some(d) = default_account {
                name(d, Account, p);
            }
            if let Some(pa) = partition {
                name(pa, Partition, p);
            }
            assoc_set(set, p);
        }
        Command::ModifyUser { users, account, partition, set, .. } => {
            list(users, User, p);
            name(account, Account, p);
            if let Some(pa) = partition {
                name(pa, Partition, p);
            }
            assoc_set(set, p);
        }
        Command::SetDefaultAccount { users, account, .. } => {
            list(users, User, p);
            name(account, Account, p);
        }
        Command::DeleteUser { users, account, partition, .. } => {
            list(users, User, p);
            name(account, Account, p);
            if let Some(pa) = partition {
                name(pa, Partition, p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site_a() -> (State, Plan) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/site-a");
        let current = crate::sacctmgr::snapshot::load(&root.join("state")).unwrap();
        let desired = crate::desired::load_file(&root.join("desired.yaml")).unwrap();
        let resolved = crate::desired::resolve::resolve(&desired, &current).unwrap();
        (current.clone(), crate::plan::make_plan(&current, &resolved.state, "x").unwrap())
    }

    fn raw(s: &str) -> Name {
        serde_json::from_value(serde_json::json!(s)).unwrap()
    }

    fn with_step(plan: &Plan, command: Command) -> Plan {
        let mut p = plan.clone();
        p.steps.push(Step {
            number: p.steps.len() + 1,
            phase: crate::plan::Phase::QosDelete,
            argv: command.argv(),
            command,
            causes: vec![],
            note: None,
        });
        p
    }

    #[test]
    fn a_planned_plan_passes() {
        let (current, plan) = site_a();
        assert!(!plan.steps.is_empty());
        assert_eq!(check(&plan, &current), Vec::<String>::new());
    }

    #[test]
    fn edited_steps_are_refused() {
        let (current, plan) = site_a();
        let cluster = current.clusters.keys().next().unwrap().clone();
        let cases: Vec<(Command, &str)> = vec![
            (Command::DeleteAccount { cluster: cluster.clone(), names: vec![raw("root")] }, "deletes account `root`"),
            (Command::DeleteQos { names: vec![] }, "names no QoS"),
            (Command::DeleteQos { names: vec![raw("a;touch x")] }, "invalid QoS name"),
            (Command::DeleteQos { names: vec![raw("\u{1b}[31mred")] }, "invalid QoS name"),
            (Command::DeleteQos { names: vec![raw("Normal")] }, "not lower case"),
            (Command::DeleteQos { names: vec![raw("nosuchqos")] }, "does not apply to the current state"),
            (
                Command::ModifyAccountRecord {
                    cluster: cluster.clone(),
                    names: vec![raw("root")],
                    record: AccountRecord { description: Some("it's".into()), organization: None },
                },
                "quote",
            ),
            (
                Command::ModifyQos {
                    names: vec![raw("normal")],
                    set: QosSet { grp_submit_jobs: Some(Some(u64::MAX)), ..Default::default() },
                },
                "slurmdbd stores 0 to 4294967293",
            ),
        ];
        for (command, want) in cases {
            let p = with_step(&plan, command.clone());
            let problems = check(&p, &current);
            assert!(problems.iter().any(|e| e.contains(want)), "{command:?}: {problems:?}");
        }
        // an argv that is not its command's
        let mut p = plan.clone();
        p.steps[0].argv.push("extra".into());
        assert!(check(&p, &current).iter().any(|e| e.contains("argv")));
    }
}
