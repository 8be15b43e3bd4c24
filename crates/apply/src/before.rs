//! The before file of an apply, for `slurmplan undo`: the plan it runs and the part of the
//! state that plan may change as it was before the first step (`plan::undo::Before`). Written
//! beside the journal before the first step runs, and named in the journal's `apply` line.
//! [`applied`] reads a journal back: the before file of its last apply and how far that apply
//! got.
//!
//! A before file is created 0600, never through a symlink and never over an existing file; it
//! and the journal are read bounded (`slurmplan_input`). It holds sacctmgr argv and accounting
//! values only, never a secret. Must not: print, or decide what to undo (`plan::undo` does).

use std::fs::OpenOptions;
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use slurmplan_plan::Plan;
use slurmplan_plan::undo::{Before, Ran};

/// The version of the before file's layout.
pub const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
struct File {
    slurmplan_before: u32,
    /// The plan file (`plan::file`, with its checksum) of the apply.
    plan: serde_json::Value,
    before: Before,
}

/// The before file of an apply journalled at `journal`: `<journal stem>.before-<stamp>.json`
/// in the journal's directory (`stamp` tells applies that share a journal apart).
pub fn path_for(journal: &Path, stamp: &str) -> PathBuf {
    let stem = journal.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "journal".into());
    journal.with_file_name(format!("{stem}.before-{stamp}.json"))
}

/// Write the before file (a new file, 0600, not through a symlink) and sync it.
pub fn write(path: &Path, plan: &Plan, before: &Before) -> std::io::Result<()> {
    let plan: serde_json::Value =
        serde_json::from_str(&slurmplan_plan::file::to_json(plan)).map_err(std::io::Error::other)?;
    let mut text = serde_json::to_string(&File { slurmplan_before: FORMAT, plan, before: before.clone() })
        .map_err(std::io::Error::other)?;
    text.push('\n');
    let mut f =
        OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// `path` opened for reading if slurmplan may trust it as what an apply of this user wrote: a
/// regular file (not through a symlink) of this user, with one link, that neither group nor
/// others may write (an undo plan is made from what it says).
fn open_own(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::MetadataExt;
    let file = slurmplan_input::open_regular_nofollow(path).map_err(|e| e.to_string())?;
    if let Some(why) = super::lock::not_own_file(&file) {
        return Err(why);
    }
    let mode = file.metadata().map_err(|e| e.to_string())?.mode();
    if mode & 0o022 != 0 {
        return Err(format!("group or other users may write it (mode {:04o}); an apply writes it 0600", mode & 0o7777));
    }
    Ok(file)
}

/// The plan and the saved scope of a before file (a file [`open_own`] trusts, read bounded).
pub fn read(path: &Path) -> Result<(Plan, Before), String> {
    let bytes = slurmplan_input::read_opened(open_own(path)?).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| slurmplan_input::InputError::NotText.to_string())?;
    let file: File = serde_json::from_str(&text).map_err(|e| format!("it is not a slurmplan before file: {e}"))?;
    if file.slurmplan_before != FORMAT {
        return Err(format!("it has layout {}; this slurmplan reads {FORMAT}", file.slurmplan_before));
    }
    let plan = slurmplan_plan::file::from_json(path, &file.plan.to_string()).map_err(|e| e.to_string())?;
    Ok((plan, file.before))
}

/// What a journal says of its last apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Its before file, as named in the journal.
    pub before: PathBuf,
    /// The steps the plan has.
    pub steps: usize,
    pub ran: Ran,
}

/// The last apply of the journal at `path`: its `apply` line, then the steps that finished
/// with success one after the other from step 1, and whether the next one started (it failed,
/// or the apply was killed while it ran). Only a journal [`open_own`] trusts (it names the
/// before file), read at most [`super::journal::MAX_JOURNAL_BYTES`].
pub fn applied(path: &Path) -> Result<Applied, String> {
    let file = open_own(path)?;
    let mut last: Option<Applied> = None;
    for line in std::io::BufReader::new(file.take(super::journal::MAX_JOURNAL_BYTES)).lines() {
        let line = line.map_err(|e| e.to_string())?;
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        let event = v.get("event").and_then(|e| e.as_str());
        let step = v.get("step").and_then(|s| s.as_u64()).map(|s| s as usize);
        match (event, &mut last) {
            (Some("apply"), _) => {
                let before = v.get("before").and_then(|b| b.as_str()).ok_or("an `apply` line names no before file")?;
                let steps = v.get("steps").and_then(|s| s.as_u64()).unwrap_or(0) as usize;
                last = Some(Applied { before: PathBuf::from(before), steps, ran: Ran { done: 0, maybe: false } });
            }
            (Some("started"), Some(a)) if step == Some(a.ran.done + 1) && !a.ran.maybe => a.ran.maybe = true,
            (Some("finished"), Some(a))
                if step == Some(a.ran.done + 1)
                    && a.ran.maybe
                    && v.get("result").and_then(|r| r.as_str()) == Some("ok") =>
            {
                a.ran = Ran { done: a.ran.done + 1, maybe: false };
            }
            _ => {}
        }
    }
    last.ok_or_else(|| {
        "it records no apply with a before file (a journal written by an older slurmplan, or not a journal)".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_tells_how_far_its_last_apply_got() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("j.jsonl");
        let lines = |body: &str| std::fs::write(&j, body).unwrap();
        lines(
            "{\"event\":\"apply\",\"before\":\"/x/a.json\",\"steps\":3}\n\
             {\"event\":\"started\",\"step\":1}\n{\"event\":\"finished\",\"step\":1,\"result\":\"ok\"}\n\
             {\"event\":\"started\",\"step\":2}\n{\"event\":\"finished\",\"step\":2,\"result\":\"failed\"}\n",
        );
        let a = applied(&j).unwrap();
        assert_eq!(a.before, PathBuf::from("/x/a.json"));
        assert_eq!((a.steps, a.ran), (3, Ran { done: 1, maybe: true }));
        // killed while step 1 ran
        lines("{\"event\":\"apply\",\"before\":\"b\",\"steps\":2}\n{\"event\":\"started\",\"step\":1}\n");
        assert_eq!(applied(&j).unwrap().ran, Ran { done: 0, maybe: true });
        // the last apply of a journal two applies share; a stop after step 2
        lines(
            "{\"event\":\"apply\",\"before\":\"b1\",\"steps\":1}\n{\"event\":\"started\",\"step\":1}\n\
             {\"event\":\"finished\",\"step\":1,\"result\":\"ok\"}\n\
             {\"event\":\"apply\",\"before\":\"b2\",\"steps\":4}\n{\"event\":\"started\",\"step\":1}\n\
             {\"event\":\"finished\",\"step\":1,\"result\":\"ok\"}\n{\"event\":\"started\",\"step\":2}\n\
             {\"event\":\"finished\",\"step\":2,\"result\":\"ok\"}\n{\"event\":\"stopped\",\"signal\":\"SIGTERM\"}\n",
        );
        let a = applied(&j).unwrap();
        assert_eq!((a.before, a.steps, a.ran), (PathBuf::from("b2"), 4, Ran { done: 2, maybe: false }));
        lines("{\"event\":\"started\",\"step\":1}\n");
        assert!(applied(&j).unwrap_err().contains("records no apply"));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&j, &link).unwrap();
        assert!(applied(&link).is_err());
        // a journal others may write is not trusted (it names the before file)
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&j, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(applied(&j).unwrap_err().contains("may write it (mode 0666)"));
    }

    #[test]
    fn a_before_file_is_new_private_and_not_written_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = path_for(&dir.path().join("slurmplan-apply-1.jsonl"), "T-1");
        assert_eq!(p, dir.path().join("slurmplan-apply-1.before-T-1.json"));
        let plan = Plan {
            format_version: slurmplan_plan::FORMAT_VERSION,
            generator: "t".into(),
            current_fingerprint: "f".into(),
            desired_hash: "h".into(),
            changes: vec![],
            steps: vec![],
            summary: Default::default(),
            warnings: vec![],
            lints: vec![],
            scope: None,
        };
        let before = Before::default();
        write(&p, &plan, &before).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(write(&p, &plan, &before).is_err(), "never over an existing file");
        assert_eq!(read(&p).unwrap(), (plan.clone(), before.clone()));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert!(read(&p).unwrap_err().contains("may write it"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&p, &hard).unwrap();
        assert!(read(&p).unwrap_err().contains("hard links"));
        std::fs::remove_file(&hard).unwrap();
        let precious = dir.path().join("precious");
        std::fs::write(&precious, "keep").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        assert!(write(&link, &plan, &before).is_err());
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep");
    }
}
