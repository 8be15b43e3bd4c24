//! slurmrestd's JSON (data parser v0.0.42) rendered as the `-n -P` text sacctmgr prints for each
//! of slurmplan's reads (`sacctmgr::reads::READS`), so that one parser turns either transport's
//! answer into the same `State`.
//!
//! The association read is three GETs of one cluster ([`AssocReads`]): the effective rows (QoS
//! lists inherited and edited down the tree, as jobs see them), the rows without their parents'
//! limits (each row's own limits, DefaultQOS and the QoS names it adds or sets) and those with
//! the raw QoS as well (an explicit list; a delta reads as empty). slurmrestd cannot print a
//! delta (`+a,-b`), so [`render_assocs`] infers it: an explicit list is the raw read's; otherwise
//! the added names are the own read's and the removed ones are the parent's effective names the
//! row's effective list lacks. The inference is checked (parent's list, plus the adds, minus the
//! removes, must give the row's effective list) and refused when it does not hold. A removal of
//! a name the parent does not have changes nothing Slurm enforces and is invisible here: such a
//! row reads as inheriting (docs/operations.md, "Through slurmrestd").
//!
//! Pure: no I/O, no printing; free text that sacctmgr's line format cannot carry (a line break)
//! is refused, never altered.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use slurmplan_model::values::Tres;
use slurmplan_sacctmgr::parse::{format_duration, format_tres};

/// Why a response cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RenderError(pub String);

fn bad(s: impl Into<String>) -> RenderError {
    RenderError(s.into())
}

/// An error or warning slurmrestd puts in a body (a 200 can carry them).
#[derive(Debug, Clone, Deserialize, Default)]
pub struct Problem {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
}

impl Problem {
    /// One line: the description, else the error, with its source.
    pub fn line(&self) -> String {
        let what = self.description.as_deref().filter(|s| !s.is_empty()).or(self.error.as_deref()).unwrap_or("");
        match self.source.as_deref().filter(|s| !s.is_empty()) {
            Some(src) => format!("{what} ({src})"),
            None => what.to_string(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Meta {
    pub slurm: MetaSlurm,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MetaSlurm {
    pub release: String,
}

/// The parts of every body: what went wrong, what was ignored, who answered.
#[derive(Debug, Clone, Deserialize)]
pub struct Envelope {
    #[serde(default)]
    pub errors: Vec<Problem>,
    #[serde(default)]
    pub warnings: Vec<Problem>,
    #[serde(default)]
    pub meta: Option<Meta>,
}

/// A number with slurmrestd's flags: unset (`set: false`) or infinite reads as no limit.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Num {
    pub set: bool,
    pub infinite: bool,
    pub number: i64,
}

impl Num {
    fn cell(&self, what: &str) -> Result<String, RenderError> {
        if !self.set || self.infinite {
            return Ok(String::new());
        }
        u64::try_from(self.number).map(|n| n.to_string()).map_err(|_| bad(format!("{what} is {}", self.number)))
    }

    fn minutes(&self, what: &str) -> Result<String, RenderError> {
        if !self.set || self.infinite {
            return Ok(String::new());
        }
        u64::try_from(self.number).map(format_duration).map_err(|_| bad(format!("{what} is {}", self.number)))
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct TresItem {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    pub count: i64,
}

/// A TRES list as sacctmgr prints it (`cpu=4,gres/gpu=2,mem=100M`).
fn tres_cell(items: &[TresItem], what: &str) -> Result<String, RenderError> {
    let mut t = Tres::new();
    for i in items {
        let key = if i.name.is_empty() { i.kind.clone() } else { format!("{}/{}", i.kind, i.name) };
        let count = u64::try_from(i.count).map_err(|_| bad(format!("{what} {key} is {}", i.count)))?;
        if key.is_empty() || key.contains([',', '=', '|', '\n']) || t.insert(key.clone(), count).is_some() {
            return Err(bad(format!("{what} holds a TRES slurmplan cannot read: `{key}`")));
        }
    }
    Ok(format_tres(&t))
}

// --- associations -------------------------------------------------------------------------

#[derive(Debug, Clone, Deserialize)]
pub struct AssocsBody {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub associations: Vec<Assoc>,
}

/// The answer to an association query that may match nothing (the users read): no list is
/// none of them.
#[derive(Debug, Clone, Deserialize)]
pub struct SomeAssocsBody {
    #[serde(flatten)]
    pub envelope: Envelope,
    #[serde(default)]
    pub associations: Vec<Assoc>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Assoc {
    pub account: String,
    pub cluster: String,
    #[serde(default)]
    pub partition: String,
    #[serde(default)]
    pub user: String,
    #[serde(default)]
    pub parent_account: String,
    #[serde(default)]
    pub lineage: String,
    pub is_default: bool,
    pub qos: Vec<String>,
    pub default: AssocDefault,
    pub shares_raw: i64,
    pub max: AssocMax,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AssocDefault {
    #[serde(default)]
    pub qos: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AssocMax {
    pub jobs: MaxJobs,
    pub tres: MaxTres,
    pub per: MaxPer,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MaxJobs {
    pub per: MaxJobsPer,
    /// MaxJobs
    pub active: Num,
    /// MaxSubmitJobs
    pub total: Num,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MaxJobsPer {
    /// GrpJobs
    pub count: Num,
    /// GrpSubmitJobs
    pub submitted: Num,
    /// MaxWall (minutes)
    pub wall_clock: Num,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MaxTres {
    /// GrpTRES
    pub total: Vec<TresItem>,
    pub group: TresGroup,
    pub minutes: TresMinutes,
    pub per: TresPer,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TresGroup {
    /// GrpTRESMins
    pub minutes: Vec<TresItem>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TresMinutes {
    pub per: TresPer,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TresPer {
    /// MaxTRES (per job) under `max.tres.per`; MaxTRESMins under `max.tres.minutes.per`
    pub job: Vec<TresItem>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MaxPer {
    pub account: MaxPerAccount,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MaxPerAccount {
    /// GrpWall (minutes)
    pub wall_clock: Num,
}

/// `shares_raw` of `FairShare=parent` (SLURMDB_FS_USE_PARENT).
const FS_USE_PARENT: i64 = 0x7fff_ffff;

/// (account, user, partition), borrowed from the row.
type Key<'a> = (&'a str, &'a str, &'a str);

fn key(a: &Assoc) -> Key<'_> {
    (&a.account, &a.user, &a.partition)
}

/// The three association reads of one cluster (see the module's text).
pub struct AssocReads {
    /// Plain: effective QoS lists (shared with the DefaultAccount read of the same cluster).
    pub effective: std::sync::Arc<Vec<Assoc>>,
    /// Without parent limits: own limits, own DefaultQOS, own added or set QoS names.
    pub own: Vec<Assoc>,
    /// Without parent limits, raw QoS: an explicit list, or empty.
    pub raw: Vec<Assoc>,
}

fn index<'a>(rows: &'a [Assoc], cluster: &str, what: &str) -> Result<BTreeMap<Key<'a>, &'a Assoc>, RenderError> {
    let mut m = BTreeMap::new();
    for a in rows {
        if a.cluster != cluster {
            return Err(bad(format!("the {what} read of cluster {cluster} returned a row of cluster `{}`", a.cluster)));
        }
        if m.insert(key(a), a).is_some() {
            return Err(bad(format!(
                "the {what} read of cluster {cluster} returned account `{}` user `{}` partition `{}` twice",
                a.account, a.user, a.partition
            )));
        }
    }
    Ok(m)
}

fn set(v: &[String]) -> BTreeSet<&str> {
    v.iter().map(String::as_str).collect()
}

fn join<'a>(v: impl IntoIterator<Item = &'a str>) -> String {
    v.into_iter().collect::<Vec<_>>().join(",")
}

/// The raw QoS cell of `key` (sacctmgr's `withrawqos`): `a,b`, `+a,-b` or empty.
fn raw_qos(
    k: &Key,
    effective: &BTreeMap<Key, &Assoc>,
    own: &Assoc,
    raw: &Assoc,
    cluster: &str,
) -> Result<String, RenderError> {
    if !raw.qos.is_empty() {
        return Ok(join(set(&raw.qos)));
    }
    let eff = set(&effective[k].qos);
    // the parent: an account row's parent account; a user row's account row
    let parent_account = if k.1.is_empty() { own.parent_account.as_str() } else { k.0 };
    let parent_eff = if parent_account.is_empty() {
        BTreeSet::new()
    } else {
        match effective.get(&(parent_account, "", "")) {
            Some(p) => set(&p.qos),
            None => {
                return Err(bad(format!(
                    "cluster {cluster}: the parent `{parent_account}` of account `{}` user `{}` is not among the associations",
                    k.0, k.1
                )));
            }
        }
    };
    let add = set(&own.qos);
    let remove: BTreeSet<&str> = parent_eff.difference(&eff).copied().filter(|q| !add.contains(q)).collect();
    let got: BTreeSet<&str> = parent_eff.union(&add).copied().filter(|q| !remove.contains(q)).collect();
    if got != eff {
        return Err(bad(format!(
            "cluster {cluster}: account `{}` user `{}` partition `{}` has the QoS `{}`, which its parent's `{}` with `{}` added does not give; slurmplan cannot tell its raw QoS over REST",
            k.0,
            k.1,
            k.2,
            join(eff.iter().copied()),
            join(parent_eff.iter().copied()),
            join(add.iter().copied())
        )));
    }
    let cells: Vec<String> =
        add.iter().map(|q| format!("+{q}")).chain(remove.iter().map(|q| format!("-{q}"))).collect();
    Ok(cells.join(","))
}

/// One cluster's rows as `sacctmgr -n -P show assoc wopl withrawqos format=Cluster,Account,
/// User,Partition,ParentName,Share,GrpJobs,GrpSubmitJobs,GrpTRES,GrpTRESMins,GrpWall,MaxJobs,
/// MaxSubmitJobs,MaxTRES,MaxTRESMins,MaxWall,QOS,DefaultQOS cluster=C` prints them, in tree
/// order (by lineage). The three reads must hold the same rows (a writer between them is an
/// error: read again).
pub fn render_assocs(cluster: &str, reads: &AssocReads) -> Result<String, RenderError> {
    let effective = index(&reads.effective, cluster, "effective")?;
    let own = index(&reads.own, cluster, "own-limits")?;
    let raw = index(&reads.raw, cluster, "raw-QoS")?;
    if !effective.keys().eq(own.keys()) || !effective.keys().eq(raw.keys()) {
        return Err(bad(format!(
            "the three association reads of cluster {cluster} hold different rows (written to in between); read again"
        )));
    }
    let mut rows: Vec<(&str, String)> = Vec::with_capacity(own.len());
    for (k, a) in &own {
        // a `|` goes through as sacctmgr prints it (the parser sets such a row apart); a line
        // break would split the row, as it would sacctmgr's
        for text in [&a.account, &a.user, &a.partition, &a.parent_account, &a.default.qos] {
            one_line(text, &format!("cluster {cluster}: a name"))?;
        }
        let what = |field: &str| format!("cluster {cluster} account `{}` user `{}`: {field}", k.0, k.1);
        let share = match a.shares_raw {
            FS_USE_PARENT => "parent".to_string(),
            n if n >= 0 => n.to_string(),
            n => return Err(bad(format!("{} is {n}", what("the fairshare")))),
        };
        let m = &a.max;
        let cells = [
            cluster.to_string(),
            a.account.clone(),
            a.user.clone(),
            a.partition.clone(),
            if a.user.is_empty() { a.parent_account.clone() } else { String::new() },
            share,
            m.jobs.per.count.cell(&what("GrpJobs"))?,
            m.jobs.per.submitted.cell(&what("GrpSubmitJobs"))?,
            tres_cell(&m.tres.total, &what("GrpTRES"))?,
            tres_cell(&m.tres.group.minutes, &what("GrpTRESMins"))?,
            m.per.account.wall_clock.minutes(&what("GrpWall"))?,
            m.jobs.active.cell(&what("MaxJobs"))?,
            m.jobs.total.cell(&what("MaxSubmitJobs"))?,
            tres_cell(&m.tres.per.job, &what("MaxTRES"))?,
            tres_cell(&m.tres.minutes.per.job, &what("MaxTRESMins"))?,
            m.jobs.per.wall_clock.minutes(&what("MaxWall"))?,
            raw_qos(k, &effective, a, raw[k], cluster)?,
            a.default.qos.clone(),
        ];
        rows.push((a.lineage.as_str(), cells.join("|")));
    }
    rows.sort();
    Ok(rows.into_iter().map(|(_, r)| r + "\n").collect())
}

/// One cluster's DefaultAccount rows as `sacctmgr -n -P show assoc onlydefaults
/// format=Cluster,User,Account,Partition cluster=C` prints them: each user row marked default.
pub fn render_defaults(cluster: &str, rows: &[Assoc]) -> Result<String, RenderError> {
    let mut out = Vec::new();
    for a in rows.iter().filter(|a| !a.user.is_empty() && a.is_default) {
        for text in [&a.account, &a.user, &a.partition] {
            one_line(text, &format!("cluster {cluster}: a name"))?;
        }
        if a.cluster != cluster {
            return Err(bad(format!(
                "the defaults read of cluster {cluster} returned a row of cluster `{}`",
                a.cluster
            )));
        }
        out.push((a.lineage.as_str(), format!("{cluster}|{}|{}|{}\n", a.user, a.account, a.partition)));
    }
    out.sort();
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

// --- clusters, accounts, QoS --------------------------------------------------------------

#[derive(Debug, Clone, Deserialize)]
pub struct ClustersBody {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub clusters: Vec<Cluster>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Cluster {
    pub name: String,
}

fn one_line(s: &str, what: &str) -> Result<(), RenderError> {
    if s.contains(['\n', '\r']) {
        return Err(bad(format!(
            "{what} holds a line break, which sacctmgr's output cannot carry: `{}`",
            s.escape_debug()
        )));
    }
    Ok(())
}

/// `sacctmgr -n -P show cluster format=Cluster`.
pub fn render_clusters(b: &ClustersBody) -> Result<String, RenderError> {
    let mut s = String::new();
    for c in &b.clusters {
        one_line(&c.name, "a cluster name")?;
        s.push_str(&c.name);
        s.push('\n');
    }
    Ok(s)
}

#[derive(Debug, Clone, Deserialize)]
pub struct AccountsBody {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub accounts: Vec<Account>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Account {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub organization: String,
}

/// Which text of an account a read prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountText {
    Description,
    Organization,
}

/// `sacctmgr -n -P show account format=Account,Description` (or `,Organization`).
pub fn render_accounts(b: &AccountsBody, which: AccountText) -> Result<String, RenderError> {
    let mut s = String::new();
    for a in &b.accounts {
        let text = match which {
            AccountText::Description => &a.description,
            AccountText::Organization => &a.organization,
        };
        one_line(&a.name, "an account name")?;
        one_line(text, &format!("the text of account `{}`", a.name))?;
        s.push_str(&format!("{}|{text}\n", a.name));
    }
    Ok(s)
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosBody {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub qos: Vec<Qos>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Qos {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub flags: Vec<String>,
    pub limits: QosLimits,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosLimits {
    pub max: QosMax,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosMax {
    pub jobs: QosJobs,
    pub tres: QosTres,
    pub wall_clock: QosWall,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosJobs {
    /// GrpSubmitJobs (v0.0.42; v0.0.41 does not carry it)
    pub count: Num,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosTres {
    /// GrpTRES
    pub total: Vec<TresItem>,
    pub minutes: QosTresMinutes,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosTresMinutes {
    /// GrpTRESMins (v0.0.42)
    pub total: Vec<TresItem>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosWall {
    pub per: QosWallPer,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QosWallPer {
    /// MaxWall (minutes)
    pub job: Num,
}

/// slurmrestd's QoS flag names and sacctmgr's (Slurm 24.11, checked on the bed by setting each).
pub const QOS_FLAGS: &[(&str, &str)] = &[
    ("DENY_LIMIT", "DenyOnLimit"),
    ("ENFORCE_USAGE_THRESHOLD", "EnforceUsageThreshold"),
    ("NO_DECAY", "NoDecay"),
    ("NO_RESERVE", "NoReserve"),
    ("OVERRIDE_PARTITION_QOS", "OverPartQOS"),
    ("PARTITION_MAXIMUM_NODE", "PartitionMaxNodes"),
    ("PARTITION_MINIMUM_NODE", "PartitionMinNodes"),
    ("PARTITION_TIME_LIMIT", "PartitionTimeLimit"),
    ("RELATIVE", "Relative"),
    ("REQUIRED_RESERVATION", "RequiresReservation"),
    ("USAGE_FACTOR_SAFE", "UsageFactorSafe"),
];

/// `sacctmgr -n -P show qos format=Name,Flags,GrpTRESMins,GrpTRES,GrpSubmitJobs,MaxWall,
/// Description`. An unknown flag is refused (a newer Slurm's flag is not guessed).
pub fn render_qos(b: &QosBody) -> Result<String, RenderError> {
    let mut s = String::new();
    for q in &b.qos {
        one_line(&q.name, "a QoS name")?;
        one_line(&q.description, &format!("the description of QoS `{}`", q.name))?;
        let mut flags = Vec::new();
        for f in &q.flags {
            match QOS_FLAGS.iter().find(|(rest, _)| rest == f) {
                Some((_, shown)) => flags.push(*shown),
                None => {
                    return Err(bad(format!(
                        "QoS `{}` has the flag `{}`, which slurmplan does not know (known: {})",
                        q.name,
                        f.escape_debug(),
                        QOS_FLAGS.iter().map(|(r, _)| *r).collect::<Vec<_>>().join(", ")
                    )));
                }
            }
        }
        let what = |field: &str| format!("QoS `{}`: {field}", q.name);
        let m = &q.limits.max;
        s.push_str(&format!(
            "{}|{}|{}|{}|{}|{}|{}\n",
            q.name,
            flags.join(","),
            tres_cell(&m.tres.minutes.total, &what("GrpTRESMins"))?,
            tres_cell(&m.tres.total, &what("GrpTRES"))?,
            m.jobs.count.cell(&what("GrpSubmitJobs"))?,
            m.wall_clock.per.job.minutes(&what("MaxWall"))?,
            q.description
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests;
