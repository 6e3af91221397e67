//! The SmartNIC in front of the vSwitch: a cache (Megaflow or Gigaflow LTM tables) whose hit
//! costs a fixed pipeline latency plus one lookup per table. A NIC miss goes to the vSwitch's
//! own datapath Megaflow cache (OVS's dpcls, as in the artifact, where a Gigaflow miss "goes to
//! the Megaflow lookup"), and only a miss there is upcalled to our slow path, which traverses
//! the pipeline, partitions the traversal and generates the entries (the three parts of the
//! paper's Fig. 13) for both caches. [`Offload`] runs a packet stream through it and keeps the
//! modelled latency (deterministic) and the wall-clock time the slow path took on this machine,
//! per part.
//!
//! A packet of a pipeline with `ct(table=N)` makes one datapath pass per recirculation, each a
//! lookup of its own (OVS installs one Megaflow per pass, matching recirc_id and the conntrack
//! fields the pass read): the NIC runs conntrack between passes ([`Conntrack`]) and looks the
//! packet up again, and a pass the NIC misses is upcalled on its own, as OVS upcalls each pass.

use innet_ofswitch::conntrack::Conntrack;
use innet_ofswitch::fields::{Field, Flow};
use crate::ltm::{GigaflowCache, GigaflowConfig};
use crate::megaflow::{CacheStats, Eviction, MegaflowCache};
use innet_ofswitch::slowpath::{LookupWildcards, Pipeline};
use std::time::Instant;

/// Latency parameters of the NIC and the upcall path. Defaults: the paper's measured hit
/// latency of both offloads (8.62 µs, §6.3.6) split into a fixed part and 4 table lookups; a NIC
/// miss's trip through the host datapath is OVS/DPDK's host latency minus the NIC's
/// (12.61 − 8.62 ≈ 4 µs); an upcall adds the slow path's own cost, calibrated per part from
/// `innet bench gigaflow` on this machine.
#[derive(Clone, Copy, Debug)]
pub struct NicModel {
    pub base_latency_ns: u64,
    pub per_table_lookup_ns: u64,
    /// A NIC miss handled by the host datapath (its Megaflow cache hit, or the way to an upcall).
    pub host_ns: u64,
    /// Entries of the host datapath's Megaflow cache (no eviction); 0 (the default, the paper's
    /// design: "when a packet misses the LTM cache, it is sent to the vSwitch ... userspace
    /// forwarding pipeline"): no host cache, every NIC miss is upcalled. The artifact, built on
    /// OVS, has one ([`HOST_FLOW_LIMIT`]); docs/gigaflow.md measures both.
    pub host_cache_entries: usize,
    pub slowpath: SlowPathCost,
}

/// Modelled slow-path cost of one miss, by part (ns of this machine; see docs/results/gigaflow.md).
#[derive(Clone, Copy, Debug)]
pub struct SlowPathCost {
    /// Per vSwitch table lookup of the traversal (actions, recording, one classifier call).
    pub per_lookup_ns: u64,
    /// Per classifier subtable searched (tuple-space search dominates on ClassBench tables).
    pub per_subtable_ns: u64,
    /// Per cell of the partitioning dynamic program.
    pub per_dp_cell_ns: u64,
    /// Per LTM/Megaflow entry generated (composition of masks and actions, install).
    pub per_entry_ns: u64,
}

impl Default for NicModel {
    fn default() -> Self {
        NicModel { base_latency_ns: 8_500, per_table_lookup_ns: 30, host_ns: 4_000, host_cache_entries: 0, slowpath: SlowPathCost::default() }
    }
}

impl Default for SlowPathCost {
    fn default() -> Self {
        // Calibrated with `innet bench gigaflow` (docs/results/gigaflow.md, "Gigaflow caches"): the
        // first calibration (unloaded box) gave 150 ns per lookup, 50 ns per subtable, 10 ns per
        // DP cell, 5 µs per entry; the gf-speed changes (classifier probe, tuple pruning in the
        // cache tables) cut the per-subtable cost to ~1/4 and the per-entry cost to ~1/2 (new/old
        // ratios of bench runs interleaved at equal load and of callgrind instruction counts),
        // so those two are scaled; lookups and DP cells are unchanged code.
        SlowPathCost { per_lookup_ns: 150, per_subtable_ns: 12, per_dp_cell_ns: 10, per_entry_ns: 2500 }
    }
}

impl NicModel {
    /// Latency of a packet that hits a cache of `tables` tables.
    pub fn hit_ns(&self, tables: usize) -> u64 {
        self.base_latency_ns + self.per_table_lookup_ns * tables as u64
    }
    /// Modelled slow-path time of one miss.
    pub fn slowpath_ns(&self, lookups: usize, subtables: u64, dp_cells: usize, entries: usize) -> u64 {
        let c = &self.slowpath;
        c.per_lookup_ns * lookups as u64 + c.per_subtable_ns * subtables + c.per_dp_cell_ns * dp_cells as u64 + c.per_entry_ns * entries as u64
    }
}

/// Which cache sits in the NIC (one per run, so the size difference does not matter).
#[allow(clippy::large_enum_variant)]
pub enum NicCache {
    Megaflow(MegaflowCache),
    Gigaflow(GigaflowCache),
}

/// Wall-clock slow-path time on this machine, by part (Fig. 13).
#[derive(Clone, Copy, Debug, Default)]
pub struct SlowPathClock {
    pub traversal_ns: u64,
    pub partition_ns: u64,
    pub rulegen_ns: u64,
}

/// Totals of a run. Counted per datapath pass (as the artifact's counters count recirculated
/// packets): `packets` = arrivals + recirculations.
#[derive(Clone, Copy, Debug, Default)]
pub struct OffloadStats {
    pub packets: u64,
    /// Packets that arrived (without recirculations).
    pub arrivals: u64,
    /// Arrivals every pass of which the NIC handled.
    pub arrivals_hit: u64,
    /// Packets the NIC cache handled.
    pub hits: u64,
    /// Packets the NIC cache missed: `host_hits + upcalls`.
    pub misses: u64,
    /// NIC misses the host datapath's Megaflow cache handled.
    pub host_hits: u64,
    /// NIC misses that also missed the host cache and ran the slow path (the artifact's
    /// `upcall_ok_cnt`, the paper's "cache misses").
    pub upcalls: u64,
    /// Modelled latency summed over packets.
    pub latency_ns_sum: u64,
    /// Modelled slow-path time summed over upcalls.
    pub slowpath_model_ns_sum: u64,
    pub clock: SlowPathClock,
    /// Lookups of the traversals upcalled.
    pub upcall_lookups: u64,
    /// Classifier subtables those lookups searched.
    pub upcall_subtables: u64,
}

/// The NIC cache plus the vSwitch behind it.
pub struct Offload<'a> {
    pub pipeline: &'a Pipeline,
    pub cache: NicCache,
    /// The host datapath's Megaflow cache behind the NIC; `None`: every NIC miss is upcalled.
    pub host: Option<MegaflowCache>,
    pub nic: NicModel,
    pub stats: OffloadStats,
    /// Idle-timeout sweep period (the revalidator's); `None`: never sweep.
    pub sweep_every_ns: Option<u64>,
    /// The connection state recirculated passes resume with.
    pub conntrack: Conntrack,
    last_sweep_ns: u64,
    flow_out: Flow,
    outputs: Vec<(u32, Flow)>,
}

/// OVS's default datapath flow limit (`other_config:flow-limit`), the host cache's size in the
/// artifact's setting. The artifact's `max-idle` of 600 s outlasts its 300-s runs, so host
/// entries never expire here either.
pub const HOST_FLOW_LIMIT: usize = 200_000;

impl<'a> Offload<'a> {
    pub fn megaflow(pipeline: &'a Pipeline, entries: usize, eviction: Eviction, nic: NicModel) -> Self {
        Self::megaflow_with_masks(pipeline, entries, eviction, usize::MAX, nic)
    }

    /// A Megaflow cache that also refuses entries beyond `max_masks` distinct masks.
    pub fn megaflow_with_masks(pipeline: &'a Pipeline, entries: usize, eviction: Eviction, max_masks: usize, nic: NicModel) -> Self {
        let sweep = match eviction {
            Eviction::IdleTimeout { .. } => Some(500_000_000),
            _ => None,
        };
        let mut c = MegaflowCache::new(entries, eviction);
        c.max_masks = max_masks;
        Self::with(pipeline, NicCache::Megaflow(c), nic, sweep)
    }

    pub fn gigaflow(pipeline: &'a Pipeline, cfg: GigaflowConfig, nic: NicModel) -> Result<Self, String> {
        let sweep = cfg.idle_timeout_ns.map(|_| 500_000_000);
        Ok(Self::with(pipeline, NicCache::Gigaflow(GigaflowCache::new(cfg)?), nic, sweep))
    }

    fn with(pipeline: &'a Pipeline, cache: NicCache, nic: NicModel, sweep_every_ns: Option<u64>) -> Self {
        let host = (nic.host_cache_entries > 0).then(|| MegaflowCache::new(nic.host_cache_entries, Eviction::None));
        Offload { pipeline, cache, host, nic, stats: OffloadStats::default(), sweep_every_ns, conntrack: Conntrack::default(), last_sweep_ns: 0, flow_out: Flow::default(), outputs: Vec::with_capacity(8) }
    }


    /// Number of NIC tables a packet walks.
    pub fn tables(&self) -> usize {
        match &self.cache {
            NicCache::Megaflow(_) => 1,
            NicCache::Gigaflow(g) => g.tables.len(),
        }
    }

    pub fn entries(&self) -> usize {
        match &self.cache {
            NicCache::Megaflow(m) => m.len(),
            NicCache::Gigaflow(g) => g.len(),
        }
    }

    pub fn capacity(&self) -> usize {
        match &self.cache {
            NicCache::Megaflow(m) => m.table.capacity,
            NicCache::Gigaflow(g) => g.tables.iter().map(|t| t.capacity).sum(),
        }
    }

    /// Megaflow-equivalents the cache covers (Table 2): a Megaflow entry covers one; Gigaflow:
    /// the artifact's estimate over unique mappings ([`crate::coverage`]).
    pub fn rule_space(&self) -> f64 {
        self.coverage().estimate
    }

    /// Rule-space coverage, feasible chains and the tag-only upper bound.
    pub fn coverage(&self) -> crate::coverage::Coverage {
        match &self.cache {
            NicCache::Megaflow(m) => {
                let n = m.len() as f64;
                crate::coverage::Coverage { estimate: n, mapping_sum: n, mapping_sum_by_fields: n, feasible: n, chains_tag_only: n }
            }
            NicCache::Gigaflow(g) => crate::coverage::gigaflow_coverage(g, self.stats.upcalls),
        }
    }

    pub fn cache_stats(&self) -> CacheStats {
        match &self.cache {
            NicCache::Megaflow(m) => m.stats,
            NicCache::Gigaflow(g) => g.stats.cache,
        }
    }

    /// Processes one packet arriving at `now_ns`, every datapath pass of it; returns whether
    /// the NIC handled all of them.
    pub fn process(&mut self, packet: &Flow, now_ns: u64) -> bool {
        if let Some(every) = self.sweep_every_ns {
            if now_ns >= self.last_sweep_ns + every {
                self.last_sweep_ns = now_ns;
                match &mut self.cache {
                    NicCache::Megaflow(m) => m.expire(now_ns),
                    NicCache::Gigaflow(g) => g.expire(now_ns),
                };
            }
        }
        self.stats.arrivals += 1;
        let mut flow = *packet;
        let mut all_hit = true;
        for _ in 0..innet_ofswitch::slowpath::MAX_PASSES {
            all_hit &= self.pass(&flow, now_ns);
            let id = self.flow_out.get(Field::RecircId);
            if id == 0 || id == flow.get(Field::RecircId) {
                break;
            }
            let zone = self.pipeline.recirc_zone(id as u32).unwrap_or(0);
            let state = self.conntrack.state(&self.flow_out, zone);
            match self.pipeline.thaw(&self.flow_out, state) {
                Some(next) => flow = next,
                None => break,
            }
        }
        self.stats.arrivals_hit += all_hit as u64;
        all_hit
    }

    /// One datapath pass: a NIC lookup, else the host cache, else an upcall. Leaves the flow
    /// after the pass in `flow_out` (its recirc_id names the next pass, if any).
    fn pass(&mut self, packet: &Flow, now_ns: u64) -> bool {
        let k = self.tables();
        self.stats.packets += 1;
        let hit = match &mut self.cache {
            NicCache::Megaflow(m) => m.lookup(packet, now_ns, &mut self.flow_out, &mut self.outputs),
            NicCache::Gigaflow(g) => g.lookup(packet, now_ns, &mut self.flow_out, &mut self.outputs),
        };
        let nic_ns = self.nic.hit_ns(k);
        if hit {
            self.stats.hits += 1;
            self.stats.latency_ns_sum += nic_ns;
            return true;
        }
        self.stats.misses += 1;
        if let Some(h) = &mut self.host {
            if h.lookup(packet, now_ns, &mut self.flow_out, &mut self.outputs) {
                self.stats.host_hits += 1;
                self.stats.latency_ns_sum += nic_ns + self.nic.host_ns;
                return false;
            }
        }
        self.stats.upcalls += 1;
        let t0 = Instant::now();
        let lookup_wildcards = match &self.cache {
            NicCache::Gigaflow(g) => g.cfg.lookup_wildcards,
            NicCache::Megaflow(_) => LookupWildcards::Traversal,
        };
        let trace = self.pipeline.trace_with(packet, lookup_wildcards);
        let traversal_ns = t0.elapsed().as_nanos() as u64;
        self.flow_out = trace.final_flow;
        let lookups = trace.visits.len();
        if let Some(h) = &mut self.host {
            h.install(&trace, now_ns);
        }
        let (partition_ns, rulegen_ns, cells, entries) = match &mut self.cache {
            NicCache::Megaflow(m) => {
                let t1 = Instant::now();
                let added = m.install(&trace, now_ns);
                (0, t1.elapsed().as_nanos() as u64, 0, added as usize)
            }
            NicCache::Gigaflow(g) => {
                let c = g.install(&trace, now_ns);
                (c.partition_ns, c.rulegen_ns, c.dp_cells, c.entries_built)
            }
        };
        self.stats.clock.traversal_ns += traversal_ns;
        self.stats.clock.partition_ns += partition_ns;
        self.stats.clock.rulegen_ns += rulegen_ns;
        self.stats.upcall_lookups += lookups as u64;
        self.stats.upcall_subtables += trace.subtables_probed;
        let sp = self.nic.slowpath_ns(lookups, trace.subtables_probed, cells, entries);
        self.stats.slowpath_model_ns_sum += sp;
        self.stats.latency_ns_sum += nic_ns + self.nic.host_ns + sp;
        false
    }

    /// Mean modelled per-packet latency (µs): per arrival, every pass included.
    pub fn mean_latency_us(&self) -> f64 {
        self.stats.latency_ns_sum as f64 / self.stats.arrivals.max(1) as f64 / 1e3
    }

    /// Mean modelled slow-path time per upcall (µs).
    pub fn slowpath_us_per_miss(&self) -> f64 {
        self.stats.slowpath_model_ns_sum as f64 / self.stats.upcalls.max(1) as f64 / 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_ofswitch::fields::{Field, ETH_TYPE_IP, IPPROTO_TCP};

    /// The example router pipeline and a TCP packet it forwards.
    fn router_and_packet() -> (Pipeline, Flow) {
        let p = Pipeline::parse(include_str!("../../ofswitch/pipelines/l3_router.flows")).unwrap();
        let mut f = Flow::default();
        f.set(Field::InPort, 1);
        f.set(Field::DlType, ETH_TYPE_IP);
        f.set(Field::NwProto, IPPROTO_TCP);
        f.set(Field::NwDst, 0x0a01_0203);
        f.set(Field::TpDst, 80);
        (p, f)
    }

    #[test]
    fn hits_cost_the_nic_and_misses_add_the_upcall() {
        let (p, f) = router_and_packet();
        let nic = NicModel::default();
        let mut o = Offload::gigaflow(&p, GigaflowConfig::default(), nic).unwrap();
        assert!(!o.process(&f, 0));
        let miss_ns = o.stats.latency_ns_sum;
        assert!(o.process(&f, 1));
        let hit_ns = o.stats.latency_ns_sum - miss_ns;
        assert_eq!(hit_ns, nic.hit_ns(4));
        assert!(miss_ns > hit_ns + nic.host_ns);
        assert_eq!(o.stats.hits + o.stats.misses, o.stats.packets);
        assert_eq!((o.stats.upcalls, o.stats.host_hits), (1, 0));
        assert_eq!(o.cache_stats().packets, 2);
        let mut m = Offload::megaflow(&p, 32_000, Eviction::None, nic);
        m.process(&f, 0);
        assert!(m.process(&f, 1));
        assert_eq!(m.rule_space(), 1.0);
    }

    /// A NIC cache that refuses the entry (full) leaves the flow to the host datapath cache:
    /// its next packet costs the host path but no upcall; without a host cache it upcalls again.
    #[test]
    fn nic_misses_hit_the_host_megaflow_before_any_upcall() {
        let (p, f) = router_and_packet();
        let nic = NicModel::default();
        let host = NicModel { host_cache_entries: HOST_FLOW_LIMIT, ..nic };
        let mut o = Offload::megaflow(&p, 0, Eviction::None, host);
        for t in 0..3 {
            assert!(!o.process(&f, t));
        }
        assert_eq!((o.stats.misses, o.stats.host_hits, o.stats.upcalls), (3, 2, 1));
        let upcall_ns = o.stats.latency_ns_sum - 2 * (nic.hit_ns(1) + nic.host_ns);
        assert!(upcall_ns > nic.hit_ns(1) + nic.host_ns, "an upcall also pays the slow path");
        let mut bare = Offload::megaflow(&p, 0, Eviction::None, nic);
        for t in 0..3 {
            assert!(!bare.process(&f, t));
        }
        assert_eq!((bare.stats.host_hits, bare.stats.upcalls), (0, 3));
    }
}
