//! Waldur exports + the site's `waldur-site-agent-config.yaml` -> a desired-state YAML
//! text (format version 1, `docs/desired-format.md`), which `desired::load_str` accepts.
//!
//! - [`config`]: reads the agent config, picks one SLURM offering, and checks every
//!   `backend_settings` / `backend_components` key the agent only warns about (errors here, all
//!   at once, each with its key path such as `offerings[0].backend_settings.customer_prefix`).
//! - [`pages`]: reads a directory of JSON responses of the Waldur REST API (resources, each
//!   resource's team, offering users; several pages concatenated).
//! - [`build`]: turns both into the desired YAML, implementing the SLURM plugin's behaviours
//!   (hierarchy, naming, policies, QoS levers, limits, partitions); see `docs/waldur.md`.
//! - [`fetch`]: gets that export directory from the Waldur REST API (the one module here that
//!   uses the network; it holds the token only in a redacting [`fetch::Token`]).
//!
//! This module must not run sacctmgr, spawn processes, or print, and only `fetch` uses the
//! network: it returns
//! text and [`Diagnostic`](slurmplan_diag::Diagnostic)s and the cli decides what to show. The API token
//! (`waldur_api_token`) is dropped while the config is parsed (`fetch::load_access` reads it
//! apart, into a `Token`): it is never put in a message, and never written to the output.

pub mod build;
pub mod config;
pub mod fetch;
pub mod pages;

pub use build::{BuildOptions, Built, build};
pub use config::{Policy, Settings, load_config};
pub use pages::{Pages, load_pages};

#[cfg(test)]
mod tests;
