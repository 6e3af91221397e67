//! The default program: plain IPv4 forwarding on the switch's routes (shortest path, per-flow
//! ECMP), with TTL decrement. Every other program falls back to this for what it doesn't own.

use innet_wire::phv::Packet;

use crate::program::{decrement_ttl, Ctx, Metadata, NextHop, Program, Verdict};

#[derive(Debug, Default, Clone)]
pub struct L3Forward {
    pub forwarded: u64,
    pub ttl_drops: u64,
    pub no_route_drops: u64,
}

impl L3Forward {
    /// Forward on the routing table: the verdict a plain router gives.
    #[inline]
    pub fn forward(&mut self, pkt: &mut Packet, ctx: &Ctx<'_>) -> Verdict {
        match ctx.route(pkt) {
            NextHop::Port(p) => {
                if !decrement_ttl(pkt) {
                    self.ttl_drops += 1;
                    return Verdict::Drop;
                }
                self.forwarded += 1;
                Verdict::Forward(p)
            }
            NextHop::ToSelf | NextHop::NoRoute => {
                self.no_route_drops += 1;
                Verdict::Drop
            }
        }
    }
}

impl Program for L3Forward {
    fn name(&self) -> &str {
        "l3_forward"
    }
    #[inline]
    fn ingress(&mut self, pkt: &mut Packet, _meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        self.forward(pkt, ctx)
    }
}
