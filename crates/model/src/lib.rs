//! The model shared by every other layer. Pure data and invariants; no I/O, no
//! printing, no knowledge of sacctmgr's text formats or of YAML.

pub mod fingerprint;
pub mod in_order;
pub mod names;
pub mod state;
pub mod values;

pub use in_order::InOrder;
pub use names::{Name, NameError, NameKind};
pub use state::{
    AccountGraph, AccountNode, AccountRecord, Assoc, AssocData, ClusterState, GraphError, Limits, Qos, State,
    UserIndex, UserKey, user_index, user_key_label,
};
pub use values::{Fairshare, QosList, Tres};
