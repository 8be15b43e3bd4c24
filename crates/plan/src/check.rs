//! The checks every plan file passes when it is read: each step's names and values as the
//! desired-state loader would accept them (no `;`, spaces, quotes or terminal escapes in names;
//! limits within what slurmdbd stores), no empty or repeated name lists, the argv equal to the
//! one its command builds, steps numbered in order, and no step that deletes or re-parents
//! `root`. They need no state; `apply::check` adds the replay on the current state. Pure.

use crate::{Plan, Step};
use slurmplan_model::values::{self, MAX_COUNT, MAX_SHARES, MAX_TRES};
use slurmplan_model::{AccountRecord, Fairshare, Name, NameKind, QosList, names};
use slurmplan_sacctmgr::command::{AssocSet, Command, QosSet};

/// Every problem of the steps of `plan`, each starting with `step N:`.
pub fn step_problems(plan: &Plan) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let mut p = |what: String| problems.push(format!("step {}: {what}", step.number));
        if step.number != i + 1 {
            p(format!("is numbered {} but is step {} of the plan", step.number, i + 1));
        }
        if step.argv != step.command.argv() {
            p("its argv is not the one its command builds".into());
        }
        if let Some(w) = step.argv.iter().find(|w| w.len() > slurmplan_sacctmgr::quote::MAX_ARGV_WORD_BYTES) {
            p(format!(
                "an argv word is {} bytes long; Linux runs no program with a word longer than {} bytes",
                w.len(),
                slurmplan_sacctmgr::quote::MAX_ARGV_WORD_BYTES
            ));
        }
        check_command(step, &mut p);
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
    check_one(&step.command, p);
}

fn check_one(c: &Command, p: &mut impl FnMut(String)) {
    use NameKind::{Account, Cluster, Partition, Qos, User};
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
        Command::DeleteUserAll { users, account, .. } => {
            list(users, User, p);
            name(account, Account, p);
        }
        // A load is checked as the commands it stands for, and for what its file cannot carry.
        Command::Load { cluster, accounts, users } => {
            slurmplan_sacctmgr::load_file::problems(cluster, accounts, users).into_iter().for_each(&mut *p);
            c.split_accounts().iter().for_each(|sub| check_one(sub, p));
        }
    }
}
