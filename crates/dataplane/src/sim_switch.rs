//! The simulated RMT switch: runs a [`Program`] on every arriving packet and carries out its
//! decisions on the simulator's ports — forwarding, the recirculation port, the packet
//! replication engine (clones, multicast groups), packet generation, digests to a control plane
//! with latency, and timers.
//!
//! Timing model: the ingress pipeline latency is added to every arrival (the node's ingress
//! latency), so a program's state changes take effect at the end of ingress; the egress program
//! runs when the traffic manager enqueues the copy, seeing the queue depth at enqueue.

use std::collections::VecDeque;
use std::sync::Arc;

use innet_sim::engine::Node;
use innet_sim::metrics::DropReason;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::{Packet, PacketId};
use innet_sim::routing::{self, Routing};
use innet_switch::program::{
    Actions, Ctx, Digest, EgressVerdict, Instance, Metadata, NextHop, Program, Router, Verdict,
};
use innet_switch::{ControlPlane, NoControl};
use rand_chacha::ChaCha8Rng;

/// Per-switch settings of the runtime.
#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// Passes through the recirculation port a packet may make before it is dropped.
    pub max_recirculations: u16,
    /// Data plane → control plane latency for digests.
    pub control_latency_ps: u64,
    /// Multicast groups of the packet replication engine: group id → (port, replication id).
    pub multicast_groups: Vec<Vec<(u16, u16)>>,
    /// The data plane → CPU path, if the program uses `Verdict::ToCpu`.
    pub cpu_port: Option<CpuPort>,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            max_recirculations: u16::MAX,
            control_latency_ps: 0,
            multicast_groups: Vec::new(),
            cpu_port: None,
        }
    }
}

/// The switch's CPU port: a FIFO served at `bandwidth_bps` with a drop-tail buffer; each packet
/// reaches the control plane `latency_ps` after its transfer ends, and the next transfer starts
/// `gap_ps` after the previous one ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuPort {
    pub bandwidth_bps: u64,
    pub buffer_bytes: u64,
    pub latency_ps: u64,
    pub gap_ps: u64,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SwitchCounters {
    pub ingress_passes: u64,
    pub recirculations: u64,
    pub clones: u64,
    pub generated: u64,
    pub multicast_copies: u64,
    pub digests: u64,
    pub program_drops: u64,
    /// Packets that ended at the switch (`Verdict::Consume`).
    pub consumed: u64,
    pub egress_drops: u64,
    pub no_route: u64,
    /// Packets sent to the CPU, and those the CPU port's buffer (or its absence) dropped.
    pub to_cpu: u64,
    pub cpu_drops: u64,
}

struct SimRouter<'a> {
    routing: &'a Routing,
    switch_index: u32,
}

impl Router for SimRouter<'_> {
    #[inline]
    fn next_hop(&self, pkt: &Packet) -> NextHop {
        match self.routing.fibs[self.switch_index as usize].next_hop(self.routing, pkt) {
            routing::NextHop::Port(p) => NextHop::Port(p),
            routing::NextHop::ToSelf => NextHop::ToSelf,
            routing::NextHop::NoRoute => NextHop::NoRoute,
        }
    }
}

const TIMER_PROGRAM: u64 = 1;
const TIMER_DIGEST: u64 = 2;
const TIMER_CONTROL: u64 = 3;
const TIMER_CPU: u64 = 4;

/// A programmable switch node of the simulator.
pub struct SimSwitch<P: Program, C: ControlPlane<P> = NoControl> {
    pub program: P,
    pub control: C,
    pub cfg: SwitchConfig,
    pub switch_index: u32,
    pub counters: SwitchCounters,
    routing: Arc<Routing>,
    rng: ChaCha8Rng,
    actions: Actions,
    pending_digests: VecDeque<Digest>,
    recirculation_port: u16,
    num_ports: u16,
    /// Packets on the CPU path, in order of arrival at the control plane.
    cpu_queue: VecDeque<PacketId>,
    /// Packets still in (or being transferred out of) the CPU port's buffer: (transfer end, bytes).
    cpu_buffer: VecDeque<(u64, u32)>,
    cpu_queued_bytes: u64,
    cpu_free_at_ps: u64,
}

impl<P: Program> SimSwitch<P, NoControl> {
    pub fn new(
        program: P,
        switch_index: u32,
        routing: Arc<Routing>,
        net: &Network,
        node: NodeId,
    ) -> Self {
        Self::with_control(program, NoControl, switch_index, routing, net, node)
    }
}

impl<P: Program, C: ControlPlane<P>> SimSwitch<P, C> {
    pub fn with_control(
        program: P,
        control: C,
        switch_index: u32,
        routing: Arc<Routing>,
        net: &Network,
        node: NodeId,
    ) -> Self {
        let num_ports = net.nodes[node as usize].num_ports;
        SimSwitch {
            program,
            control,
            cfg: SwitchConfig::default(),
            switch_index,
            counters: SwitchCounters::default(),
            routing,
            rng: innet_sim::rng::rng_for(net.seed, &format!("switch/{switch_index}")),
            actions: Actions::default(),
            pending_digests: VecDeque::new(),
            recirculation_port: num_ports.saturating_sub(1),
            num_ports,
            cpu_queue: VecDeque::new(),
            cpu_buffer: VecDeque::new(),
            cpu_queued_bytes: 0,
            cpu_free_at_ps: 0,
        }
    }

    pub fn recirculation_port(&self) -> u16 {
        self.recirculation_port
    }

    /// Start a control-plane timer from outside (e.g. the first tick of a periodic controller).
    pub fn start_control_timer(&mut self, net: &mut Network, me: NodeId, at_ps: u64, token: u64) {
        net.schedule_timer(me, at_ps, (TIMER_CONTROL << 56) | token);
    }

    /// Carry out a verdict for a packet that finished ingress (or was cloned/generated).
    fn dispatch(
        &mut self,
        net: &mut Network,
        me: NodeId,
        id: PacketId,
        verdict: Verdict,
        meta: &Metadata,
    ) {
        match verdict {
            Verdict::Forward(p) if p < self.num_ports => self.egress(net, me, id, p, 0, meta),
            Verdict::Forward(_) => {
                self.counters.no_route += 1;
                net.drop_packet(id, DropReason::NoRoute);
            }
            Verdict::Route => {
                let hop = self.routing.fibs[self.switch_index as usize]
                    .next_hop(&self.routing, net.pkt(id));
                match hop {
                    routing::NextHop::Port(p) => self.egress(net, me, id, p, 0, meta),
                    _ => {
                        self.counters.no_route += 1;
                        net.drop_packet(id, DropReason::NoRoute);
                    }
                }
            }
            Verdict::Recirculate => {
                let rp = self.recirculation_port;
                self.egress(net, me, id, rp, 0, meta)
            }
            Verdict::Multicast(g) => {
                let members = self
                    .cfg
                    .multicast_groups
                    .get(g as usize)
                    .cloned()
                    .unwrap_or_default();
                if members.is_empty() {
                    self.counters.no_route += 1;
                    net.drop_packet(id, DropReason::NoRoute);
                    return;
                }
                for (i, &(port, rid)) in members.iter().enumerate() {
                    let copy = if i + 1 == members.len() {
                        id
                    } else {
                        net.clone_packet(id)
                    };
                    self.counters.multicast_copies += 1;
                    self.egress(net, me, copy, port, rid, meta);
                }
            }
            Verdict::ToCpu => self.to_cpu(net, me, id),
            Verdict::Consume => {
                self.counters.consumed += 1;
                net.deliver(id);
            }
            Verdict::Drop => {
                self.counters.program_drops += 1;
                net.drop_packet(id, DropReason::Program);
            }
        }
    }

    /// Queue a packet on the CPU port (or drop it when there is none or its buffer is full).
    fn to_cpu(&mut self, net: &mut Network, me: NodeId, id: PacketId) {
        self.counters.to_cpu += 1;
        let Some(cpu) = self.cfg.cpu_port else {
            self.counters.cpu_drops += 1;
            net.drop_packet(id, DropReason::NoRoute);
            return;
        };
        let bytes = net.pkt(id).wire_bytes();
        let now = net.now_ps();
        // A packet leaves the buffer when its transfer ends (the CPU's latency comes after).
        while let Some(&(end, b)) = self.cpu_buffer.front() {
            if end > now {
                break;
            }
            self.cpu_buffer.pop_front();
            self.cpu_queued_bytes -= b as u64;
        }
        if self.cpu_queued_bytes + bytes as u64 > cpu.buffer_bytes {
            self.counters.cpu_drops += 1;
            net.drop_packet(id, DropReason::BufferOverflow);
            return;
        }
        let start = now.max(self.cpu_free_at_ps);
        let tx_ps = innet_sim::time::serialization_ps(bytes as u64, cpu.bandwidth_bps);
        self.cpu_free_at_ps = start + tx_ps + cpu.gap_ps;
        self.cpu_queued_bytes += bytes as u64;
        self.cpu_buffer.push_back((start + tx_ps, bytes));
        self.cpu_queue.push_back(id);
        net.schedule_timer(me, start + tx_ps + cpu.latency_ps, TIMER_CPU << 56);
    }

    fn egress(
        &mut self,
        net: &mut Network,
        me: NodeId,
        id: PacketId,
        port: u16,
        rid: u16,
        meta: &Metadata,
    ) {
        let gid: PortId = net.port_id(me, port);
        let emeta = Metadata {
            egress_port: port,
            enq_queue_bytes: net.ports[gid as usize].queue_bytes,
            replication_id: rid,
            ..*meta
        };
        let now = net.now_ps();
        let pkt = net.packets.get_mut(id);
        let verdict = self.with_ctx(now, |p, _, ctx| p.egress(pkt, &emeta, ctx));
        match verdict {
            EgressVerdict::Keep => {
                net.transmit(gid, id);
            }
            EgressVerdict::Drop => {
                self.counters.egress_drops += 1;
                net.drop_packet(id, DropReason::Program);
            }
        }
        self.apply_actions(net, me);
    }

    /// Materialize what the last pass asked for.
    fn apply_actions(&mut self, net: &mut Network, me: NodeId) {
        if self.actions.is_empty() {
            return;
        }
        let mut actions = std::mem::take(&mut self.actions);
        let now = net.now_ps();
        let meta = Metadata {
            ingress_port: self.recirculation_port,
            instance: Instance::Clone,
            egress_port: 0,
            enq_queue_bytes: 0,
            replication_id: 0,
        };
        for (at, token) in actions.timers.drain(..) {
            net.schedule_timer(me, at, (TIMER_PROGRAM << 56) | (token & ((1 << 56) - 1)));
        }
        for (at, token) in actions.control_timers.drain(..) {
            net.schedule_timer(me, at, (TIMER_CONTROL << 56) | (token & ((1 << 56) - 1)));
        }
        for d in actions.digests.drain(..) {
            self.counters.digests += 1;
            self.pending_digests.push_back(d);
            net.schedule_timer(me, now + self.cfg.control_latency_ps, TIMER_DIGEST << 56);
        }
        let clones: Vec<_> = actions.clones.drain(..).collect();
        // (No `actions.frames`: the simulator leaves `takes_frames` false, so `Ctx::reply_tcp`
        // generates packets.)
        let generated: Vec<_> = actions.generated.drain(..).collect();
        self.actions = actions;
        for (pkt, dest) in clones {
            self.counters.clones += 1;
            let created = pkt.created_ps;
            let id = net.create_packet(pkt);
            net.pkt_mut(id).created_ps = created;
            self.dispatch(net, me, id, dest, &meta);
        }
        for (pkt, dest) in generated {
            self.counters.generated += 1;
            let id = net.create_packet(pkt);
            let meta = Metadata {
                instance: Instance::Generated,
                ..meta
            };
            self.dispatch(net, me, id, dest, &meta);
        }
    }

    /// Run `f` with the program, the control plane and a context of this switch's externs.
    #[inline]
    fn with_ctx<R>(&mut self, now_ps: u64, f: impl FnOnce(&mut P, &mut C, &mut Ctx<'_>) -> R) -> R {
        let router = SimRouter {
            routing: &self.routing,
            switch_index: self.switch_index,
        };
        let mut ctx = Ctx::new(
            now_ps,
            self.switch_index,
            self.num_ports,
            self.recirculation_port,
            &router,
            &mut self.rng,
            &mut self.actions,
        );
        f(&mut self.program, &mut self.control, &mut ctx)
    }
}

impl<P: Program, C: ControlPlane<P>> Node for SimSwitch<P, C> {
    #[inline]
    fn receive(&mut self, net: &mut Network, me: NodeId, in_port: PortId, id: PacketId) {
        let local = net.ports[in_port as usize].local;
        let recirculated = local == self.recirculation_port;
        {
            let pkt = net.pkt_mut(id);
            if recirculated {
                pkt.recirculations = pkt.recirculations.saturating_add(1);
            } else {
                pkt.hops += 1;
                pkt.recirculations = 0;
            }
        }
        if recirculated {
            self.counters.recirculations += 1;
            if net.pkt(id).recirculations > self.cfg.max_recirculations {
                net.drop_packet(id, DropReason::RecirculationLimit);
                return;
            }
        }
        self.counters.ingress_passes += 1;
        let mut meta = Metadata {
            ingress_port: local,
            instance: if recirculated {
                Instance::Recirculated
            } else {
                Instance::Normal
            },
            egress_port: 0,
            enq_queue_bytes: 0,
            replication_id: 0,
        };
        let now = net.now_ps();
        let pkt = net.packets.get_mut(id);
        let verdict = self.with_ctx(now, |p, _, ctx| p.ingress(pkt, &mut meta, ctx));
        self.dispatch(net, me, id, verdict, &meta);
        self.apply_actions(net, me);
    }

    fn timer(&mut self, net: &mut Network, me: NodeId, token: u64) {
        let kind = token >> 56;
        let rest = token & ((1 << 56) - 1);
        let now = net.now_ps();
        match kind {
            TIMER_PROGRAM => self.with_ctx(now, |p, _, ctx| p.timer(rest, ctx)),
            TIMER_DIGEST => {
                if let Some(d) = self.pending_digests.pop_front() {
                    self.with_ctx(now, |p, c, ctx| c.digest(p, d, ctx));
                }
            }
            TIMER_CONTROL => self.with_ctx(now, |p, c, ctx| c.timer(p, rest, ctx)),
            TIMER_CPU => {
                if let Some(id) = self.cpu_queue.pop_front() {
                    let pkt = net.packets.get_mut(id);
                    let verdict = self.with_ctx(now, |p, c, ctx| c.packet_in(p, pkt, ctx));
                    let meta = Metadata {
                        ingress_port: self.recirculation_port,
                        instance: Instance::Generated,
                        egress_port: 0,
                        enq_queue_bytes: 0,
                        replication_id: 0,
                    };
                    self.dispatch(net, me, id, verdict, &meta);
                }
            }
            _ => {}
        }
        self.apply_actions(net, me);
    }

    fn finish(&mut self, net: &mut Network, _me: NodeId) {
        for id in self.cpu_queue.drain(..) {
            net.drop_packet(id, DropReason::InFlightAtEnd);
        }
        self.cpu_buffer.clear();
        self.cpu_queued_bytes = 0;
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
