//! `slurmplan export`: print a desired YAML that reproduces the current state for a managed
//! scope (default: everything under `root` on every cluster), so a site can adopt what it has.
//! The YAML goes to stdout; what could not be reproduced exactly is a warning on stderr.
//! Reads only: must not change the accounting state or write files.

use clap::Args;
use slurmplan::desired::export::{self, ExportOptions};
use slurmplan::model::{Name, NameKind};

use super::args::StateArgs;
use super::print::{print_diags, write_stdout};
use super::settings::Settings;
use super::state::current_state;
use super::{EXIT_OK, EXIT_USAGE, Failure, Outcome};

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub state: StateArgs,
    /// Manage accounts whose name starts with P (repeatable)
    #[arg(long = "managed-prefix", value_name = "P")]
    pub prefixes: Vec<String>,
    /// Manage the subtree under account R, R included (repeatable; default: root)
    #[arg(long = "managed-root", value_name = "R")]
    pub roots: Vec<String>,
}

fn names(items: &[String], kind: NameKind, flag: &str) -> Result<Vec<Name>, Failure> {
    items
        .iter()
        .map(|s| {
            Name::parse(s, kind, false)
                .map(|p| p.name)
                .map_err(|e| Failure::new(format!("`{flag}`: {e}")).hint(e.hint.clone()).code(EXIT_USAGE))
        })
        .collect()
}

pub fn run(s: &Settings, a: ExportArgs) -> Outcome {
    let opts = ExportOptions {
        roots: names(&a.roots, NameKind::Account, "--managed-root")?,
        prefixes: names(&a.prefixes, NameKind::Account, "--managed-prefix")?
            .into_iter()
            .map(|n| n.as_str().to_string())
            .collect(),
        clusters: names(&s.clusters, NameKind::Cluster, "--cluster")?,
    };
    let current = current_state(s, a.state.state.as_deref())?;
    let exported = export::export(&current, &opts).map_err(|mut d| {
        print_diags(&mut d);
        Failure::new("nothing was exported")
    })?;
    let mut w = exported.warnings.clone();
    print_diags(&mut w);
    // slurmdbd may hold names a desired file cannot (`acc sp`, `a\b`): an export that would
    // not load is refused here, naming them, rather than printed.
    if let Err(mut d) = slurmplan::desired::load_str(std::path::Path::new("<export>"), &exported.yaml) {
        d.retain(|d| d.is_error());
        print_diags(&mut d);
        return Err(Failure::new("the managed scope holds names a desired file cannot (above); nothing was exported")
            .hint("narrow the scope with --managed-root / --managed-prefix to leave those objects out (they are then left as they are), or rename them in slurmdbd"));
    }
    write_stdout(exported.yaml.as_bytes())?;
    let (c, ac, u, q) = exported.counts;
    eprintln!("exported {c} cluster(s), {ac} account(s), {u} user association(s), {q} QoS");
    Ok(EXIT_OK)
}
