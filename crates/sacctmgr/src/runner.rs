//! The process transport: sacctmgr run with an argv (never a local shell), stdin closed (or
//! fed with a load's flat file: no file is written anywhere), a timeout, and its output either
//! streamed (reads, no size limit) or captured with a size cap (plan steps, whose output is
//! kept in journals and messages). [`ProcessRunner`] implements `transport::Transport`, the
//! seam the live reader and apply use; its own methods take sacctmgr's argv words.
//!
//! How sacctmgr is reached is a [`Route`]: locally, with an optional argv-preserving prefix
//! (`kubectl exec -i -n slurm POD --`, `sudo -u slurm`) prepended word by word; or over ssh,
//! where the remote shell parses the command line, so every word is quoted for a POSIX shell
//! ([`sh_quote`]). sacctmgr runs in a process group of its own: a timeout kills the whole
//! group, and whatever the command left behind is killed when it exits. This module does not
//! interpret sacctmgr's output (see `outcome`) and prints nothing.

pub use super::quote::sh_quote;
use super::reads::{Filter, Read};
use super::transport::{CAP, Capped, Output, RunError, Transport};
use std::io::Read as _;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command as Proc, Stdio};
use std::time::{Duration, Instant};

/// How the sacctmgr command reaches the machine that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Run here: `prefix... sacctmgr args...`, one argv, no shell.
    Local,
    /// `ssh DEST -- 'cmd'`: OpenSSH joins the words after the host with spaces and the remote
    /// login shell parses the result, so the command is sent as POSIX-shell-quoted words.
    Ssh { dest: String },
}

/// Runs a real process.
#[derive(Debug, Clone)]
pub struct ProcessRunner {
    pub program: PathBuf,
    /// Words before the program (on the remote side with [`Route::Ssh`]).
    pub prefix: Vec<String>,
    pub route: Route,
    pub timeout: Duration,
    /// Bytes kept of each captured stream (the rest is dropped, with a marker); streamed stdout
    /// has no limit.
    pub cap: usize,
}

impl ProcessRunner {
    pub fn new(program: PathBuf, prefix: Vec<String>, timeout: Duration) -> ProcessRunner {
        ProcessRunner { program, prefix, route: Route::Local, timeout, cap: CAP }
    }

    /// The same runner, reaching sacctmgr by `route`.
    pub fn with_route(mut self, route: Route) -> ProcessRunner {
        self.route = route;
        self
    }

    /// The full argv that running sacctmgr with `args` (without the program name) executes.
    pub fn argv(&self, args: &[String]) -> Vec<String> {
        let mut v = self.prefix.clone();
        v.push(self.program.display().to_string());
        v.extend(args.iter().cloned());
        match &self.route {
            Route::Local => v,
            Route::Ssh { dest } => {
                let remote = v.iter().map(|w| sh_quote(w)).collect::<Vec<_>>().join(" ");
                vec!["ssh".into(), "-o".into(), "BatchMode=yes".into(), dest.clone(), "--".into(), remote]
            }
        }
    }

    /// Run sacctmgr with `args`, `stdin` (if any) written to its standard input; stdout and
    /// stderr kept up to the cap each.
    pub fn capture(&self, args: &[String], stdin: Option<&[u8]>) -> Result<Output, RunError> {
        let mut kept = Capped::new(self.cap);
        let mut out = self.spawn(args, stdin.map(<[u8]>::to_vec), &mut |b| kept.push(b))?;
        out.stdout = kept.finish();
        Ok(out)
    }

    /// Run sacctmgr with `args`, handing stdout to `sink` in pieces as it arrives, whatever its
    /// size (a read of a million associations prints about a hundred megabytes);
    /// `Output::stdout` is then empty and stderr is kept up to the cap.
    pub fn stream(&self, args: &[String], sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
        self.spawn(args, None, sink)
    }
}

impl Transport for ProcessRunner {
    fn read(&self, read: &Read, filter: Filter<'_>, sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
        self.stream(&read.args_for(filter), sink)
    }

    fn run(&self, args: &[String], stdin: Option<&[u8]>) -> Result<Output, RunError> {
        self.capture(args, stdin)
    }

    fn describe(&self, args: &[String]) -> Vec<String> {
        self.argv(args)
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Whether the child `pid` has exited, leaving it unreaped.
fn exited(pid: u32) -> bool {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else { return true };
    // WNOWAIT leaves the child to `Child::wait`; an error (no such child) counts as exited.
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    !matches!(waitid(WaitId::Pid(pid), options), Ok(None))
}

/// Kill every process of the group `pgid` (sacctmgr's own group; see [`ProcessRunner::capture`]).
fn kill_group(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid)
        && pgid > 1
        && let Some(pgid) = rustix::process::Pid::from_raw(pgid)
    {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

fn drain(mut r: impl std::io::Read + Send + 'static, cap: usize) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Capped::new(cap);
        let mut buf = [0u8; 65536];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => kept.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        kept.finish()
    })
}

impl ProcessRunner {
    fn spawn(&self, args: &[String], input: Option<Vec<u8>>, sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
        let argv = self.argv(args);
        let start = Instant::now();
        let mut child = Proc::new(&argv[0])
            .args(&argv[1..])
            .process_group(0)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunError::Spawn {
                program: argv[0].clone(),
                reason: if e.kind() == std::io::ErrorKind::NotFound {
                    "not found (set --sacctmgr PATH or SLURMPLAN_SACCTMGR)".into()
                } else {
                    e.to_string()
                },
            })?;
        let mut stdout = child.stdout.take().expect("piped");
        let err = drain(child.stderr.take().expect("piped"), self.cap);
        // Written on a thread of its own, so a child that answers before it has read everything
        // cannot block this one; dropping the pipe closes sacctmgr's stdin.
        if let (Some(input), Some(mut pipe)) = (input, child.stdin.take()) {
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&input);
            });
        }
        // The child is waited for on its own thread while this one hands stdout to the sink. It
        // polls for the exit without reaping (WNOWAIT): while the exited child is not reaped its
        // PID, which is also its group's id, cannot be reused, so killing the group after it
        // exits reaches only what it left behind. On a timeout the kill ends the command; after
        // an exit, whatever it left running in its group (a wrapper's children holding the
        // pipes) ends with it, which closes the pipe and ends the loop below.
        let timeout = self.timeout;
        let waiter = std::thread::spawn(move || {
            let pid = child.id();
            let mut timed_out = false;
            loop {
                if exited(pid) {
                    break;
                }
                if start.elapsed() >= timeout {
                    timed_out = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            kill_group(pid);
            (child.wait().ok(), timed_out)
        });
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => sink(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let (status, timed_out) = waiter.join().unwrap_or((None, false));
        let stderr = err.join().unwrap_or_default();
        Ok(Output {
            code: if timed_out { None } else { status.and_then(|s| s.code()) },
            stdout: String::new(),
            stderr,
            timed_out,
            duration: start.elapsed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &std::path::Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn alive(pid: &str) -> bool {
        // a zombie waiting for its reaper is not running
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
            .unwrap_or(false)
    }

    /// Every byte of every word reaches the remote program, whatever the shell would make of it.
    #[test]
    fn sh_quote_delivers_every_byte_through_a_posix_shell() {
        let words = [
            "genome 2026;touch pwned",
            "$(touch pwned)",
            "`id`",
            "it's",
            "say \"hi\"",
            "two\nlines",
            "",
            "tab\there",
            "*",
            "a\\b",
            "~root",
            "'",
            "x=1,y=2",
            "-i",
        ];
        let line = words.iter().map(|w| sh_quote(w)).collect::<Vec<_>>().join(" ");
        let o = Proc::new("sh").arg("-c").arg(format!("printf '%s\\0' {line}")).output().unwrap();
        assert!(o.status.success());
        let got: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().split_terminator('\0').collect();
        assert_eq!(got, words);
    }

    /// Over ssh the remote command is one string of quoted words after `--`.
    #[test]
    fn ssh_transport_quotes_the_whole_remote_command() {
        let r = ProcessRunner::new(
            "/usr/bin/sacctmgr".into(),
            vec!["sudo".into(), "-u".into(), "slurm".into()],
            Duration::from_secs(1),
        )
        .with_route(Route::Ssh { dest: "head1".into() });
        let v = r.argv(&["-i".into(), "description=a b;c".into()]);
        assert_eq!(
            v,
            ["ssh", "-o", "BatchMode=yes", "head1", "--", "sudo -u slurm /usr/bin/sacctmgr -i 'description=a b;c'"]
        );
    }

    /// A wrapper whose child holds the pipes: the timeout kills the whole group and returns at
    /// once, and nothing is left running.
    #[test]
    fn timeout_kills_the_wrapper_and_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child.pid");
        let w = script(dir.path(), "wrapper", &format!("sleep 60 &\necho $! > {}\nwait", pidfile.display()));
        let r = ProcessRunner::new(w, vec![], Duration::from_millis(500));
        let t: &dyn Transport = &r;
        let t0 = Instant::now();
        let o = t.run(&[], None).unwrap();
        assert!(o.timed_out);
        assert_eq!(o.code, None);
        assert!(t0.elapsed() >= t.timeout(), "took {:?}", t0.elapsed());
        assert!(t0.elapsed() < Duration::from_secs(5), "took {:?}", t0.elapsed());
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let pid = pid.trim();
        let t = Instant::now();
        while alive(pid) && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(pid), "the wrapper's child {pid} is still running");
    }

    /// A command that exits leaving a child that holds its output: the run returns, and the
    /// child does not outlive it.
    #[test]
    fn a_child_left_behind_ends_with_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child.pid");
        let w = script(dir.path(), "wrapper", &format!("sleep 60 &\necho $! > {}\necho done", pidfile.display()));
        let r = ProcessRunner::new(w, vec![], Duration::from_secs(30));
        let t0 = Instant::now();
        let o = r.capture(&[], None).unwrap();
        assert!(!o.timed_out);
        assert_eq!(o.code, Some(0));
        assert_eq!(o.stdout, "done\n");
        assert!(t0.elapsed() < Duration::from_secs(10), "took {:?}", t0.elapsed());
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let t = Instant::now();
        while alive(pid.trim()) && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(pid.trim()));
    }

    /// Through the seam: a read gets exactly its `Read::args` (and `cluster=NAME` for one
    /// cluster's read) after the program (and the prefix before it), streamed; a step gets its args and its stdin; `describe` is the argv that ran.
    #[test]
    fn the_transport_runs_reads_and_steps_with_the_argv_it_describes() {
        let dir = tempfile::tempdir().unwrap();
        let prog = script(dir.path(), "fake", "printf '%s|' \"$0\" \"$@\"; echo; cat");
        let wrap = script(dir.path(), "wrap", "printf 'wrap|'; exec \"$@\"");
        let r = ProcessRunner::new(prog.clone(), vec![wrap.display().to_string()], Duration::from_secs(30));
        let t: &dyn Transport = &r;
        let read = &super::super::reads::READS[1];
        let mut streamed = Vec::new();
        let o = t.read(read, Filter::Cluster("big"), &mut |b| streamed.extend_from_slice(b)).unwrap();
        assert_eq!((o.code, o.stdout.as_str(), o.timed_out), (Some(0), "", false));
        let words: Vec<String> = read.args.iter().map(|s| s.to_string()).chain(["cluster=big".into()]).collect();
        let described = t.describe(&words);
        assert_eq!(described[..2], [wrap.display().to_string(), prog.display().to_string()]);
        assert_eq!(String::from_utf8(streamed).unwrap(), format!("wrap|{}|\n", described[1..].join("|")));

        let args = vec!["-i".to_string(), "load".into(), "file=/dev/stdin".into()];
        let o = t.run(&args, Some(b"Cluster - 'c1'\n")).unwrap();
        assert_eq!(o.code, Some(0));
        assert_eq!(o.stdout, format!("wrap|{}|\nCluster - 'c1'\n", t.describe(&args)[1..].join("|")));
        let o = t.run(&args, None).unwrap();
        assert_eq!(o.stdout, format!("wrap|{}|\n", t.describe(&args)[1..].join("|")), "stdin is closed without input");
        assert_eq!(t.timeout(), Duration::from_secs(30));
    }
}
