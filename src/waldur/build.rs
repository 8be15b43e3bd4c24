//! Exports + settings -> the desired-state YAML text, implementing the SLURM plugin's
//! `backend_settings` behaviours (docs/waldur.md in the crate says which and how).
//!
//! Output is deterministic (sorted, no timestamps) and always loadable by `desired::load_str`.
//! Must not: print, spawn processes, use the network, read files, or see the API token
//! ([`Settings`] has none).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::config::{Policy, Settings};
use super::export::{Export, Resource, norm_uuid};
use crate::diag::{self, Diagnostic, Location};
use crate::model::names::{self, Name, NameKind, root};
use crate::model::values::Tres;

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

struct B<'a> {
    s: &'a Settings,
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
pub fn build(s: &Settings, ex: &Export, opts: &BuildOptions) -> Result<Built, Vec<Diagnostic>> {
    let mut b = B { s, diags: Vec::new(), infos: Vec::new() };
    let bs = format!("offerings[{}].backend_settings", s.index);

    // Cluster.
    let cluster = match (&s.cluster_name, &opts.cluster) {
        (Some(c), Some(o)) if c.as_str() != o.to_lowercase() => {
            b.error_cfg(
                "waldur-cluster",
                format!("`--cluster {o}` disagrees with `{bs}.cluster_name` `{c}`"),
                "drop --cluster, or fix cluster_name",
            );
            None
        }
        (Some(c), _) => Some(c.clone()),
        (None, Some(o)) => match Name::parse(o, NameKind::Cluster, false) {
            Ok(p) => Some(p.name),
            Err(e) => {
                b.error_cfg("waldur-cluster", format!("`--cluster`: {e}"), e.hint);
                None
            }
        },
        (None, None) => {
            b.error_cfg(
                "waldur-cluster",
                format!("`{bs}.cluster_name` is not set, so the cluster is unknown"),
                "pass --cluster NAME (the Slurm cluster of this offering), or set cluster_name in the config",
            );
            None
        }
    };
    let nested = s.parent_account.is_none();
    if s.policy == Policy::Common && s.default_account == root() {
        b.error_cfg(
            "waldur-default-root",
            format!(
                "`{bs}.default_account` is `root` with policy `common`: every Waldur user needs an association with the default account, and declaring them would make slurmplan own every user association on `root`"
            ),
            "use a dedicated default account (e.g. `waldur_default`), or default_account_policy `individual` or `none`",
        );
    }
    // Managed scope.
    let use_roots = nested && s.root_account != root();
    let mut prefixes: Vec<String> = Vec::new();
    if !use_roots {
        for (key, p) in [
            ("customer_prefix", &s.customer_prefix),
            ("project_prefix", &s.project_prefix),
            ("allocation_prefix", &s.allocation_prefix),
        ] {
            if p.is_empty() {
                b.error_cfg(
                    "waldur-empty-prefix",
                    format!(
                        "`{bs}.{key}` is empty, so the managed scope (account name prefixes) would match every account"
                    ),
                    "give every prefix a value, e.g. `hpc_p_`",
                );
            } else if !prefixes.contains(p) {
                prefixes.push(p.clone());
            }
        }
    }

    // Offering users: username -> states.
    let mut ou_states: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for u in &ex.offering_users {
        if let Some(n) = &u.username {
            ou_states.entry(n.as_str()).or_default().push(u.state.as_str());
        }
    }

    let mut accounts: BTreeMap<Name, Acc> = BTreeMap::new();
    let mut qos: BTreeMap<Name, QosOut> = BTreeMap::new();
    let mut dropped_components: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut allocations: BTreeSet<Name> = BTreeSet::new();
    let mut user_allocs: BTreeMap<Name, BTreeSet<Name>> = BTreeMap::new();
    // The partitions of a user's allocation associations: under `common` the agent's
    // `add user ... DefaultAccount=D [Partition=P]` creates the D association in the same ones.
    let mut user_partitions: BTreeMap<Name, BTreeMap<Option<Name>, bool>> = BTreeMap::new();
    let mut project_customer: BTreeMap<Name, (Name, String)> = BTreeMap::new();
    let live: Vec<&Resource> = ex.resources.iter().filter(|r| r.is_live()).collect();
    let qm = &s.qos_management;

    // Tier accounts above the allocations.
    let top: Option<Name> =
        if nested { (s.root_account != root()).then(|| s.root_account.clone()) } else { s.parent_account.clone() };
    if nested && let Some(t) = &top {
        accounts.insert(
            t.clone(),
            Acc {
                parent: Some(root()),
                comment: Some("root of the Waldur tree (root_account)".into()),
                origin: "config".into(),
                ..Default::default()
            },
        );
    }

    for r in &live {
        // Allocation name.
        let raw = match (&r.backend_id, &r.slug) {
            (Some(id), _) => id.clone(),
            (None, Some(slug)) => format!("{}{slug}", s.allocation_prefix),
            (None, None) => {
                b.warn_r(
                    r,
                    "waldur-unnamed-resource",
                    format!("resource `{}` (`{}`) has neither `slug` nor `backend_id`; it is skipped", r.uuid, r.name),
                    "give it a slug in Waldur; its account stays as it is until then",
                );
                continue;
            }
        };
        let Some(alloc) = b.account_name(r, &raw, "allocation") else { continue };
        let Some(project) = b.account_name(r, &format!("{}{}", s.project_prefix, r.project_slug), "project") else {
            continue;
        };
        let customer = if nested {
            let Some(c) = b.account_name(r, &format!("{}{}", s.customer_prefix, r.customer_slug), "customer") else {
                continue;
            };
            Some(c)
        } else {
            None
        };
        if let Some(prev) = accounts.get(&alloc) {
            let prev = prev.origin.clone();
            b.warn_r(
                r,
                "waldur-duplicate-account",
                format!("resource `{}` maps to account `{alloc}`, which {prev} already uses; it is skipped", r.uuid),
                "give the resources distinct backend_id/slug values in Waldur",
            );
            continue;
        }
        if !use_roots && !prefixes.iter().any(|p| alloc.as_str().starts_with(p.as_str())) {
            b.warn_r(
                r,
                "waldur-outside-scope",
                format!(
                    "account `{alloc}` of resource `{}` does not start with a managed prefix; once the resource ends slurmplan will not delete it",
                    r.uuid
                ),
                "use backend_ids that start with allocation_prefix",
            );
        }
        // Project (and customer) tiers.
        let project_parent = match (&customer, &top) {
            (Some(c), _) => c.clone(),
            (None, Some(t)) => t.clone(),
            (None, None) => root(),
        };
        if let Some(c) = &customer {
            let collides = accounts.get(c).is_some_and(|a| !a.origin.starts_with("customer"));
            if collides {
                b.warn_r(
                    r,
                    "waldur-duplicate-account",
                    format!("resource `{}`: customer account `{c}` collides with another account; skipped", r.uuid),
                    "give customers, projects and allocations distinct prefixes",
                );
                continue;
            }
        }
        if let Some(pa) = accounts.get(&project)
            && !pa.origin.starts_with("project")
        {
            b.warn_r(
                r,
                "waldur-duplicate-account",
                format!("resource `{}`: project account `{project}` collides with another account; skipped", r.uuid),
                "give customers, projects and allocations distinct prefixes",
            );
            continue;
        }
        if let Some((c, first)) = project_customer.get(&project)
            && customer.as_ref() != Some(c)
        {
            let first = first.clone();
            b.warn_r(
                r,
                "waldur-inconsistent-project",
                format!(
                    "resource `{}` puts project `{project}` under `{}`, resource `{first}` under `{c}`; the first wins",
                    r.uuid,
                    customer.as_ref().map(Name::as_str).unwrap_or("")
                ),
                "re-export: the pages were probably taken while the project moved",
            );
        }
        if let Some(c) = &customer {
            accounts.entry(c.clone()).or_insert_with(|| Acc {
                parent: top.clone().or(Some(root())),
                comment: Some(format!("customer {} ({})", r.customer_slug, r.customer_uuid)),
                description: text(&r.customer_name),
                organization: Some(c.to_string()),
                origin: "customer".into(),
                ..Default::default()
            });
            project_customer.entry(project.clone()).or_insert_with(|| (c.clone(), r.uuid.clone()));
        }
        accounts.entry(project.clone()).or_insert_with(|| Acc {
            parent: Some(project_parent),
            comment: Some(format!("project {} ({}) customer {}", r.project_slug, r.project_uuid, r.customer_slug)),
            description: text(&r.project_name),
            organization: Some(project.to_string()),
            origin: "project".into(),
            ..Default::default()
        });

        // Limits.
        let mut limits = Tres::new();
        if r.limits.is_empty() && r.null_limits.is_empty() {
            b.infos.push(format!(
                "resource `{}` (`{alloc}`) has no limits (`{{}}`): no GrpTRESMins is declared for it",
                r.uuid
            ));
        }
        for comp in &r.null_limits {
            b.warn_r(
                r,
                "waldur-null-limit",
                format!("resource `{}` (`{alloc}`) has limit `{comp}` = null; no GrpTRESMins for `{comp}`", r.uuid),
                "set the limit in Waldur (or remove the component from the resource)",
            );
        }
        for (comp, limit) in &r.limits {
            let Some(c) = s.components.get(comp) else {
                dropped_components.entry(comp.clone()).or_default().push(r.uuid.clone());
                continue;
            };
            if *limit == 0.0 {
                b.warn_r(
                    r,
                    "waldur-zero-limit",
                    format!(
                        "resource `{}` (`{alloc}`) has limit `{comp}` = 0: GrpTRESMins {comp}=0 blocks every job of the allocation",
                        r.uuid
                    ),
                    "if that is not meant, fix the limit in Waldur (the agent pushes `mem: 0` back when it misreads a limit such as `mem=4687.50T`)",
                );
            }
            let targets: Vec<(&String, f64)> = if c.targets.is_empty() {
                vec![(comp, c.unit_factor)]
            } else {
                c.targets.iter().map(|(t, f)| (t, *f)).collect()
            };
            for (tres, factor) in targets {
                match round(limit * factor) {
                    Some(0) if *limit > 0.0 && factor > 0.0 => b.diags.push(
                        Diagnostic::error(
                            "waldur-limit-rounds-to-zero",
                            format!(
                                "resource `{}` (`{alloc}`) has limit `{comp}` = {limit}, which is {} {tres}-minutes and rounds to 0 (a cap that blocks every job)",
                                r.uuid,
                                limit * factor
                            ),
                        )
                        .at(b.at_resource(r))
                        .hint("fix the limit in Waldur, or the component's unit_factor in the agent config"),
                    ),
                    Some(v) => *limits.entry(tres.clone()).or_insert(0) += v,
                    None => b.diags.push(
                        Diagnostic::error(
                            "waldur-bad-limit",
                            format!(
                                "resource `{}` (`{alloc}`) limit `{comp}` = {limit} gives no valid GrpTRESMins",
                                r.uuid
                            ),
                        )
                        .at(b.at_resource(r))
                        .hint("limits must be numbers >= 0 that fit in 64 bits once multiplied by unit_factor"),
                    ),
                }
            }
        }

        // QoS and pause levers.
        let mut acc = Acc {
            parent: Some(project.clone()),
            comment: Some(format!(
                "resource {} project {} customer {}{}",
                r.uuid,
                r.project_slug,
                r.customer_slug,
                match (r.paused, r.downscaled) {
                    (true, _) => " (paused)",
                    (false, true) => " (downscaled)",
                    _ => "",
                }
            )),
            description: text(&r.name),
            organization: Some(project.to_string()),
            origin: format!("resource `{}`", r.uuid),
            ..Default::default()
        };
        if qm.enabled {
            qos.insert(
                alloc.clone(),
                QosOut {
                    flags: qm.flags.clone(),
                    grp_tres: qm.grp_tres.clone(),
                    grp_tres_mins: if qm.apply_limits_to_qos { limits.clone() } else { Tres::new() },
                    max_wall: qm.max_wall,
                    comment: format!("qos_management: QoS of allocation `{alloc}`"),
                },
            );
        }
        if !qm.apply_limits_to_qos {
            acc.grp_tres_mins = limits;
        }
        let active_qos = if qm.enabled {
            alloc.clone()
        } else {
            s.qos_default.clone().unwrap_or_else(|| Name::from_static("normal"))
        };
        if qm.skip_qos_swap {
            if qm.enabled {
                acc.qos = vec![alloc.clone()];
                acc.default_qos = Some(alloc.clone());
            }
            if r.paused || r.downscaled {
                acc.grp_submit_jobs = Some(0);
            }
        } else {
            let swapped = if r.paused {
                if s.qos_paused.is_none() {
                    b.warn_r(
                        r,
                        "waldur-no-pause-qos",
                        format!(
                            "resource `{}` is paused but `{bs}.qos_paused` is not set; `{alloc}` keeps its active QoS",
                            r.uuid
                        ),
                        "set qos_paused, or use qos_management.skip_qos_swap",
                    );
                }
                s.qos_paused.clone()
            } else if r.downscaled {
                if s.qos_downscaled.is_none() {
                    b.warn_r(
                        r,
                        "waldur-no-downscale-qos",
                        format!(
                            "resource `{}` is downscaled but `{bs}.qos_downscaled` is not set; `{alloc}` keeps its active QoS",
                            r.uuid
                        ),
                        "set qos_downscaled, or use qos_management.skip_qos_swap",
                    );
                }
                s.qos_downscaled.clone()
            } else {
                None
            };
            // The agent writes `qos=<x>` only and never introduces a DefaultQOS; with
            // qos_management it gave the account one (its own QoS), which moves along.
            let q = swapped.unwrap_or(active_qos);
            acc.qos = vec![q.clone()];
            if qm.enabled {
                acc.default_qos = Some(q);
            }
        }

        // Users.
        let partitions: (Vec<Option<Name>>, bool) = {
            let mut p: Vec<Option<Name>> = Vec::new();
            if s.enforce_offering_partitions
                && let Some(list) = &r.attr_partition
            {
                for part in list.split(',').map(str::trim).filter(|x| !x.is_empty()) {
                    match Name::parse(part, NameKind::Partition, false) {
                        Ok(n) => p.push(Some(n.name)),
                        Err(e) => b.warn_r(
                            r,
                            "waldur-bad-name",
                            format!("resource `{}`: {e}; partition dropped", r.uuid),
                            e.hint,
                        ),
                    }
                }
            }
            let from_default = p.is_empty();
            if from_default {
                p.push(s.default_partition.clone());
            }
            (p, from_default)
        };
        let (partitions, from_default) = partitions;
        let share_parent = !(from_default && s.default_partition.is_some());
        if !r.restrict_member_access {
            match ex.teams.get(&norm_uuid(&r.uuid)) {
                None => b.diags.push(
                    Diagnostic::error(
                        "export-missing-team",
                        format!("resource `{}` (`{alloc}`) has no team file in the export", r.uuid),
                    )
                    .at(Location { file: ex.dir.clone(), line: 0, column: 0 })
                    .hint(format!(
                        "save GET /api/marketplace-provider-resources/{}/team/ as team-{}.json (an empty team is `[]`)",
                        r.uuid, r.uuid
                    )),
                ),
                Some(team) => {
                    for m in team {
                        let Some(u) = &m.offering_user_username else {
                            let who = m
                                .username
                                .as_deref()
                                .or(m.full_name.as_deref())
                                .map(|w| format!("`{w}`"))
                                .unwrap_or_else(|| "a member without a name".into());
                            b.warn_r(
                                r,
                                "waldur-member-without-username",
                                format!(
                                    "team member {who} of resource `{}` (`{alloc}`) has no offering_user_username; no association is declared for them",
                                    r.uuid
                                ),
                                "the agent skips them too; once Waldur assigns the offering user a username, re-export",
                            );
                            continue;
                        };
                        let states: Vec<&str> = match ou_states.get(u.as_str()) {
                            Some(v) => v.clone(),
                            None => m.offering_user_state.as_deref().into_iter().collect(),
                        };
                        if states.is_empty() {
                            b.warn_r(
                                r,
                                "waldur-user-state-unknown",
                                format!("user `{u}` of resource `{}` has no offering-user state; kept", r.uuid),
                                "check that offering-users*.json covers every page",
                            );
                        } else if !states.iter().any(|st| usable_state(st)) {
                            // The agent's membership sync adds every team member that has a
                            // username, whatever the state: leaving them out would flip-flop.
                            b.warn_r(
                                r,
                                "waldur-user-unusable",
                                format!(
                                    "user `{u}` of resource `{}` (`{alloc}`) is in offering-user state `{}` but still in the team; kept, because the site agent adds every team member",
                                    r.uuid,
                                    states.join(",")
                                ),
                                "remove the user from the project team in Waldur (or fix the offering user) to revoke access",
                            );
                        }
                        let user = match Name::parse(u, NameKind::User, false) {
                            Ok(p) => p.name,
                            Err(e) => {
                                b.warn_r(
                                    r,
                                    "waldur-bad-name",
                                    format!("resource `{}`: {e}; user left out", r.uuid),
                                    e.hint,
                                );
                                continue;
                            }
                        };
                        for p in &partitions {
                            acc.users.insert((user.clone(), p.clone()), share_parent);
                            user_partitions.entry(user.clone()).or_default().insert(p.clone(), share_parent);
                        }
                        user_allocs.entry(user).or_default().insert(alloc.clone());
                    }
                }
            }
        }
        allocations.insert(alloc.clone());
        accounts.insert(alloc, acc);
    }
    for (comp, uuids) in &dropped_components {
        let d = Diagnostic::warning(
            "waldur-component-dropped",
            format!(
                "component `{comp}` of {} resource(s) is not in `offerings[{}].backend_components`; its limit is dropped (first: `{}`)",
                uuids.len(),
                s.index,
                uuids[0]
            ),
        )
        .at(b.at_config())
        .hint("add it to backend_components with its unit_factor, if it is a TRES of the cluster");
        b.diags.push(d);
    }

    // DefaultAccount policy.
    let mut defaults: BTreeMap<Name, Name> = BTreeMap::new();
    match s.policy {
        Policy::Common => {
            let entry = accounts.entry(s.default_account.clone()).or_insert_with(|| Acc {
                parent: Some(root()),
                origin: "config".into(),
                ..Default::default()
            });
            let note = "default_account (policy common): every Waldur user is a member";
            entry.comment = Some(match &entry.comment {
                Some(c) => format!("{c}; {note}"),
                None => note.to_string(),
            });
            for (u, parts) in &user_partitions {
                for (p, share) in parts {
                    entry.users.entry((u.clone(), p.clone())).or_insert(*share);
                }
                defaults.insert(u.clone(), s.default_account.clone());
            }
        }
        // `individual`: the agent makes the allocation it added the user to last the default;
        // the API does not say when a member was added, so the build names no default and the
        // planner keeps the current one while it is one of the user's associations.
        Policy::Individual | Policy::None => {}
    }

    if diag::has_errors(&b.diags) {
        diag::sort(&mut b.diags);
        return Err(b.diags);
    }
    let cluster = cluster.expect("cluster is set when there is no error");

    // Emit.
    let mut y = String::new();
    let _ = writeln!(y, "# Desired accounting state generated by `slurmplan waldur build` from the Waldur export");
    let _ = writeln!(
        y,
        "# of offering `{}`{}; re-run the build instead of editing this file.",
        s.offering_name.replace('\n', " "),
        s.offering_uuid.as_deref().map(|u| format!(" ({u})")).unwrap_or_default()
    );
    let _ = writeln!(
        y,
        "# hierarchy: {}; default_account_policy: {}; pause: {}",
        if nested { "nested" } else { "flat" },
        s.policy.as_str(),
        if qm.skip_qos_swap { "GrpSubmitJobs=0 (skip_qos_swap)" } else { "QoS swap" }
    );
    let _ = writeln!(
        y,
        "# {} resource(s) in the export, {} live, {} allocation account(s) declared; not-live resources are absent here.",
        ex.resources.len(),
        live.len(),
        allocations.len()
    );
    let _ = writeln!(y, "version: 1");
    let _ = writeln!(y, "managed:");
    if use_roots {
        let _ = writeln!(y, "  roots: [{}]", q(s.root_account.as_str()));
    } else {
        let _ = writeln!(y, "  prefixes: [{}]", prefixes.iter().map(|p| q(p)).collect::<Vec<_>>().join(", "));
    }
    if qm.enabled && !s.allocation_prefix.is_empty() {
        let _ = writeln!(y, "  qos_prefixes: [{}]", q(&s.allocation_prefix));
    }
    let protect: Vec<&Name> =
        [top.as_ref().filter(|_| nested), Some(&s.default_account).filter(|_| s.policy == Policy::Common)]
            .into_iter()
            .flatten()
            .filter(|n| accounts.contains_key(*n))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
    if !protect.is_empty() {
        let _ = writeln!(y, "protect: [{}]", protect.iter().map(|n| q(n.as_str())).collect::<Vec<_>>().join(", "));
    }
    if !qos.is_empty() {
        let _ = writeln!(y, "qos:");
        for (n, o) in &qos {
            let _ = writeln!(y, "  # {}", o.comment);
            let _ = writeln!(y, "  {}:", q(n.as_str()));
            let _ = writeln!(
                y,
                "    flags: [{}]",
                o.flags
                    .iter()
                    .map(|f| if f.chars().all(|c| c.is_ascii_alphanumeric()) { f.clone() } else { q(f) })
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !o.grp_tres.is_empty() {
                let _ = writeln!(y, "    grp_tres: {}", tres(&o.grp_tres));
            }
            if !o.grp_tres_mins.is_empty() {
                let _ = writeln!(y, "    grp_tres_mins: {}", tres(&o.grp_tres_mins));
            }
            if let Some(w) = o.max_wall {
                let _ = writeln!(y, "    max_wall: {w}");
            }
        }
    }
    let _ = writeln!(y, "clusters:");
    let _ = writeln!(y, "  {}:", q(cluster.as_str()));
    let _ = writeln!(y, "    accounts:");
    // Tree order: parents before children, siblings by name.
    let mut children: BTreeMap<Option<&Name>, Vec<&Name>> = BTreeMap::new();
    for (n, a) in &accounts {
        let p = a.parent.as_ref().filter(|p| accounts.contains_key(*p));
        children.entry(p).or_default().push(n);
    }
    let mut order: Vec<&Name> = Vec::new();
    let mut stack: Vec<&Name> = children.get(&None).cloned().unwrap_or_default().into_iter().rev().collect();
    while let Some(n) = stack.pop() {
        order.push(n);
        if let Some(c) = children.get(&Some(n)) {
            stack.extend(c.iter().rev());
        }
    }
    let mut users_total = BTreeSet::new();
    for n in order {
        let a = &accounts[n];
        if let Some(c) = &a.comment {
            let _ = writeln!(y, "      # {c}");
        }
        let _ = writeln!(y, "      {}:", q(n.as_str()));
        let mut any = false;
        let mut line = |y: &mut String, s: String| {
            any = true;
            let _ = writeln!(y, "        {s}");
        };
        if let Some(p) = &a.parent {
            line(&mut y, format!("parent: {}", q(p.as_str())));
        }
        if let Some(d) = &a.description {
            line(&mut y, format!("description: {}", dq(d)));
        }
        if let Some(o) = &a.organization {
            line(&mut y, format!("organization: {}", dq(o)));
        }
        if !a.qos.is_empty() {
            line(&mut y, format!("qos: [{}]", a.qos.iter().map(|x| q(x.as_str())).collect::<Vec<_>>().join(", ")));
        }
        if let Some(d) = &a.default_qos {
            line(&mut y, format!("default_qos: {}", q(d.as_str())));
        }
        if let Some(g) = a.grp_submit_jobs {
            line(&mut y, format!("grp_submit_jobs: {g}"));
        }
        if !a.grp_tres_mins.is_empty() {
            line(&mut y, format!("grp_tres_mins: {}", tres(&a.grp_tres_mins)));
        }
        if !a.users.is_empty() {
            // The agent adds every user association with `Share=parent`.
            line(&mut y, "users:".into());
            for ((u, p), share) in &a.users {
                let mut item = format!("name: {}", q(u.as_str()));
                if let Some(p) = p {
                    item.push_str(&format!(", partition: {}", q(p.as_str())));
                }
                if *share {
                    item.push_str(", fairshare: parent");
                }
                let _ = writeln!(y, "          - {{{item}}}");
            }
            users_total.extend(a.users.keys().map(|(u, _)| u.clone()));
        }
        if !any {
            // an empty mapping
            y.pop();
            y.push_str(" {}\n");
        }
    }
    if !defaults.is_empty() {
        let _ = writeln!(y, "    users:");
        for (u, a) in &defaults {
            let _ = writeln!(y, "      {}: {{default_account: {}}}", q(u.as_str()), q(a.as_str()));
        }
    }
    diag::sort(&mut b.diags);
    Ok(Built {
        yaml: y,
        warnings: b.diags,
        infos: b.infos,
        resources: ex.resources.len(),
        live: live.len(),
        allocations: allocations.len(),
        accounts: accounts.len(),
        users: users_total.len(),
    })
}

/// A scalar that YAML reads back as the same string: plain when safe, else double-quoted.
fn q(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "nan" | "inf"
        );
    if plain { s.to_string() } else { dq(s) }
}

/// Always double-quoted (JSON string syntax is valid YAML).
fn dq(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn tres(t: &Tres) -> String {
    format!("{{{}}}", t.iter().map(|(k, v)| format!("{}: {v}", q(k))).collect::<Vec<_>>().join(", "))
}
