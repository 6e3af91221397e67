//! SwitchV2P (Zeno, Chen, Silberstein; SIGCOMM 2024): switches cache virtual-to-physical
//! address mappings learned from traffic, so tenant packets skip the translation gateways.
//!
//! - [`cache`]: what the protocols ask of a cache ([`cache::MappingCache`]), the direct-mapped
//!   cache with access bits (and Bluebird's LRU);
//! - [`scheme`]: the schemes, and [`scheme::CacheScheme`], a scheme defined outside this crate
//!   (a built-in protocol over a cache of its own; docs/extending.md);
//! - [`switch`]: the switch program for SwitchV2P and the LocalLearning / GwCache baselines;
//! - [`bluebird`]: the Bluebird baseline (ToR route cache + switch-CPU slow path);
//! - [`hosts`]: server vswitches (gateway / Direct / OnDemand, misdelivery) and gateways;
//! - [`directory`]: where every VM lives over time (migrations);
//! - [`run`]: one simulation under one scheme, with the invariants and metrics;
//! - [`experiments`]: the paper's figures and tables as `innet run` experiments.
//!
//! docs/switchv2p.md records every choice made where the paper is vague.

pub mod bluebird;
pub mod cache;
pub mod controller;
pub mod directory;
pub mod experiments;
pub mod hosts;
pub mod run;
pub mod scheme;
pub mod stats;
pub mod switch;
pub mod traces;

pub use scheme::Scheme;

/// Every SwitchV2P experiment.
pub fn experiments() -> Vec<Box<dyn innet_registry::Experiment>> {
    experiments::all()
}

/// The programs this crate adds to the real switch: none yet (SwitchV2P runs in the simulator).
pub fn switch_programs() -> Vec<innet_dataplane::real::ProgramSpec> {
    Vec::new()
}
