//! Helpers shared by the integration tests, split by concern: `cli` runs the `slurmplan` binary
//! (and other programs) and captures exit code, stdout and stderr; `testbed` is the gate on a
//! real slurmdbd test bed and the only way the tests call its sacctmgr; `fake` changes and
//! watches the fake sacctmgr's state; `choices` draws the
//! random choices of the property tests from proptest's bytes. Not every test binary
//! uses every helper. Nothing here asserts on what a test checks: a helper either returns what
//! happened or fails when the set-up itself fails, never turns a failure into a pass.
#![allow(dead_code)]

pub mod choices;
pub mod cli;
pub mod fake;
pub mod prometheus;
pub mod testbed;

#[allow(unused_imports)] // not every test binary uses the re-export
pub use cli::*;
