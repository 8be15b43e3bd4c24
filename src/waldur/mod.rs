//! Layer 1: Waldur exports + the site's `waldur-site-agent-config.yaml` -> a desired-state YAML
//! text (format version 1, `docs/desired-format.md`), which `desired::load_str` accepts.
//!
//! - [`config`]: reads the agent config, picks one SLURM offering, and checks every
//!   `backend_settings` / `backend_components` key the agent only warns about (errors here, all
//!   at once, each with its key path such as `offerings[0].backend_settings.customer_prefix`).
//! - [`export`]: reads a directory of JSON responses of the Waldur REST API (resources, each
//!   resource's team, offering users; several pages concatenated).
//! - [`build`]: turns both into the desired YAML, implementing the SLURM plugin's behaviours
//!   (hierarchy, naming, policies, QoS levers, limits, partitions); see `docs/waldur.md`.
//!
//! This module must not run sacctmgr, spawn processes, use the network, or print: it returns
//! text and [`Diagnostic`](crate::diag::Diagnostic)s and the cli decides what to show. The API token
//! (`waldur_api_token`) is dropped while the config is parsed: it is never stored in a
//! returned value, never put in a message, and never written to the output.

pub mod build;
pub mod config;
pub mod export;

pub use build::{BuildOptions, Built, build};
pub use config::{Policy, Settings, load_config};
pub use export::{Export, load_export};

#[cfg(test)]
mod tests;
