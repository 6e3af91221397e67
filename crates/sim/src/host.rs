//! A server: one NIC, an IPv4 stack with UDP and TCP endpoints, an optional virtual switch
//! (tunnel encapsulation, address translation), and the flow apps that live on it.
//!
//! The host is where traffic is born and ends: it creates packets for its flows, delivers
//! arriving packets (the packet's end), and records per-flow first arrival and completion.

use std::sync::Arc;

use crate::flow::{FlowKind, FlowSpec};
use crate::engine::Node;
use crate::metrics::DropReason;
use crate::network::{Network, NodeId, PortId};
use crate::rng::FastMap;
use crate::packet::{ecn, Ipv4, Packet, PacketId, TcpFlags, TcpHeader, L4, IP_PROTO_TCP, IP_PROTO_UDP, NO_FLOW};
use crate::tcp::{TcpConfig, TcpEndpoint, TcpEvent, TcpSegment};

/// What a host's virtual switch decided about a packet.
pub enum VswitchVerdict {
    /// Continue: to the NIC (egress) or up the stack (ingress).
    Pass,
    /// The vswitch kept the packet (it will send it itself later, e.g. after a delay).
    Taken,
    /// Drop with a counted reason.
    Drop(DropReason),
}

/// A host-side virtual switch: sees every packet leaving (after the stack) and arriving (before
/// the stack), may rewrite, encapsulate or decapsulate, hold and re-send it.
pub trait Vswitch {
    fn egress(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId) -> VswitchVerdict;
    fn ingress(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId) -> VswitchVerdict;
    /// A timer the vswitch set with [`HostAddr::vswitch_timer`] fired.
    fn timer(&mut self, _net: &mut Network, _host: &HostAddr, _token: u64) {}
    /// Whether a packet addressed to `ip` belongs to this host (e.g. one of its VMs).
    fn owns(&self, ip: u32) -> bool;
    /// End any packets the vswitch still holds.
    fn finish(&mut self, _net: &mut Network) {}
}

/// The host's identity, handed to its vswitch.
#[derive(Debug, Clone, Copy)]
pub struct HostAddr {
    pub node: NodeId,
    pub host_index: u32,
    pub ip: u32,
    pub nic: PortId,
}

impl HostAddr {
    /// Send a packet straight to the NIC (bypassing the vswitch egress hook).
    pub fn send_raw(&self, net: &mut Network, pkt: PacketId) {
        net.transmit(self.nic, pkt);
    }
    /// Schedule a vswitch timer (`token` < 2^56).
    pub fn vswitch_timer(&self, net: &mut Network, at_ps: u64, token: u64) {
        net.schedule_timer(self.node, at_ps, (TIMER_VSWITCH << 56) | (token & ((1 << 56) - 1)));
    }
}

const TIMER_TCP: u64 = 1;
const TIMER_UDP: u64 = 2;
const TIMER_VSWITCH: u64 = 3;
const TIMER_HOLD: u64 = 4;

/// Per-host settings.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub tcp: TcpConfig,
    /// Accept TCP connections and UDP datagrams on any port (trace-driven sinks).
    pub listen_all: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnRole {
    FlowSender,
    FlowReceiver,
    RpcClient,
    RpcServer { response_bytes: u64 },
}

struct Conn {
    ep: TcpEndpoint,
    local_ip: u32,
    remote_ip: u32,
    local_port: u16,
    remote_port: u16,
    flow: u32,
    role: ConnRole,
    delivered_bytes: u64,
    expected_bytes: u64,
    /// The timer currently scheduled (time), if any.
    timer_at: Option<u64>,
    generation: u32,
}

#[derive(Clone, Copy)]
struct UdpSource {
    flow: u32,
    src_ip: u32,
    dst_ip: u32,
    src_port: u16,
    remaining: u64,
    payload_bytes: u32,
    last_payload_bytes: u32,
    interval_ps: u64,
}


#[inline]
fn conn_key(local_ip: u32, remote_ip: u32, local_port: u16, remote_port: u16) -> (u64, u64) {
    (((local_ip as u64) << 32) | remote_ip as u64, ((local_port as u64) << 16) | remote_port as u64)
}

/// A server node.
pub struct Host {
    pub addr: HostAddr,
    pub cfg: HostConfig,
    pub vswitch: Option<Box<dyn Vswitch>>,
    flows: Arc<Vec<FlowSpec>>,
    conns: Vec<Option<Conn>>,
    conn_generation: Vec<u32>,
    free_conns: Vec<u32>,
    conn_map: FastMap<(u64, u64), u32>,
    next_port: u16,
    udp_line_rate: Vec<UdpSource>,
    udp_rr: usize,
    udp_timed: Vec<Option<UdpSource>>,
    /// Packets a flow app holds until a time (e.g. the vswitch re-sends after a delay).
    held: Vec<Option<PacketId>>,
    pub stats: HostStats,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct HostStats {
    pub tcp_connections: u64,
    pub tcp_failed: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub udp_received: u64,
}

impl Host {
    pub fn new(addr: HostAddr, cfg: HostConfig, flows: Arc<Vec<FlowSpec>>) -> Self {
        Host {
            addr,
            cfg,
            vswitch: None,
            flows,
            conns: Vec::new(),
            conn_generation: Vec::new(),
            free_conns: Vec::new(),
            conn_map: FastMap::default(),
            next_port: 1024,
            udp_line_rate: Vec::new(),
            udp_rr: 0,
            udp_timed: Vec::new(),
            held: Vec::new(),
            stats: HostStats::default(),
        }
    }

    pub fn open_connections(&self) -> usize {
        self.conn_map.len()
    }

    fn alloc_port(&mut self, local_ip: u32, remote_ip: u32, remote_port: u16) -> u16 {
        loop {
            let p = self.next_port;
            self.next_port = if self.next_port == u16::MAX { 1024 } else { self.next_port + 1 };
            if !self.conn_map.contains_key(&conn_key(local_ip, remote_ip, p, remote_port)) {
                return p;
            }
        }
    }

    /// Start flow `flow` (its index in the driver's list) from this host.
    pub fn start_flow(&mut self, net: &mut Network, me: NodeId, flow: u32, spec: &FlowSpec) {
        let dst_port = 5000 + (flow % 1000) as u16;
        match spec.kind {
            FlowKind::Tcp | FlowKind::Rpc { .. } => {
                let src_port = self.alloc_port(spec.src_ip, spec.dst_ip, dst_port);
                let isn = crate::rng::mix64(net.seed ^ flow as u64) as u32;
                let mut ep = TcpEndpoint::connect(self.cfg.tcp.clone(), isn, net.now_ps());
                ep.send(spec.size_bytes);
                if spec.kind == FlowKind::Tcp {
                    // A bulk sender writes its bytes and closes: the FIN follows the last data
                    // segment (ns-3's BulkSend, the SwitchV2P artifact's TcpClientApp, a program's
                    // write-then-close), and the receiver acknowledges it at once.
                    ep.close();
                }
                let role = if matches!(spec.kind, FlowKind::Rpc { .. }) { ConnRole::RpcClient } else { ConnRole::FlowSender };
                let expected = match spec.kind {
                    FlowKind::Rpc { response_bytes } => response_bytes,
                    _ => 0,
                };
                let idx = self.insert_conn(Conn {
                    ep,
                    local_ip: spec.src_ip,
                    remote_ip: spec.dst_ip,
                    local_port: src_port,
                    remote_port: dst_port,
                    flow,
                    role,
                    delivered_bytes: 0,
                    expected_bytes: expected,
                    timer_at: None,
                    generation: 0,
                });
                self.stats.tcp_connections += 1;
                self.pump_conn(net, me, idx);
            }
            FlowKind::Udp { payload_bytes, interval_ps } => {
                let n = spec.udp_packets();
                let last = (spec.size_bytes - (n - 1) * payload_bytes as u64).min(payload_bytes as u64) as u32;
                let src = UdpSource {
                    flow,
                    src_ip: spec.src_ip,
                    dst_ip: spec.dst_ip,
                    src_port: self.alloc_port(spec.src_ip, spec.dst_ip, dst_port),
                    remaining: n,
                    payload_bytes,
                    last_payload_bytes: last.max(1),
                    interval_ps,
                };
                if interval_ps == 0 {
                    self.udp_line_rate.push(src);
                    self.pump_udp(net);
                } else {
                    let slot = self.udp_timed.iter().position(|s| s.is_none()).unwrap_or_else(|| {
                        self.udp_timed.push(None);
                        self.udp_timed.len() - 1
                    });
                    self.udp_timed[slot] = Some(src);
                    self.udp_tick(net, me, slot as u64);
                }
            }
        }
    }

    fn insert_conn(&mut self, conn: Conn) -> u32 {
        let key = conn_key(conn.local_ip, conn.remote_ip, conn.local_port, conn.remote_port);
        let idx = if let Some(i) = self.free_conns.pop() {
            i
        } else {
            self.conns.push(None);
            self.conn_generation.push(0);
            (self.conns.len() - 1) as u32
        };
        let mut conn = conn;
        self.conn_generation[idx as usize] = self.conn_generation[idx as usize].wrapping_add(1);
        conn.generation = self.conn_generation[idx as usize];
        self.conns[idx as usize] = Some(conn);
        self.conn_map.insert(key, idx);
        idx
    }

    fn free_conn(&mut self, idx: u32) {
        if let Some(c) = self.conns[idx as usize].take() {
            self.conn_map.remove(&conn_key(c.local_ip, c.remote_ip, c.local_port, c.remote_port));
            let s = c.ep.stats();
            self.stats.retransmits += s.retransmits;
            self.stats.timeouts += s.timeouts;
            self.free_conns.push(idx);
        }
    }

    /// Send whatever the connection wants to send, handle its events and re-arm its timer.
    fn pump_conn(&mut self, net: &mut Network, me: NodeId, idx: u32) {
        let now = net.now_ps();
        // Events may queue more to send (a close, an RPC response): repeat until quiet.
        let mut had_event = true;
        while had_event {
        had_event = false;
        loop {
            let Some(conn) = self.conns[idx as usize].as_mut() else { return };
            let Some((seg, ect)) = conn.ep.poll_transmit(now) else { break };
            let mut ip = Ipv4::new(conn.local_ip, conn.remote_ip, IP_PROTO_TCP);
            if ect {
                ip.ecn = ecn::ECT0;
            }
            let hdr = TcpHeader {
                src_port: conn.local_port,
                dst_port: conn.remote_port,
                seq: seg.seq,
                ack: seg.ack,
                flags: seg.flags,
                window: seg.window,
                options_bytes: if seg.flags.has(TcpFlags::SYN) { 12 } else { 0 },
            };
            let mut pkt = Packet::new(ip, L4::Tcp(hdr), seg.payload_len);
            pkt.flow_id = conn.flow as u64;
            pkt.is_data = seg.payload_len > 0;
            let id = net.create_packet(pkt);
            self.send_ip(net, id);
        }
        loop {
            let Some(conn) = self.conns[idx as usize].as_mut() else { return };
            let Some(ev) = conn.ep.poll_event() else { break };
            had_event = true;
            let flow = conn.flow as usize;
            match ev {
                TcpEvent::Delivered { bytes } => {
                    conn.delivered_bytes += bytes;
                    match conn.role {
                        ConnRole::FlowReceiver => {
                            let rec = &mut net.metrics.flows[flow];
                            if conn.delivered_bytes >= rec.size_bytes && rec.complete_ps.is_none() {
                                rec.complete_ps = Some(now);
                            }
                        }
                        ConnRole::RpcServer { response_bytes } => {
                            if conn.delivered_bytes == net.metrics.flows[flow].size_bytes {
                                conn.ep.send(response_bytes);
                                conn.ep.close();
                            }
                        }
                        ConnRole::RpcClient => {
                            if conn.delivered_bytes >= conn.expected_bytes {
                                let rec = &mut net.metrics.flows[flow];
                                if rec.complete_ps.is_none() {
                                    rec.complete_ps = Some(now);
                                }
                            }
                        }
                        ConnRole::FlowSender => {}
                    }
                }
                TcpEvent::AllAcked => {}
                TcpEvent::PeerClosed => {
                    conn.ep.close();
                }
                TcpEvent::Closed => {
                    self.free_conn(idx);
                    return;
                }
                TcpEvent::Reset | TcpEvent::TimedOut => {
                    self.stats.tcp_failed += 1;
                    self.free_conn(idx);
                    return;
                }
                _ => {}
            }
        }
        }
        let Some(conn) = self.conns[idx as usize].as_mut() else { return };
        match conn.ep.next_timeout_ps() {
            Some(t) if conn.timer_at.map_or(true, |at| t < at) => {
                conn.timer_at = Some(t);
                let token = (TIMER_TCP << 56) | ((conn.generation as u64 & 0xFF_FFFF) << 32) | idx as u64;
                net.schedule_timer(me, t, token);
            }
            _ => {}
        }
    }

    /// Send a packet this host's stack made: through the vswitch, then the NIC.
    fn send_ip(&mut self, net: &mut Network, id: PacketId) {
        if let Some(vs) = self.vswitch.as_mut() {
            match vs.egress(net, &self.addr, id) {
                VswitchVerdict::Pass => {}
                VswitchVerdict::Taken => return,
                VswitchVerdict::Drop(r) => {
                    net.drop_packet(id, r);
                    return;
                }
            }
        }
        net.transmit(self.addr.nic, id);
    }

    fn make_udp(net: &mut Network, s: &UdpSource, last: bool) -> PacketId {
        let ip = Ipv4::new(s.src_ip, s.dst_ip, IP_PROTO_UDP);
        let payload = if last { s.last_payload_bytes } else { s.payload_bytes };
        let mut pkt = Packet::new(ip, L4::Udp { src_port: s.src_port, dst_port: 5000 + (s.flow % 1000) as u16 }, payload);
        pkt.flow_id = s.flow as u64;
        pkt.is_data = true;
        net.create_packet(pkt)
    }

    /// Feed line-rate UDP sources into the NIC one packet at a time, round-robin, while it is idle.
    fn pump_udp(&mut self, net: &mut Network) {
        while !self.udp_line_rate.is_empty() {
            if !net.port_is_idle(self.addr.nic) {
                return;
            }
            let i = self.udp_rr % self.udp_line_rate.len();
            let s = &mut self.udp_line_rate[i];
            s.remaining -= 1;
            let last = s.remaining == 0;
            let src = *s;
            if last {
                self.udp_line_rate.swap_remove(i);
            } else {
                self.udp_rr = i + 1;
            }
            let id = Self::make_udp(net, &src, last);
            self.send_ip(net, id);
        }
    }

    fn udp_tick(&mut self, net: &mut Network, me: NodeId, slot: u64) {
        let Some(s) = self.udp_timed[slot as usize].as_mut() else { return };
        s.remaining -= 1;
        let last = s.remaining == 0;
        let src = *s;
        if last {
            self.udp_timed[slot as usize] = None;
        } else {
            net.schedule_timer(me, net.now_ps() + src.interval_ps, (TIMER_UDP << 56) | slot);
        }
        let id = Self::make_udp(net, &src, last);
        self.send_ip(net, id);
    }

    /// Hold a packet and send it to the NIC at `at_ps` (used by vswitches that delay packets).
    pub fn hold_until(&mut self, net: &mut Network, at_ps: u64, pkt: PacketId) {
        let slot = self.held.iter().position(|h| h.is_none()).unwrap_or_else(|| {
            self.held.push(None);
            self.held.len() - 1
        });
        self.held[slot] = Some(pkt);
        net.schedule_timer(self.addr.node, at_ps, (TIMER_HOLD << 56) | slot as u64);
    }

    fn record_arrival(net: &mut Network, flow_id: u64) {
        if flow_id == NO_FLOW {
            return;
        }
        let now = net.now_ps();
        if let Some(rec) = net.metrics.flows.get_mut(flow_id as usize) {
            rec.packets_received += 1;
            if rec.first_arrival_ps.is_none() {
                rec.first_arrival_ps = Some(now);
            }
        }
    }

    /// The connection a TCP segment belongs to, creating a passive one for a new SYN; None if
    /// nobody takes it (with the reason).
    fn tcp_conn_for(&mut self, net: &mut Network, ip: Ipv4, flow_id: u64, h: TcpHeader) -> Result<u32, DropReason> {
        let key = conn_key(ip.dst, ip.src, h.dst_port, h.src_port);
        if let Some(&i) = self.conn_map.get(&key) {
            return Ok(i);
        }
        let syn_only = h.flags.has(TcpFlags::SYN) && !h.flags.has(TcpFlags::ACK);
        if !syn_only {
            return Err(DropReason::ConnectionClosed);
        }
        if !self.cfg.listen_all || flow_id == NO_FLOW {
            return Err(DropReason::NoListener);
        }
        let flow = flow_id as u32;
        let spec = self.flows.get(flow as usize).copied();
        let role = match spec.map(|s| s.kind) {
            Some(FlowKind::Rpc { response_bytes }) => ConnRole::RpcServer { response_bytes },
            _ => ConnRole::FlowReceiver,
        };
        let isn = crate::rng::mix64(net.seed ^ 0xACC ^ flow as u64) as u32;
        let ep = TcpEndpoint::listen(self.cfg.tcp.clone(), isn);
        self.stats.tcp_connections += 1;
        Ok(self.insert_conn(Conn {
            ep,
            local_ip: ip.dst,
            remote_ip: ip.src,
            local_port: h.dst_port,
            remote_port: h.src_port,
            flow,
            role,
            delivered_bytes: 0,
            expected_bytes: spec.map_or(0, |s| s.size_bytes),
            timer_at: None,
            generation: 0,
        }))
    }

    fn receive_udp(&mut self, net: &mut Network, flow_id: u64, is_data: bool) {
        self.stats.udp_received += 1;
        if flow_id == NO_FLOW || !is_data {
            return;
        }
        let flow = flow_id as usize;
        let expected = self.flows.get(flow).map(|s| s.udp_packets()).unwrap_or(0);
        let now = net.now_ps();
        if let Some(rec) = net.metrics.flows.get_mut(flow) {
            if rec.packets_received >= expected && rec.complete_ps.is_none() {
                rec.complete_ps = Some(now);
            }
        }
    }

    fn owns(&self, ip: u32) -> bool {
        ip == self.addr.ip || self.vswitch.as_ref().is_some_and(|v| v.owns(ip))
    }
}

impl Node for Host {
    fn receive(&mut self, net: &mut Network, me: NodeId, _in_port: PortId, id: PacketId) {
        if let Some(vs) = self.vswitch.as_mut() {
            match vs.ingress(net, &self.addr, id) {
                VswitchVerdict::Pass => {}
                VswitchVerdict::Taken => return,
                VswitchVerdict::Drop(r) => {
                    net.drop_packet(id, r);
                    return;
                }
            }
        }
        if !self.owns(net.pkt(id).ip.dst) {
            net.drop_packet(id, DropReason::NotForThisHost);
            return;
        }
        let conn = match net.pkt(id).l4 {
            L4::Tcp(h) => {
                let (ip, flow_id) = (net.pkt(id).ip, net.pkt(id).flow_id);
                match self.tcp_conn_for(net, ip, flow_id, h) {
                    Ok(c) => Some(c),
                    Err(reason) => {
                        net.drop_packet(id, reason);
                        return;
                    }
                }
            }
            _ => None,
        };
        // What the stack needs, read in place: the packet ends here without being moved out of
        // its slot (a 192-byte copy per delivery).
        let pkt = net.pkt(id);
        let (l4, payload_len, ce, flow_id, is_data) = (pkt.l4, pkt.payload_len, pkt.ip.ecn == ecn::CE, pkt.flow_id, pkt.is_data);
        net.consume(id);
        Self::record_arrival(net, flow_id);
        match (l4, conn) {
            (L4::Tcp(h), Some(idx)) => {
                let seg = TcpSegment { seq: h.seq, ack: h.ack, flags: h.flags, window: h.window, payload_len };
                let now = net.now_ps();
                if let Some(c) = self.conns[idx as usize].as_mut() {
                    c.ep.on_segment(now, &seg, ce);
                }
                self.pump_conn(net, me, idx);
            }
            (L4::Udp { .. }, _) => self.receive_udp(net, flow_id, is_data),
            _ => {}
        }
    }

    fn timer(&mut self, net: &mut Network, me: NodeId, token: u64) {
        let kind = token >> 56;
        let rest = token & ((1 << 56) - 1);
        match kind {
            TIMER_TCP => {
                let idx = (rest & 0xFFFF_FFFF) as u32;
                let generation = (rest >> 32) as u32;
                let now = net.now_ps();
                let Some(Some(c)) = self.conns.get_mut(idx as usize) else { return };
                if c.generation & 0xFF_FFFF != generation {
                    return;
                }
                if c.timer_at != Some(now) {
                    return; // superseded by an earlier timer that re-armed
                }
                c.timer_at = None;
                if c.ep.next_timeout_ps().is_some_and(|t| t <= now) {
                    c.ep.on_timeout(now);
                }
                self.pump_conn(net, me, idx);
            }
            TIMER_UDP => self.udp_tick(net, me, rest),
            TIMER_VSWITCH => {
                if let Some(vs) = self.vswitch.as_mut() {
                    vs.timer(net, &self.addr, rest);
                }
            }
            TIMER_HOLD => {
                if let Some(pkt) = self.held.get_mut(rest as usize).and_then(|h| h.take()) {
                    net.transmit(self.addr.nic, pkt);
                }
            }
            _ => {}
        }
    }

    fn port_idle(&mut self, net: &mut Network, _me: NodeId, _port: PortId) {
        self.pump_udp(net);
    }

    fn finish(&mut self, net: &mut Network, _me: NodeId) {
        for h in self.held.iter_mut() {
            if let Some(p) = h.take() {
                net.drop_packet(p, DropReason::InFlightAtEnd);
            }
        }
        if let Some(vs) = self.vswitch.as_mut() {
            vs.finish(net);
        }
    }
}
