//! The simulated RMT switch: runs a [`Program`] on every arriving packet and carries out its
//! decisions on the simulator's ports — forwarding, the recirculation port, the packet
//! replication engine (clones, multicast groups), packet generation, digests to a control plane
//! with latency, and timers.
//!
//! Timing model: the ingress pipeline latency is added to every arrival (the node's ingress
//! latency), so a program's state changes take effect at the end of ingress; the egress program
//! runs when the traffic manager enqueues the copy, seeing the queue depth at enqueue.
//!
//! The verdicts themselves are carried out by the one pipeline core
//! ([`innet_switch::pipeline`]); this module is its simulator device: packets are ids in the
//! network's store, ports are the node's links, the recirculation port is the node's last port,
//! `Verdict::Route` is the fabric's routing table, the CPU path is a modelled PCIe port
//! ([`CpuPort`]) and timers are the event queue's.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use innet_sim::engine::Node;
use innet_sim::metrics::DropReason;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::{Packet, PacketId};
use innet_sim::routing::{self, Routing};
use innet_switch::pipeline::{Device, DropCause, Pipeline, Timer};
pub use innet_switch::pipeline::{SwitchConfig, SwitchCounters};
use innet_switch::program::{NextHop, Program, Router};
use innet_switch::{ControlPlane, NoControl};

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
const TOKEN_MASK: u64 = (1 << 56) - 1;

/// A programmable switch node of the simulator: the [`Pipeline`] on the simulator's ports (it
/// dereferences to the pipeline: `program`, `control`, `cfg`, `counters`).
pub struct SimSwitch<P: Program, C: ControlPlane<P> = NoControl> {
    pub core: Pipeline<P, C>,
    /// The data plane → CPU path (PCIe), if the program uses `Verdict::ToCpu`; without one,
    /// packets sent to the CPU are dropped.
    pub cpu_port: Option<CpuPort>,
    ports: SimPorts,
}

/// The simulator-side state of a switch: its place in the network and the CPU port's queue.
struct SimPorts {
    switch_index: u32,
    routing: Arc<Routing>,
    recirculation_port: u16,
    num_ports: u16,
    /// Packets on the CPU path, in order of arrival at the control plane.
    cpu_queue: VecDeque<PacketId>,
    /// Packets still in (or being transferred out of) the CPU port's buffer: (transfer end, bytes).
    cpu_buffer: VecDeque<(u64, u32)>,
    cpu_queued_bytes: u64,
    cpu_free_at_ps: u64,
}

impl<P: Program, C: ControlPlane<P>> Deref for SimSwitch<P, C> {
    type Target = Pipeline<P, C>;
    fn deref(&self) -> &Pipeline<P, C> {
        &self.core
    }
}
impl<P: Program, C: ControlPlane<P>> DerefMut for SimSwitch<P, C> {
    fn deref_mut(&mut self) -> &mut Pipeline<P, C> {
        &mut self.core
    }
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
        let rng = innet_sim::rng::rng_for(net.seed, &format!("switch/{switch_index}"));
        SimSwitch {
            core: Pipeline::new(program, control, SwitchConfig::default(), rng, false),
            cpu_port: None,
            ports: SimPorts {
                switch_index,
                routing,
                recirculation_port: num_ports.saturating_sub(1),
                num_ports,
                cpu_queue: VecDeque::new(),
                cpu_buffer: VecDeque::new(),
                cpu_queued_bytes: 0,
                cpu_free_at_ps: 0,
            },
        }
    }

    pub fn switch_index(&self) -> u32 {
        self.ports.switch_index
    }

    pub fn recirculation_port(&self) -> u16 {
        self.ports.recirculation_port
    }

    /// Start a control-plane timer from outside (e.g. the first tick of a periodic controller).
    pub fn start_control_timer(&mut self, net: &mut Network, me: NodeId, at_ps: u64, token: u64) {
        net.schedule_timer(me, at_ps, (TIMER_CONTROL << 56) | token);
    }
}

/// The simulator as the pipeline's device, for one event.
struct SimDevice<'a> {
    net: &'a mut Network,
    me: NodeId,
    ports: &'a mut SimPorts,
    /// Borrowed, not copied: it is read only when a packet goes to the CPU, and a copy per
    /// packet read its cache line at every hop.
    cpu_port: &'a Option<CpuPort>,
}

fn drop_reason(cause: DropCause) -> DropReason {
    match cause {
        DropCause::NoRoute | DropCause::NoCpuPort => DropReason::NoRoute,
        DropCause::Program => DropReason::Program,
        DropCause::RecirculationLimit => DropReason::RecirculationLimit,
        DropCause::CpuBufferFull => DropReason::BufferOverflow,
    }
}

impl Device for SimDevice<'_> {
    type Handle = PacketId;
    /// The simulator's output is packets: `Ctx::reply_tcp` generates them.
    const TAKES_FRAMES: bool = false;

    #[inline]
    fn now_ps(&self) -> u64 {
        self.net.now_ps()
    }
    #[inline]
    fn switch_id(&self) -> u32 {
        self.ports.switch_index
    }
    #[inline]
    fn num_ports(&self) -> u16 {
        self.ports.num_ports
    }
    #[inline]
    fn recirculation_port(&self) -> u16 {
        self.ports.recirculation_port
    }
    #[inline]
    fn with_packet<R>(&mut self, h: PacketId, f: impl FnOnce(&mut Packet, &dyn Router) -> R) -> R {
        let router = SimRouter {
            routing: &self.ports.routing,
            switch_index: self.ports.switch_index,
        };
        f(self.net.packets.get_mut(h), &router)
    }
    fn with_router<R>(&mut self, f: impl FnOnce(&dyn Router) -> R) -> R {
        let router = SimRouter {
            routing: &self.ports.routing,
            switch_index: self.ports.switch_index,
        };
        f(&router)
    }
    #[inline]
    fn queue_bytes(&self, port: u16) -> u64 {
        self.net.ports[self.net.port_id(self.me, port) as usize].queue_bytes
    }
    #[inline]
    fn transmit(&mut self, port: u16, h: PacketId) {
        let gid: PortId = self.net.port_id(self.me, port);
        self.net.transmit(gid, h);
    }
    fn transmit_frame(&mut self, _port: u16, frame: Vec<u8>) -> Vec<u8> {
        // Unreachable: the simulator does not take frames (`TAKES_FRAMES` is false).
        frame
    }
    fn clone_packet(&mut self, h: PacketId) -> PacketId {
        self.net.clone_packet(h)
    }
    #[inline]
    fn adopt(&mut self, pkt: Packet, keep_created: bool) -> PacketId {
        let created = pkt.created_ps;
        let id = self.net.create_packet(pkt);
        if keep_created {
            self.net.pkt_mut(id).created_ps = created;
        }
        id
    }
    fn consume(&mut self, h: PacketId) {
        self.net.consume(h);
    }
    #[inline]
    fn drop_packet(&mut self, h: PacketId, cause: DropCause) {
        self.net.drop_packet(h, drop_reason(cause));
    }
    /// Queue a packet on the CPU port (or refuse it when there is none or its buffer is full).
    fn to_cpu(&mut self, id: PacketId) -> Result<(), DropCause> {
        let cpu = self.cpu_port.ok_or(DropCause::NoCpuPort)?;
        let st = &mut *self.ports;
        let bytes = self.net.pkt(id).wire_bytes();
        let now = self.net.now_ps();
        // A packet leaves the buffer when its transfer ends (the CPU's latency comes after).
        while let Some(&(end, b)) = st.cpu_buffer.front() {
            if end > now {
                break;
            }
            st.cpu_buffer.pop_front();
            st.cpu_queued_bytes -= b as u64;
        }
        if st.cpu_queued_bytes + bytes as u64 > cpu.buffer_bytes {
            return Err(DropCause::CpuBufferFull);
        }
        let start = now.max(st.cpu_free_at_ps);
        let tx_ps = innet_sim::time::serialization_ps(bytes as u64, cpu.bandwidth_bps);
        st.cpu_free_at_ps = start + tx_ps + cpu.gap_ps;
        st.cpu_queued_bytes += bytes as u64;
        st.cpu_buffer.push_back((start + tx_ps, bytes));
        st.cpu_queue.push_back(id);
        self.net
            .schedule_timer(self.me, start + tx_ps + cpu.latency_ps, TIMER_CPU << 56);
        Ok(())
    }
    #[inline]
    fn schedule(&mut self, at_ps: u64, t: Timer) {
        let token = match t {
            Timer::Program(token) => (TIMER_PROGRAM << 56) | (token & TOKEN_MASK),
            Timer::Control(token) => (TIMER_CONTROL << 56) | (token & TOKEN_MASK),
            Timer::Digest => TIMER_DIGEST << 56,
        };
        self.net.schedule_timer(self.me, at_ps, token);
    }
}

impl<P: Program, C: ControlPlane<P>> Node for SimSwitch<P, C> {
    #[inline]
    fn receive(&mut self, net: &mut Network, me: NodeId, in_port: PortId, id: PacketId) {
        let local = net.local_port(me, in_port);
        let mut dev = SimDevice {
            net,
            me,
            ports: &mut self.ports,
            cpu_port: &self.cpu_port,
        };
        self.core.receive(&mut dev, id, local);
    }

    fn timer(&mut self, net: &mut Network, me: NodeId, token: u64) {
        let rest = token & TOKEN_MASK;
        let mut dev = SimDevice {
            net,
            me,
            ports: &mut self.ports,
            cpu_port: &self.cpu_port,
        };
        match token >> 56 {
            TIMER_PROGRAM => self.core.timer(&mut dev, Timer::Program(rest)),
            TIMER_DIGEST => self.core.timer(&mut dev, Timer::Digest),
            TIMER_CONTROL => self.core.timer(&mut dev, Timer::Control(rest)),
            TIMER_CPU => {
                if let Some(id) = dev.ports.cpu_queue.pop_front() {
                    self.core.cpu_arrival(&mut dev, id);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, net: &mut Network, _me: NodeId) {
        for id in self.ports.cpu_queue.drain(..) {
            net.drop_packet(id, DropReason::InFlightAtEnd);
        }
        self.ports.cpu_buffer.clear();
        self.ports.cpu_queued_bytes = 0;
    }
}
