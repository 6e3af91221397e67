//! SwitchVM as a data-plane program on the simulated switch: the tenant is the Geneve VNI (the
//! trusted encapsulation), the DPF invocation, code and stack are SwitchVM's Geneve options; the
//! machine runs once per pass and its steering decides the verdict. Results (stack, init_pc,
//! dropped code) are written back into the options, so the packet's size changes as it should.

use innet_dataplane::{Ctx, Metadata, Program, Verdict};
use innet_sim::packet::{Encap, Packet};
use innet_wire::switchvm::OPTION_CLASS;

use crate::encoding;
use crate::machine::{DpfPacket, Machine, Outcome, SteerAction, SwitchMeta};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SwitchVmCounters {
    pub passes: u64,
    pub executed: u64,
    pub not_invoked: u64,
    pub violations: u64,
    pub malformed: u64,
    pub steered_drop: u64,
}

pub struct SwitchVmSwitch {
    pub machine: Machine,
    pub counters: SwitchVmCounters,
}

/// Whether an option area holds SwitchVM options.
fn has_switchvm(options: &[u8]) -> bool {
    innet_wire::geneve::iter_options(options).any(|o| matches!(o, Ok((c, _, _)) if c == OPTION_CLASS))
}

/// The options of other classes, kept in front of SwitchVM's when re-encoding.
fn foreign(options: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (c, t, d) in innet_wire::geneve::iter_options(options).flatten() {
        if c != OPTION_CLASS {
            out.extend_from_slice(&c.to_be_bytes());
            out.push(t);
            out.push((d.len() / 4) as u8);
            out.extend_from_slice(d);
        }
    }
    out
}

impl SwitchVmSwitch {
    pub fn new(machine: Machine) -> Self {
        SwitchVmSwitch { machine, counters: SwitchVmCounters::default() }
    }
}

impl Program for SwitchVmSwitch {
    fn name(&self) -> &str {
        "switchvm"
    }

    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        self.counters.passes += 1;
        let lanes = self.machine.cfg.lanes;
        let Some(t) = pkt.tunnel.as_mut() else { return Verdict::Route };
        let outer_src = t.outer.src;
        let Encap::Geneve { vni, options, .. } = &mut t.encap else { return Verdict::Route };
        let with_header = has_switchvm(options);
        let mut dp = if with_header {
            match encoding::decode(options, lanes) {
                Ok(p) => p,
                Err(_) => {
                    self.counters.malformed += 1;
                    return Verdict::Drop;
                }
            }
        } else {
            DpfPacket { gas: self.machine.cfg.initial_gas, ..Default::default() }
        };
        dp.tenant = *vni;
        dp.src = outer_src;
        let md = SwitchMeta {
            ingress_port: meta.ingress_port as u32,
            timestamp_us: (ctx.now_ps / 1_000_000) as u32,
            switch_id: ctx.switch_id,
            queue_depth: 0,
        };
        let out = self.machine.execute(&mut dp, &md, ctx.rng);
        let action = match out {
            Outcome::NotInvoked => {
                self.counters.not_invoked += 1;
                return Verdict::Route;
            }
            Outcome::Violated(_) => {
                self.counters.violations += 1;
                return Verdict::Drop;
            }
            Outcome::Steer(a) => a,
        };
        self.counters.executed += 1;
        if with_header {
            let mut area = foreign(options);
            match encoding::encode(&dp, lanes) {
                Ok(b) => area.extend(b),
                Err(_) => {
                    self.counters.malformed += 1;
                    return Verdict::Drop;
                }
            }
            *options = area;
        }
        match action {
            SteerAction::Pass => Verdict::Route,
            SteerAction::Drop => {
                self.counters.steered_drop += 1;
                Verdict::Drop
            }
            SteerAction::ReturnToSender => {
                std::mem::swap(&mut t.outer.src, &mut t.outer.dst);
                std::mem::swap(&mut pkt.ip.src, &mut pkt.ip.dst);
                Verdict::Route
            }
            SteerAction::Forward(ip) => {
                t.outer.dst = ip;
                Verdict::Route
            }
            SteerAction::Multicast(g) => Verdict::Multicast(g),
            SteerAction::SetPort(p) => Verdict::Forward(p),
            SteerAction::Recirculate => Verdict::Recirculate,
        }
    }
}
