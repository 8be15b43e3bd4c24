//! Exports + settings -> the desired-state YAML text, implementing the SLURM plugin's
//! `backend_settings` behaviours (docs/waldur.md in the crate says which and how).
//!
//! [`build`] runs the stages in order, one file each: [`scope`] (cluster, managed scope, the
//! tier above the allocations), [`tiers`] (a resource's allocation, project and customer
//! accounts), [`limits`] (GrpTRESMins and the QoS / pause levers), [`users`] (team members and
//! the DefaultAccount policy), then [`yaml`] writes the YAML. The stages fill one [`Tree`];
//! every problem goes to the one diagnostics list of [`B`], sorted once at the end.
//!
//! Output is deterministic (sorted, no timestamps) and always loadable by `desired::load_str`.
//! Must not: print, spawn processes, use the network, read files, or see the API token
//! ([`Settings`] has none).

mod limits;
mod scope;
mod tiers;
mod users;
mod yaml;

use std::collections::{BTreeMap, BTreeSet};

use super::config::{Policy, Settings};
use super::pages::{Pages, Resource};
use scope::Scope;
use slurmplan_diag::{self as diag, Diagnostic, Location};
use slurmplan_model::names::{self, Name, NameKind};
use slurmplan_model::values::Tres;

/// Options that do not come from the config.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// `--cluster`: used when the config has no `cluster_name` (must agree when both are set).
    pub cluster: Option<String>,
}

/// The result of a build.
#[derive(Debug, Clone)]
pub struct Built {
    pub yaml: String,
    pub warnings: Vec<Diagnostic>,
    /// Facts worth a line that are neither errors nor warnings (e.g. a resource with `limits: {}`).
    pub infos: Vec<String>,
    /// Resources in the export, live ones among them, and live ones that became accounts.
    pub resources: usize,
    pub live: usize,
    pub allocations: usize,
    pub accounts: usize,
    pub users: usize,
}

/// Offering-user states that keep a user (`Pending*` too).
pub fn usable_state(state: &str) -> bool {
    matches!(state, "OK" | "Requested" | "Creating") || state.starts_with("Pending")
}

#[derive(Debug, Default)]
struct Acc {
    parent: Option<Name>,
    comment: Option<String>,
    description: Option<String>,
    organization: Option<String>,
    qos: Vec<Name>,
    default_qos: Option<Name>,
    grp_submit_jobs: Option<u64>,
    grp_tres_mins: Tres,
    /// (user, partition) -> `Share=parent` (the agent's every add but the one with
    /// `default_partition`, whose `Partition=P` add leaves the share at Slurm's default).
    users: BTreeMap<(Name, Option<Name>), bool>,
    /// Which resource made it (for duplicate warnings).
    origin: String,
}

#[derive(Debug, Default)]
struct QosOut {
    flags: Vec<String>,
    grp_tres: Tres,
    grp_tres_mins: Tres,
    max_wall: Option<u64>,
    comment: String,
}

/// The accounts and QoS the stages declare, and what they learned on the way.
#[derive(Debug, Default)]
struct Tree {
    accounts: BTreeMap<Name, Acc>,
    qos: BTreeMap<Name, QosOut>,
    /// Component -> the resources whose limit for it was dropped (not in `backend_components`).
    dropped_components: BTreeMap<String, Vec<String>>,
    allocations: BTreeSet<Name>,
    /// The partitions of a user's allocation associations: under `common` the agent's
    /// `add user ... DefaultAccount=D [Partition=P]` creates the D association in the same ones.
    user_partitions: BTreeMap<Name, BTreeMap<Option<Name>, bool>>,
    /// Project account -> (its customer account, the first resource that placed it there).
    project_customer: BTreeMap<Name, (Name, String)>,
}

/// The build's context: the settings, and the messages every stage adds to.
struct B<'a> {
    s: &'a Settings,
    /// `offerings[i].backend_settings`, for key paths in messages.
    bs: String,
    diags: Vec<Diagnostic>,
    infos: Vec<String>,
}

impl B<'_> {
    fn at_resource(&self, r: &Resource) -> Location {
        Location { file: r.file.clone(), line: 0, column: 0 }
    }
    fn at_config(&self) -> Location {
        Location { file: self.s.path.clone(), line: 0, column: 0 }
    }
    fn warn_r(&mut self, r: &Resource, code: &'static str, msg: String, hint: impl Into<String>) {
        let d = Diagnostic::warning(code, msg).at(self.at_resource(r)).hint(hint);
        self.diags.push(d);
    }
    fn error_cfg(&mut self, code: &'static str, msg: String, hint: impl Into<String>) {
        let d = Diagnostic::error(code, msg).at(self.at_config()).hint(hint);
        self.diags.push(d);
    }

    /// An account name from Waldur data: lower-cased and validated.
    fn account_name(&mut self, r: &Resource, raw: &str, what: &str) -> Option<Name> {
        match Name::parse(&raw.to_lowercase(), NameKind::Account, false) {
            Ok(p) => Some(p.name),
            Err(e) => {
                self.warn_r(
                    r,
                    "waldur-bad-name",
                    format!(
                        "resource `{}` is skipped: its {what} account `{raw}` is not a valid name ({})",
                        r.uuid, e.reason
                    ),
                    "fix the slug or backend_id in Waldur",
                );
                None
            }
        }
    }
}

/// Free text (Description) from a Waldur name: quotes and control characters removed.
fn text(s: &str) -> Option<String> {
    let cleaned: String = s.chars().filter(|c| !c.is_control() && !matches!(c, '\'' | '"' | '`')).collect();
    let cleaned = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    names::free_text(&cleaned).ok().map(|_| cleaned)
}

fn round(v: f64) -> Option<u64> {
    (v.is_finite() && (0.0..1.8e19).contains(&v)).then(|| v.round() as u64)
}

/// Build the desired YAML. `Err` holds every error (with the warnings found so far).
///
/// Runs the stages in their fixed order (the order of messages that are not sorted, `infos`,
/// follows it); no stage is skipped because an earlier one found errors, so every problem is
/// reported at once. Nothing is rendered when there is an error.
pub fn build(s: &Settings, ex: &Pages, opts: &BuildOptions) -> Result<Built, Vec<Diagnostic>> {
    let mut b = B { s, bs: format!("offerings[{}].backend_settings", s.index), diags: Vec::new(), infos: Vec::new() };
    let scope = b.scope(opts);
    let ou_states = users::offering_user_states(ex);
    let mut t = Tree::default();
    scope.insert_top(&mut t);
    let live: Vec<&Resource> = ex.resources.iter().filter(|r| r.is_live()).collect();
    for r in &live {
        b.resource(&mut t, &scope, ex, &ou_states, r);
    }
    b.dropped_components(&t);
    let defaults = users::default_accounts(s, &mut t);

    if diag::has_errors(&b.diags) {
        diag::sort(&mut b.diags);
        return Err(b.diags);
    }
    let cluster = scope.cluster.clone().expect("cluster is set when there is no error");
    let counts = yaml::Counts { resources: ex.resources.len(), live: live.len() };
    let (yaml, users) = yaml::write(s, &scope, &t, &defaults, &cluster, counts);
    diag::sort(&mut b.diags);
    Ok(Built {
        yaml,
        warnings: b.diags,
        infos: b.infos,
        resources: ex.resources.len(),
        live: live.len(),
        allocations: t.allocations.len(),
        accounts: t.accounts.len(),
        users,
    })
}

impl B<'_> {
    /// One live resource: its accounts ([`tiers`]), limits and levers ([`limits`]), members
    /// ([`users`]). A resource skipped with a warning adds nothing to `t`.
    fn resource(
        &mut self,
        t: &mut Tree,
        scope: &Scope,
        ex: &Pages,
        ou_states: &BTreeMap<&str, Vec<&str>>,
        r: &Resource,
    ) {
        let Some((alloc, project)) = self.place(t, scope, r) else { return };
        let limits = self.limits(t, r, &alloc);
        let mut acc = self.levers(t, r, &alloc, &project, limits);
        self.members(t, ex, ou_states, r, &alloc, &mut acc);
        t.allocations.insert(alloc.clone());
        t.accounts.insert(alloc, acc);
    }
}
