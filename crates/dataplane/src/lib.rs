//! The programmable switch: the `Program` trait (P4-like ingress/egress with externs), the
//! default L3 forwarding program, the simulated RMT switch runtime and the real-packet
//! (AF_PACKET) runtime.

pub mod fabric;
pub mod l3;
pub mod program;
pub mod real;
pub mod sim_switch;
pub mod state;

pub use l3::L3Forward;
pub use program::{Ctx, Digest, EgressVerdict, Instance, Metadata, Program, TcpReply, Verdict};
pub use sim_switch::{ControlPlane, CpuPort, NoControl, SimSwitch, SwitchConfig};
