//! The end-host side of the virtual network: the server's virtual switch (encapsulation toward a
//! gateway, the VM's server, or a learned address; misdelivery handling) and the gateway
//! (resolve from the directory, 40 µs processing, forward).
//!
//! Both are [`Vswitch`]es on ordinary simulator hosts. Packets a vswitch delays are held in a
//! [`Holder`] and re-sent from a vswitch timer, so conservation covers them.

use std::sync::Arc;

use innet_sim::host::{HostAddr, Vswitch, VswitchVerdict};
use innet_sim::metrics::DropReason;
use innet_sim::network::Network;
use innet_sim::packet::{ecn, Ipv4, PacketId};
use innet_sim::rng::FastSet;
use innet_sim::vswitch::{TunnelKind, TunnelVswitch};
use innet_wire::switchv2p::V2pOptions;

use crate::directory::Directory;
use crate::scheme::HostMode;
use crate::stats::SharedStats;
use crate::switch::tunnel_tags_mut;

const TOKEN_KIND_SHIFT: u32 = 48;
const TOKEN_RESEND: u64 = 1;

/// Packets a vswitch keeps until a timer sends them on.
#[derive(Default)]
pub struct Holder {
    slots: Vec<Option<PacketId>>,
    free: Vec<u32>,
}

impl Holder {
    /// Keep `pkt` and arm a vswitch timer that releases it at `at_ps`.
    pub fn hold(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId, at_ps: u64) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() as u32 - 1
        });
        self.slots[slot as usize] = Some(pkt);
        host.vswitch_timer(net, at_ps, (TOKEN_RESEND << TOKEN_KIND_SHIFT) | slot as u64);
    }

    /// The packet behind a resend token.
    pub fn release(&mut self, slot: u64) -> Option<PacketId> {
        let p = self.slots.get_mut(slot as usize)?.take();
        if p.is_some() {
            self.free.push(slot as u32);
        }
        p
    }

    pub fn drain(&mut self, net: &mut Network) {
        for s in self.slots.iter_mut() {
            if let Some(p) = s.take() {
                net.drop_packet(p, DropReason::InFlightAtEnd);
            }
        }
    }
}

fn split_token(token: u64) -> (u64, u64) {
    (token >> TOKEN_KIND_SHIFT, token & ((1 << TOKEN_KIND_SHIFT) - 1))
}

/// The gateway serving a flow (per-flow balancing): CRC-32 of `key` over the gateways. innet
/// hashes its flow index as 8 little-endian bytes; the artifact hashes the trace's flow id as
/// 4 (`SocketHelper::GetGatewayIdx`: `CRC32Calculate(&flowId, sizeof(uint32_t))`).
#[inline]
pub fn gateway_for(gateways: &[u32], key: &[u8]) -> u32 {
    let h = innet_dataplane::state::HashUnit::new(innet_dataplane::state::HashAlgorithm::Crc32, 0).hash(key);
    gateways[(h % gateways.len() as u32) as usize]
}

/// The gateway of every flow, by flow index, computed once per run.
#[derive(Debug, Clone)]
pub struct FlowGateways {
    /// Per flow index (the driver's numbering: trace rows by start time).
    by_flow: Vec<u32>,
    /// Every gateway, for a packet outside the trace's flows.
    gateways: Arc<Vec<u32>>,
}

impl FlowGateways {
    /// innet's per-flow balancing: the flow index hashed ([`gateway_for`]).
    pub fn by_index(gateways: Arc<Vec<u32>>, flows: usize) -> Self {
        let by_flow = (0..flows as u64).map(|i| gateway_for(&gateways, &i.to_le_bytes())).collect();
        FlowGateways { by_flow, gateways }
    }

    /// The artifact's: each flow's id in the trace (its fourth column), as a 32-bit word.
    pub fn by_trace_id(gateways: Arc<Vec<u32>>, trace_ids: impl Iterator<Item = u64>) -> Self {
        let by_flow = trace_ids.map(|id| gateway_for(&gateways, &(id as u32).to_le_bytes())).collect();
        FlowGateways { by_flow, gateways }
    }

    #[inline]
    pub fn of(&self, flow: u64) -> u32 {
        match self.by_flow.get(flow as usize) {
            Some(&g) => g,
            None => gateway_for(&self.gateways, &flow.to_le_bytes()),
        }
    }
}

/// Settings of the server vswitches.
#[derive(Debug, Clone)]
pub struct HostSettings {
    pub mode: HostMode,
    /// The tunnel the vswitches push (Geneve with options, or the artifact's IP-in-IP with
    /// zero-byte tags).
    pub tunnel: TunnelKind,
    /// Extra processing of a misdelivered packet at the old server before it is re-sent.
    pub misdelivery_delay_ps: u64,
    /// SwitchV2P: the old server tags a misdelivered packet (misdelivery option), and one that a
    /// switch resolved (it carries a hit option) goes back through the gateway so switches on
    /// the way can invalidate; otherwise, and under every other scheme, the old server forwards
    /// it to the new one (a follow-me rule).
    pub bounce_hits_via_gateway: bool,
    /// OnDemand: VMs whose mappings every host holds from the start (the migration study
    /// measures the cost of updating a mapping hosts already use, as the artifact does).
    pub ondemand_preinstalled: Vec<u32>,
    /// OnDemand: how long the control plane takes to update mappings hosts already hold.
    pub ondemand_update_delay_ps: u64,
}

/// The virtual switch of a server hosting VMs.
pub struct V2pHostVswitch {
    pub cfg: HostSettings,
    dir: Arc<Directory>,
    /// The gateway of each flow.
    gateways: Arc<FlowGateways>,
    stats: SharedStats,
    held: Holder,
    /// OnDemand: VIPs this host may send to directly. A miss goes through a gateway (the
    /// "first lookup in the gateway", whose 40 µs is the miss penalty); the host learns a VIP
    /// from the packets it receives, so the reply to a miss teaches it (the artifact).
    learned: FastSet<u32>,
}

impl V2pHostVswitch {
    pub fn new(cfg: HostSettings, dir: Arc<Directory>, gateways: Arc<FlowGateways>, stats: SharedStats) -> Self {
        let learned = cfg.ondemand_preinstalled.iter().map(|&vm| Directory::vip(vm)).collect();
        V2pHostVswitch { cfg, dir, gateways, stats, held: Holder::default(), learned }
    }

    fn encapsulate(&self, net: &mut Network, host: &HostAddr, pkt: PacketId, pip: u32) {
        TunnelVswitch::encapsulate(&self.cfg.tunnel, net, host, pkt, pip);
    }
}

impl Vswitch for V2pHostVswitch {
    fn egress(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId) -> VswitchVerdict {
        let now = net.now_ps();
        let (vip, flow) = {
            let p = net.pkt(pkt);
            (p.ip.dst, p.flow_id)
        };
        self.stats.borrow_mut().tenant_packets_sent += 1;
        let pip = match self.cfg.mode {
            HostMode::Direct => self.dir.pip_at(vip, now),
            HostMode::OnDemand if self.learned.contains(&vip) => {
                // The host's copy of the directory lags behind migrations by the update delay.
                self.dir.pip_at(vip, now.saturating_sub(self.cfg.ondemand_update_delay_ps))
            }
            HostMode::OnDemand | HostMode::Gateway => Some(self.gateways.of(flow)),
        };
        match pip {
            Some(pip) => {
                self.encapsulate(net, host, pkt, pip);
                VswitchVerdict::Pass
            }
            None => {
                self.stats.borrow_mut().tenant_packets_lost += 1;
                VswitchVerdict::Drop(DropReason::Vswitch)
            }
        }
    }

    fn ingress(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId) -> VswitchVerdict {
        let now = net.now_ps();
        let p = net.pkt_mut(pkt);
        let Some(t) = p.tunnel.as_ref() else {
            return VswitchVerdict::Drop(DropReason::NotForThisHost);
        };
        if t.outer.dst != host.ip {
            return VswitchVerdict::Drop(DropReason::NotForThisHost);
        }
        let vip = p.ip.dst;
        let owner = self.dir.pip_at(vip, now);
        let mut stats = self.stats.borrow_mut();
        if !self.dir.ever_held(vip, host.ip) {
            stats.resolved_to_foreign_pip += 1;
        }
        match owner {
            Some(pip) if pip == host.ip => {
                let t = p.tunnel.take().expect("checked above");
                if t.outer.ecn == ecn::CE && p.ip.ecn != ecn::NOT_ECT {
                    p.ip.ecn = ecn::CE;
                }
                stats.tenant_packets_delivered += 1;
                stats.tenant_hops_total += p.hops as u64;
                stats.tenant_latency_total_ps += now.saturating_sub(p.created_ps);
                if self.cfg.mode == HostMode::OnDemand {
                    // Learn the sender (its VIP lives where the packet came from).
                    self.learned.insert(p.ip.src);
                }
                VswitchVerdict::Pass
            }
            Some(new_pip) => {
                stats.misdelivered_packets += 1;
                stats.last_misdelivered_ps = stats.last_misdelivered_ps.max(now);
                let flow = p.flow_id;
                let t = p.tunnel.as_mut().expect("checked above");
                // The hypervisor forwards what it cannot deliver under a new outer header of its
                // own, as the artifact's `SocketHelper` sends it from its socket: the outer
                // source is this server (which sets the packet's ECMP path) and the TTL is fresh.
                t.outer.src = host.ip;
                t.outer.ttl = Ipv4::new(0, 0, 0).ttl;
                let mut via_gateway = false;
                if self.cfg.bounce_hits_via_gateway {
                    if let Some(tags) = tunnel_tags_mut(&mut t.encap) {
                        // SwitchV2P: tag it (VIP, this server's stale PIP) so switches on the way
                        // invalidate or re-resolve; one that a switch resolved (hit option) goes
                        // back through its gateway.
                        let mut o = V2pOptions::parse(tags.bytes()).unwrap_or_default();
                        via_gateway = o.hit.is_some();
                        o.misdelivery = Some((vip, host.ip));
                        stats.misdelivery_tags += 1;
                        o.overwrite(tags);
                    }
                }
                t.outer.dst = if via_gateway { self.gateways.of(flow) } else { new_pip };
                drop(stats);
                self.held.hold(net, host, pkt, now + self.cfg.misdelivery_delay_ps);
                VswitchVerdict::Taken
            }
            None => {
                stats.tenant_packets_lost += 1;
                VswitchVerdict::Drop(DropReason::Vswitch)
            }
        }
    }

    fn timer(&mut self, net: &mut Network, host: &HostAddr, token: u64) {
        let (kind, rest) = split_token(token);
        if kind == TOKEN_RESEND {
            if let Some(p) = self.held.release(rest) {
                host.send_raw(net, p);
            }
        }
    }

    fn owns(&self, ip: u32) -> bool {
        // Ingress already checked that the VM lives here now.
        self.dir.vm_of(ip).is_some()
    }

    fn finish(&mut self, net: &mut Network) {
        self.held.drain(net);
    }
}

/// A V2P translation gateway: resolves the inner destination from the directory, rewrites the
/// outer destination (keeping the outer source, so the original sender stays visible), drops
/// SwitchV2P's options, and forwards after a fixed processing delay. Like the authors' artifact
/// it has no service-rate model: only its 100 G link limits it.
pub struct GatewayVswitch {
    dir: Arc<Directory>,
    stats: SharedStats,
    pub processing_ps: u64,
    held: Holder,
}

impl GatewayVswitch {
    pub fn new(dir: Arc<Directory>, stats: SharedStats, processing_ps: u64) -> Self {
        GatewayVswitch { dir, stats, processing_ps, held: Holder::default() }
    }
}

impl Vswitch for GatewayVswitch {
    fn egress(&mut self, _net: &mut Network, _host: &HostAddr, _pkt: PacketId) -> VswitchVerdict {
        VswitchVerdict::Pass
    }

    fn ingress(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId) -> VswitchVerdict {
        let now = net.now_ps();
        let p = net.pkt_mut(pkt);
        let vip = p.ip.dst;
        let Some(t) = p.tunnel.as_mut().filter(|t| t.outer.dst == host.ip) else {
            return VswitchVerdict::Drop(DropReason::NotForThisHost);
        };
        self.stats.borrow_mut().gateway_packets += 1;
        let Some(pip) = self.dir.pip_at(vip, now) else {
            self.stats.borrow_mut().tenant_packets_lost += 1;
            return VswitchVerdict::Drop(DropReason::Vswitch);
        };
        if let Some(options) = tunnel_tags_mut(&mut t.encap) {
            if !options.bytes().is_empty() && V2pOptions::default().rewrite(options).is_err() {
                let _ = options.replace(&[]);
            }
        }
        t.outer.dst = pip;
        t.outer.ttl = t.outer.ttl.saturating_sub(1).max(1);
        self.held.hold(net, host, pkt, now + self.processing_ps);
        VswitchVerdict::Taken
    }

    fn timer(&mut self, net: &mut Network, host: &HostAddr, token: u64) {
        let (kind, rest) = split_token(token);
        if kind == TOKEN_RESEND {
            if let Some(p) = self.held.release(rest) {
                host.send_raw(net, p);
            }
        }
    }

    fn owns(&self, _ip: u32) -> bool {
        false
    }

    fn finish(&mut self, net: &mut Network) {
        self.held.drain(net);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::Migration;
    use crate::stats::V2pStats;
    use crate::switch::tunnel_tags;
    use innet_sim::packet::{Encap, Packet, Tunnel, IP_PROTO_UDP, L4};

    const SENDER: u32 = 0x0A00_0001;
    const OLD: u32 = 0x0A00_0002;
    const NEW: u32 = 0x0A00_0003;
    const GATEWAY: u32 = 0x0A00_0009;

    /// A server that no longer hosts VM 0 receives a packet for it from SENDER; the packet as
    /// the old server's vswitch sends it on.
    fn misdelivered(bounce_hits_via_gateway: bool, hit: Option<(u32, u32)>) -> Packet {
        let dir = Arc::new(Directory::new(vec![OLD], vec![Migration { vm: 0, at_ps: 0, to_pip: NEW }]).unwrap());
        let gateways = Arc::new(FlowGateways::by_index(Arc::new(vec![GATEWAY]), 1));
        let cfg = HostSettings {
            mode: HostMode::Gateway,
            tunnel: TunnelKind::Geneve { vni: 1 },
            misdelivery_delay_ps: 10,
            bounce_hits_via_gateway,
            ondemand_preinstalled: Vec::new(),
            ondemand_update_delay_ps: 0,
        };
        let mut vswitch = V2pHostVswitch::new(cfg, dir, gateways, V2pStats::shared(4));
        let mut net = Network::new(1);
        let vip = Directory::vip(0);
        let mut pkt = Packet::new(Ipv4::new(Directory::vip(1), vip, IP_PROTO_UDP), L4::Udp { src_port: 1, dst_port: 2 }, 64);
        pkt.flow_id = 0;
        let options = V2pOptions { hit, ..Default::default() }.encode().as_slice().to_vec();
        let mut outer = Ipv4::new(SENDER, OLD, IP_PROTO_UDP);
        outer.ttl = 60;
        pkt.tunnel = Some(Tunnel { outer, encap: Encap::Geneve { src_port: 0xC000, vni: 1, options } });
        let id = net.packets.insert(pkt);
        let host = HostAddr { node: 0, host_index: 0, ip: OLD, nic: 0 };
        assert!(matches!(vswitch.ingress(&mut net, &host, id), VswitchVerdict::Taken));
        net.packets.remove(id)
    }

    fn options(p: &Packet) -> V2pOptions {
        V2pOptions::parse(tunnel_tags(&p.tunnel.as_ref().unwrap().encap).unwrap()).unwrap()
    }

    /// The hypervisor forwards a packet it cannot deliver under its own outer header (the
    /// artifact sends it from the old server's socket): the outer source, and so the packet's
    /// ECMP path, is the old server's. Under SwitchV2P it tags the packet (VIP, stale PIP), and
    /// one a switch resolved goes to the gateway, keeping the hit for the ToR to act on.
    #[test]
    fn a_misdelivered_packet_leaves_the_old_server_from_that_server() {
        let hit = Some((7, 0x0B00_0007));
        let p = misdelivered(true, hit);
        let t = p.tunnel.as_ref().unwrap();
        assert_eq!((t.outer.src, t.outer.dst, t.outer.ttl), (OLD, GATEWAY, 64));
        let o = options(&p);
        assert_eq!((o.misdelivery, o.hit), (Some((Directory::vip(0), OLD)), hit));

        let p = misdelivered(true, None);
        let t = p.tunnel.as_ref().unwrap();
        assert_eq!((t.outer.src, t.outer.dst), (OLD, NEW), "no hit: the follow-me rule");
        assert_eq!(options(&p).misdelivery, Some((Directory::vip(0), OLD)));

        // Other schemes: the follow-me rule, from the old server, untagged.
        let p = misdelivered(false, None);
        let t = p.tunnel.as_ref().unwrap();
        assert_eq!((t.outer.src, t.outer.dst), (OLD, NEW));
        assert_eq!(options(&p), V2pOptions::default());
    }

    #[test]
    fn the_artifact_hashes_its_trace_flow_id_as_one_32_bit_word() {
        // Known answers: zlib's CRC-32 (= ns-3's CRC32Calculate) of the id as 4 little-endian
        // bytes, modulo the gateways: 1 → 0x99f8b879, 81 → 0x52f5b7db, 161 → 0xd493a17c.
        let gws = Arc::new(vec![10, 11, 12, 13]);
        let artifact = FlowGateways::by_trace_id(gws.clone(), [1u64, 81, 161].into_iter());
        assert_eq!([artifact.of(0), artifact.of(1), artifact.of(2)], [11, 13, 10]);
        // innet's own balancing hashes the flow index as 8 bytes: another function (the 8-byte
        // CRC of 1 is 3 mod 4, the 4-byte one 1).
        let own = FlowGateways::by_index(gws, 3);
        assert_eq!(own.of(1), 13);
        assert_eq!(gateway_for(&[10, 11, 12, 13], &1u32.to_le_bytes()), 11);
        // A flow outside the trace still gets a gateway.
        assert!([10, 11, 12, 13].contains(&artifact.of(99)));
    }
}
