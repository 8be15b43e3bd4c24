//! Snapshot directories: one file per read in [`READS`] holding sacctmgr's raw `-n -P` stdout,
//! plus an optional `manifest.json` (format, Slurm version, creation time, clusters, commands,
//! and each file's size and SHA-256). A snapshot whose files do not match its manifest, or whose
//! file ends in the middle of a line, is refused; one without sizes (written by hand) is read
//! with a warning. Files are read through `slurmplan_input` (regular files, bounded size).
//!
//! Tests and bug reports use the same format. This module reads and writes files only; it must
//! NOT spawn sacctmgr, print, or look at the clock (the caller passes the creation time).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use super::parse::{self, RawReads, Source};
use super::reads::READS;
use slurmplan_diag::{Diagnostic, Location};
use slurmplan_input::{self as input, InputError};
use slurmplan_model::State;
use slurmplan_model::fingerprint::hash_bytes;

/// Name of the manifest file inside a snapshot directory.
pub const MANIFEST: &str = "manifest.json";
/// The manifest format this version writes and reads.
pub const FORMAT: u32 = 1;

/// `manifest.json`: how a snapshot was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// Last word of `sacctmgr -V`, when known.
    pub slurm_version: Option<String>,
    /// RFC 3339 UTC time, given by the caller.
    pub created: String,
    pub clusters: Vec<String>,
    /// File name -> the exact argv that produced it (`["sacctmgr", "-n", "-P", ...]`).
    pub reads: BTreeMap<String, Vec<String>>,
    /// File name -> its size and SHA-256, filled by [`write_dir`]. Absent in snapshots written
    /// by hand.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, FileSum>,
}

/// What a snapshot file held when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    pub bytes: u64,
    /// Lower-case hex.
    pub sha256: String,
}

impl FileSum {
    pub fn of(bytes: &[u8]) -> FileSum {
        let h = hash_bytes(bytes);
        FileSum { bytes: bytes.len() as u64, sha256: h.strip_prefix("sha256:").unwrap_or(&h).to_string() }
    }
}

/// A snapshot as read: the raw reads, the manifest if there is one, and warnings to show.
#[derive(Debug)]
pub struct Snapshot {
    pub raw: RawReads,
    pub manifest: Option<Manifest>,
    pub warnings: Vec<Diagnostic>,
}

impl Manifest {
    /// A manifest for a snapshot taken with [`READS`].
    pub fn new(slurm_version: Option<String>, created: impl Into<String>, clusters: Vec<String>) -> Manifest {
        Manifest {
            format: FORMAT,
            slurm_version,
            created: created.into(),
            clusters,
            reads: READS.iter().map(|r| (r.file.to_string(), r.argv())).collect(),
            files: BTreeMap::new(),
        }
    }
}

fn file_error(path: &Path, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error("bad-snapshot", message).at(Location { file: path.to_path_buf(), line: 0, column: 0 })
}

/// Read every file of a snapshot directory. A missing data file is an error whose hint names
/// the sacctmgr command that produces it; `manifest.json` is optional (`None` when absent).
pub fn read_dir(dir: &Path) -> Result<(RawReads, Option<Manifest>), Vec<Diagnostic>> {
    read(dir).map(|s| (s.raw, s.manifest))
}

/// [`read_dir`], with the files checked against the manifest's sizes and SHA-256 (a mismatch is
/// an error; no sizes at all is a warning) and against being cut mid-line.
pub fn read(dir: &Path) -> Result<Snapshot, Vec<Diagnostic>> {
    if !dir.is_dir() {
        return Err(vec![
            file_error(dir, format!("snapshot directory `{}` does not exist or is not a directory", dir.display()))
                .hint("take a snapshot first, or pass the directory that holds assocs.txt, qos.txt, ..."),
        ]);
    }
    let manifest = match read_manifest(&dir.join(MANIFEST)) {
        Ok(m) => m,
        Err(d) => return Err(vec![d]),
    };
    let sums = manifest.as_ref().map(|m| &m.files).filter(|f| !f.is_empty());
    let mut raw = RawReads::default();
    let mut diags = Vec::new();
    let mut warnings = Vec::new();
    if sums.is_none() {
        warnings.push(
            Diagnostic::warning(
                "unchecked-snapshot",
                format!(
                    "snapshot `{}` records no file sizes or checksums; its files are read as they are",
                    dir.display()
                ),
            )
            .at(Location { file: dir.join(MANIFEST), line: 0, column: 0 })
            .hint("`slurmplan dump -o DIR` writes snapshots whose files are checked when read"),
        );
    }
    for read in READS {
        let path = dir.join(read.file);
        let bytes = match input::read(&path) {
            Ok(b) => b,
            Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                diags.push(
                    Diagnostic::error(
                        "missing-snapshot-file",
                        format!("snapshot file `{}` ({}) is missing", read.file, read.what),
                    )
                    .at(Location { file: path.clone(), line: 0, column: 0 })
                    .hint(format!("it holds the stdout of `{}`", read.command_line())),
                );
                continue;
            }
            Err(e) => {
                diags.push(file_error(&path, format!("cannot read `{}`: {e}", read.file)));
                continue;
            }
        };
        if let Some(sums) = sums {
            let found = FileSum::of(&bytes);
            match sums.get(read.file) {
                Some(want) if *want == found => {}
                Some(want) => {
                    diags.push(
                        file_error(
                            &path,
                            format!(
                                "`{}` does not match {MANIFEST}: {} bytes with SHA-256 {} were written, {} bytes with SHA-256 {} are there",
                                read.file, want.bytes, want.sha256, found.bytes, found.sha256
                            ),
                        )
                        .hint("the snapshot was changed or cut short after it was taken: take it again with `slurmplan dump -o DIR`"),
                    );
                    continue;
                }
                None => {
                    diags.push(
                        file_error(&path, format!("{MANIFEST} records no size or checksum for `{}`", read.file))
                            .hint("take the snapshot again with `slurmplan dump -o DIR`"),
                    );
                    continue;
                }
            }
        }
        if bytes.last().is_some_and(|b| *b != b'\n') {
            let line = bytes.iter().filter(|b| **b == b'\n').count() + 1;
            diags.push(
                Diagnostic::error(
                    "truncated-snapshot",
                    format!("`{}` ends in the middle of line {line}: the file was cut short", read.file),
                )
                .at(Location { file: path.clone(), line, column: 0 })
                .hint("sacctmgr ends every row with a newline; take the snapshot again with `slurmplan dump -o DIR`"),
            );
            continue;
        }
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                diags.push(file_error(&path, format!("`{}` is not valid UTF-8 ({e})", read.file)));
                continue;
            }
        };
        if let Some(src) = raw.source_mut(read.file) {
            *src = Source::new(path, text);
        }
    }
    if diags.is_empty() { Ok(Snapshot { raw, manifest, warnings }) } else { Err(diags) }
}

fn read_manifest(path: &Path) -> Result<Option<Manifest>, Diagnostic> {
    let text = match input::read_text(path) {
        Ok(t) => t,
        Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_error(path, format!("cannot read {MANIFEST}: {e}"))),
    };
    let m: Manifest = serde_json::from_str(&text).map_err(|e| {
        Diagnostic::error("bad-manifest", format!("{MANIFEST} is not a valid manifest: {e}")).at(Location {
            file: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
        })
    })?;
    if m.format != FORMAT {
        return Err(Diagnostic::error(
            "bad-manifest",
            format!("{MANIFEST} has format {}, this slurmplan reads format {FORMAT}", m.format),
        )
        .at(Location { file: path.to_path_buf(), line: 0, column: 0 }));
    }
    Ok(Some(m))
}

/// Read a snapshot directory and parse it into a [`State`].
pub fn load(dir: &Path) -> Result<State, Vec<Diagnostic>> {
    load_with_warnings(dir).map(|(state, _)| state)
}

/// [`load`], also returning the warnings to show (a snapshot without checksums).
pub fn load_with_warnings(dir: &Path) -> Result<(State, Vec<Diagnostic>), Vec<Diagnostic>> {
    let snap = read(dir)?;
    parse::parse_state(&snap.raw).map(|state| (state, snap.warnings))
}

/// [`load_with_warnings`], with rows that cannot be split left out of the state and returned
/// beside it.
pub fn load_unsplit(dir: &Path) -> Result<(State, Vec<parse::Unsplit>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let snap = read(dir)?;
    parse::parse_state_unsplit(&snap.raw).map(|(state, unsplit)| (state, unsplit, snap.warnings))
}

/// Write `files` (file name, raw text) and `manifest.json` into `dir`, creating it if needed.
/// The manifest written records each file's size and SHA-256. Each file is written atomically
/// and synced with its directory (`slurmplan_output`), the manifest last.
pub fn write_dir(dir: &Path, files: &[(&'static str, String)], manifest: &Manifest) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut manifest = manifest.clone();
    manifest.files.clear();
    for (name, text) in files {
        slurmplan_output::write_atomic(&dir.join(name), text.as_bytes())?;
        manifest.files.insert(name.to_string(), FileSum::of(text.as_bytes()));
    }
    let mut json = serde_json::to_string_pretty(&manifest).map_err(std::io::Error::other)?;
    json.push('\n');
    slurmplan_output::write_atomic(&dir.join(MANIFEST), json.as_bytes())?;
    // a directory made here is itself an entry of its parent
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        slurmplan_output::sync_dir(parent)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::write_state;
    use crate::reads;

    fn sample_files() -> Vec<(&'static str, String)> {
        vec![
            (reads::CLUSTERS, "c1\n".into()),
            (reads::ASSOCS, "c1|root||||1|||||||||||normal|\nc1|phys|||root|10|||||||||||hi,normal|hi\nc1|phys|u1|||1||||||||||||\n".into()),
            (reads::DEFAULTS, "c1|u1|phys\n".into()),
            (reads::ACCOUNTS_DESCR, "phys|physics dept\nroot|default root account\n".into()),
            (reads::ACCOUNTS_ORG, "phys|sci\nroot|root\n".into()),
            (reads::QOS, "hi||||||hi\nnormal||||||Normal QOS default\n".into()),
        ]
    }

    #[test]
    fn write_then_load() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("snap");
        let m = Manifest::new(Some("22.05.8".into()), "2025-01-01T00:00:00Z", vec!["c1".into()]);
        write_dir(&sub, &sample_files(), &m).unwrap();
        let (raw, got) = read_dir(&sub).unwrap();
        let got = got.unwrap();
        assert_eq!(got.files[reads::DEFAULTS], FileSum::of(b"c1|u1|phys\n"));
        assert_eq!(got.files.len(), sample_files().len());
        assert_eq!(Manifest { files: BTreeMap::new(), ..got }, m);
        let state = parse::parse_state(&raw).unwrap();
        assert_eq!(load(&sub).unwrap(), state);
        assert_eq!(state.clusters["c1"].defaults["u1"].as_str(), "phys");
        // the manifest is plain JSON with the exact commands
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sub.join(MANIFEST)).unwrap()).unwrap();
        assert_eq!(v["format"], 1);
        assert_eq!(v["reads"]["assocs.txt"][0], "sacctmgr");
        assert_eq!(v["reads"]["assocs.txt"][6], "withrawqos");
        // write_state output can be written and loaded back
        let dir2 = dir.path().join("again");
        write_dir(&dir2, &write_state(&state).to_files(), &Manifest::new(None, "t", vec![])).unwrap();
        assert_eq!(load(&dir2).unwrap(), state);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir2.join(MANIFEST)).unwrap()).unwrap();
        assert!(v["slurm_version"].is_null());
    }

    #[test]
    fn manifest_is_optional_but_data_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        for (f, t) in sample_files() {
            std::fs::write(dir.path().join(f), t).unwrap();
        }
        let (_, m) = read_dir(dir.path()).unwrap();
        assert_eq!(m, None);
        std::fs::remove_file(dir.path().join(reads::ASSOCS)).unwrap();
        std::fs::remove_file(dir.path().join(reads::QOS)).unwrap();
        let errs = read_dir(dir.path()).unwrap_err();
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].code, "missing-snapshot-file");
        let hint = errs[0].hint.as_deref().unwrap();
        assert!(
            hint.contains("sacctmgr -n -P show assoc wopl withrawqos format=Cluster,Account,User,Partition"),
            "{hint}"
        );
        assert!(errs[1].hint.as_deref().unwrap().contains("sacctmgr -n -P show qos format=Name,Flags"));
    }

    #[test]
    fn bad_manifest_and_missing_dir() {
        let dir = tempfile::tempdir().unwrap();
        for (f, t) in sample_files() {
            std::fs::write(dir.path().join(f), t).unwrap();
        }
        std::fs::write(
            dir.path().join(MANIFEST),
            "{\"format\": 2, \"slurm_version\": null, \"created\": \"x\", \"clusters\": [], \"reads\": {}}",
        )
        .unwrap();
        let errs = read_dir(dir.path()).unwrap_err();
        assert_eq!(errs[0].code, "bad-manifest");
        std::fs::write(dir.path().join(MANIFEST), "{not json").unwrap();
        let errs = read_dir(dir.path()).unwrap_err();
        assert_eq!(errs[0].code, "bad-manifest");
        assert_eq!(errs[0].location.as_ref().unwrap().line, 1);
        let errs = load(&dir.path().join("nope")).unwrap_err();
        assert_eq!(errs.len(), 1);
    }

    /// A file changed or cut after `dump` is refused; a hand-written snapshot (no sums) is read
    /// with a warning, but a file cut mid-line is refused even then.
    #[test]
    fn files_are_checked_against_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        write_dir(dir.path(), &sample_files(), &Manifest::new(None, "t", vec![])).unwrap();
        assert!(read(dir.path()).unwrap().warnings.is_empty());
        std::fs::write(dir.path().join(reads::DEFAULTS), "c1|u1|phy").unwrap();
        let errs = read(dir.path()).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].message.contains("does not match manifest.json: 11 bytes"), "{}", errs[0].message);
        // the same without sums in the manifest: read with a warning, but the cut line is refused
        let mut m = Manifest::new(None, "t", vec![]);
        m.files.clear();
        std::fs::write(dir.path().join(MANIFEST), serde_json::to_string(&m).unwrap()).unwrap();
        let errs = read(dir.path()).unwrap_err();
        assert_eq!(errs[0].code, "truncated-snapshot");
        assert_eq!(errs[0].location.as_ref().unwrap().line, 1);
        std::fs::write(dir.path().join(reads::DEFAULTS), "c1|u1|phys\n").unwrap();
        let snap = read(dir.path()).unwrap();
        assert_eq!(snap.warnings.len(), 1);
        assert_eq!(snap.warnings[0].code, "unchecked-snapshot");
    }

    #[test]
    fn parse_errors_name_the_file_in_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        for (f, t) in sample_files() {
            std::fs::write(dir.path().join(f), t).unwrap();
        }
        std::fs::write(dir.path().join(reads::DEFAULTS), "c1|u1|phys\nc9|u1|phys\n").unwrap();
        let errs = load(dir.path()).unwrap_err();
        assert_eq!(errs.len(), 1);
        let loc = errs[0].location.as_ref().unwrap();
        assert_eq!(loc.file, dir.path().join(reads::DEFAULTS));
        assert_eq!(loc.line, 2);
    }
}
