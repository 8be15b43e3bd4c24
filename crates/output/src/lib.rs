//! Writing an output file (plan files, snapshot files, built desired files, reports)
//! so that a crash or a power cut leaves the old file or the new one, never a mix or nothing: a
//! temporary file in the same directory, created new (never through a symlink or over a file
//! already there), written and synced to disk, renamed over the target, and then the directory
//! synced so that the rename itself is on disk. Formats nothing, prints nothing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The directory `path` is in (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Sync the directory `dir` (what makes a rename or a new file in it survive a crash).
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(dir)?.sync_all()
}

/// Replace `path` with `bytes` atomically and durably (see the module comment). On an error the
/// temporary file is removed and `path` is as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = parent(path);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    // create_new (O_EXCL) never follows a symlink and never opens a file that is there already.
    let mut f: File = OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&tmp)?;
    let written = f.write_all(bytes).and_then(|_| f.sync_all()).and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The temporary file is created new: a symlink planted at its name is not followed (the
    /// file it points to keeps its bytes), and the target is then written as asked.
    #[test]
    fn a_planted_temporary_file_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("plan.json");
        let precious = dir.path().join("precious");
        std::fs::write(&precious, "keep me").unwrap();
        let tmp = dir.path().join(format!(".plan.json.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&precious, &tmp).unwrap();
        assert!(write_atomic(&target, b"new").is_err());
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
        assert!(!target.exists());
        std::fs::remove_file(&tmp).unwrap();
        write_atomic(&target, b"new").unwrap();
        write_atomic(&target, b"newer").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "newer");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }
}
