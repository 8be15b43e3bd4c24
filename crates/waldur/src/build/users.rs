//! Stage 4 of the Waldur build: the user associations of an allocation (its team members, in
//! its partitions) and, once every resource is done, the DefaultAccount policy.
//!
//! Must not: drop a team member silently (every member left out gets a warning), or name a
//! DefaultAccount under `individual` (the API does not say which the agent chose).

use std::collections::BTreeMap;

use super::{Acc, B, Policy, Settings, Tree, usable_state};
use crate::pages::{Pages, Resource, norm_uuid};
use slurmplan_diag::{Diagnostic, Location};
use slurmplan_model::names::{Name, NameKind, root};

/// Offering users: username -> the states of its offering users.
pub(super) fn offering_user_states(ex: &Pages) -> BTreeMap<&str, Vec<&str>> {
    let mut ou_states: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for u in &ex.offering_users {
        if let Some(n) = &u.username {
            ou_states.entry(n.as_str()).or_default().push(u.state.as_str());
        }
    }
    ou_states
}

impl B<'_> {
    /// Add the team members of `r` to `acc` (allocation `alloc`) in each of its partitions,
    /// and note them in `t.user_partitions` for the DefaultAccount policy. Precondition: `acc`
    /// is the allocation account from [`B::levers`]. A resource with `restrict_member_access`
    /// gets no users; a live one without a team file is an error.
    pub(super) fn members(
        &mut self,
        t: &mut Tree,
        ex: &Pages,
        ou_states: &BTreeMap<&str, Vec<&str>>,
        r: &Resource,
        alloc: &Name,
        acc: &mut Acc,
    ) {
        let (partitions, from_default) = self.partitions(r);
        let share_parent = !(from_default && self.s.default_partition.is_some());
        if r.restrict_member_access {
            return;
        }
        let Some(team) = ex.teams.get(&norm_uuid(&r.uuid)) else {
            self.diags.push(
                Diagnostic::error(
                    "export-missing-team",
                    format!("resource `{}` (`{alloc}`) has no team file in the export", r.uuid),
                )
                .at(Location { file: ex.dir.clone(), line: 0, column: 0 })
                .hint(format!(
                    "save GET /api/marketplace-provider-resources/{}/team/ as team-{}.json (an empty team is `[]`)",
                    r.uuid, r.uuid
                )),
            );
            return;
        };
        for m in team {
            let Some(u) = &m.offering_user_username else {
                let who = m
                    .username
                    .as_deref()
                    .or(m.full_name.as_deref())
                    .map(|w| format!("`{w}`"))
                    .unwrap_or_else(|| "a member without a name".into());
                self.warn_r(
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
            self.check_state(r, alloc, u, &states);
            let user = match Name::parse(u, NameKind::User, false) {
                Ok(p) => p.name,
                Err(e) => {
                    self.warn_r(r, "waldur-bad-name", format!("resource `{}`: {e}; user left out", r.uuid), e.hint);
                    continue;
                }
            };
            for p in &partitions {
                acc.users.insert((user.clone(), p.clone()), share_parent);
                t.user_partitions.entry(user.clone()).or_default().insert(p.clone(), share_parent);
            }
        }
    }

    /// Warn about a member whose offering-user state is unknown or not usable; they are kept
    /// either way, as the agent's membership sync adds every team member with a username.
    fn check_state(&mut self, r: &Resource, alloc: &Name, u: &str, states: &[&str]) {
        if states.is_empty() {
            self.warn_r(
                r,
                "waldur-user-state-unknown",
                format!("user `{u}` of resource `{}` has no offering-user state; kept", r.uuid),
                "check that offering-users*.json covers every page",
            );
        } else if !states.iter().any(|st| usable_state(st)) {
            // The agent's membership sync adds every team member that has a
            // username, whatever the state: leaving them out would flip-flop.
            self.warn_r(
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
    }

    /// The partitions of `r`'s user associations: its `partition` attribute with
    /// `enforce_offering_partitions`, else `default_partition` (or none); the flag says the
    /// latter was used. Invalid partition names are dropped with a warning.
    fn partitions(&mut self, r: &Resource) -> (Vec<Option<Name>>, bool) {
        let s = self.s;
        let mut p: Vec<Option<Name>> = Vec::new();
        if s.enforce_offering_partitions
            && let Some(list) = &r.attr_partition
        {
            for part in list.split(',').map(str::trim).filter(|x| !x.is_empty()) {
                match Name::parse(part, NameKind::Partition, false) {
                    Ok(n) => p.push(Some(n.name)),
                    Err(e) => self.warn_r(
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
    }
}

/// The DefaultAccount policy: under `common`, declare `default_account` with an association
/// for every user of an allocation (in the same partitions) and return user -> default.
/// Precondition: every resource is done. Under `individual` and `none` it declares nothing.
pub(super) fn default_accounts(s: &Settings, t: &mut Tree) -> BTreeMap<Name, Name> {
    let mut defaults: BTreeMap<Name, Name> = BTreeMap::new();
    match s.policy {
        Policy::Common => {
            let entry = t.accounts.entry(s.default_account.clone()).or_insert_with(|| Acc {
                parent: Some(root()),
                origin: "config".into(),
                ..Default::default()
            });
            let note = "default_account (policy common): every Waldur user is a member";
            entry.comment = Some(match &entry.comment {
                Some(c) => format!("{c}; {note}"),
                None => note.to_string(),
            });
            for (u, parts) in &t.user_partitions {
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
    defaults
}
