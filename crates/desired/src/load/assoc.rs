//! The settings of one association (limits, QoS list, DefaultQOS), with the check that the
//! DefaultQOS is inside the list.
//!
//! Part of the desired-file loader (methods of `Loader`): pure, no I/O, no sacctmgr, no printing.

use std::collections::BTreeSet;

use super::{Fields, Loader};
use crate::tree::Node;
use slurmplan_model::names::NameKind;
use slurmplan_model::values::{self, QosList};
use slurmplan_model::{Assoc, AssocData, Limits};

impl Loader<'_> {
    /// Limits, QoS list and DefaultQOS of one association, with the DefaultQOS-in-list check.
    pub(super) fn assoc(&mut self, f: &Fields<'_>, what: &str) -> Assoc {
        let mut limits = Limits::default();
        if let Some(n) = f.get("fairshare") {
            limits.fairshare = self.fairshare(n);
        }
        let count =
            |l: &mut Self, key: &str| f.get(key).and_then(|n| l.count(n, &format!("{what}.{key}"), values::MAX_COUNT));
        limits.grp_jobs = count(self, "grp_jobs");
        limits.grp_submit_jobs = count(self, "grp_submit_jobs");
        limits.max_jobs = count(self, "max_jobs");
        limits.max_submit_jobs = count(self, "max_submit_jobs");
        let tres =
            |l: &mut Self, key: &str| f.get(key).map(|n| l.tres(n, &format!("{what}.{key}"))).unwrap_or_default();
        limits.grp_tres = tres(self, "grp_tres");
        limits.grp_tres_mins = tres(self, "grp_tres_mins");
        limits.max_tres = tres(self, "max_tres");
        limits.max_tres_mins = tres(self, "max_tres_mins");
        let dur = |l: &mut Self, key: &str| f.get(key).and_then(|n| l.duration(n, &format!("{what}.{key}")));
        limits.grp_wall = dur(self, "grp_wall");
        limits.max_wall = dur(self, "max_wall");

        let mut qos = QosList::Inherit;
        let mut qos_ok = true;
        if let Some(qn) = f.get("qos") {
            match self.name_list(qn, NameKind::Qos, &format!("{what}.qos")) {
                Some(list) if list.is_empty() && matches!(qn.value, Node::Seq(_)) => {
                    qos_ok = false;
                    self.error(
                        "empty-qos-list",
                        qn,
                        format!("`{what}.qos` is empty; an association cannot run jobs without a QoS"),
                        "omit `qos` to inherit the parent's list",
                    );
                }
                Some(list) => {
                    let mut set = BTreeSet::new();
                    for (n, node) in list {
                        let loc = self.at(node);
                        self.qos_refs.entry(n.clone()).or_default().push(loc);
                        set.insert(n);
                    }
                    qos = QosList::Set(set);
                }
                None => qos_ok = false,
            }
        }
        let mut default_qos = None;
        if let Some(dn) = f.get("default_qos")
            && let Some(dq) = self.name(dn, NameKind::Qos, &format!("{what}.default_qos"))
        {
            let loc = self.at(dn);
            self.qos_refs.entry(dq.clone()).or_default().push(loc);
            match &qos {
                QosList::Set(set) if !set.contains(&dq) => self.error(
                    "default-qos-not-in-qos",
                    dn,
                    format!("default_qos `{dq}` is not in `{what}.qos` ({})", values::join(set)),
                    format!("add `{dq}` to `qos`, or pick a default from the list; sacctmgr refuses a DefaultQOS outside the QoS list"),
                ),
                QosList::Inherit if qos_ok => self.warn(
                    "default-qos-unchecked",
                    dn,
                    format!("default_qos `{dq}` of `{what}` is checked against the QoS list it inherits"),
                    "checked at plan time against the inherited list; give `qos` here to check it now",
                ),
                _ => {}
            }
            default_qos = Some(dq);
        }
        AssocData { limits, qos, default_qos }.into()
    }
}
