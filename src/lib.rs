//! slurmplan: plan and apply SLURM accounting changes the way Terraform does for infrastructure.
//!
//! This library is a facade: each layer is its own crate (crates/, one per row of the table in
//! docs/architecture.md, which says what each may use), re-exported here under its module name
//! so that `slurmplan::plan::make_plan` and the like name the same items as before the split.
//! Must not: hold code of its own (it belongs in a layer crate or in the binary's `cli`).

pub use slurmplan_apply as apply;
pub use slurmplan_desired as desired;
pub use slurmplan_diag as diag;
pub use slurmplan_diff as diff;
pub use slurmplan_doctor as doctor;
pub use slurmplan_input as input;
pub use slurmplan_model as model;
pub use slurmplan_output as output;
pub use slurmplan_pipeline as pipeline;
pub use slurmplan_plan as plan;
pub use slurmplan_render as render;
pub use slurmplan_rest as rest;
pub use slurmplan_rules as rules;
pub use slurmplan_sacctmgr as sacctmgr;
pub use slurmplan_waldur as waldur;
