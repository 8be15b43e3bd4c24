//! Which applies may run at once: an exclusive OS file lock (flock) per cluster a plan changes,
//! plus one global lock when it touches what all clusters share (QoS objects, account records).
//! Locks are taken in one fixed order (global first, then clusters sorted), so two applies never
//! deadlock. A held lock file says who holds it (PID) and where that apply's journal is; a clean
//! end empties it, so a lock file that is free yet not empty was left by an apply that was killed
//! (`kill -9`, a crash, a reboot): [`Locks::previous`] and [`interrupted`] report it.
//!
//! The lock descriptors are inherited by the commands an apply starts: a local sacctmgr (or an
//! argv wrapper such as kubectl) that outlives a killed slurmplan holds the lock until it ends.
//! ssh and sudo close inherited descriptors, so with them the lock ends with slurmplan.
//! Only this module touches lock files.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::plan::Plan;
use crate::sacctmgr::command::Command;

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open lock file `{path}`: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("another slurmplan apply (PID {holder}) holds the lock `{path}`; waited {waited:?}")]
    Busy { path: PathBuf, holder: String, waited: Duration },
}

/// What a plan must lock.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scope {
    /// QoS objects and account records are shared by every cluster.
    pub global: bool,
    /// Sorted, without repeats.
    pub clusters: Vec<String>,
}

/// The locks a plan needs: its clusters, and the global lock if any step creates, changes or
/// deletes a QoS, or creates, deletes or changes the record of an account.
pub fn scope(plan: &Plan) -> Scope {
    let mut s = Scope::default();
    for step in &plan.steps {
        let c = &step.command;
        if let Some(cl) = c.cluster() {
            s.clusters.push(cl.to_string());
        }
        s.global |= matches!(
            c,
            Command::AddQos { .. }
                | Command::ModifyQos { .. }
                | Command::DeleteQos { .. }
                | Command::AddAccount { .. }
                | Command::DeleteAccount { .. }
                | Command::ModifyAccountRecord { .. }
        );
    }
    s.clusters.sort();
    s.clusters.dedup();
    s
}

/// The global lock's file name (cluster lock files are `slurmplan-CLUSTER.lock`).
const GLOBAL: &str = "slurmplan.lock";

/// The lock files of `scope`, in the order they are taken.
pub fn files(dir: &Path, scope: &Scope) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if scope.global || scope.clusters.is_empty() {
        v.push(dir.join(GLOBAL));
    }
    v.extend(scope.clusters.iter().map(|c| dir.join(format!("slurmplan-{c}.lock"))));
    v
}

/// An apply that ended without releasing its locks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    pub lock: PathBuf,
    pub pid: String,
    pub journal: PathBuf,
}

/// Held locks; dropping releases them (as a killed process would); [`Locks::release`] also
/// records a clean end.
#[derive(Debug)]
pub struct Locks {
    files: Vec<File>,
    pub paths: Vec<PathBuf>,
    /// Applies that held these locks before and did not end cleanly.
    pub previous: Vec<Previous>,
}

fn holder(text: &str, lock: &Path) -> Option<Previous> {
    let mut lines = text.lines();
    let pid = lines.next()?.trim().to_string();
    let journal = lines.find_map(|l| l.strip_prefix("journal "))?;
    Some(Previous { lock: lock.to_path_buf(), pid, journal: PathBuf::from(journal) })
}

fn rewrite(f: &mut File, text: &str) {
    let _ = f.set_len(0);
    let _ = f.seek(SeekFrom::Start(0));
    let _ = f.write_all(text.as_bytes());
    let _ = f.flush();
}

impl Locks {
    /// Say in each lock file which journal this apply writes (what the next one reports if
    /// this one is killed).
    pub fn record(&mut self, journal: &Path) {
        let text = format!("{}\njournal {}\n", std::process::id(), journal.display());
        for f in &mut self.files {
            rewrite(f, &text);
            let _ = f.sync_data();
        }
    }

    /// A clean end: empty the lock files, then release them.
    pub fn release(mut self) {
        for f in &mut self.files {
            rewrite(f, "");
        }
    }
}

/// Lock everything in `scope` in the fixed order, waiting up to `timeout` in all.
pub fn acquire(dir: &Path, scope: &Scope, timeout: Duration) -> Result<Locks, LockError> {
    let mut held = Locks { files: Vec::new(), paths: Vec::new(), previous: Vec::new() };
    let start = Instant::now();
    for path in files(dir, scope) {
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
                        let holder = holder.lines().next().unwrap_or("").trim().to_string();
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
        let mut before = String::new();
        let _ = f.seek(SeekFrom::Start(0));
        let _ = f.read_to_string(&mut before);
        if let Some(p) = holder(&before, &path) {
            held.previous.push(p);
        }
        rewrite(&mut f, &format!("{}\n", std::process::id()));
        inherit(&f);
        held.files.push(f);
        held.paths.push(path);
    }
    Ok(held)
}

/// Let the commands this process starts inherit the lock (see the module comment).
fn inherit(f: &File) {
    let fd = f.as_raw_fd();
    // SAFETY: fcntl on a descriptor this File owns; only the close-on-exec flag changes.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
        }
    }
}

/// Applies that were killed while holding a lock in `dir` and that no apply has taken over
/// since: lock files that are free and still name a journal. Reads only; a lock held right now
/// belongs to a running apply and is skipped.
pub fn interrupted(dir: &Path) -> Vec<Previous> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("slurmplan") && name.ends_with(".lock")) {
            continue;
        }
        let path = e.path();
        let Ok(mut f) = File::open(&path) else { continue };
        if f.try_lock_shared().is_err() {
            continue;
        }
        let mut text = String::new();
        let _ = (&mut f).take(4096).read_to_string(&mut text);
        let _ = f.unlock();
        if let Some(p) = holder(&text, &path) {
            found.push(p);
        }
    }
    found.sort_by(|a, b| a.lock.cmp(&b.lock));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(commands: Vec<Command>) -> Plan {
        let mut p =
            crate::plan::make_plan(&crate::model::State::default(), &crate::model::State::default(), "x").unwrap();
        p.steps = commands
            .into_iter()
            .enumerate()
            .map(|(i, c)| crate::plan::Step {
                number: i + 1,
                phase: crate::plan::Phase::Limits,
                argv: c.argv(),
                command: c,
                causes: vec![],
                note: None,
            })
            .collect();
        p
    }

    fn n(s: &str) -> crate::model::Name {
        crate::model::Name::keep_case(s, crate::model::NameKind::Account).unwrap()
    }

    /// A plan that touches a QoS takes the global lock, before its clusters'; one that only
    /// moves users on a cluster takes that cluster's lock alone.
    #[test]
    fn shared_objects_take_the_global_lock_first() {
        let dir = tempfile::tempdir().unwrap();
        let users = plan_of(vec![Command::SetDefaultAccount { cluster: n("b"), users: vec![n("u")], account: n("a") }]);
        assert_eq!(files(dir.path(), &scope(&users)), [dir.path().join("slurmplan-b.lock")]);
        let qos = plan_of(vec![
            Command::SetDefaultAccount { cluster: n("b"), users: vec![n("u")], account: n("a") },
            Command::DeleteQos { names: vec![n("q")] },
        ]);
        assert_eq!(
            files(dir.path(), &scope(&qos)),
            [dir.path().join("slurmplan.lock"), dir.path().join("slurmplan-b.lock")]
        );
        // two applies on different clusters touching the same QoS exclude each other
        let other = plan_of(vec![Command::ModifyQos { names: vec![n("q")], set: Default::default() }]);
        let held = acquire(dir.path(), &scope(&qos), Duration::from_secs(1)).unwrap();
        assert!(matches!(acquire(dir.path(), &scope(&other), Duration::from_millis(200)), Err(LockError::Busy { .. })));
        held.release();
        acquire(dir.path(), &scope(&other), Duration::from_millis(200)).unwrap().release();
    }

    /// A lock left by a holder that did not release it names that holder's journal, until an
    /// apply takes it and ends cleanly.
    #[test]
    fn a_killed_holder_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let s = Scope { global: false, clusters: vec!["c".into()] };
        let mut held = acquire(dir.path(), &s, Duration::from_secs(1)).unwrap();
        assert!(held.previous.is_empty());
        held.record(Path::new("/j/one.jsonl"));
        assert!(interrupted(dir.path()).is_empty(), "a held lock is a running apply");
        drop(held); // what a kill does: released without the clean end
        let left = interrupted(dir.path());
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].journal, Path::new("/j/one.jsonl"));
        let held = acquire(dir.path(), &s, Duration::from_secs(1)).unwrap();
        assert_eq!(held.previous, left);
        held.release();
        assert!(interrupted(dir.path()).is_empty());
    }
}
