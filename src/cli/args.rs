//! Command-line definition (clap). The names here are a contract with users' scripts and cron
//! jobs: add, don't rename.

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
    /// The site's waldur-site-agent-config.yaml: without --sacctmgr, sacctmgr is taken from its
    /// `slurm_bin_path` (default /usr/bin). The API token in it is never read out or printed.
    #[arg(long, global = true, env = "SLURMPLAN_AGENT_CONFIG", value_name = "FILE")]
    pub agent_config: Option<PathBuf>,
    /// Work on cluster C only (repeatable): plan/apply/drift ignore the desired file's other
    /// clusters, export writes only C, `waldur build` uses C when the config has no cluster_name
    #[arg(long = "cluster", global = true, value_name = "C")]
    pub clusters: Vec<String>,
    /// Run sacctmgr on DEST over ssh (`ssh -o BatchMode=yes DEST -- 'sacctmgr' -i ...`): every
    /// word is quoted for the remote POSIX shell, so each byte of each argument arrives as it is
    #[arg(long, global = true, env = "SLURMPLAN_SSH", value_name = "DEST")]
    pub ssh: Option<String>,
    /// Words to run sacctmgr through that keep its argv intact, e.g. "kubectl exec -i -n slurm
    /// POD --" (Slinky) or "sudo -u slurm" (split on whitespace, never a shell; with --ssh they
    /// run on DEST). Not for ssh, which joins words into a shell line: use --ssh
    #[arg(long, global = true, env = "SLURMPLAN_EXEC_PREFIX", value_name = "WORDS")]
    pub exec_prefix: Option<String>,
    /// How slurmdbd is read and written: `sacctmgr` (run locally, through --exec-prefix or over
    /// --ssh) or `rest` (slurmrestd at --rest-url, Slurm 24.11 and later; a plan holding a step
    /// slurmrestd cannot write is refused by apply before anything is sent). Default: `rest`
    /// when --agent-config says `execution_mode: rest`, else `sacctmgr`
    #[arg(long, global = true, value_enum, env = "SLURMPLAN_TRANSPORT")]
    pub transport: Option<TransportChoice>,
    /// slurmrestd's URL for --transport rest: https://HOST:PORT[/PREFIX] (plain http only to a
    /// loopback address)
    #[arg(long, global = true, env = "SLURMPLAN_REST_URL", value_name = "URL")]
    pub rest_url: Option<String>,
    /// File holding the JWT for --transport rest (private to its owner); without it the
    /// SLURM_JWT variable. Sent only as X-SLURM-USER-TOKEN, never printed
    #[arg(long, global = true, env = "SLURMPLAN_REST_TOKEN_FILE", value_name = "FILE")]
    pub rest_token_file: Option<PathBuf>,
    /// X-SLURM-USER-NAME for --transport rest (default: the user the token names)
    #[arg(long, global = true, env = "SLURMPLAN_REST_USER", value_name = "NAME")]
    pub rest_user: Option<String>,
    /// PEM file of the CA(s) slurmrestd's certificate is checked against, instead of the
    /// built-in roots
    #[arg(long, global = true, env = "SLURMPLAN_REST_CA_CERT", value_name = "FILE")]
    pub rest_ca_cert: Option<PathBuf>,
    /// Colour: auto (when stdout is a terminal and NO_COLOR is unset), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Seconds before a sacctmgr call is killed
    #[arg(long, global = true, default_value_t = 120, value_name = "SECONDS")]
    pub timeout: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransportChoice {
    Sacctmgr,
    Rest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// `--format` of `plan` and `show`: the names of the views of `slurmplan::render::Format`
/// (the parser's side of the mapping, so `render` does not depend on clap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Text,
    Json,
    Diff,
    Table,
    Script,
    Markdown,
}

impl From<PlanFormat> for Format {
    fn from(f: PlanFormat) -> Format {
        match f {
            PlanFormat::Text => Format::Text,
            PlanFormat::Json => Format::Json,
            PlanFormat::Diff => Format::Diff,
            PlanFormat::Table => Format::Table,
            PlanFormat::Script => Format::Script,
            PlanFormat::Markdown => Format::Markdown,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Capture the live state (the exact sacctmgr reads) into a snapshot directory
    Dump(DumpArgs),
    /// Compute the ordered plan that turns the current state into the desired one
    Plan(PlanArgs),
    /// Run a saved plan (or plan from -d, show it, and ask), then verify the result
    Apply(ApplyArgs),
    /// Plan taking back what an apply changed (from its journal), to review and apply like any plan
    Undo(super::undo::UndoArgs),
    /// Show a saved plan file
    Show(ShowArgs),
    /// Check a desired-state file (and, with --state, resolve it against a snapshot)
    Validate(ValidateArgs),
    /// Report drift from a desired file (exit 0 in sync, 2 drifted, 1 error); for cron
    Drift(super::drift::DriftArgs),
    /// Find broken accounting (dangling DefaultAccounts, DefaultQOS outside QoS, ...) and repair it
    Doctor(super::doctor::DoctorArgs),
    /// Write a desired YAML that reproduces the current state (adopt an existing cluster)
    Export(super::export::ExportArgs),
    /// Draw the account tree per cluster (Graphviz DOT or Mermaid), with a plan's changes coloured
    Graph(super::graph::GraphArgs),
    /// Print shell completions (bash, zsh, fish) generated from this command line
    Completions(super::generate::CompletionsArgs),
    /// Print the man page (roff) generated from this command line
    Man(super::generate::ManArgs),
    /// One converge cycle (or one every --interval): plan, apply what the policy lets run
    /// unattended, keep the rest as a pending plan for review, write metrics
    Reconcile(super::reconcile::ReconcileArgs),
    /// Waldur integration: fetch from the Waldur API, build a desired state with the site agent's config
    #[command(subcommand)]
    Waldur(super::waldur::WaldurCmd),
}

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Directory to write (created if missing; existing snapshot files are replaced)
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub rest_ca: RestCaArg,
}

#[derive(Args, Debug, Clone)]
pub struct StateArgs {
    /// Read the current state from a snapshot directory instead of live sacctmgr
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    #[command(flatten)]
    pub rest_ca: RestCaArg,
}

/// `--ca-cert` of the commands that read or write through slurmrestd and never reach Waldur:
/// the global `--rest-ca-cert` under the shorter name (`waldur` and `reconcile` keep
/// `--ca-cert` for the Waldur API's CA, so the global flag cannot take it).
#[derive(Args, Debug, Clone, Default)]
pub struct RestCaArg {
    /// PEM file of the CA(s) slurmrestd's certificate is checked against (the same as
    /// --rest-ca-cert)
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Desired-state YAML file
    #[arg(short, long, value_name = "FILE")]
    pub desired: PathBuf,
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub out: PlanOutput,
    #[command(flatten)]
    pub planning: PlanningArgs,
}

/// What becomes of a plan once made (`plan`, `undo`): saved, printed, and the exit code.
#[derive(Args, Debug)]
pub struct PlanOutput {
    /// Write the plan file (JSON) for `slurmplan apply`
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
    /// Exit 2 when the plan has changes (0 = no changes, 1 = error)
    #[arg(long)]
    pub detailed_exitcode: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Plan file written by `slurmplan plan -o`
    pub plan: PathBuf,
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Desired-state YAML file
    pub desired: PathBuf,
    /// Also resolve against this snapshot directory (checks parents, QoS, clusters exist)
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// Plan file written by `slurmplan plan -o` (applied without a question: it was reviewed)
    #[arg(conflicts_with = "desired", required_unless_present = "desired")]
    pub plan: Option<PathBuf>,
    /// Plan from this desired-state file now, show the plan, and ask before applying
    #[arg(short, long, value_name = "FILE")]
    pub desired: Option<PathBuf>,
    /// Do not ask for confirmation (for cron and CI)
    #[arg(long)]
    pub auto_approve: bool,
    /// Skip re-reading the state after the last step
    #[arg(long)]
    pub no_verify: bool,
    /// Journal file (JSON Lines); default: slurmplan-apply-<time>-<pid>.jsonl in the lock directory
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Directory of the lock files, one per cluster and one for QoS and account records (default:
    /// /run/slurmplan for root, $XDG_RUNTIME_DIR/slurmplan otherwise, created 0700); it must be
    /// writable by you alone, or owned by you and sticky
    #[arg(long, env = "SLURMPLAN_LOCK_DIR", value_name = "DIR")]
    pub lock_dir: Option<PathBuf>,
    /// Seconds to wait for another apply on the same cluster to finish
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub lock_timeout: u64,
    #[command(flatten)]
    pub planning: PlanningArgs,
    #[command(flatten)]
    pub rest_ca: RestCaArg,
}

/// How a plan is built (shared by `plan` and `apply -d`).
#[derive(Args, Debug, Clone)]
pub struct PlanningArgs {
    /// Allow a plan that deletes more than max(20, 10% of managed objects)
    #[arg(long)]
    pub allow_mass_delete: bool,
    /// One sacctmgr command per object instead of batches (for measuring; slower)
    #[arg(long)]
    pub no_batch: bool,
    /// Plan only the change at ADDR (e.g. account.CLUSTER.NAME) and what it strictly needs (repeatable)
    #[arg(long = "target", value_name = "ADDR")]
    pub targets: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each view of `render::Format` has its `--format` value, mapped to that view (the match is
    /// exhaustive: a view added to `render` without a value here does not compile).
    #[test]
    fn every_view_has_its_format_value() {
        for f in [Format::Text, Format::Json, Format::Diff, Format::Table, Format::Script, Format::Markdown] {
            let v = match f {
                Format::Text => PlanFormat::Text,
                Format::Json => PlanFormat::Json,
                Format::Diff => PlanFormat::Diff,
                Format::Table => PlanFormat::Table,
                Format::Script => PlanFormat::Script,
                Format::Markdown => PlanFormat::Markdown,
            };
            assert_eq!(Format::from(v), f);
            let name = v.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(name, format!("{f:?}").to_lowercase());
        }
    }
}
