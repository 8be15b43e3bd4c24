//! slurmplan: plan and apply SLURM accounting changes the way Terraform does for infrastructure.
//!
//! Layers (a module imports only from layers below it; see docs/architecture.md):
//! 0 `model`, `diag`, `input`, `output` · 1 `sacctmgr`, `desired`, `waldur` · 2 `diff`, `doctor` · 3 `plan` · 4 `render`, `apply`, `pipeline` · 5 cli (binary).

pub mod apply;
pub mod desired;
pub mod diag;
pub mod diff;
pub mod doctor;
pub mod input;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod render;
pub mod rules;
pub mod sacctmgr;
pub mod waldur;
