//! The fake sacctmgr's argv parser: [`from_argv`] turns exactly what `Command::argv` produces
//! back into the [`Command`] (the exact inverse of `argv()`). A TEST TOOL: only the fake (and
//! tests that replay argv into the model, which include this file) use it; the library builds
//! commands and never parses them. No I/O.

use std::collections::BTreeMap;

use slurmplan_model::{AccountRecord, Fairshare, Name, NameKind, QosList};
use slurmplan_sacctmgr::command::{AssocSet, Command, QosSet, Scalar, TresLimit};

fn parse_names(s: &str, kind: NameKind) -> Result<Vec<Name>, String> {
    if s.is_empty() {
        return Err("empty name list".into());
    }
    s.split(',').map(|n| Name::keep_case(n, kind).map_err(|e| e.to_string())).collect()
}

fn parse_name(s: &str, kind: NameKind) -> Result<Name, String> {
    Name::keep_case(s, kind).map_err(|e| e.to_string())
}

/// `-1` = clear, else an integer.
fn parse_opt_u64(v: &str) -> Result<Option<u64>, String> {
    if v == "-1" { Ok(None) } else { v.parse::<u64>().map(Some).map_err(|_| format!("`{v}` is not a number")) }
}

/// `cpu=10,mem=-1` as written by `words()`.
fn parse_tres_words(v: &str) -> Result<BTreeMap<String, Option<u64>>, String> {
    let mut m = BTreeMap::new();
    for part in v.split(',') {
        let (k, x) = part.split_once('=').ok_or_else(|| format!("TRES entry `{part}` has no `=`"))?;
        if m.insert(k.to_string(), parse_opt_u64(x)?).is_some() {
            return Err(format!("TRES `{k}` appears twice"));
        }
    }
    Ok(m)
}

fn parse_qos_list(v: &str) -> Result<QosList, String> {
    if v.is_empty() {
        return Ok(QosList::Inherit);
    }
    let parts: Vec<&str> = v.split(',').collect();
    if parts.iter().any(|p| p.starts_with('+') || p.starts_with('-')) {
        let (mut add, mut remove) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        for p in parts {
            if let Some(n) = p.strip_prefix('+') {
                add.insert(parse_name(n, NameKind::Qos)?);
            } else if let Some(n) = p.strip_prefix('-') {
                remove.insert(parse_name(n, NameKind::Qos)?);
            } else {
                return Err(format!("QoS delta `{v}` mixes plain names and +/- entries"));
            }
        }
        return Ok(QosList::Delta { add, remove });
    }
    Ok(QosList::Set(parts.into_iter().map(|n| parse_name(n, NameKind::Qos)).collect::<Result<_, _>>()?))
}

/// Parse the words produced by [`AssocSet::words`].
pub fn assoc_set_from_words(words: &[String]) -> Result<AssocSet, String> {
    let mut s = AssocSet::default();
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("`{w}` is not key=value"))?;
        if k == "Fairshare" {
            let f = match v {
                "-1" => None,
                "parent" => Some(Fairshare::Parent),
                n => Some(Fairshare::Shares(n.parse().map_err(|_| format!("bad fairshare `{n}`"))?)),
            };
            s.fairshare = Some(f);
        } else if let Some(sc) = Scalar::ALL.into_iter().find(|x| x.keyword() == k) {
            s.scalars.insert(sc, parse_opt_u64(v)?);
        } else if let Some(t) = TresLimit::ALL.into_iter().find(|x| x.keyword() == k) {
            s.tres.insert(t, parse_tres_words(v)?);
        } else if k == "qos" {
            s.qos = Some(parse_qos_list(v)?);
        } else if k == "defaultqos" {
            s.default_qos = Some(if v == "-1" { None } else { Some(parse_name(v, NameKind::Qos)?) });
        } else {
            return Err(format!("unknown association setting `{k}`"));
        }
    }
    Ok(s)
}

/// Parse the words produced by [`QosSet::words`].
pub fn qos_set_from_words(words: &[String]) -> Result<QosSet, String> {
    let mut s = QosSet::default();
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("`{w}` is not key=value"))?;
        match k {
            "Description" => s.description = Some(v.to_string()),
            "Flags" if v == "-1" => s.flags = Some(Default::default()),
            "Flags" => s.flags = Some(v.split(',').map(str::to_string).collect()),
            "GrpTRES" => s.grp_tres = parse_tres_words(v)?,
            "GrpTRESMins" => s.grp_tres_mins = parse_tres_words(v)?,
            "GrpSubmitJobs" => s.grp_submit_jobs = Some(parse_opt_u64(v)?),
            "MaxWall" => s.max_wall = Some(parse_opt_u64(v)?),
            _ => return Err(format!("unknown QoS setting `{k}`")),
        }
    }
    Ok(s)
}

/// A cursor over argv words with `key=value` helpers.
struct Words<'a> {
    w: &'a [String],
    i: usize,
}

impl<'a> Words<'a> {
    fn next(&mut self) -> Result<&'a str, String> {
        let w = self.w.get(self.i).ok_or("argv ends too early")?;
        self.i += 1;
        Ok(w.as_str())
    }
    fn expect(&mut self, word: &str) -> Result<(), String> {
        match self.next()? {
            w if w == word => Ok(()),
            w => Err(format!("expected `{word}`, found `{w}`")),
        }
    }
    fn kv(&mut self, key: &str) -> Result<&'a str, String> {
        let w = self.next()?;
        w.strip_prefix(key)
            .and_then(|r| r.strip_prefix('='))
            .ok_or_else(|| format!("expected `{key}=...`, found `{w}`"))
    }
    /// An optional `key=value` (only if the next word has that key).
    fn opt_kv(&mut self, key: &str) -> Option<&'a str> {
        let w = self.w.get(self.i)?;
        let v = w.strip_prefix(key).and_then(|r| r.strip_prefix('='))?;
        self.i += 1;
        Some(v)
    }
    fn rest(&mut self) -> &'a [String] {
        let r = &self.w[self.i.min(self.w.len())..];
        self.i = self.w.len();
        r
    }
    fn done(&self) -> Result<(), String> {
        match self.w.get(self.i) {
            None => Ok(()),
            Some(w) => Err(format!("unexpected word `{w}`")),
        }
    }
}

fn opt_partition(v: &str) -> Result<Option<Name>, String> {
    if v.is_empty() { Ok(None) } else { parse_name(v, NameKind::Partition).map(Some) }
}

/// Parse exactly what [`Command::argv`] produces (argv[0] is the program and is not checked,
/// so a runner-substituted path is accepted). Used by fakes of sacctmgr in tests.
///
/// Ambiguities inherent in the argv form: `qos=` always parses as `QosList::Inherit` (so an
/// explicit empty `QosList::Set` does not round-trip), and `modify account ... set` with
/// nothing after `set` parses as a `ModifyAccount` with an empty `AssocSet`.
pub fn from_argv(argv: &[String]) -> Result<Command, String> {
    let mut w = Words { w: argv, i: 0 };
    w.next()?; // program
    w.expect("-i")?;
    let verb = w.next()?;
    let entity = w.next()?;
    let cmd = match (verb, entity) {
        ("add", "qos") => {
            let names = parse_names(w.next()?, NameKind::Qos)?;
            Command::AddQos { names, set: qos_set_from_words(w.rest())? }
        }
        ("modify", "qos") => {
            w.expect("where")?;
            let names = parse_names(w.kv("name")?, NameKind::Qos)?;
            w.expect("set")?;
            Command::ModifyQos { names, set: qos_set_from_words(w.rest())? }
        }
        ("delete", "qos") => {
            w.expect("where")?;
            Command::DeleteQos { names: parse_names(w.kv("name")?, NameKind::Qos)? }
        }
        ("add", "account") => {
            let names = parse_names(w.next()?, NameKind::Account)?;
            let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
            let parent = parse_name(w.kv("parent")?, NameKind::Account)?;
            let record = AccountRecord {
                description: w.opt_kv("description").map(str::to_string),
                organization: w.opt_kv("organization").map(str::to_string),
            };
            Command::AddAccount { cluster, names, parent, record, set: assoc_set_from_words(w.rest())? }
        }
        ("modify", "account") => {
            w.expect("where")?;
            let names = parse_names(w.kv("name")?, NameKind::Account)?;
            let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
            w.expect("set")?;
            let rest = w.rest();
            let first = rest.first().map(String::as_str).unwrap_or("");
            if let Some(p) = first.strip_prefix("parent=") {
                if rest.len() != 1 || names.len() != 1 {
                    return Err("a re-parent names one account and sets only `parent=`".into());
                }
                let name = names.into_iter().next().expect("one name");
                Command::Reparent { cluster, name, parent: parse_name(p, NameKind::Account)? }
            } else if first.starts_with("description=") || first.starts_with("organization=") {
                let mut r = Words { w: rest, i: 0 };
                let record = AccountRecord {
                    description: r.opt_kv("description").map(str::to_string),
                    organization: r.opt_kv("organization").map(str::to_string),
                };
                r.done()?;
                Command::ModifyAccountRecord { cluster, names, record }
            } else {
                Command::ModifyAccount { cluster, names, set: assoc_set_from_words(rest)? }
            }
        }
        ("delete", "account") => {
            w.expect("where")?;
            let names = parse_names(w.kv("name")?, NameKind::Account)?;
            let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
            Command::DeleteAccount { cluster, names }
        }
        ("add", "user") => {
            let users = parse_names(w.next()?, NameKind::User)?;
            let mut more_accounts = parse_names(w.kv("account")?, NameKind::Account)?;
            let account = more_accounts.remove(0);
            let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
            let partition = w.opt_kv("partition").map(|p| parse_name(p, NameKind::Partition)).transpose()?;
            let default_account = w.opt_kv("defaultaccount").map(|d| parse_name(d, NameKind::Account)).transpose()?;
            let set = assoc_set_from_words(w.rest())?;
            Command::AddUser { cluster, users, account, partition, set, more_accounts, default_account }
        }
        ("modify", "user") => {
            w.expect("where")?;
            let users = parse_names(w.kv("name")?, NameKind::User)?;
            if let Some(c) = w.opt_kv("cluster") {
                let cluster = parse_name(c, NameKind::Cluster)?;
                w.expect("set")?;
                let account = parse_name(w.kv("defaultaccount")?, NameKind::Account)?;
                Command::SetDefaultAccount { cluster, users, account }
            } else {
                let account = parse_name(w.kv("account")?, NameKind::Account)?;
                let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
                let partition = opt_partition(w.kv("partition")?)?;
                w.expect("set")?;
                Command::ModifyUser { cluster, users, account, partition, set: assoc_set_from_words(w.rest())? }
            }
        }
        ("delete", "user") => {
            w.expect("where")?;
            let users = parse_names(w.kv("name")?, NameKind::User)?;
            let account = parse_name(w.kv("account")?, NameKind::Account)?;
            let cluster = parse_name(w.kv("cluster")?, NameKind::Cluster)?;
            match w.opt_kv("partition") {
                Some(p) => Command::DeleteUser { cluster, users, account, partition: opt_partition(p)? },
                None => Command::DeleteUserAll { cluster, users, account },
            }
        }
        (v, e) => return Err(format!("unknown command `{v} {e}`")),
    };
    w.done()?;
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::keep_case(s, NameKind::Account).unwrap()
    }

    #[test]
    fn from_argv_inverts_argv_for_every_variant() {
        let c = n("c1");
        let mut tres = BTreeMap::new();
        tres.insert("cpu".to_string(), Some(10));
        tres.insert("mem".to_string(), None);
        let set = AssocSet {
            fairshare: Some(Some(Fairshare::Parent)),
            scalars: [(Scalar::GrpSubmitJobs, Some(0)), (Scalar::MaxWall, None)].into(),
            tres: [(TresLimit::GrpTresMins, tres.clone())].into(),
            qos: Some(QosList::Delta { add: [n("a")].into(), remove: [n("b")].into() }),
            default_qos: Some(None),
        };
        let qset = QosSet {
            flags: Some(Default::default()),
            grp_tres: tres,
            grp_submit_jobs: Some(None),
            max_wall: Some(Some(60)),
            description: Some("two words".into()),
            ..Default::default()
        };
        let rec = AccountRecord { description: Some("d x".into()), organization: None };
        let cmds = vec![
            Command::AddQos { names: vec![n("a"), n("b")], set: qset.clone() },
            Command::ModifyQos { names: vec![n("a")], set: qset },
            Command::DeleteQos { names: vec![n("a")] },
            Command::AddAccount {
                cluster: c.clone(),
                names: vec![n("p")],
                parent: n("root"),
                record: rec.clone(),
                set: set.clone(),
            },
            Command::ModifyAccount { cluster: c.clone(), names: vec![n("p"), n("q")], set: set.clone() },
            Command::ModifyAccountRecord { cluster: c.clone(), names: vec![n("p")], record: rec },
            Command::Reparent { cluster: c.clone(), name: n("p"), parent: n("q") },
            Command::DeleteAccount { cluster: c.clone(), names: vec![n("p")] },
            Command::AddUser {
                cluster: c.clone(),
                users: vec![n("u")],
                account: n("p"),
                partition: Some(n("gpu")),
                set: set.clone(),
                more_accounts: vec![],
                default_account: None,
            },
            Command::AddUser {
                cluster: c.clone(),
                users: vec![n("u"), n("v")],
                account: n("p"),
                partition: None,
                set: set.clone(),
                more_accounts: vec![n("q"), n("r")],
                default_account: Some(n("p")),
            },
            Command::ModifyUser { cluster: c.clone(), users: vec![n("u")], account: n("p"), partition: None, set },
            Command::SetDefaultAccount { cluster: c.clone(), users: vec![n("u"), n("v")], account: n("p") },
            Command::DeleteUser { cluster: c.clone(), users: vec![n("u")], account: n("p"), partition: Some(n("gpu")) },
            Command::DeleteUser { cluster: c.clone(), users: vec![n("u")], account: n("p"), partition: None },
            Command::DeleteUserAll { cluster: c, users: vec![n("u"), n("v")], account: n("p") },
        ];
        for cmd in cmds {
            assert_eq!(from_argv(&cmd.argv()), Ok(cmd.clone()), "{}", cmd.argv().join(" "));
        }
        let bad = |s: &str| from_argv(&s.split(' ').map(String::from).collect::<Vec<_>>());
        assert!(bad("sacctmgr modify account where name=p cluster=c set GrpJobs=1").is_err()); // no -i
        assert!(bad("sacctmgr -i modify account where name=p cluster=c set Bogus=1").is_err());
        assert!(bad("sacctmgr -i delete account where name=p cluster=c extra").is_err());
    }
}
