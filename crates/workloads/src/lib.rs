//! Traffic for experiments, as plain data: flow-size distributions, open-loop flow generators,
//! key popularity (Zipf, hot-in), generated VM-level traces, and readers/writers for flow lists
//! other simulators use (htsim's connection matrix), for trace files and for the Alibaba
//! microservice call-graph trace. Nothing here knows
//! about the simulator or any system: every system's generators live here.

pub mod alibaba_callgraph;
pub mod cdf;
pub mod generate;
pub mod htsim;
pub mod popularity;
pub mod trace;
pub mod vm_traces;
pub mod caida;
pub mod zipf;

pub use cdf::{cdf_by_name, FlowSizeCdf};
pub use generate::{poisson_flows, poisson_flows_until, uniform_size_flows, Until};

/// One flow between two servers (indices), starting at `start_ps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    pub id: u64,
    pub src: u32,
    pub dst: u32,
    pub start_ps: u64,
    pub size_bytes: u64,
}
