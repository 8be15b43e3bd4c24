//! Everything that knows sacctmgr: its reads (`reads`), parsing their `-n -P` output
//! (`parse`), snapshot directories (`snapshot`), the pure command builder (`command`) and the
//! one process spawn (`runner`). The rules slurmdbd enforces are modelled above it (`rules`).

pub mod command;
pub mod live;
pub mod load_file;
pub mod parse;
pub mod quote;
pub mod reads;
pub mod runner;
pub mod snapshot;
pub mod transport;
