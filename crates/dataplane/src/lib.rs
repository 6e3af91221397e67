//! The simulated RMT switch: runs an `innet_switch` program on the simulator's ports
//! (`sim_switch`), and assembles fabrics of switches and hosts (`fabric`). The program contract,
//! stateful blocks, L3 forwarding and the real-packet runtime live in `innet_switch` (which has
//! no simulator in it) and are re-exported here, so simulation code names one crate.

pub mod fabric;
pub mod sim_switch;
pub mod twin;

pub use innet_switch::{control, l3, pipeline, program, real, state};
pub use innet_switch::{
    ControlPlane, Ctx, Digest, EgressVerdict, Instance, L3Forward, Metadata, NextHop, NoControl,
    Program, Router, TcpReply, Verdict,
};
pub use sim_switch::{CpuPort, SimSwitch, SwitchConfig, SwitchCounters};
