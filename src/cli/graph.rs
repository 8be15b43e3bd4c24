//! `slurmplan graph`: draw the account tree (DOT or Mermaid), optionally with a saved plan's
//! changes coloured; `slurmplan completions SHELL` and `slurmplan man`, generated from the clap
//! definition.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory, ValueEnum};
use slurmplan::plan;
use slurmplan::render::graph::{self, GraphFormat};

use super::args::{Cli, Global, StateArgs};
use super::commands::current_state;
use super::{EXIT_OK, Failure, Outcome};

#[derive(Args, Debug)]
pub struct GraphArgs {
    #[command(flatten)]
    pub state: StateArgs,
    /// Colour the changes of this saved plan (`slurmplan plan -o FILE`)
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Output format (`dot -Tsvg` turns DOT into SVG; Mermaid renders in Markdown)
    #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
    pub format: GraphFormat,
}

fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut o = std::io::stdout().lock();
    o.write_all(bytes).and_then(|_| o.flush()).map_err(|e| Failure::new("cannot write to stdout").cause(e.to_string()))
}

pub fn run(g: &Global, a: GraphArgs) -> Outcome {
    let plan = match &a.plan {
        Some(p) => Some(
            plan::file::read(p)
                .map_err(|e| Failure::new(e.to_string()).hint("re-create it with `slurmplan plan -o FILE`"))?,
        ),
        None => None,
    };
    let current = current_state(g, a.state.state.as_deref())?;
    if let Some(p) = &plan
        && p.fingerprint_of(&current) != p.current_fingerprint
    {
        eprintln!(
            "warning: the plan was computed against another state than the one drawn; the colours may not fit the tree"
        );
    }
    let mut buf = Vec::new();
    match a.format {
        GraphFormat::Dot => graph::dot(&current, plan.as_ref(), &mut buf),
        GraphFormat::Mermaid => graph::mermaid(&current, plan.as_ref(), &mut buf),
    }
    .expect("writing to a Vec cannot fail");
    write_stdout(&buf)?;
    Ok(EXIT_OK)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to generate completions for
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn completions(a: CompletionsArgs) -> Outcome {
    let shell = match a.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "slurmplan", &mut buf);
    write_stdout(&buf)?;
    Ok(EXIT_OK)
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write one page per command (slurmplan.1, slurmplan-plan.1, ...) into DIR instead
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `.SH X` -> `.SS X` so a subcommand's sections nest under its own heading.
fn demote(roff: &[u8]) -> String {
    String::from_utf8_lossy(roff).lines().map(|l| l.replacen(".SH ", ".SS ", 1) + "\n").collect()
}

/// One page: the main page, then a section per command with its synopsis and options.
fn man_page(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    fn walk(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let man = clap_mangen::Man::new(sub.clone());
            let name = sub.get_display_name().unwrap_or(sub.get_name()).replace('-', " ");
            writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
            if let Some(about) = sub.get_about() {
                writeln!(out, "{about}")?;
            }
            let mut part = Vec::new();
            man.render_synopsis_section(&mut part)?;
            if sub.get_arguments().any(|a| !a.is_hide_set()) {
                man.render_options_section(&mut part)?;
            }
            out.extend(demote(&part).into_bytes());
            walk(sub, out)?;
        }
        Ok(())
    }
    walk(cmd, &mut out)?;
    writeln!(
        out,
        ".SH \"EXIT STATUS\"\n0 success / no changes; 1 error, nothing changed; 2 changes present (with \\fB\\-\\-detailed\\-exitcode\\fR), drift or findings; 3 apply stopped part\\-way or did not converge; 64 usage error."
    )?;
    Ok(out)
}

pub fn man(a: ManArgs) -> Outcome {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &a.out_dir {
        clap_mangen::generate_to(cmd, dir)
            .map_err(|e| Failure::new(format!("cannot write man pages to `{}`", dir.display())).cause(e.to_string()))?;
        eprintln!("man pages written to {}", dir.display());
        return Ok(EXIT_OK);
    }
    let page = man_page(&cmd).map_err(|e| Failure::new("cannot render the man page").cause(e.to_string()))?;
    write_stdout(&page)?;
    Ok(EXIT_OK)
}
