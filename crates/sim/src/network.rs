//! The shared state of a running simulation: the event list, the packet pool, every port with
//! its drop-tail queue and link, and the metrics. Nodes (hosts, switches) act on it.
//!
//! A packet handed to a port waits in the port's queue, is serialized at the link rate, and
//! arrives at the peer port after the propagation delay plus the receiver's ingress latency.

use std::collections::VecDeque;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::event_queue::EventQueue;
use crate::metrics::{Conservation, DropReason, Metrics};
use crate::packet::{ecn, Packet, PacketId, PacketPool};
use crate::time::serialization_ps;

pub type NodeId = u32;
/// Global index of a port (every node's ports are numbered together).
pub type PortId = u32;

/// A scheduled happening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The first packet on the wire of `port` (a sending port), `pkt` of `wire_bytes`, finished
    /// arriving at the peer. Each port keeps its in-flight packets in order, so one event per link
    /// stands in the list; it carries the head packet itself (the port's FIFO holds the ones
    /// behind it), so a link with one packet in flight never touches its FIFO's buffer, and the
    /// loop can prefetch the packet before its turn.
    WireHead { port: PortId, pkt: PacketId, wire_bytes: u32 },
    /// `port` finished serializing its current packet. A switch port's is deferred (not in the
    /// list) until a packet queues behind it; see `Network::start_tx`.
    TxDone { port: PortId },
    /// A node's timer; the token means what the node wants it to mean.
    Timer { node: NodeId, token: u64 },
    /// The next trace-driven flow is due (handled by the simulator's flow driver).
    FlowStart { index: u32 },
}

/// Static parameters of one direction of a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkParams {
    pub bandwidth_bps: u64,
    pub delay_ps: u64,
    /// Mark ECN-capable packets CE when the queue holds more than this on enqueue.
    pub ecn_threshold_bytes: Option<u64>,
    /// Per-port queue limit, on top of the node's shared buffer.
    pub queue_limit_bytes: Option<u64>,
}

/// One direction of a port: its egress queue and the link to the peer.
///
/// Laid out by cache line, because at FT16 scale a port is cold every time a hop reaches it:
/// the first line holds what the packet's arrival at the peer needs (and the link timing of a
/// transmission), the second what enqueueing and starting a transmission need, the third the
/// parameters as given (read only when a port has an ECN threshold, a queue limit or a loss
/// model, each flagged in the hot lines). The line boundaries are checked below.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    // ---- line 0: the wire ----
    /// The port at the other end of the link (itself for a loopback such as recirculation).
    /// Set by [`Network::connect_pair`], with `peer_node` and `flight_ps`.
    pub peer: PortId,
    /// The peer port's node (so an arrival does not load the peer's port).
    peer_node: NodeId,
    /// Packets on the wire toward the peer, the head included.
    on_wire: u32,
    /// `loss` is set.
    lossy: bool,
    /// Packets on the wire toward the peer behind the head (which rides in the port's
    /// `WireHead` event), oldest first: (arrival time, packet, wire bytes).
    wire: VecDeque<(u64, PacketId, u32)>,
    /// From the end of serialization to the arrival at the peer: the link's delay plus the
    /// peer node's ingress latency (so a transmission does not load the peer's node).
    flight_ps: u64,
    /// Picoseconds per byte on `link` when that is a whole number (then serialization is a
    /// multiplication), else 0 (a 128-bit division per packet).
    ps_per_byte: u64,
    // ---- line 1: the queue ----
    /// The key (time above sequence) of the current packet's `TxDone` when it was deferred
    /// instead of scheduled, else 0.
    tx_done_deferred: u128,
    /// Packets waiting to be serialized, each with its wire bytes (so sending it does not touch
    /// the packet: its slot is likely out of cache by then).
    pub queue: VecDeque<(PacketId, u32)>,
    pub queue_bytes: u64,
    pub node: NodeId,
    /// The port's index within its node.
    pub local: u16,
    /// Serializing a packet. While its `TxDone` is deferred (see [`Network::defer_tx_done`])
    /// this stays set past the end of serialization; [`Network::port_is_idle`] is the answer.
    pub busy: bool,
    /// `link` has an ECN threshold or a queue limit.
    limited: bool,
    // ---- line 2: as configured ----
    /// Change it with [`Network::set_link`] (which keeps the copies above in step).
    pub link: LinkParams,
    /// Fault injection on this direction of the link; set with [`Network::set_loss`].
    loss: Option<Box<LossModel>>,
}

const _: () = {
    assert!(std::mem::offset_of!(Port, tx_done_deferred) == 64);
    assert!(std::mem::offset_of!(Port, link) == 128);
    assert!(std::mem::size_of::<Port>() == 192);
};

impl Port {
    fn is_limited(link: &LinkParams) -> bool {
        link.ecn_threshold_bytes.is_some() || link.queue_limit_bytes.is_some()
    }
}

/// Picoseconds per byte at `bandwidth_bps` if that is a whole number, else 0.
fn exact_ps_per_byte(bandwidth_bps: u64) -> u64 {
    const BIT_PS_PER_BYTE: u64 = 8 * crate::time::PS_PER_S;
    match bandwidth_bps {
        0 => 0,
        bps if BIT_PS_PER_BYTE % bps == 0 => BIT_PS_PER_BYTE / bps,
        _ => 0,
    }
}

/// Packets lost on a link (after occupying it), for fault-injection tests and experiments.
#[derive(Debug, Clone, PartialEq)]
pub enum LossModel {
    /// Lose the packets with these indices (0-based count of packets sent on the link).
    Indices(Vec<u64>),
    /// Lose each packet independently with this probability (from the network's RNG).
    Probability(f64),
}

/// Per-node facts the network itself needs.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub first_port: PortId,
    pub num_ports: u16,
    /// Latency added to every arrival at this node (the ingress pipeline); fixed when the node
    /// is added (its peers' ports keep a copy).
    ingress_latency_ps: u64,
    pub buffer_bytes: u64,
    pub buffer_used_bytes: u64,
    /// Whether the node wants `port_idle` callbacks (pull-based senders).
    pub wants_port_idle: bool,
}

/// Which way a tapped packet was going at the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapDirection {
    /// The node started sending it on a port.
    Tx,
    /// It finished arriving at the node on a port.
    Rx,
}

/// Something that watches packets at nodes (a pcap writer, a tracer). It sees every packet
/// sent or received by any node; it filters for itself.
pub trait PacketTap {
    fn on_packet(&mut self, time_ps: u64, node: NodeId, port: u16, dir: TapDirection, pkt: &Packet);
    /// The run is over: flush, and say what was recorded (or what went wrong).
    fn finish(&mut self) -> Result<String, String> {
        Ok(String::new())
    }
}

/// The world a node acts on.
pub struct Network {
    now_ps: u64,
    seq: u64,
    /// Packet events (wire heads, transmissions done) and flow starts: a few per port, all in
    /// the near future.
    events: EventQueue<Event>,
    /// Node timers, kept apart: TCP endpoints leave many far-future (mostly stale) timers, which
    /// would deepen the heap every packet event goes through. Both lists share one sequence,
    /// so merging their heads gives exactly the order of a single list.
    timers: EventQueue<Event>,
    pub packets: PacketPool,
    pub ports: Vec<Port>,
    pub nodes: Vec<NodeInfo>,
    pub metrics: Metrics,
    /// The run's one source of randomness for network-level choices.
    pub rng: ChaCha8Rng,
    pub seed: u64,
    events_processed: u64,
    /// The (time, sequence) key of the event being handled, as one number: what "already
    /// happened" means for a deferred `TxDone`.
    current_key: u128,
    /// Events up to this time will be handled by the running `run_until` (0 outside a run).
    horizon_ps: u64,
    /// Defer a switch port's `TxDone` (see [`Network::start_tx`]); off only to check that
    /// deferring changes nothing.
    pub defer_tx_done: bool,
    /// Optional observer of packets at nodes (see [`PacketTap`]).
    pub tap: Option<Box<dyn PacketTap>>,
}

impl Network {
    pub fn new(seed: u64) -> Self {
        Network {
            now_ps: 0,
            seq: 0,
            events: EventQueue::new(),
            timers: EventQueue::new(),
            packets: PacketPool::new(),
            ports: Vec::new(),
            nodes: Vec::new(),
            metrics: Metrics::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            seed,
            events_processed: 0,
            current_key: 0,
            horizon_ps: 0,
            defer_tx_done: true,
            tap: None,
        }
    }

    #[inline]
    pub fn now_ps(&self) -> u64 {
        self.now_ps
    }

    pub fn events_processed(&self) -> u64 {
        self.events_processed
    }

    pub fn pending_events(&self) -> usize {
        self.events.len() + self.timers.len()
    }

    /// Add a node with no ports yet; ports are added with [`Network::connect`].
    pub fn add_node(&mut self, name: impl Into<String>, buffer_bytes: u64, ingress_latency_ps: u64) -> NodeId {
        self.nodes.push(NodeInfo {
            name: name.into(),
            first_port: self.ports.len() as PortId,
            num_ports: 0,
            ingress_latency_ps,
            buffer_bytes,
            buffer_used_bytes: 0,
            wants_port_idle: false,
        });
        self.metrics.nodes.push(Default::default());
        (self.nodes.len() - 1) as NodeId
    }

    fn push_port(&mut self, node: NodeId, link: LinkParams) -> PortId {
        let info = &mut self.nodes[node as usize];
        let id = self.ports.len() as PortId;
        assert_eq!(
            info.first_port + info.num_ports as u32,
            id,
            "ports of a node must be added consecutively (add a node's ports before the next node's)"
        );
        let local = info.num_ports;
        info.num_ports += 1;
        let ingress = info.ingress_latency_ps;
        self.ports.push(Port {
            peer: id,
            peer_node: node,
            on_wire: 0,
            lossy: false,
            wire: VecDeque::new(),
            flight_ps: link.delay_ps + ingress,
            ps_per_byte: exact_ps_per_byte(link.bandwidth_bps),
            tx_done_deferred: 0,
            queue: VecDeque::new(),
            queue_bytes: 0,
            node,
            local,
            busy: false,
            limited: Port::is_limited(&link),
            link,
            loss: None,
        });
        self.metrics.ports.push(Default::default());
        id
    }

    /// Connect a new port of `a` to a new port of `b` with a full-duplex link.
    /// Ports of one node must be created before any port of a later node... except through this
    /// function, which may interleave: use [`crate::topology`] builders, which add ports in order.
    pub fn connect_pair(&mut self, a: PortId, b: PortId) {
        for (from, to) in [(a, b), (b, a)] {
            let to_node = self.ports[to as usize].node;
            let ingress = self.nodes[to_node as usize].ingress_latency_ps;
            let p = &mut self.ports[from as usize];
            p.peer = to;
            p.peer_node = to_node;
            p.flight_ps = p.link.delay_ps + ingress;
        }
    }

    /// Reserve `count` ports on `node`, all with `link`, returning the first one's id.
    pub fn add_ports(&mut self, node: NodeId, count: u16, link: LinkParams) -> PortId {
        let first = self.ports.len() as PortId;
        for _ in 0..count {
            self.push_port(node, link);
        }
        first
    }

    /// Set the link of one port (direction port → peer).
    pub fn set_link(&mut self, port: PortId, link: LinkParams) {
        let ingress = self.nodes[self.ports[port as usize].peer_node as usize].ingress_latency_ps;
        let p = &mut self.ports[port as usize];
        p.link = link;
        p.ps_per_byte = exact_ps_per_byte(link.bandwidth_bps);
        p.flight_ps = link.delay_ps + ingress;
        p.limited = Port::is_limited(&link);
    }

    /// Set (or clear) the fault injector of one port (direction port → peer).
    pub fn set_loss(&mut self, port: PortId, loss: Option<LossModel>) {
        let p = &mut self.ports[port as usize];
        p.lossy = loss.is_some();
        p.loss = loss.map(Box::new);
    }

    /// The index within `node` of its port `port` (what `ports[port].local` holds, without
    /// loading the port).
    #[inline]
    pub fn local_port(&self, node: NodeId, port: PortId) -> u16 {
        let local = port - self.nodes[node as usize].first_port;
        debug_assert_eq!(local as u16, self.ports[port as usize].local);
        local as u16
    }

    #[inline]
    pub fn port_id(&self, node: NodeId, local: u16) -> PortId {
        let info = &self.nodes[node as usize];
        debug_assert!(local < info.num_ports);
        info.first_port + local as PortId
    }

    #[inline]
    pub fn schedule(&mut self, at_ps: u64, event: Event) {
        debug_assert!(at_ps >= self.now_ps, "scheduling into the past");
        self.seq += 1;
        match event {
            Event::Timer { .. } => self.timers.push(at_ps, self.seq, event),
            _ => self.events.push(at_ps, self.seq, event),
        }
    }

    pub fn schedule_timer(&mut self, node: NodeId, at_ps: u64, token: u64) {
        self.schedule(at_ps.max(self.now_ps), Event::Timer { node, token });
    }

    /// Pop the next event and advance time to it.
    #[inline]
    pub(crate) fn pop(&mut self, until_ps: u64) -> Option<Event> {
        let from_timers = match (self.events.peek_key(), self.timers.peek_key()) {
            (Some(e), Some(t)) => t < e,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        let queue = if from_timers { &mut self.timers } else { &mut self.events };
        let key = queue.peek_key()?;
        if (key >> 64) as u64 > until_ps {
            return None;
        }
        self.current_key = key;
        let (t, event) = queue.pop().expect("peeked");
        self.now_ps = t;
        self.events_processed += 1;
        // Most events are arrivals, whose packet and port were last touched long ago: start
        // loading the next one's while this one is handled.
        if let Some(&Event::WireHead { port, pkt, .. }) = self.events.peek() {
            self.packets.prefetch(pkt);
            crate::prefetch::prefetch(self.ports.get(port as usize));
        }
        Some(event)
    }

    pub(crate) fn set_now(&mut self, t: u64) {
        self.now_ps = self.now_ps.max(t);
    }

    /// A run handles every event up to `until_ps` from now on (deferred `TxDone`s up to it
    /// are counted as handled when deferred).
    pub(crate) fn begin_run(&mut self, until_ps: u64) {
        self.horizon_ps = until_ps;
    }

    /// The run stopped: every event up to now has been handled.
    pub(crate) fn end_run(&mut self) {
        self.horizon_ps = 0;
        self.current_key = ((self.now_ps as u128) << 64) | u64::MAX as u128;
    }

    /// Create a packet now; it counts as created and must end delivered or dropped.
    #[inline]
    pub fn create_packet(&mut self, mut pkt: Packet) -> PacketId {
        pkt.created_ps = self.now_ps;
        self.packets.insert(pkt)
    }

    #[inline]
    pub fn pkt(&self, id: PacketId) -> &Packet {
        self.packets.get(id)
    }

    #[inline]
    pub fn pkt_mut(&mut self, id: PacketId) -> &mut Packet {
        self.packets.get_mut(id)
    }

    /// End a packet at its destination and hand it to the caller.
    #[inline]
    pub fn deliver(&mut self, id: PacketId) -> Packet {
        self.count_delivery(id);
        self.packets.remove(id)
    }

    /// End a packet at its destination, freeing its slot in place: for a caller that has read
    /// what it needs through [`Network::pkt`] (no copy of the packet, unlike `deliver`).
    #[inline]
    pub fn consume(&mut self, id: PacketId) {
        self.count_delivery(id);
        self.packets.free(id);
    }

    #[inline]
    fn count_delivery(&mut self, id: PacketId) {
        let pkt = self.packets.get(id);
        let m = &mut self.metrics;
        m.delivered_packets += 1;
        m.delivered_bytes += pkt.frame_bytes() as u64;
        let lat = self.now_ps - pkt.created_ps;
        m.latency_sum_ps += lat as u128;
        m.hops_sum += pkt.hops as u64;
        m.last_delivery_ps = self.now_ps;
        if m.record_packets {
            m.packet_latency_ps.push(lat);
            m.packet_hops.push(pkt.hops);
        }
    }

    /// End a packet with a counted reason.
    #[inline]
    pub fn drop_packet(&mut self, id: PacketId, reason: DropReason) -> Packet {
        self.metrics.dropped[reason as usize] += 1;
        self.packets.remove(id)
    }

    /// Copy a live packet into a new one (counts as created).
    pub fn clone_packet(&mut self, id: PacketId) -> PacketId {
        let copy = self.packets.get(id).clone();
        let created = copy.created_ps;
        let new = self.packets.insert(copy);
        self.packets.get_mut(new).created_ps = created;
        new
    }

    /// Hand a packet to an egress port: enqueue (or drop if the buffer is full) and start
    /// serializing if the port is idle. Returns false if it was dropped.
    #[inline]
    pub fn transmit(&mut self, port: PortId, id: PacketId) -> bool {
        let wire = self.packets.get(id).wire_bytes() as u64;
        let p = &self.ports[port as usize];
        let node = p.node as usize;
        let info = &self.nodes[node];
        debug_assert_eq!(p.limited, Port::is_limited(&p.link), "links are changed with set_link");
        let over_port = p.limited && p.link.queue_limit_bytes.is_some_and(|l| p.queue_bytes + wire > l);
        if info.buffer_used_bytes + wire > info.buffer_bytes || over_port {
            self.metrics.ports[port as usize].drops += 1;
            self.drop_packet(id, DropReason::BufferOverflow);
            return false;
        }
        let ecn_threshold = if p.limited { p.link.ecn_threshold_bytes } else { None };
        if let Some(th) = ecn_threshold {
            if p.queue_bytes > th {
                let pkt = self.packets.get_mut(id);
                let ip = pkt.routing_ip_mut();
                if ip.ecn != ecn::NOT_ECT {
                    ip.ecn = ecn::CE;
                    // Propagate to the inner header as a decapsulating endpoint would (RFC 6040).
                    if pkt.tunnel.is_some() && pkt.ip.ecn != ecn::NOT_ECT {
                        pkt.ip.ecn = ecn::CE;
                    }
                    self.metrics.ports[port as usize].ecn_marks += 1;
                }
            }
        }
        if self.port_is_idle(port) {
            // Nothing queued and nothing serializing: the packet would be enqueued and taken
            // straight off again, so it goes onto the link without touching the queue (its
            // buffer is one more cold line per hop). Same counters, same events.
            let pc = &mut self.metrics.ports[port as usize];
            pc.max_queue_bytes = pc.max_queue_bytes.max(wire);
            self.send(port, id, wire as u32);
            return true;
        }
        self.nodes[node].buffer_used_bytes += wire;
        let p = &mut self.ports[port as usize];
        p.queue.push_back((id, wire as u32));
        p.queue_bytes += wire;
        let qb = p.queue_bytes;
        let pc = &mut self.metrics.ports[port as usize];
        pc.max_queue_bytes = pc.max_queue_bytes.max(qb);
        self.schedule_deferred_tx_done(port);
        true
    }

    /// Whether `port` is free to start sending now: not serializing, or its deferred `TxDone`
    /// is already in the past (then it is retired here, as the event would have done).
    #[inline]
    pub fn port_is_idle(&mut self, port: PortId) -> bool {
        let current = self.current_key;
        let p = &mut self.ports[port as usize];
        if p.busy && p.tx_done_deferred != 0 && p.tx_done_deferred < current {
            p.busy = false;
            p.tx_done_deferred = 0;
        }
        !p.busy && p.queue.is_empty()
    }

    /// A packet now waits behind the one being serialized: its deferred `TxDone` (if it was
    /// deferred) must happen after all, with the key it was given then, to start the next.
    #[inline]
    fn schedule_deferred_tx_done(&mut self, port: PortId) {
        let p = &mut self.ports[port as usize];
        if p.tx_done_deferred != 0 {
            let key = p.tx_done_deferred;
            p.tx_done_deferred = 0;
            self.events.push((key >> 64) as u64, key as u64, Event::TxDone { port });
            // It was counted as handled when deferred; it will be counted when it pops.
            self.events_processed -= 1;
        }
    }

    /// Start serializing the next queued packet of `port`.
    fn start_tx(&mut self, port: PortId) {
        let p = &mut self.ports[port as usize];
        let Some((id, wire_bytes)) = p.queue.pop_front() else {
            return;
        };
        p.queue_bytes -= wire_bytes as u64;
        let node = p.node as usize;
        self.nodes[node].buffer_used_bytes -= wire_bytes as u64;
        self.send(port, id, wire_bytes);
    }

    /// Serialize packet `id` (`wire_bytes` on the wire) on the idle `port` and put it on the link.
    fn send(&mut self, port: PortId, id: PacketId, wire_bytes: u32) {
        let wire = wire_bytes as u64;
        let p = &mut self.ports[port as usize];
        p.busy = true;
        let node = p.node as usize;
        let flight = p.flight_ps;
        let ser = match p.ps_per_byte {
            0 => serialization_ps(wire, p.link.bandwidth_bps),
            ps_per_byte => wire * ps_per_byte,
        };
        let pc = &mut self.metrics.ports[port as usize];
        pc.tx_packets += 1;
        pc.tx_bytes += wire;
        if let Some(tap) = self.tap.as_mut() {
            let local = self.ports[port as usize].local;
            tap.on_packet(self.now_ps, node as NodeId, local, TapDirection::Tx, self.packets.get(id));
        }
        debug_assert_eq!(
            self.ports[port as usize].peer_node,
            self.ports[self.ports[port as usize].peer as usize].node,
            "ports are connected by connect_pair"
        );
        let now = self.now_ps;
        let done = now + ser;
        let p = &mut self.ports[port as usize];
        if self.defer_tx_done && p.queue.is_empty() && done <= self.horizon_ps && !self.nodes[node].wants_port_idle {
            // Defer the TxDone: most switch ports have nothing more queued when serialization
            // ends, and then the event would only mark the port idle. It takes its sequence number
            // now, so every other event keeps its key and order; it is counted as handled (the
            // run handles everything up to its horizon); the port is found idle lazily
            // (`port_is_idle`), and if a packet queues behind it first the event is scheduled
            // after all, with this key (`schedule_deferred_tx_done`).
            self.seq += 1;
            p.tx_done_deferred = ((done as u128) << 64) | self.seq as u128;
            self.events_processed += 1;
        } else {
            self.schedule(done, Event::TxDone { port });
        }
        let arrive = now + ser + flight;
        let p = &mut self.ports[port as usize];
        p.on_wire += 1;
        if p.on_wire == 1 {
            self.schedule(arrive, Event::WireHead { port, pkt: id, wire_bytes });
        } else {
            p.wire.push_back((arrive, id, wire_bytes));
        }
    }

    /// The head of `port`'s wire, `id`, arrived: returns the receiving port and its node, and
    /// schedules the next; None if a fault injector lost it.
    #[inline]
    pub(crate) fn wire_head(&mut self, port: PortId, id: PacketId) -> Option<(PortId, NodeId)> {
        let p = &mut self.ports[port as usize];
        p.on_wire -= 1;
        let peer = p.peer;
        let peer_node = p.peer_node;
        if let Some((next, next_id, next_bytes)) = p.wire.pop_front() {
            self.schedule(next, Event::WireHead { port, pkt: next_id, wire_bytes: next_bytes });
        }
        if self.ports[port as usize].lossy && self.lost_on_link(port) {
            self.drop_packet(id, DropReason::LinkLoss);
            return None;
        }
        if let Some(tap) = self.tap.as_mut() {
            let p = &self.ports[peer as usize];
            tap.on_packet(self.now_ps, p.node, p.local, TapDirection::Rx, self.packets.get(id));
        }
        Some((peer, peer_node))
    }

    fn lost_on_link(&mut self, port: PortId) -> bool {
        use rand::Rng;
        // The packet just taken off the wire was number tx_packets - 1 - (still on the wire).
        let sent = self.metrics.ports[port as usize].tx_packets;
        let index = sent - 1 - self.ports[port as usize].on_wire as u64;
        match self.ports[port as usize].loss.as_deref() {
            Some(LossModel::Indices(ix)) => ix.contains(&index),
            Some(LossModel::Probability(p)) => {
                let p = *p;
                self.rng.gen_bool(p.clamp(0.0, 1.0))
            }
            None => false,
        }
    }

    /// Serialization finished on `port`: start the next packet. Returns true if the port went idle.
    pub(crate) fn tx_done(&mut self, port: PortId) -> bool {
        let p = &mut self.ports[port as usize];
        p.busy = false;
        if p.queue.is_empty() {
            true
        } else {
            self.start_tx(port);
            false
        }
    }

    /// Count the packet fates.
    pub fn conservation(&self) -> Conservation {
        Conservation {
            created: self.packets.created(),
            delivered: self.metrics.delivered_packets,
            dropped: self.metrics.dropped_total(),
            live: self.packets.live() as u64,
        }
    }

    /// At the end of a time-limited run: end every packet still queued or on a wire.
    pub(crate) fn drain_in_flight(&mut self) {
        for (_, event) in self.events.drain_all() {
            if let Event::WireHead { pkt, .. } = event {
                self.drop_packet(pkt, DropReason::InFlightAtEnd);
            }
        }
        self.timers.drain_all();
        for i in 0..self.ports.len() {
            while let Some((_, id, _)) = self.ports[i].wire.pop_front() {
                self.drop_packet(id, DropReason::InFlightAtEnd);
            }
            self.ports[i].on_wire = 0;
            while let Some((id, _)) = self.ports[i].queue.pop_front() {
                self.drop_packet(id, DropReason::InFlightAtEnd);
            }
            self.ports[i].queue_bytes = 0;
        }
        for n in &mut self.nodes {
            n.buffer_used_bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Timers and packet events sit in two heaps; popping merges them into exactly the
        /// (time, scheduling order) sequence a single list gives, and stops at the limit.
        #[test]
        fn timers_and_packet_events_pop_in_one_order(ops in proptest::collection::vec((0u8..4, 0u64..50), 1..400)) {
            let mut net = Network::new(1);
            let mut expected = Vec::new();
            for (i, (kind, at)) in ops.into_iter().enumerate() {
                let ev = match kind {
                    0 => Event::Timer { node: 0, token: i as u64 },
                    1 => Event::WireHead { port: i as u32, pkt: 0, wire_bytes: 0 },
                    2 => Event::TxDone { port: i as u32 },
                    _ => Event::FlowStart { index: i as u32 },
                };
                net.schedule(at, ev);
                expected.push((at, i, ev));
            }
            expected.sort_by_key(|&(at, i, _)| (at, i));
            let until = 40;
            let got: Vec<(u64, Event)> = std::iter::from_fn(|| net.pop(until).map(|e| (net.now_ps(), e))).collect();
            let want: Vec<(u64, Event)> = expected.iter().filter(|e| e.0 <= until).map(|&(at, _, ev)| (at, ev)).collect();
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!(net.pending_events(), expected.iter().filter(|e| e.0 > until).count());
        }
    }
}
