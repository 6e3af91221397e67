//! SwitchVM as a data-plane program on the simulated switch: the tenant is the Geneve VNI (the
//! trusted encapsulation), the DPF invocation, code and stack are SwitchVM's Geneve options; the
//! machine runs once per pass and its steering decides the verdict. Results (stack, init_pc,
//! dropped code) are written back into the options, so the packet's size changes as it should.
//!
//! A switch may have several pipes, each its own SwitchVM (own code and memory, as the paper's
//! KVS cache uses two Tofino pipes as two switches): a DPF that chains with NEXT_PC and passes
//! goes on to the next pipe through the recirculation port; from the last pipe the NEXT_PC stays
//! in the header for the next switch.

use innet_dataplane::state::{ResourceEntry, ResourceReport};
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
    /// Pipe 0's machine (the one every packet meets first).
    pub machine: Machine,
    /// The machines of pipes 1, 2, … (empty: a one-pipe switch).
    pub next_pipes: Vec<Machine>,
    pub counters: SwitchVmCounters,
    /// Chained invocations handed to the next pipe.
    pub pipe_handoffs: u64,
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
        SwitchVmSwitch { machine, next_pipes: Vec::new(), counters: SwitchVmCounters::default(), pipe_handoffs: 0 }
    }

    /// A switch whose pipes run these machines (pipe 0 first).
    pub fn with_pipes(machine: Machine, next_pipes: Vec<Machine>) -> Self {
        SwitchVmSwitch { next_pipes, ..Self::new(machine) }
    }

    pub fn pipes(&self) -> usize {
        1 + self.next_pipes.len()
    }

    /// The machine of pipe `i` (0 = the first).
    pub fn pipe(&self, i: usize) -> &Machine {
        if i == 0 {
            &self.machine
        } else {
            &self.next_pipes[i - 1]
        }
    }

    pub fn pipe_mut(&mut self, i: usize) -> &mut Machine {
        if i == 0 {
            &mut self.machine
        } else {
            &mut self.next_pipes[i - 1]
        }
    }
}

impl Program for SwitchVmSwitch {
    fn name(&self) -> &str {
        "switchvm"
    }

    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        self.counters.passes += 1;
        // The pass number through the recirculation port picks the pipe.
        let pipe = pkt.recirculations as usize % self.pipes();
        let npipes = self.pipes();
        let machine = if pipe == 0 { &mut self.machine } else { &mut self.next_pipes[pipe - 1] };
        let lanes = machine.cfg.lanes;
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
            DpfPacket { gas: machine.cfg.initial_gas, ..Default::default() }
        };
        dp.tenant = *vni;
        dp.src = outer_src;
        let md = SwitchMeta {
            ingress_port: meta.ingress_port as u32,
            timestamp_us: (ctx.now_ps / 1_000_000) as u32,
            switch_id: ctx.switch_id,
            queue_depth: 0,
        };
        let out = machine.execute(&mut dp, &md, ctx.rng);
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
            SteerAction::Pass if with_header && dp.init_pc.is_some() && pipe + 1 < npipes => {
                self.pipe_handoffs += 1;
                Verdict::Recirculate
            }
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

    /// Every pipe's machine (pipes after the first prefixed `pipeN/`).
    fn resources(&self) -> ResourceReport {
        let mut r = crate::resources::report(&self.machine.cfg);
        for (i, m) in self.next_pipes.iter().enumerate() {
            let mut more = ResourceReport::new("switchvm");
            for e in crate::resources::report(&m.cfg).entries() {
                more.push(ResourceEntry { name: format!("pipe{}/{}", i + 1, e.name), ..e.clone() });
            }
            r.merge(more);
        }
        r
    }
}
