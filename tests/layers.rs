//! The layering of docs/architecture.md, held by a test: the table there is the input, so the
//! document and the workspace cannot drift apart.
//!
//! Each layer is a crate of the workspace, and the compiler lets a crate use only the crates its
//! Cargo.toml names; so the rule is checked where it is decided, in the manifests: every
//! dependency (normal, dev or build) of a workspace crate on another workspace crate must go to a
//! crate of a lower layer. A crate of the same layer or of a higher one fails, and so does a crate
//! the table does not name, or a row whose crate is not in the workspace. Must not: read the Rust
//! sources (the compiler holds them to their manifests).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Crate (package name) -> layer, from the table in docs/architecture.md: rows `| N | `c` ... |`;
/// every backticked name in the crate column (before any parenthesis) is a crate of layer N.
fn layers(doc: &str) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let Ok(layer) = cells[1].parse::<u32>() else { continue };
        let column = cells[2].split('(').next().unwrap_or("");
        for (i, part) in column.split('`').enumerate() {
            if i % 2 == 1 {
                assert!(
                    out.insert(part.to_string(), layer).is_none(),
                    "docs/architecture.md names crate `{part}` in two rows"
                );
            }
        }
    }
    out
}

/// A package's manifest, as far as this test needs it: its name and the packages it depends on
/// (any dependency section; a renamed dependency by its `package`).
#[derive(Debug, PartialEq)]
struct Manifest {
    name: String,
    deps: Vec<String>,
}

/// Read a Cargo.toml: `name` of `[package]`, and the keys of `[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]` (and their `[target.X.…]` forms), written as
/// `key = …`, `key.workspace = true` or as a table `[dependencies.key]`.
fn manifest(text: &str) -> Manifest {
    let (mut name, mut deps, mut section) = (String::new(), Vec::new(), String::new());
    let is_deps = |s: &str| {
        let last = s.rsplit('.').next().unwrap_or(s);
        !s.starts_with("workspace") && matches!(last, "dependencies" | "dev-dependencies" | "build-dependencies")
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.trim().to_string();
            // `[dependencies.key]`: a dependency written as a table
            if let Some((table, key)) = section.rsplit_once('.')
                && is_deps(table)
            {
                deps.push(key.trim().to_string());
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim();
        if section == "package" && key == "name" {
            name = value.trim().trim_matches('"').to_string();
        } else if is_deps(&section) {
            let renamed = value.split("package").nth(1).and_then(|v| v.split('"').nth(1));
            deps.push(renamed.unwrap_or_else(|| key.split('.').next().unwrap_or(key).trim()).to_string());
        }
    }
    Manifest { name, deps }
}

/// The workspace's manifests: the root package's and every crates/*/Cargo.toml.
fn workspace(root: &Path) -> Vec<(PathBuf, Manifest)> {
    let mut paths = vec![root.join("Cargo.toml")];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        let p = e.unwrap().path().join("Cargo.toml");
        if p.is_file() {
            paths.push(p);
        }
    }
    paths.sort();
    paths.into_iter().map(|p| (p.clone(), manifest(&std::fs::read_to_string(&p).unwrap()))).collect()
}

/// Every dependency that breaks the table, and every crate the table and the workspace do not
/// both know, as `path: ...`.
fn violations(crates: &[(PathBuf, Manifest)], table: &BTreeMap<String, u32>) -> Vec<String> {
    let mut bad = Vec::new();
    let members: Vec<&str> = crates.iter().map(|(_, m)| m.name.as_str()).collect();
    for c in table.keys() {
        if !members.contains(&c.as_str()) {
            bad.push(format!("docs/architecture.md: crate `{c}` is not in the workspace"));
        }
    }
    for (path, m) in crates {
        let Some(&layer) = table.get(&m.name) else {
            bad.push(format!("{}: crate `{}` is not in the table of docs/architecture.md", path.display(), m.name));
            continue;
        };
        for d in m.deps.iter().filter(|d| members.contains(&d.as_str())) {
            match table.get(d) {
                Some(&l) if l < layer => {}
                Some(&l) => bad.push(format!(
                    "{}: `{}` (layer {layer}) depends on `{d}` (layer {l}); only lower layers may be used",
                    path.display(),
                    m.name
                )),
                None => {} // reported above as a crate the table does not name
            }
        }
    }
    bad
}

#[test]
fn every_dependency_goes_to_a_lower_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = layers(&std::fs::read_to_string(root.join("docs/architecture.md")).unwrap());
    for c in [
        "slurmplan",
        "slurmplan-pipeline",
        "slurmplan-plan",
        "slurmplan-rules",
        "slurmplan-sacctmgr",
        "slurmplan-model",
    ] {
        assert!(table.contains_key(c), "the table of docs/architecture.md lost `{c}`: {table:?}");
    }
    let crates = workspace(root);
    assert!(crates.len() >= 10, "found only {} crates", crates.len());
    let bad = violations(&crates, &table);
    assert!(bad.is_empty(), "dependencies that break docs/architecture.md's layers:\n{}", bad.join("\n"));
}

#[test]
fn the_reader_sees_every_form_of_dependency_and_the_check_fails_on_a_violation() {
    let text = "[package]\nname = \"slurmplan-a\" # x\n\n[dependencies]\nslurmplan-b.workspace = true\n# slurmplan-z = 1\nserde = { version = \"1\" }\nalias = { package = \"slurmplan-c\", path = \"../c\" }\n\n[dev-dependencies]\nslurmplan-d = { path = \"../d\" }\n\n[target.'cfg(unix)'.dependencies.slurmplan-e]\npath = \"../e\"\n\n[workspace.dependencies]\nslurmplan-f = { path = \"f\" }\n";
    let want = Manifest {
        name: "slurmplan-a".into(),
        deps: ["slurmplan-b", "serde", "slurmplan-c", "slurmplan-d", "slurmplan-e"].map(String::from).to_vec(),
    };
    assert_eq!(manifest(text), want);
    let table = layers("| layer | crate |\n|---|---|\n| 2 | `a` (crates/a) | x |\n| 1 | `b`, `c` | y |\n");
    assert_eq!(table, BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 1), ("c".to_string(), 1)]));
    let m = |name: &str, deps: &[&str]| {
        (PathBuf::from(name), Manifest { name: name.into(), deps: deps.iter().map(|d| d.to_string()).collect() })
    };
    assert!(violations(&[m("a", &["b", "c"]), m("b", &[]), m("c", &["serde"])], &table).is_empty());
    // same layer, higher layer, a crate the table lacks, a row without its crate
    assert_eq!(violations(&[m("a", &["b"]), m("b", &["c"]), m("c", &[])], &table).len(), 1);
    assert_eq!(violations(&[m("a", &[]), m("b", &["a"]), m("c", &[])], &table).len(), 1);
    assert_eq!(violations(&[m("a", &[]), m("b", &[]), m("c", &[]), m("x", &["a"])], &table).len(), 1);
    assert_eq!(violations(&[m("a", &[]), m("b", &[])], &table).len(), 1);
}

/// The command-line parser belongs to the CLI crate: a library crate that uses clap (a derive of
/// `clap::ValueEnum` on a view's format, say) depends on how the binary parses its flags.
#[test]
fn only_the_cli_crate_depends_on_the_command_line_parser() {
    let crates = workspace(Path::new(env!("CARGO_MANIFEST_DIR")));
    let bad: Vec<String> = crates
        .iter()
        .filter(|(_, m)| m.name != "slurmplan")
        .flat_map(|(p, m)| {
            m.deps.iter().filter(|d| d.starts_with("clap")).map(move |d| format!("{}: {d}", p.display()))
        })
        .collect();
    assert!(bad.is_empty(), "library crates that depend on clap (map flags in src/cli instead):\n{}", bad.join("\n"));
}
