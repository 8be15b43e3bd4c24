//! `slurmplan completions SHELL` and `slurmplan man`: shell completions and the man page,
//! generated from the clap definition (`args::Cli`). Reads no state and plans nothing.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory, ValueEnum};

use super::args::Cli;
use super::print::write_stdout;
use super::{EXIT_OK, Failure, Outcome};

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
