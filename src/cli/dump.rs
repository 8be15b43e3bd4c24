//! `slurmplan dump`: take the live reads (the exact sacctmgr output) and write them as a
//! snapshot directory with its manifest, once they parse.
//!
//! Must not: change slurmdbd, or write a snapshot that slurmplan cannot read back.

use slurmplan::diag::Diagnostic;
use slurmplan::model;
use slurmplan::sacctmgr::{live, snapshot};

use super::args::DumpArgs;
use super::print::print_diags;
use super::settings::Settings;
use super::state::read_live;
use super::{EXIT_OK, Failure, Outcome};

pub fn run(s: &Settings, a: DumpArgs) -> Outcome {
    let r = s.reader()?;
    let via = r.describe()?;
    eprintln!("reading the current state live through {via}...");
    let version = live::version(r.transport())
        .map_err(|e| Failure::new(format!("cannot read the Slurm version through {via}")).cause(e.to_string()))?;
    // Parsed before writing: a snapshot slurmplan cannot read back is not written.
    let (raw, state, unsplit) = read_live(r.transport(), live::Keep::Text, live::Clusters::All, true)
        .map_err(|f| f.cause("no snapshot was written"))?;
    let mut w: Vec<Diagnostic> =
        unsplit.iter().map(|u| u.diagnostic(false, "written to the snapshot as printed")).collect();
    print_diags(&mut w);
    let clusters = state.clusters.keys().map(|c| c.to_string()).collect();
    let manifest = snapshot::Manifest::new(version, slurmplan::apply::rfc3339(std::time::SystemTime::now()), clusters);
    snapshot::write_dir(&a.output, &raw.to_files(), &manifest)
        .map_err(|e| Failure::new(format!("cannot write snapshot to `{}`", a.output.display())).cause(e.to_string()))?;
    let users: usize = state.clusters.values().map(|c| c.users.len()).sum();
    let accts: usize = state.clusters.values().map(|c| c.accounts.len()).sum();
    eprintln!(
        "snapshot written to {}: {} cluster(s), {} account association(s), {} user association(s), {} QoS; fingerprint {}",
        a.output.display(),
        state.clusters.len(),
        accts,
        users,
        state.qos.len(),
        model::fingerprint::fingerprint(&state)
    );
    Ok(EXIT_OK)
}
