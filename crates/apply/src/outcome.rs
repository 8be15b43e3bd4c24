//! Classify what sacctmgr printed for one step: success or a specific failure.
//!
//! sacctmgr's exit codes lie both ways (sacctmgr.md sections 3, 4, 7): the DefaultQOS
//! rejection exits 0 on 22.05, no-ops exit 1, and a refused change may only print. slurmplan
//! never plans a no-op, so "nothing changed" is a failure too. Success needs exit 0, no error
//! text, and sacctmgr's own confirmation for the verb. Pure: no I/O.

use slurmplan_sacctmgr::command::Command;
use slurmplan_sacctmgr::transport::Output;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed { reason: String, hint: String },
}

/// Words that mean sacctmgr refused or changed nothing, with what to tell the user.
const REFUSALS: &[(&str, &str, &str)] = &[
    (
        "don't have access to their default qos",
        "slurmdbd refused the change: some associations would lose access to their DefaultQOS (nothing was committed)",
        "re-run `slurmplan plan`: the state changed since planning, or this is a planner bug worth reporting",
    ),
    (
        "would not have access to their default qos",
        "slurmdbd refused the change: an association would lose its DefaultQOS",
        "re-run `slurmplan plan`",
    ),
    (
        "can not remove the default account",
        "slurmdbd refused to remove a user's default association",
        "move the user's DefaultAccount first; re-run `slurmplan plan`",
    ),
    (
        "must change the default account",
        "slurmdbd refused: users would lose their DefaultAccount",
        "re-run `slurmplan plan`",
    ),
    (
        "aren't associated with new default account",
        "the user is not associated with the new DefaultAccount",
        "re-run `slurmplan plan`",
    ),
    (
        "job(s) active",
        "running jobs block the deletion",
        "wait for the jobs to end (or cancel them), then apply a fresh plan",
    ),
    ("changes discarded", "sacctmgr discarded the change", "read sacctmgr's message above; re-run `slurmplan plan`"),
    (
        "nothing modified",
        "sacctmgr changed nothing (the object is missing or already as planned)",
        "the state changed since planning: re-run `slurmplan plan`",
    ),
    (
        "nothing new added",
        "sacctmgr added nothing (already present)",
        "the state changed since planning: re-run `slurmplan plan`",
    ),
    (
        "nothing added",
        "sacctmgr added nothing (already present)",
        "the state changed since planning: re-run `slurmplan plan`",
    ),
    (
        "nothing deleted",
        "sacctmgr deleted nothing (the object is missing)",
        "the state changed since planning: re-run `slurmplan plan`",
    ),
    ("already existing", "the object already exists", "the state changed since planning: re-run `slurmplan plan`"),
    ("didn't affect anything", "sacctmgr changed nothing", "the state changed since planning: re-run `slurmplan plan`"),
    ("data has not changed", "sacctmgr changed nothing", "the state changed since planning: re-run `slurmplan plan`"),
    ("skipping", "sacctmgr skipped part of the request (a missing account or cluster)", "re-run `slurmplan plan`"),
    (
        "has not been added yet",
        "the cluster is not registered in slurmdbd",
        "register it with `sacctmgr -i add cluster NAME`",
    ),
    ("no parent account", "the parent account does not exist", "re-run `slurmplan plan`"),
    (
        "connection refused",
        "sacctmgr cannot reach slurmdbd (connection refused)",
        "start slurmdbd or check AccountingStorageHost/Port",
    ),
    ("unable to connect", "sacctmgr cannot reach slurmdbd", "start slurmdbd or check AccountingStorageHost/Port"),
    ("problem talking to the database", "sacctmgr cannot reach slurmdbd", "check slurmdbd and its database"),
    ("invalid unit", "sacctmgr rejected a value's unit", "this is a slurmplan bug: slurmplan emits plain integers"),
    ("unknown option", "sacctmgr did not understand an option", "check the Slurm version; this may be a slurmplan bug"),
];

/// The word sacctmgr prints first when a verb did something.
fn confirmation(cmd: &Command) -> &'static [&'static str] {
    match cmd.verb() {
        // an existing account or user record only prints its new associations
        "add" => &["adding", "associations"],
        "delete" => &["deleting"],
        _ => &["modified"],
    }
}

pub fn classify(cmd: &Command, o: &Output) -> Outcome {
    if o.timed_out {
        return Outcome::Failed {
            reason: "sacctmgr did not finish before the timeout and was killed".into(),
            hint: "check slurmdbd's health; raise --timeout if it is just slow; then re-run `slurmplan plan`".into(),
        };
    }
    let Some(code) = o.code else {
        return Outcome::Failed {
            reason: "sacctmgr was killed by a signal".into(),
            hint: "re-run `slurmplan plan` to see what was applied".into(),
        };
    };
    let both = format!("{}\n{}", o.stdout, o.stderr).to_ascii_lowercase();
    for (needle, reason, hint) in REFUSALS {
        if both.contains(needle) {
            return Outcome::Failed { reason: format!("{reason} (exit {code})"), hint: (*hint).into() };
        }
    }
    if code != 0 {
        return Outcome::Failed {
            reason: format!("sacctmgr exited with {code}"),
            hint: "read sacctmgr's message above; re-run `slurmplan plan`".into(),
        };
    }
    if o.stderr.to_ascii_lowercase().contains("error") {
        return Outcome::Failed {
            reason: "sacctmgr printed an error (exit 0)".into(),
            hint: "read sacctmgr's message above; re-run `slurmplan plan`".into(),
        };
    }
    let out = o.stdout.to_ascii_lowercase();
    if !confirmation(cmd).iter().any(|w| out.contains(w)) {
        return Outcome::Failed {
            reason: "sacctmgr did not confirm the change (exit 0 without its usual confirmation)".into(),
            hint: "re-run `slurmplan plan` to see whether anything changed".into(),
        };
    }
    Outcome::Ok
}

/// The last `n` lines of a text, for messages and journals.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
