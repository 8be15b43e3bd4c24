//! The fixed list of sacctmgr reads that define a snapshot, and parsing of `sacctmgr -V`.
//!
//! Pure data: this module does not spawn sacctmgr, read files or print. A transport
//! (`transport::Transport::read`) takes a [`Read`]; sacctmgr's own prepends the program name
//! (`sacctmgr`) to [`Read::args`]. Reads never take `-i`.

/// One read: the file its raw stdout is stored in, and the arguments that produce it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// File name inside a snapshot directory (`assocs.txt`).
    pub file: &'static str,
    /// Arguments after the program name.
    pub args: &'static [&'static str],
    /// What the read is for, for messages.
    pub what: &'static str,
    /// Taken once per cluster (`cluster=NAME` appended), not once for all: sacctmgr's cost per
    /// call grows much faster than its output (docs/performance.md, "Per-cluster reads").
    pub per_cluster: bool,
}

impl Read {
    /// The command as a user would type it: `sacctmgr -n -P show ...`.
    pub fn command_line(&self) -> String {
        let mut s = String::from("sacctmgr");
        for a in self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }

    /// The full argv, program first.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once("sacctmgr").chain(self.args.iter().copied()).map(String::from).collect()
    }

    /// The arguments after the program name for one call: [`Read::args`], then `cluster=NAME`
    /// for a per-cluster read (a cluster name from the clusters read: a valid name, one word),
    /// or `user=A,B` for [`USERS_SEEN`] (names that pass [`filterable_user`]).
    pub fn args_for(&self, filter: Filter<'_>) -> Vec<String> {
        let mut v: Vec<String> = self.args.iter().map(|s| s.to_string()).collect();
        match filter {
            Filter::None => {}
            Filter::Cluster(c) => v.push(format!("cluster={c}")),
            Filter::Users(users) => v.push(format!("user={}", users.join(","))),
        }
        v
    }
}

/// What one call of a read is limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter<'a> {
    /// Nothing: every cluster.
    None,
    /// One cluster (`cluster=NAME`): a [`Read::per_cluster`] read.
    Cluster(&'a str),
    /// The associations of these users, on every cluster (`user=A,B`): [`USERS_SEEN`] only.
    Users(&'a [String]),
}

impl<'a> Filter<'a> {
    /// The cluster of a per-cluster call.
    pub fn cluster(self) -> Option<&'a str> {
        match self {
            Filter::Cluster(c) => Some(c),
            _ => None,
        }
    }
}

/// The clusters where some users have associations: one row per association of the users named
/// by `user=A,B` (appended per call), on every cluster. Not part of a snapshot: a plan of some
/// clusters asks it of the users it would otherwise ask every cluster about (docs/decisions.md,
/// "Reads scoped to the plan's clusters"). Checked on 22.05.8: the filter is an exact match
/// (no wildcard), and only user associations come back.
pub const USERS_SEEN: Read = Read {
    file: "users-seen.txt",
    args: &["-n", "-P", "show", "assoc", "format=Cluster,User"],
    what: "the clusters holding associations of some users",
    per_cluster: false,
};

/// Whether `name` can be asked of [`USERS_SEEN`] as it is stored: lower-case ASCII letters,
/// digits and `_ . - @` only. sacctmgr lower-cases a filter value (and MariaDB compares names
/// ignoring case), splits it on commas, turns quotes into backquotes and expands `x[1-3]` as a
/// host list, so any other name would be asked as something else; those are not asked.
pub fn filterable_user(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-' | b'@'))
}

pub const CLUSTERS: &str = "clusters.txt";
pub const ASSOCS: &str = "assocs.txt";
pub const DEFAULTS: &str = "defaults.txt";
pub const ACCOUNTS_DESCR: &str = "accounts-descr.txt";
pub const ACCOUNTS_ORG: &str = "accounts-org.txt";
pub const QOS: &str = "qos.txt";

/// The reads of a snapshot, in the order they are taken.
pub const READS: &[Read] = &[
    Read {
        file: CLUSTERS,
        args: &["-n", "-P", "show", "cluster", "format=Cluster"],
        what: "cluster names",
        per_cluster: false,
    },
    Read {
        file: ASSOCS,
        args: &[
            "-n",
            "-P",
            "show",
            "assoc",
            "wopl",
            "withrawqos",
            "format=Cluster,Account,User,Partition,ParentName,Share,GrpJobs,GrpSubmitJobs,GrpTRES,GrpTRESMins,GrpWall,MaxJobs,MaxSubmitJobs,MaxTRES,MaxTRESMins,MaxWall,QOS,DefaultQOS",
        ],
        what: "associations with the values set on each row (no inheritance, raw QoS)",
        per_cluster: true,
    },
    Read {
        file: DEFAULTS,
        args: &["-n", "-P", "show", "assoc", "onlydefaults", "format=Cluster,User,Account,Partition"],
        what: "each user's DefaultAccount per cluster (one row per association row marked default)",
        per_cluster: true,
    },
    Read {
        file: ACCOUNTS_DESCR,
        args: &["-n", "-P", "show", "account", "format=Account,Description"],
        what: "account descriptions",
        per_cluster: false,
    },
    Read {
        file: ACCOUNTS_ORG,
        args: &["-n", "-P", "show", "account", "format=Account,Organization"],
        what: "account organizations",
        per_cluster: false,
    },
    Read {
        file: QOS,
        args: &["-n", "-P", "show", "qos", "format=Name,Flags,GrpTRESMins,GrpTRES,GrpSubmitJobs,MaxWall,Description"],
        what: "QoS objects",
        per_cluster: false,
    },
];

/// The read that produces `file`, if any.
pub fn read_for(file: &str) -> Option<&'static Read> {
    READS.iter().find(|r| r.file == file)
}

/// The read that prints the Slurm version (`slurm-wlm 22.05.8`, `slurm 24.11.5`). Not part of
/// a snapshot's files: its version goes into the manifest.
pub const VERSION: Read = Read { file: "version.txt", args: &["-V"], what: "the Slurm version", per_cluster: false };

/// The version from `sacctmgr -V` output: the last word of the first non-empty line, if it
/// starts with a digit.
pub fn parse_version(stdout: &str) -> Option<String> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let word = line.split_whitespace().last()?;
    word.starts_with(|c: char| c.is_ascii_digit()).then(|| word.to_string())
}

/// The keywords of a read's `format=` argument, in order.
pub fn format_columns(read: &Read) -> Vec<&'static str> {
    read.args.iter().find_map(|a| a.strip_prefix("format=")).map(|f| f.split(',').collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_last_word() {
        assert_eq!(parse_version("slurm-wlm 22.05.8\n").as_deref(), Some("22.05.8"));
        assert_eq!(parse_version("slurm 24.11.5").as_deref(), Some("24.11.5"));
        assert_eq!(parse_version("\n  slurm 24.11.5  \n"), Some("24.11.5".into()));
        assert_eq!(parse_version(""), None);
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn reads_are_unique_and_never_interactive() {
        let mut files: Vec<_> = READS.iter().map(|r| r.file).collect();
        files.sort();
        files.dedup();
        assert_eq!(files.len(), 6);
        for r in READS {
            assert_eq!(&r.args[..2], &["-n", "-P"], "{}", r.file);
            assert!(!r.args.contains(&"-i"));
            assert!(!format_columns(r).is_empty());
        }
        assert_eq!(read_for(ASSOCS).unwrap().argv()[0], "sacctmgr");
        assert!(read_for(DEFAULTS).unwrap().command_line().starts_with("sacctmgr -n -P show assoc onlydefaults"));
        // only the two association reads are taken per cluster
        let per: Vec<_> = READS.iter().filter(|r| r.per_cluster).map(|r| r.file).collect();
        assert_eq!(per, [ASSOCS, DEFAULTS]);
        assert_eq!(read_for(ASSOCS).unwrap().args_for(Filter::Cluster("big")).last().unwrap(), "cluster=big");
        assert_eq!(read_for(QOS).unwrap().args_for(Filter::None), read_for(QOS).unwrap().args);
        let users = ["a_1".to_string(), "b.c@d".to_string()];
        assert_eq!(USERS_SEEN.args_for(Filter::Users(&users)).last().unwrap(), "user=a_1,b.c@d");
    }

    #[test]
    fn only_names_sacctmgr_takes_as_they_are_are_filtered_on() {
        for ok in ["alice", "a_b", "x.y-z@site", "u0"] {
            assert!(filterable_user(ok), "{ok}");
        }
        for bad in ["", "Bob", "a,b", "a'b", "a\"b", "n[1-3]", "a b", "é"] {
            assert!(!filterable_user(bad), "{bad}");
        }
    }
}
