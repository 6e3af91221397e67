//! The Bluebird baseline (NSDI'22, as the SwitchV2P paper models it): each ToR holds an LRU
//! route cache of mappings in its data plane and resolves the packets its servers send. A miss
//! goes to the switch CPU over a 20 Gbps PCIe path (1 MiB buffer); the CPU forwards the packet
//! itself 8.5 µs after the transfer, resolved from the full mapping table, and installs the
//! mapping in the data-plane cache 2 ms later. Gateways are never used.

use std::sync::Arc;

use innet_dataplane::program::{Ctx, Metadata, Program, Verdict};
use innet_dataplane::state::{ResourceEntry, ResourceKind, ResourceReport};
use innet_dataplane::{ControlPlane, CpuPort, L3Forward};
use innet_sim::packet::Packet;
use innet_sim::rng::FastSet;
use innet_sim::time::{PS_PER_MS, PS_PER_NS};

use crate::cache::Lru;
use crate::directory::Directory;
use crate::stats::SharedStats;
use crate::switch::FabricFacts;

/// Bluebird's switch-CPU parameters (the SwitchV2P paper's values).
#[derive(Debug, Clone, PartialEq)]
pub struct BluebirdSettings {
    pub cpu_bandwidth_bps: u64,
    pub cpu_buffer_bytes: u64,
    /// Control-plane forwarding latency after the transfer.
    pub cpu_forwarding_ps: u64,
    /// Time before the next CPU transfer may start after one ends.
    pub cpu_gap_ps: u64,
    /// Delay from a miss to the mapping's installation in the data-plane cache.
    pub insertion_delay_ps: u64,
}

impl Default for BluebirdSettings {
    fn default() -> Self {
        BluebirdSettings {
            cpu_bandwidth_bps: 20_000_000_000,
            cpu_buffer_bytes: 1 << 20,
            cpu_forwarding_ps: 8_500 * PS_PER_NS,
            cpu_gap_ps: 250 * PS_PER_NS,
            insertion_delay_ps: 2 * PS_PER_MS,
        }
    }
}

impl BluebirdSettings {
    /// The switch's CPU port these settings describe.
    pub fn cpu_port(&self) -> CpuPort {
        CpuPort {
            bandwidth_bps: self.cpu_bandwidth_bps,
            buffer_bytes: self.cpu_buffer_bytes,
            latency_ps: self.cpu_forwarding_ps,
            gap_ps: self.cpu_gap_ps,
        }
    }
}

/// A Bluebird ToR's data plane.
pub struct BluebirdTor {
    pub switch_id: u32,
    pub cache: Lru,
    facts: Arc<FabricFacts>,
    stats: SharedStats,
    host_ports: Vec<Option<u32>>,
    l3: L3Forward,
}

impl BluebirdTor {
    pub fn new(switch_id: u32, capacity: usize, facts: Arc<FabricFacts>, stats: SharedStats, host_ports: Vec<Option<u32>>) -> Self {
        BluebirdTor { switch_id, cache: Lru::new(capacity), facts, stats, host_ports, l3: L3Forward::default() }
    }
}

impl Program for BluebirdTor {
    fn name(&self) -> &str {
        "bluebird_tor"
    }

    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        let from_server = self.host_ports.get(meta.ingress_port as usize).copied().flatten().is_some();
        let unresolved = match pkt.tunnel.as_ref() {
            Some(t) if crate::switch::tunnel_tags(&t.encap).is_some() => self.facts.gateways.contains(&t.outer.dst),
            _ => false,
        };
        if from_server && unresolved {
            let vdst = pkt.ip.dst;
            match self.cache.get(vdst) {
                Some(pip) => {
                    pkt.tunnel.as_mut().expect("tunnelled").outer.dst = pip;
                    self.stats.borrow_mut().hits[self.switch_id as usize] += 1;
                }
                None => {
                    self.stats.borrow_mut().cpu_packets += 1;
                    return Verdict::ToCpu;
                }
            }
        }
        self.l3.forward(pkt, ctx)
    }

    fn resources(&self) -> ResourceReport {
        let mut r = ResourceReport::new(self.name());
        r.push(ResourceEntry::new("route_cache", ResourceKind::Exact, self.cache.capacity() as u64, 32, 32));
        r
    }
}

/// The ToR's CPU: resolves missed packets from the full table and installs mappings later.
pub struct BluebirdControl {
    settings: BluebirdSettings,
    dir: Arc<Directory>,
    stats: SharedStats,
    pending: FastSet<u32>,
}

impl BluebirdControl {
    pub fn new(settings: BluebirdSettings, dir: Arc<Directory>, stats: SharedStats) -> Self {
        BluebirdControl { settings, dir, stats, pending: FastSet::default() }
    }
}

impl ControlPlane<BluebirdTor> for BluebirdControl {
    fn packet_in(&mut self, program: &mut BluebirdTor, pkt: &mut Packet, ctx: &mut Ctx<'_>) -> Verdict {
        let vdst = pkt.ip.dst;
        let Some(pip) = self.dir.pip_at(vdst, ctx.now_ps) else {
            self.stats.borrow_mut().tenant_packets_lost += 1;
            return Verdict::Drop;
        };
        if let Some(t) = pkt.tunnel.as_mut() {
            t.outer.dst = pip;
        }
        if program.cache.find(vdst).is_none() && self.pending.insert(vdst) {
            ctx.set_control_timer(ctx.now_ps + self.settings.insertion_delay_ps, vdst as u64);
        }
        program.l3.forward(pkt, ctx)
    }

    fn timer(&mut self, program: &mut BluebirdTor, token: u64, ctx: &mut Ctx<'_>) {
        let vip = token as u32;
        self.pending.remove(&vip);
        if let Some(pip) = self.dir.pip_at(vip, ctx.now_ps) {
            program.cache.put(vip, pip);
        }
    }
}
