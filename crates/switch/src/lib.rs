//! The programmable switch without the simulator: the `Program` contract (P4-like ingress and
//! egress over the parsed packet of `innet_wire::phv`, with externs), the control-plane trait,
//! stateful blocks (registers, tables, hashes), the default L3 forwarding program, the one
//! pipeline core that carries out verdicts on any [`pipeline::Device`], and the real-packet
//! (AF_PACKET) runtime, which is that core's frame device. The simulated switch (crates/dataplane) runs the same
//! programs on the simulator's ports; this crate does not depend on the simulator, so the real
//! runtime and the application switch build without it.

pub mod control;
pub mod l3;
pub mod pipeline;
pub mod program;
pub mod real;
pub mod state;

pub use control::{ControlPlane, NoControl};
pub use l3::L3Forward;
pub use pipeline::{Device, Pipeline, SwitchConfig, SwitchCounters};
pub use program::{
    Ctx, Digest, EgressVerdict, Instance, Metadata, NextHop, Program, Router, TcpReply, Verdict,
};
