//! slurmplan-fail-write: an `--exec-prefix` for tests that stops an apply part-way on a REAL
//! slurmdbd. It runs the command after it unchanged (exec, argv intact, no shell), except
//! the Nth write (a call whose first word after the program is `-i`, counted in the file
//! `FAIL_WRITE_COUNTER`): that one is not run at all and fails the way sacctmgr fails,
//! `sacctmgr: error: ...` on stderr and exit 1. N is `FAIL_WRITE_AT`.
//!
//! Must not: change the command it runs, or run anything but it.

use std::io::Write;
use std::os::unix::process::CommandExt;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: slurmplan-fail-write PROGRAM [ARG...] (FAIL_WRITE_AT=N FAIL_WRITE_COUNTER=FILE)");
        std::process::exit(64);
    };
    if rest.first().map(String::as_str) == Some("-i") {
        let at: Option<u64> = std::env::var("FAIL_WRITE_AT").ok().and_then(|v| v.parse().ok());
        if let (Some(at), Ok(counter)) = (at, std::env::var("FAIL_WRITE_COUNTER")) {
            let n = std::fs::read_to_string(&counter).ok().and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(0) + 1;
            if let Err(e) = std::fs::write(&counter, n.to_string()) {
                eprintln!("sacctmgr: error: slurmplan-fail-write cannot count in {counter}: {e}");
                std::process::exit(1);
            }
            if n == at {
                let _ =
                    writeln!(std::io::stderr(), "sacctmgr: error: slurmplan-fail-write: write {n} refused on purpose");
                std::process::exit(1);
            }
        }
    }
    let e = std::process::Command::new(program).args(rest).exec();
    eprintln!("sacctmgr: error: slurmplan-fail-write cannot run {program}: {e}");
    std::process::exit(127);
}
