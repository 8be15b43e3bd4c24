//! The plan — ordered steps, each with its cause and exact argv, plus the plan file.
//!
//! `make_plan` diffs, orders (see `build`), and summarises. The plan file (JSON) is what
//! `show` and `apply` read; it carries the fingerprint of the state it was computed from.
//! No I/O except `file::{read, write}`; nothing here prints or spawns processes.

pub mod build;
pub mod check;
pub mod file;
pub mod lints;
pub mod onboard;
pub mod policy;
pub mod target;
pub mod undo;
pub use slurmplan_rules::{PastScope, Unread};

use std::collections::{BTreeMap, BTreeSet};

use slurmplan_diff::{self as diff, Action, Change};
use slurmplan_model::fingerprint::{Scope, fingerprint, scoped_fingerprint};
use slurmplan_model::{Name, State};
use slurmplan_rules::RuleModel;
use slurmplan_sacctmgr::command::Command;

pub const FORMAT_VERSION: u32 = 1;

/// The phase a step belongs to, in execution order (docs/planning.md explains the order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    QosCreate,
    AccountCreate,
    UserAdd,
    DefaultAccount,
    UserRemove,
    AccountDelete,
    Reparent,
    QosSwap,
    Limits,
    QosDelete,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::QosCreate => "qos",
            Phase::AccountCreate => "create accounts",
            Phase::Reparent => "re-parent",
            Phase::UserAdd => "add users",
            Phase::QosSwap => "qos swap",
            Phase::Limits => "limits",
            Phase::DefaultAccount => "default accounts",
            Phase::UserRemove => "remove users",
            Phase::AccountDelete => "delete accounts",
            Phase::QosDelete => "delete qos",
        }
    }
}

/// One command of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub number: usize,
    pub phase: Phase,
    pub command: Command,
    /// Exactly what apply runs (argv[0] is replaced by the configured sacctmgr path).
    pub argv: Vec<String>,
    /// Addresses of the changes this step serves.
    pub causes: Vec<String>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub add: usize,
    pub change: usize,
    pub destroy: usize,
}

/// A change with its address (for `--target` and causes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChange {
    pub address: String,
    pub action: Action,
    pub change: Change,
}

/// A plan in memory. Its file form (and `--format json`) is `file::schema`, converted to and
/// from this: fields here may change without changing the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub format_version: u32,
    pub generator: String,
    /// Fingerprint of the normalised current state the plan was computed from.
    pub current_fingerprint: String,
    /// Hash of the desired file (or of the repair inputs).
    pub desired_hash: String,
    pub changes: Vec<PlannedChange>,
    pub steps: Vec<Step>,
    pub summary: Summary,
    pub warnings: Vec<String>,
    /// Risky steps, with stable codes (docs/lints.md).
    pub lints: Vec<lints::Lint>,
    /// What `current_fingerprint` covers: absent = the whole state (format 1); present = only
    /// this part (format 2), so writes elsewhere leave the plan valid.
    pub scope: Option<Scope>,
}

impl Plan {
    /// The fingerprint of `state` as this plan's `current_fingerprint` was taken: over its
    /// scope, or over the whole state.
    pub fn fingerprint_of(&self, state: &State) -> String {
        match &self.scope {
            Some(scope) => scoped_fingerprint(state, scope),
            None => fingerprint(state),
        }
    }
}

/// The plan format with a [`Plan::scope`].
pub const FORMAT_VERSION_SCOPED: u32 = 2;

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.steps.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("no safe order found for `{command}`: {reason}")]
    Unsafe { command: String, reason: String },
    #[error("{0}")]
    Refused(String),
}

/// Count changes Terraform-style.
pub fn summarize(changes: &[PlannedChange]) -> Summary {
    let mut s = Summary::default();
    for c in changes {
        match c.action {
            Action::Create => s.add += 1,
            Action::Update | Action::Reparent => s.change += 1,
            Action::Delete => s.destroy += 1,
        }
    }
    s
}

/// One command per object instead of batches (`--no-batch`: for measuring what batching saves,
/// and for sites that want one journal entry per object). Each batch is split in place, in
/// its order, so every single command is as valid as the batch was.
pub fn unbatch(plan: &mut Plan) {
    let mut out = Vec::new();
    for step in plan.steps.drain(..) {
        let mut singles: Vec<Command> = Vec::new();
        for command in step.command.split_accounts() {
            let objects = command.objects();
            if objects.len() > 1 {
                singles.extend(objects.iter().map(|o| command.with_objects(vec![o.clone()])));
            } else {
                singles.push(command);
            }
        }
        for command in singles {
            out.push(Step {
                number: 0,
                phase: step.phase,
                argv: command.argv(),
                command,
                causes: step.causes.clone(),
                note: step.note.clone(),
            });
        }
    }
    for (i, s) in out.iter_mut().enumerate() {
        s.number = i + 1;
    }
    plan.steps = out;
}

/// Diff and order: the whole planning pipeline on two complete states (the fingerprint covers
/// the whole current state: format 1).
pub fn make_plan(current: &State, desired: &State, desired_hash: &str) -> Result<Plan, PlanError> {
    order(diff_states(current, desired, Covers::Whole), current, desired, desired_hash)
}

/// What a plan's `current_fingerprint` covers.
pub enum Covers<'a> {
    /// The whole current state (format 1).
    Whole,
    /// Only what a plan of these managed accounts (per cluster) depends on ([`Scope::of`]),
    /// so that writes elsewhere leave the plan valid (format 2).
    Managed(&'a BTreeMap<Name, BTreeSet<Name>>),
}

/// The first half of [`make_plan`]: the diff, and what ordering starts from (callers that
/// time the phases call the halves one after the other).
pub struct Diffed {
    sim: RuleModel,
    covered: Covered,
    changes: Vec<Change>,
}

/// The whole state's fingerprint, or the scope whose fingerprint [`order`] takes.
enum Covered {
    Whole(String),
    Scope(Scope),
}

/// The diff of the two states, made on a second core while this one copies `current` for
/// the planner and takes what `covers` asks for: the whole state's fingerprint, or the scope
/// (whose fingerprint [`order`] takes on the second core while this one orders). The copy is
/// made on this thread, which goes on to change and free it: a copy made on the other thread
/// is slower to change and free (its memory is another thread's, and every change and free
/// of it goes through the allocator's slow path).
pub fn diff_states(current: &State, desired: &State, covers: Covers) -> Diffed {
    diff_states_scoped(current, desired, covers, Unread::default())
}

/// [`diff_states`] of a current state read for some clusters only, `unread` saying what is
/// known of the clusters slurmdbd holds that it leaves out: the planner's model is
/// [`RuleModel::scoped`], and [`order_scoped`] says whether the plan looked past the clusters
/// read.
pub fn diff_states_scoped(current: &State, desired: &State, covers: Covers, unread: Unread) -> Diffed {
    std::thread::scope(|s| {
        // the copy for the planner after the diff, on the other core: the scope (or the
        // fingerprint) takes longer than the diff alone
        let diffed = s.spawn(|| (diff::diff(current, desired), RuleModel::scoped(current.clone(), unread)));
        let covered = match covers {
            Covers::Whole => Covered::Whole(fingerprint(current)),
            Covers::Managed(managed) => Covered::Scope(Scope::of(current, desired, managed)),
        };
        let (changes, sim) = diffed.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        Diffed { sim, covered, changes }
    })
}

/// The second half of [`make_plan`]: the ordered steps, lints and summary of a diff.
pub fn order(diffed: Diffed, current: &State, desired: &State, desired_hash: &str) -> Result<Plan, PlanError> {
    order_scoped(diffed, current, desired, desired_hash).map(|(plan, _)| plan)
}

/// [`order`], also giving the questions the planner answered that could depend on a cluster
/// left out of a scoped state ([`diff_states_scoped`]; none from a whole state): a plan that
/// asked one must be made again with the answers, or from the whole state.
pub fn order_scoped(
    diffed: Diffed,
    current: &State,
    desired: &State,
    desired_hash: &str,
) -> Result<(Plan, PastScope), PlanError> {
    let Diffed { mut sim, covered, changes } = diffed;
    let (built, current_fingerprint, scope) = match covered {
        Covered::Whole(whole) => (build::build_steps_and_lints(&mut sim, desired, &changes), whole, None),
        Covered::Scope(scope) => {
            // The scoped fingerprint on the second core while this one orders the steps.
            let (built, scoped) = std::thread::scope(|s| {
                let scoped = s.spawn(|| scoped_fingerprint(current, &scope));
                let built = build::build_steps_and_lints(&mut sim, desired, &changes);
                (built, scoped.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            });
            (built, scoped, Some(scope))
        }
    };
    let (steps, mut lints) = built?;
    let asked = sim.past_scope().clone();
    let changes = std::thread::scope(|s| {
        // The planner's model (a copy of the whole state) is freed on the second core while
        // this one lints and summarises.
        s.spawn(move || drop(sim));
        lints.extend(lints::lint(current, desired, &changes, &steps));
        lints::sort(&mut lints);
        changes
            .into_iter()
            .map(|c| PlannedChange { address: c.address(), action: c.action(), change: c })
            .collect::<Vec<_>>()
    });
    let plan = Plan {
        format_version: if scope.is_some() { FORMAT_VERSION_SCOPED } else { FORMAT_VERSION },
        generator: format!("slurmplan {}", env!("CARGO_PKG_VERSION")),
        current_fingerprint,
        desired_hash: desired_hash.to_string(),
        summary: summarize(&changes),
        changes,
        steps,
        warnings: Vec::new(),
        lints,
        scope,
    };
    Ok((plan, asked))
}
