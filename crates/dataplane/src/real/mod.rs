//! The real-packet switch: the same [`crate::Program`] attached to Linux interfaces with
//! AF_PACKET. `frame` converts frames to and from the program's `Packet`; the runtime around it
//! (sockets, batching, checksum offload, timers, counters) lives in the sibling modules.

pub mod afpacket;
pub mod bench;
pub mod frame;
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
