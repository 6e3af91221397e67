//! A storage host: `partitions_per_server` emulated storage servers (one per UDP port), each a
//! FIFO service queue limited to `rate_rps` with a finite request buffer, holding its partition's
//! values (id → version and size), answering reads, corrections, writes and fetches as the
//! artifact's server does, and — for dynamic caching — counting keys in a count-min sketch
//! (5 rows) with a top-k list that it reports to the controller every period.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use innet_sim::engine::Node;
use innet_sim::metrics::DropReason;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::PacketId;
use innet_wire::orbitcache::{
    Header, Op, Stamp, TopKReport, CACHED_OVERFLOW, CACHED_SERVER, CACHED_SWITCH, CONTROLLER_PORT, FLAG_FETCHING,
    FLAG_PEGASUS, FLAG_SNAPSHOT,
};

use crate::keys;
use crate::kv;
use crate::rack::Addressing;
use crate::workload::WorkloadSpec;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub rate_rps: f64,
    /// How `rate_rps` is enforced. `None`: paced, every request takes 1/`rate_rps` of service.
    /// `Some(window)`: the artifact's receive counter — requests take `service_ps` each, and at
    /// most `rate_rps × window` start in one fixed window; the rest wait for the next window.
    pub rate_window_ps: Option<u64>,
    /// Service time per request under a window limit (the server's own speed).
    pub service_ps: u64,
    /// Requests a partition can hold waiting (beyond the one in service).
    pub queue_requests: usize,
    /// Extra service time per key byte (the paper's Fig. 16: larger keys cost server CPU).
    pub ns_per_key_byte: f64,
    /// Count-min + top-k reports to the controller (dynamic caching).
    pub report_topk: bool,
    pub report_period_ps: u64,
    pub topk: usize,
    /// Keys reported only when their count exceeds this.
    pub report_min_count: u32,
    pub sketch_width: usize,
}

const SKETCH_ROWS: usize = 5;

/// A request waiting for service.
#[derive(Debug, Clone)]
struct Req {
    header: Header,
    key_id: u64,
    from: (u32, u16),
    value: Option<(Stamp, u32)>,
}

#[derive(Default)]
struct Partition {
    queue: VecDeque<Req>,
    busy: bool,
    /// The rate limit's current window and the requests started in it.
    window: u64,
    started_in_window: u64,
    /// Values written here: id → (version, size). Unwritten keys are (0, workload size).
    store: HashMap<u64, (u32, u32)>,
    sketch: Vec<u32>,
    topk: Vec<(u64, u32)>,
}

/// Per-partition counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionStats {
    pub served: u64,
    pub reads: u64,
    pub writes: u64,
    pub fetches: u64,
    pub corrections: u64,
    pub overflow_reads: u64,
    pub queue_drops: u64,
    pub max_queue: u64,
    pub reports: u64,
}

pub struct StorageHost {
    pub ip: u32,
    nic: PortId,
    first_partition: u32,
    addressing: Rc<Addressing>,
    workload: Rc<WorkloadSpec>,
    cfg: ServerConfig,
    service_ps: u64,
    /// Requests a partition may start per window (window limit only).
    window_budget: u64,
    parts: Vec<Partition>,
    pub stats: Vec<PartitionStats>,
    key_buf: Vec<u8>,
}

const TIMER_SERVICE: u64 = 1;
const TIMER_REPORT: u64 = 2;

impl StorageHost {
    pub fn new(
        ip: u32,
        nic: PortId,
        host_index: u32,
        addressing: Rc<Addressing>,
        workload: Rc<WorkloadSpec>,
        cfg: ServerConfig,
    ) -> Self {
        let per = addressing.partitions_per_server as usize;
        let per_request_ps = match cfg.rate_window_ps {
            None => 1e12 / cfg.rate_rps,
            Some(_) => cfg.service_ps as f64,
        };
        let service_ps = (per_request_ps + cfg.ns_per_key_byte * 1e3 * addressing.key_len as f64).round() as u64;
        let window_budget = cfg.rate_window_ps.map_or(0, |w| ((cfg.rate_rps * w as f64 / 1e12).round() as u64).max(1));
        let parts = (0..per)
            .map(|_| Partition {
                sketch: if cfg.report_topk { vec![0; SKETCH_ROWS * cfg.sketch_width] } else { Vec::new() },
                ..Default::default()
            })
            .collect();
        StorageHost {
            ip,
            nic,
            first_partition: host_index * per as u32,
            key_buf: vec![0; addressing.key_len],
            addressing,
            workload,
            service_ps,
            window_budget,
            parts,
            stats: vec![PartitionStats::default(); per],
            cfg,
        }
    }

    /// Start the periodic reports (call once before the run).
    pub fn start(&self, net: &mut Network, me: NodeId) {
        if self.cfg.report_topk {
            net.schedule_timer(me, self.cfg.report_period_ps, TIMER_REPORT << 56);
        }
    }

    /// Requests waiting or in service now.
    pub fn queued_now(&self) -> u64 {
        self.parts.iter().map(|p| p.queue.len() as u64).sum()
    }

    /// The value of key `id` on local partition `p`.
    fn value_of(&self, p: usize, id: u64) -> (u32, u32) {
        self.parts[p].store.get(&id).copied().unwrap_or((0, self.workload.value_bytes(id)))
    }

    fn count(&mut self, p: usize, id: u64) {
        if !self.cfg.report_topk {
            return;
        }
        let w = self.cfg.sketch_width;
        let part = &mut self.parts[p];
        let mut est = u32::MAX;
        for r in 0..SKETCH_ROWS {
            let i = r * w + (keys::key_uniform(id, 0xC0FFEE + r as u64) * w as f64) as usize % w;
            part.sketch[i] = part.sketch[i].saturating_add(1);
            est = est.min(part.sketch[i]);
        }
        if let Some(e) = part.topk.iter_mut().find(|e| e.0 == id) {
            e.1 = est;
        } else if part.topk.len() < self.cfg.topk {
            part.topk.push((id, est));
        } else if let Some((mi, _)) = part.topk.iter().enumerate().min_by_key(|(_, e)| e.1) {
            if part.topk[mi].1 < est {
                part.topk[mi] = (id, est);
            }
        }
    }

    fn serve_next(&mut self, net: &mut Network, me: NodeId, p: usize) {
        if self.parts[p].queue.is_empty() {
            self.parts[p].busy = false;
            return;
        }
        self.parts[p].busy = true;
        let mut start = net.now_ps();
        if let Some(w) = self.cfg.rate_window_ps {
            let part = &mut self.parts[p];
            let mut window = start / w;
            if window != part.window {
                part.window = window;
                part.started_in_window = 0;
            }
            if part.started_in_window >= self.window_budget {
                // This window's budget is spent: the request waits for the next one.
                window += 1;
                start = window * w;
                part.window = window;
                part.started_in_window = 0;
            }
            part.started_in_window += 1;
        }
        net.schedule_timer(me, start + self.service_ps, (TIMER_SERVICE << 56) | p as u64);
    }

    fn complete(&mut self, net: &mut Network, me: NodeId, p: usize) {
        let Some(req) = self.parts[p].queue.pop_front() else {
            self.parts[p].busy = false;
            return;
        };
        let my_addr = (self.ip, innet_wire::orbitcache::BASE_PORT + p as u16);
        keys::key_bytes(req.key_id, &mut self.key_buf);
        let mut h = req.header;
        let st = &mut self.stats[p];
        st.served += 1;
        let reply = match h.op {
            Op::Read | Op::Correction => {
                if h.op == Op::Correction {
                    st.corrections += 1;
                } else {
                    st.reads += 1;
                }
                if h.cached == CACHED_OVERFLOW {
                    st.overflow_reads += 1;
                }
                let (ver, size) = self.value_of(p, req.key_id);
                h.op = Op::ReadReply;
                h.cached = if h.cached == CACHED_OVERFLOW { CACHED_OVERFLOW } else { CACHED_SERVER };
                Some(kv::build(my_addr, req.from, &h, &self.key_buf, Some((Stamp { key_id: req.key_id, version: ver }, size))))
            }
            Op::Write => {
                st.writes += 1;
                let (old, _) = self.value_of(p, req.key_id);
                let (given, size) = req.value.map(|(s, l)| (s.version, l)).unwrap_or((0, self.workload.value_bytes(req.key_id)));
                let ver = if h.flag == FLAG_SNAPSHOT || h.flag == FLAG_PEGASUS { given.max(old) } else { old + 1 };
                self.parts[p].store.insert(req.key_id, (ver, size));
                if h.flag == FLAG_SNAPSHOT {
                    None // a write-back from the switch's controller: nothing to answer
                } else {
                    h.op = Op::WriteReply;
                    let stamp = Stamp { key_id: req.key_id, version: ver };
                    if h.flag == FLAG_FETCHING {
                        // A write to a cached key: the reply carries the value (the new cache packet).
                        h.cached = CACHED_SWITCH;
                        Some(kv::build(my_addr, req.from, &h, &self.key_buf, Some((stamp, size))))
                    } else {
                        // Header, key and the value's stamp only: the client learns the version.
                        h.cached = CACHED_SERVER;
                        let stamp_only = innet_wire::orbitcache::STAMP_BYTES as u32;
                        Some(kv::build(my_addr, req.from, &h, &self.key_buf, Some((stamp, stamp_only))))
                    }
                }
            }
            Op::Fetch => {
                st.fetches += 1;
                let (ver, size) = self.value_of(p, req.key_id);
                h.op = Op::FetchReply;
                h.cached = CACHED_SWITCH;
                Some(kv::build(my_addr, req.from, &h, &self.key_buf, Some((Stamp { key_id: req.key_id, version: ver }, size))))
            }
            _ => None,
        };
        if let Some(r) = reply {
            let id = net.create_packet(r);
            net.transmit(self.nic, id);
        }
        self.serve_next(net, me, p);
    }

    fn report(&mut self, net: &mut Network, me: NodeId) {
        let ctl = (self.addressing.switch_ip, CONTROLLER_PORT);
        for p in 0..self.parts.len() {
            let part = &mut self.parts[p];
            let mut entries: Vec<(u64, u32)> =
                part.topk.iter().copied().filter(|&(_, c)| c > self.cfg.report_min_count).collect();
            entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            part.topk.clear();
            part.sketch.iter_mut().for_each(|c| *c = 0);
            if entries.is_empty() {
                continue;
            }
            self.stats[p].reports += 1;
            let body = TopKReport { partition: (self.first_partition + p as u32) as u16, entries }.emit();
            let mut pkt = innet_sim::packet::Packet::new(
                innet_sim::packet::Ipv4::new(self.ip, ctl.0, innet_sim::packet::IP_PROTO_UDP),
                innet_sim::packet::L4::Udp { src_port: 4322, dst_port: ctl.1 },
                body.len() as u32,
            );
            pkt.payload_bytes = Some(Box::new(body));
            let id = net.create_packet(pkt);
            net.transmit(self.nic, id);
        }
        net.schedule_timer(me, net.now_ps() + self.cfg.report_period_ps, TIMER_REPORT << 56);
    }
}

impl Node for StorageHost {
    fn receive(&mut self, net: &mut Network, me: NodeId, _in_port: PortId, id: PacketId) {
        let key_len = self.addressing.key_len;
        let pkt = net.pkt(id);
        let (src_ip, src_port, dst_ip, dst_port) = kv::endpoints(pkt);
        let parsed = (dst_ip == self.ip)
            .then(|| {
                let p = self.addressing.partition_of(dst_ip, dst_port)?;
                let h = kv::header(pkt)?;
                let key_id = keys::key_id(kv::key(pkt, key_len)?)?;
                Some((p, h, key_id, kv::value(pkt, key_len)))
            })
            .flatten();
        let Some((p, header, key_id, value)) = parsed else {
            net.drop_packet(id, DropReason::NoListener);
            return;
        };
        let local = (p - self.first_partition) as usize;
        let control = header.flag == FLAG_SNAPSHOT;
        if !control && self.parts[local].queue.len() >= self.cfg.queue_requests {
            self.stats[local].queue_drops += 1;
            net.drop_packet(id, DropReason::BufferOverflow);
            return;
        }
        net.consume(id);
        if matches!(header.op, Op::Read | Op::Correction) {
            self.count(local, key_id);
        }
        let part = &mut self.parts[local];
        part.queue.push_back(Req { header, key_id, from: (src_ip, src_port), value });
        let q = part.queue.len() as u64;
        let st = &mut self.stats[local];
        st.max_queue = st.max_queue.max(q);
        if !self.parts[local].busy {
            self.serve_next(net, me, local);
        }
    }

    fn timer(&mut self, net: &mut Network, me: NodeId, token: u64) {
        match token >> 56 {
            TIMER_SERVICE => self.complete(net, me, (token & 0xFFFF) as usize),
            TIMER_REPORT => self.report(net, me),
            _ => {}
        }
    }
}
