//! OrbitCache's controller in the switch control plane (§3.8, the artifact's dynamic mode):
//! every period it reads and resets the per-key popularity counters and the hit/overflow
//! counters, merges the servers' top-k reports, evicts the least popular cached keys for hotter
//! uncached ones (the new key reuses the evicted key's index), and fetches each new key's value
//! through the data plane (F-REQ → F-REP, which validates the entry and spawns the cache packet)
//! with a timeout and retries. Optional cache sizing shrinks the cache when the overflow ratio
//! passes a target and grows it back when overflow is rare. With no period it only preloads.

use std::collections::HashMap;
use std::rc::Rc;

use innet_dataplane::{ControlPlane, Ctx, Verdict};
use innet_sim::packet::Packet;
use innet_wire::orbitcache::{Header, Op, TopKReport, CONTROLLER_PORT};

use crate::keys;
use crate::kv;
use crate::orbit_switch::OrbitSwitch;
use crate::rack::Addressing;

#[derive(Debug, Clone)]
pub struct OrbitControlConfig {
    /// Keys to cache (NUM_HOTKEY); the index pool is the switch's table size.
    pub capacity: usize,
    /// Keys installed and fetched at time 0, hottest first.
    pub preload: Vec<u64>,
    /// Cache-update period; None = static cache (preload only).
    pub period_ps: Option<u64>,
    pub fetch_timeout_ps: u64,
    pub fetch_tries: u32,
    /// Cache sizing from the hit/overflow counters.
    pub auto_size: bool,
    pub overflow_target: f64,
    pub min_capacity: usize,
}

/// One controller period, as the controller saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub at_ps: u64,
    pub cache_hits: u64,
    pub overflows: u64,
    pub overflow_ratio: f64,
    pub inserted: u32,
    pub evicted: u32,
    pub capacity: u32,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControlStats {
    pub fetches_sent: u64,
    pub fetch_retries: u64,
    pub fetch_failures: u64,
    pub fetch_replies: u64,
    pub insertions: u64,
    pub evictions: u64,
    pub reports: u64,
}

pub const TOKEN_PRELOAD: u64 = 1;
const TOKEN_TICK: u64 = 2;
const TOKEN_FETCH_CHECK: u64 = 3;

pub struct OrbitControl {
    cfg: OrbitControlConfig,
    addressing: Rc<Addressing>,
    /// key id → index, and index → key id.
    cached: HashMap<u64, u32>,
    index_key: Vec<Option<u64>>,
    free: Vec<u32>,
    /// key id → (tries so far, deadline).
    pending: HashMap<u64, (u32, u64)>,
    reports: HashMap<u64, u32>,
    pub capacity: usize,
    pub ticks: Vec<Tick>,
    pub stats: ControlStats,
}

impl OrbitControl {
    pub fn new(cfg: OrbitControlConfig, addressing: Rc<Addressing>, table_entries: usize) -> Self {
        OrbitControl {
            capacity: cfg.capacity,
            cfg,
            addressing,
            cached: HashMap::new(),
            index_key: vec![None; table_entries],
            free: (0..table_entries as u32).rev().collect(),
            pending: HashMap::new(),
            reports: HashMap::new(),
            ticks: Vec::new(),
            stats: ControlStats::default(),
        }
    }

    pub fn cached_keys(&self) -> usize {
        self.cached.len()
    }

    fn send_fetch(&mut self, key_id: u64, ctx: &mut Ctx<'_>) {
        let (key, hkey) = self.addressing.key(key_id);
        let dst = self.addressing.partition_addr(self.addressing.key_partition(&key));
        let h = Header::new(Op::Fetch, 0, hkey);
        let pkt = kv::build((self.addressing.switch_ip, CONTROLLER_PORT), dst, &h, &key, None);
        ctx.generate(pkt, Verdict::Route);
        self.stats.fetches_sent += 1;
    }

    fn insert(&mut self, program: &mut OrbitSwitch, key_id: u64, idx: u32, ctx: &mut Ctx<'_>) {
        let (_, hkey) = self.addressing.key(key_id);
        program.install(hkey, idx);
        self.cached.insert(key_id, idx);
        self.index_key[idx as usize] = Some(key_id);
        self.stats.insertions += 1;
        self.send_fetch(key_id, ctx);
        let deadline = ctx.now_ps + self.cfg.fetch_timeout_ps;
        self.pending.insert(key_id, (1, deadline));
        ctx.set_control_timer(deadline, TOKEN_FETCH_CHECK);
    }

    fn evict(&mut self, program: &mut OrbitSwitch, key_id: u64) -> Option<u32> {
        let idx = self.cached.remove(&key_id)?;
        let (_, hkey) = self.addressing.key(key_id);
        program.evict(hkey);
        self.index_key[idx as usize] = None;
        self.pending.remove(&key_id);
        self.stats.evictions += 1;
        Some(idx)
    }

    fn preload(&mut self, program: &mut OrbitSwitch, ctx: &mut Ctx<'_>) {
        let keys: Vec<u64> = self.cfg.preload.iter().copied().take(self.capacity).collect();
        for k in keys {
            if self.cached.contains_key(&k) {
                continue;
            }
            let Some(idx) = self.free.pop() else { break };
            self.insert(program, k, idx, ctx);
        }
    }

    fn tick(&mut self, program: &mut OrbitSwitch, ctx: &mut Ctx<'_>) {
        // 1. Read and reset the counters.
        let hits = std::mem::take(&mut program.total_cache);
        let overflows = std::mem::take(&mut program.miss_counter);
        let mut popularity: Vec<(u32, u64)> = self
            .cached
            .iter()
            .map(|(&k, &i)| (std::mem::take(&mut program.popularity[i as usize]), k))
            .collect();
        let ratio = if hits > 0 { overflows as f64 / hits as f64 } else { 0.0 };
        // 2. Cache sizing.
        if self.cfg.auto_size && hits > 0 {
            if ratio > self.cfg.overflow_target {
                self.capacity = (self.capacity * 3 / 4).max(self.cfg.min_capacity);
            } else if ratio < self.cfg.overflow_target / 10.0 {
                self.capacity = (self.capacity + (self.capacity / 8).max(1)).min(self.cfg.capacity.max(self.cfg.min_capacity));
            }
        }
        // 3. Evict down to the capacity, least popular first; then hot reported keys replace
        //    the least popular cached ones (reusing their index).
        popularity.sort();
        let mut evicted = 0u32;
        let mut inserted = 0u32;
        let mut pop_iter = popularity.into_iter().peekable();
        while self.cached.len() > self.capacity {
            let Some((_, k)) = pop_iter.next() else { break };
            if let Some(idx) = self.evict(program, k) {
                self.free.push(idx);
                evicted += 1;
            }
        }
        let mut reported: Vec<(u64, u32)> = std::mem::take(&mut self.reports).into_iter().collect();
        reported.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (k, count) in reported {
            if self.cached.contains_key(&k) {
                continue;
            }
            if self.cached.len() < self.capacity {
                if let Some(idx) = self.free.pop() {
                    self.insert(program, k, idx, ctx);
                    inserted += 1;
                    continue;
                }
            }
            match pop_iter.peek() {
                Some(&(min_count, victim)) if count > min_count => {
                    pop_iter.next();
                    if let Some(idx) = self.evict(program, victim) {
                        evicted += 1;
                        self.insert(program, k, idx, ctx);
                        inserted += 1;
                    }
                }
                _ => break,
            }
        }
        self.ticks.push(Tick {
            at_ps: ctx.now_ps,
            cache_hits: hits,
            overflows,
            overflow_ratio: ratio,
            inserted,
            evicted,
            capacity: self.capacity as u32,
        });
        if let Some(p) = self.cfg.period_ps {
            ctx.set_control_timer(ctx.now_ps + p, TOKEN_TICK);
        }
    }

    fn check_fetches(&mut self, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ps;
        // In key order: the map's own order differs per instance and per process, and the order
        // of the re-sent fetches decides the order of events (tests/determinism.rs).
        let mut due: Vec<u64> = self.pending.iter().filter(|(_, &(_, d))| d <= now).map(|(&k, _)| k).collect();
        due.sort_unstable();
        for k in due {
            let (tries, _) = self.pending[&k];
            if tries >= self.cfg.fetch_tries {
                self.pending.remove(&k);
                self.stats.fetch_failures += 1;
                continue;
            }
            self.stats.fetch_retries += 1;
            self.send_fetch(k, ctx);
            let deadline = now + self.cfg.fetch_timeout_ps;
            self.pending.insert(k, (tries + 1, deadline));
            ctx.set_control_timer(deadline, TOKEN_FETCH_CHECK);
        }
    }
}

impl ControlPlane<OrbitSwitch> for OrbitControl {
    fn timer(&mut self, program: &mut OrbitSwitch, token: u64, ctx: &mut Ctx<'_>) {
        match token {
            TOKEN_PRELOAD => {
                self.preload(program, ctx);
                if let Some(p) = self.cfg.period_ps {
                    ctx.set_control_timer(ctx.now_ps + p, TOKEN_TICK);
                }
            }
            TOKEN_TICK => self.tick(program, ctx),
            TOKEN_FETCH_CHECK => self.check_fetches(ctx),
            _ => {}
        }
    }

    fn packet_in(&mut self, _program: &mut OrbitSwitch, pkt: &mut Packet, _ctx: &mut Ctx<'_>) -> Verdict {
        let (_, _, _, dst_port) = kv::endpoints(pkt);
        if dst_port == CONTROLLER_PORT && !kv::is_kv(pkt) {
            if let Some(r) = pkt.payload_bytes.as_deref().and_then(|b| TopKReport::parse(b).ok()) {
                self.stats.reports += 1;
                for (k, c) in r.entries {
                    let e = self.reports.entry(k).or_insert(0);
                    *e = (*e).max(c);
                }
            }
            return Verdict::Consume;
        }
        if let (Some(h), Some(key)) = (kv::header(pkt), kv::key(pkt, self.addressing.key_len)) {
            if h.op == Op::FetchReply {
                if let Some(id) = keys::key_id(key) {
                    if self.pending.remove(&id).is_some() {
                        self.stats.fetch_replies += 1;
                    }
                }
            }
        }
        Verdict::Consume
    }
}
