//! The one process spawn: run sacctmgr with an argv (never a local shell), stdin closed (or
//! fed with a load's flat file, [`Runner::run_stdin`]: no file is written anywhere), a
//! timeout, and its output either streamed (reads: [`Runner::stream`], no size limit) or captured
//! with a size cap (writes: [`Runner::run`], whose output is kept in journals and messages).
//!
//! The [`Runner`] trait lets apply and the live reader be tested with fakes; [`ProcessRunner`]
//! is the real thing. How sacctmgr is reached is a [`Transport`]: locally, with an optional
//! argv-preserving prefix (`kubectl exec -i -n slurm POD --`, `sudo -u slurm`) prepended word by
//! word; or over ssh, where the remote shell parses the command line, so every word is quoted
//! for a POSIX shell ([`sh_quote`]). sacctmgr runs in a process group of its own: a timeout
//! kills the whole group, and whatever the command left behind is killed when it exits. This
//! module does not interpret sacctmgr's output (see `outcome`) and prints nothing.

pub use super::quote::sh_quote;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command as Proc, Stdio};
use std::time::{Duration, Instant};

/// What one run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Exit code; `None` when killed by a signal or by our timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub duration: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("cannot run `{program}`: {reason}")]
    Spawn { program: String, reason: String },
}

/// Shared by the concurrent live reads (`Sync`).
pub trait Runner: Sync {
    /// Run sacctmgr with `args` (without the program name); stdout and stderr are kept up to a
    /// cap each (the output is stored in journals and messages).
    fn run(&self, args: &[String]) -> Result<Output, RunError>;
    /// [`Runner::run`] with `stdin` written to sacctmgr's standard input (then closed): how a
    /// `load file=/dev/stdin` gets its file, locally, through a prefix or over ssh alike.
    fn run_stdin(&self, args: &[String], stdin: &[u8]) -> Result<Output, RunError>;
    /// Run sacctmgr with `args`, handing stdout to `sink` in pieces as it arrives, whatever its
    /// size (a read of a million associations prints about a hundred megabytes); `Output::stdout` is then empty and
    /// stderr is kept up to the cap.
    fn stream(&self, args: &[String], sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError>;
    /// The full argv that `run(args)` executes (for journals and messages).
    fn describe(&self, args: &[String]) -> Vec<String>;
}

/// How the sacctmgr command reaches the machine that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
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
    /// Words before the program (on the remote side with [`Transport::Ssh`]).
    pub prefix: Vec<String>,
    pub transport: Transport,
    pub timeout: Duration,
    /// Bytes kept of each captured stream (the rest is dropped, with a marker); streamed stdout
    /// has no limit.
    pub cap: usize,
}

impl ProcessRunner {
    pub fn new(program: PathBuf, prefix: Vec<String>, timeout: Duration) -> ProcessRunner {
        ProcessRunner { program, prefix, transport: Transport::Local, timeout, cap: 1 << 20 }
    }

    /// The same runner, reaching sacctmgr with `transport`.
    pub fn with_transport(mut self, transport: Transport) -> ProcessRunner {
        self.transport = transport;
        self
    }
}

/// Whether the child `pid` has exited, leaving it unreaped.
fn exited(pid: u32) -> bool {
    let pid: libc::id_t = pid;
    // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes only into `info`; WNOWAIT leaves the child to `Child::wait`.
    let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    // SAFETY: reading si_pid of a siginfo filled by waitid (0 when no child has exited).
    r != 0 || unsafe { info.si_pid() } != 0
}

/// Kill every process of the group `pgid` (sacctmgr's own group; see [`ProcessRunner::run`]).
fn kill_group(pgid: u32) {
    if let Ok(pgid) = libc::pid_t::try_from(pgid)
        && pgid > 1
    {
        // SAFETY: killpg only sends a signal; the group is the one created for this child.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// The first `cap` bytes of a stream, and how many were dropped after them.
struct Capped {
    kept: Vec<u8>,
    cap: usize,
    dropped: usize,
}

impl Capped {
    fn new(cap: usize) -> Capped {
        Capped { kept: Vec::new(), cap, dropped: 0 }
    }

    fn push(&mut self, b: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&b[..b.len().min(room)]);
        self.dropped += b.len().saturating_sub(room);
    }

    fn finish(self) -> String {
        let mut s = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[slurmplan: {} more bytes dropped]\n", self.dropped));
        }
        s
    }
}

fn drain(mut r: impl Read + Send + 'static, cap: usize) -> std::thread::JoinHandle<String> {
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

impl Runner for ProcessRunner {
    fn describe(&self, args: &[String]) -> Vec<String> {
        let mut v = self.prefix.clone();
        v.push(self.program.display().to_string());
        v.extend(args.iter().cloned());
        match &self.transport {
            Transport::Local => v,
            Transport::Ssh { dest } => {
                let remote = v.iter().map(|w| sh_quote(w)).collect::<Vec<_>>().join(" ");
                vec!["ssh".into(), "-o".into(), "BatchMode=yes".into(), dest.clone(), "--".into(), remote]
            }
        }
    }

    fn run(&self, args: &[String]) -> Result<Output, RunError> {
        self.captured(args, None)
    }

    fn run_stdin(&self, args: &[String], stdin: &[u8]) -> Result<Output, RunError> {
        self.captured(args, Some(stdin.to_vec()))
    }

    fn stream(&self, args: &[String], sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
        self.spawn(args, None, sink)
    }
}

impl ProcessRunner {
    /// Run with stdout kept up to the cap (writes: the output goes to journals and messages).
    fn captured(&self, args: &[String], input: Option<Vec<u8>>) -> Result<Output, RunError> {
        let mut kept = Capped::new(self.cap);
        let mut out = self.spawn(args, input, &mut |b| kept.push(b))?;
        out.stdout = kept.finish();
        Ok(out)
    }

    fn spawn(&self, args: &[String], input: Option<Vec<u8>>, sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
        let argv = self.describe(args);
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
        .with_transport(Transport::Ssh { dest: "head1".into() });
        let v = r.describe(&["-i".into(), "description=a b;c".into()]);
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
        let t0 = Instant::now();
        let o = r.run(&[]).unwrap();
        assert!(o.timed_out);
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
        let o = r.run(&[]).unwrap();
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
}
