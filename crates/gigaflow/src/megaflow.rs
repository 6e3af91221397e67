//! The Megaflow cache, Gigaflow's baseline: one wildcard table holding whole traversals (the
//! slow path's Megaflow and the traversal's composed actions), searched by tuple-space search
//! like OVS's dpcls. On a miss the slow path's Megaflow is inserted; on a hit the cached
//! rewrites and outputs are replayed. Eviction: none (the artifact's behaviour: a full cache
//! stops accepting), LRU, or an idle timeout swept by [`MegaflowCache::expire`].

use crate::actions::{apply_ops, traversal_ops, CachedOp};
use innet_ofswitch::fields::{Field, Flow};
use innet_ofswitch::slowpath::{Pipeline, Trace};
use innet_ofswitch::tss::TssTable;
use std::time::Instant;

/// The artifact's Megaflow size ("MF 32K" is a 1-table cache of 32000 entries).
pub const DEFAULT_MEGAFLOW_ENTRIES: usize = 32_000;

/// What to do when the cache is full, and when entries go unused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// Never evict: a full cache refuses new entries (the artifact).
    None,
    /// Evict the least recently used entry to make room.
    Lru,
    /// Refuse when full; [`MegaflowCache::expire`] removes entries idle for `idle_ns`.
    IdleTimeout { idle_ns: u64 },
}

impl Eviction {
    /// Parses `none`, `lru` or `idle:<ms>`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Eviction::None),
            "lru" => Ok(Eviction::Lru),
            _ => match s.strip_prefix("idle:").map(|ms| ms.parse::<u64>()) {
                Some(Ok(ms)) => Ok(Eviction::IdleTimeout { idle_ns: ms * 1_000_000 }),
                _ => Err(format!("eviction policy `{s}`: expected `none`, `lru` or `idle:<milliseconds>`")),
            },
        }
    }
}

/// Counters; `hits + misses == packets` always.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub packets: u64,
    pub hits: u64,
    pub misses: u64,
    pub inserted: u64,
    /// Misses whose entry could not be installed (cache full, no eviction).
    pub rejected_full: u64,
    /// Misses whose entry would exceed the distinct-mask limit.
    pub rejected_masks: u64,
    pub evicted_lru: u64,
    pub expired_idle: u64,
}

/// One cached traversal.
pub struct MegaflowEntry {
    pub ops: Vec<CachedOp>,
    /// The packet whose upcall built the entry (revalidation re-translates it).
    pub packet: Flow,
}

/// The result of revalidating every entry against a (changed) pipeline.
#[derive(Clone, Copy, Debug, Default)]
pub struct Revalidation {
    pub checked: usize,
    pub removed: usize,
    /// vSwitch table lookups re-run to check the entries (the machine-independent work).
    pub lookups: u64,
    pub elapsed_ns: u64,
}

/// Mask a Megaflow cache entry matches under: the slow path's Megaflow plus what OVS's datapath
/// key always distinguishes (the ethertype and whether a VLAN header is present).
pub fn megaflow_cache_mask(trace: &Trace) -> Flow {
    let mut m = trace.megaflow_mask;
    m.or(Field::DlType, u64::MAX);
    m.or(Field::VlanTci, 0x1000);
    m
}

/// A single-table wildcard cache of whole traversals.
pub struct MegaflowCache {
    pub table: TssTable<MegaflowEntry>,
    pub eviction: Eviction,
    pub stats: CacheStats,
    /// Distinct-mask limit (the artifact's `gigaflow-max-masks`, which also bounds its
    /// Megaflow configuration, a 1-table Gigaflow); `usize::MAX`: none.
    pub max_masks: usize,
}

impl MegaflowCache {
    pub fn new(capacity: usize, eviction: Eviction) -> Self {
        MegaflowCache { table: TssTable::new(capacity), eviction, stats: CacheStats::default(), max_masks: usize::MAX }
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Looks `packet` up; on a hit applies the entry's actions to `flow_out` (set to the packet
    /// first) and pushes its outputs into `outputs` (cleared first). Counts the packet.
    #[inline]
    pub fn lookup(&mut self, packet: &Flow, now_ns: u64, flow_out: &mut Flow, outputs: &mut Vec<(u32, Flow)>) -> bool {
        self.stats.packets += 1;
        outputs.clear();
        match self.table.lookup(0, packet, Some(now_ns)) {
            Some(id) => {
                self.stats.hits += 1;
                *flow_out = *packet;
                apply_ops(&self.table.get(id).payload.ops, flow_out, outputs);
                true
            }
            None => {
                self.stats.misses += 1;
                false
            }
        }
    }

    /// Installs the Megaflow of `trace` (after a miss). Returns whether an entry was added.
    pub fn install(&mut self, trace: &Trace, now_ns: u64) -> bool {
        let mask = megaflow_cache_mask(trace);
        if self.table.find_exact(0, &mask, 0, &trace.initial_flow.masked(&mask)).is_some() {
            return false;
        }
        if !self.table.has_mask(&mask) && self.table.n_masks().saturating_add(1) >= self.max_masks {
            self.stats.rejected_masks += 1;
            return false;
        }
        if self.table.is_full() {
            match self.eviction {
                Eviction::Lru => {
                    if let Some(v) = self.table.lru_victim() {
                        self.table.remove(v);
                        self.stats.evicted_lru += 1;
                    }
                }
                Eviction::None | Eviction::IdleTimeout { .. } => {
                    self.stats.rejected_full += 1;
                    return false;
                }
            }
        }
        let entry = MegaflowEntry { ops: traversal_ops(trace), packet: trace.initial_flow };
        self.table.insert(0, &mask, 0, &trace.initial_flow, entry, now_ns);
        self.stats.inserted += 1;
        true
    }

    /// Removes entries idle longer than the idle timeout (no-op for other policies).
    pub fn expire(&mut self, now_ns: u64) -> usize {
        match self.eviction {
            Eviction::IdleTimeout { idle_ns } => {
                let n = self.table.expire_idle(now_ns, idle_ns);
                self.stats.expired_idle += n as u64;
                n
            }
            _ => 0,
        }
    }

    /// Re-translates every entry's packet through `pipeline` (as OVS's revalidator does) and
    /// removes entries whose mask or actions changed.
    pub fn revalidate(&mut self, pipeline: &Pipeline) -> Revalidation {
        let t0 = Instant::now();
        let mut r = Revalidation::default();
        for id in self.table.ids() {
            r.checked += 1;
            let same = {
                let slot = self.table.get(id);
                let trace = pipeline.trace(&slot.payload.packet);
                r.lookups += trace.visits.len() as u64;
                megaflow_cache_mask(&trace) == *self.table.mask_of(id) && traversal_ops(&trace) == slot.payload.ops
            };
            if !same {
                self.table.remove(id);
                r.removed += 1;
            }
        }
        r.elapsed_ns = t0.elapsed().as_nanos() as u64;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_ofswitch::fields::{ETH_TYPE_IP, IPPROTO_TCP};

    const ROUTER: &str = include_str!("../../ofswitch/pipelines/l3_router.flows");

    fn pkt(dst: u32, port: u64) -> Flow {
        let mut f = Flow::default();
        f.set(Field::InPort, 1);
        f.set(Field::DlType, ETH_TYPE_IP);
        f.set(Field::NwProto, IPPROTO_TCP);
        f.set(Field::NwDst, dst as u64);
        f.set(Field::TpDst, port);
        f
    }

    #[test]
    fn miss_install_hit_gives_slow_path_result() {
        let p = Pipeline::parse(ROUTER).unwrap();
        let mut c = MegaflowCache::new(16, Eviction::None);
        let (mut out, mut outs) = (Flow::default(), Vec::new());
        let a = pkt(0x0a01_0203, 80);
        assert!(!c.lookup(&a, 0, &mut out, &mut outs));
        let t = p.trace(&a);
        assert!(c.install(&t, 0));
        // Another packet of the same Megaflow (different nw_src, not examined).
        let mut b = a;
        b.set(Field::NwSrc, 0x0102_0304);
        assert!(c.lookup(&b, 1, &mut out, &mut outs));
        let tb = p.trace(&b);
        assert_eq!(out, tb.final_flow);
        assert_eq!(outs, tb.outputs.iter().map(|o| (o.port, o.headers)).collect::<Vec<_>>());
        assert_eq!(c.stats.hits + c.stats.misses, c.stats.packets);
    }

    #[test]
    fn capacity_policies() {
        let p = Pipeline::parse(ROUTER).unwrap();
        let dsts = [0x0a01_0203u32, 0x0a01_0210, 0x0a02_0000, 0xac10_0001];
        for ev in [Eviction::None, Eviction::Lru] {
            let mut c = MegaflowCache::new(2, ev);
            for (i, d) in dsts.iter().enumerate() {
                c.install(&p.trace(&pkt(*d, 80)), i as u64);
                assert!(c.len() <= 2);
            }
            let (mut out, mut outs) = (Flow::default(), Vec::new());
            let newest = c.lookup(&pkt(dsts[3], 80), 10, &mut out, &mut outs);
            assert_eq!(newest, ev == Eviction::Lru, "{ev:?}");
        }
        let mut c = MegaflowCache::new(8, Eviction::parse("idle:1").unwrap());
        c.install(&p.trace(&pkt(dsts[0], 80)), 0);
        c.install(&p.trace(&pkt(dsts[2], 80)), 900_000);
        assert_eq!(c.expire(1_500_000), 1);
        assert_eq!(c.len(), 1);
        assert!(Eviction::parse("idle:x").is_err());
    }

    #[test]
    fn revalidation_removes_stale_entries() {
        let p = Pipeline::parse(ROUTER).unwrap();
        let mut c = MegaflowCache::new(16, Eviction::None);
        c.install(&p.trace(&pkt(0x0a01_0203, 80)), 0);
        c.install(&p.trace(&pkt(0xac10_0001, 443)), 0);
        assert_eq!(c.revalidate(&p).removed, 0);
        let changed = Pipeline::parse(&ROUTER.replace("tp_dst=80,actions=output:2", "tp_dst=80,actions=output:4")).unwrap();
        let r = c.revalidate(&changed);
        assert_eq!((r.checked, r.removed), (2, 1));
    }
}
