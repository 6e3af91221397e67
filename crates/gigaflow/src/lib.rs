//! Gigaflow's SmartNIC caches in front of a vSwitch slow path (innet-ofswitch): the Megaflow
//! baseline and Gigaflow's LTM tables with the partitioner that maps a traversal onto them, the
//! rule-space estimate and coverage, the NIC model, and the paper's experiments on Pipebench
//! inputs (innet-pipebench).

pub mod actions;
pub mod bench;
pub mod coverage;
pub mod experiments;
pub mod ltm;
pub mod mappings;
pub mod megaflow;
pub mod nic;
pub mod partition;

pub use experiments::experiments;
