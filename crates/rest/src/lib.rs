//! slurmrestd as a second transport beside sacctmgr: [`transport::RestTransport`] answers the
//! reads of `sacctmgr::reads::READS` through `GET /slurmdb/v0.0.42/...` with the text sacctmgr
//! would print ([`render`]), so the live reader and its parser stay the one path to a `State`.
//! Writes: [`write`] turns a plan step's command into slurmrestd calls, which
//! [`transport::RestTransport::write`] sends (docs/operations.md, "Through slurmrestd").
//!
//! Must not: print, spawn, write files, or let the JWT out of the `X-SLURM-USER-TOKEN` header.

pub mod render;
pub mod transport;
pub mod write;
