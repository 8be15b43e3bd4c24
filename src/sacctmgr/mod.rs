//! Layer 1: everything that knows sacctmgr: its reads (`reads`), parsing their `-n -P` output
//! (`parse`), snapshot directories (`snapshot`), the pure command builder (`command`), the
//! in-memory model of slurmdbd's rules (`sim`) and the one process spawn (`runner`).

pub mod command;
pub mod live;
pub mod load;
pub mod parse;
pub mod quote;
pub mod reads;
pub mod runner;
pub mod sim;
pub mod snapshot;
