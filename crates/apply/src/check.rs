//! What `apply PLAN` checks before the first write, so that a plan file edited by hand (or by
//! anyone who can write it and recompute its checksum) runs nothing it could not have been
//! planned with: the checks of every plan file (`plan::check`: names, values, argv, `root`),
//! then the whole sequence replayed on the current state in the rules model
//! (`rules`). Pure: no I/O.

use slurmplan_model::State;
use slurmplan_plan::Plan;
use slurmplan_rules::{PastScope, RuleModel, Unread};

/// Every problem of `plan` against `current`; empty when it may run ([`replay`]'s problems).
pub fn check(plan: &Plan, current: &State, unread: &Unread) -> Vec<String> {
    replay(plan, current, unread).err().unwrap_or_default()
}

/// The checks of every plan file, then the whole sequence replayed on `current` in the rules
/// model: the questions the replay answered that a cluster `current` leaves out could answer
/// differently (`RuleModel::scoped`; `unread` says what is known of those clusters, nothing for
/// a whole read: then none), or every problem. The replay stops at the first step that does
/// not apply (the later ones would only repeat it). `apply PLAN` reads the plan's clusters
/// alone when this asks nothing.
pub fn replay(plan: &Plan, current: &State, unread: &Unread) -> Result<PastScope, Vec<String>> {
    let problems = slurmplan_plan::check::step_problems(plan);
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut sim = RuleModel::scoped(current.clone(), unread.clone());
    for step in &plan.steps {
        if let Err(e) = sim.apply(&step.command) {
            return Err(vec![format!("step {} does not apply to the current state: {}", step.number, e.message)]);
        }
    }
    Ok(sim.past_scope().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use slurmplan_model::{AccountRecord, Name};
    use slurmplan_plan::Step;
    use slurmplan_sacctmgr::command::{Command, QosSet};

    fn site_a() -> (State, Plan) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site-a");
        let current = slurmplan_sacctmgr::snapshot::load(&root.join("state")).unwrap();
        let desired = slurmplan_desired::load_file(&root.join("desired.yaml")).unwrap();
        let resolved = slurmplan_desired::resolve::resolve(&desired, &current).unwrap();
        (current.clone(), slurmplan_plan::make_plan(&current, &resolved.state, "x").unwrap())
    }

    fn raw(s: &str) -> Name {
        serde_json::from_value(serde_json::json!(s)).unwrap()
    }

    fn with_step(plan: &Plan, command: Command) -> Plan {
        let mut p = plan.clone();
        p.steps.push(Step {
            number: p.steps.len() + 1,
            phase: slurmplan_plan::Phase::QosDelete,
            argv: command.argv(),
            command,
            causes: vec![],
            note: None,
        });
        p
    }

    #[test]
    fn a_planned_plan_passes() {
        let (current, plan) = site_a();
        assert!(!plan.steps.is_empty());
        assert_eq!(check(&plan, &current, &Unread::default()), Vec::<String>::new());
    }

    #[test]
    fn edited_steps_are_refused() {
        let (current, plan) = site_a();
        let cluster = current.clusters.keys().next().unwrap().clone();
        let cases: Vec<(Command, &str)> = vec![
            (Command::DeleteAccount { cluster: cluster.clone(), names: vec![raw("root")] }, "deletes account `root`"),
            (Command::DeleteQos { names: vec![] }, "names no QoS"),
            (Command::DeleteQos { names: vec![raw("a;touch x")] }, "invalid QoS name"),
            (Command::DeleteQos { names: vec![raw("\u{1b}[31mred")] }, "invalid QoS name"),
            (Command::DeleteQos { names: vec![raw("Normal")] }, "not lower case"),
            (Command::DeleteQos { names: vec![raw("nosuchqos")] }, "does not apply to the current state"),
            (
                Command::DeleteQos { names: (0..2_100).map(|i| raw(&format!("q{i:05}{}", "x".repeat(57)))).collect() },
                "an argv word is 134404 bytes long; Linux runs no program with a word longer than 131071 bytes",
            ),
            (
                Command::ModifyAccountRecord {
                    cluster: cluster.clone(),
                    names: vec![raw("root")],
                    record: AccountRecord { description: Some("it's".into()), organization: None },
                },
                "quote",
            ),
            (
                Command::ModifyQos {
                    names: vec![raw("normal")],
                    set: QosSet { grp_submit_jobs: Some(Some(u64::MAX)), ..Default::default() },
                },
                "slurmdbd stores 0 to 4294967293",
            ),
        ];
        for (command, want) in cases {
            let p = with_step(&plan, command.clone());
            let problems = check(&p, &current, &Unread::default());
            assert!(problems.iter().any(|e| e.contains(want)), "{command:?}: {problems:?}");
        }
        // an argv that is not its command's
        let mut p = plan.clone();
        p.steps[0].argv.push("extra".into());
        assert!(check(&p, &current, &Unread::default()).iter().any(|e| e.contains("argv")));
    }
}
