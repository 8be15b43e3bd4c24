//! `slurmplan-fake-sacctmgr`: a TEST TOOL, NOT FOR PRODUCTION. It pretends to be Slurm 22.05's
//! `sacctmgr` for fast tests and fault injection, with no slurmdbd behind it.
//!
//! State lives in a snapshot directory (`FAKE_SACCTMGR_DIR`, the same files `slurmplan dump`
//! writes). Reads: an argv equal to one of the snapshot reads prints that file (with
//! `cluster=NAME` after a per-cluster read's argv, that cluster's rows); `-V` prints
//! `slurm-wlm 22.05.8`. Writes: the argv is parsed with `argv::from_argv`, applied with the
//! simulator, saved back, and answered with sacctmgr 22.05's words (copied from real runs).
//!
//! Fault injection (K counts write calls, kept in `calls` in the directory):
//! `FAKE_SACCTMGR_FAIL_AT=K` (DefaultQOS rejection on stderr, exit 0, nothing changed),
//! `FAKE_SACCTMGR_NOOP_AT=K` (` Nothing modified`, exit 1), `FAKE_SACCTMGR_LIE_AT=K` (success
//! words, nothing changed), `FAKE_SACCTMGR_HANG_AT=K` (sleeps an hour), `FAKE_SACCTMGR_KILL_AT=K`
//! (SIGKILLs itself), `FAKE_SACCTMGR_DOWN=1` (every call: connection refused, exit 1),
//! `FAKE_SACCTMGR_RACE_READS=N` (the first N account-description reads list an account the
//! organization read does not: a writer between the reads).
//! Every argv is appended as one JSON line to `argv.log` in the directory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use slurmplan_model::{ClusterState, Name, QosList, State, Tres};
use slurmplan_rules::{RuleError, RuleModel};
use slurmplan_sacctmgr::command::{AssocSet, Command, QosSet, Scalar, TresLimit};
use slurmplan_sacctmgr::parse::{format_duration, write_state};
use slurmplan_sacctmgr::reads::{ACCOUNTS_DESCR, CLUSTERS, READS, Read, USERS_SEEN};
use slurmplan_sacctmgr::snapshot;

mod argv;

/// What the fake answers: stdout, stderr, exit code.
struct Reply {
    out: String,
    err: String,
    code: i32,
}

fn reply(out: impl Into<String>, err: impl Into<String>, code: i32) -> Reply {
    Reply { out: out.into(), err: err.into(), code }
}

mod load_output;

fn main() {
    let r = run();
    print!("{}", r.out);
    eprint!("{}", r.err);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    std::process::exit(r.code);
}

fn env_at(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn run() -> Reply {
    let argv: Vec<String> = std::env::args().collect();
    let Some(dir) = std::env::var_os("FAKE_SACCTMGR_DIR").map(PathBuf::from) else {
        return reply("", "sacctmgr: error: fake: FAKE_SACCTMGR_DIR is not set\n", 1);
    };
    // One write per line: slurmplan runs its reads at once, and appends of one write each do
    // not interleave.
    if let Ok(mut line) = serde_json::to_string(&argv)
        && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("argv.log"))
    {
        line.push('\n');
        let _ = f.write_all(line.as_bytes());
    }
    if std::env::var("FAKE_SACCTMGR_DOWN").is_ok_and(|v| v == "1") {
        return reply(
            "",
            "sacctmgr: error: slurm_persist_conn_open_without_init: failed to open persistent connection to host:localhost:6819: Connection refused\n\
             sacctmgr: error: Sending PersistInit msg: Connection refused\n",
            1,
        );
    }
    let rest = &argv[1.min(argv.len())..];
    if rest == ["-V"] || rest == ["--version"] {
        return reply("slurm-wlm 22.05.8\n", "", 0);
    }
    if let Some(users) = users_seen_read(rest) {
        return match load(&dir) {
            Ok((state, _)) => reply(users_seen(&state, &users), "", 0),
            Err(e) => reply("", format!("sacctmgr: error: fake cannot read its state: {e}\n"), 1),
        };
    }
    if let Some((read, cluster)) = which_read(rest) {
        // the state's only cluster: every row is its own (the fake's files parse together)
        let only = cluster.filter(|c| std::fs::read_to_string(dir.join(CLUSTERS)).is_ok_and(|t| t.trim() == *c));
        return match std::fs::read_to_string(dir.join(read.file)) {
            Ok(text) if read.file == ACCOUNTS_DESCR && raced(&dir) => reply(with_racing_account(text), "", 0),
            Ok(text) if only.is_some() => reply(text, "", 0),
            Ok(text) => reply(of_cluster(text, cluster), "", 0),
            Err(e) => reply("", format!("sacctmgr: error: fake cannot read {}: {e}\n", read.file), 1),
        };
    }
    let is_write =
        rest.iter().take(3).any(|w| matches!(w.as_str(), "add" | "modify" | "delete" | "remove" | "create" | "load"));
    if !is_write {
        return reply("", format!("sacctmgr: error: fake does not implement `{}`\n", rest.join(" ")), 1);
    }
    if rest.first().map(String::as_str) != Some("-i") {
        return reply(
            "",
            "sacctmgr: error: fake requires -i for writes (real sacctmgr would prompt and may loop forever)\n",
            1,
        );
    }
    let k = bump(&dir, "calls");
    let parsed =
        if rest.get(1).map(String::as_str) == Some("load") { load_from_stdin(&argv) } else { argv::from_argv(&argv) };
    let cmd = match parsed {
        Ok(c) => c,
        Err(e) => return reply("", format!("sacctmgr: error: fake does not implement `{}`: {e}\n", rest.join(" ")), 1),
    };
    let (state, manifest) = match load(&dir) {
        Ok(s) => s,
        Err(e) => return reply("", format!("sacctmgr: error: fake cannot load its state: {e}\n"), 1),
    };
    if env_at("FAKE_SACCTMGR_HANG_AT") == Some(k) {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
    if env_at("FAKE_SACCTMGR_KILL_AT") == Some(k) {
        let _ = std::process::Command::new("kill").args(["-9", &std::process::id().to_string()]).status();
        std::thread::sleep(std::time::Duration::from_secs(10));
        std::process::abort();
    }
    if env_at("FAKE_SACCTMGR_FAIL_AT") == Some(k) {
        return reply("", injected_defqos_rejection(&cmd, &state), 0);
    }
    if env_at("FAKE_SACCTMGR_NOOP_AT") == Some(k) {
        return reply(" Nothing modified\n", "", 1);
    }
    let success = success_text(&cmd, &state);
    // a load prints its "Done" on stderr whether slurmdbd kept it or not (a txn past
    // max_allowed_packet loses the whole load: docs/performance.md)
    let done = if matches!(cmd, Command::Load { .. }) { load_output::DONE } else { "" };
    if env_at("FAKE_SACCTMGR_LIE_AT") == Some(k) {
        return reply(success, done, 0);
    }
    let mut sim = RuleModel::new(state.clone());
    match sim.apply(&cmd) {
        Ok(()) => match save(&dir, &sim.state, manifest) {
            Ok(()) => reply(success, done, 0),
            Err(e) => reply("", format!("sacctmgr: error: fake cannot save its state: {e}\n"), 1),
        },
        Err(e) => failure(&cmd, &state, &sim.state, &e),
    }
}

/// The snapshot read `rest` is, and the cluster it is limited to: one of the fixed reads'
/// argv exactly, a per-cluster read with `cluster=NAME` after it.
fn which_read(rest: &[String]) -> Option<(&'static Read, Option<&str>)> {
    READS.iter().find_map(|r| {
        let n = r.args.len();
        if rest.len() < n || !r.args.iter().copied().eq(rest[..n].iter().map(String::as_str)) {
            return None;
        }
        match &rest[n..] {
            [] => Some((r, None)),
            [c] if r.per_cluster => c.strip_prefix("cluster=").map(|c| (r, Some(c))),
            _ => None,
        }
    })
}

/// The users of `sacctmgr -n -P show assoc format=Cluster,User user=A,B` ([`USERS_SEEN`]), if
/// `rest` is that read. sacctmgr lower-cases filter values; so does this.
fn users_seen_read(rest: &[String]) -> Option<Vec<String>> {
    let n = USERS_SEEN.args.len();
    if rest.len() != n + 1 || !USERS_SEEN.args.iter().copied().eq(rest[..n].iter().map(String::as_str)) {
        return None;
    }
    let list = rest[n].strip_prefix("user=")?;
    Some(list.split(',').map(str::to_ascii_lowercase).collect())
}

/// One `cluster|user` line per association of `users`, clusters in name order, each cluster's
/// rows in the order of their keys. (Real sacctmgr groups its lines by user, in an
/// order no read shows; slurmplan takes them as a set, and tests/fake_equivalence.rs compares
/// them as one.)
fn users_seen(state: &State, users: &[String]) -> String {
    let mut out = String::new();
    for (cname, c) in &state.clusters {
        for k in c.users.keys() {
            if users.iter().any(|u| u == k.user.as_str()) {
                let _ = writeln!(out, "{cname}|{}", k.user);
            }
        }
    }
    out
}

/// A per-cluster read prints only that cluster's rows (their first cell), in file order, as
/// `sacctmgr show assoc cluster=NAME` does.
fn of_cluster(text: String, cluster: Option<&str>) -> String {
    let Some(c) = cluster else { return text };
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.strip_prefix(c).is_some_and(|rest| rest.starts_with('|')) {
            out.push_str(line);
        }
    }
    out
}

/// `FAKE_SACCTMGR_RACE_READS=N`: the first N account-description reads (counted in `races`)
/// happen while another tool is adding an account (see [`with_racing_account`]).
fn raced(dir: &Path) -> bool {
    let Some(n) = env_at("FAKE_SACCTMGR_RACE_READS") else { return false };
    bump(dir, "races") <= n
}

/// The account descriptions as read while an account `racing` is being added: it is there,
/// but the organizations read (a separate call) does not list it.
fn with_racing_account(mut text: String) -> String {
    text.push_str("racing|racing\n");
    text
}

/// Count one more event in the counter file `name` of the directory; returns its 1-based
/// number (`calls`: write calls; `races`: raced association reads).
fn bump(dir: &Path, name: &str) -> u64 {
    let path = dir.join(name);
    let n = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(0) + 1;
    let _ = std::fs::write(&path, format!("{n}\n"));
    n
}

fn load(dir: &Path) -> Result<(State, Option<snapshot::Manifest>), String> {
    let (raw, manifest) = snapshot::read_dir(dir).map_err(|d| format!("{d:?}"))?;
    let state = slurmplan_sacctmgr::parse::parse_state(&raw).map_err(|d| format!("{d:?}"))?;
    Ok((state, manifest))
}

fn save(dir: &Path, state: &State, manifest: Option<snapshot::Manifest>) -> std::io::Result<()> {
    let manifest = manifest.unwrap_or_else(|| {
        snapshot::Manifest::new(
            Some("22.05.8".into()),
            "1970-01-01T00:00:00Z",
            state.clusters.keys().map(|c| c.to_string()).collect(),
        )
    });
    snapshot::write_dir(dir, &write_state(state).to_files(), &manifest)
}

// ---------------------------------------------------------------------------------------------
// sacctmgr 22.05's words. Column formats are Slurm's own (`%-10.10s` on the client side for add,
// `%-10s`/`%-20s` from slurmdbd for modify/delete), checked against real 22.05.8 runs.

/// TRES as sacctmgr prints them on add: mem converted to the largest exact unit.
fn tres_text(t: &Tres) -> String {
    t.iter()
        .map(|(k, v)| {
            if k == "mem" {
                let (mut n, mut u) = (*v, 0);
                let units = ["M", "G", "T", "P"];
                while n != 0 && n % 1024 == 0 && u < units.len() - 1 {
                    n /= 1024;
                    u += 1;
                }
                format!("{k}={n}{}", units[u])
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn trunc(s: &str, n: usize) -> String {
    format!("{:<n$}", s.chars().take(n).collect::<String>())
}

/// `  Key           = value` lines of an association's settings (sacctmgr_print_assoc_rec order).
fn assoc_settings(set: &AssocSet, parent: Option<&Name>) -> String {
    let mut s = String::new();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "  {k:<13} = {v}");
    };
    if let Some(Some(f)) = &set.fairshare {
        line("Fairshare", f.to_arg());
    }
    let scalar = |k: Scalar| set.scalars.get(&k).copied().flatten();
    let tres = |k: TresLimit| -> Option<String> {
        let m = set.tres.get(&k)?;
        let t: Tres = m.iter().filter_map(|(n, v)| v.map(|v| (n.clone(), v))).collect();
        (!t.is_empty()).then(|| tres_text(&t))
    };
    if let Some(v) = scalar(Scalar::GrpJobs) {
        line("GrpJobs", v.to_string());
    }
    if let Some(v) = scalar(Scalar::GrpSubmitJobs) {
        line("GrpSubmitJobs", v.to_string());
    }
    if let Some(v) = tres(TresLimit::GrpTres) {
        line("GrpTRES", v);
    }
    if let Some(v) = tres(TresLimit::GrpTresMins) {
        line("GrpTRESMins", v);
    }
    if let Some(v) = scalar(Scalar::GrpWall) {
        line("GrpWall", format_duration(v));
    }
    if let Some(v) = scalar(Scalar::MaxJobs) {
        line("MaxJobs", v.to_string());
    }
    if let Some(v) = scalar(Scalar::MaxSubmitJobs) {
        line("MaxSubmitJobs", v.to_string());
    }
    if let Some(v) = tres(TresLimit::MaxTres) {
        line("MaxTRES", v);
    }
    if let Some(v) = tres(TresLimit::MaxTresMins) {
        line("MaxTRESMins", v);
    }
    if let Some(v) = scalar(Scalar::MaxWall) {
        line("MaxWall", format_duration(v));
    }
    if let Some(p) = parent {
        line("Parent", p.to_string());
    }
    match &set.qos {
        Some(QosList::Set(q)) if !q.is_empty() => line("QOS", slurmplan_model::values::join(q)),
        Some(q @ QosList::Delta { .. }) => line("QOS", q.display()),
        _ => {}
    }
    if let Some(Some(d)) = &set.default_qos {
        line("DefQOS", d.to_string());
    }
    s
}

fn qos_settings(set: &QosSet) -> String {
    let mut s = String::new();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "  {k:<25}= {v}");
    };
    if let Some(f) = &set.flags
        && !f.is_empty()
    {
        line("Flags", f.iter().cloned().collect::<Vec<_>>().join(","));
    }
    if let Some(Some(v)) = set.grp_submit_jobs {
        line("GrpSubmitJobs", v.to_string());
    }
    let t = |m: &std::collections::BTreeMap<String, Option<u64>>| -> Tres {
        m.iter().filter_map(|(n, v)| v.map(|v| (n.clone(), v))).collect()
    };
    if !t(&set.grp_tres).is_empty() {
        line("GrpTRES", tres_text(&t(&set.grp_tres)));
    }
    if !t(&set.grp_tres_mins).is_empty() {
        line("GrpTRESMins", tres_text(&t(&set.grp_tres_mins)));
    }
    if let Some(Some(v)) = set.max_wall {
        line("MaxWall", format_duration(v));
    }
    s
}

fn account_line(cluster: &Name, account: &str, parent: &str) -> String {
    format!("  C = {:<10} A = {account} of {parent}\n", cluster.as_str())
}

fn user_line(cluster: &Name, account: &Name, user: &Name, partition: Option<&Name>) -> String {
    let mut s = format!("  C = {:<10} A = {:<20} U = {:<9}", cluster.as_str(), account.as_str(), user.as_str());
    if let Some(p) = partition {
        let _ = write!(s, " P = {p}");
    }
    s.push('\n');
    s
}

fn parent_of<'a>(c: Option<&'a ClusterState>, name: &str) -> &'a str {
    c.and_then(|c| c.accounts.parent(name)).map(Name::as_str).unwrap_or("")
}

/// Which association fields a `set` changes that children inherit (Max*, QoS, DefaultQOS).
fn inherited_fields(set: &AssocSet) -> Vec<&'static str> {
    let mut f = Vec::new();
    for k in [Scalar::MaxJobs, Scalar::MaxSubmitJobs, Scalar::MaxWall] {
        if set.scalars.contains_key(&k) {
            f.push(k.keyword());
        }
    }
    for k in [TresLimit::MaxTres, TresLimit::MaxTresMins] {
        if set.tres.contains_key(&k) {
            f.push(k.keyword());
        }
    }
    if set.qos.is_some() {
        f.push("qos");
    }
    if set.default_qos.is_some() {
        f.push("defaultqos");
    }
    f
}

fn sets_field(a: &slurmplan_model::Assoc, field: &str) -> bool {
    let l = &a.limits;
    match field {
        "MaxJobs" => l.max_jobs.is_some(),
        "MaxSubmitJobs" => l.max_submit_jobs.is_some(),
        "MaxWall" => l.max_wall.is_some(),
        "MaxTRES" => !l.max_tres.is_empty(),
        "MaxTRESMins" => !l.max_tres_mins.is_empty(),
        "qos" => matches!(a.qos, QosList::Set(_)),
        "defaultqos" => a.default_qos.is_some(),
        _ => false,
    }
}

/// The user associations below `top` that inherit one of `fields` from it (slurmdbd lists
/// them as modified): for each account in the subtree, its users, in tree order.
fn inheriting_users(c: &ClusterState, cluster: &Name, top: &Name, fields: &[&str]) -> String {
    let mut s = String::new();
    if fields.is_empty() {
        return s;
    }
    let mut stack: Vec<(Name, Vec<&str>)> = vec![(top.clone(), fields.to_vec())];
    while let Some((acct, open)) = stack.pop() {
        for (k, a) in c.users_of_account(&acct) {
            if open.iter().any(|f| !sets_field(a, f)) {
                s.push_str(&user_line(cluster, &k.account, &k.user, k.partition.as_ref()));
            }
        }
        let mut kids: Vec<&Name> = c.accounts.children(acct.as_str());
        kids.sort();
        for kid in kids.into_iter().rev() {
            let node = c.accounts.get(kid.as_str()).expect("child exists");
            let still: Vec<&str> = open.iter().copied().filter(|f| !sets_field(&node.assoc, f)).collect();
            if !still.is_empty() {
                stack.push((kid.clone(), still));
            }
        }
    }
    s
}

/// sacctmgr 22.05's confirmation for `cmd`, computed from the state BEFORE the command.
/// `sacctmgr -i load file=/dev/stdin cluster=C` with the flat file on stdin, as slurmplan
/// writes it (`load::render`); the argv must be exactly the one slurmplan builds.
fn load_from_stdin(argv: &[String]) -> Result<Command, String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| e.to_string())?;
    let (cluster, accounts, users) = slurmplan_sacctmgr::load_file::parse(&text)?;
    let cmd = Command::Load { cluster, accounts, users };
    if cmd.argv()[1..] != argv[1..] {
        return Err(format!("argv does not match the file's cluster: {:?}", cmd.argv()));
    }
    Ok(cmd)
}

fn success_text(cmd: &Command, st: &State) -> String {
    let mut s = String::new();
    match cmd {
        Command::Load { cluster, accounts, users } => {
            s.push_str(&load_output::success(cluster.as_str(), accounts, users));
        }
        Command::AddQos { names, set } => {
            s.push_str(" Adding QOS(s)\n");
            for n in names {
                let _ = writeln!(s, "  {n}");
            }
            let descr =
                set.description.clone().unwrap_or_else(|| names.last().map(|n| n.to_string()).unwrap_or_default());
            let _ = writeln!(s, " Settings\n  Description    = {}", descr.to_lowercase());
            s.push_str(&qos_settings(set));
        }
        Command::ModifyQos { names, .. } => {
            s.push_str(" Modified qos...\n");
            for n in names {
                let _ = writeln!(s, "  {n}");
            }
        }
        Command::DeleteQos { names } => {
            s.push_str(" Deleting QOS(s)...\n");
            for n in names {
                let _ = writeln!(s, "  {n}");
            }
        }
        Command::AddAccount { cluster, names, parent, record, set } => {
            // account records are global: one that exists (on any cluster) is not "added"
            let new: Vec<&Name> = names.iter().filter(|n| !st.accounts.contains_key(*n)).collect();
            if !new.is_empty() {
                s.push_str(" Adding Account(s)\n");
                for n in new {
                    let _ = writeln!(s, "  {n}");
                }
                let d = record.description.as_deref().map(str::to_lowercase).unwrap_or_else(|| "Account Name".into());
                let o = record
                    .organization
                    .as_deref()
                    .map(str::to_lowercase)
                    .unwrap_or_else(|| "Parent/Account Name".into());
                let _ = writeln!(s, " Settings\n  Description     = {d}\n  Organization    = {o}");
            }
            s.push_str(" Associations\n");
            for n in names {
                let _ = writeln!(s, "  A = {} C = {}", trunc(n.as_str(), 10), trunc(cluster.as_str(), 10));
            }
            s.push_str(" Settings\n");
            s.push_str(&assoc_settings(set, Some(parent)));
        }
        Command::ModifyAccount { cluster, names, set } => {
            s.push_str(" Modified account associations...\n");
            let c = st.clusters.get(cluster);
            let fields = inherited_fields(set);
            for n in names {
                s.push_str(&account_line(cluster, n.as_str(), parent_of(c, n.as_str())));
                if let Some(c) = c {
                    s.push_str(&inheriting_users(c, cluster, n, &fields));
                }
            }
        }
        Command::ModifyAccountRecord { names, .. } => {
            s.push_str(" Modified accounts...\n");
            for n in names {
                let _ = writeln!(s, "  {n}");
            }
        }
        Command::Reparent { cluster, name, .. } => {
            s.push_str(" Modified account associations...\n");
            s.push_str(&account_line(cluster, name.as_str(), parent_of(st.clusters.get(cluster), name.as_str())));
        }
        Command::DeleteAccount { cluster, names } => {
            s.push_str(" Deleting account associations...\n");
            for n in names {
                s.push_str(&account_line(cluster, n.as_str(), parent_of(st.clusters.get(cluster), n.as_str())));
            }
        }
        Command::AddUser { cluster, users, account, partition, set, more_accounts, default_account } => {
            let known = |u: &Name| st.clusters.values().any(|c| !c.user_accounts(u.as_str()).is_empty());
            let new: Vec<&Name> = users.iter().filter(|u| !known(u)).collect();
            if !new.is_empty() {
                s.push_str(" Adding User(s)\n");
                for u in new {
                    let _ = writeln!(s, "  {u}");
                }
            }
            // `defaultaccount=` comes after `account=`, and 22.05 moves a repeated name of a
            // list to its end: the default account's association is listed last.
            let mut accounts: Vec<&Name> = std::iter::once(account).chain(more_accounts).collect();
            if let Some(d) = default_account {
                let _ = write!(s, " Settings =\n  Default Account = {d}\n");
                accounts.retain(|a| *a != d);
                accounts.push(d);
            }
            s.push_str(" Associations =\n");
            for u in users {
                for a in &accounts {
                    let _ = write!(
                        s,
                        "  U = {} A = {} C = {}",
                        trunc(u.as_str(), 9),
                        trunc(a.as_str(), 10),
                        trunc(cluster.as_str(), 10)
                    );
                    if let Some(p) = partition {
                        let _ = write!(s, " P = {}", trunc(p.as_str(), 10));
                    }
                    s.push('\n');
                }
            }
            s.push_str(" Non Default Settings\n");
            s.push_str(&assoc_settings(set, None));
        }
        Command::ModifyUser { cluster, users, account, partition, .. } => {
            s.push_str(" Modified user associations...\n");
            for u in users {
                s.push_str(&user_line(cluster, account, u, partition.as_ref()));
            }
        }
        Command::SetDefaultAccount { users, .. } => {
            s.push_str(" Modified users...\n");
            for u in users {
                let _ = writeln!(s, "  {u}");
            }
        }
        Command::DeleteUser { cluster, users, account, partition } => {
            s.push_str(" Deleting user associations...\n");
            for u in users {
                deleted_line(&mut s, cluster, account, u, partition.as_ref());
            }
        }
        Command::DeleteUserAll { cluster, users, account } => {
            s.push_str(" Deleting user associations...\n");
            if let Some(c) = st.clusters.get(cluster) {
                for (k, _) in c.users_of_account(account).filter(|(k, _)| users.contains(&k.user)) {
                    deleted_line(&mut s, cluster, account, &k.user, k.partition.as_ref());
                }
            }
        }
    }
    s
}

fn deleted_line(s: &mut String, cluster: &Name, account: &Name, user: &Name, partition: Option<&Name>) {
    let _ = write!(s, "  C = {:<10} A = {:<10} U = {:<9}", cluster.as_str(), account.as_str(), user.as_str());
    if let Some(p) = partition {
        let _ = write!(s, " P = {p}");
    }
    s.push('\n');
}

const DEFQOS_HEAD: &str = " These associations don't have access to their default qos.\n Please give them access before they the default can be set to this.\n";

fn defqos_line(def: &str, cluster: &Name, account: &Name, user: Option<(&Name, Option<&Name>)>) -> String {
    let mut s = format!("  DefQOS = {def:<10} C = {:<10} A = {:<20} ", cluster.as_str(), account.as_str());
    if let Some((u, p)) = user {
        let _ = write!(s, "U = {:<9}", u.as_str());
        if let Some(p) = p {
            let _ = write!(s, " P = {p}");
        }
    }
    s.push('\n');
    s
}

/// Every association on `cluster` whose effective DefaultQOS is outside its effective QoS
/// list, in tree order (accounts, each followed by its users).
fn defqos_violations(st: &State, cluster: &Name) -> String {
    let mut s = String::new();
    let Some(c) = st.clusters.get(cluster) else { return s };
    for acct in c.accounts.subtree("root") {
        let eff = c.accounts.effective_qos(acct.as_str());
        if let Some(d) = c.accounts.effective_default_qos(acct.as_str())
            && !eff.contains(d)
        {
            s.push_str(&defqos_line(d.as_str(), cluster, acct, None));
        }
        for (k, a) in c.users_of_account(acct) {
            if let Some(d) = c.user_effective_default_qos(k, a)
                && !c.user_effective_qos(k, a).contains(d)
            {
                s.push_str(&defqos_line(d.as_str(), cluster, acct, Some((&k.user, k.partition.as_ref()))));
            }
        }
    }
    s
}

/// FAIL_AT: the rejection as 22.05 prints it, naming the command's first target.
fn injected_defqos_rejection(cmd: &Command, st: &State) -> String {
    let mut s = DEFQOS_HEAD.to_string();
    let fallback = Name::keep_case("normal", slurmplan_model::NameKind::Qos).expect("valid");
    let cluster =
        cmd.cluster().cloned().unwrap_or_else(|| st.clusters.keys().next().cloned().unwrap_or(fallback.clone()));
    let c = st.clusters.get(&cluster);
    let def_of = |acct: &Name| {
        c.and_then(|c| c.accounts.effective_default_qos(acct.as_str())).cloned().unwrap_or(fallback.clone())
    };
    match cmd {
        Command::AddUser { account, users, partition, .. }
        | Command::ModifyUser { account, users, partition, .. }
        | Command::DeleteUser { account, users, partition, .. } => {
            for u in users {
                s.push_str(&defqos_line(def_of(account).as_str(), &cluster, account, Some((u, partition.as_ref()))));
            }
        }
        Command::SetDefaultAccount { account, users, .. } | Command::DeleteUserAll { account, users, .. } => {
            for u in users {
                s.push_str(&defqos_line(def_of(account).as_str(), &cluster, account, Some((u, None))));
            }
        }
        Command::AddAccount { names, .. }
        | Command::ModifyAccount { names, .. }
        | Command::DeleteAccount { names, .. }
        | Command::ModifyAccountRecord { names, .. } => {
            for n in names {
                s.push_str(&defqos_line(def_of(n).as_str(), &cluster, n, None));
            }
        }
        Command::Reparent { name, .. } => s.push_str(&defqos_line(def_of(name).as_str(), &cluster, name, None)),
        Command::Load { accounts, .. } => {
            for a in accounts {
                s.push_str(&defqos_line(def_of(&a.parent).as_str(), &cluster, &a.name, None));
            }
        }
        Command::AddQos { .. } | Command::ModifyQos { .. } | Command::DeleteQos { .. } => {
            let root = Name::keep_case("root", slurmplan_model::NameKind::Account).expect("valid");
            s.push_str(&defqos_line(fallback.as_str(), &cluster, &root, None));
        }
    }
    s
}

const NOTHING_ADDED: &str = " Nothing new added.\n";
const NOTHING_MODIFIED: &str = " Nothing modified\n";
const NOTHING_DELETED: &str = " Nothing deleted\n";

/// 22.05's answer when the simulator refuses `cmd` (`after` is the simulator's partial state).
fn failure(cmd: &Command, before: &State, after: &State, e: &RuleError) -> Reply {
    let msg = e.message.as_str();
    if let Some(c) = cmd.cluster()
        && !before.clusters.contains_key(c)
    {
        return match cmd.verb() {
            "add" => reply(
                "",
                format!(" This cluster '{c}' doesn't exist.\n        Contact your admin to add it to accounting.\n"),
                1,
            ),
            "delete" => reply(NOTHING_DELETED, "", 1),
            _ => reply(NOTHING_MODIFIED, "", 1),
        };
    }
    if msg.contains("outside its QoS list") {
        let cluster = cmd.cluster().cloned();
        let listed = cluster.map(|c| defqos_violations(after, &c)).unwrap_or_default();
        return reply("", format!("{DEFQOS_HEAD}{listed}"), 0);
    }
    if let Some(q) = msg.strip_prefix("QoS `").and_then(|r| r.strip_suffix("` does not exist")) {
        return match cmd {
            Command::ModifyQos { .. } => reply(NOTHING_MODIFIED, "", 1),
            Command::DeleteQos { .. } => reply(NOTHING_DELETED, "", 1),
            _ => {
                let valid: Vec<&str> = before.qos.keys().map(Name::as_str).collect();
                let opt = cmd
                    .argv()
                    .into_iter()
                    .find(|w| (w.starts_with("qos=") || w.starts_with("defaultqos=")) && w.contains(q))
                    .unwrap_or_else(|| format!("qos={q}"));
                reply(
                    "",
                    format!(
                        "sacctmgr: error: You gave a bad qos '{q}'. Valid QOS's are {}\n Unknown option: {opt}\n Use keyword 'where' to modify condition\n",
                        valid.join(",")
                    ),
                    1,
                )
            }
        };
    }
    match cmd {
        Command::AddQos { .. } if msg.contains("already exists") => reply(NOTHING_ADDED, "", 1),
        Command::AddAccount { cluster, parent, .. } if msg.starts_with("no parent account") => reply(
            "",
            format!(
                " Parent account '{parent}' doesn't exist on cluster {cluster}\n        Contact your admin to add this account.\n No associations created.\n"
            ),
            1,
        ),
        Command::AddAccount { .. } if msg.contains("already exists") => reply(NOTHING_ADDED, "", 1),
        Command::AddUser { account, .. } if msg.starts_with("no account") => reply(
            NOTHING_ADDED,
            format!(" This account '{account}' doesn't exist.\n        Contact your admin to add this account.\n"),
            1,
        ),
        Command::AddUser { .. } if msg.contains("already exists") => reply(NOTHING_ADDED, "", 1),
        // 22.05 accepts a re-parent to the current parent and a default that is already set
        Command::Reparent { .. } | Command::SetDefaultAccount { .. } if msg.ends_with("(a no-op)") => {
            reply(success_text(cmd, before), "", 0)
        }
        Command::Reparent { .. } if msg.starts_with("no account") => reply(NOTHING_MODIFIED, "", 1),
        Command::Reparent { parent, .. } if msg.starts_with("no parent account") => {
            reply("", format!(" Parent Account {parent} doesn't exist.\n"), 1)
        }
        Command::SetDefaultAccount { cluster, users, account } => {
            let c = before.clusters.get(cluster);
            let mut s = format!(
                " Can't modify because these users aren't associated with new default account '{account}'...\n"
            );
            for u in users {
                if !c.is_some_and(|c| c.is_associated(u, account)) {
                    let _ = writeln!(s, "  U = {u} C = {cluster}");
                }
            }
            reply(s, "", 1)
        }
        Command::ModifyAccount { .. } | Command::ModifyAccountRecord { .. } | Command::ModifyUser { .. }
            if msg.starts_with("no ") =>
        {
            reply(NOTHING_MODIFIED, "", 1)
        }
        Command::DeleteUser { cluster, account, .. } | Command::DeleteUserAll { cluster, account, .. }
            if msg.contains("dangling") || msg.contains("keeps other associations") =>
        {
            let u = msg.split('`').nth(1).unwrap_or("");
            reply(
                "",
                format!(
                    " Error with request: You can not remove the default account of a user\n  C = {:<15} A = {:<10} U = {u}\n You must change the default account of these users or remove the users completely from the affected clusters to allow these changes.\n Changes Discarded\n",
                    cluster.as_str(),
                    account.as_str()
                ),
                1,
            )
        }
        Command::DeleteUser { .. } | Command::DeleteUserAll { .. } if msg.starts_with("no user association") => {
            reply(NOTHING_DELETED, "", 1)
        }
        Command::DeleteAccount { .. } if msg.starts_with("no account") => reply(NOTHING_DELETED, "", 1),
        // Rules real 22.05 does not enforce (it would cascade or leave the database broken):
        // the fake refuses with its own words.
        _ => reply("", format!("sacctmgr: error: fake refuses (a rule real 22.05 may not enforce): {msg}\n"), 1),
    }
}
