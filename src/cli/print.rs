//! Where the commands' results go: diagnostics to stderr (warnings capped per code), data to
//! stdout, files written atomically. Every command prints through these.
//!
//! Must not: decide exit codes, read inputs, or format a plan itself (`slurmplan::render` does).

use std::io::Write;
use std::path::Path;

use slurmplan::diag::{self, Diagnostic};
use slurmplan::plan::Plan;
use slurmplan::render::{self, Format, Options};

use super::Failure;

/// Print diagnostics to stderr; return whether any was an error.
/// Errors are all printed; warnings at most 20 per code, then a count (a large site can
/// produce thousands of identical warnings).
pub fn print_diags(diags: &mut [Diagnostic]) -> bool {
    const MAX_WARNINGS_PER_CODE: usize = 20;
    diag::sort(diags);
    let mut seen: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for d in diags.iter() {
        let n = seen.entry(d.code).or_insert(0);
        *n += 1;
        if d.is_error() || *n <= MAX_WARNINGS_PER_CODE {
            eprintln!("{d}");
        }
    }
    for (code, n) in &seen {
        let warnings = diags.iter().filter(|d| d.code == *code && !d.is_error()).count();
        if warnings > MAX_WARNINGS_PER_CODE && *n > MAX_WARNINGS_PER_CODE {
            eprintln!("warning[{code}]: ... and {} more like these", warnings - MAX_WARNINGS_PER_CODE);
        }
    }
    diag::has_errors(diags)
}

/// Print `diags` and fail with `message(number of errors)`.
pub fn failed(diags: &mut [Diagnostic], message: impl FnOnce(usize) -> String) -> Failure {
    print_diags(diags);
    Failure::new(message(diags.iter().filter(|d| d.is_error()).count()))
}

/// Write `bytes` to stdout and flush.
pub fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut o = std::io::stdout().lock();
    o.write_all(bytes).and_then(|_| o.flush()).map_err(|e| Failure::new("cannot write to stdout").cause(e.to_string()))
}

/// Render `plan` in `format` to stdout.
pub fn emit(plan: &Plan, format: Format, color: bool) -> Result<(), Failure> {
    // Block-buffered: stdout's line buffering makes one write per line of a large JSON plan.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    render::render(plan, format, &Options { color }, &mut out)
        .and_then(|_| out.flush())
        .map_err(|e| Failure::new("cannot write to stdout").cause(e.to_string()))
}

/// Write a file atomically and durably (`slurmplan::output`: temp file created new, synced,
/// renamed, the directory synced).
pub fn write_atomic(path: &Path, text: &str) -> Result<(), Failure> {
    slurmplan::output::write_atomic(path, text.as_bytes())
        .map_err(|e| Failure::new(format!("cannot write `{}`", path.display())).cause(e.to_string()))
}
