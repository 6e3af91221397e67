//! Gigaflow's vSwitch side: OpenFlow pipelines written in `ovs-ofctl add-flows` syntax, a
//! multi-table slow path with Open vSwitch's classifier semantics that records each traversal
//! and the Megaflow OVS would install, a harness that asks a real OVS the same questions, and
//! the SmartNIC caches in front of it: the Megaflow baseline and Gigaflow's LTM tables.

pub mod actions;
pub mod bench;
pub mod classifier;
pub mod conntrack;
pub mod coverage;
pub mod experiments;
pub mod fields;
pub mod flows;
pub mod ltm;
pub mod mappings;
pub mod megaflow;
pub mod nuevomatch;
pub mod nic;
pub mod oracle;
pub mod packetgen;
pub mod partition;
pub mod pipebench;
pub mod report;
pub mod slowpath;
pub mod trie;
pub mod tss;

pub use experiments::experiments;
pub use fields::{Field, Flow};
pub use flows::{parse_flows, Action, FlowRule, ParseError};
pub use slowpath::{Pipeline, Trace};
