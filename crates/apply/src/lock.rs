//! Which applies may run at once: an exclusive OS file lock (flock) per cluster a plan changes,
//! plus one global lock when it touches what all clusters share (QoS objects, account records).
//! Locks are taken in one fixed order (global first, then clusters sorted), so two applies never
//! deadlock. A held lock file says who holds it (PID) and where that apply's journal is; a clean
//! end empties it, so a lock file that is free yet not empty was left by an apply that was killed
//! (`kill -9`, a crash, a reboot): [`Locks::previous`] and [`interrupted`] report it.
//!
//! The lock directory is one only the invoking user controls ([`LockDir`]: by default
//! `/run/slurmplan` for root, `$XDG_RUNTIME_DIR/slurmplan` otherwise, created 0700); lock files
//! are opened relative to its descriptor without following symlinks, created 0600, and must be
//! regular files of this user with one link. What a lock file says is untrusted data: read
//! bounded ([`LOCK_TEXT_MAX`]), the PID kept only if it is digits. Cluster names are validated
//! and encoded before they become file names, so no name leaves the directory.
//!
//! The lock descriptors are inherited by the commands an apply starts: a local sacctmgr (or an
//! argv wrapper such as kubectl) that outlives a killed slurmplan holds the lock until it ends.
//! ssh and sudo close inherited descriptors, so with them the lock ends with slurmplan.
//! Only this module touches lock files.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};

use slurmplan_model::{Name, NameError, NameKind};
use slurmplan_plan::Plan;
use slurmplan_sacctmgr::command::Command;

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open lock file `{path}`: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot open the lock directory `{path}`: {source}")]
    DirIo { path: PathBuf, source: std::io::Error },
    #[error("another slurmplan apply (PID {holder}) holds the lock `{path}`; waited {waited:?}")]
    Busy { path: PathBuf, holder: String, waited: Duration },
    /// The lock directory is not one only this user controls.
    #[error("refusing the lock directory `{path}`: {reason}")]
    UnsafeDir { path: PathBuf, reason: String, explicit: bool },
    /// A lock file that is not a regular file of this user with one link.
    #[error("refusing the lock file `{path}`: {reason}")]
    UnsafeFile { path: PathBuf, reason: String },
    /// No lock directory was given and there is no default for this user.
    #[error("no lock directory: {0}")]
    NoDir(String),
    /// A cluster name that cannot name a lock (checked before any path is built from it).
    #[error("cannot take the lock of a cluster: {0}")]
    Cluster(NameError),
}

/// The most a lock file may hold to be read (a PID and a journal path take far less).
pub const LOCK_TEXT_MAX: u64 = 4096;

/// The most lock files [`interrupted`] looks at (a lock directory holds one per cluster).
const MAX_LOCK_FILES: usize = 10_000;

/// The effective user id of this process.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Why `f` is not a file this process may write as its own (a lock file, a journal): it must be
/// a regular file owned by this user with one link (a hard link to another file has two).
pub(crate) fn not_own_file(f: &File) -> Option<String> {
    let m = match f.metadata() {
        Ok(m) => m,
        Err(e) => return Some(e.to_string()),
    };
    if !m.file_type().is_file() {
        return Some("it is not a regular file".into());
    }
    if m.uid() != euid() {
        return Some(format!("it is owned by uid {}, not by this user (uid {})", m.uid(), euid()));
    }
    if m.nlink() != 1 {
        return Some(format!("it has {} hard links (it may be a link to another file)", m.nlink()));
    }
    None
}

/// What a plan must lock.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scope {
    /// QoS objects and account records are shared by every cluster.
    pub global: bool,
    /// Sorted, without repeats.
    pub clusters: Vec<String>,
}

/// Whether `c` changes what every cluster shares: a QoS, or the record of an account.
fn needs_global(c: &Command) -> bool {
    matches!(
        c,
        Command::AddQos { .. }
            | Command::ModifyQos { .. }
            | Command::DeleteQos { .. }
            | Command::AddAccount { .. }
            | Command::DeleteAccount { .. }
            | Command::ModifyAccountRecord { .. }
    )
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
        s.global |= needs_global(c);
    }
    s.clusters.sort();
    s.clusters.dedup();
    s
}

/// The global lock's file name (cluster lock files are `slurmplan-CLUSTER.lock`).
const GLOBAL: &str = "slurmplan.lock";

/// A cluster name as sacctmgr stores it (lower-cased), refused if it is not a valid name.
fn cluster_key(name: &str) -> Result<String, LockError> {
    Name::parse(name, NameKind::Cluster, false).map(|p| p.name.as_str().to_string()).map_err(LockError::Cluster)
}

/// A name as part of a file name: every byte outside `[A-Za-z0-9_-]` written `%XX`, so that no
/// name yields `/`, `.` or `..`, and two names never share a file.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The scope as held: cluster names validated and lower-cased, and the global lock taken when
/// no cluster is.
fn normalized(scope: &Scope) -> Result<Scope, LockError> {
    let mut clusters = scope.clusters.iter().map(|c| cluster_key(c)).collect::<Result<Vec<_>, _>>()?;
    clusters.sort();
    clusters.dedup();
    Ok(Scope { global: scope.global || clusters.is_empty(), clusters })
}

/// The lock file names of `scope`, in the order they are taken; each cluster name is checked
/// ([`Name::parse`]) and encoded ([`encode`]) first.
pub fn files(scope: &Scope) -> Result<Vec<String>, LockError> {
    let s = normalized(scope)?;
    let mut v = Vec::new();
    if s.global {
        v.push(GLOBAL.to_string());
    }
    v.extend(s.clusters.iter().map(|c| format!("slurmplan-{}.lock", encode(c))));
    Ok(v)
}

/// Where the lock directory is when none is given: `/run/slurmplan` for root,
/// `$XDG_RUNTIME_DIR/slurmplan` for other users (their own runtime directory). Without
/// `XDG_RUNTIME_DIR` there is no default: an error asks for one, rather than a guess at a
/// directory others may share.
pub fn default_dir() -> Result<PathBuf, LockError> {
    if euid() == 0 {
        return Ok(PathBuf::from("/run/slurmplan"));
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()).map(PathBuf::from) {
        Some(d) if d.is_absolute() => Ok(d.join("slurmplan")),
        Some(_) => Err(LockError::NoDir("XDG_RUNTIME_DIR is not an absolute path".into())),
        None => Err(LockError::NoDir(
            "XDG_RUNTIME_DIR is not set (only root has a default lock directory, /run/slurmplan)".into(),
        )),
    }
}

/// An open lock directory that only this user can write: owned by this user and not writable
/// by group or others, or, when given explicitly, owned by this user and sticky. Lock files
/// are opened relative to its descriptor.
#[derive(Debug)]
pub struct LockDir {
    dir: File,
    pub path: PathBuf,
}

impl LockDir {
    /// Open the lock directory `explicit` (`--lock-dir`, `SLURMPLAN_LOCK_DIR`) or
    /// [`default_dir`]; with `create`, make it (0700) if it is missing. `Ok(None)`: it does not
    /// exist and `create` is off. The directory itself is opened without following a symlink
    /// and checked on the open descriptor.
    pub fn open(explicit: Option<&Path>, create: bool) -> Result<Option<LockDir>, LockError> {
        match explicit {
            Some(p) => LockDir::open_at(p.to_path_buf(), true, create),
            None => LockDir::open_at(default_dir()?, false, create),
        }
    }

    fn open_at(path: PathBuf, explicit: bool, create: bool) -> Result<Option<LockDir>, LockError> {
        let unsafe_dir = |reason: String| LockError::UnsafeDir { path: path.clone(), reason, explicit };
        if create {
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => return Err(LockError::DirIo { path, source }),
            }
        }
        let opened = OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW).open(&path);
        let dir = match opened {
            Ok(d) => d,
            Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            // O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR (or ELOOP): say which it is.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) => {
                let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
                return Err(unsafe_dir(if link {
                    "it is a symbolic link; give the directory it points to".into()
                } else {
                    "it is not a directory".into()
                }));
            }
            Err(source) => return Err(LockError::DirIo { path, source }),
        };
        let m = dir.metadata().map_err(|source| LockError::DirIo { path: path.clone(), source })?;
        let (me, mode) = (euid(), m.mode() & 0o7777);
        if m.uid() != me {
            return Err(unsafe_dir(format!(
                "it is owned by uid {}, not by this user (uid {me}); its owner could plant or hold its lock files",
                m.uid()
            )));
        }
        if mode & 0o022 != 0 {
            let sticky = mode & 0o1000 != 0;
            if !explicit {
                return Err(unsafe_dir(format!("other users can write it (mode {mode:04o})")));
            }
            if !sticky {
                return Err(unsafe_dir(format!(
                    "other users can write it (mode {mode:04o}) and it is not sticky, so they can replace its lock files"
                )));
            }
        }
        Ok(Some(LockDir { dir, path }))
    }

    /// Open (creating it 0600) the lock file `name` in this directory: never through a
    /// symlink, and only a regular file of this user with one link.
    fn open_lock(&self, name: &str) -> Result<File, LockError> {
        let path = self.path.join(name);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::openat(&self.dir, name, flags, Mode::from_raw_mode(0o600)).map_err(|e| {
            if e == rustix::io::Errno::LOOP {
                LockError::UnsafeFile { path: path.clone(), reason: "it is a symbolic link".into() }
            } else {
                LockError::Io { path: path.clone(), source: e.into() }
            }
        })?;
        let f = File::from(fd);
        if let Some(reason) = not_own_file(&f) {
            return Err(LockError::UnsafeFile { path, reason });
        }
        // A lock file others can open can be flocked by them: it is this user's alone.
        let mode = f.metadata().map(|m| m.mode()).unwrap_or(0);
        if mode & 0o077 != 0 {
            f.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|source| LockError::Io { path: path.clone(), source })?;
        }
        Ok(f)
    }
}

/// An apply that ended without releasing its locks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    pub lock: PathBuf,
    /// Digits, or `unknown` when the lock file says something else.
    pub pid: String,
    /// As the lock file says (untrusted: open it only as [`super::journal::last_step`] does,
    /// and escape it when shown).
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
    /// What is held (cluster names lower-cased).
    held: Scope,
}

/// The text of a lock file, if it is small enough to be one (at most [`LOCK_TEXT_MAX`]).
fn lock_text(f: &mut File) -> Option<String> {
    f.seek(SeekFrom::Start(0)).ok()?;
    let mut buf = Vec::new();
    (&mut *f).take(LOCK_TEXT_MAX + 1).read_to_end(&mut buf).ok()?;
    if buf.len() as u64 > LOCK_TEXT_MAX {
        return None;
    }
    String::from_utf8(buf).ok()
}

/// The PID on a lock file's first line: digits, else `unknown`.
fn pid_of(text: &str) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    if !first.is_empty() && first.len() <= 10 && first.bytes().all(|b| b.is_ascii_digit()) {
        first.to_string()
    } else {
        "unknown".to_string()
    }
}

fn holder(text: &str, lock: &Path) -> Option<Previous> {
    let journal = text.lines().skip(1).find_map(|l| l.strip_prefix("journal "))?;
    if journal.is_empty() {
        return None;
    }
    Some(Previous { lock: lock.to_path_buf(), pid: pid_of(text), journal: PathBuf::from(journal) })
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

    /// Whether these locks cover `c`: the lock of its cluster, and the global lock when it
    /// changes a QoS or an account record (a command without a cluster is always one of
    /// those). A change of an account's record alone (description, organization) needs only the
    /// global lock: its `cluster=` only says where sacctmgr finds the account, and the planner
    /// may name any cluster that has it, also one outside the desired file. `Err` says which
    /// lock is missing.
    pub fn covers(&self, c: &Command) -> Result<(), String> {
        if (needs_global(c) || c.cluster().is_none()) && !self.held.global {
            return Err("it changes objects shared by all clusters, and the global lock is not held".into());
        }
        if matches!(c, Command::ModifyAccountRecord { .. }) {
            return Ok(());
        }
        if let Some(cl) = c.cluster() {
            let key = cluster_key(cl.as_str()).map_err(|e| e.to_string())?;
            if self.held.clusters.binary_search(&key).is_err() {
                return Err(format!("the lock of cluster `{key}` is not held"));
            }
        }
        Ok(())
    }
}

/// Lock everything in `scope` in the fixed order, waiting up to `timeout` in all. Every
/// cluster name is checked before any lock file is opened.
pub fn acquire(dir: &LockDir, scope: &Scope, timeout: Duration) -> Result<Locks, LockError> {
    let names = files(scope)?;
    let mut held = Locks { files: Vec::new(), paths: Vec::new(), previous: Vec::new(), held: normalized(scope)? };
    let start = Instant::now();
    for name in names {
        let path = dir.path.join(&name);
        let mut f = dir.open_lock(&name)?;
        loop {
            match f.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if start.elapsed() >= timeout {
                        let holder = lock_text(&mut f).map(|t| pid_of(&t)).unwrap_or_else(|| "unknown".into());
                        return Err(LockError::Busy { path, holder, waited: start.elapsed() });
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(std::fs::TryLockError::Error(source)) => return Err(LockError::Io { path, source }),
            }
        }
        if let Some(p) = lock_text(&mut f).and_then(|t| holder(&t, &path)) {
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
    if let Ok(flags) = rustix::io::fcntl_getfd(f) {
        let _ = rustix::io::fcntl_setfd(f, flags - rustix::io::FdFlags::CLOEXEC);
    }
}

/// Applies that were killed while holding a lock in `dir` and that no apply has taken over
/// since: lock files that are free and still name a journal. Reads only, and only what a
/// lock file can be: regular files of this user (opened without following symlinks or
/// blocking), at most [`LOCK_TEXT_MAX`] bytes each. A lock held right now belongs to a running
/// apply and is skipped.
pub fn interrupted(dir: &LockDir) -> Vec<Previous> {
    let Ok(entries) = rustix::fs::Dir::read_from(&dir.dir) else { return Vec::new() };
    let mut found = Vec::new();
    let mut seen = 0;
    for e in entries {
        let Ok(e) = e else { break };
        let Ok(name) = e.file_name().to_str() else { continue };
        if !(name.starts_with("slurmplan") && name.ends_with(".lock")) {
            continue;
        }
        seen += 1;
        if seen > MAX_LOCK_FILES {
            break;
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let Ok(fd) = rustix::fs::openat(&dir.dir, name, flags, Mode::empty()) else { continue };
        let mut f = File::from(fd);
        if not_own_file(&f).is_some() || f.try_lock_shared().is_err() {
            continue;
        }
        let text = lock_text(&mut f);
        let _ = f.unlock();
        let path = dir.path.join(name);
        if let Some(p) = text.and_then(|t| holder(&t, &path)) {
            found.push(p);
        }
    }
    found.sort_by(|a, b| a.lock.cmp(&b.lock));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn plan_of(commands: Vec<Command>) -> Plan {
        let mut p =
            slurmplan_plan::make_plan(&slurmplan_model::State::default(), &slurmplan_model::State::default(), "x")
                .unwrap();
        p.steps = commands
            .into_iter()
            .enumerate()
            .map(|(i, c)| slurmplan_plan::Step {
                number: i + 1,
                phase: slurmplan_plan::Phase::Limits,
                argv: c.argv(),
                command: c,
                causes: vec![],
                note: None,
            })
            .collect();
        p
    }

    fn n(s: &str) -> slurmplan_model::Name {
        slurmplan_model::Name::keep_case(s, slurmplan_model::NameKind::Account).unwrap()
    }

    /// A fresh lock directory (a temp dir is 0700 and ours).
    fn lock_dir() -> (tempfile::TempDir, LockDir) {
        let t = tempfile::tempdir().unwrap();
        let d = LockDir::open(Some(t.path()), false).unwrap().unwrap();
        (t, d)
    }

    fn clusters(c: &[&str]) -> Scope {
        Scope { global: false, clusters: c.iter().map(|s| s.to_string()).collect() }
    }

    fn chown(p: &Path, uid: u32) {
        std::os::unix::fs::lchown(p, Some(uid), None).unwrap();
    }

    /// A plan that touches a QoS takes the global lock, before its clusters'; one that only
    /// moves users on a cluster takes that cluster's lock alone.
    #[test]
    fn shared_objects_take_the_global_lock_first() {
        let (_t, dir) = lock_dir();
        let users = plan_of(vec![Command::SetDefaultAccount { cluster: n("b"), users: vec![n("u")], account: n("a") }]);
        assert_eq!(files(&scope(&users)).unwrap(), ["slurmplan-b.lock"]);
        let qos = plan_of(vec![
            Command::SetDefaultAccount { cluster: n("b"), users: vec![n("u")], account: n("a") },
            Command::DeleteQos { names: vec![n("q")] },
        ]);
        assert_eq!(files(&scope(&qos)).unwrap(), ["slurmplan.lock", "slurmplan-b.lock"]);
        // two applies on different clusters touching the same QoS exclude each other
        let other = plan_of(vec![Command::ModifyQos { names: vec![n("q")], set: Default::default() }]);
        let held = acquire(&dir, &scope(&qos), Duration::from_secs(1)).unwrap();
        assert!(matches!(acquire(&dir, &scope(&other), Duration::from_millis(200)), Err(LockError::Busy { .. })));
        held.release();
        acquire(&dir, &scope(&other), Duration::from_millis(200)).unwrap().release();
    }

    /// A lock left by a holder that did not release it names that holder's journal, until an
    /// apply takes it and ends cleanly.
    #[test]
    fn a_killed_holder_is_reported() {
        let (_t, dir) = lock_dir();
        let s = clusters(&["c"]);
        let mut held = acquire(&dir, &s, Duration::from_secs(1)).unwrap();
        assert!(held.previous.is_empty());
        held.record(Path::new("/j/one.jsonl"));
        assert!(interrupted(&dir).is_empty(), "a held lock is a running apply");
        drop(held); // what a kill does: released without the clean end
        let left = interrupted(&dir);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].journal, Path::new("/j/one.jsonl"));
        let held = acquire(&dir, &s, Duration::from_secs(1)).unwrap();
        assert_eq!(held.previous, left);
        held.release();
        assert!(interrupted(&dir).is_empty());
    }

    /// A symlink planted as a lock file is refused, and the file it points to is neither
    /// truncated nor written; lock files are created 0600, and one left readable by others
    /// is made 0600.
    #[test]
    fn lock_files_never_follow_symlinks_and_are_the_users_alone() {
        let (t, dir) = lock_dir();
        let precious = t.path().join("precious");
        std::fs::write(&precious, "keep me").unwrap();
        symlink(&precious, t.path().join("slurmplan-c.lock")).unwrap();
        symlink(&precious, t.path().join("slurmplan.lock")).unwrap();
        for s in [clusters(&["c"]), Scope { global: true, clusters: vec![] }] {
            let e = acquire(&dir, &s, Duration::from_secs(1)).unwrap_err();
            assert!(matches!(&e, LockError::UnsafeFile { reason, .. } if reason.contains("symbolic link")), "{e}");
        }
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");

        let held = acquire(&dir, &clusters(&["d"]), Duration::from_secs(1)).unwrap();
        let mode = std::fs::metadata(t.path().join("slurmplan-d.lock")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        held.release();
        let old = t.path().join("slurmplan-e.lock");
        std::fs::write(&old, "").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        acquire(&dir, &clusters(&["e"]), Duration::from_secs(1)).unwrap().release();
        assert_eq!(std::fs::metadata(&old).unwrap().permissions().mode() & 0o777, 0o600);
    }

    /// A lock file another user owns (who could hold it or read it), or a hard link to some
    /// other file, is refused without being written.
    #[test]
    fn lock_files_of_other_users_and_hard_links_are_refused() {
        let (t, dir) = lock_dir();
        let theirs = t.path().join("slurmplan-c.lock");
        std::fs::write(&theirs, "").unwrap();
        chown(&theirs, 65534);
        let e = acquire(&dir, &clusters(&["c"]), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(&e, LockError::UnsafeFile { reason, .. } if reason.contains("uid 65534")), "{e}");

        let precious = t.path().join("precious");
        std::fs::write(&precious, "keep me").unwrap();
        std::fs::hard_link(&precious, t.path().join("slurmplan-h.lock")).unwrap();
        let e = acquire(&dir, &clusters(&["h"]), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(&e, LockError::UnsafeFile { reason, .. } if reason.contains("hard links")), "{e}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    }

    /// The directory: created 0700 when missing; refused when another user owns it, when it
    /// is a symlink, or when others can write it, unless it was given explicitly and is sticky.
    #[test]
    fn a_lock_directory_others_control_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let made = t.path().join("made");
        let d = LockDir::open_at(made.clone(), false, true).unwrap().unwrap();
        assert_eq!(std::fs::metadata(&d.path).unwrap().permissions().mode() & 0o7777, 0o700);
        assert!(LockDir::open_at(t.path().join("absent"), false, false).unwrap().is_none());

        let refused = |p: &Path, explicit: bool| match LockDir::open_at(p.to_path_buf(), explicit, false) {
            Err(LockError::UnsafeDir { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        let link = t.path().join("link");
        symlink(&made, &link).unwrap();
        assert!(refused(&link, true).contains("symbolic link"));

        let theirs = t.path().join("theirs");
        std::fs::DirBuilder::new().mode(0o700).create(&theirs).unwrap();
        chown(&theirs, 65534);
        assert!(refused(&theirs, true).contains("owned by uid 65534"));

        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(refused(&open, true).contains("not sticky"));
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(refused(&open, false).contains("other users can write it (mode 1777)"));
        // asked for explicitly, sticky and ours (like /tmp for root): accepted
        let d = LockDir::open_at(open.clone(), true, false).unwrap().unwrap();
        acquire(&d, &clusters(&["c"]), Duration::from_secs(1)).unwrap().release();
        // the same directory owned by someone else: refused
        chown(&open, 65534);
        assert!(refused(&open, true).contains("owned by uid 65534"));
    }

    /// A cluster name is checked and encoded before it becomes a file name: nothing is
    /// created outside the lock directory, and names that are not names are refused.
    #[test]
    fn cluster_names_stay_inside_the_lock_directory() {
        let t = tempfile::tempdir().unwrap();
        let inner = t.path().join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        let dir = LockDir::open(Some(&inner), false).unwrap().unwrap();
        let s = clusters(&["x/../../something", "..", "Up.Case"]);
        assert_eq!(
            files(&s).unwrap(),
            ["slurmplan-%2E%2E.lock", "slurmplan-up%2Ecase.lock", "slurmplan-x%2F%2E%2E%2F%2E%2E%2Fsomething.lock"]
        );
        acquire(&dir, &s, Duration::from_secs(1)).unwrap().release();
        assert!(!t.path().join("something.lock").exists() && !t.path().join("a/something.lock").exists());
        let mut made: Vec<String> =
            std::fs::read_dir(&inner).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        made.sort();
        assert_eq!(
            made,
            files(&s).unwrap().into_iter().collect::<std::collections::BTreeSet<_>>().into_iter().collect::<Vec<_>>()
        );
        for bad in ["", "a\nb", "a b", "a\u{1b}[31m"] {
            assert!(matches!(files(&clusters(&[bad])), Err(LockError::Cluster(_))), "{bad:?}");
            assert!(matches!(acquire(&dir, &clusters(&[bad]), Duration::from_secs(1)), Err(LockError::Cluster(_))));
        }
    }

    /// What `plan` reads in the lock directory is untrusted: a FIFO, a symlink to a device, a
    /// huge file or another user's file is skipped without blocking, and a PID that is not
    /// digits is not repeated.
    #[test]
    fn lock_files_are_read_as_untrusted_data() {
        let (t, dir) = lock_dir();
        let p = |n: &str| t.path().join(n);
        let st = std::process::Command::new("mkfifo").arg(p("slurmplan-fifo.lock")).status().unwrap();
        assert!(st.success());
        symlink("/dev/zero", p("slurmplan-zero.lock")).unwrap();
        let big = std::fs::File::create(p("slurmplan-big.lock")).unwrap();
        big.set_len(1 << 30).unwrap();
        let mut long = String::from("1\njournal /j/long\n");
        long.push_str(&"x".repeat(LOCK_TEXT_MAX as usize));
        std::fs::write(p("slurmplan-long.lock"), long).unwrap();
        std::fs::write(p("slurmplan-theirs.lock"), "1\njournal /j/theirs\n").unwrap();
        chown(&p("slurmplan-theirs.lock"), 65534);
        std::fs::write(p("slurmplan-esc.lock"), "\u{1b}]0;owned\u{7}\njournal /j/esc\n").unwrap();
        let started = Instant::now();
        let found = interrupted(&dir);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].pid.as_str(), found[0].journal.as_path()), ("unknown", Path::new("/j/esc")));
    }

    /// The executor's check: held locks cover a step on their cluster (in any case), not one on
    /// another cluster, and not a QoS step without the global lock.
    #[test]
    fn locks_cover_only_their_clusters() {
        let (_t, dir) = lock_dir();
        let held = acquire(&dir, &clusters(&["A"]), Duration::from_secs(1)).unwrap();
        let on = |c: &str| Command::SetDefaultAccount { cluster: n(c), users: vec![n("u")], account: n("a") };
        assert_eq!(held.covers(&on("a")), Ok(()));
        assert_eq!(held.covers(&on("A")), Ok(()));
        assert_eq!(held.covers(&on("b")), Err("the lock of cluster `b` is not held".into()));
        assert!(held.covers(&Command::DeleteQos { names: vec![n("q")] }).unwrap_err().contains("global lock"));
        let record = |c: &str| Command::ModifyAccountRecord {
            cluster: n(c),
            names: vec![n("acct")],
            record: slurmplan_model::AccountRecord::default(),
        };
        assert!(held.covers(&record("a")).unwrap_err().contains("global lock"));
        held.release();
        let all = acquire(&dir, &Scope { global: true, clusters: vec!["a".into()] }, Duration::from_secs(1)).unwrap();
        assert_eq!(all.covers(&Command::DeleteQos { names: vec![n("q")] }), Ok(()));
        // an account record is global: its cluster is only where sacctmgr finds the account
        assert_eq!(all.covers(&record("elsewhere")), Ok(()));
        assert!(all.covers(&on("elsewhere")).is_err());
    }
}
