//! The `slurmplan` binary: a thin main; everything is in `cli`.
mod cli;

fn main() {
    std::process::exit(cli::main());
}
