//! Layer 1: everything that knows sacctmgr: the command builder, output parsers, the runner.
pub mod command;
pub mod sim;
