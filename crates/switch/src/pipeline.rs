//! The one pipeline core of both runtimes: the ingress pass, the single place that carries out a
//! program's [`Verdict`] and [`EgressVerdict`], and the side actions of a pass (clones, generated
//! packets, whole frames, digests, timers). What differs between the simulator and real packets
//! is a [`Device`]: where a packet lives, how it leaves by a port, how `Verdict::Route` looks up
//! a port, what the CPU path is, and how time and timers run.
//!
//! Semantics (the same on every device):
//! - `Forward(p)`: egress pass, then out of port `p` (a port the switch lacks: counted no route).
//! - `Route`: the device's forwarding table; no port → no route (a device that floods unknown
//!   destinations, the real learning bridge, floods instead).
//! - `Recirculate`: egress pass, then out of the recirculation port; the packet comes back into
//!   ingress when the device delivers it there ([`Pipeline::receive`] on that port). A packet
//!   that comes back more than [`SwitchConfig::max_recirculations`] times is dropped.
//! - `Multicast(g)`: one copy per member `(port, rid)` of group `g` (the last member gets the
//!   packet itself), each through the egress pass with its replication id.
//! - `ToCpu`: handed to the device's CPU path; it comes back with [`Pipeline::cpu_arrival`],
//!   where the control plane's `packet_in` decides where it goes.
//! - `Consume`, `Drop`: counted and ended.
//! - Clones and generated packets enter the traffic manager as if from the recirculation port
//!   (their `ingress_port`); digests reach the control plane `control_latency_ps` later through
//!   a device timer.

use std::collections::VecDeque;

use innet_wire::phv::Packet;
use rand_chacha::ChaCha8Rng;

use crate::control::ControlPlane;
use crate::program::{
    Actions, Ctx, Digest, EgressVerdict, Instance, Metadata, NextHop, Program, Router, Verdict,
};

/// Settings of the pipeline, the same for every device.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchConfig {
    /// Passes through the recirculation port a packet may make before it is dropped. The default
    /// `u16::MAX` means no limit (the per-packet counter saturates): OrbitCache's cached replies
    /// orbit for as long as their key stays hot, so a finite default would silently evict them.
    /// The recirculation port is a port on every device (a queue on the real one), so unlimited
    /// orbits cost bandwidth but cannot stall the switch.
    pub max_recirculations: u16,
    /// Data plane → control plane latency of digests.
    pub control_latency_ps: u64,
    /// Multicast groups of the packet replication engine: group id → members (port, replication
    /// id).
    pub multicast_groups: Vec<Vec<(u16, u16)>>,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            max_recirculations: u16::MAX,
            control_latency_ps: 0,
            multicast_groups: Vec::new(),
        }
    }
}

impl SwitchConfig {
    /// Check the settings against a switch of `num_ports` ports (the recirculation port
    /// included): every multicast member must name one of them.
    pub fn validate(&self, num_ports: u16) -> Result<(), String> {
        for (g, members) in self.multicast_groups.iter().enumerate() {
            for &(port, rid) in members {
                if port >= num_ports {
                    return Err(format!(
                        "switch config: multicast group {g} member (port {port}, rid {rid}): \
                         expected a port below {num_ports} (the switch's ports)"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// What the pipeline did, counted the same way on every device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    pub ingress_passes: u64,
    pub recirculations: u64,
    /// Packets dropped for passing `max_recirculations`.
    pub recirculation_limit_drops: u64,
    pub clones: u64,
    /// Generated packets, whole frames from `Ctx::reply_tcp` included.
    pub generated: u64,
    pub multicast_copies: u64,
    pub digests: u64,
    pub program_drops: u64,
    /// Packets that ended at the switch (`Verdict::Consume`).
    pub consumed: u64,
    pub egress_drops: u64,
    pub no_route: u64,
    /// Packets sent to the CPU, and those the CPU path (its buffer, or its absence) dropped.
    pub to_cpu: u64,
    pub cpu_drops: u64,
    /// Program and control-plane timers that fired.
    pub timers_fired: u64,
}

/// Why the pipeline ends a packet (a device maps it to its own accounting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropCause {
    /// No port for it (bad `Forward` port, no route, empty multicast group).
    NoRoute,
    /// The program dropped it (ingress or egress).
    Program,
    RecirculationLimit,
    /// The device has no CPU path.
    NoCpuPort,
    /// The CPU path's buffer is full.
    CpuBufferFull,
}

/// A timer the pipeline asks a device for; the device hands it back to [`Pipeline::timer`] when
/// it is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timer {
    /// `Program::timer(token)`.
    Program(u64),
    /// `ControlPlane::timer(token)`.
    Control(u64),
    /// The oldest pending digest reaches the control plane.
    Digest,
}

/// Where packets live and go: the simulator's ports or the real switch's frames. The pipeline
/// is generic over it (monomorphised: no dynamic dispatch on the per-packet path).
pub trait Device {
    /// A packet the device holds (an id in its packet store).
    type Handle: Copy;
    /// Whether `Ctx::reply_tcp` may hand the device whole frames (see `Actions::takes_frames`).
    const TAKES_FRAMES: bool;
    fn now_ps(&self) -> u64;
    fn switch_id(&self) -> u32;
    /// Local ports, the recirculation port included.
    fn num_ports(&self) -> u16;
    fn recirculation_port(&self) -> u16;
    /// Run `f` on the packet with the device's forwarding table (for `Ctx::route` and
    /// `Verdict::Route`).
    fn with_packet<R>(&mut self, h: Self::Handle, f: impl FnOnce(&mut Packet, &dyn Router) -> R)
        -> R;
    /// Run `f` with the forwarding table only (a pass with no packet: timers, digests).
    fn with_router<R>(&mut self, f: impl FnOnce(&dyn Router) -> R) -> R;
    /// Whether `Verdict::Route` floods a destination the table does not know (a learning
    /// bridge) instead of dropping it.
    fn floods_unknown(&self) -> bool {
        false
    }
    /// Bytes queued at a port (the egress pass's `enq_queue_bytes`).
    fn queue_bytes(&self, _port: u16) -> u64 {
        0
    }
    /// The packet leaves by `port` (the recirculation port: it comes back into ingress later).
    fn transmit(&mut self, port: u16, h: Self::Handle);
    /// A whole frame a program wrote leaves by `port` (a port below `recirculation_port`); the
    /// device gives back a buffer to reuse. Only devices with `TAKES_FRAMES` get these.
    fn transmit_frame(&mut self, port: u16, frame: Vec<u8>) -> Vec<u8>;
    /// A copy of a held packet.
    fn clone_packet(&mut self, h: Self::Handle) -> Self::Handle;
    /// Take a packet the program made; `keep_created` keeps its creation time (a clone),
    /// otherwise it is created now.
    fn adopt(&mut self, pkt: Packet, keep_created: bool) -> Self::Handle;
    /// The packet ended at the switch.
    fn consume(&mut self, h: Self::Handle);
    fn drop_packet(&mut self, h: Self::Handle, cause: DropCause);
    /// Put a packet on the CPU path; the device later calls [`Pipeline::cpu_arrival`] with it.
    /// An error says why the packet could not go (the pipeline drops it).
    fn to_cpu(&mut self, h: Self::Handle) -> Result<(), DropCause>;
    /// Call [`Pipeline::timer`] with `t` at `at_ps`.
    fn schedule(&mut self, at_ps: u64, t: Timer);
    /// Give recycled packets to the programs (`Ctx::copy_headers`); called after each event.
    fn recycle(&mut self, _spare: &mut Vec<Packet>) {}
}

/// A program and its control plane in the pipeline, with its state between passes.
pub struct Pipeline<P: Program, C: ControlPlane<P>> {
    pub program: P,
    pub control: C,
    pub cfg: SwitchConfig,
    pub counters: SwitchCounters,
    rng: ChaCha8Rng,
    actions: Actions,
    pending_digests: VecDeque<Digest>,
}

impl<P: Program, C: ControlPlane<P>> Pipeline<P, C> {
    /// A pipeline for a device whose output is frames (`takes_frames`) or packets.
    pub fn new(program: P, control: C, cfg: SwitchConfig, rng: ChaCha8Rng, takes_frames: bool) -> Self {
        Pipeline {
            program,
            control,
            cfg,
            counters: SwitchCounters::default(),
            rng,
            actions: Actions { takes_frames, ..Default::default() },
            pending_digests: VecDeque::new(),
        }
    }

    /// A packet arrived on local port `in_port` (the recirculation port: it is back from a
    /// recirculation): count it, run ingress, carry out the verdict and the pass's actions.
    #[inline]
    pub fn receive<D: Device>(&mut self, dev: &mut D, h: D::Handle, in_port: u16) {
        let recirculated = in_port == dev.recirculation_port();
        let max = self.cfg.max_recirculations;
        let over = dev.with_packet(h, |pkt, _| {
            if recirculated {
                pkt.recirculations = pkt.recirculations.saturating_add(1);
            } else {
                pkt.hops += 1;
                pkt.recirculations = 0;
            }
            pkt.recirculations > max
        });
        if recirculated {
            self.counters.recirculations += 1;
            if over {
                self.counters.recirculation_limit_drops += 1;
                dev.drop_packet(h, DropCause::RecirculationLimit);
                return;
            }
        }
        self.counters.ingress_passes += 1;
        let mut meta = Metadata {
            ingress_port: in_port,
            instance: if recirculated {
                Instance::Recirculated
            } else {
                Instance::Normal
            },
            egress_port: 0,
            enq_queue_bytes: 0,
            replication_id: 0,
        };
        let verdict = self.pass(dev, h, |p, _, pkt, ctx| p.ingress(pkt, &mut meta, ctx));
        self.dispatch(dev, h, verdict, &meta);
        self.apply_actions(dev);
        dev.recycle(&mut self.actions.spare);
    }

    /// A packet the device's CPU path delivered: the control plane's `packet_in` says where it
    /// goes (a packet-out, entering as a generated packet from the recirculation port).
    pub fn cpu_arrival<D: Device>(&mut self, dev: &mut D, h: D::Handle) {
        let verdict = self.pass(dev, h, |p, c, pkt, ctx| c.packet_in(p, pkt, ctx));
        let meta = Metadata {
            ingress_port: dev.recirculation_port(),
            instance: Instance::Generated,
            egress_port: 0,
            enq_queue_bytes: 0,
            replication_id: 0,
        };
        self.dispatch(dev, h, verdict, &meta);
        self.apply_actions(dev);
        dev.recycle(&mut self.actions.spare);
    }

    /// A timer the pipeline scheduled is due.
    pub fn timer<D: Device>(&mut self, dev: &mut D, t: Timer) {
        match t {
            Timer::Program(token) => {
                self.counters.timers_fired += 1;
                self.pass_no_packet(dev, |p, _, ctx| p.timer(token, ctx));
            }
            Timer::Control(token) => {
                self.counters.timers_fired += 1;
                self.pass_no_packet(dev, |p, c, ctx| c.timer(p, token, ctx));
            }
            Timer::Digest => {
                if let Some(d) = self.pending_digests.pop_front() {
                    self.pass_no_packet(dev, |p, c, ctx| c.digest(p, d, ctx));
                }
            }
        }
        self.apply_actions(dev);
        dev.recycle(&mut self.actions.spare);
    }

    /// Carry out a verdict: the one place that does.
    fn dispatch<D: Device>(&mut self, dev: &mut D, h: D::Handle, verdict: Verdict, meta: &Metadata) {
        match verdict {
            Verdict::Forward(p) => self.egress(dev, h, p, 0, meta),
            Verdict::Route => match dev.with_packet(h, |pkt, r| r.next_hop(pkt)) {
                NextHop::Port(p) => self.egress(dev, h, p, 0, meta),
                _ if dev.floods_unknown() => self.flood(dev, h, meta),
                _ => self.no_route(dev, h),
            },
            Verdict::Recirculate => self.egress(dev, h, dev.recirculation_port(), 0, meta),
            Verdict::Multicast(g) => {
                let n = self.cfg.multicast_groups.get(g as usize).map_or(0, Vec::len);
                if n == 0 {
                    return self.no_route(dev, h);
                }
                for i in 0..n {
                    let (port, rid) = self.cfg.multicast_groups[g as usize][i];
                    let copy = if i + 1 == n { h } else { dev.clone_packet(h) };
                    self.counters.multicast_copies += 1;
                    self.egress(dev, copy, port, rid, meta);
                }
            }
            Verdict::ToCpu => {
                self.counters.to_cpu += 1;
                if let Err(cause) = dev.to_cpu(h) {
                    self.counters.cpu_drops += 1;
                    dev.drop_packet(h, cause);
                }
            }
            Verdict::Consume => {
                self.counters.consumed += 1;
                dev.consume(h);
            }
            Verdict::Drop => {
                self.counters.program_drops += 1;
                dev.drop_packet(h, DropCause::Program);
            }
        }
    }

    fn no_route<D: Device>(&mut self, dev: &mut D, h: D::Handle) {
        self.counters.no_route += 1;
        dev.drop_packet(h, DropCause::NoRoute);
    }

    /// A copy to every port but the one the packet came in on and the recirculation port
    /// (replication id = the copy's position).
    fn flood<D: Device>(&mut self, dev: &mut D, h: D::Handle, meta: &Metadata) {
        let rp = dev.recirculation_port();
        let ports = (0..rp).filter(|&p| p != meta.ingress_port);
        let n = ports.clone().count();
        if n == 0 {
            return self.no_route(dev, h);
        }
        for (i, port) in ports.enumerate() {
            let copy = if i + 1 == n { h } else { dev.clone_packet(h) };
            self.egress(dev, copy, port, i as u16, meta);
        }
    }

    /// The egress pass for one copy on `port`, then out (or dropped by the program).
    fn egress<D: Device>(
        &mut self,
        dev: &mut D,
        h: D::Handle,
        port: u16,
        rid: u16,
        meta: &Metadata,
    ) {
        if port >= dev.num_ports() {
            return self.no_route(dev, h);
        }
        let emeta = Metadata {
            egress_port: port,
            enq_queue_bytes: dev.queue_bytes(port),
            replication_id: rid,
            ..*meta
        };
        match self.pass(dev, h, |p, _, pkt, ctx| p.egress(pkt, &emeta, ctx)) {
            EgressVerdict::Keep => dev.transmit(port, h),
            EgressVerdict::Drop => {
                self.counters.egress_drops += 1;
                dev.drop_packet(h, DropCause::Program);
            }
        }
        self.apply_actions(dev);
    }

    /// Carry out what the last pass asked for.
    fn apply_actions<D: Device>(&mut self, dev: &mut D) {
        if self.actions.is_empty() {
            return;
        }
        for (at, token) in self.actions.timers.drain(..) {
            dev.schedule(at, Timer::Program(token));
        }
        for (at, token) in self.actions.control_timers.drain(..) {
            dev.schedule(at, Timer::Control(token));
        }
        let now = dev.now_ps();
        for d in self.actions.digests.drain(..) {
            self.counters.digests += 1;
            self.pending_digests.push_back(d);
            dev.schedule(now + self.cfg.control_latency_ps, Timer::Digest);
        }
        // Take this pass's lists out (what they cause is carried out by the recursion below)
        // and give their buffers back afterwards: no allocation per pass.
        let mut clones = std::mem::take(&mut self.actions.clones);
        let mut generated = std::mem::take(&mut self.actions.generated);
        let mut frames = std::mem::take(&mut self.actions.frames);
        // Every list has been taken: what the recursion below adds sets `pending` again.
        self.actions.pending = false;
        let meta = Metadata {
            ingress_port: dev.recirculation_port(),
            instance: Instance::Clone,
            egress_port: 0,
            enq_queue_bytes: 0,
            replication_id: 0,
        };
        for (pkt, dest) in clones.drain(..) {
            self.counters.clones += 1;
            let h = dev.adopt(pkt, true);
            self.dispatch(dev, h, dest, &meta);
        }
        let meta = Metadata {
            instance: Instance::Generated,
            ..meta
        };
        for (pkt, dest) in generated.drain(..) {
            self.counters.generated += 1;
            let h = dev.adopt(pkt, false);
            self.dispatch(dev, h, dest, &meta);
        }
        // Frames a program wrote whole (only devices that take them get any).
        for (port, buf) in frames.drain(..) {
            self.counters.generated += 1;
            if port < dev.recirculation_port() {
                let mut back = dev.transmit_frame(port, buf);
                if self.actions.spare_frames.len() < 256 {
                    back.clear();
                    self.actions.spare_frames.push(back);
                }
            } else {
                self.counters.no_route += 1;
            }
        }
        for (mine, taken) in [
            (&mut self.actions.clones, clones),
            (&mut self.actions.generated, generated),
        ] {
            if mine.is_empty() {
                *mine = taken;
            }
        }
        if self.actions.frames.is_empty() {
            self.actions.frames = frames;
        }
        if !self.actions.is_empty() {
            self.apply_actions(dev);
        }
    }

    /// Run `f` on a held packet with the program, the control plane and a context.
    #[inline]
    fn pass<D: Device, R>(
        &mut self,
        dev: &mut D,
        h: D::Handle,
        f: impl FnOnce(&mut P, &mut C, &mut Packet, &mut Ctx<'_>) -> R,
    ) -> R {
        let (now, id, np, rp) = (dev.now_ps(), dev.switch_id(), dev.num_ports(), dev.recirculation_port());
        let Pipeline { program, control, rng, actions, .. } = self;
        dev.with_packet(h, |pkt, router| {
            let mut ctx = Ctx::new(now, id, np, rp, router, rng, actions);
            f(program, control, pkt, &mut ctx)
        })
    }

    /// Run `f` with the program, the control plane and a context, no packet.
    fn pass_no_packet<D: Device, R>(
        &mut self,
        dev: &mut D,
        f: impl FnOnce(&mut P, &mut C, &mut Ctx<'_>) -> R,
    ) -> R {
        let (now, id, np, rp) = (dev.now_ps(), dev.switch_id(), dev.num_ports(), dev.recirculation_port());
        let Pipeline { program, control, rng, actions, .. } = self;
        dev.with_router(|router| {
            let mut ctx = Ctx::new(now, id, np, rp, router, rng, actions);
            f(program, control, &mut ctx)
        })
    }
}
