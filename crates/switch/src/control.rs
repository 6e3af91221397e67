//! The switch's control plane: plain code with a handle on the program's tables and
//! registers, invoked by digests, timers and packets sent to the CPU. The same trait serves
//! both runtimes.

use innet_wire::phv::Packet;

use crate::program::{Ctx, Digest, Program, Verdict};

/// The switch's control plane: plain code with a handle on the program's tables and registers.
pub trait ControlPlane<P: Program>: 'static {
    /// A digest from the data plane, delivered `control_latency_ps` after it was sent.
    fn digest(&mut self, _program: &mut P, _digest: Digest, _ctx: &mut Ctx<'_>) {}
    /// A control timer set with [`Ctx::set_control_timer`] fired.
    fn timer(&mut self, _program: &mut P, _token: u64, _ctx: &mut Ctx<'_>) {}
    /// A packet the data plane sent to the CPU (`Verdict::ToCpu`) arrived; the control plane may
    /// rewrite it and says where it goes next (packet-out). The default drops it.
    fn packet_in(&mut self, _program: &mut P, _pkt: &mut Packet, _ctx: &mut Ctx<'_>) -> Verdict {
        Verdict::Drop
    }
}

/// No control plane.
pub struct NoControl;
impl<P: Program> ControlPlane<P> for NoControl {}
