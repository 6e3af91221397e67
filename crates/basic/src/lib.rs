//! The plain datacenter: experiments that run the simulator with L3-forwarding switches only
//! (the reference every in-network system is compared to), and the simulator benchmark.

pub mod bench;
pub mod fattree;

use innet_registry::Experiment;

pub use bench::{bench_sim, BenchOptions, BenchReport};

/// Server-to-server flows from a workload as simulator flows of one kind, addressed to the
/// hosts' own IPs.
pub fn flow_specs(flows: &[innet_workloads::Flow], kind: innet_sim::apps::FlowKind) -> Vec<innet_sim::apps::FlowSpec> {
    flows
        .iter()
        .map(|f| innet_sim::apps::FlowSpec {
            src_host: f.src,
            dst_host: f.dst,
            src_ip: 0,
            dst_ip: 0,
            start_ps: f.start_ps,
            size_bytes: f.size_bytes,
            kind,
        })
        .collect()
}

/// Every experiment this crate defines.
pub fn experiments() -> Vec<Box<dyn Experiment>> {
    vec![Box::new(fattree::BasicFattree)]
}
