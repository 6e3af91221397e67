//! `innet bench gigaflow`: what the slow path costs per miss on this machine (traversal,
//! partitioning and rule generation, the paper's Fig. 13 split) and how many lookups per second
//! the Megaflow and Gigaflow caches do, on a given pipeline or on the shipped examples plus a
//! large random pipeline.

use innet_ofswitch::fields::Flow;
use crate::ltm::{GigaflowCache, GigaflowConfig};
use crate::megaflow::{Eviction, MegaflowCache};
use crate::nic::{NicModel, Offload};
use innet_ofswitch::packetgen::random_packets;
use innet_ofswitch::slowpath::Pipeline;
use serde_json::{json, Value};
use std::time::Instant;

/// Benchmark inputs.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// `(name, flow-file text)`; empty: the shipped examples and a 30-table random pipeline.
    pub pipelines: Vec<(String, String)>,
    /// Packets per pipeline (distinct headers drawn near the rules).
    pub packets: usize,
    /// Optional traffic: packets to use instead of random ones (same for every pipeline).
    pub traffic: Option<Vec<Flow>>,
    pub seed: u64,
}

/// The shipped example pipelines plus a long chain (30 tables × 40 rules, 30 lookups per packet).
pub fn default_pipelines() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = [
        ("l3_router", include_str!("../../ofswitch/pipelines/l3_router.flows")),
        ("acl_regs", include_str!("../../ofswitch/pipelines/acl_regs.flows")),
        ("l2_rewrite", include_str!("../../ofswitch/pipelines/l2_rewrite.flows")),
    ]
    .iter()
    .map(|(n, t)| (n.to_string(), t.to_string()))
    .collect();
    v.push(("chain_30x40".into(), innet_ofswitch::packetgen::chain_pipeline(7, 30, 40)));
    v
}

fn per(total_ns: u64, n: u64) -> f64 {
    total_ns as f64 / n.max(1) as f64
}

/// Runs the benchmark; one JSON object per pipeline.
pub fn bench_gigaflow(opts: &BenchOptions) -> Result<Vec<Value>, String> {
    let pipelines = if opts.pipelines.is_empty() { default_pipelines() } else { opts.pipelines.clone() };
    let mut out = Vec::new();
    for (name, text) in &pipelines {
        let p = Pipeline::parse(text).map_err(|e| format!("{name}: {e}"))?;
        let packets = match &opts.traffic {
            Some(t) => t.clone(),
            None => random_packets(&p, opts.packets, 8, opts.seed),
        };
        if packets.is_empty() {
            return Err(format!("{name}: no packets to run"));
        }
        // Slow path per miss, in a Gigaflow offload (every miss traversed, partitioned, installed).
        let nic = NicModel::default();
        let big = GigaflowConfig { entries_per_table: 1 << 20, max_masks: 1 << 20, count_coverage: false, ..Default::default() };
        let mut gf = Offload::gigaflow(&p, big, nic)?;
        for (i, pk) in packets.iter().enumerate() {
            gf.process(pk, i as u64);
        }
        let s = gf.stats;
        let (cells, built) = {
            // Re-run partitioning and generation to count DP cells and entries per miss.
            let mut g = GigaflowCache::new(big)?;
            let (mut c, mut b, mut m) = (0u64, 0u64, 0u64);
            let (mut fo, mut outs) = (Flow::default(), Vec::new());
            for pk in &packets {
                if !g.lookup(pk, 0, &mut fo, &mut outs) {
                    let cost = g.install(&p.trace(pk), 0);
                    c += cost.dp_cells as u64;
                    b += cost.entries_built as u64;
                    m += 1;
                }
            }
            (c as f64 / m.max(1) as f64, b as f64 / m.max(1) as f64)
        };
        let mut mf = Offload::megaflow(&p, 1 << 20, Eviction::None, nic);
        for (i, pk) in packets.iter().enumerate() {
            mf.process(pk, i as u64);
        }
        let ms = mf.stats;
        // Lookup throughput on the warmed caches (hits and misses as the traffic gives them).
        let rounds = (2_000_000 / packets.len()).max(1);
        // Lookup rates on the paper's sizes: MF 32K, GF 4x8K with the artifact's 64-mask limit.
        let mf_rate = lookups_per_s_mf(&packets, &p, rounds);
        let gf_rate = lookups_per_s_gf(&packets, &p, rounds, GigaflowConfig { count_coverage: false, ..GigaflowConfig::default() })?;
        let traversal = per(s.clock.traversal_ns, s.misses);
        let partition = per(s.clock.partition_ns, s.misses);
        let rulegen = per(s.clock.rulegen_ns, s.misses);
        out.push(json!({
            "pipeline": name,
            "rules": p.rules.len(),
            "packets": packets.len(),
            "gf_misses": s.misses,
            "mf_misses": ms.misses,
            "mean_lookups_per_traversal": s.upcall_lookups as f64 / s.misses.max(1) as f64,
            "subtables_per_miss": s.upcall_subtables as f64 / s.misses.max(1) as f64,
            "model_slowpath_us_per_miss": s.slowpath_model_ns_sum as f64 / s.misses.max(1) as f64 / 1e3,
            "dp_cells_per_miss": cells,
            "entries_per_miss": built,
            "traversal_us_per_miss": traversal / 1e3,
            "partition_us_per_miss": partition / 1e3,
            "rulegen_us_per_miss": rulegen / 1e3,
            "gf_slowpath_us_per_miss": (traversal + partition + rulegen) / 1e3,
            "mf_slowpath_us_per_miss": per(ms.clock.traversal_ns + ms.clock.rulegen_ns, ms.misses) / 1e3,
            "calibrated_per_lookup_ns": per(s.clock.traversal_ns, s.upcall_lookups),
            "calibrated_per_subtable_ns": per(s.clock.traversal_ns, s.upcall_subtables),
            "calibrated_per_dp_cell_ns": partition / cells.max(1.0),
            "calibrated_per_entry_ns": rulegen / built.max(1.0),
            "mf_lookups_per_s": mf_rate.0,
            "mf_hit_fraction": mf_rate.1,
            "gf_lookups_per_s": gf_rate.0,
            "gf_hit_fraction": gf_rate.1,
            "mf_subtables": mf_rate.2,
            "gf_subtables": gf_rate.2,
            "gf_entries": gf.entries(),
            "mf_entries": mf.entries(),
        }));
    }
    Ok(out)
}

fn lookups_per_s_mf(packets: &[Flow], p: &Pipeline, rounds: usize) -> (f64, f64, usize) {
    let mut c = MegaflowCache::new(crate::megaflow::DEFAULT_MEGAFLOW_ENTRIES, Eviction::None);
    let (mut fo, mut outs) = (Flow::default(), Vec::new());
    for pk in packets {
        if !c.lookup(pk, 0, &mut fo, &mut outs) {
            c.install(&p.trace(pk), 0);
        }
    }
    let before = c.stats;
    let t = Instant::now();
    for r in 0..rounds {
        for pk in packets {
            std::hint::black_box(c.lookup(pk, r as u64, &mut fo, &mut outs));
        }
        if t.elapsed().as_secs_f64() > 1.0 {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let n = (c.stats.packets - before.packets) as f64;
    (n / secs, (c.stats.hits - before.hits) as f64 / n, c.table.n_subtables())
}

fn lookups_per_s_gf(packets: &[Flow], p: &Pipeline, rounds: usize, cfg: GigaflowConfig) -> Result<(f64, f64, usize), String> {
    let mut c = GigaflowCache::new(cfg)?;
    let (mut fo, mut outs) = (Flow::default(), Vec::new());
    for pk in packets {
        if !c.lookup(pk, 0, &mut fo, &mut outs) {
            c.install(&p.trace(pk), 0);
        }
    }
    let before = c.stats.cache;
    let t = Instant::now();
    for r in 0..rounds {
        for pk in packets {
            std::hint::black_box(c.lookup(pk, r as u64, &mut fo, &mut outs));
        }
        if t.elapsed().as_secs_f64() > 1.0 {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let n = (c.stats.cache.packets - before.packets) as f64;
    Ok((n / secs, (c.stats.cache.hits - before.hits) as f64 / n, c.tables.iter().map(|t| t.n_subtables()).sum()))
}
