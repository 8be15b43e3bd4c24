//! Command-line definition (clap). The names here are a contract with users' scripts and cron
//! jobs (design.md section 3): add, don't rename.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use slurmplan::render::Format;

#[derive(Parser, Debug)]
#[command(name = "slurmplan", version, about = "Plan and apply SLURM accounting changes, Terraform-style", long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Path of sacctmgr (default: `sacctmgr` from PATH)
    #[arg(long, global = true, env = "SLURMPLAN_SACCTMGR", value_name = "PATH")]
    pub sacctmgr: Option<PathBuf>,
    /// Words to run sacctmgr through, e.g. "ssh head1 --" (split on whitespace, never a shell)
    #[arg(long, global = true, env = "SLURMPLAN_EXEC_PREFIX", value_name = "WORDS")]
    pub exec_prefix: Option<String>,
    /// Colour: auto (when stdout is a terminal and NO_COLOR is unset), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Seconds before a sacctmgr call is killed
    #[arg(long, global = true, default_value_t = 120, value_name = "SECONDS")]
    pub timeout: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Capture the live state (the exact sacctmgr reads) into a snapshot directory
    Dump(DumpArgs),
    /// Compute the ordered plan that turns the current state into the desired one
    Plan(PlanArgs),
    /// Show a saved plan file
    Show(ShowArgs),
    /// Check a desired-state file (and, with --state, resolve it against a snapshot)
    Validate(ValidateArgs),
}

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Directory to write (created if missing; existing snapshot files are replaced)
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct StateArgs {
    /// Read the current state from a snapshot directory instead of live sacctmgr
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Desired-state YAML file
    #[arg(short, long, value_name = "FILE")]
    pub desired: PathBuf,
    #[command(flatten)]
    pub state: StateArgs,
    /// Write the plan file (JSON) for `slurmplan apply`
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Exit 2 when the plan has changes (0 = no changes, 1 = error)
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Allow a plan that deletes more than max(20, 10% of managed objects)
    #[arg(long)]
    pub allow_mass_delete: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Plan file written by `slurmplan plan -o`
    pub plan: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Desired-state YAML file
    pub desired: PathBuf,
    /// Also resolve against this snapshot directory (checks parents, QoS, clusters exist)
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}
