//! Reading an input file with bounds — the one place that opens the files users hand to
//! slurmplan (desired YAML, snapshot files, plan files, key files, the site agent's config,
//! export pages, CA files). A FIFO, a device or a
//! directory is refused without blocking on it, and a file larger than [`MAX_BYTES`] is refused
//! before it is read. A secret ([`read_private`]: the plan key) must also be no symlink and
//! readable by its owner only. Parses nothing, prints nothing.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The largest input file slurmplan reads: 512 MiB. A million-association snapshot is about
/// 41 MB and its desired file about 15 MB (docs/performance.md), so this leaves room for long
/// names and many limits while keeping `/dev/zero`-like inputs from eating memory.
pub const MAX_BYTES: u64 = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is larger than {} MiB, the most slurmplan reads", MAX_BYTES >> 20)]
    TooLarge,
    #[error("it is not UTF-8 text")]
    NotText,
    #[error("it is a symbolic link; give the file itself")]
    Symlink,
    #[error(
        "its group or other users may read or write it (mode {0:04o}); it must be readable by its owner only (chmod 600)"
    )]
    NotPrivate(u32),
}

/// The largest secret [`read_private`] reads.
pub const MAX_SECRET_BYTES: u64 = 64 << 10;

/// The bytes of the secret at `path` (at most [`MAX_SECRET_BYTES`]): a regular file, not a
/// symlink, that neither group nor others may read or write (mode & 0o077 == 0).
pub fn read_private(path: &Path) -> Result<Vec<u8>, InputError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| if e.raw_os_error() == Some(libc::ELOOP) { InputError::Symlink } else { InputError::Io(e) })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(InputError::NotRegular(kind(&meta.file_type())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(InputError::NotPrivate(meta.mode() & 0o7777));
    }
    if meta.len() > MAX_SECRET_BYTES {
        return Err(InputError::TooLarge);
    }
    let mut bytes = Vec::new();
    file.take(MAX_SECRET_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SECRET_BYTES {
        return Err(InputError::TooLarge);
    }
    Ok(bytes)
}

/// What a file that is not a regular file is, for messages.
fn kind(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// The regular file at `path`, opened for reading without following a symlink, for a reader
/// that bounds what it reads itself (a journal, read line by line).
pub fn open_regular_nofollow(path: &Path) -> Result<std::fs::File, InputError> {
    open_regular(path, libc::O_NOFOLLOW).map(|(file, _)| file)
}

/// The regular file at `path` opened for reading (with `flags` besides `O_NONBLOCK`: opening a
/// FIFO for reading returns at once instead of waiting for a writer), and its metadata.
fn open_regular(path: &Path, flags: i32) -> Result<(std::fs::File, std::fs::Metadata), InputError> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | flags).open(path)?;
    let meta = file.metadata()?;
    let t = meta.file_type();
    if !t.is_file() {
        return Err(InputError::NotRegular(kind(&t)));
    }
    Ok((file, meta))
}

/// The bytes of the regular file at `path`, at most [`MAX_BYTES`].
pub fn read(path: &Path) -> Result<Vec<u8>, InputError> {
    let (file, _) = open_regular(path, 0)?;
    read_opened(file)
}

/// The bytes of a regular file the caller opened (and checked), at most [`MAX_BYTES`].
pub fn read_opened(file: std::fs::File) -> Result<Vec<u8>, InputError> {
    let len = file.metadata()?.len();
    if len > MAX_BYTES {
        return Err(InputError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(InputError::TooLarge);
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    String::from_utf8(read(path)?).map_err(|_| InputError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_without_blocking() {
        assert!(matches!(read(Path::new("/dev/zero")), Err(InputError::NotRegular("a device"))));
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(read(dir.path()), Err(InputError::NotRegular("a directory"))));
        let fifo = dir.path().join("fifo");
        let st = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(st.success());
        assert!(matches!(read(&fifo), Err(InputError::NotRegular("a FIFO"))));
        let f = dir.path().join("ok");
        std::fs::write(&f, "a").unwrap();
        assert_eq!(read_text(&f).unwrap(), "a");
    }

    /// A secret is refused when it is a symlink, when group or others may read or write it,
    /// or when it is not a regular file; a 0600 file is read.
    #[test]
    fn secrets_must_be_private_regular_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "k").unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602] {
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
            assert!(matches!(read_private(&key), Err(InputError::NotPrivate(m)) if m == mode), "{mode:o}");
        }
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_private(&key).unwrap(), b"k");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        assert!(matches!(read_private(&link), Err(InputError::Symlink)));
        assert!(matches!(read_private(Path::new("/dev/zero")), Err(InputError::NotRegular("a device"))));
    }

    #[test]
    fn files_past_the_bound_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big");
        let file = std::fs::File::create(&f).unwrap();
        file.set_len(MAX_BYTES + 1).unwrap(); // sparse: no disk used
        assert!(matches!(read(&f), Err(InputError::TooLarge)));
    }
}
