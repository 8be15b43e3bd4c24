//! Layer 1: everything that knows sacctmgr's text formats.
//!
//! `reads` lists the fixed reads that make up a snapshot, `parse` turns their raw `-n -P` output
//! into a [`crate::model::State`] (and back), `snapshot` stores and loads those raw outputs in a
//! directory. Nothing here spawns a process or prints: the runner (one process spawn) and the
//! command builder live in their own modules.

pub mod parse;
pub mod reads;
pub mod snapshot;
