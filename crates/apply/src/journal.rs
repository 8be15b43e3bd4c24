//! The apply journal: JSON Lines. Each step gets a `started` entry, written and synced to disk
//! before its command runs, and a `finished` entry after it, so a crash or `kill -9` leaves a
//! record that names the step that was running. Never holds secrets: it records sacctmgr argv
//! and output tails only. A journal is opened without following symlinks, created 0600, and
//! written only if it is a regular file of this user with one link; a journal named by a lock
//! file is read the same way, bounded ([`MAX_JOURNAL_BYTES`]).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Started<'a> {
    pub event: &'static str,
    pub step: usize,
    pub of: usize,
    pub argv: &'a [String],
    /// What sacctmgr got on stdin (a load's flat file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<&'a str>,
    pub start: String,
}

#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    pub event: &'static str,
    pub step: usize,
    pub of: usize,
    pub argv: &'a [String],
    pub start: String,
    pub end: String,
    pub duration_ms: u128,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub result: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    pub stdout_tail: String,
    pub stderr_tail: String,
}

pub struct Journal {
    file: File,
    pub path: PathBuf,
}

impl Journal {
    /// Open `path` to append to (created 0600): never through a symlink, and only a regular
    /// file of this user with one link.
    pub fn create(path: &Path) -> std::io::Result<Journal> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) { std::io::Error::other("it is a symbolic link") } else { e }
            })?;
        if let Some(reason) = super::lock::not_own_file(&file) {
            return Err(std::io::Error::other(reason));
        }
        Ok(Journal { file, path: path.to_path_buf() })
    }

    fn line(&mut self, value: &impl Serialize) -> std::io::Result<()> {
        let mut line = serde_json::to_string(value).map_err(std::io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()?;
        self.file.sync_data()
    }

    /// Record that a step is about to run (synced before it runs).
    pub fn started(&mut self, e: &Started<'_>) -> std::io::Result<()> {
        self.line(e)
    }

    /// Append one finished step and sync it.
    pub fn write(&mut self, e: &Entry<'_>) -> std::io::Result<()> {
        self.line(e)
    }

    /// A free-form event line (start, stop, verify result).
    pub fn event(&mut self, value: &serde_json::Value) -> std::io::Result<()> {
        self.line(value)
    }
}

/// Where a journal of an apply that did not end cleanly stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastStep {
    /// Step `step` of `of` started and never finished: it was running.
    Running { step: usize, of: usize, argv: Vec<String> },
    /// The last entry is step `step` of `of` finished (or none ran: `step` 0).
    After { step: usize, of: usize },
}

/// The most of a journal [`last_step`] reads (the input bound of every file slurmplan reads;
/// a load step's entry holds its whole flat file).
pub const MAX_JOURNAL_BYTES: u64 = slurmplan_input::MAX_BYTES;

/// Where the journal at `path` stops; `None` when it cannot be read. `path` comes from a lock
/// file: only a regular file is read (opened without following a symlink or blocking), and at
/// most [`MAX_JOURNAL_BYTES`] of it.
pub fn last_step(path: &Path) -> Option<LastStep> {
    let file = slurmplan_input::open_regular_nofollow(path).ok()?;
    let mut last = LastStep::After { step: 0, of: 0 };
    for line in std::io::BufReader::new(file.take(MAX_JOURNAL_BYTES)).lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        let num = |k: &str| v.get(k).and_then(|s| s.as_u64()).map(|s| s as usize);
        let (Some(step), of) = (num("step"), num("of").unwrap_or(0)) else { continue };
        match v.get("event").and_then(|e| e.as_str()) {
            Some("started") => {
                let argv = v
                    .get("argv")
                    .and_then(|a| a.as_array())
                    .map(|a| a.iter().filter_map(|w| w.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                last = LastStep::Running { step, of, argv };
            }
            Some("finished") => last = LastStep::After { step, of },
            _ => {}
        }
    }
    Some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_step_is_the_last_started_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let mut j = Journal::create(&path).unwrap();
        let argv = vec!["sacctmgr".to_string(), "-i".into()];
        let started = |n| Started { event: "started", step: n, of: 3, argv: &argv, stdin: None, start: "t".into() };
        let finished = |n| Entry {
            event: "finished",
            step: n,
            of: 3,
            argv: &argv,
            start: "t".into(),
            end: "t".into(),
            duration_ms: 0,
            exit_code: Some(0),
            timed_out: false,
            result: "ok",
            reason: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
        };
        j.started(&started(1)).unwrap();
        j.write(&finished(1)).unwrap();
        assert_eq!(last_step(&path), Some(LastStep::After { step: 1, of: 3 }));
        j.started(&started(2)).unwrap();
        assert_eq!(last_step(&path), Some(LastStep::Running { step: 2, of: 3, argv: argv.clone() }));
        assert_eq!(last_step(&dir.path().join("none")), None);
    }

    /// A journal path from a lock file is not followed into a device, a FIFO or a symlink:
    /// each gives `None` at once (before: `/dev/zero` read until memory ran out, a FIFO hung).
    #[test]
    fn a_journal_that_is_not_a_regular_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let t = std::time::Instant::now();
        for p in [Path::new("/dev/zero"), &fifo, &link, dir.path()] {
            assert_eq!(last_step(p), None, "{p:?}");
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
    }

    /// Creating a journal never writes through a symlink or a hard link, and makes it 0600.
    #[test]
    fn a_journal_is_created_0600_and_not_through_links() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious");
        std::fs::write(&precious, "keep me").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        assert!(Journal::create(&link).err().unwrap().to_string().contains("symbolic link"));
        let hard = dir.path().join("hard.jsonl");
        std::fs::hard_link(&precious, &hard).unwrap();
        assert!(Journal::create(&hard).err().unwrap().to_string().contains("hard links"));
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
        let path = dir.path().join("j.jsonl");
        Journal::create(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
