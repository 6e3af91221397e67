//! The real-packet switch: the same [`crate::Program`] attached to Linux interfaces with
//! AF_PACKET. `frame` converts frames to and from the program's `Packet`; the runtime around it
//! (sockets, batching, checksum offload, timers, counters) lives in the sibling modules.

pub mod frame;
pub mod pcap_log;
pub mod registry;
pub mod switch;

pub use pcap_log::PcapLog;
pub use registry::{builtin_programs, ProgramSpec, Settings};
pub use switch::{FrameSwitch, PortCounters, RealConfig, RealSwitch, SwitchStats, TxBatch};
