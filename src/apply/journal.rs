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

/// The step a journal shows started and never finished: its number, the plan's length and its
/// argv. `None` when every started step finished (or the journal cannot be read).
pub fn unfinished(path: &Path) -> Option<(usize, usize, Vec<String>)> {
    let file = File::open(path).ok()?;
    let mut open: Option<(usize, usize, Vec<String>)> = None;
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        let step = v.get("step").and_then(|s| s.as_u64()).map(|s| s as usize);
        match (v.get("event").and_then(|e| e.as_str()), step) {
            (Some("started"), Some(step)) => {
                let of = v.get("of").and_then(|s| s.as_u64()).unwrap_or(0) as usize;
                let argv = v
                    .get("argv")
                    .and_then(|a| a.as_array())
                    .map(|a| a.iter().filter_map(|w| w.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                open = Some((step, of, argv));
            }
            (Some("finished"), Some(step)) if open.as_ref().is_some_and(|o| o.0 == step) => open = None,
            _ => {}
        }
    }
    open
}
