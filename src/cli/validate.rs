//! `slurmplan validate`: load a desired file and, with `--state DIR`, resolve it against that
//! snapshot; print a one-line summary.
//!
//! Must not: read sacctmgr live, plan, or write anything. The snapshot is read strictly
//! (`snapshot::load_with_warnings`: a row that cannot be split is an error here, where the
//! other commands leave it out with a warning).

use std::path::Path;

use slurmplan::desired;
use slurmplan::model::State;
use slurmplan::sacctmgr::snapshot;

use super::args::ValidateArgs;
use super::print::{failed, print_diags};
use super::state::unreadable_snapshot;
use super::{EXIT_OK, Failure, Outcome};

pub fn run(a: ValidateArgs) -> Outcome {
    let d = load_desired(&a.desired)?;
    let accounts: usize = d.clusters.values().map(|c| c.accounts.len()).sum();
    let users: usize = d.clusters.values().map(|c| c.users.len()).sum();
    if let Some(dir) = &a.state {
        let current = load_snapshot(dir)?;
        resolve(&d, &current)?;
    }
    println!(
        "{} is valid: {} cluster(s), {} account(s), {} user association(s), {} QoS",
        a.desired.display(),
        d.clusters.len(),
        accounts,
        users,
        d.qos.len()
    );
    Ok(EXIT_OK)
}

/// The desired file, its warnings printed (or its errors, then fail).
fn load_desired(path: &Path) -> Result<desired::Desired, Failure> {
    match desired::load_file(path) {
        Ok(d) => {
            let mut w = d.warnings.clone();
            print_diags(&mut w);
            Ok(d)
        }
        Err(mut diags) => {
            Err(failed(&mut diags, |n| format!("`{}` has {n} error(s); nothing was planned", path.display())))
        }
    }
}

/// A snapshot directory's state; its warnings (no checksums) and errors printed.
fn load_snapshot(dir: &Path) -> Result<State, Failure> {
    match snapshot::load_with_warnings(dir) {
        Ok((state, mut warnings)) => {
            print_diags(&mut warnings);
            Ok(state)
        }
        Err(mut d) => {
            print_diags(&mut d);
            Err(unreadable_snapshot(dir))
        }
    }
}

/// `d` resolved against `current`, its warnings printed (or its errors, then fail).
fn resolve(d: &desired::Desired, current: &State) -> Result<desired::resolve::Resolved, Failure> {
    match desired::resolve::resolve(d, current) {
        Ok(r) => {
            let mut w = r.warnings.clone();
            print_diags(&mut w);
            Ok(r)
        }
        Err(mut diags) => Err(failed(&mut diags, |n| {
            format!("`{}` does not fit the current state ({n} error(s)); nothing was planned", d.path.display())
        })),
    }
}
