//! The `slurmplan` binary: a thin main; everything is in `cli`. Must hold no logic of its own.
mod cli;

/// mimalloc: planning a million associations is allocation-bound; glibc malloc spends a
/// third of the time in malloc/free/consolidate there (measured, see docs/performance.md).
/// Built without transparent huge pages (the `no_thp` feature in Cargo.toml): the kernel's
/// zeroing of cold huge pages cost more than any function of ours.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(cli::main());
}
