//! Stage 3 of the Waldur build, per placed resource: its GrpTRESMins from the Waldur limits
//! and `backend_components`, and the QoS / pause levers (`qos_*` swap or GrpSubmitJobs=0,
//! `qos_management`'s per-allocation QoS) on its allocation account.
//!
//! Must not: touch other accounts than the one it returns, or drop a limit silently (an
//! unknown component is collected for one warning per component, a bad value is an error).

use super::{Acc, B, QosOut, Tree, round, text};
use crate::pages::Resource;
use slurmplan_diag::Diagnostic;
use slurmplan_model::names::Name;
use slurmplan_model::values::Tres;

impl B<'_> {
    /// The GrpTRESMins of allocation `alloc` of `r`: each limit times its component's
    /// `unit_factor` (or each `target_components` factor), summed per TRES. Precondition: `r`
    /// was placed. Records components the config does not name in `t.dropped_components`.
    pub(super) fn limits(&mut self, t: &mut Tree, r: &Resource, alloc: &Name) -> Tres {
        let s = self.s;
        let mut limits = Tres::new();
        if r.limits.is_empty() && r.null_limits.is_empty() {
            self.infos.push(format!(
                "resource `{}` (`{alloc}`) has no limits (`{{}}`): no GrpTRESMins is declared for it",
                r.uuid
            ));
        }
        for comp in &r.null_limits {
            self.warn_r(
                r,
                "waldur-null-limit",
                format!("resource `{}` (`{alloc}`) has limit `{comp}` = null; no GrpTRESMins for `{comp}`", r.uuid),
                "set the limit in Waldur (or remove the component from the resource)",
            );
        }
        for (comp, limit) in &r.limits {
            let Some(c) = s.components.get(comp) else {
                t.dropped_components.entry(comp.clone()).or_default().push(r.uuid.clone());
                continue;
            };
            if *limit == 0.0 {
                self.warn_r(
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
                    Some(0) if *limit > 0.0 && factor > 0.0 => self.diags.push(
                        Diagnostic::error(
                            "waldur-limit-rounds-to-zero",
                            format!(
                                "resource `{}` (`{alloc}`) has limit `{comp}` = {limit}, which is {} {tres}-minutes and rounds to 0 (a cap that blocks every job)",
                                r.uuid,
                                limit * factor
                            ),
                        )
                        .at(self.at_resource(r))
                        .hint("fix the limit in Waldur, or the component's unit_factor in the agent config"),
                    ),
                    Some(v) => *limits.entry(tres.clone()).or_insert(0) += v,
                    None => self.diags.push(
                        Diagnostic::error(
                            "waldur-bad-limit",
                            format!(
                                "resource `{}` (`{alloc}`) limit `{comp}` = {limit} gives no valid GrpTRESMins",
                                r.uuid
                            ),
                        )
                        .at(self.at_resource(r))
                        .hint("limits must be numbers >= 0 that fit in 64 bits once multiplied by unit_factor"),
                    ),
                }
            }
        }
        limits
    }

    /// The allocation account of `r` under `project`, with its QoS, DefaultQOS, pause lever and
    /// `limits` (on the account, or on its own QoS with `apply_limits_to_qos`, which this
    /// declares in `t.qos` under `qos_management`). Users are added by the next stage.
    pub(super) fn levers(&mut self, t: &mut Tree, r: &Resource, alloc: &Name, project: &Name, limits: Tres) -> Acc {
        let s = self.s;
        let qm = &s.qos_management;
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
            t.qos.insert(
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
            let swapped = self.swapped_qos(r, alloc);
            // The agent writes `qos=<x>` only and never introduces a DefaultQOS; with
            // qos_management it gave the account one (its own QoS), which moves along.
            let q = swapped.unwrap_or(active_qos);
            acc.qos = vec![q.clone()];
            if qm.enabled {
                acc.default_qos = Some(q);
            }
        }
        acc
    }

    /// The QoS a paused (`qos_paused`) or downscaled (`qos_downscaled`) resource swaps to;
    /// `None` when it is neither, or (with a warning) when that setting is missing.
    fn swapped_qos(&mut self, r: &Resource, alloc: &Name) -> Option<Name> {
        let s = self.s;
        let bs = self.bs.clone();
        if r.paused {
            if s.qos_paused.is_none() {
                self.warn_r(
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
                self.warn_r(
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
        }
    }

    /// One warning per component of the export that `backend_components` does not name.
    /// Precondition: every resource went through [`B::limits`].
    pub(super) fn dropped_components(&mut self, t: &Tree) {
        let s = self.s;
        for (comp, uuids) in &t.dropped_components {
            let d = Diagnostic::warning(
                "waldur-component-dropped",
                format!(
                    "component `{comp}` of {} resource(s) is not in `offerings[{}].backend_components`; its limit is dropped (first: `{}`)",
                    uuids.len(),
                    s.index,
                    uuids[0]
                ),
            )
            .at(self.at_config())
            .hint("add it to backend_components with its unit_factor, if it is a TRES of the cluster");
            self.diags.push(d);
        }
    }
}
