//! OrbitCache's data plane on the ToR (paper §3.1–3.7; the artifact's ingress logic where the
//! paper is vague — see docs/orbitcache.md):
//!
//! - **lookup table**: exact match on the 128-bit HKEY → cache index (installed by the controller);
//! - **state table**: valid/invalid per index, plus a per-index cache-packet generation (our fix
//!   for the artifact's two-packets-orbiting race, carried in the header's VER byte);
//! - **request table**: per-key circular queues of S slots (client IP, UDP port, SEQ, timestamp)
//!   with queue-length, front and rear arrays;
//! - **counters**: per-key popularity, total cache hits, overflow requests;
//! - **cache packets** orbiting through the recirculation port; each pass serves at most one
//!   queued request by multicast (one copy to the client, one back into the loop).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use innet_dataplane::state::{ResourceEntry, ResourceKind, ResourceReport};
use innet_dataplane::{Ctx, Metadata, Program, Verdict};
use innet_sim::packet::Packet;
use innet_wire::orbitcache::{Op, CACHED_OVERFLOW, CACHED_SWITCH, CONTROLLER_PORT, FLAG_FETCHING};

use crate::kv;

/// A hasher for keys that are already hashes (HKEYs): folds the bits, no mixing.
#[derive(Default)]
pub struct FoldHasher(u64);
impl Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(b);
        }
        self.0 = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = ((v as u64) ^ ((v >> 64) as u64).rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
pub type FoldMap<K, V> = HashMap<K, V, BuildHasherDefault<FoldHasher>>;

pub const INVALID: u8 = 0;
pub const VALID: u8 = 1;

/// Counters of what the data plane did (for summaries and invariants).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OrbitCounters {
    /// Reads for cached, valid keys parked in the request table.
    pub parked: u64,
    /// Requests served by a cache packet (a multicast to a client).
    pub served: u64,
    /// Reads for cached keys forwarded because the key's queue was full.
    pub overflow: u64,
    /// Reads for cached keys forwarded because a write was pending (invalid).
    pub invalid_forwards: u64,
    /// Cache packets dropped: key evicted, invalid, or an older generation.
    pub stale_cache_packets: u64,
    /// New cache packets spawned by write or fetch replies.
    pub spawned: u64,
    /// Fetch replies ignored because no fetch was outstanding for the index (late duplicates).
    pub late_fetch_replies: u64,
    /// Writes that invalidated a cached key.
    pub invalidations: u64,
    /// Recirculation passes of cache packets that found nothing queued.
    pub idle_passes: u64,
    /// Packets on OrbitCache ports whose header did not parse (forwarded as plain packets).
    pub malformed: u64,
}

#[derive(Debug, Clone)]
pub struct OrbitSwitchConfig {
    /// Entries of the lookup table and size of the per-index arrays (the index pool).
    pub table_entries: usize,
    /// Request-table slots per key (S).
    pub queue_slots: usize,
    pub switch_ip: u32,
    /// Multicast group of each host IP: {host port, recirculation port}.
    pub host_groups: HashMap<u32, u16>,
    /// Fault injection (tests only): writes do not invalidate.
    pub skip_invalidation: bool,
    /// A newly installed key is valid at once, so its requests park while its value is being
    /// fetched (the artifact's behaviour, which makes overflow soar after popularity changes);
    /// false forwards them to the server until the fetch reply arrives.
    pub insert_valid: bool,
}

pub struct OrbitSwitch {
    pub cfg: OrbitSwitchConfig,
    pub lookup: FoldMap<u128, u32>,
    pub state: Vec<u8>,
    pub generation: Vec<u8>,
    /// A fetch for this index is outstanding: only then may an F-REP (re)spawn its cache packet,
    /// so a late duplicate F-REP cannot bring back a value older than a newer write's.
    pub fetching: Vec<bool>,
    pub popularity: Vec<u32>,
    pub total_cache: u64,
    pub miss_counter: u64,
    pub qlen: Vec<u16>,
    pub front: Vec<u16>,
    pub rear: Vec<u16>,
    pub slot_ip: Vec<u32>,
    pub slot_port: Vec<u16>,
    pub slot_seq: Vec<u32>,
    pub slot_latency: Vec<u32>,
    pub counters: OrbitCounters,
}

impl OrbitSwitch {
    pub fn new(cfg: OrbitSwitchConfig) -> Self {
        let n = cfg.table_entries;
        let slots = n * cfg.queue_slots;
        OrbitSwitch {
            lookup: FoldMap::default(),
            state: vec![INVALID; n],
            generation: vec![0; n],
            fetching: vec![false; n],
            popularity: vec![0; n],
            total_cache: 0,
            miss_counter: 0,
            qlen: vec![0; n],
            front: vec![0; n],
            rear: vec![0; n],
            slot_ip: vec![0; slots],
            slot_port: vec![0; slots],
            slot_seq: vec![0; slots],
            slot_latency: vec![0; slots],
            counters: OrbitCounters::default(),
            cfg,
        }
    }

    /// Control plane: map `hkey` to index `idx` (state starts invalid until the value arrives).
    pub fn install(&mut self, hkey: u128, idx: u32) {
        self.lookup.insert(hkey, idx);
        let i = idx as usize;
        self.state[i] = if self.cfg.insert_valid { VALID } else { INVALID };
        // Any cache packet of the index's previous key dies on its next pass.
        self.generation[i] = self.generation[i].wrapping_add(1);
        self.fetching[i] = true;
        self.popularity[i] = 0;
    }

    /// Control plane: remove `hkey` from the lookup table (its cache packet dies on its next pass).
    pub fn evict(&mut self, hkey: u128) -> Option<u32> {
        self.lookup.remove(&hkey)
    }

    /// Requests parked in the request table now.
    pub fn parked_now(&self) -> u64 {
        self.qlen.iter().map(|&q| q as u64).sum()
    }

    fn enqueue(&mut self, idx: usize, ip: u32, port: u16, seq: u32, lat: u32) -> bool {
        let s = self.cfg.queue_slots;
        if self.qlen[idx] as usize >= s {
            return false;
        }
        self.qlen[idx] += 1;
        let slot = idx * s + self.rear[idx] as usize;
        self.rear[idx] = ((self.rear[idx] as usize + 1) % s) as u16;
        self.slot_ip[slot] = ip;
        self.slot_port[slot] = port;
        self.slot_seq[slot] = seq;
        self.slot_latency[slot] = lat;
        true
    }

    fn dequeue(&mut self, idx: usize) -> Option<(u32, u16, u32, u32)> {
        if self.qlen[idx] == 0 {
            return None;
        }
        self.qlen[idx] -= 1;
        let s = self.cfg.queue_slots;
        let slot = idx * s + self.front[idx] as usize;
        self.front[idx] = ((self.front[idx] as usize + 1) % s) as u16;
        let r = (self.slot_ip[slot], self.slot_port[slot], self.slot_seq[slot], self.slot_latency[slot]);
        self.slot_ip[slot] = 0;
        self.slot_port[slot] = 0;
        self.slot_seq[slot] = 0;
        self.slot_latency[slot] = 0;
        Some(r)
    }

    fn group_of(&self, ip: u32) -> Option<u16> {
        self.cfg.host_groups.get(&ip).copied()
    }
}

impl Program for OrbitSwitch {
    fn name(&self) -> &str {
        "orbitcache"
    }

    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        let (_, _, dst_ip, dst_port) = kv::endpoints(pkt);
        if dst_ip == self.cfg.switch_ip && dst_port == CONTROLLER_PORT && !kv::is_kv(pkt) {
            return Verdict::ToCpu; // a server's top-k report
        }
        if !kv::is_kv(pkt) {
            return Verdict::Route;
        }
        let Some(mut h) = kv::header(pkt) else {
            self.counters.malformed += 1;
            return Verdict::Route;
        };
        let from_loop = meta.ingress_port == ctx.recirculation_port;
        if from_loop {
            // Whatever comes back from the loop is a cache packet (W-REP/F-REP copies included).
            h.op = Op::ReadReply;
        }
        let idx = self.lookup.get(&h.hkey).map(|&i| i as usize);
        match h.op {
            Op::Read => {
                let Some(i) = idx else { return Verdict::Route };
                self.popularity[i] = self.popularity[i].wrapping_add(1);
                self.total_cache += 1;
                if self.state[i] != VALID {
                    self.counters.invalid_forwards += 1;
                    return Verdict::Route;
                }
                let (src_ip, src_port, _, _) = kv::endpoints(pkt);
                if self.enqueue(i, src_ip, src_port, h.seq, h.latency_us) {
                    self.counters.parked += 1;
                    // The request ends here: its metadata waits for the cache packet.
                    Verdict::Consume
                } else {
                    self.miss_counter += 1;
                    self.counters.overflow += 1;
                    h.cached = CACHED_OVERFLOW;
                    kv::set_header(pkt, &h);
                    Verdict::Route
                }
            }
            Op::ReadReply if from_loop => {
                let Some(i) = idx else {
                    self.counters.stale_cache_packets += 1;
                    return Verdict::Drop;
                };
                if self.state[i] != VALID || h.ver != self.generation[i] {
                    self.counters.stale_cache_packets += 1;
                    return Verdict::Drop;
                }
                match self.dequeue(i) {
                    Some((ip, port, seq, lat)) => {
                        let Some(g) = self.group_of(ip) else {
                            // No port toward that client: the request is lost, counted; keep orbiting.
                            self.counters.malformed += 1;
                            kv::set_header(pkt, &h);
                            return Verdict::Recirculate;
                        };
                        h.seq = seq;
                        h.latency_us = lat;
                        h.cached = CACHED_SWITCH;
                        kv::set_header(pkt, &h);
                        kv::set_dst(pkt, ip, port);
                        self.counters.served += 1;
                        Verdict::Multicast(g)
                    }
                    None => {
                        self.counters.idle_passes += 1;
                        kv::set_header(pkt, &h);
                        Verdict::Recirculate
                    }
                }
            }
            Op::Write => {
                if let Some(i) = idx.filter(|_| !self.cfg.skip_invalidation) {
                    self.state[i] = INVALID;
                    h.flag = FLAG_FETCHING;
                    kv::set_header(pkt, &h);
                    self.counters.invalidations += 1;
                }
                Verdict::Route
            }
            Op::WriteReply | Op::FetchReply => {
                let to_controller = dst_ip == self.cfg.switch_ip;
                let carries_value = h.cached == CACHED_SWITCH;
                let fresh = |i: usize| h.op == Op::WriteReply || self.fetching[i];
                match idx {
                    Some(i) if carries_value && fresh(i) => {
                        self.fetching[i] = false;
                        self.state[i] = VALID;
                        self.generation[i] = self.generation[i].wrapping_add(1);
                        h.ver = self.generation[i];
                        kv::set_header(pkt, &h);
                        self.counters.spawned += 1;
                        if to_controller {
                            ctx.clone_to(pkt, Verdict::Recirculate);
                            Verdict::ToCpu
                        } else {
                            match self.group_of(dst_ip) {
                                Some(g) => Verdict::Multicast(g),
                                None => {
                                    ctx.clone_to(pkt, Verdict::Recirculate);
                                    Verdict::Route
                                }
                            }
                        }
                    }
                    Some(_) if carries_value && h.op == Op::FetchReply => {
                        self.counters.late_fetch_replies += 1;
                        if to_controller {
                            Verdict::ToCpu
                        } else {
                            Verdict::Route
                        }
                    }
                    _ if to_controller => Verdict::ToCpu,
                    _ => Verdict::Route,
                }
            }
            // Replies from servers, fetches and corrections: plain forwarding.
            _ => Verdict::Route,
        }
    }

    fn resources(&self) -> ResourceReport {
        let n = self.cfg.table_entries as u64;
        let slots = n * self.cfg.queue_slots as u64;
        let mut r = ResourceReport::new(self.name());
        r.push(ResourceEntry::new("lookup", ResourceKind::Exact, n, 128, 32));
        for (name, entries, width) in [
            ("state", n, 8),
            ("generation", n, 8),
            ("fetching", n, 1),
            ("popularity", n, 32),
            ("qlen", n, 16),
            ("front", n, 16),
            ("rear", n, 16),
            ("client_ip", slots, 32),
            ("client_port", slots, 16),
            ("client_seq", slots, 32),
            ("client_latency", slots, 32),
            ("total_cache", 1, 64),
            ("overflow_counter", 1, 64),
        ] {
            r.push(ResourceEntry::new(name, ResourceKind::Register, entries, width, 0));
        }
        r
    }
}
