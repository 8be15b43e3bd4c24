//! The layering of docs/architecture.md, held by a test: the table there is the input, so the
//! document and the code cannot drift apart.
//!
//! Every file under src/ belongs to the module named by its first path component (`src/plan/
//! build.rs` -> `plan`, `src/diff.rs` -> `diff`; `src/main.rs`, `src/cli` and `src/bin` -> `cli`).
//! Each `crate::M` path (`slurmplan::M` in the binaries) outside comments is an import of module
//! `M`; it must name a module of a lower layer, or the file's own module. Same-layer siblings
//! and higher layers fail. `src/lib.rs` only declares the modules and is not read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Module -> layer, from the table in docs/architecture.md: rows `| N | `m` ... |`, every
/// backticked name in the module column (before any parenthesis) is a module of layer N.
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
                    "docs/architecture.md names module `{part}` in two rows"
                );
            }
        }
    }
    out
}

/// The module a file under src/ belongs to.
fn module_of(rel: &Path) -> String {
    let first = rel.components().next().expect("a path under src/").as_os_str().to_string_lossy().into_owned();
    match first.as_str() {
        "main.rs" | "bin" => "cli".into(),
        f => f.trim_end_matches(".rs").into(),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The modules a file's text names through `crate::` (or `slurmplan::`), with line numbers;
/// `crate::{a, b::c}` names `a` and `b`. Comment lines are left out.
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        for root in ["crate::", "slurmplan::"] {
            let mut rest = code;
            while let Some(at) = rest.find(root) {
                let before = rest[..at].chars().last();
                rest = &rest[at + root.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue; // `my_crate::x`
                }
                if let Some(group) = rest.strip_prefix('{') {
                    // Top-level names of the group, up to its closing brace.
                    let (mut depth, mut name, mut names) = (0, String::new(), Vec::new());
                    for c in group.chars() {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => break,
                            '}' => depth -= 1,
                            ',' if depth == 0 => names.push(std::mem::take(&mut name)),
                            _ if depth == 0 => name.push(c),
                            _ => {}
                        }
                    }
                    names.push(name);
                    for n in names {
                        let m: String = n.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if !m.is_empty() {
                            out.push((no + 1, m));
                        }
                    }
                } else {
                    let m: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if !m.is_empty() {
                        out.push((no + 1, m));
                    }
                }
            }
        }
    }
    out
}

/// Every import that breaks the table, as `path:line: ...`.
fn violations(root: &Path, table: &BTreeMap<String, u32>) -> Vec<String> {
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        if rel == Path::new("lib.rs") {
            continue; // the crate root: it declares the modules and imports none
        }
        let own = module_of(rel);
        let Some(&layer) = table.get(&own) else {
            bad.push(format!("src/{}: module `{own}` is not in the table of docs/architecture.md", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, m) in imports(&text) {
            if m == own || m == "self" || m == "super" {
                continue;
            }
            match table.get(&m) {
                Some(&l) if l < layer => {}
                Some(&l) => bad.push(format!(
                    "src/{}:{line}: `{own}` (layer {layer}) imports `{m}` (layer {l}); only lower layers may be imported",
                    rel.display()
                )),
                None if own == "cli" => {} // `slurmplan::` is also the binary's name in messages
                None => bad.push(format!(
                    "src/{}:{line}: `{own}` imports `{m}`, which is not in the table of docs/architecture.md",
                    rel.display()
                )),
            }
        }
    }
    bad
}

#[test]
fn every_import_goes_to_a_lower_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = layers(&std::fs::read_to_string(root.join("docs/architecture.md")).unwrap());
    for m in ["cli", "pipeline", "plan", "rules", "sacctmgr", "model"] {
        assert!(table.contains_key(m), "the table of docs/architecture.md lost `{m}`: {table:?}");
    }
    let bad = violations(root, &table);
    assert!(bad.is_empty(), "imports that break docs/architecture.md's layers:\n{}", bad.join("\n"));
}

#[test]
fn the_reader_sees_grouped_and_plain_paths_and_skips_comments() {
    let text = "use crate::{diff::{self, Change}, model::State};\n// crate::cli\nlet x = crate::plan::make_plan(a);\nuse slurmplan::apply;\nmy_crate::render";
    let got: Vec<(usize, String)> = imports(text);
    let want: Vec<(usize, String)> =
        vec![(1, "diff".into()), (1, "model".into()), (3, "plan".into()), (4, "apply".into())];
    assert_eq!(got, want);
    let table = layers("| layer | module |\n|---|---|\n| 2 | `a` (`src/a`) | x |\n| 1 | `b`, `c` | y |\n");
    assert_eq!(table, BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 1), ("c".to_string(), 1)]));
}

/// The command-line parser belongs to `cli`: a library module that names clap (a derive of
/// `clap::ValueEnum` on a view's format, say) depends on how the binary parses its flags.
#[test]
fn only_the_cli_names_the_command_line_parser() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        if module_of(rel) == "cli" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (no, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && (code.contains("clap::") || code.starts_with("use clap")) {
                bad.push(format!("src/{}:{}: {}", rel.display(), no + 1, code));
            }
        }
    }
    assert!(bad.is_empty(), "library modules that name clap (map flags in src/cli instead):\n{}", bad.join("\n"));
}
