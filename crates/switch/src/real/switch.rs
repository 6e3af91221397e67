//! The real switch: the one pipeline core ([`crate::pipeline`]) on frames, without any I/O: a
//! frame comes in on a port, the program decides, frames go out into a [`TxBatch`]. Both the
//! AF_PACKET runtime and the in-memory pcap replay benchmark drive it.
//!
//! This is the pipeline's frame device: packets live in a small store of parsed packets reused
//! frame after frame; a packet leaving by a port is written as a frame
//! ([`innet_wire::phv::codec`]); `Verdict::Route` is the static routes (`--route`), else the
//! other port of two, else the port that learned the destination MAC (flooding unknown
//! destinations, like a bridge). The recirculation port is port `num_ports` (one past the
//! interfaces): a FIFO of which each [`FrameSwitch::on_tick`] runs one lap, so packets that
//! orbit without limit cost rounds, not a stall. The CPU path is immediate: packets sent to the
//! CPU reach the control plane's `packet_in` before the call that sent them returns, and so do
//! digests (the control-plane latency is 0 unless configured) and due timers. Frames the
//! program cannot see (see [`innet_wire::phv::codec`]) go raw to the other port(s).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::ops::{Deref, DerefMut};

use innet_wire::phv::codec::{emit_into, parse_into, Refusal};
use innet_wire::phv::edit::blank_packet;
use innet_wire::phv::Packet;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::pcap_log::PcapLog;
use super::routes::RouteTable;
use crate::control::ControlPlane;
use crate::pipeline::{Device, DropCause, Pipeline, SwitchConfig, SwitchCounters, Timer};
use crate::program::{NextHop, Program, Router};

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
    /// What the pipeline did (passes, recirculations, clones, CPU, digests, timers, no route).
    pub switch: SwitchCounters,
    /// Packets the program produced that could not be written as frames (see `emit_errors_last`).
    pub emit_errors: u64,
    pub emit_error_last: Option<String>,
    /// GSO super-frames cut into MTU-sized segments, and the segments made.
    pub gso_frames: u64,
    pub gso_segments: u64,
    /// Frames whose transport checksum the kernel left for offload and the runtime completed.
    pub checksums_completed: u64,
    /// Frames the link impairment (`--loss`, `--reorder`, `--duplicate`) dropped, sent out of
    /// order, and sent twice.
    pub impair_dropped: u64,
    pub impair_reordered: u64,
    pub impair_duplicated: u64,
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

/// Settings of the real switch: its device properties and the pipeline's settings.
#[derive(Debug, Clone)]
pub struct RealConfig {
    /// Interfaces (ports 0..num_ports); the recirculation port is `num_ports`.
    pub num_ports: u16,
    /// Seed of the context's random number generator.
    pub seed: u64,
    /// Static routes for `Verdict::Route` (empty: the other port / MAC learning).
    pub routes: RouteTable,
    /// The pipeline's settings (recirculation limit, multicast groups, digest latency).
    pub switch: SwitchConfig,
}

impl RealConfig {
    pub fn ports(num_ports: u16) -> Self {
        RealConfig {
            num_ports,
            seed: 1,
            routes: RouteTable::default(),
            switch: SwitchConfig::default(),
        }
    }
}

/// `Verdict::Route` on a real switch: the static routes, else the other port of two, else L2
/// learning.
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

/// A program (and its control plane) running on real frames (it dereferences to the pipeline:
/// `program`, `control`, `cfg`, `counters`).
pub struct RealSwitch<P: Program, C: ControlPlane<P>> {
    pub core: Pipeline<P, C>,
    ports: FramePorts,
    report: Option<ReportFn<P, C>>,
}

/// Lines a program adds to the runtime's summary (its own counters), from its state.
pub type ReportFn<P, C> = Box<dyn Fn(&P, &C) -> Vec<(String, String)>>;

/// The device side of the real switch: the packet store, the ports, the timers.
struct FramePorts {
    num_ports: u16,
    routes: RouteTable,
    stats: SwitchStats,
    macs: HashMap<[u8; 6], u16>,
    pcap: Option<PcapLog>,
    now_ps: u64,
    /// The packet store: parsed packets, reused; `arrival[i]` is the port the frame that led to
    /// packet `i` came in on (for `Route`'s "other port" and the per-port drop counters).
    slots: Vec<Packet>,
    arrival: Vec<u16>,
    free: Vec<u32>,
    /// The arrival port of the packet in the last pass (given to packets made in it).
    current_arrival: u16,
    /// Packets replaced in the store, for the programs' `Ctx::copy_headers`.
    stash: Vec<Packet>,
    timers: BinaryHeap<Reverse<(u64, u64, Timer)>>,
    timer_seq: u64,
    /// Packets sent out of the recirculation port, and to the CPU, in order.
    recirculating: VecDeque<u32>,
    cpu: VecDeque<u32>,
}

impl FramePorts {
    fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(blank_packet());
                self.arrival.push(0);
                (self.slots.len() - 1) as u32
            }
        }
    }
    fn count_drop(&mut self, h: u32) {
        if let Some(c) = self.stats.ports.get_mut(self.arrival[h as usize] as usize) {
            c.dropped += 1;
        }
        self.free.push(h);
    }
}

/// The real switch as the pipeline's device, for one call.
struct FrameDevice<'a> {
    p: &'a mut FramePorts,
    tx: &'a mut TxBatch,
}

impl Device for FrameDevice<'_> {
    type Handle = u32;
    /// The output is frames: `Ctx::reply_tcp` may write them directly.
    const TAKES_FRAMES: bool = true;

    fn now_ps(&self) -> u64 {
        self.p.now_ps
    }
    fn switch_id(&self) -> u32 {
        0
    }
    fn num_ports(&self) -> u16 {
        self.p.num_ports + 1
    }
    fn recirculation_port(&self) -> u16 {
        self.p.num_ports
    }
    #[inline]
    fn with_packet<R>(&mut self, h: u32, f: impl FnOnce(&mut Packet, &dyn Router) -> R) -> R {
        let p = &mut *self.p;
        p.current_arrival = p.arrival[h as usize];
        let router = RealRouter {
            in_port: p.current_arrival,
            num_ports: p.num_ports,
            macs: &p.macs,
            routes: &p.routes,
        };
        f(&mut p.slots[h as usize], &router)
    }
    fn with_router<R>(&mut self, f: impl FnOnce(&dyn Router) -> R) -> R {
        let p = &mut *self.p;
        p.current_arrival = p.num_ports;
        let router = RealRouter {
            in_port: p.num_ports,
            num_ports: p.num_ports,
            macs: &p.macs,
            routes: &p.routes,
        };
        f(&router)
    }
    fn floods_unknown(&self) -> bool {
        self.p.routes.is_empty() && self.p.num_ports > 2
    }
    /// Written as a frame on the port's queue (or onto the recirculation FIFO).
    #[inline]
    fn transmit(&mut self, port: u16, h: u32) {
        let p = &mut *self.p;
        if port == p.num_ports {
            p.recirculating.push_back(h);
            return;
        }
        let slot = self.tx.port_mut(port).next();
        match emit_into(&p.slots[h as usize], &mut slot.1) {
            Ok(()) => {
                let c = &mut p.stats.ports[port as usize];
                c.tx_frames += 1;
                c.tx_bytes += slot.1.len() as u64;
                p.free.push(h);
            }
            Err(e) => {
                self.tx.port_mut(port).len -= 1;
                p.stats.emit_errors += 1;
                p.stats.emit_error_last = Some(e.to_string());
                p.count_drop(h);
            }
        }
    }
    /// Queued as it is (the buffer swapped into a TX slot, the slot's old buffer given back).
    fn transmit_frame(&mut self, port: u16, mut frame: Vec<u8>) -> Vec<u8> {
        let c = &mut self.p.stats.ports[port as usize];
        c.tx_frames += 1;
        c.tx_bytes += frame.len() as u64;
        let slot = self.tx.port_mut(port).next();
        std::mem::swap(&mut slot.1, &mut frame);
        frame
    }
    fn clone_packet(&mut self, h: u32) -> u32 {
        let p = &mut *self.p;
        let i = p.alloc();
        let (dst, src) = if i < h {
            let (l, r) = p.slots.split_at_mut(h as usize);
            (&mut l[i as usize], &r[0])
        } else {
            let (l, r) = p.slots.split_at_mut(i as usize);
            (&mut r[0], &l[h as usize])
        };
        dst.clone_from(src);
        p.arrival[i as usize] = p.arrival[h as usize];
        i
    }
    fn adopt(&mut self, mut pkt: Packet, keep_created: bool) -> u32 {
        let p = &mut *self.p;
        if !keep_created {
            pkt.created_ps = p.now_ps;
        }
        let i = p.alloc();
        let old = std::mem::replace(&mut p.slots[i as usize], pkt);
        if p.stash.len() < 256 && old.wire.is_some() && old.payload_bytes.is_some() {
            p.stash.push(old);
        }
        p.arrival[i as usize] = p.current_arrival;
        i
    }
    fn consume(&mut self, h: u32) {
        self.p.free.push(h);
    }
    fn drop_packet(&mut self, h: u32, _cause: DropCause) {
        self.p.count_drop(h);
    }
    fn to_cpu(&mut self, h: u32) -> Result<(), DropCause> {
        self.p.cpu.push_back(h);
        Ok(())
    }
    fn schedule(&mut self, at_ps: u64, t: Timer) {
        self.p.timer_seq += 1;
        self.p.timers.push(Reverse((at_ps, self.p.timer_seq, t)));
    }
    fn recycle(&mut self, spare: &mut Vec<Packet>) {
        while spare.len() < 256 {
            match self.p.stash.pop() {
                Some(pkt) => spare.push(pkt),
                None => break,
            }
        }
    }
}

impl<P: Program, C: ControlPlane<P>> Deref for RealSwitch<P, C> {
    type Target = Pipeline<P, C>;
    fn deref(&self) -> &Pipeline<P, C> {
        &self.core
    }
}
impl<P: Program, C: ControlPlane<P>> DerefMut for RealSwitch<P, C> {
    fn deref_mut(&mut self) -> &mut Pipeline<P, C> {
        &mut self.core
    }
}

impl<P: Program, C: ControlPlane<P>> RealSwitch<P, C> {
    /// A switch of `cfg.num_ports` interfaces; an error names a setting that does not fit them.
    pub fn new(program: P, control: C, cfg: RealConfig) -> Result<Self, String> {
        cfg.switch.validate(cfg.num_ports + 1)?;
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        Ok(RealSwitch {
            core: Pipeline::new(program, control, cfg.switch, rng, true),
            ports: FramePorts {
                num_ports: cfg.num_ports,
                routes: cfg.routes,
                stats: SwitchStats::new(cfg.num_ports),
                macs: HashMap::new(),
                pcap: None,
                now_ps: 0,
                slots: Vec::new(),
                arrival: Vec::new(),
                free: Vec::new(),
                current_arrival: 0,
                stash: Vec::new(),
                timers: BinaryHeap::new(),
                timer_seq: 0,
                recirculating: VecDeque::new(),
                cpu: VecDeque::new(),
            },
            report: None,
        })
    }

    /// Add the program's own counters to the live stats and the final summary.
    pub fn with_report(mut self, f: impl Fn(&P, &C) -> Vec<(String, String)> + 'static) -> Self {
        self.report = Some(Box::new(f));
        self
    }

    /// Raw frames go to every other port (the other one, with two ports).
    fn pass_raw(&mut self, in_port: u16, vnet: VnetHeader, frame: &[u8], tx: &mut TxBatch) {
        for p in 0..self.ports.num_ports {
            if p != in_port {
                tx.push_raw(p, vnet, frame);
                self.ports.stats.ports[p as usize].tx_frames += 1;
                self.ports.stats.ports[p as usize].tx_bytes += frame.len() as u64;
            }
        }
    }

    /// Deliver what is due now: the packets on the CPU path (those queued so far) and the
    /// timers (digests among them) whose time has come. Then copy the pipeline's counters into
    /// the stats.
    fn settle(&mut self, tx: &mut TxBatch) {
        let mut dev = FrameDevice { p: &mut self.ports, tx };
        loop {
            for _ in 0..dev.p.cpu.len() {
                let h = dev.p.cpu.pop_front().expect("queued");
                self.core.cpu_arrival(&mut dev, h);
            }
            match dev.p.timers.peek() {
                Some(Reverse((at, _, t))) if *at <= dev.p.now_ps => {
                    let t = *t;
                    dev.p.timers.pop();
                    self.core.timer(&mut dev, t);
                }
                _ => break,
            }
        }
        self.ports.stats.switch = self.core.counters;
    }
}

impl<P: Program, C: ControlPlane<P>> FrameSwitch for RealSwitch<P, C> {
    fn program_name(&self) -> &str {
        self.program.name()
    }
    fn num_ports(&self) -> u16 {
        self.ports.num_ports
    }

    fn on_frame(
        &mut self,
        in_port: u16,
        frame: &[u8],
        vnet: VnetHeader,
        now_ps: u64,
        tx: &mut TxBatch,
    ) {
        let p = &mut self.ports;
        p.now_ps = now_ps;
        let Some(c) = p.stats.ports.get_mut(in_port as usize) else {
            return;
        };
        c.rx_frames += 1;
        c.rx_bytes += frame.len() as u64;
        if p.num_ports > 2 && frame.len() >= 12 {
            let src: [u8; 6] = frame[6..12].try_into().expect("6 bytes");
            if src[0] & 1 == 0 {
                p.macs.insert(src, in_port);
            }
        }
        let h = p.alloc();
        match parse_into(frame, &mut p.slots[h as usize]) {
            Ok(()) => {
                if let Some(log) = &mut p.pcap {
                    log.write(now_ps, frame);
                }
                p.slots[h as usize].created_ps = now_ps;
                p.arrival[h as usize] = in_port;
                let mut dev = FrameDevice { p, tx };
                self.core.receive(&mut dev, h, in_port);
                self.settle(tx);
            }
            Err(r) => {
                p.free.push(h);
                let c = &mut p.stats.ports[in_port as usize];
                match r {
                    Refusal::Malformed(_) => c.malformed += 1,
                    Refusal::NotIpv4 { .. } | Refusal::Unsupported(_) => c.passed_raw += 1,
                }
                self.pass_raw(in_port, vnet, frame, tx);
            }
        }
    }

    /// One lap of the recirculation port (the packets queued on it before the call), then what
    /// is due; returns `now_ps` while packets recirculate, else when the next timer is due.
    fn on_tick(&mut self, now_ps: u64, tx: &mut TxBatch) -> Option<u64> {
        self.ports.now_ps = now_ps;
        let rp = self.ports.num_ports;
        let mut dev = FrameDevice { p: &mut self.ports, tx };
        for _ in 0..dev.p.recirculating.len() {
            let h = dev.p.recirculating.pop_front().expect("queued");
            self.core.receive(&mut dev, h, rp);
        }
        self.settle(tx);
        if !self.ports.recirculating.is_empty() {
            return Some(now_ps);
        }
        self.ports.timers.peek().map(|Reverse((at, _, _))| *at)
    }

    fn stats(&self) -> &SwitchStats {
        &self.ports.stats
    }
    fn stats_mut(&mut self) -> &mut SwitchStats {
        &mut self.ports.stats
    }
    fn set_routes(&mut self, routes: RouteTable) {
        self.ports.routes = routes;
    }
    fn set_pcap(&mut self, log: PcapLog) {
        self.ports.pcap = Some(log);
    }
    fn report(&self) -> Vec<(String, String)> {
        self.report
            .as_ref()
            .map(|f| f(&self.program, &self.control))
            .unwrap_or_default()
    }
    fn finish(&mut self) -> Result<Option<String>, String> {
        match self.ports.pcap.take() {
            Some(log) => log.finish().map(Some),
            None => Ok(None),
        }
    }
}
