//! One apply per cluster at a time: an exclusive OS file lock (flock) per cluster, with the
//! holder's PID written into the file for messages. The lock is released when the process
//! exits, even if it is killed. Only this module touches lock files.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open lock file `{path}`: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("another slurmplan apply (PID {holder}) holds the lock `{path}`; waited {waited:?}")]
    Busy { path: PathBuf, holder: String, waited: Duration },
}

/// Held locks; dropping releases them.
#[derive(Debug)]
pub struct Locks {
    _files: Vec<File>,
    pub paths: Vec<PathBuf>,
}

/// Lock every cluster (sorted, so two applies never deadlock), waiting up to `timeout`.
pub fn acquire(dir: &Path, clusters: &[String], timeout: Duration) -> Result<Locks, LockError> {
    let mut names: Vec<&String> = clusters.iter().collect();
    names.sort();
    names.dedup();
    let mut files = Vec::new();
    let mut paths = Vec::new();
    let start = Instant::now();
    for c in names {
        let path = dir.join(format!("slurmplan-{c}.lock"));
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| LockError::Io { path: path.clone(), source })?;
        loop {
            match f.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if start.elapsed() >= timeout {
                        let mut holder = String::new();
                        let _ = f.seek(SeekFrom::Start(0));
                        let _ = f.read_to_string(&mut holder);
                        let holder = holder.trim().to_string();
                        return Err(LockError::Busy {
                            path,
                            holder: if holder.is_empty() { "unknown".into() } else { holder },
                            waited: start.elapsed(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(std::fs::TryLockError::Error(source)) => return Err(LockError::Io { path, source }),
            }
        }
        let _ = f.set_len(0);
        let _ = f.seek(SeekFrom::Start(0));
        let _ = writeln!(f, "{}", std::process::id());
        let _ = f.flush();
        files.push(f);
        paths.push(path);
    }
    Ok(Locks { _files: files, paths })
}
