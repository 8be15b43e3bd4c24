//! The planning pipeline as one call. [`plan`] loads the desired file (on a second
//! thread while the caller's reader takes the current state), keeps the clusters asked for,
//! resolves, checks the rows that could not be read, narrows to `--target`, diffs, orders, and
//! holds the plan to the guards every plan passes (the mass-delete limit). [`resolve`] is its
//! first half, for reports that stop at the diff (`drift`). [`load`] and [`plan_loaded`] are
//! the same pipeline in two calls, for a caller that must know the desired file's clusters
//! before it reads the current state (`apply -d` locks them first): the file is parsed once.
//!
//! It must not print, exit or spawn: what it has to say goes to the caller's [`Report`]
//! (warnings, the targeting notes, phase timings), what stops it is a [`Refusal`] carrying the
//! diagnostics, and the current state comes from the caller's reader (live or a snapshot), so
//! the binary keeps the transport and the words of every message.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use slurmplan_desired::{self as desired, Desired, resolve::Resolved};
use slurmplan_diag::Diagnostic;
use slurmplan_diff::{Action, Change};
use slurmplan_model::{Name, NameError, NameKind, State};
use slurmplan_plan::{self as plan, PastScope, Plan, PlanError, Unread, target::TargetError};
use slurmplan_sacctmgr::parse::Unsplit;

/// The warning a targeted plan carries (and the banner the caller prints with it).
pub const TARGET_WARNING: &str = "resource targeting is in effect; the plan may be incomplete: only the targeted objects and what they strictly need are planned. Run a plan without --target afterwards to see what else differs.";

/// What to plan.
pub struct Request<'a> {
    /// The desired-state file.
    pub desired: &'a Path,
    /// Keep only these clusters of the desired file (`--cluster`); empty = all.
    pub clusters: &'a [String],
    /// Plan only the changes at these addresses and what they strictly need (`--target`).
    pub targets: &'a [String],
    /// Let a plan delete more than the limit ([`mass_delete_limit`]); it then carries lint SP005.
    pub allow_mass_delete: bool,
    /// The caller exits soon after: the desired file and the resolved state are left to the
    /// operating system instead of being freed (a million associations take a while to free).
    pub one_shot: bool,
}

/// Where the pipeline says what it finds on the way.
pub trait Report {
    /// Warnings of one stage, sorted by the caller (each call is one batch).
    fn warnings(&mut self, stage: Stage, diags: Vec<Diagnostic>);
    /// `--target` is in effect; `unchanged` are the targets that have no changes.
    fn targeted(&mut self, unchanged: &[String]);
    /// A phase took `took` (measured on the thread that did it).
    fn phase(&mut self, name: &str, took: Duration);
}

/// The stage a batch of warnings comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The loader, on the desired file.
    Desired,
    /// Resolving the desired file against the current state.
    Resolve,
    /// Rows of the current state that could not be split, outside the managed scope.
    Unsplit,
}

/// Why there is no plan. `E` is the error of the caller's reader.
#[derive(Debug)]
pub enum Refusal<E> {
    /// The desired file has errors (every diagnostic the loader found).
    Desired(Vec<Diagnostic>),
    /// A `--cluster` value is not a cluster name.
    ClusterName(NameError),
    /// A `--cluster` the desired file does not declare; `known` are the ones it declares.
    UnknownCluster { name: Name, path: PathBuf, known: Vec<Name> },
    /// The current state could not be read.
    Current(E),
    /// The desired file does not fit the current state.
    Resolve { path: PathBuf, diags: Vec<Diagnostic> },
    /// Rows that could not be split may belong to the managed scope (errors only).
    Unsplit(Vec<Diagnostic>),
    /// A `--target` is unknown or cannot be planned alone.
    Target(TargetError),
    /// No safe order exists (a slurmplan bug).
    Order(PlanError),
    /// The plan deletes more than the limit and that was not allowed.
    MassDelete { deletes: usize, limit: usize, managed: usize },
}

/// The desired file resolved against the current state: what [`resolve`] gives.
pub struct Resolution {
    pub desired: Desired,
    pub current: State,
    pub resolved: Resolved,
}

/// A plan and the current state it was made from.
pub struct Planned {
    pub plan: Plan,
    pub current: State,
    /// What is known of the clusters slurmdbd holds that `current` leaves out: nothing but for
    /// a scoped read whose plan stood for the whole state's ([`plan_scoped`]). Whatever replays
    /// the plan on `current` (an apply's expected state) replays it in a
    /// `rules::RuleModel::scoped` of it.
    pub unread: Unread,
}

/// Times phases on the calling thread.
struct Clock(Instant);

impl Clock {
    fn lap(&mut self, report: &mut dyn Report, name: &str) {
        report.phase(name, self.0.elapsed());
        self.0 = Instant::now();
    }
}

/// Load, read, keep the clusters asked for, resolve, and check the unsplit rows. The desired
/// file is loaded on a second thread while `read` runs on this one (they are independent).
pub fn resolve<E>(
    req: &Request,
    read: impl FnOnce() -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<Resolution, Refusal<E>> {
    let mut clock = Clock(Instant::now());
    resolve_timed(req, None, read, report, &mut clock)
}

/// Load the desired file, report its warnings and keep the clusters asked for: the first half
/// of [`load`] + [`plan_loaded`].
pub fn load<E>(req: &Request, report: &mut dyn Report) -> Result<Desired, Refusal<E>> {
    let started = Instant::now();
    let loaded = desired::load_file(req.desired);
    report.phase("load desired", started.elapsed());
    accept(req, loaded, report)
}

/// A loaded desired file as the pipeline goes on with it: its warnings reported, the clusters
/// asked for kept.
fn accept<E>(
    req: &Request,
    loaded: Result<Desired, Vec<Diagnostic>>,
    report: &mut dyn Report,
) -> Result<Desired, Refusal<E>> {
    let mut d = loaded.map_err(Refusal::Desired)?;
    report.warnings(Stage::Desired, d.warnings.clone());
    select_clusters(req.clusters, &mut d)?;
    Ok(d)
}

fn resolve_timed<E>(
    req: &Request,
    loaded: Option<Desired>,
    read: impl FnOnce() -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
    clock: &mut Clock,
) -> Result<Resolution, Refusal<E>> {
    let (d, current) = match loaded {
        Some(d) => {
            let current = read();
            clock.lap(report, "read current state");
            (d, current)
        }
        None => {
            let (loaded, current) = std::thread::scope(|s| {
                let desired = s.spawn(|| {
                    let started = Instant::now();
                    (desired::load_file(req.desired), started.elapsed())
                });
                let current = read();
                clock.lap(report, "read current state (in parallel with the next)");
                (desired.join().expect("the desired-state loader does not panic"), current)
            });
            report.phase("load desired", loaded.1);
            // The next phase is timed from here, not from the end of the read (it waited for the file).
            clock.0 = Instant::now();
            (accept(req, loaded.0, report)?, current)
        }
    };
    resolve_read(d, current, report)
}

/// The whole pipeline: [`resolve`], then `--target`, diff, order and the mass-delete guard.
/// The plan's fingerprint covers what it depends on ([`plan::Covers::Managed`]), so that writes
/// elsewhere on a busy slurmdbd leave a saved plan valid.
pub fn plan<E>(
    req: &Request,
    read: impl FnOnce() -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<Planned, Refusal<E>> {
    plan_from(req, None, read, report)
}

/// [`plan`] of a desired file already loaded by [`load`] (with the same `req`): the file is not
/// read again.
pub fn plan_loaded<E>(
    req: &Request,
    desired: Desired,
    read: impl FnOnce() -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<Planned, Refusal<E>> {
    plan_from(req, Some(desired), read, report)
}

fn plan_from<E>(
    req: &Request,
    loaded: Option<Desired>,
    read: impl FnOnce() -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<Planned, Refusal<E>> {
    let (planned, resolved) = plan_resolved(req, loaded, read, report)?;
    if req.one_shot {
        std::mem::forget(resolved);
    }
    Ok(planned)
}

/// A plan split by a reconcile policy: the whole plan, the part that runs now, what waits.
pub struct Reconciled {
    /// The plan of every change (what a human reviews when something waits).
    pub full: Plan,
    /// What runs now.
    pub now: RunNow,
    /// The changes that wait for a human.
    pub held: Vec<plan::policy::Held>,
    pub current: State,
    /// What is known of the clusters `current` leaves out (as [`Planned::unread`]).
    pub unread: Unread,
}

/// What of a [`Reconciled`] plan runs now.
pub enum RunNow {
    /// The whole plan (nothing waits): run `full` itself.
    Whole,
    /// This plan of the changes that do not wait.
    Part(Box<Plan>),
    /// Nothing.
    Nothing,
}

/// [`plan_loaded`], then split by `policy` (`plan::policy::split`): what runs now is the
/// `--target` plan of the changes that do not wait. When that plan would still pull in a
/// waiting change (the targeting fallback rules), nothing runs now. The mass-delete guard does
/// not refuse here: the whole plan is made (carrying SP005 when it deletes more than the limit,
/// unless `req` allows mass deletes) and then every one of its deletes waits.
pub fn plan_by_policy<E>(
    req: &Request,
    desired: Desired,
    read: impl FnOnce() -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
    policy: &plan::policy::Policy,
) -> Result<Reconciled, Refusal<E>> {
    let lifted = Request { allow_mass_delete: true, ..*req };
    let (Planned { plan: full, current, .. }, resolved) = plan_resolved(&lifted, Some(desired), read, report)?;
    let (split, _) = split_by_policy(req, policy, full, &current, &resolved, Unread::default())?;
    Ok(split.of(current, Unread::default()))
}

/// [`plan_by_policy`] that first reads only the desired file's clusters, as [`plan_scoped`]
/// does: the split stands when neither the whole plan nor the plan of what runs now asked
/// anything another cluster could answer differently (users asked about are read by name, as
/// there); otherwise `read_whole(why)` reads every cluster and the cycle is planned from that.
pub fn plan_by_policy_scoped<E>(
    req: &Request,
    desired: Desired,
    read_scope: impl FnOnce(&BTreeSet<Name>) -> Result<ScopedRead, E>,
    read_users: impl FnMut(&[String]) -> Result<UsersSeen, E>,
    read_whole: impl FnOnce(&str) -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
    policy: &plan::policy::Policy,
) -> Result<Reconciled, Refusal<E>> {
    let lifted = Request { allow_mass_delete: true, ..*req };
    let attempt =
        scoped_attempt(&lifted, desired, read_scope, read_users, report, |full, current, resolved, unread| {
            let (split, asked) = split_by_policy::<()>(req, policy, full, current, resolved, unread.clone())
                .map_err(|_| Fallback::Whole(REFUSAL_IN_SCOPE.into()))?;
            match fallback(asked) {
                None => Ok(split),
                Some(why) => Err(why),
            }
        })?;
    match attempt {
        Attempt::Stood { made, current, unread } => Ok(made.of(current, unread)),
        Attempt::Read { desired, current, unsplit } => {
            plan_by_policy(req, desired, || Ok((current, unsplit)), report, policy)
        }
        Attempt::Whole { desired, why } => plan_by_policy(req, desired, || read_whole(&why), report, policy),
    }
}

/// A [`Reconciled`] but for the state it was made from.
struct Split {
    full: Plan,
    now: RunNow,
    held: Vec<plan::policy::Held>,
}

impl Split {
    fn of(self, current: State, unread: Unread) -> Reconciled {
        Reconciled { full: self.full, now: self.now, held: self.held, current, unread }
    }
}

/// Split the whole plan `full` of a cycle by `policy`; the questions the plan of what runs now
/// asked past the clusters read (`unread`) are returned beside it (none from a whole state).
fn split_by_policy<E>(
    req: &Request,
    policy: &plan::policy::Policy,
    full: Plan,
    current: &State,
    resolved: &Resolved,
    unread: Unread,
) -> Result<(Split, PastScope), Refusal<E>> {
    use plan::policy::Now;
    let mass = (!req.allow_mass_delete)
        .then(|| full.lints.iter().find(|l| l.code == plan::lints::SP005.0))
        .flatten()
        .map(|l| format!("the plan deletes more than the mass-delete guard allows ({})", l.message));
    let split = plan::policy::split(policy, &full, current, mass.as_deref());
    let mut held = split.held;
    let mut asked = PastScope::default();
    let now = match split.now {
        Now::All => RunNow::Whole,
        Now::Nothing => RunNow::Nothing,
        Now::Targets(targets) => {
            let waiting: BTreeSet<&str> = held.iter().map(|h| h.address.as_str()).collect();
            let partial = plan::target::partial_desired(current, &resolved.state, &targets)
                .ok()
                .filter(|t| t.selected.iter().all(|a| !waiting.contains(a.as_str())));
            match partial {
                Some(t) => {
                    let covers = plan::Covers::Managed(&resolved.managed);
                    let diffed = plan::diff_states_scoped(current, &t.state, covers, unread);
                    let (part, part_asked) =
                        plan::order_scoped(diffed, current, &t.state, &full.desired_hash).map_err(Refusal::Order)?;
                    asked = part_asked;
                    RunNow::Part(Box::new(part))
                }
                None => {
                    let reason = "it cannot be applied apart from the changes that wait";
                    held = plan::policy::hold_all(&full, current, held, reason);
                    RunNow::Nothing
                }
            }
        }
    };
    Ok((Split { full, now, held }, asked))
}

/// [`plan_from`], also giving the resolved desired state.
fn plan_resolved<E>(
    req: &Request,
    loaded: Option<Desired>,
    read: impl FnOnce() -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<(Planned, Resolved), Refusal<E>> {
    let mut clock = Clock(Instant::now());
    let Resolution { desired: d, current, resolved } = resolve_timed(req, loaded, read, report, &mut clock)?;
    clock.lap(report, "resolve");
    let partial = match req.targets {
        [] => None,
        targets => {
            let t = plan::target::partial_desired(&current, &resolved.state, targets).map_err(Refusal::Target)?;
            report.targeted(&t.unchanged);
            Some(t.state)
        }
    };
    let desired = partial.as_ref().unwrap_or(&resolved.state);
    let (mut plan, _) =
        diff_and_order(req, &current, &resolved, desired, &d.hash, Unread::default(), report, &mut clock)?;
    if req.one_shot {
        std::mem::forget(d);
    }
    if partial.is_some() {
        plan.warnings.push(TARGET_WARNING.into());
    }
    Ok((Planned { plan, current, unread: Unread::default() }, resolved))
}

/// Diff `current` against `desired` (the resolved state, or its `--target` part), order, and
/// hold the plan to the mass-delete guard. `unread`: what is known of the clusters slurmdbd
/// holds that `current` leaves out (a scoped read); the questions the plan then asked of them
/// are returned beside it.
#[allow(clippy::too_many_arguments)]
fn diff_and_order<E>(
    req: &Request,
    current: &State,
    resolved: &Resolved,
    desired: &State,
    desired_hash: &str,
    unread: Unread,
    report: &mut dyn Report,
    clock: &mut Clock,
) -> Result<(Plan, PastScope), Refusal<E>> {
    let diffed = plan::diff_states_scoped(current, desired, plan::Covers::Managed(&resolved.managed), unread);
    clock.lap(report, "diff");
    let (planned, managed) = std::thread::scope(|s| {
        // The mass-delete guard's count (a walk of every managed account's users) on the
        // second core, which ordering leaves idle.
        let managed = s.spawn(|| managed_objects(current, &resolved.managed));
        let planned = plan::order_scoped(diffed, current, desired, desired_hash);
        (planned, managed.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    let (mut plan, asked) = planned.map_err(Refusal::Order)?;
    clock.lap(report, "order");
    mass_delete_guard(&mut plan, managed, req.allow_mass_delete)?;
    Ok((plan, asked))
}

/// What a current-state read of some clusters gives: the state of those clusters (with the
/// records and QoS), the rows that could not be split, and the clusters slurmdbd lists that
/// were left out.
pub type ScopedRead = (State, Vec<Unsplit>, BTreeSet<Name>);

/// The (cluster, user) pairs of the associations of some users on every cluster: what a
/// caller's `read_users` gives [`plan_scoped`].
pub type UsersSeen = BTreeSet<(String, String)>;

/// How many times [`plan_scoped`] plans again after reading users' associations, and how many
/// users it reads so in all; past either, it reads every cluster.
pub const USER_ROUNDS: usize = 3;
pub const USERS_ASKED_AT_MOST: usize = 4096;

/// [`plan_loaded`] that first reads only the desired file's clusters (after `--cluster`):
/// `read_scope(clusters)` reads them. When no other cluster exists, or the plan from that read
/// asked nothing whose answer could depend on another cluster (`rules::RuleModel::scoped`;
/// resolving asks one only of a managed QoS the file drops, whose deletion the plan then holds
/// and the model asks about), and nothing was refused, that plan is the plan of the whole state
/// by construction, and it is the result. When all it asked is about some users (does one
/// have, or keep, associations on another cluster), `read_users(names)` reads those users'
/// associations on every cluster and the plan is made again with the answers (at most
/// [`USER_ROUNDS`] times, [`USERS_ASKED_AT_MOST`] users in all, names sacctmgr can filter on).
/// Otherwise `read_whole(why)` reads every cluster and the plan is made again from that, as
/// [`plan_loaded`] would (nothing of the attempts is reported). `--target` plans take the
/// whole read at once. docs/decisions.md, "Reads scoped to the plan's clusters".
pub fn plan_scoped<E>(
    req: &Request,
    desired: Desired,
    read_scope: impl FnOnce(&BTreeSet<Name>) -> Result<ScopedRead, E>,
    read_users: impl FnMut(&[String]) -> Result<UsersSeen, E>,
    read_whole: impl FnOnce(&str) -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<Planned, Refusal<E>> {
    if !req.targets.is_empty() {
        return plan_loaded(req, desired, || read_whole("every cluster (--target)"), report);
    }
    match scoped_attempt(req, desired, read_scope, read_users, report, |plan, _, _, _| Ok(plan))? {
        Attempt::Stood { made, current, unread } => Ok(Planned { plan: made, current, unread }),
        Attempt::Read { desired, current, unsplit } => plan_loaded(req, desired, || Ok((current, unsplit)), report),
        Attempt::Whole { desired, why } => plan_loaded(req, desired, || read_whole(&why), report),
    }
}

/// How a scoped attempt ends: what `finish` made of a plan that stands for the whole state's
/// (with the state read and what is known past it), or the desired file back with the state
/// read when slurmdbd holds no other cluster (it is the whole state), or with why every
/// cluster must be read.
enum Attempt<T> {
    Stood { made: T, current: State, unread: Unread },
    Read { desired: Desired, current: State, unsplit: Vec<Unsplit> },
    Whole { desired: Desired, why: String },
}

/// The refusal of a scoped attempt (every cluster may answer otherwise).
const REFUSAL_IN_SCOPE: &str = "whether its refusal on the planned clusters alone holds on every cluster";

/// The scoped read and planning rounds of [`plan_scoped`]: the plan of the scoped read, handed
/// to `finish` with that state, its resolution and what is known past it; `finish` gives what
/// the caller makes of it, or why that does not stand (questions about users are answered by
/// reading them and planning again). The attempt's reports are held until it stands.
fn scoped_attempt<E, T>(
    req: &Request,
    desired: Desired,
    read_scope: impl FnOnce(&BTreeSet<Name>) -> Result<ScopedRead, E>,
    mut read_users: impl FnMut(&[String]) -> Result<UsersSeen, E>,
    report: &mut dyn Report,
    finish: impl Fn(Plan, &State, &Resolved, &Unread) -> Result<T, Fallback>,
) -> Result<Attempt<T>, Refusal<E>> {
    let scope: BTreeSet<Name> = desired.clusters.keys().cloned().collect();
    let mut clock = Clock(Instant::now());
    let (current, unsplit, unread) = read_scope(&scope).map_err(Refusal::Current)?;
    clock.lap(report, "read current state (the planned clusters)");
    if unread.is_empty() {
        return Ok(Attempt::Read { desired, current, unsplit });
    }
    let mut unread = Unread::clusters(unread);
    let mut held = Held::default();
    let why = match resolve_in_scope(&desired, &current, &unsplit, &mut held) {
        Err(why) => why,
        Ok(resolved) => {
            clock.lap(&mut held, "resolve");
            let mut round = 0;
            loop {
                let made = order_in_scope(req, &desired, &current, &resolved, unread.clone(), &mut held, &mut clock)
                    .and_then(|plan| finish(plan, &current, &resolved, &unread));
                let users = match made {
                    Ok(made) => {
                        held.replay(report);
                        if req.one_shot {
                            std::mem::forget((desired, resolved));
                        }
                        return Ok(Attempt::Stood { made, current, unread });
                    }
                    Err(Fallback::Whole(why)) => break why,
                    Err(Fallback::Users { users, first }) => match users_to_read(users, &unread, &mut round) {
                        Some(users) => users,
                        None => break first,
                    },
                };
                learn_users(&current, &mut unread, users, &mut read_users).map_err(Refusal::Current)?;
                clock.lap(&mut held, "read the associations of the users asked about, on every cluster");
            }
        }
    };
    drop((current, unsplit));
    Ok(Attempt::Whole { desired, why })
}

/// The users a scoped attempt asked about, to be read by name, as the `round`th read (counted
/// here): `None` past [`USER_ROUNDS`] reads or [`USERS_ASKED_AT_MOST`] users in all, or for a
/// name sacctmgr cannot filter on as it is.
fn users_to_read(users: BTreeSet<Name>, unread: &Unread, round: &mut usize) -> Option<BTreeSet<Name>> {
    *round += 1;
    let fits = *round <= USER_ROUNDS
        && unread.users_asked.len() + users.len() <= USERS_ASKED_AT_MOST
        && users.iter().all(|u| slurmplan_sacctmgr::reads::filterable_user(u.as_str()));
    fits.then_some(users)
}

/// Read `users`' associations on every cluster (`read_users`) into `unread`: which were
/// asked, and which have one on a cluster `current` leaves out.
fn learn_users<E>(
    current: &State,
    unread: &mut Unread,
    users: BTreeSet<Name>,
    read_users: &mut impl FnMut(&[String]) -> Result<UsersSeen, E>,
) -> Result<(), E> {
    let names: Vec<String> = users.iter().map(|u| u.as_str().to_string()).collect();
    let seen = read_users(&names)?;
    // a row on a cluster not read (listed then, or added since) is one elsewhere
    let elsewhere: BTreeSet<&str> = seen
        .iter()
        .filter(|(c, _)| !current.clusters.keys().any(|k| k.as_str() == c))
        .map(|(_, u)| u.as_str())
        .collect();
    unread.users_elsewhere.extend(users.iter().filter(|u| elsewhere.contains(u.as_str())).cloned());
    unread.users_asked.extend(users);
    Ok(())
}

/// The state a saved plan is applied to (`apply PLAN`): with a scoped fingerprint (format 2),
/// the clusters it covers and those the steps name first (`read_scope`), standing when
/// `replay(state, unread)` (the plan's steps replayed in `rules::RuleModel::scoped`) asked
/// nothing another cluster could answer differently; questions about users only are answered
/// by reading those users by name (`read_users`, as [`plan_scoped`] does); anything else, a
/// step that does not replay there, or a whole-state fingerprint (format 1) reads every cluster
/// (`read_whole(why)`). What the fingerprint covers is the same in either read, so the stale
/// check and the replay's answers are those of the whole state. docs/decisions.md, "Reads
/// scoped to the plan's clusters".
pub fn state_for_saved_plan<E>(
    plan: &Plan,
    read_scope: impl FnOnce(&BTreeSet<Name>) -> Result<ScopedRead, E>,
    mut read_users: impl FnMut(&[String]) -> Result<UsersSeen, E>,
    read_whole: impl FnOnce(Option<&str>) -> Result<(State, Vec<Unsplit>), E>,
    replay: impl Fn(&State, &Unread) -> Option<PastScope>,
) -> Result<(State, Vec<Unsplit>, Unread), E> {
    let whole = |why: Option<&str>| read_whole(why).map(|(state, unsplit)| (state, unsplit, Unread::default()));
    let Some(scope) = &plan.scope else { return whole(None) };
    let clusters: BTreeSet<Name> =
        scope.clusters.keys().cloned().chain(plan.steps.iter().filter_map(|s| s.command.cluster().cloned())).collect();
    let (current, unsplit, left_out) = read_scope(&clusters)?;
    if left_out.is_empty() {
        return Ok((current, unsplit, Unread::default()));
    }
    let mut unread = Unread::clusters(left_out);
    let mut round = 0;
    let why = loop {
        let Some(asked) = replay(&current, &unread) else {
            break "whether its steps, which do not all replay on its own clusters, replay on every cluster"
                .to_string();
        };
        let (users, first) = match fallback(asked) {
            None => return Ok((current, unsplit, unread)),
            Some(Fallback::Whole(why)) => break why,
            Some(Fallback::Users { users, first }) => (users, first),
        };
        match users_to_read(users, &unread, &mut round) {
            Some(users) => learn_users(&current, &mut unread, users, &mut read_users)?,
            None => break first,
        }
    };
    drop((current, unsplit));
    whole(Some(&why))
}

/// Why a scoped attempt does not stand: a question only every cluster answers (or a refusal),
/// or questions about these users, the first of them in words.
enum Fallback {
    Whole(String),
    Users { users: BTreeSet<Name>, first: String },
}

/// The plan of a scoped read's resolution, or why it cannot stand for the plan of the whole
/// state.
fn order_in_scope(
    req: &Request,
    d: &Desired,
    current: &State,
    resolved: &Resolved,
    unread: Unread,
    report: &mut Held,
    clock: &mut Clock,
) -> Result<Plan, Fallback> {
    let (plan, asked) = diff_and_order::<()>(req, current, resolved, &resolved.state, &d.hash, unread, report, clock)
        .map_err(|_| Fallback::Whole(REFUSAL_IN_SCOPE.into()))?;
    match fallback(asked) {
        None => Ok(plan),
        Some(why) => Err(why),
    }
}

/// What the questions a scoped attempt asked call for: nothing (`None`: it stands), the whole
/// read, or a read of some users by name.
fn fallback(asked: PastScope) -> Option<Fallback> {
    match asked {
        PastScope { first: None, .. } => None,
        PastScope { whole: Some(why), .. } => Some(Fallback::Whole(why)),
        PastScope { first: Some(first), users, whole: None } => Some(Fallback::Users { users, first }),
    }
}

/// The desired file resolved against a state read for its clusters alone, or why that
/// resolution may not be the whole state's: an error (it might differ, or come from another
/// cluster too), or a row that cannot be split in the managed scope.
fn resolve_in_scope(d: &Desired, current: &State, unsplit: &[Unsplit], report: &mut Held) -> Result<Resolved, String> {
    let resolved = desired::resolve::resolve(d, current).map_err(|_| {
        "whether the desired file's errors on the planned clusters alone hold on every cluster".to_string()
    })?;
    report.warnings(Stage::Resolve, resolved.warnings.clone());
    check_unsplit::<()>(unsplit, d, &resolved.managed, report).map_err(|_| REFUSAL_IN_SCOPE.to_string())?;
    Ok(resolved)
}

/// [`resolve`] of a desired file already loaded by [`load`], reading first only its clusters
/// (after `--cluster`), as [`plan_scoped`] does, for the reports that stop at the diff
/// (`drift`): the resolution of that read stands when [`resolve_in_scope`] finds nothing an
/// unread cluster could change, the file drops no managed QoS (whether another cluster still
/// uses it decides an error) and every account record it declares is of an account on a
/// cluster read (`--cluster` leaves clusters of the file out, not the records declared under
/// them, and the diff changes a record through any cluster holding the account). A plan's
/// model asks both questions itself; here no planner runs to ask them. Otherwise `read_whole(why)`
/// reads every cluster and the file is resolved again from that (nothing of the first attempt
/// is reported). Its diff is the whole state's diff: the clusters the file does not declare
/// are copied unchanged into the resolved state, so they differ in nothing.
pub fn resolve_scoped<E>(
    desired: Desired,
    read_scope: impl FnOnce(&BTreeSet<Name>) -> Result<ScopedRead, E>,
    read_whole: impl FnOnce(&str) -> Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<Resolution, Refusal<E>> {
    let scope: BTreeSet<Name> = desired.clusters.keys().cloned().collect();
    let mut clock = Clock(Instant::now());
    let (current, unsplit, unread) = read_scope(&scope).map_err(Refusal::Current)?;
    clock.lap(report, "read current state (the clusters of the desired file)");
    if unread.is_empty() {
        return resolve_read(desired, Ok((current, unsplit)), report);
    }
    let mut held = Held::default();
    let attempt = resolve_in_scope(&desired, &current, &unsplit, &mut held).and_then(|resolved| {
        let on_no_cluster_read = |a: &&Name| !resolved.state.clusters.values().any(|c| c.accounts.contains(a.as_str()));
        if let Some(q) = current.qos.keys().find(|q| !resolved.state.qos.contains_key(*q)) {
            Err(format!("whether another cluster uses QoS `{q}`, which the desired file drops"))
        } else if let Some(a) = desired.accounts.keys().find(on_no_cluster_read) {
            Err(format!("the clusters holding account `{a}`, whose record the desired file declares"))
        } else {
            Ok(resolved)
        }
    });
    let why = match attempt {
        Ok(resolved) => {
            held.replay(report);
            return Ok(Resolution { desired, current, resolved });
        }
        Err(why) => why,
    };
    drop((current, unsplit));
    resolve_read(desired, read_whole(&why), report)
}

/// Resolve a loaded desired file against a state already read.
fn resolve_read<E>(
    d: Desired,
    read: Result<(State, Vec<Unsplit>), E>,
    report: &mut dyn Report,
) -> Result<Resolution, Refusal<E>> {
    let (current, unsplit) = read.map_err(Refusal::Current)?;
    let resolved = match desired::resolve::resolve(&d, &current) {
        Ok(r) => r,
        Err(diags) => return Err(Refusal::Resolve { path: d.path.clone(), diags }),
    };
    report.warnings(Stage::Resolve, resolved.warnings.clone());
    check_unsplit(&unsplit, &d, &resolved.managed, report)?;
    Ok(Resolution { desired: d, current, resolved })
}

/// What a scoped attempt reports, held until it is known to stand.
#[derive(Default)]
struct Held {
    warnings: Vec<(Stage, Vec<Diagnostic>)>,
    phases: Vec<(String, Duration)>,
}

impl Report for Held {
    fn warnings(&mut self, stage: Stage, diags: Vec<Diagnostic>) {
        self.warnings.push((stage, diags));
    }
    fn targeted(&mut self, _: &[String]) {}
    fn phase(&mut self, name: &str, took: Duration) {
        self.phases.push((name.to_string(), took));
    }
}

impl Held {
    fn replay(self, report: &mut dyn Report) {
        for (stage, diags) in self.warnings {
            report.warnings(stage, diags);
        }
        for (name, took) in self.phases {
            report.phase(&name, took);
        }
    }
}

/// `--cluster C`: keep only those clusters of the desired file; the others are left as they are.
/// Naming a cluster the file does not declare is refused.
fn select_clusters<E>(clusters: &[String], d: &mut Desired) -> Result<(), Refusal<E>> {
    if clusters.is_empty() {
        return Ok(());
    }
    let mut keep = BTreeSet::new();
    for c in clusters {
        let name = Name::parse(c, NameKind::Cluster, false).map_err(Refusal::ClusterName)?.name;
        if !d.clusters.contains_key(&name) {
            return Err(Refusal::UnknownCluster {
                name,
                path: d.path.clone(),
                known: d.clusters.keys().cloned().collect(),
            });
        }
        keep.insert(name);
    }
    d.clusters.retain(|c, _| keep.contains(c));
    Ok(())
}

/// Rows that cannot be split, against the managed scope: one that may hold a managed account
/// (any run of its cells names one, or matches a managed prefix or root) is an error, since
/// the plan would be made without it; the others belong to objects slurmplan leaves alone and
/// are warnings.
fn check_unsplit<E>(
    unsplit: &[Unsplit],
    d: &Desired,
    managed: &BTreeMap<Name, BTreeSet<Name>>,
    report: &mut dyn Report,
) -> Result<(), Refusal<E>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for u in unsplit {
        let set = managed.get(u.cluster());
        let hit = u.names().into_iter().find(|n| {
            let Ok(name) = Name::from_sacctmgr(n, NameKind::Account) else { return false };
            set.is_some_and(|s| s.contains(&name)) || d.scope.manages_account(&name, std::iter::empty())
        });
        match hit {
            Some(n) => errors.push(u.diagnostic(
                true,
                &format!(
                    "it may belong to the managed account `{n}`; rename the object in slurmdbd (a name without `|`)"
                ),
            )),
            None => warnings.push(u.diagnostic(false, "outside the managed scope: left as it is")),
        }
    }
    report.warnings(Stage::Unsplit, warnings);
    if errors.is_empty() { Ok(()) } else { Err(Refusal::Unsplit(errors)) }
}

/// Managed objects: every managed account and its user associations (the base of the
/// mass-delete limit).
fn managed_objects(current: &State, managed: &BTreeMap<Name, BTreeSet<Name>>) -> usize {
    managed
        .iter()
        .map(|(c, accts)| {
            let users = current
                .clusters
                .get(c)
                .map(|cs| accts.iter().map(|a| cs.users_of_account(a).count()).sum())
                .unwrap_or(0);
            accts.len() + users
        })
        .sum()
}

/// The most deletes a plan may hold without `--allow-mass-delete`: 20, or 10% of the managed
/// objects when that is more (docs/decisions.md).
pub fn mass_delete_limit(managed: usize) -> usize {
    std::cmp::max(20, managed / 10)
}

/// Refuse plans that delete more than [`mass_delete_limit`]; when allowed, record lint SP005.
/// An account's own associations go with it: a deleted account counts once.
fn mass_delete_guard<E>(plan: &mut Plan, managed: usize, allow: bool) -> Result<(), Refusal<E>> {
    let deleted_accounts: BTreeSet<(&Name, &Name)> = plan
        .changes
        .iter()
        .filter_map(|c| match &c.change {
            Change::AccountDelete { cluster, name, .. } => Some((cluster, name)),
            _ => None,
        })
        .collect();
    let deletes = plan
        .changes
        .iter()
        .filter(|c| match &c.change {
            Change::UserDelete { cluster, key, .. } => !deleted_accounts.contains(&(cluster, &key.account)),
            _ => c.action == Action::Delete,
        })
        .count();
    let limit = mass_delete_limit(managed);
    if deletes > limit && !allow {
        return Err(Refusal::MassDelete { deletes, limit, managed });
    }
    if deletes > limit {
        plan.lints.push(plan::lints::mass_delete_lint(deletes, limit, managed));
    }
    Ok(())
}
