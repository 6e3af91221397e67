//! The plain datacenter: experiments that run the simulator with L3-forwarding switches only
//! (the reference every in-network system is compared to), and the simulator benchmark.

pub mod bench;
pub mod fattree;
pub mod transport;

use innet_sim::experiment::Experiment;

pub use bench::{bench_sim, BenchOptions, BenchReport};

/// Every experiment this crate defines.
pub fn experiments() -> Vec<Box<dyn Experiment>> {
    vec![Box::new(fattree::BasicFattree)]
}
