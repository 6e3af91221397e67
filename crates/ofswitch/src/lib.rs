//! An OpenFlow vSwitch as Open vSwitch runs one: pipelines written in `ovs-ofctl add-flows`
//! syntax (`flows`, over the match fields of `fields`), OVS's classifiers (tuple space search
//! with its prefix tries and staged lookup, `tss`/`trie`/`classifier`; NuevoMatch beside them),
//! a multi-table slow path with conntrack recirculation that records each traversal and the
//! Megaflow OVS would install (`slowpath`, `conntrack`), `ofproto/trace`-style reports
//! (`report`), random packets for a pipeline (`packetgen`), and a harness that asks a real OVS
//! the same questions (`oracle`). Gigaflow's caches (innet-gigaflow) sit in front of it.

pub mod classifier;
pub mod conntrack;
pub mod fields;
pub mod flows;
pub mod nuevomatch;
pub mod oracle;
pub mod packetgen;
pub mod report;
pub mod slowpath;
pub mod trie;
pub mod tss;

pub use fields::{Field, Flow};
pub use flows::{parse_flows, Action, FlowRule, ParseError};
pub use slowpath::{LookupWildcards, Pipeline, Trace};
