//! A client host: open-loop Poisson requests (reads and writes by the workload's write ratio) to
//! the partition that owns each key, the key list indexed by SEQ (the paper's client-side
//! collision detection, with correction requests), and the correctness checks every run makes:
//! a client never accepts a value for another key, and no read that starts after a write's reply
//! returns an older value (the per-key history of acknowledged write versions, shared by all
//! clients).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use innet_sim::engine::Node;
use innet_sim::metrics::DropReason;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::PacketId;
use innet_wire::orbitcache::{Header, Op, Stamp, CACHED_SWITCH, FLAG_SWITCH_REPLY};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use crate::keys;
use crate::kv;
use crate::rack::Addressing;
use crate::workload::WorkloadSpec;
use innet_workloads::popularity::KeySampler;

/// The newest acknowledged write version of every written key (all clients share it).
pub type History = Rc<RefCell<HashMap<u64, u32>>>;

#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub rate_rps: f64,
    pub start_ps: u64,
    /// Requests sent from here on count in the measurements.
    pub measure_from_ps: u64,
    pub stop_ps: u64,
    pub port: u16,
    pub timeline_bin_ps: u64,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    key_id: u64,
    write: bool,
    sent_ps: u64,
    /// The newest write version acknowledged to anyone when this read started.
    min_version: u32,
    partition: u32,
    measured: bool,
}

/// What a client saw.
#[derive(Debug, Clone, Default)]
pub struct ClientStats {
    pub sent: u64,
    pub sent_measured: u64,
    pub answered_measured: u64,
    pub reads_measured: u64,
    pub writes_measured: u64,
    /// Measured replies served by the switch (cache packets, NetCache/FarReach hits).
    pub switch_replies: u64,
    pub server_replies: u64,
    /// Measured reads for cached keys that the switch sent on to the server (queue full).
    pub overflow_replies: u64,
    /// Measured server replies per partition.
    pub per_partition: Vec<u64>,
    pub latency_switch_us: Vec<f64>,
    pub latency_server_us: Vec<f64>,
    pub latency_write_us: Vec<f64>,
    /// Cached replies whose key was not the one asked (hash collision or a reused index).
    pub collisions: u64,
    pub corrections_sent: u64,
    /// Violations (must stay 0): a value of another key accepted; an older value than a write
    /// acknowledged before the read started.
    pub wrong_key_accepted: u64,
    pub stale_reads: u64,
    /// Replies for no outstanding request (duplicates), and requests whose SEQ slot was reused
    /// while still unanswered.
    pub unexpected_replies: u64,
    pub slots_reused: u64,
    /// Requests still unanswered at the end.
    pub unanswered_at_end: u64,
    pub unanswered_measured_at_end: u64,
    /// Answers per time bin of `timeline_bin_ps` (by arrival time), from time 0.
    pub timeline: Vec<u64>,
    pub timeline_overflow: Vec<u64>,
}

const RING: usize = 1 << 18;

pub struct Client {
    pub ip: u32,
    nic: PortId,
    cfg: ClientConfig,
    addressing: Rc<Addressing>,
    workload: Rc<WorkloadSpec>,
    sampler: Rc<KeySampler>,
    history: History,
    rng: ChaCha8Rng,
    gap: Exp<f64>,
    seq: u32,
    pending: Vec<Option<Pending>>,
    key_buf: Vec<u8>,
    pub stats: ClientStats,
}

impl Client {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ip: u32,
        nic: PortId,
        cfg: ClientConfig,
        addressing: Rc<Addressing>,
        workload: Rc<WorkloadSpec>,
        sampler: Rc<KeySampler>,
        history: History,
        rng: ChaCha8Rng,
    ) -> Self {
        let gap = Exp::new(cfg.rate_rps.max(1e-9) / 1e12).expect("positive rate");
        let parts = addressing.partitions() as usize;
        Client {
            ip,
            nic,
            key_buf: vec![0; addressing.key_len],
            cfg,
            addressing,
            workload,
            sampler,
            history,
            rng,
            gap,
            seq: 0,
            pending: vec![None; RING],
            stats: ClientStats { per_partition: vec![0; parts], ..Default::default() },
        }
    }

    pub fn start(&mut self, net: &mut Network, me: NodeId) {
        if self.cfg.rate_rps > 0.0 {
            let first = self.cfg.start_ps + self.gap.sample(&mut self.rng) as u64;
            if first < self.cfg.stop_ps {
                net.schedule_timer(me, first, 0);
            }
        }
    }

    fn send_request(&mut self, net: &mut Network) {
        let now = net.now_ps();
        let rank = self.sampler.sample_rank(&mut self.rng);
        let key_id = self.sampler.key_of_rank(rank, now);
        let write = self.workload.write_ratio > 0.0 && self.rng.gen::<f64>() < self.workload.write_ratio;
        keys::key_bytes(key_id, &mut self.key_buf);
        let hkey = keys::hkey(&self.key_buf, self.addressing.hkey_bits);
        let partition = self.addressing.key_partition(&self.key_buf);
        let dst = self.addressing.partition_addr(partition);
        self.seq = self.seq.wrapping_add(1);
        let slot = self.seq as usize % RING;
        if self.pending[slot].is_some() {
            self.stats.slots_reused += 1;
        }
        let measured = now >= self.cfg.measure_from_ps;
        let min_version = if write { 0 } else { self.history.borrow().get(&key_id).copied().unwrap_or(0) };
        self.pending[slot] = Some(Pending { key_id, write, sent_ps: now, min_version, partition, measured });
        let mut h = Header::new(if write { Op::Write } else { Op::Read }, self.seq, hkey);
        h.latency_us = (now / 1_000_000) as u32;
        let value = write.then(|| (Stamp { key_id, version: 0 }, self.workload.value_bytes(key_id)));
        let pkt = kv::build((self.ip, self.cfg.port), dst, &h, &self.key_buf, value);
        let id = net.create_packet(pkt);
        net.transmit(self.nic, id);
        self.stats.sent += 1;
        if measured {
            self.stats.sent_measured += 1;
            if write {
                self.stats.writes_measured += 1;
            } else {
                self.stats.reads_measured += 1;
            }
        }
    }

    fn on_reply(&mut self, net: &mut Network, pkt: &innet_sim::packet::Packet) {
        let key_len = self.addressing.key_len;
        let (src_ip, src_port, _, _) = kv::endpoints(pkt);
        let (Some(h), Some(key)) = (kv::header(pkt), kv::key(pkt, key_len)) else {
            self.stats.unexpected_replies += 1;
            return;
        };
        let slot = h.seq as usize % RING;
        let Some(p) = self.pending[slot] else {
            self.stats.unexpected_replies += 1;
            return;
        };
        keys::key_bytes(p.key_id, &mut self.key_buf);
        let now = net.now_ps();
        match h.op {
            Op::ReadReply if !p.write => {
                if key != self.key_buf.as_slice() {
                    // The key list says this SEQ asked for another key: correct it at the server.
                    self.stats.collisions += 1;
                    if h.cached == CACHED_SWITCH {
                        self.stats.corrections_sent += 1;
                        let hk = keys::hkey(&self.key_buf, self.addressing.hkey_bits);
                        let mut c = Header::new(Op::Correction, h.seq, hk);
                        c.latency_us = h.latency_us;
                        let dst = self.addressing.partition_addr(p.partition);
                        let pkt = kv::build((self.ip, self.cfg.port), dst, &c, &self.key_buf, None);
                        let id = net.create_packet(pkt);
                        net.transmit(self.nic, id);
                    }
                    return;
                }
                let Some((stamp, _)) = kv::value(pkt, key_len) else {
                    self.stats.unexpected_replies += 1;
                    return;
                };
                if stamp.key_id != p.key_id {
                    self.stats.wrong_key_accepted += 1;
                }
                if stamp.version < p.min_version {
                    self.stats.stale_reads += 1;
                }
                self.pending[slot] = None;
                self.bin(now, h.cached == innet_wire::orbitcache::CACHED_OVERFLOW);
                if p.measured {
                    self.stats.answered_measured += 1;
                    let us = (now - p.sent_ps) as f64 / 1e6;
                    if h.cached == CACHED_SWITCH {
                        self.stats.switch_replies += 1;
                        self.stats.latency_switch_us.push(us);
                    } else {
                        self.stats.server_replies += 1;
                        self.stats.latency_server_us.push(us);
                        if h.cached == innet_wire::orbitcache::CACHED_OVERFLOW {
                            self.stats.overflow_replies += 1;
                        }
                        if let Some(part) = self.addressing.partition_of(src_ip, src_port) {
                            self.stats.per_partition[part as usize] += 1;
                        }
                    }
                }
            }
            Op::WriteReply if p.write && key == self.key_buf.as_slice() => {
                if let Some((stamp, _)) = kv::value(pkt, key_len) {
                    let mut hist = self.history.borrow_mut();
                    let v = hist.entry(p.key_id).or_insert(0);
                    *v = (*v).max(stamp.version);
                }
                self.pending[slot] = None;
                self.bin(now, false);
                if p.measured {
                    self.stats.answered_measured += 1;
                    let us = (now - p.sent_ps) as f64 / 1e6;
                    self.stats.latency_write_us.push(us);
                    if h.flag == FLAG_SWITCH_REPLY {
                        self.stats.switch_replies += 1;
                    } else {
                        self.stats.server_replies += 1;
                        if let Some(part) = self.addressing.partition_of(src_ip, src_port) {
                            self.stats.per_partition[part as usize] += 1;
                        }
                    }
                }
            }
            _ => self.stats.unexpected_replies += 1,
        }
    }

    fn bin(&mut self, now: u64, overflow: bool) {
        let b = (now / self.cfg.timeline_bin_ps.max(1)) as usize;
        if b >= self.stats.timeline.len() {
            self.stats.timeline.resize(b + 1, 0);
            self.stats.timeline_overflow.resize(b + 1, 0);
        }
        self.stats.timeline[b] += 1;
        self.stats.timeline_overflow[b] += overflow as u64;
    }

    /// Count what is still unanswered (call when the run ends).
    pub fn close(&mut self) {
        for p in self.pending.iter().flatten() {
            self.stats.unanswered_at_end += 1;
            if p.measured {
                self.stats.unanswered_measured_at_end += 1;
            }
        }
    }
}

impl Node for Client {
    fn receive(&mut self, net: &mut Network, _me: NodeId, _in_port: PortId, id: PacketId) {
        if net.pkt(id).ip.dst != self.ip {
            net.drop_packet(id, DropReason::NotForThisHost);
            return;
        }
        let pkt = net.deliver(id);
        self.on_reply(net, &pkt);
    }

    fn timer(&mut self, net: &mut Network, me: NodeId, _token: u64) {
        self.send_request(net);
        let next = net.now_ps() + self.gap.sample(&mut self.rng).max(1.0) as u64;
        if next < self.cfg.stop_ps {
            net.schedule_timer(me, next, 0);
        }
    }
}
