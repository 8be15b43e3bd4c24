//! Stage 2 of the Waldur build, per live resource: name its allocation, project and (nested)
//! customer accounts, refuse names that collide, and declare the project and customer tiers.
//!
//! Must not: declare the allocation account itself (the caller does, once its limits, levers
//! and users are known), or declare anything for a resource it skips.

use super::{Acc, B, Scope, Tree, text};
use crate::pages::Resource;
use slurmplan_model::names::{Name, root};

impl B<'_> {
    /// The allocation and project accounts of `r`, with the project (and customer) tiers
    /// declared in `t`; `None` (with a warning) when the resource is skipped. Preconditions:
    /// `r` is live; `t` holds the accounts of the resources before it.
    pub(super) fn place(&mut self, t: &mut Tree, scope: &Scope, r: &Resource) -> Option<(Name, Name)> {
        let (alloc, project, customer) = self.names(r, scope.nested)?;
        if let Some(prev) = t.accounts.get(&alloc) {
            let prev = prev.origin.clone();
            self.warn_r(
                r,
                "waldur-duplicate-account",
                format!("resource `{}` maps to account `{alloc}`, which {prev} already uses; it is skipped", r.uuid),
                "give the resources distinct backend_id/slug values in Waldur",
            );
            return None;
        }
        if !scope.use_roots && !scope.prefixes.iter().any(|p| alloc.as_str().starts_with(p.as_str())) {
            self.warn_r(
                r,
                "waldur-outside-scope",
                format!(
                    "account `{alloc}` of resource `{}` does not start with a managed prefix; once the resource ends slurmplan will not delete it",
                    r.uuid
                ),
                "use backend_ids that start with allocation_prefix",
            );
        }
        let project_parent = match (&customer, &scope.top) {
            (Some(c), _) => c.clone(),
            (None, Some(t)) => t.clone(),
            (None, None) => root(),
        };
        if let Some(c) = &customer {
            let collides = t.accounts.get(c).is_some_and(|a| !a.origin.starts_with("customer"));
            if collides {
                self.warn_r(
                    r,
                    "waldur-duplicate-account",
                    format!("resource `{}`: customer account `{c}` collides with another account; skipped", r.uuid),
                    "give customers, projects and allocations distinct prefixes",
                );
                return None;
            }
        }
        if let Some(pa) = t.accounts.get(&project)
            && !pa.origin.starts_with("project")
        {
            self.warn_r(
                r,
                "waldur-duplicate-account",
                format!("resource `{}`: project account `{project}` collides with another account; skipped", r.uuid),
                "give customers, projects and allocations distinct prefixes",
            );
            return None;
        }
        if let Some((c, first)) = t.project_customer.get(&project)
            && customer.as_ref() != Some(c)
        {
            let first = first.clone();
            self.warn_r(
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
            t.accounts.entry(c.clone()).or_insert_with(|| Acc {
                parent: scope.top.clone().or(Some(root())),
                comment: Some(format!("customer {} ({})", r.customer_slug, r.customer_uuid)),
                description: text(&r.customer_name),
                organization: Some(c.to_string()),
                origin: "customer".into(),
                ..Default::default()
            });
            t.project_customer.entry(project.clone()).or_insert_with(|| (c.clone(), r.uuid.clone()));
        }
        t.accounts.entry(project.clone()).or_insert_with(|| Acc {
            parent: Some(project_parent),
            comment: Some(format!("project {} ({}) customer {}", r.project_slug, r.project_uuid, r.customer_slug)),
            description: text(&r.project_name),
            organization: Some(project.to_string()),
            origin: "project".into(),
            ..Default::default()
        });
        Some((alloc, project))
    }

    /// The allocation (`backend_id`, else allocation_prefix + slug), project and, when
    /// `nested`, customer account names of `r`; `None` (with a warning) when one is invalid.
    fn names(&mut self, r: &Resource, nested: bool) -> Option<(Name, Name, Option<Name>)> {
        let s = self.s;
        let raw = match (&r.backend_id, &r.slug) {
            (Some(id), _) => id.clone(),
            (None, Some(slug)) => format!("{}{slug}", s.allocation_prefix),
            (None, None) => {
                self.warn_r(
                    r,
                    "waldur-unnamed-resource",
                    format!("resource `{}` (`{}`) has neither `slug` nor `backend_id`; it is skipped", r.uuid, r.name),
                    "give it a slug in Waldur; its account stays as it is until then",
                );
                return None;
            }
        };
        let alloc = self.account_name(r, &raw, "allocation")?;
        let project = self.account_name(r, &format!("{}{}", s.project_prefix, r.project_slug), "project")?;
        let customer = if nested {
            Some(self.account_name(r, &format!("{}{}", s.customer_prefix, r.customer_slug), "customer")?)
        } else {
            None
        };
        Some((alloc, project, customer))
    }
}
