//! The real-packet switch: the same [`crate::Program`] attached to Linux interfaces with
//! AF_PACKET. Frames become the program's `Packet` and back through `innet_wire::phv::codec`;
//! the runtime around it (sockets, batching, checksum offload, timers, counters) lives here.

pub mod afpacket;
pub mod bench;
pub mod pcap_log;
pub mod registry;
pub mod routes;
pub mod runtime;
pub mod switch;
pub mod vnet;

pub use pcap_log::PcapLog;
pub use registry::{builtin_programs, ProgramSpec, Settings};
pub use routes::RouteTable;
pub use runtime::{run, Impairment, RunOptions, RunSummary};
pub use switch::{FrameSwitch, PortCounters, RealConfig, RealSwitch, SwitchStats, TxBatch};
