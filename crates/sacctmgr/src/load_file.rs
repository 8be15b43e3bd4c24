//! The `sacctmgr load` step: new accounts and new users written as sacctmgr's flat file, fed on
//! standard input (`sacctmgr -i load file=/dev/stdin cluster=C`), with the exact text it
//! produces ([`write`]), its inverse ([`parse`], for the fake sacctmgr and checks), and what it
//! does in terms of the other commands ([`expand`], for the rules model and `--no-batch`).
//!
//! Only creation is ever expressed here: accounts that do not exist anywhere, and users with no
//! association on any cluster, each line stating every value (Description, Organization,
//! DefaultAccount), so nothing is left to load's own defaults. A value load cannot carry
//! ([`safe`]) is never written. Pure: no I/O; the planner decides when a load is used
//! (`plan::onboard`).

use super::command::{AssocSet, Command, Scalar, TresLimit};
use slurmplan_model::{AccountRecord, Fairshare, Name, NameKind, QosList};

/// A new account: one `Account -` line under `Parent - 'parent'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadAccount {
    pub name: Name,
    pub parent: Name,
    pub description: String,
    pub organization: String,
    pub set: AssocSet,
}

/// One association of a new user (no partition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadRow {
    pub account: Name,
    pub set: AssocSet,
}

/// A new user: one `User -` line per row, each naming the same DefaultAccount (one of its rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadUser {
    pub name: Name,
    pub default_account: Name,
    pub rows: Vec<LoadRow>,
}

/// The device sacctmgr reads the file from.
pub const STDIN_FILE: &str = "file=/dev/stdin";

/// Whether sacctmgr's flat-file parser keeps `s` as it is inside single quotes. Verified on
/// 22.05.8 and 24.11.5 (docs/decisions.md): `'` ends the value, `"` becomes a backtick, `\`
/// is dropped, `#` is a fatal error; anything outside printable ASCII is not tried.
pub fn safe(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (b == b' ' || b.is_ascii_graphic()) && !b"'\"#\\".contains(&b))
}

/// Every value of the step that load cannot carry (empty when it can be written): every name
/// the file holds (cluster, parents, accounts, users, QoS and DefaultQOS) and every free text.
pub fn problems(cluster: &Name, accounts: &[LoadAccount], users: &[LoadUser]) -> Vec<String> {
    let mut out = Vec::new();
    let check = |out: &mut Vec<String>, what: &str, v: &str| {
        if !safe(v) {
            out.push(format!("{what} `{v}` cannot be written to sacctmgr's load file"));
        }
    };
    check(&mut out, "cluster", cluster.as_str());
    for a in accounts {
        check(&mut out, "account", a.name.as_str());
        check(&mut out, "parent", a.parent.as_str());
        check(&mut out, "description", &a.description);
        check(&mut out, "organization", &a.organization);
    }
    for u in users {
        check(&mut out, "user", u.name.as_str());
        check(&mut out, "account", u.default_account.as_str());
        for r in &u.rows {
            check(&mut out, "account", r.account.as_str());
        }
        if !u.rows.iter().any(|r| r.account == u.default_account) {
            out.push(format!("user `{}`: DefaultAccount `{}` is not one of its rows", u.name, u.default_account));
        }
    }
    for set in accounts.iter().map(|a| &a.set).chain(users.iter().flat_map(|u| u.rows.iter().map(|r| &r.set))) {
        if let Some(QosList::Set(q)) = &set.qos {
            q.iter().for_each(|n| check(&mut out, "QoS", n.as_str()));
        }
        if let Some(Some(q)) = &set.default_qos {
            check(&mut out, "DefaultQOS", q.as_str());
        }
        if let Err(e) = options(set) {
            out.push(e);
        }
    }
    out
}

/// The flat-file keyword of a limit (as `sacctmgr dump` writes it).
fn scalar_keyword(k: Scalar) -> &'static str {
    match k {
        Scalar::MaxWall => "MaxWallDurationPerJob",
        other => other.keyword(),
    }
}

fn tres_keyword(k: TresLimit) -> &'static str {
    match k {
        TresLimit::GrpTres => "GrpTRES",
        TresLimit::GrpTresMins => "GrpTRESMins",
        TresLimit::MaxTres => "MaxTRESPerJob",
        TresLimit::MaxTresMins => "MaxTRESMinsPerJob",
    }
}

/// The `:Key=value` options of a new association (no clears, no QoS deltas, no `parent`
/// fairshare: those are refused).
fn options(set: &AssocSet) -> Result<String, String> {
    let mut s = String::new();
    match set.fairshare {
        None | Some(None) => {}
        Some(Some(Fairshare::Shares(n))) => s.push_str(&format!(":Fairshare={n}")),
        Some(Some(Fairshare::Parent)) => return Err("fairshare `parent` is not written to a load file".into()),
    }
    for (k, v) in &set.scalars {
        let v = v.ok_or_else(|| format!("a load file cannot clear {}", k.keyword()))?;
        s.push_str(&format!(":{}={v}", scalar_keyword(*k)));
    }
    for (k, m) in &set.tres {
        let mut parts = Vec::new();
        for (n, v) in m {
            let v = v.ok_or_else(|| format!("a load file cannot clear {}", k.keyword()))?;
            if !safe(n) || n.contains([',', ':', '=']) {
                return Err(format!("TRES `{n}` cannot be written to a load file"));
            }
            parts.push(format!("{n}={v}"));
        }
        if !parts.is_empty() {
            s.push_str(&format!(":{}={}", tres_keyword(*k), parts.join(",")));
        }
    }
    match &set.qos {
        None | Some(QosList::Inherit) => {}
        Some(QosList::Set(q)) if !q.is_empty() => {
            let names: Vec<&str> = q.iter().map(Name::as_str).collect();
            s.push_str(&format!(":QOS='{}'", names.join(",")));
        }
        Some(_) => return Err("an empty or delta QoS list is not written to a load file".into()),
    }
    match &set.default_qos {
        None => {}
        Some(Some(q)) => s.push_str(&format!(":DefaultQOS='{q}'")),
        Some(None) => return Err("a load file cannot clear DefaultQOS".into()),
    }
    Ok(s)
}

/// The flat file for `cluster`: accounts in the given order (each parent exists or comes
/// earlier), then the users' rows grouped by account. Panics on a value [`problems`] reports:
/// the planner and `apply`'s checks never pass one.
pub fn write(cluster: &Name, accounts: &[LoadAccount], users: &[LoadUser]) -> String {
    let mut s = format!("Cluster - '{cluster}'\n");
    let mut parent: Option<&Name> = None;
    for a in accounts {
        if parent != Some(&a.parent) {
            s.push_str(&format!("Parent - '{}'\n", a.parent));
            parent = Some(&a.parent);
        }
        s.push_str(&account_line(a));
    }
    let mut by_account: Vec<(&Name, Vec<(&LoadUser, &LoadRow)>)> = Vec::new();
    for u in users {
        for r in &u.rows {
            match by_account.iter_mut().find(|(a, _)| *a == &r.account) {
                Some((_, v)) => v.push((u, r)),
                None => by_account.push((&r.account, vec![(u, r)])),
            }
        }
    }
    for (account, rows) in by_account {
        s.push_str(&format!("Parent - '{account}'\n"));
        for (u, r) in rows {
            s.push_str(&user_line(u, r));
        }
    }
    s
}

/// The `Account -` line of `a` in the file, with its newline.
pub fn account_line(a: &LoadAccount) -> String {
    let opts = options(&a.set).expect("checked by load_file::problems");
    format!("Account - '{}':Description='{}':Organization='{}'{opts}\n", a.name, a.description, a.organization)
}

/// The `User -` line of row `r` of `u` in the file, with its newline.
pub fn user_line(u: &LoadUser, r: &LoadRow) -> String {
    let opts = options(&r.set).expect("checked by load_file::problems");
    format!("User - '{}':DefaultAccount='{}'{opts}\n", u.name, u.default_account)
}

fn quoted(v: &str) -> Result<&str, String> {
    v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).ok_or_else(|| format!("`{v}` is not in single quotes"))
}

fn name(v: &str, kind: NameKind) -> Result<Name, String> {
    Name::keep_case(quoted(v)?, kind).map_err(|e| e.to_string())
}

/// Split `'a:b':X=1:Y='c,d'` at the colons outside quotes.
fn fields(line: &str) -> Vec<&str> {
    let (mut out, mut start, mut q) = (Vec::new(), 0, false);
    for (i, c) in line.char_indices() {
        match c {
            '\'' => q = !q,
            ':' if !q => {
                out.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&line[start..]);
    out
}

fn parse_options(opts: &[&str]) -> Result<(AssocSet, Vec<(String, String)>), String> {
    let mut set = AssocSet::default();
    let mut rest = Vec::new();
    for o in opts {
        let (k, v) = o.split_once('=').ok_or_else(|| format!("option `{o}` has no `=`"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|_| format!("`{v}` is not a number"));
        if let Some(s) = Scalar::ALL.into_iter().find(|s| scalar_keyword(*s) == k) {
            set.scalars.insert(s, Some(num(v)?));
        } else if let Some(t) = TresLimit::ALL.into_iter().find(|t| tres_keyword(*t) == k) {
            let mut m = std::collections::BTreeMap::new();
            for part in v.split(',') {
                let (n, x) = part.split_once('=').ok_or_else(|| format!("TRES `{part}` has no `=`"))?;
                m.insert(n.to_string(), Some(num(x)?));
            }
            set.tres.insert(t, m);
        } else if k == "Fairshare" {
            let n: u32 = v.parse().map_err(|_| format!("`{v}` is not a fairshare"))?;
            set.fairshare = Some(Fairshare::normal(n));
        } else if k == "QOS" {
            let q = quoted(v)?.split(',').map(|n| Name::keep_case(n, NameKind::Qos).map_err(|e| e.to_string()));
            set.qos = Some(QosList::Set(q.collect::<Result<_, _>>()?));
        } else if k == "DefaultQOS" {
            set.default_qos = Some(Some(name(v, NameKind::Qos)?));
        } else {
            rest.push((k.to_string(), quoted(v)?.to_string()));
        }
    }
    Ok((set, rest))
}

/// The inverse of [`write`]: cluster, accounts and users of a flat file as slurmplan writes
/// it. Anything else is an error.
pub fn parse(text: &str) -> Result<(Name, Vec<LoadAccount>, Vec<LoadUser>), String> {
    let (mut cluster, mut parent) = (None, None::<Name>);
    let (mut accounts, mut users) = (Vec::<LoadAccount>::new(), Vec::<LoadUser>::new());
    for (i, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}", i + 1);
        let (kind, rest) = line.split_once(" - ").ok_or_else(|| at(format!("`{line}` is not `Kind - 'name'`")))?;
        let f = fields(rest);
        let (set, extra) = parse_options(&f[1..]).map_err(at)?;
        let get = |k: &str| extra.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        match kind {
            "Cluster" => cluster = Some(name(f[0], NameKind::Cluster).map_err(at)?),
            "Parent" => parent = Some(name(f[0], NameKind::Account).map_err(at)?),
            "Account" => accounts.push(LoadAccount {
                name: name(f[0], NameKind::Account).map_err(at)?,
                parent: parent.clone().ok_or_else(|| at("no Parent line before".into()))?,
                description: get("Description").ok_or_else(|| at("no Description".into()))?,
                organization: get("Organization").ok_or_else(|| at("no Organization".into()))?,
                set,
            }),
            "User" => {
                let user = name(f[0], NameKind::User).map_err(at)?;
                let default_account = Name::keep_case(
                    &get("DefaultAccount").ok_or_else(|| at("no DefaultAccount".into()))?,
                    NameKind::Account,
                )
                .map_err(|e| at(e.to_string()))?;
                let row = LoadRow { account: parent.clone().ok_or_else(|| at("no Parent line before".into()))?, set };
                match users.iter_mut().find(|u| u.name == user) {
                    Some(u) => u.rows.push(row),
                    None => users.push(LoadUser { name: user, default_account, rows: vec![row] }),
                }
            }
            other => return Err(at(format!("unknown line kind `{other}`"))),
        }
    }
    Ok((cluster.ok_or("no Cluster line")?, accounts, users))
}

/// What the load does, as the commands that do the same one at a time: each account created
/// under its parent, then each user's row under its DefaultAccount (which marks it) and its
/// other rows (unmarked), as slurmdbd does for a load (docs/decisions.md).
pub fn expand(cluster: &Name, accounts: &[LoadAccount], users: &[LoadUser]) -> Vec<Command> {
    let mut out = Vec::new();
    for a in accounts {
        out.push(Command::AddAccount {
            cluster: cluster.clone(),
            names: vec![a.name.clone()],
            parent: a.parent.clone(),
            record: AccountRecord {
                description: Some(a.description.clone()),
                organization: Some(a.organization.clone()),
            },
            set: a.set.clone(),
        });
    }
    for u in users {
        let first = u.rows.iter().filter(|r| r.account == u.default_account);
        let others = u.rows.iter().filter(|r| r.account != u.default_account);
        for r in first.chain(others) {
            out.push(Command::AddUser {
                cluster: cluster.clone(),
                users: vec![u.name.clone()],
                account: r.account.clone(),
                partition: None,
                set: r.set.clone(),
                more_accounts: Vec::new(),
                default_account: None,
            });
        }
    }
    out
}

/// The number of associations a load creates.
pub fn size(accounts: &[LoadAccount], users: &[LoadUser]) -> usize {
    accounts.len() + users.iter().map(|u| u.rows.len()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str, k: NameKind) -> Name {
        Name::keep_case(s, k).unwrap()
    }

    fn sample() -> (Name, Vec<LoadAccount>, Vec<LoadUser>) {
        let mut set = AssocSet::default();
        set.tres.insert(TresLimit::GrpTresMins, [("cpu".to_string(), Some(60)), ("mem".into(), Some(2))].into());
        set.scalars.insert(Scalar::MaxWall, Some(90));
        set.fairshare = Some(Some(Fairshare::Shares(10)));
        set.qos = Some(QosList::Set([n("normal", NameKind::Qos), n("hi", NameKind::Qos)].into()));
        set.default_qos = Some(Some(n("normal", NameKind::Qos)));
        let accounts = vec![
            LoadAccount {
                name: n("proj", NameKind::Account),
                parent: n("root", NameKind::Account),
                description: "a b: c=d, e;f|g".into(),
                organization: "org".into(),
                set: AssocSet::default(),
            },
            LoadAccount {
                name: n("alloc", NameKind::Account),
                parent: n("proj", NameKind::Account),
                description: "alloc".into(),
                organization: "proj".into(),
                set,
            },
        ];
        let users = vec![LoadUser {
            name: n("u1", NameKind::User),
            default_account: n("alloc", NameKind::Account),
            rows: vec![
                LoadRow { account: n("proj", NameKind::Account), set: AssocSet::default() },
                LoadRow { account: n("alloc", NameKind::Account), set: AssocSet::default() },
            ],
        }];
        (n("c1", NameKind::Cluster), accounts, users)
    }

    #[test]
    fn write_writes_every_value_and_parse_reads_it_back() {
        let (c, a, u) = sample();
        assert!(problems(&c, &a, &u).is_empty());
        let text = write(&c, &a, &u);
        assert_eq!(
            text,
            "Cluster - 'c1'\nParent - 'root'\nAccount - 'proj':Description='a b: c=d, e;f|g':Organization='org'\n\
             Parent - 'proj'\nAccount - 'alloc':Description='alloc':Organization='proj':Fairshare=10:\
             MaxWallDurationPerJob=90:GrpTRESMins=cpu=60,mem=2:QOS='hi,normal':DefaultQOS='normal'\n\
             Parent - 'proj'\nUser - 'u1':DefaultAccount='alloc'\nParent - 'alloc'\nUser - 'u1':DefaultAccount='alloc'\n"
        );
        assert_eq!(parse(&text).unwrap(), (c, a, u));
    }

    #[test]
    fn values_load_cannot_carry_are_reported() {
        for bad in ["it's", "say \"hi\"", "a#b", "a\\b", "tab\there", "ü", ""] {
            assert!(!safe(bad), "{bad}");
            let (c, mut a, u) = sample();
            a[0].description = bad.into();
            assert!(!problems(&c, &a, &u).is_empty(), "{bad}");
        }
        for good in ["has space, and comma", "colon:inside", "eq=inside", "semi;x", "pipe|x", "a`b"] {
            assert!(safe(good), "{good}");
        }
        let (c, a, mut u) = sample();
        u[0].default_account = n("other", NameKind::Account);
        assert!(!problems(&c, &a, &u).is_empty());
    }

    /// Every name in the file passes the check, not only accounts and users: a QoS `q#1` in a
    /// `QOS=` or `DefaultQOS=` value, or a cluster `c#1`, would start a comment in the file.
    #[test]
    fn qos_default_qos_and_cluster_names_load_cannot_carry_are_reported() {
        let q = n("q#1", NameKind::Qos);
        let (c, mut a, u) = sample();
        a[1].set.qos = Some(QosList::Set([q.clone(), n("normal", NameKind::Qos)].into()));
        assert_eq!(problems(&c, &a, &u), ["QoS `q#1` cannot be written to sacctmgr's load file"]);
        let (c, mut a, u) = sample();
        a[1].set.qos = Some(QosList::Set([q.clone(), n("normal", NameKind::Qos)].into()));
        a[1].set.default_qos = Some(Some(q.clone()));
        let p = problems(&c, &a, &u);
        assert!(p.iter().any(|e| e.starts_with("DefaultQOS `q#1`")), "{p:?}");
        let (_, a, mut u) = sample();
        u[0].rows[0].set.default_qos = Some(Some(q));
        assert!(!problems(&n("c1", NameKind::Cluster), &a, &u).is_empty());
        let (_, a, u) = sample();
        assert!(!problems(&n("c#1", NameKind::Cluster), &a, &u).is_empty());
    }

    #[test]
    fn expand_adds_the_default_row_first() {
        let (c, a, u) = sample();
        let cmds = expand(&c, &a, &u);
        assert_eq!(cmds.len(), 4);
        assert!(matches!(&cmds[2], Command::AddUser { account, .. } if account.as_str() == "alloc"));
        assert!(matches!(&cmds[3], Command::AddUser { account, .. } if account.as_str() == "proj"));
    }
}
