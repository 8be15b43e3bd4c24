//! The bed side of the differential harness: a real slurmdbd reached through its sacctmgr
//! (argv, `-i` on writes, `cluster=` where a command takes one, a timeout), its state read back
//! live, and the clean-up of a case's objects. Shared by `tests/differential_real.rs` and
//! `tests/undo_real.rs`; the generator and invariants (the parent module) never run sacctmgr.
//! Must not take the model's word for anything: what it returns is what slurmdbd reads back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use crate::common::testbed::{sacctmgr_path, testbed};
use slurmplan::model::State;
use slurmplan::rest::transport::{Options, RestTransport, Token};
use slurmplan::sacctmgr::live;
use slurmplan::sacctmgr::parse::RawReads;
use slurmplan::sacctmgr::runner::ProcessRunner;
use slurmplan::sacctmgr::transport::{Output, Transport};

pub struct Bed {
    pub runner: ProcessRunner,
    pub version: String,
    /// slurmrestd in front of the same slurmdbd (a bed started with `--rest`): every read is
    /// then taken through it too and must give the same state as sacctmgr's, unless
    /// `SLURMPLAN_DIFF_REST=off` (writes through it, SLURMPLAN_DIFF_WRITE=rest, still go).
    pub rest: Option<RestTransport>,
    /// Whether reads are compared with slurmrestd's (see `rest`).
    pub compare_rest: bool,
    /// States compared with slurmrestd's read.
    pub rest_compared: std::sync::atomic::AtomicUsize,
}

impl Bed {
    pub fn v2205(&self) -> bool {
        self.version.starts_with("22.05")
    }

    pub fn run(&self, args: &[String]) -> Output {
        let mut v = vec!["-i".to_string()];
        v.extend_from_slice(args);
        self.runner.run(&v, None).expect("run sacctmgr")
    }

    pub fn read(&self) -> Result<(RawReads, State), String> {
        let (raw, state, unsplit) =
            live::read_consistent(&self.runner, live::Keep::Text, live::Clusters::All, |_, _| {}).map_err(
                |e| match e {
                    live::ReadError::Live(e) => e.to_string(),
                    live::ReadError::Unparsable { diags, .. } => {
                        format!(
                            "the real state does not parse: {}",
                            diags.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("; ")
                        )
                    }
                },
            )?;
        if let Some(u) = unsplit.first() {
            return Err(format!("the real state has rows that cannot be split: {}", u.diagnostic(true, "").message));
        }
        if let Some(rest) = self.rest.as_ref().filter(|_| self.compare_rest) {
            let (_, via_rest, _) = live::read_consistent(rest, live::Keep::Parsed, live::Clusters::All, |_, _| {})
                .map_err(|e| match e {
                    live::ReadError::Live(e) => format!("the slurmrestd read failed: {e}"),
                    live::ReadError::Unparsable { diags, .. } => format!(
                        "the slurmrestd read does not parse: {}",
                        diags.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("; ")
                    ),
                })?;
            let seen = as_rest_sees(&state);
            if via_rest != seen {
                return Err(format!(
                    "the slurmrestd read differs from sacctmgr's (left: sacctmgr, right: slurmrestd):\n{}",
                    super::state_diff(&seen, &via_rest)
                ));
            }
            self.rest_compared.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok((raw, state))
    }
}

pub fn bed() -> Bed {
    testbed();
    let runner = ProcessRunner::new(PathBuf::from(sacctmgr_path()), Vec::new(), Duration::from_secs(60));
    let version = live::version(&runner)
        .unwrap_or_else(|e| panic!("SLURMPLAN_TESTBED is set but sacctmgr does not answer: {e}"))
        .expect("a Slurm version from sacctmgr -V");
    let rest = rest_transport();
    if rest.is_none() && std::env::var("SLURMPLAN_DIFF_REST").is_ok_and(|v| v == "required") {
        panic!(
            "SLURMPLAN_DIFF_REST=required, but the bed has no slurmrestd (start it with `up DIR --version 24.11 --rest`)"
        );
    }
    let compare_rest = match std::env::var("SLURMPLAN_DIFF_REST").as_deref() {
        Ok("off") => false,
        Ok("required") | Ok("") | Err(_) => true,
        Ok(other) => panic!("SLURMPLAN_DIFF_REST is `{other}`: say `required` or `off`"),
    };
    Bed { runner, version, rest, compare_rest, rest_compared: Default::default() }
}

/// `state` as slurmrestd can show it (docs/operations.md, "Through slurmrestd"): a
/// QoS removal of a name the parent's effective list lacks changes nothing and is invisible, so
/// it is dropped (a delta left empty is inheriting).
fn as_rest_sees(state: &State) -> State {
    use slurmplan::model::QosList;
    let strip = |q: &QosList, parent: &std::collections::BTreeSet<slurmplan::model::Name>| match q {
        QosList::Delta { add, remove } => {
            let remove: std::collections::BTreeSet<_> =
                remove.iter().filter(|n| parent.contains(*n)).cloned().collect();
            if add.is_empty() && remove.is_empty() {
                QosList::Inherit
            } else {
                QosList::Delta { add: add.clone(), remove }
            }
        }
        other => other.clone(),
    };
    let mut out = state.clone();
    for (cname, c) in &state.clusters {
        let oc = out.clusters.get_mut(cname).expect("same clusters");
        for name in c.accounts.names() {
            let parent =
                c.accounts.parent(name.as_str()).map(|p| c.accounts.effective_qos(p.as_str())).unwrap_or_default();
            let own = &c.accounts.get(name.as_str()).expect("listed").assoc.qos;
            oc.accounts.get_mut(name.as_str()).expect("listed").assoc.qos = strip(own, &parent);
        }
        for (key, assoc) in &c.users {
            let parent = c.accounts.effective_qos(key.account.as_str());
            oc.users.get_mut(key).expect("listed").qos = strip(&assoc.qos, &parent);
        }
    }
    out
}

/// The bed's slurmrestd, when its env names one (SLURMPLAN_REST_URL, SLURMPLAN_REST_TOKEN_FILE).
fn rest_transport() -> Option<RestTransport> {
    let url = std::env::var("SLURMPLAN_REST_URL").ok().filter(|u| !u.is_empty())?;
    let token_file =
        std::env::var("SLURMPLAN_REST_TOKEN_FILE").expect("SLURMPLAN_REST_TOKEN_FILE beside SLURMPLAN_REST_URL");
    let token = Token::from_file(std::path::Path::new(&token_file)).expect("the bed's token");
    let t = RestTransport::new(Options {
        url,
        user: std::env::var("SLURMPLAN_REST_USER").ok(),
        token,
        ca_cert: None,
        timeout: Duration::from_secs(60),
    })
    .expect("the bed's slurmrestd settings");
    t.data_parser().unwrap_or_else(|e| panic!("the bed's slurmrestd: {e}"));
    Some(t)
}

/// The shell command that repeats one seed on a fresh bed of this version.
/// Did a seeding write succeed (exit 0, no error text, not a no-op)?
pub fn seeded(o: &Output) -> bool {
    let text = format!("{}\n{}", o.stdout, o.stderr).to_ascii_lowercase();
    o.code == Some(0)
        && !o.timed_out
        && !text.contains("error")
        && !text.contains("nothing")
        && !text.contains("don't have access")
}

pub fn output_text(o: &Output) -> String {
    format!("exit {:?}\n{}{}", o.code, o.stdout, o.stderr)
}

/// Rows of a `-n -P` read (an ad hoc one, so through the process runner's own argv, not the
/// transport's fixed reads); a failure is exit not 0, a timeout, or `error` on stderr.
pub fn rows(bed: &Bed, args: &[&str]) -> Result<Vec<Vec<String>>, String> {
    let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let o = bed.runner.capture(&argv, None).map_err(|e| e.to_string())?;
    if o.timed_out || o.code != Some(0) || o.stderr.to_ascii_lowercase().contains("error") {
        return Err(format!("`{}` failed: {}", bed.runner.argv(&argv).join(" "), output_text(&o)));
    }
    let out = o.stdout;
    Ok(out.lines().filter(|l| !l.is_empty()).map(|l| l.split('|').map(str::to_string).collect()).collect())
}

/// Delete everything whose name starts with `prefix`: users first, then accounts children
/// first (per cluster), then account records, then QoS. Reads with its own plain reads, not
/// the parser: a case may leave a state the parser refuses.
pub fn cleanup(bed: &Bed, prefix: &str) -> Result<(), String> {
    let ours = |n: &str| n.starts_with(prefix);
    let assoc = |bed: &Bed| rows(bed, &["-n", "-P", "show", "assoc", "format=Cluster,Account,User,ParentName"]);
    // The case's users exist only for the case: removed everywhere at once (22.05 refuses
    // `delete user where name=U cluster=C` for a user with several accounts there).
    let users: BTreeSet<String> = assoc(bed)?.into_iter().map(|r| r[2].clone()).filter(|u| ours(u)).collect();
    if !users.is_empty() {
        let names = users.into_iter().collect::<Vec<_>>().join(",");
        bed.run(&["delete".into(), "user".into(), "where".into(), format!("name={names}")]);
    }
    // cluster -> account -> parent
    let mut trees: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for r in assoc(bed)? {
        if r[2].is_empty() {
            trees.entry(r[0].clone()).or_default().insert(r[1].clone(), r[3].clone());
        }
    }
    for (cname, tree) in &trees {
        let depth = |a: &String| {
            let (mut a, mut d) = (a.clone(), 0);
            while let Some(p) = tree.get(&a).filter(|p| !p.is_empty()) {
                a = p.clone();
                d += 1;
            }
            d
        };
        let mut by_depth: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for a in tree.keys().filter(|a| ours(a)) {
            by_depth.entry(depth(a)).or_default().push(a.clone());
        }
        for (_, names) in by_depth.into_iter().rev() {
            let w = format!("name={}", names.join(","));
            bed.run(&["delete".into(), "account".into(), "where".into(), w, format!("cluster={cname}")]);
        }
    }
    // account records left without associations (on no cluster any more)
    let records: Vec<String> = rows(bed, &["-n", "-P", "show", "account", "format=Account"])?
        .into_iter()
        .map(|r| r[0].clone())
        .filter(|a| ours(a))
        .collect();
    if !records.is_empty() {
        bed.run(&["delete".into(), "account".into(), "where".into(), format!("name={}", records.join(","))]);
    }
    let qos: Vec<String> = rows(bed, &["-n", "-P", "show", "qos", "format=Name"])?
        .into_iter()
        .map(|r| r[0].clone())
        .filter(|q| ours(q))
        .collect();
    if !qos.is_empty() {
        bed.run(&["delete".into(), "qos".into(), "where".into(), format!("name={}", qos.join(","))]);
    }
    let left = assoc(bed)?.iter().any(|r| ours(&r[1]) || ours(&r[2]))
        || rows(bed, &["-n", "-P", "show", "account", "format=Account"])?.iter().any(|r| ours(&r[0]))
        || rows(bed, &["-n", "-P", "show", "qos", "format=Name"])?.iter().any(|r| ours(&r[0]));
    if left { Err(format!("objects named `{prefix}*` are left after clean-up")) } else { Ok(()) }
}
