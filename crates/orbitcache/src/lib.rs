//! OrbitCache (variable-length in-network key-value caching by recirculation) on the simulator's
//! programmable ToR, with the baselines the paper compares against — NoCache, NetCache,
//! FarReach and Pegasus — in the same rack with the same clients and storage servers, and the
//! paper's experiments. docs/orbitcache.md records every choice made where the paper is vague.

pub mod client;
pub mod controller;
pub mod experiments;
pub mod keys;
pub mod kv;
pub mod netcache;
pub mod orbit_switch;
pub mod pegasus;
pub mod rack;
pub mod run;
pub mod server;
pub mod workload;
pub use experiments::experiments;

/// The programs this crate adds to the real switch: none yet (OrbitCache runs in the simulator).
pub fn switch_programs() -> Vec<innet_dataplane::real::ProgramSpec> {
    Vec::new()
}
