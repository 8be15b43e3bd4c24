//! The fake sacctmgr's state directory (crates/dev, `FAKE_SACCTMGR_DIR`) as tests change and
//! watch it: a second cluster beside site-a's `rocket`, a state file rewritten with its
//! manifest, and the reads the fake received (its argv log). Must not change anything but the
//! state directory it is given, nor decide what a test asserts.

use std::path::Path;

/// A second cluster `other` beside site-a's `rocket` in the fake's state at `state` (its root
/// and root user). The fake's state is a snapshot: its manifest records each file's size and
/// SHA-256.
pub fn add_other_cluster(state: &Path) {
    let append = |file: &str, text: &str| {
        let mut t = std::fs::read_to_string(state.join(file)).unwrap();
        t.push_str(text);
        rewrite_with_manifest(state, file, &t);
    };
    append("clusters.txt", "other\n");
    append("assocs.txt", "other|root||||1|||||||||||normal|\nother|root|root|||1||||||||||||\n");
    append("defaults.txt", "other|root|root\n");
}

/// Write `text` as the fake's state file `file`, and its size and digest into the manifest.
pub fn rewrite_with_manifest(state: &Path, file: &str, text: &str) {
    use sha2::Digest;
    let manifest_path = state.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let sha: String = sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    manifest["files"][file] = serde_json::json!({"bytes": text.len(), "sha256": sha});
    std::fs::write(&manifest_path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    std::fs::write(state.join(file), text).unwrap();
}

/// The fake's reads since the last call (its argv log, emptied): of `rocket`, of `other`
/// (per-cluster reads), and of users by name on every cluster.
pub fn reads_since(state: &Path) -> (usize, usize, usize) {
    let log = std::fs::read_to_string(state.join("argv.log")).unwrap_or_default();
    let _ = std::fs::remove_file(state.join("argv.log"));
    let of =
        |c: &str| log.lines().filter(|l| l.contains("\"show\"") && l.contains(&format!("\"cluster={c}\"]"))).count();
    (of("rocket"), of("other"), log.lines().filter(|l| l.contains("\"format=Cluster,User\"")).count())
}
