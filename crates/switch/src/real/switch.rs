//! The program-running core of the real switch, without any I/O: a frame comes in on a port,
//! the program decides, frames go out into a [`TxBatch`]. Both the AF_PACKET runtime and the
//! in-memory pcap replay benchmark drive this same core.
//!
//! Verdicts: `Forward(p)` → port p; `Route` → the other port (two ports) or the port that
//! learned the destination MAC (flood when unknown); `Recirculate` → the program runs again
//! at once (up to `max_recirculations`); `Multicast(g)` → the configured group's ports;
//! `Consume` / `Drop` → counted; `ToCpu` → the control plane's `packet_in`, whose verdict is
//! then carried out (a packet-out). Frames the program cannot see (see [`innet_wire::phv::codec`]) go
//! raw to the other port(s).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use innet_wire::phv::codec::{emit_into, parse_into, Refusal};
use innet_wire::phv::edit::blank_packet;
use innet_wire::phv::Packet;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::pcap_log::PcapLog;
use super::routes::RouteTable;
use crate::control::ControlPlane;
use crate::program::{
    Actions, Ctx, EgressVerdict, Instance, Metadata, NextHop, Program, Router, Verdict,
};

/// Counters of one port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Frames received here that the program dropped (or that had nowhere to go).
    pub dropped: u64,
    /// Frames received here that did not parse (truncated, bad checksum, ...): passed raw.
    pub malformed: u64,
    /// Well-formed frames the program cannot see (ARP, IPv6, fragments): passed raw.
    pub passed_raw: u64,
    /// Frames the kernel refused to send on this port.
    pub tx_errors: u64,
}

/// Counters of the whole switch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchStats {
    pub ports: Vec<PortCounters>,
    pub ingress_passes: u64,
    pub recirculations: u64,
    pub recirculation_limit_drops: u64,
    pub clones: u64,
    pub generated: u64,
    pub consumed: u64,
    pub to_cpu: u64,
    pub digests: u64,
    pub timers_fired: u64,
    pub no_route: u64,
    /// Packets the program produced that could not be written as frames (see `emit_errors_last`).
    pub emit_errors: u64,
    pub emit_error_last: Option<String>,
    /// GSO super-frames cut into MTU-sized segments, and the segments made.
    pub gso_frames: u64,
    pub gso_segments: u64,
    /// Frames whose transport checksum the kernel left for offload and the runtime completed.
    pub checksums_completed: u64,
    /// Frames the link impairment (`--loss`, `--reorder`) dropped, and sent out of order.
    pub impair_dropped: u64,
    pub impair_reordered: u64,
}

impl SwitchStats {
    pub fn new(num_ports: u16) -> Self {
        SwitchStats {
            ports: vec![PortCounters::default(); num_ports as usize],
            ..Default::default()
        }
    }
    pub fn total(&self) -> PortCounters {
        let mut t = PortCounters::default();
        for p in &self.ports {
            t.rx_frames += p.rx_frames;
            t.rx_bytes += p.rx_bytes;
            t.tx_frames += p.tx_frames;
            t.tx_bytes += p.tx_bytes;
            t.dropped += p.dropped;
            t.malformed += p.malformed;
            t.passed_raw += p.passed_raw;
            t.tx_errors += p.tx_errors;
        }
        t
    }
}

/// A 10-byte virtio_net_hdr sent in front of a frame (all zeros: checksums are complete, no GSO).
pub type VnetHeader = [u8; 10];

/// Frames waiting to be sent, per port. Buffers are reused across batches.
pub struct TxBatch {
    ports: Vec<PortTx>,
}

#[derive(Default)]
pub struct PortTx {
    pub frames: Vec<(VnetHeader, Vec<u8>)>,
    pub len: usize,
}

impl PortTx {
    /// A cleared buffer at the end of the queue.
    fn next(&mut self) -> &mut (VnetHeader, Vec<u8>) {
        if self.len == self.frames.len() {
            self.frames.push(([0; 10], Vec::with_capacity(2048)));
        }
        let slot = &mut self.frames[self.len];
        self.len += 1;
        slot.0 = [0; 10];
        slot.1.clear();
        slot
    }
    pub fn queued(&self) -> &[(VnetHeader, Vec<u8>)] {
        &self.frames[..self.len]
    }
}

impl TxBatch {
    pub fn new(num_ports: u16) -> Self {
        TxBatch {
            ports: (0..num_ports).map(|_| PortTx::default()).collect(),
        }
    }
    pub fn port(&self, p: u16) -> &PortTx {
        &self.ports[p as usize]
    }
    pub fn port_mut(&mut self, p: u16) -> &mut PortTx {
        &mut self.ports[p as usize]
    }
    pub fn clear(&mut self) {
        for p in &mut self.ports {
            p.len = 0;
        }
    }
    pub fn queued_frames(&self) -> usize {
        self.ports.iter().map(|p| p.len).sum()
    }
    /// Queue raw bytes (with the vnet header they came with) on a port.
    pub fn push_raw(&mut self, port: u16, vnet: VnetHeader, frame: &[u8]) {
        let slot = self.ports[port as usize].next();
        slot.0 = vnet;
        slot.1.extend_from_slice(frame);
    }
}

/// What the runtime drives: one switch (program + control plane) behind frames in, frames out.
/// Object-safe, so the program registry can hand out any program's switch.
pub trait FrameSwitch {
    /// The program's name.
    fn program_name(&self) -> &str;
    fn num_ports(&self) -> u16;
    /// One frame arrived on `in_port` (checksums complete, no GSO). `vnet` is the header it came
    /// with, reused if the frame is passed raw.
    fn on_frame(
        &mut self,
        in_port: u16,
        frame: &[u8],
        vnet: VnetHeader,
        now_ps: u64,
        tx: &mut TxBatch,
    );
    /// Fire the timers due at `now_ps`; returns when the next one is due.
    fn on_tick(&mut self, now_ps: u64, tx: &mut TxBatch) -> Option<u64>;
    fn stats(&self) -> &SwitchStats;
    fn stats_mut(&mut self) -> &mut SwitchStats;
    /// Static routes for `Verdict::Route` (`--route CIDR=PORT`).
    fn set_routes(&mut self, routes: RouteTable);
    /// Record every frame handed to the program (pcap).
    fn set_pcap(&mut self, log: PcapLog);
    /// Flush the pcap, if any; returns a line for the summary.
    fn finish(&mut self) -> Result<Option<String>, String>;
    /// Program-specific lines for the summary (the program's own counters), if any.
    fn report(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Settings of the core.
#[derive(Debug, Clone)]
pub struct RealConfig {
    pub num_ports: u16,
    /// Extra passes a packet may make with `Verdict::Recirculate` before it is dropped.
    pub max_recirculations: u16,
    /// Multicast groups: group id → ports.
    pub multicast_groups: Vec<Vec<u16>>,
    /// Seed of the context's random number generator.
    pub seed: u64,
    /// Static routes for `Verdict::Route` (empty: the other port / MAC learning).
    pub routes: RouteTable,
}

impl RealConfig {
    pub fn ports(num_ports: u16) -> Self {
        RealConfig {
            num_ports,
            max_recirculations: 16,
            multicast_groups: Vec::new(),
            seed: 1,
            routes: RouteTable::default(),
        }
    }
}

/// `Verdict::Route` on a real switch: the other port of two, or L2 learning.
struct RealRouter<'a> {
    in_port: u16,
    num_ports: u16,
    macs: &'a HashMap<[u8; 6], u16>,
    routes: &'a RouteTable,
}

impl Router for RealRouter<'_> {
    fn next_hop(&self, pkt: &Packet) -> NextHop {
        if !self.routes.is_empty() {
            return match self.routes.lookup(pkt.routing_ip().dst) {
                Some(p) => NextHop::Port(p),
                None => NextHop::NoRoute,
            };
        }
        if self.num_ports == 2 {
            return NextHop::Port(1 - self.in_port.min(1));
        }
        match pkt.wire.as_deref().and_then(|w| self.macs.get(&w.eth_dst)) {
            Some(&p) => NextHop::Port(p),
            None => NextHop::NoRoute,
        }
    }
}

/// Which callback to run under a context.
enum Pass {
    Timer(u64),
    ControlTimer(u64),
}

/// A program (and its control plane) running on real frames.
pub struct RealSwitch<P: Program, C: ControlPlane<P>> {
    pub program: P,
    pub control: C,
    cfg: RealConfig,
    stats: SwitchStats,
    rng: ChaCha8Rng,
    /// What the program asked for in a pass; its `spare` list holds the parsed packets to reuse
    /// (their payload and wire-extras boxes keep their capacity), shared with the program's
    /// `Ctx::copy_headers`.
    actions: Actions,
    timers: BinaryHeap<Reverse<(u64, u64, u64, bool)>>,
    timer_seq: u64,
    macs: HashMap<[u8; 6], u16>,
    pcap: Option<PcapLog>,
    now_ps: u64,
    report: Option<ReportFn<P, C>>,
    /// Reused list of the ports a flood or multicast copies go to.
    ports_buf: Vec<u16>,
    /// The packet each received frame is parsed into, boxed so that taking it out and putting
    /// it back per frame moves a pointer, not the packet.
    rx: Option<Box<Packet>>,
}

/// Lines a program adds to the runtime's summary (its own counters), from its state.
pub type ReportFn<P, C> = Box<dyn Fn(&P, &C) -> Vec<(String, String)>>;

impl<P: Program, C: ControlPlane<P>> RealSwitch<P, C> {
    pub fn new(program: P, control: C, cfg: RealConfig) -> Self {
        RealSwitch {
            program,
            control,
            stats: SwitchStats::new(cfg.num_ports),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg,
            // The real device's output is frames: `reply_tcp` may write them directly.
            actions: Actions { takes_frames: true, ..Default::default() },
            timers: BinaryHeap::new(),
            timer_seq: 0,
            macs: HashMap::new(),
            pcap: None,
            now_ps: 0,
            report: None,
            ports_buf: Vec::new(),
            rx: None,
        }
    }

    /// Add the program's own counters to the live stats and the final summary.
    pub fn with_report(mut self, f: impl Fn(&P, &C) -> Vec<(String, String)> + 'static) -> Self {
        self.report = Some(Box::new(f));
        self
    }

    fn with_ctx<R>(
        &mut self,
        in_port: u16,
        f: impl FnOnce(&mut P, &mut C, &mut Ctx<'_>) -> R,
    ) -> R {
        let router = RealRouter {
            in_port,
            num_ports: self.cfg.num_ports,
            macs: &self.macs,
            routes: &self.cfg.routes,
        };
        let mut ctx = Ctx::new(
            self.now_ps,
            0,
            self.cfg.num_ports,
            self.cfg.num_ports,
            &router,
            &mut self.rng,
            &mut self.actions,
        );
        f(&mut self.program, &mut self.control, &mut ctx)
    }

    /// Raw frames go to every other port (the other one, with two ports).
    fn pass_raw(&mut self, in_port: u16, vnet: VnetHeader, frame: &[u8], tx: &mut TxBatch) {
        for p in 0..self.cfg.num_ports {
            if p != in_port {
                tx.push_raw(p, vnet, frame);
                self.stats.ports[p as usize].tx_frames += 1;
                self.stats.ports[p as usize].tx_bytes += frame.len() as u64;
            }
        }
    }

    fn recycle(&mut self, pkt: Packet) {
        if self.actions.spare.len() < 256 && pkt.wire.is_some() && pkt.payload_bytes.is_some() {
            self.actions.spare.push(pkt);
        }
    }

    /// Run ingress (again while it says Recirculate) and carry out the verdict. The packet is
    /// worked on in place (no moves of it through the calls below); the caller recycles it.
    fn run_ingress(
        &mut self,
        pkt: &mut Packet,
        in_port: u16,
        instance: Instance,
        tx: &mut TxBatch,
    ) {
        let mut meta = Metadata {
            ingress_port: in_port,
            instance,
            egress_port: 0,
            enq_queue_bytes: 0,
            replication_id: 0,
        };
        loop {
            self.stats.ingress_passes += 1;
            let verdict = self.with_ctx(in_port, |p, _, ctx| p.ingress(pkt, &mut meta, ctx));
            if verdict == Verdict::Recirculate {
                self.stats.recirculations += 1;
                pkt.recirculations = pkt.recirculations.saturating_add(1);
                if pkt.recirculations > self.cfg.max_recirculations {
                    self.stats.recirculation_limit_drops += 1;
                    self.count_drop(in_port);
                    break;
                }
                meta.instance = Instance::Recirculated;
                continue;
            }
            self.dispatch(pkt, verdict, &meta, tx, true);
            self.apply_actions(in_port, tx);
            return;
        }
        self.apply_actions(in_port, tx);
    }

    fn count_drop(&mut self, in_port: u16) {
        if let Some(c) = self.stats.ports.get_mut(in_port as usize) {
            c.dropped += 1;
        }
    }

    /// Carry out `verdict` for `pkt` (in place; the caller recycles it).
    fn dispatch(
        &mut self,
        pkt: &mut Packet,
        verdict: Verdict,
        meta: &Metadata,
        tx: &mut TxBatch,
        from_cpu_ok: bool,
    ) {
        let in_port = meta.ingress_port;
        match verdict {
            Verdict::Forward(p) if p < self.cfg.num_ports => self.egress(pkt, p, 0, meta, tx),
            Verdict::Route => {
                let hop = RealRouter {
                    in_port,
                    num_ports: self.cfg.num_ports,
                    macs: &self.macs,
                    routes: &self.cfg.routes,
                }
                .next_hop(pkt);
                match hop {
                    NextHop::Port(p) if p < self.cfg.num_ports => self.egress(pkt, p, 0, meta, tx),
                    _ if !self.cfg.routes.is_empty() || self.cfg.num_ports <= 2 => {
                        self.stats.no_route += 1;
                        self.count_drop(in_port);
                    }
                    _ => {
                        // Unknown destination on a multi-port switch: flood like a bridge.
                        let mut ports = std::mem::take(&mut self.ports_buf);
                        ports.clear();
                        ports.extend((0..self.cfg.num_ports).filter(|&p| p != in_port));
                        self.replicate(pkt, &ports, meta, tx);
                        self.ports_buf = ports;
                    }
                }
            }
            Verdict::Multicast(g) => {
                let mut ports = std::mem::take(&mut self.ports_buf);
                ports.clear();
                if let Some(members) = self.cfg.multicast_groups.get(g as usize) {
                    ports.extend_from_slice(members);
                }
                self.replicate(pkt, &ports, meta, tx);
                self.ports_buf = ports;
            }
            Verdict::Recirculate => {
                // Only clones and generated packets get here (ingress loops itself).
                self.run_ingress(pkt, self.cfg.num_ports, Instance::Recirculated, tx);
            }
            Verdict::Consume => {
                self.stats.consumed += 1;
            }
            Verdict::ToCpu if from_cpu_ok => {
                self.stats.to_cpu += 1;
                let v = self.with_ctx(in_port, |p, c, ctx| c.packet_in(p, pkt, ctx));
                let meta = Metadata {
                    instance: Instance::Generated,
                    ..*meta
                };
                self.dispatch(pkt, v, &meta, tx, false);
            }
            Verdict::ToCpu | Verdict::Drop | Verdict::Forward(_) => {
                if matches!(verdict, Verdict::Forward(_)) {
                    self.stats.no_route += 1;
                }
                self.count_drop(in_port);
            }
        }
    }

    /// A copy of `pkt` to each of `ports` (replication id = the position in the list), or a
    /// drop counted as no route when the list is empty.
    fn replicate(&mut self, pkt: &Packet, ports: &[u16], meta: &Metadata, tx: &mut TxBatch) {
        if ports.is_empty() {
            self.stats.no_route += 1;
            self.count_drop(meta.ingress_port);
            return;
        }
        for (rid, &p) in ports.iter().enumerate() {
            let mut copy = pkt.clone();
            self.egress(&mut copy, p, rid as u16, meta, tx);
            self.recycle(copy);
        }
    }

    /// Run egress on `pkt` (in place) and queue it as a frame on `port`.
    fn egress(&mut self, pkt: &mut Packet, port: u16, rid: u16, meta: &Metadata, tx: &mut TxBatch) {
        if port >= self.cfg.num_ports {
            // A multicast group naming a port this switch does not have.
            self.stats.no_route += 1;
            self.count_drop(meta.ingress_port);
            return;
        }
        let emeta = Metadata {
            egress_port: port,
            replication_id: rid,
            ..*meta
        };
        let v = self.with_ctx(meta.ingress_port, |p, _, ctx| p.egress(pkt, &emeta, ctx));
        if v == EgressVerdict::Drop {
            self.count_drop(meta.ingress_port);
            return;
        }
        let slot = tx.port_mut(port).next();
        match emit_into(pkt, &mut slot.1) {
            Ok(()) => {
                let c = &mut self.stats.ports[port as usize];
                c.tx_frames += 1;
                c.tx_bytes += slot.1.len() as u64;
            }
            Err(e) => {
                tx.port_mut(port).len -= 1;
                self.stats.emit_errors += 1;
                self.stats.emit_error_last = Some(e.to_string());
                self.count_drop(meta.ingress_port);
            }
        }
    }

    fn apply_actions(&mut self, in_port: u16, tx: &mut TxBatch) {
        if self.actions.is_empty() {
            return;
        }
        let a = &self.actions;
        if a.timers.is_empty()
            && a.control_timers.is_empty()
            && a.digests.is_empty()
            && a.clones.is_empty()
            && a.generated.is_empty()
        {
            // Only whole frames (a program's replies): they cause nothing further.
            self.send_frames(in_port, tx);
            return;
        }
        for (at, token) in self.actions.timers.drain(..) {
            self.timer_seq += 1;
            self.timers
                .push(Reverse((at, self.timer_seq, token, false)));
        }
        for (at, token) in self.actions.control_timers.drain(..) {
            self.timer_seq += 1;
            self.timers.push(Reverse((at, self.timer_seq, token, true)));
        }
        // Take this pass's lists out (what they cause is carried out by the recursion below)
        // and give their buffers back afterwards: no allocation per pass.
        let mut digests = std::mem::take(&mut self.actions.digests);
        let mut clones = std::mem::take(&mut self.actions.clones);
        let mut generated = std::mem::take(&mut self.actions.generated);
        for d in digests.drain(..) {
            self.stats.digests += 1;
            self.with_ctx(in_port, |p, c, ctx| c.digest(p, d, ctx));
        }
        let meta = Metadata {
            ingress_port: in_port,
            instance: Instance::Clone,
            egress_port: 0,
            enq_queue_bytes: 0,
            replication_id: 0,
        };
        for (mut pkt, dest) in clones.drain(..) {
            self.stats.clones += 1;
            self.dispatch(&mut pkt, dest, &meta, tx, true);
            self.recycle(pkt);
        }
        for (mut pkt, dest) in generated.drain(..) {
            self.stats.generated += 1;
            let meta = Metadata {
                instance: Instance::Generated,
                ..meta
            };
            self.dispatch(&mut pkt, dest, &meta, tx, true);
            self.recycle(pkt);
        }
        self.send_frames(in_port, tx);
        if self.actions.digests.is_empty() {
            self.actions.digests = digests;
        }
        if self.actions.clones.is_empty() {
            self.actions.clones = clones;
        }
        if self.actions.generated.is_empty() {
            self.actions.generated = generated;
        }
        if !self.actions.is_empty() {
            self.apply_actions(in_port, tx);
        }
    }

    /// Frames the program wrote whole: queued as they are (each buffer swapped into a TX slot,
    /// the slot's old buffer kept for the next reply).
    fn send_frames(&mut self, in_port: u16, tx: &mut TxBatch) {
        let Actions {
            frames,
            spare_frames,
            ..
        } = &mut self.actions;
        for (port, mut buf) in frames.drain(..) {
            self.stats.generated += 1;
            if port < self.cfg.num_ports {
                let c = &mut self.stats.ports[port as usize];
                c.tx_frames += 1;
                c.tx_bytes += buf.len() as u64;
                let slot = tx.port_mut(port).next();
                std::mem::swap(&mut slot.1, &mut buf);
            } else {
                self.stats.no_route += 1;
                if let Some(c) = self.stats.ports.get_mut(in_port as usize) {
                    c.dropped += 1;
                }
            }
            if spare_frames.len() < 256 {
                buf.clear();
                spare_frames.push(buf);
            }
        }
    }

    fn run_pass(&mut self, pass: Pass, tx: &mut TxBatch) {
        let n = self.cfg.num_ports;
        match pass {
            Pass::Timer(t) => self.with_ctx(n, |p, _, ctx| p.timer(t, ctx)),
            Pass::ControlTimer(t) => self.with_ctx(n, |p, c, ctx| c.timer(p, t, ctx)),
        }
        self.apply_actions(n, tx);
    }
}

impl<P: Program, C: ControlPlane<P>> FrameSwitch for RealSwitch<P, C> {
    fn program_name(&self) -> &str {
        self.program.name()
    }
    fn num_ports(&self) -> u16 {
        self.cfg.num_ports
    }

    fn on_frame(
        &mut self,
        in_port: u16,
        frame: &[u8],
        vnet: VnetHeader,
        now_ps: u64,
        tx: &mut TxBatch,
    ) {
        self.now_ps = now_ps;
        let Some(c) = self.stats.ports.get_mut(in_port as usize) else {
            return;
        };
        c.rx_frames += 1;
        c.rx_bytes += frame.len() as u64;
        if self.cfg.num_ports > 2 && frame.len() >= 12 {
            let src: [u8; 6] = frame[6..12].try_into().expect("6 bytes");
            if src[0] & 1 == 0 {
                self.macs.insert(src, in_port);
            }
        }
        let mut pkt = self.rx.take().unwrap_or_else(|| Box::new(blank_packet()));
        match parse_into(frame, &mut pkt) {
            Ok(()) => {
                if let Some(log) = &mut self.pcap {
                    log.write(now_ps, frame);
                }
                pkt.created_ps = now_ps;
                self.run_ingress(&mut pkt, in_port, Instance::Normal, tx);
            }
            Err(r) => {
                let c = &mut self.stats.ports[in_port as usize];
                match r {
                    Refusal::Malformed(_) => c.malformed += 1,
                    Refusal::NotIpv4 { .. } | Refusal::Unsupported(_) => c.passed_raw += 1,
                }
                self.pass_raw(in_port, vnet, frame, tx);
            }
        }
        self.rx = Some(pkt);
    }

    fn on_tick(&mut self, now_ps: u64, tx: &mut TxBatch) -> Option<u64> {
        self.now_ps = now_ps;
        while let Some(Reverse((at, _, token, control))) = self.timers.peek().copied() {
            if at > now_ps {
                return Some(at);
            }
            self.timers.pop();
            self.stats.timers_fired += 1;
            self.run_pass(
                if control {
                    Pass::ControlTimer(token)
                } else {
                    Pass::Timer(token)
                },
                tx,
            );
        }
        None
    }

    fn stats(&self) -> &SwitchStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut SwitchStats {
        &mut self.stats
    }
    fn set_routes(&mut self, routes: RouteTable) {
        self.cfg.routes = routes;
    }
    fn set_pcap(&mut self, log: PcapLog) {
        self.pcap = Some(log);
    }
    fn report(&self) -> Vec<(String, String)> {
        self.report
            .as_ref()
            .map(|f| f(&self.program, &self.control))
            .unwrap_or_default()
    }
    fn finish(&mut self) -> Result<Option<String>, String> {
        match self.pcap.take() {
            Some(log) => log.finish().map(Some),
            None => Ok(None),
        }
    }
}
