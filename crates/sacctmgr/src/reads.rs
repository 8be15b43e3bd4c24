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
    /// for a per-cluster read (a cluster name from the clusters read: a valid name, one word).
    pub fn args_for(&self, cluster: Option<&str>) -> Vec<String> {
        let mut v: Vec<String> = self.args.iter().map(|s| s.to_string()).collect();
        if let Some(c) = cluster {
            v.push(format!("cluster={c}"));
        }
        v
    }
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
        assert_eq!(read_for(ASSOCS).unwrap().args_for(Some("big")).last().unwrap(), "cluster=big");
        assert_eq!(read_for(QOS).unwrap().args_for(None), read_for(QOS).unwrap().args);
    }
}
