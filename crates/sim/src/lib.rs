//! innet's packet-level discrete-event simulator.
//!
//! Time is integer picoseconds, events are ordered by (time, sequence), and every source of
//! randomness is a seeded RNG, so a run is a pure function of its inputs.

pub mod apps;
pub mod engine;
pub mod event_queue;
pub mod flow;
pub mod host;
pub mod metrics;
pub mod network;
pub mod packet;
pub mod prefetch;
pub mod pcap_tap;
pub mod report;
pub mod rng;
pub mod routing;
pub mod tcp;
pub mod time;
pub mod topology;
pub mod vswitch;
