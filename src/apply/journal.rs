//! The apply journal: JSON Lines, one entry per step attempt, flushed to disk before the next
//! step runs, so a crash or kill leaves an accurate record. Never holds secrets: it records
//! sacctmgr argv and output tails only.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Entry<'a> {
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

    /// Append one entry and flush it to disk.
    pub fn write(&mut self, e: &Entry<'_>) -> std::io::Result<()> {
        let mut line = serde_json::to_string(e).map_err(std::io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()?;
        self.file.sync_data()
    }

    /// A free-form event line (start, verify result).
    pub fn event(&mut self, value: &serde_json::Value) -> std::io::Result<()> {
        let mut line = serde_json::to_string(value).map_err(std::io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()?;
        self.file.sync_data()
    }
}
