//! An example of extending innet, worked end to end in docs/extending.md: a new V2P caching
//! scheme beside SwitchV2P's baselines, and an experiment comparing them, from outside the
//! SwitchV2P crate.
//!
//! - [`cache`]: the idea, [`cache::TwoWay`] (SwitchV2P's cache made two-way skewed-associative);
//! - [`SWITCHV2P_2WAY`]: the scheme, SwitchV2P's protocol over that cache;
//! - [`experiment`]: `example.v2p_twoway`, written with the registry's kit;
//! - `src/main.rs`: runs it as `innet run` would (`cargo run --release -p v2p-twoway -- --quick`).

pub mod cache;
pub mod experiment;

use innet_switchv2p::cache::MappingCache;
use innet_switchv2p::scheme::{CacheScheme, CacheSite, Scheme};

/// SwitchV2P (every mechanism, the same placement and sizes) with [`cache::TwoWay`] caches.
pub static SWITCHV2P_2WAY: CacheScheme = CacheScheme { name: "switchv2p_2way", protocol: Scheme::SwitchV2P, cache: two_way };

fn two_way(site: &CacheSite) -> Box<dyn MappingCache> {
    Box::new(cache::TwoWay::new(site.slots, site.salt))
}

/// This crate's experiments, as a system crate exports them.
pub fn experiments() -> Vec<Box<dyn innet_registry::Experiment>> {
    vec![Box::new(experiment::TwoWayComparison)]
}
