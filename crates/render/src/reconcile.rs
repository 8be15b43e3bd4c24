//! The report of one `slurmplan reconcile` cycle as a node_exporter textfile
//! ([`prometheus`]) and as the one line it prints on stderr ([`summary`]).
//!
//! Must not: print, read files or the clock (the caller gives the time and the duration).

use std::collections::BTreeMap;
use std::io::{self, Write};

use slurmplan_plan::policy::Kind;

/// What one cycle did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cycle {
    /// Unix time the cycle started.
    pub started: u64,
    pub duration_secs: f64,
    /// The cycle ended without an error (what waits for review is not an error).
    pub success: bool,
    /// The process exit code of the cycle (design.md section 3).
    pub exit_code: i32,
    /// Changes between the current and the desired state when the cycle planned (its drift);
    /// `None` when it failed before it could tell.
    pub drift: Option<usize>,
    /// Changes applied by this cycle, per kind.
    pub applied: BTreeMap<Kind, usize>,
    /// Steps (sacctmgr commands) that ran to success in this cycle.
    pub steps_applied: usize,
    /// Changes waiting for review after this cycle, per kind.
    pub pending: BTreeMap<Kind, usize>,
}

fn per_kind(out: &mut dyn Write, name: &str, help: &str, counts: &BTreeMap<Kind, usize>) -> io::Result<()> {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} gauge")?;
    for k in Kind::ALL {
        writeln!(out, "{name}{{kind=\"{}\"}} {}", k.name(), counts.get(&k).copied().unwrap_or(0))?;
    }
    Ok(())
}

fn gauge(out: &mut dyn Write, name: &str, help: &str, value: impl std::fmt::Display) -> io::Result<()> {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} gauge")?;
    writeln!(out, "{name} {value}")
}

/// The textfile: every kind has a sample (0 when none), so a series never disappears.
pub fn prometheus(c: &Cycle, out: &mut dyn Write) -> io::Result<()> {
    gauge(
        out,
        "slurmplan_reconcile_last_run_timestamp_seconds",
        "Unix time the last slurmplan reconcile cycle started.",
        c.started,
    )?;
    gauge(
        out,
        "slurmplan_reconcile_last_run_success",
        "1 if the last reconcile cycle ended without error (changes waiting for review are not errors), else 0.",
        u8::from(c.success),
    )?;
    gauge(out, "slurmplan_reconcile_last_run_exit_code", "Exit code of the last reconcile cycle.", c.exit_code)?;
    gauge(
        out,
        "slurmplan_reconcile_last_run_duration_seconds",
        "Wall-clock seconds the last reconcile cycle took.",
        format!("{:.3}", c.duration_secs),
    )?;
    if let Some(d) = c.drift {
        gauge(
            out,
            "slurmplan_reconcile_drift_changes",
            "Changes between the current and the desired state when the last cycle planned.",
            d,
        )?;
    }
    gauge(
        out,
        "slurmplan_reconcile_last_run_steps_applied",
        "sacctmgr commands the last cycle ran to success.",
        c.steps_applied,
    )?;
    per_kind(
        out,
        "slurmplan_reconcile_last_run_changes_applied",
        "Changes the last reconcile cycle applied, per kind.",
        &c.applied,
    )?;
    per_kind(
        out,
        "slurmplan_reconcile_changes_pending",
        "Changes waiting for review after the last cycle, per kind.",
        &c.pending,
    )
}

fn listed(counts: &BTreeMap<Kind, usize>) -> String {
    counts.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")
}

/// One line: what was applied and what waits (`None` for a cycle with nothing to say: in sync
/// and nothing waiting).
pub fn summary(c: &Cycle, pending_plan: Option<&str>) -> Option<String> {
    let applied: usize = c.applied.values().sum();
    let pending: usize = c.pending.values().sum();
    if applied == 0 && pending == 0 {
        return None;
    }
    let mut parts = Vec::new();
    if applied > 0 {
        parts.push(format!("applied {applied} change(s) ({}) in {} step(s)", listed(&c.applied), c.steps_applied));
    }
    if pending > 0 {
        let at = pending_plan.map(|p| format!("; review and apply {p}")).unwrap_or_default();
        parts.push(format!("{pending} change(s) wait for review ({}){at}", listed(&c.pending)));
    }
    Some(format!("reconcile: {} ({:.1} s)", parts.join("; "), c.duration_secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textfile_has_every_kind_and_the_run_metrics() {
        let c = Cycle {
            started: 1_700_000_000,
            duration_secs: 1.5,
            success: true,
            exit_code: 0,
            drift: Some(3),
            applied: BTreeMap::from([(Kind::AccountCreate, 2)]),
            steps_applied: 2,
            pending: BTreeMap::from([(Kind::AccountDeleteWithUsers, 1)]),
        };
        let mut out = Vec::new();
        prometheus(&c, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("slurmplan_reconcile_last_run_changes_applied{kind=\"account-create\"} 2\n"));
        assert!(text.contains("slurmplan_reconcile_changes_pending{kind=\"account-delete-with-users\"} 1\n"));
        assert!(text.contains("slurmplan_reconcile_changes_pending{kind=\"qos-create\"} 0\n"));
        assert!(text.contains("slurmplan_reconcile_drift_changes 3\n"));
        assert!(text.contains("slurmplan_reconcile_last_run_duration_seconds 1.500\n"));
        let s = summary(&c, Some("/p.json")).unwrap();
        assert!(s.contains("applied 2 change(s) (2 account-create) in 2 step(s)"), "{s}");
        assert!(
            s.contains("1 change(s) wait for review (1 account-delete-with-users); review and apply /p.json"),
            "{s}"
        );
        assert_eq!(summary(&Cycle::default(), None), None);
    }
}
