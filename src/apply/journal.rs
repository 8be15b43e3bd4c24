//! The apply journal: JSON Lines. Each step gets a `started` entry, written and synced to disk
//! before its command runs, and a `finished` entry after it, so a crash or `kill -9` leaves a
//! record that names the step that was running. Never holds secrets: it records sacctmgr argv
//! and output tails only.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
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
    pub fn create(path: &Path) -> std::io::Result<Journal> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
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

/// Where the journal at `path` stops; `None` when it cannot be read.
pub fn last_step(path: &Path) -> Option<LastStep> {
    let file = File::open(path).ok()?;
    let mut last = LastStep::After { step: 0, of: 0 };
    for line in std::io::BufReader::new(file).lines() {
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
}
