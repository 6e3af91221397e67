//! Hosts for SwitchVM's microbenchmarks: a sender that emits tenant packets (optionally
//! Geneve-encapsulated with SwitchVM options) back to back or as a Poisson stream, and a sink
//! that counts goodput, latency, and the stacks the DPFs left.

use innet_sim::engine::Node;
use innet_sim::metrics::DropReason;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::{Encap, Ipv4, Packet, Tunnel, IP_PROTO_UDP, L4};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

/// How the sender's packets are wrapped.
#[derive(Debug, Clone, PartialEq)]
pub enum Wrap {
    /// No encapsulation (plain L3 forwarding).
    Plain,
    /// Geneve with this VNI and these options (empty = the tenant's default DPF).
    Geneve { vni: u32, options: Vec<u8> },
}

#[derive(Debug, Clone)]
pub struct SenderConfig {
    pub src_ip: u32,
    pub dst_ip: u32,
    pub wrap: Wrap,
    /// Bytes of the un-encapsulated frame (Ethernet + IPv4 + UDP + payload, 64..=1518).
    pub frame_bytes: u32,
    /// Offered load as a fraction of the link (1.0 = back to back at line rate).
    pub load: f64,
    pub poisson: bool,
    pub link_bps: u64,
    pub stop_ps: u64,
}

pub struct Sender {
    cfg: SenderConfig,
    nic: PortId,
    template: Packet,
    gap: Option<Exp<f64>>,
    mean_gap_ps: f64,
    rng: ChaCha8Rng,
    pub sent: u64,
}

impl Sender {
    pub fn new(cfg: SenderConfig, nic: PortId, rng: ChaCha8Rng) -> Self {
        let payload = cfg.frame_bytes.saturating_sub(14 + 20 + 8 + 4);
        let mut p = Packet::new(Ipv4::new(cfg.src_ip, cfg.dst_ip, IP_PROTO_UDP), L4::Udp { src_port: 7000, dst_port: 7001 }, payload);
        p.is_data = true;
        if let Wrap::Geneve { vni, options } = &cfg.wrap {
            p.tunnel = Some(Tunnel { outer: Ipv4::new(cfg.src_ip, cfg.dst_ip, IP_PROTO_UDP), encap: Encap::Geneve { src_port: 49152, vni: *vni, options: options.clone() } });
        }
        let wire_bits = p.wire_bytes() as f64 * 8.0;
        let mean_gap_ps = wire_bits / cfg.link_bps as f64 * 1e12 / cfg.load.max(1e-6);
        let gap = cfg.poisson.then(|| Exp::new(1.0 / mean_gap_ps).expect("positive rate"));
        Sender { cfg, nic, template: p, gap, mean_gap_ps, rng, sent: 0 }
    }

    pub fn start(&mut self, net: &mut Network, me: NodeId) {
        net.schedule_timer(me, 0, 0);
    }

    /// The template's frame on the wire, encapsulation included.
    pub fn wire_bytes(&self) -> u32 {
        self.template.wire_bytes()
    }
}

impl Node for Sender {
    fn receive(&mut self, net: &mut Network, _me: NodeId, _in_port: PortId, id: innet_sim::packet::PacketId) {
        net.drop_packet(id, DropReason::NoListener);
    }
    fn timer(&mut self, net: &mut Network, me: NodeId, _token: u64) {
        let mut p = self.template.clone();
        p.flow_id = 0;
        let id = net.create_packet(p);
        net.transmit(self.nic, id);
        self.sent += 1;
        let gap = match &self.gap {
            Some(e) => e.sample(&mut self.rng),
            None => self.mean_gap_ps,
        };
        let next = net.now_ps() + gap.max(1.0) as u64;
        if next < self.cfg.stop_ps {
            net.schedule_timer(me, next, 0);
        }
    }
}

#[derive(Default)]
pub struct Sink {
    pub ip: u32,
    pub received: u64,
    pub inner_payload_bytes: u64,
    pub frame_bytes: u64,
    pub latency_us: Vec<f64>,
    pub first_ps: Option<u64>,
    pub last_ps: u64,
    /// The top of each packet's SwitchVM stack, when it had one (what the DPF pushed last).
    pub stack_tops: Vec<u32>,
    pub lanes: u8,
}

impl Node for Sink {
    fn receive(&mut self, net: &mut Network, _me: NodeId, _in_port: PortId, id: innet_sim::packet::PacketId) {
        let now = net.now_ps();
        let p = net.deliver(id);
        self.received += 1;
        self.inner_payload_bytes += p.payload_len as u64;
        self.frame_bytes += p.frame_bytes() as u64;
        self.latency_us.push((now - p.created_ps) as f64 / 1e6);
        self.first_ps.get_or_insert(now);
        self.last_ps = now;
        if let Some(Tunnel { encap: Encap::Geneve { options, .. }, .. }) = &p.tunnel {
            if let Ok(d) = crate::encoding::decode(options, self.lanes) {
                if let Some(&top) = d.stack.last() {
                    self.stack_tops.push(top);
                }
            }
        }
    }
}
