//! Stage 1 of the Waldur build: the cluster, the managed scope (roots or account-name
//! prefixes) and the tier account above the allocations, from the settings and `--cluster`.
//!
//! Must not: look at the export, or stop at the first error (every one is reported).

use super::{Acc, B, BuildOptions, Policy, Tree};
use slurmplan_model::names::{Name, NameKind, root};

/// What the later stages and the renderer need to know about the scope.
pub(super) struct Scope {
    /// `None` when it is unknown or disagrees (an error was reported).
    pub cluster: Option<Name>,
    /// No `parent_account`: customer accounts sit between the top and the projects.
    pub nested: bool,
    /// The managed scope is `roots: [root_account]` (nested, with a root_account other than root).
    pub use_roots: bool,
    /// Otherwise: the distinct non-empty customer/project/allocation prefixes, in that order.
    pub prefixes: Vec<String>,
    /// The account above customers (nested) or projects (flat), if not `root`.
    pub top: Option<Name>,
}

impl B<'_> {
    /// Check the cluster, the `common` policy's default account and the prefixes, and return
    /// the scope. Preconditions: none. Reports errors at the config; returns a scope even then.
    pub(super) fn scope(&mut self, opts: &BuildOptions) -> Scope {
        let s = self.s;
        let bs = self.bs.clone();
        let cluster = self.cluster(opts);
        let nested = s.parent_account.is_none();
        if s.policy == Policy::Common && s.default_account == root() {
            self.error_cfg(
                "waldur-default-root",
                format!(
                    "`{bs}.default_account` is `root` with policy `common`: every Waldur user needs an association with the default account, and declaring them would make slurmplan own every user association on `root`"
                ),
                "use a dedicated default account (e.g. `waldur_default`), or default_account_policy `individual` or `none`",
            );
        }
        let use_roots = nested && s.root_account != root();
        let mut prefixes: Vec<String> = Vec::new();
        if !use_roots {
            for (key, p) in [
                ("customer_prefix", &s.customer_prefix),
                ("project_prefix", &s.project_prefix),
                ("allocation_prefix", &s.allocation_prefix),
            ] {
                if p.is_empty() {
                    self.error_cfg(
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
        let top: Option<Name> =
            if nested { (s.root_account != root()).then(|| s.root_account.clone()) } else { s.parent_account.clone() };
        Scope { cluster, nested, use_roots, prefixes, top }
    }

    /// The cluster: `cluster_name`, else `--cluster`; both set must agree (case-insensitively).
    fn cluster(&mut self, opts: &BuildOptions) -> Option<Name> {
        let bs = self.bs.clone();
        match (&self.s.cluster_name, &opts.cluster) {
            (Some(c), Some(o)) if c.as_str() != o.to_lowercase() => {
                self.error_cfg(
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
                    self.error_cfg("waldur-cluster", format!("`--cluster`: {e}"), e.hint);
                    None
                }
            },
            (None, None) => {
                self.error_cfg(
                    "waldur-cluster",
                    format!("`{bs}.cluster_name` is not set, so the cluster is unknown"),
                    "pass --cluster NAME (the Slurm cluster of this offering), or set cluster_name in the config",
                );
                None
            }
        }
    }
}

impl Scope {
    /// Declare the top tier account (nested hierarchy only; a flat one's `parent_account` is
    /// the site's, not declared). Precondition: `t` is empty.
    pub(super) fn insert_top(&self, t: &mut Tree) {
        if self.nested
            && let Some(top) = &self.top
        {
            t.accounts.insert(
                top.clone(),
                Acc {
                    parent: Some(root()),
                    comment: Some("root of the Waldur tree (root_account)".into()),
                    origin: "config".into(),
                    ..Default::default()
                },
            );
        }
    }
}
