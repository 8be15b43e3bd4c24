//! `slurmplan waldur build`: agent config + Waldur export -> desired YAML. Reads the two inputs,
//! calls `slurmplan::waldur`, prints warnings to stderr, and writes the output atomically (nothing
//! is written on error). The config's API token never reaches this module: the library drops it.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use slurmplan::waldur::{self, BuildOptions};

use super::commands::{failed, print_diags, write_atomic};
use super::{EXIT_OK, Failure, Outcome};

#[derive(Subcommand, Debug)]
pub enum WaldurCmd {
    /// Build a desired-state file from a Waldur export and the site agent's config
    Build(BuildArgs),
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The site's waldur-site-agent-config.yaml
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Offering name (required when the config has several SLURM offerings)
    #[arg(long, value_name = "NAME")]
    pub offering: Option<String>,
    /// Directory of Waldur API responses (resources*.json, team-<uuid>*.json, offering-users*.json)
    #[arg(long, value_name = "DIR")]
    pub export: PathBuf,
    /// Desired-state YAML to write
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Accept an export with no live resource (the plan's mass-delete guard still applies)
    #[arg(long)]
    pub allow_empty: bool,
}

pub fn run(g: &super::args::Global, cmd: WaldurCmd) -> Outcome {
    match cmd {
        WaldurCmd::Build(a) => build(g, a),
    }
}

fn build(g: &super::args::Global, a: BuildArgs) -> Outcome {
    let cluster = match g.clusters.as_slice() {
        [] => None,
        [c] => Some(c.clone()),
        _ => {
            return Err(Failure::new("`waldur build` writes one cluster: give --cluster once").code(super::EXIT_USAGE));
        }
    };
    let text = std::fs::read_to_string(&a.config)
        .map_err(|e| Failure::new(format!("cannot read `{}`", a.config.display())).cause(e.to_string()))?;
    let loaded = waldur::load_config(&a.config, &text, a.offering.as_deref());
    drop(text);
    let (settings, mut warnings) = loaded.map_err(|mut d| {
        failed(&mut d, |n| format!("`{}` has {n} configuration error(s); nothing was written", a.config.display()))
    })?;
    let export = waldur::load_export(&a.export).map_err(|mut d| {
        print_diags(&mut warnings);
        failed(&mut d, |n| format!("the export in `{}` has {n} error(s); nothing was written", a.export.display()))
    })?;
    let built = waldur::build(&settings, &export, &BuildOptions { cluster }).map_err(|mut d| {
        warnings.append(&mut d);
        print_diags(&mut warnings);
        Failure::new("cannot build the desired state; nothing was written")
    })?;
    warnings.extend(built.warnings.iter().cloned());
    print_diags(&mut warnings);
    for i in &built.infos {
        eprintln!("info: {i}");
    }
    if built.live == 0 && !a.allow_empty {
        return Err(Failure::new(format!(
            "the export in `{}` has no live resource ({} in total); nothing was written",
            a.export.display(),
            built.resources
        ))
        .cause("a desired state without resources removes every account slurmplan manages for this offering; a failed or truncated export looks exactly like this")
        .hint("check the export (see docs/waldur.md); if the offering really has no resources, pass --allow-empty (plan then still needs --allow-mass-delete)"));
    }
    // The output must load: a build that slurmplan itself cannot read is a bug, not a file.
    if let Err(mut d) = slurmplan::desired::load_str(&a.output, &built.yaml) {
        print_diags(&mut d);
        return Err(Failure::new("the generated desired state does not load; nothing was written")
            .hint("this is a slurmplan bug; please report it with the config (token removed) and the export"));
    }
    write_atomic(&a.output, &built.yaml)?;
    eprintln!(
        "wrote {}: {} live of {} resource(s), {} allocation account(s), {} account(s), {} user(s); review with: slurmplan plan -d {}",
        a.output.display(),
        built.live,
        built.resources,
        built.allocations,
        built.accounts,
        built.users,
        a.output.display()
    );
    Ok(EXIT_OK)
}
