//! Gigaflow's experiments: `gigaflow.e2e` (Figs. 8–12: hit rate, misses, entries, sub-traversal
//! reoccurrence, latency; Megaflow 32K vs Gigaflow 4×8K on the Pipebench pipelines at high and low locality),
//! `gigaflow.partitioning` (Fig. 16: RND vs DP vs 1-1) and `gigaflow.tables` (Figs. 14–15:
//! K = 1..5 LTM tables of 100K entries). Every run replays Pipebench traffic through a NIC cache
//! in front of our slow path ([`crate::nic::Offload`]).

use crate::ltm::GigaflowConfig;
use crate::megaflow::Eviction;
use crate::nic::{NicModel, Offload};
use crate::partition::Scheme;
use crate::pipebench::{self, Locality, Profile, Ruleset, Timing, Traffic, TrafficConfig};
use crate::slowpath::Pipeline;
use innet_registry::{resolve_params, ColumnData, Experiment, ExperimentError, ExperimentInfo, ParamSpec, Progress, RunOutput, Table};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Which cache a run uses.
#[derive(Clone, Debug)]
pub enum CacheSpec {
    Megaflow { entries: usize, eviction: Eviction, max_masks: usize },
    Gigaflow(GigaflowConfig),
}

/// What one (pipeline, locality, cache) run measured.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub packets: u64,
    pub hits: u64,
    /// Upcalls to the slow path (the paper's "cache misses"): every NIC miss by default, those
    /// the host datapath's Megaflow cache missed too when it has one (`host_entries`).
    pub misses: u64,
    /// Packets the NIC missed (`packets - hits`) and those of them the host cache handled.
    pub nic_misses: u64,
    pub host_hits: u64,
    pub entries: usize,
    pub capacity: usize,
    pub rule_space: f64,
    /// Gigaflow entry chains linked by tags alone (an upper bound of `rule_space`).
    pub rule_space_tag_only: f64,
    pub mean_latency_us: f64,
    pub slowpath_us_per_miss: f64,
    pub recycled: u64,
    pub rejected: u64,
    /// Upcalls per installed entry (Fig. 11; see `GigaflowStats::reoccurrence`): overall and per
    /// LTM table. A Megaflow is never produced twice (the packet would have hit it): 1, no tables.
    pub reoccurrence: f64,
    pub reoccurrence_per_table: Vec<f64>,
    /// Wall-clock slow-path split on this machine (µs per miss): traversal, partition, rulegen.
    pub clock_us: [f64; 3],
}

impl RunResult {
    pub fn hit_rate(&self) -> f64 {
        self.hits as f64 / self.packets.max(1) as f64
    }
}

/// A fresh NIC cache of shape `cache` in front of `pipeline`.
pub fn offload<'a>(
    pipeline: &'a Pipeline,
    cache: &CacheSpec,
    nic: NicModel,
) -> Result<Offload<'a>, String> {
    Ok(match cache {
        CacheSpec::Megaflow {
            entries,
            eviction,
            max_masks,
        } => Offload::megaflow_with_masks(pipeline, *entries, *eviction, *max_masks, nic),
        CacheSpec::Gigaflow(cfg) => Offload::gigaflow(pipeline, *cfg, nic)?,
    })
}

/// Replays `traffic` through `cache` in front of `pipeline`.
pub fn run_cache(
    pipeline: &Pipeline,
    traffic: &Traffic,
    cache: &CacheSpec,
    nic: NicModel,
) -> Result<RunResult, String> {
    let mut o = offload(pipeline, cache, nic)?;
    for (t, pkt) in traffic.iter() {
        o.process(pkt, t);
    }
    result_of(&o)
}

/// What a replayed offload measured, after checking its counters.
pub fn result_of(o: &Offload<'_>) -> Result<RunResult, String> {
    let s = o.stats;
    let cs = o.cache_stats();
    if s.hits + s.misses != s.packets || s.host_hits + s.upcalls != s.misses || cs.hits != s.hits || cs.packets != s.packets {
        return Err(format!(
            "counters not conserved: {} hits + {} NIC misses ({} host hits + {} upcalls) != {} packets",
            s.hits, s.misses, s.host_hits, s.upcalls, s.packets
        ));
    }
    if o.entries() > o.capacity() {
        return Err(format!(
            "cache holds {} entries, capacity {}",
            o.entries(),
            o.capacity()
        ));
    }
    let (recycled, rejected, (reoccurrence_per_table, reoccurrence)) = match &o.cache {
        crate::nic::NicCache::Megaflow(m) => (0, m.stats.rejected_full + m.stats.rejected_masks, (Vec::new(), 1.0)),
        crate::nic::NicCache::Gigaflow(g) => (
            g.stats.entries_recycled,
            g.stats.rejected_full + g.stats.rejected_masks,
            g.stats.reoccurrence(),
        ),
    };
    let m = s.upcalls.max(1) as f64 * 1e3;
    let cov = o.coverage();
    Ok(RunResult {
        packets: s.packets,
        hits: s.hits,
        misses: s.upcalls,
        nic_misses: s.misses,
        host_hits: s.host_hits,
        entries: o.entries(),
        capacity: o.capacity(),
        rule_space: cov.feasible,
        rule_space_tag_only: cov.chains_tag_only,
        mean_latency_us: o.mean_latency_us(),
        slowpath_us_per_miss: o.slowpath_us_per_miss(),
        recycled,
        rejected,
        reoccurrence,
        reoccurrence_per_table,
        clock_us: [
            s.clock.traversal_ns as f64 / m,
            s.clock.partition_ns as f64 / m,
            s.clock.rulegen_ns as f64 / m,
        ],
    })
}

fn r6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn result_json(r: &RunResult) -> Value {
    json!({
        "hit_rate": r6(r.hit_rate()),
        "misses": r.misses,
        "entries": r.entries,
        "capacity": r.capacity,
        "rule_space_coverage": r6(r.rule_space),
        "rule_space_chains_tag_only": r6(r.rule_space_tag_only),
        "mean_latency_us": r6(r.mean_latency_us),
        "slowpath_us_per_miss": r6(r.slowpath_us_per_miss),
        "packets": r.packets,
        "hits": r.hits,
        "nic_misses": r.nic_misses,
        "host_hits": r.host_hits,
        "recycled_entries": r.recycled,
        "rejected_installs": r.rejected,
        "sub_traversal_reoccurrence": r6(r.reoccurrence),
        "sub_traversal_reoccurrence_per_table": r.reoccurrence_per_table.iter().map(|&x| r6(x)).collect::<Vec<_>>(),
    })
}

fn split_list(field: &str, s: &str) -> Result<Vec<String>, ExperimentError> {
    let v: Vec<String> = s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
    if v.is_empty() {
        return Err(ExperimentError::BadParam { field: field.into(), message: "expected a comma-separated, non-empty list".into() });
    }
    Ok(v)
}

fn bad(field: &str) -> impl Fn(String) -> ExperimentError + '_ {
    move |m| ExperimentError::BadParam { field: field.into(), message: m }
}

/// Inputs shared by the experiments.
#[derive(Deserialize)]
struct Common {
    rules: usize,
    flows: usize,
    profile: String,
    seed: u64,
    flow_size_shape: f64,
    timing: String,
    host_entries: usize,
    align: bool,
    fresh_source_ports: bool,
    sampled_headers: bool,
}

impl Common {
    /// Puts the seed and the inputs' settings into a summary, so a summary says which traffic
    /// and cache behaviour produced it.
    fn describe(&self, summary: &mut Map<String, Value>) {
        summary.insert("seed".into(), json!(self.seed));
        summary.insert(
            "settings".into(),
            json!({
                "profile": self.profile,
                "timing": self.timing,
                "flow_size_shape": self.flow_size_shape,
                "fresh_source_ports": self.fresh_source_ports,
                "sampled_headers": self.sampled_headers,
                "align": self.align,
                "host_entries": self.host_entries,
            }),
        );
    }

    /// The Gigaflow defaults with this run's seed and install alignment.
    fn gf(&self) -> GigaflowConfig {
        GigaflowConfig { seed: self.seed, align: self.align, ..GigaflowConfig::default() }
    }

    fn nic(&self) -> NicModel {
        NicModel { host_cache_entries: self.host_entries, ..NicModel::default() }
    }

    fn traffic(&self, locality: Locality, seed: u64) -> Result<TrafficConfig, String> {
        Ok(TrafficConfig {
            n_flows: self.flows,
            locality,
            seed,
            pareto_shape: self.flow_size_shape,
            timing: Timing::parse(&self.timing)?,
            fresh_source_ports: self.fresh_source_ports,
            sampled_headers: self.sampled_headers,
            ..TrafficConfig::default()
        })
    }
}

fn inputs(name: &str, loc: Locality, c: &Common) -> Result<(Ruleset, Pipeline, Traffic), String> {
    let profile = Profile::parse(&c.profile)?;
    let rs = pipebench::render_pipeline(name, profile, c.rules, c.seed)?;
    let p = Pipeline::parse(&rs.text).map_err(|e| format!("{name}: generated flow file: {e}"))?;
    let t = pipebench::generate_traffic(&rs, &c.traffic(loc, c.seed)?)?;
    Ok((rs, p, t))
}

fn loc_name(l: Locality) -> &'static str {
    match l {
        Locality::High => "high",
        Locality::Low => "low",
    }
}

fn common_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec { name: "rules", default: "10000", doc: "ClassBench rules mapped into each pipeline (paper: 10K)" },
        ParamSpec { name: "flows", default: "100000", doc: "unique flows of the traffic (paper: 100K)" },
        ParamSpec { name: "profile", default: "\"acl\"", doc: "ClassBench profile: acl, fw or ipc" },
        ParamSpec { name: "seed", default: "1", doc: "seed of rules and traffic" },
        ParamSpec { name: "flow_size_shape", default: "1.2", doc: "Pareto shape of packets per flow (1.2: mean ~5 packets; smaller: heavier tail, more packets per flow)" },
        ParamSpec { name: "host_entries", default: "0", doc: "entries of a host datapath Megaflow cache behind the NIC (no eviction; the artifact's OVS has one of 200000): a NIC miss it hits is no upcall; 0 (the paper's design): every NIC miss is upcalled" },
        ParamSpec { name: "fresh_source_ports", default: "false", doc: "high locality: every flow takes a fresh ephemeral source port (many connections per host pair and service) instead of its chain's anchor port" },
        ParamSpec { name: "sampled_headers", default: "false", doc: "high locality: every flow samples its headers inside its rules (only the rule choice is local) instead of copying its chains' anchor packets" },
        ParamSpec { name: "align", default: "true", doc: "Gigaflow installs continue from the LTM entries already capturing the packet (false: partition the whole traversal, as the artifact)" },
        ParamSpec { name: "timing", default: "\"window\"", doc: "window: a replayed trace slice (every flow spread over the run, flows numbered by first packet, as the artifact's tgen); arrivals: Poisson flow starts, log-normal gaps" },
    ]
}

/// A row of the points table.
struct Row {
    pipeline: String,
    locality: &'static str,
    scheme: String,
    r: RunResult,
}

fn points_table(rows: &[Row]) -> Table {
    let f = |g: fn(&RunResult) -> f64| f64s(rows, move |x| r6(g(&x.r)));
    Table::new("points")
        .with("pipeline", strs(rows, |x| x.pipeline.clone()))
        .with("locality", strs(rows, |x| x.locality.to_string()))
        .with("scheme", strs(rows, |x| x.scheme.clone()))
        .with("packets", u64s(rows, |x| x.r.packets))
        .with("hit_rate", f(|r| r.hit_rate()))
        .with("misses", u64s(rows, |x| x.r.misses))
        .with("entries", u64s(rows, |x| x.r.entries as u64))
        .with("rule_space_coverage", f(|r| r.rule_space))
        .with("mean_latency_us", f(|r| r.mean_latency_us))
        .with("slowpath_us_per_miss", f(|r| r.slowpath_us_per_miss))
        .with("sub_traversal_reoccurrence", f(|r| r.reoccurrence))
        .with("clock_traversal_us_per_miss", f(|r| r.clock_us[0]))
        .with("clock_partition_us_per_miss", f(|r| r.clock_us[1]))
        .with("clock_rulegen_us_per_miss", f(|r| r.clock_us[2]))
}

/// A table column of one value per row.
fn f64s<T>(rows: &[T], f: impl Fn(&T) -> f64) -> ColumnData {
    ColumnData::F64(rows.iter().map(f).collect())
}
fn u64s<T>(rows: &[T], f: impl Fn(&T) -> u64) -> ColumnData {
    ColumnData::U64(rows.iter().map(f).collect())
}
fn strs<T>(rows: &[T], f: impl Fn(&T) -> String) -> ColumnData {
    ColumnData::Str(rows.iter().map(f).collect())
}

/// Inserts `value` at summary[pipelines][pipeline][locality][scheme].
fn put(tree: &mut Map<String, Value>, pipeline: &str, locality: &str, scheme: &str, value: Value) {
    let p = tree.entry(pipeline.to_string()).or_insert_with(|| json!({}));
    let l = p.as_object_mut().unwrap().entry(locality.to_string()).or_insert_with(|| json!({}));
    l.as_object_mut().unwrap().insert(scheme.to_string(), value);
}

/// The `localities` parameter: a list of `high` and `low`.
fn localities(list: &str) -> Result<Vec<Locality>, ExperimentError> {
    split_list("localities", list)?.iter().map(|l| Locality::parse(l)).collect::<Result<Vec<_>, _>>().map_err(bad("localities"))
}

/// Runs every named cache on the traffic of every (pipeline, locality): the results by
/// pipeline → locality → cache name, and one points-table row per run.
fn sweep(pipes: &[String], locs: &[Locality], common: &Common, caches: &[(String, CacheSpec)], progress: Progress<'_>) -> Result<(Map<String, Value>, Vec<Row>), ExperimentError> {
    let nic = common.nic();
    let mut tree = Map::new();
    let mut rows = Vec::new();
    let total = (pipes.len() * locs.len() * caches.len()) as f64;
    for name in pipes {
        for &loc in locs {
            let (_, pl, traffic) = inputs(name, loc, common).map_err(ExperimentError::Input)?;
            for (cache, spec) in caches {
                let r = run_cache(&pl, &traffic, spec, nic).map_err(ExperimentError::Invariant)?;
                put(&mut tree, name, loc_name(loc), cache, result_json(&r));
                rows.push(Row { pipeline: name.clone(), locality: loc_name(loc), scheme: cache.clone(), r });
                progress(rows.len() as f64 / total);
            }
        }
    }
    Ok((tree, rows))
}

// ---------------------------------------------------------------- gigaflow.e2e

struct E2e;

#[derive(Deserialize)]
struct E2eParams {
    #[serde(flatten)]
    common: Common,
    pipelines: String,
    localities: String,
    mf_entries: usize,
    gf_tables: usize,
    gf_entries: usize,
    max_masks: usize,
    partitioning: String,
    eviction: String,
}

impl Experiment for E2e {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec { name: "pipelines", default: "\"OFD,PSC,OLS,ANT,OTL\"", doc: "Pipebench pipelines (Table 1)" },
            ParamSpec { name: "localities", default: "\"high,low\"", doc: "traffic locality: high, low" },
            ParamSpec { name: "mf_entries", default: "32000", doc: "Megaflow cache entries (MF 32K)" },
            ParamSpec { name: "gf_tables", default: "4", doc: "Gigaflow LTM tables (K)" },
            ParamSpec { name: "gf_entries", default: "8000", doc: "entries per LTM table" },
            ParamSpec { name: "max_masks", default: "0", doc: "distinct-mask limit per table for both caches (artifact: 64); 0 = none" },
            ParamSpec { name: "partitioning", default: "\"dp\"", doc: "dp, rnd or 1-1" },
            ParamSpec { name: "eviction", default: "\"none\"", doc: "Megaflow eviction: none, lru or idle:<ms>" },
        ]);
        ExperimentInfo { name: "gigaflow.e2e", description: "Gigaflow 4x8K vs Megaflow 32K: hit rate, misses, entries, sub-traversal reoccurrence, rule-space coverage and latency on the Pipebench pipelines at high/low locality (Figs. 8-12, Table 2)", params }
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        // --quick keeps the paper's pressure (100K flows on 32K entries) at 3K flows: 960 / 4x240.
        let p: E2eParams = resolve_params(&self.info(), &[("rules", "1000"), ("flows", "3000"), ("pipelines", "\"OFD,PSC\""), ("mf_entries", "960"), ("gf_entries", "240")], quick, overrides)?;
        let pipes = split_list("pipelines", &p.pipelines)?;
        let locs = localities(&p.localities)?;
        let scheme = Scheme::parse(&p.partitioning).map_err(bad("partitioning"))?;
        let eviction = Eviction::parse(&p.eviction).map_err(bad("eviction"))?;
        // 0: no mask limit. The artifact's limit bounds both caches (its MF is a 1-table Gigaflow).
        let masks = if p.max_masks == 0 { usize::MAX } else { p.max_masks };
        let gf = GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, max_masks: masks, scheme, ..p.common.gf() };
        let schemes = [("mf".to_string(), CacheSpec::Megaflow { entries: p.mf_entries, eviction, max_masks: masks }), ("gf".to_string(), CacheSpec::Gigaflow(gf))];
        let (tree, rows) = sweep(&pipes, &locs, &p.common, &schemes, progress)?;
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.e2e"));
        p.common.describe(&mut summary);
        summary.insert("rules".into(), json!(p.common.rules));
        summary.insert("flows".into(), json!(p.common.flows));
        summary.insert("mf".into(), json!(format!("1x{}", p.mf_entries)));
        summary.insert("gf".into(), json!(format!("{}x{} ({})", p.gf_tables, p.gf_entries, scheme.name())));
        summary.insert("pipelines".into(), Value::Object(tree));
        if let Some(h) = headline(&rows, "high") {
            summary.insert("high_locality".into(), h);
        }
        Ok(RunOutput { summary, tables: vec![points_table(&rows)] })
    }
}

/// The paper's headline numbers (abstract, §6.2.1) over the pipelines run at `locality`: GF's
/// hit-rate gain over MF relative to MF's (%, "up to 51 %, 25 % on average"), GF's miss
/// reduction (%, "up to 90 %, 64 % on average") and GF / MF rule-space coverage ("up to 450×"),
/// each as max and mean; `None` when that locality was not run.
fn headline(rows: &[Row], locality: &str) -> Option<Value> {
    let find = |p: &str, s: &str| rows.iter().find(|r| r.pipeline == p && r.locality == locality && r.scheme == s).map(|r| &r.r);
    let mut per: Vec<(f64, f64, f64)> = Vec::new();
    for r in rows.iter().filter(|r| r.locality == locality && r.scheme == "mf") {
        let (Some(mf), Some(gf)) = (find(&r.pipeline, "mf"), find(&r.pipeline, "gf")) else { continue };
        let gain = 100.0 * (gf.hit_rate() - mf.hit_rate()) / mf.hit_rate().max(1e-9);
        let fewer = 100.0 * (1.0 - gf.misses as f64 / mf.misses.max(1) as f64);
        per.push((gain, fewer, gf.rule_space / mf.rule_space.max(1.0)));
    }
    if per.is_empty() {
        return None;
    }
    let n = per.len() as f64;
    let max = |f: fn(&(f64, f64, f64)) -> f64| r6(per.iter().map(f).fold(f64::NEG_INFINITY, f64::max));
    let mean = |f: fn(&(f64, f64, f64)) -> f64| r6(per.iter().map(f).sum::<f64>() / n);
    Some(json!({
        "hit_rate_gain_pct_max": max(|x| x.0),
        "hit_rate_gain_pct_mean": mean(|x| x.0),
        "miss_reduction_pct_max": max(|x| x.1),
        "miss_reduction_pct_mean": mean(|x| x.1),
        "coverage_ratio_max": max(|x| x.2),
    }))
}

// ---------------------------------------------------------------- gigaflow.partitioning

struct Partitioning;

#[derive(Deserialize)]
struct PartParams {
    #[serde(flatten)]
    common: Common,
    pipeline: String,
    locality: String,
    gf_tables: usize,
    gf_entries: usize,
    mf_entries: usize,
}

impl Experiment for Partitioning {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec { name: "pipeline", default: "\"OLS\"", doc: "Pipebench pipeline (paper: OLS)" },
            ParamSpec { name: "locality", default: "\"high\"", doc: "high or low" },
            ParamSpec { name: "gf_tables", default: "4", doc: "LTM tables for RND and DP" },
            ParamSpec { name: "gf_entries", default: "8000", doc: "entries per LTM table" },
            ParamSpec { name: "mf_entries", default: "32000", doc: "Megaflow baseline entries" },
        ]);
        ExperimentInfo { name: "gigaflow.partitioning", description: "Partitioning schemes (Fig. 16): random (RND), disjoint (DP) and the ideal 1-1 mapping (one LTM table per traversal step), misses and entries vs Megaflow", params }
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: PartParams = resolve_params(&self.info(), &[("rules", "1000"), ("flows", "3000"), ("pipeline", "\"PSC\""), ("mf_entries", "960"), ("gf_entries", "240")], quick, overrides)?;
        let loc = Locality::parse(&p.locality).map_err(bad("locality"))?;
        let (rs, pl, traffic) = inputs(&p.pipeline, loc, &p.common).map_err(ExperimentError::Input)?;
        // The ideal 1-1 mapping needs as many LTM tables as the longest traversal has lookups.
        let longest = rs.spec.traversals().map_err(ExperimentError::Input)?.iter().map(|t| t.len()).max().unwrap_or(1);
        let one_to_one_tables = longest.clamp(1, crate::ltm::MAX_LTM_TABLES);
        let base = GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, ..p.common.gf() };
        let runs: Vec<(&str, CacheSpec)> = vec![
            ("mf", CacheSpec::Megaflow { entries: p.mf_entries, eviction: Eviction::None, max_masks: usize::MAX }),
            ("rnd", CacheSpec::Gigaflow(GigaflowConfig { scheme: Scheme::Random, ..base })),
            ("dp", CacheSpec::Gigaflow(GigaflowConfig { scheme: Scheme::Disjoint, ..base })),
            ("1-1", CacheSpec::Gigaflow(GigaflowConfig { scheme: Scheme::OneToOne, tables: one_to_one_tables, ..base })),
        ];
        let nic = p.common.nic();
        let mut schemes = Map::new();
        let mut rows = Vec::new();
        let mut mf_misses = 0u64;
        for (i, (name, spec)) in runs.iter().enumerate() {
            let r = run_cache(&pl, &traffic, spec, nic).map_err(ExperimentError::Invariant)?;
            if *name == "mf" {
                mf_misses = r.misses;
            }
            let mut v = result_json(&r);
            v.as_object_mut().unwrap().insert("miss_reduction_vs_mf".into(), json!(r6(1.0 - r.misses as f64 / mf_misses.max(1) as f64)));
            v.as_object_mut().unwrap().insert("cache_used".into(), json!(r6(r.entries as f64 / r.capacity.max(1) as f64)));
            schemes.insert(name.to_string(), v);
            rows.push(Row { pipeline: p.pipeline.clone(), locality: loc_name(loc), scheme: name.to_string(), r });
            progress((i + 1) as f64 / runs.len() as f64);
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.partitioning"));
        p.common.describe(&mut summary);
        summary.insert("pipeline".into(), json!(p.pipeline));
        summary.insert("locality".into(), json!(loc_name(loc)));
        summary.insert("one_to_one_tables".into(), json!(one_to_one_tables));
        summary.insert("schemes".into(), Value::Object(schemes));
        Ok(RunOutput { summary, tables: vec![points_table(&rows)] })
    }
}

// ---------------------------------------------------------------- gigaflow.tables

struct Tables;

#[derive(Deserialize)]
struct TablesParams {
    #[serde(flatten)]
    common: Common,
    pipelines: String,
    localities: String,
    ks: String,
    entries: usize,
}

impl Experiment for Tables {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec { name: "pipelines", default: "\"OFD,PSC,OLS,ANT,OTL\"", doc: "Pipebench pipelines" },
            ParamSpec { name: "localities", default: "\"high,low\"", doc: "high, low" },
            ParamSpec { name: "ks", default: "\"1,2,3,4,5\"", doc: "numbers of LTM tables (K=1 is Megaflow-like)" },
            ParamSpec { name: "entries", default: "100000", doc: "entries per LTM table (paper: 100K)" },
        ]);
        ExperimentInfo { name: "gigaflow.tables", description: "Misses and entries as the number of LTM tables grows, K=1..5 at 100K entries per table (Figs. 14-15)", params }
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: TablesParams = resolve_params(&self.info(), &[("rules", "1000"), ("flows", "3000"), ("pipelines", "\"PSC\""), ("ks", "\"1,2,4\""), ("entries", "3000")], quick, overrides)?;
        let pipes = split_list("pipelines", &p.pipelines)?;
        let locs = localities(&p.localities)?;
        let ks = split_list("ks", &p.ks)?
            .iter()
            .map(|k| k.parse::<usize>().ok().filter(|&k| (1..=crate::ltm::MAX_LTM_TABLES).contains(&k)).ok_or_else(|| format!("'{k}' is not a table count in 1..=32")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad("ks"))?;
        let caches: Vec<(String, CacheSpec)> = ks.iter().map(|&k| (format!("k{k}"), CacheSpec::Gigaflow(GigaflowConfig { tables: k, entries_per_table: p.entries, ..p.common.gf() }))).collect();
        let (tree, rows) = sweep(&pipes, &locs, &p.common, &caches, progress)?;
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.tables"));
        p.common.describe(&mut summary);
        summary.insert("entries_per_table".into(), json!(p.entries));
        summary.insert("pipelines".into(), Value::Object(tree));
        Ok(RunOutput { summary, tables: vec![points_table(&rows)] })
    }
}

// ---------------------------------------------------------------- gigaflow.revalidation

struct Revalidation;

#[derive(Deserialize)]
struct RevalParams {
    #[serde(flatten)]
    common: Common,
    pipeline: String,
    locality: String,
    update_every: usize,
}

/// The flow file with every `every`-th rule line removed (a pipeline update).
fn drop_rules(text: &str, every: usize) -> String {
    let mut n = 0;
    text.lines()
        .filter(|l| {
            let rule = !l.trim().is_empty() && !l.trim_start().starts_with('#') && !l.contains("priority=0,");
            if rule {
                n += 1;
                n % every != 0
            } else {
                true
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

impl Experiment for Revalidation {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec { name: "pipeline", default: "\"OLS\"", doc: "Pipebench pipeline (paper: OLS)" },
            ParamSpec { name: "locality", default: "\"high\"", doc: "high or low" },
            ParamSpec { name: "update_every", default: "100", doc: "the update removes every n-th rule of the pipeline" },
        ]);
        ExperimentInfo { name: "gigaflow.revalidation", description: "Revalidation after a pipeline update (paper §6.3.6): wall time to re-check every cached entry, MF 32K vs GF 4x8K", params }
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: RevalParams = resolve_params(&self.info(), &[("rules", "1000"), ("flows", "3000"), ("pipeline", "\"PSC\"")], quick, overrides)?;
        if p.update_every < 2 {
            return Err(ExperimentError::BadParam { field: "update_every".into(), message: "expected at least 2".into() });
        }
        let loc = Locality::parse(&p.locality).map_err(bad("locality"))?;
        let (rs, pl, traffic) = inputs(&p.pipeline, loc, &p.common).map_err(ExperimentError::Input)?;
        let updated = Pipeline::parse(&drop_rules(&rs.text, p.update_every)).map_err(|e| ExperimentError::Input(format!("updated pipeline: {e}")))?;
        let nic = p.common.nic();
        let mut mf = Offload::megaflow(&pl, crate::megaflow::DEFAULT_MEGAFLOW_ENTRIES, Eviction::None, nic);
        let mut gf = Offload::gigaflow(&pl, GigaflowConfig { ..p.common.gf() }, nic).map_err(ExperimentError::Input)?;
        for (t, pkt) in traffic.iter() {
            mf.process(pkt, t);
            gf.process(pkt, t);
        }
        progress(0.5);
        let mut schemes = Map::new();
        let mut rows = Vec::new();
        for (name, o) in [("mf", &mut mf), ("gf", &mut gf)] {
            let before = o.entries();
            let r = match &mut o.cache {
                crate::nic::NicCache::Megaflow(m) => m.revalidate(&updated),
                crate::nic::NicCache::Gigaflow(g) => g.revalidate(&updated),
            };
            schemes.insert(name.to_string(), json!({ "entries": before, "checked": r.checked, "removed": r.removed, "lookups_rerun": r.lookups }));
            rows.push((name, before, r));
        }
        // The paper's claim (GF revalidates ~2× faster: sub-traversals are shorter) as the work
        // ratio, which does not depend on the machine.
        let work = rows[1].2.lookups as f64 / rows[0].2.lookups.max(1) as f64;
        progress(1.0);
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.revalidation"));
        p.common.describe(&mut summary);
        summary.insert("pipeline".into(), json!(p.pipeline));
        summary.insert("locality".into(), json!(loc_name(loc)));
        summary.insert("removed_rules_every".into(), json!(p.update_every));
        summary.insert("schemes".into(), Value::Object(schemes));
        summary.insert("gf_over_mf_lookups_rerun".into(), json!(r6(work)));
        // Wall-clock times depend on the machine: in the table, not the summary.
        let t = Table::new("revalidation")
            .with("scheme", strs(&rows, |r| r.0.to_string()))
            .with("entries", u64s(&rows, |r| r.1 as u64))
            .with("removed", u64s(&rows, |r| r.2.removed as u64))
            .with("revalidation_ms", f64s(&rows, |r| r.2.elapsed_ns as f64 / 1e6));
        Ok(RunOutput { summary, tables: vec![t] })
    }
}

// ---------------------------------------------------------------- gigaflow.coverage

struct CoverageExp;

#[derive(Deserialize)]
struct CoverageParams {
    #[serde(flatten)]
    common: Common,
    pipelines: String,
    locality: String,
    mf_entries: usize,
    gf_tables: usize,
    gf_entries: usize,
}

impl Experiment for CoverageExp {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec {
                name: "pipelines",
                default: "\"OFD,PSC,OLS,ANT,OTL\"",
                doc: "Pipebench pipelines (Table 2)",
            },
            ParamSpec {
                name: "locality",
                default: "\"high\"",
                doc: "traffic locality (Table 2: high)",
            },
            ParamSpec {
                name: "mf_entries",
                default: "32000",
                doc: "Megaflow cache entries (MF 32K)",
            },
            ParamSpec {
                name: "gf_tables",
                default: "4",
                doc: "Gigaflow LTM tables (K)",
            },
            ParamSpec {
                name: "gf_entries",
                default: "8000",
                doc: "entries per LTM table",
            },
        ]);
        ExperimentInfo { name: "gigaflow.coverage", description: "Rule-space coverage (Table 2): Megaflow-equivalents covered by MF 32K vs GF 4x8K after the traffic, per pipeline", params }
    }

    fn run(
        &self,
        overrides: &BTreeMap<String, String>,
        quick: bool,
        progress: Progress<'_>,
    ) -> Result<RunOutput, ExperimentError> {
        let p: CoverageParams = resolve_params(
            &self.info(),
            &[
                ("rules", "1000"),
                ("flows", "3000"),
                ("pipelines", "\"PSC,OFD\""),
                ("mf_entries", "960"),
                ("gf_entries", "240"),
            ],
            quick,
            overrides,
        )?;
        let pipes = split_list("pipelines", &p.pipelines)?;
        let loc = Locality::parse(&p.locality).map_err(bad("locality"))?;
        let gf = GigaflowConfig {
            tables: p.gf_tables,
            entries_per_table: p.gf_entries,
            ..p.common.gf()
        };
        let nic = p.common.nic();
        let mut tree = Map::new();
        let mut rows: Vec<(String, f64, f64, f64, u64, u64)> = Vec::new();
        for (i, name) in pipes.iter().enumerate() {
            let (_, pl, traffic) = inputs(name, loc, &p.common).map_err(ExperimentError::Input)?;
            let mf = run_cache(
                &pl,
                &traffic,
                &CacheSpec::Megaflow {
                    entries: p.mf_entries,
                    eviction: Eviction::None,
                    max_masks: usize::MAX,
                },
                nic,
            )
            .map_err(ExperimentError::Invariant)?;
            let g = run_cache(&pl, &traffic, &CacheSpec::Gigaflow(gf), nic)
                .map_err(ExperimentError::Invariant)?;
            let ratio = g.rule_space / mf.rule_space.max(1.0);
            let v = json!({
                "mf_coverage": r6(mf.rule_space),
                "gf_coverage": r6(g.rule_space),
                "gf_chains_tag_only": r6(g.rule_space_tag_only),
                "gf_over_mf": r6(ratio),
                "mf_entries": mf.entries,
                "gf_entries": g.entries,
                "mf_hit_rate": r6(mf.hit_rate()),
                "gf_hit_rate": r6(g.hit_rate()),
            });
            tree.insert(name.clone(), v);
            rows.push((
                name.clone(),
                mf.rule_space,
                g.rule_space,
                g.rule_space_tag_only,
                mf.entries as u64,
                g.entries as u64,
            ));
            progress((i + 1) as f64 / pipes.len() as f64);
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.coverage"));
        p.common.describe(&mut summary);
        summary.insert("locality".into(), json!(loc_name(loc)));
        summary.insert("mf".into(), json!(format!("1x{}", p.mf_entries)));
        summary.insert(
            "gf".into(),
            json!(format!("{}x{}", p.gf_tables, p.gf_entries)),
        );
        summary.insert("definition".into(), json!("Megaflow-equivalents: MF entries; GF entry chains (start tag -> ... -> end, increasing tables) whose adjacent entries a packet can pass after rewrites"));
        summary.insert("pipelines".into(), Value::Object(tree));
        let t = Table::new("coverage")
            .with("pipeline", strs(&rows, |r| r.0.clone()))
            .with("mf_coverage", f64s(&rows, |r| r.1))
            .with("gf_coverage", f64s(&rows, |r| r.2))
            .with("gf_chains_tag_only", f64s(&rows, |r| r.3))
            .with("mf_entries", u64s(&rows, |r| r.4))
            .with("gf_entries", u64s(&rows, |r| r.5));
        Ok(RunOutput {
            summary,
            tables: vec![t],
        })
    }
}

// ---------------------------------------------------------------- gigaflow.dynamic

struct Dynamic;

#[derive(Deserialize)]
struct DynamicParams {
    #[serde(flatten)]
    common: Common,
    pipeline: String,
    locality: String,
    mf_entries: usize,
    gf_tables: usize,
    gf_entries: usize,
    bins: usize,
}

/// Two workloads of `cfg.n_flows` unique flows each, as the paper's Fig. 18 builds them: "100K
/// unique flows divided evenly across two workloads (50K each)", where "the incoming traffic
/// patterns (e.g., arrival times) remain the same, as new traffic flows arrive". One trace of
/// `2 × cfg.n_flows` flows is generated (seed `cfg.seed`, so both workloads draw on the same chains
/// and anchor packets, as halves of one trace do) and a seeded random half of its flows becomes the
/// second workload. With window timing the second is replayed with the first's timing from 5/9 of
/// the run (the paper: introduced at minute 5 of 9) until the first ends, so after the switch both
/// arrive at the same rate and the second's trace is cut where the run ends (its flows with no
/// packet before then are left out); with arrival timing the second starts when the first's last
/// flow has arrived and plays whole.
pub fn two_workloads(rs: &Ruleset, cfg: &TrafficConfig) -> Result<TwoWorkloads, String> {
    use pipebench::traffic::TracePacket;
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let n = cfg.n_flows;
    let whole = pipebench::generate_traffic(rs, &TrafficConfig { n_flows: 2 * n, ..cfg.clone() })?;
    let mut second_of = vec![false; whole.flows.len()];
    second_of[..n.min(whole.flows.len())].fill(true);
    second_of.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x0d1a_5e1f_2b0c_0a7d));
    let a_end_ns = whole.packets.iter().rev().find(|p| !second_of[p.flow as usize]).map_or(0, |p| p.time_ns);
    let a_last_arrival_ns = whole.flows.iter().zip(&second_of).filter(|(_, &b)| !b).map(|(f, _)| f.start_ns).max().unwrap_or(0);
    let b_first_ns = whole.flows.iter().zip(&second_of).filter(|(_, &b)| b).map(|(f, _)| f.start_ns).min().unwrap_or(0);
    // Where a second-workload time lands in the run, if it does.
    let (start_ns, cut_ns) = match cfg.timing {
        Timing::Window { .. } => (a_end_ns / 9 * 5, a_end_ns),
        Timing::Arrivals => (a_last_arrival_ns, u64::MAX),
    };
    let at = |t: u64| start_ns.saturating_add(t.saturating_sub(b_first_ns));
    // Each kept packet with its original flow; the second workload's times mapped.
    let kept: Vec<TracePacket> = whole
        .packets
        .iter()
        .filter_map(|p| match second_of[p.flow as usize] {
            false => Some(*p),
            true => Some(TracePacket { time_ns: at(p.time_ns), flow: p.flow }).filter(|q| q.time_ns <= cut_ns),
        })
        .collect();
    let mut kept_pkts = vec![0u32; whole.flows.len()];
    for p in &kept {
        kept_pkts[p.flow as usize] += 1;
    }
    // New flow numbers: the first workload's flows in trace order, then the second's that play.
    let mut renum = vec![u32::MAX; whole.flows.len()];
    let mut flows = Vec::with_capacity(2 * n);
    for pass in [false, true] {
        for (i, f) in whole.flows.iter().enumerate() {
            if second_of[i] == pass && kept_pkts[i] > 0 {
                renum[i] = flows.len() as u32;
                let mut f = f.clone();
                f.n_packets = kept_pkts[i];
                if pass {
                    f.start_ns = at(f.start_ns);
                }
                flows.push(f);
            }
        }
    }
    let first_flows = whole.flows.len() - n;
    let seen: std::collections::HashSet<crate::fields::Flow> = flows[..first_flows].iter().map(|f| f.headers).collect();
    let shared = flows[first_flows..].iter().filter(|f| seen.contains(&f.headers)).count();
    let mut packets: Vec<TracePacket> = kept.into_iter().map(|p| TracePacket { time_ns: p.time_ns, flow: renum[p.flow as usize] }).collect();
    packets.sort_by_key(|p| (p.time_ns, p.flow));
    Ok(TwoWorkloads { traffic: Traffic { flows, packets }, second_at_ns: start_ns, first_flows, second_seen_before: shared })
}

/// What [`two_workloads`] builds.
pub struct TwoWorkloads {
    /// The merged trace: the first workload's flows are `0..first_flows`, the second's follow.
    pub traffic: Traffic,
    /// When the second workload starts (ns).
    pub second_at_ns: u64,
    pub first_flows: usize,
    /// How many second-workload flows repeat a first-workload flow's headers (0: a trace's flows
    /// are unique).
    pub second_seen_before: usize,
}

impl Experiment for Dynamic {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec {
                name: "pipeline",
                default: "\"PSC\"",
                doc: "Pipebench pipeline (paper: PSC)",
            },
            ParamSpec {
                name: "locality",
                default: "\"high\"",
                doc: "high or low (paper: high)",
            },
            ParamSpec {
                name: "mf_entries",
                default: "32000",
                doc: "Megaflow cache entries (MF 32K)",
            },
            ParamSpec {
                name: "gf_tables",
                default: "4",
                doc: "Gigaflow LTM tables (K)",
            },
            ParamSpec {
                name: "gf_entries",
                default: "8000",
                doc: "entries per LTM table",
            },
            ParamSpec {
                name: "bins",
                default: "36",
                doc: "bins (equal packet counts) of the hit-rate series",
            },
        ]);
        // `flows` is per workload here: the paper's 100K unique flows are two workloads of 50K.
        for p in params.iter_mut() {
            if p.name == "flows" {
                p.default = "50000";
                p.doc = "unique flows of EACH workload (paper: 2 x 50K)";
            }
        }
        ExperimentInfo { name: "gigaflow.dynamic", description: "Dynamically arriving workloads (Fig. 18): a second workload of 50K new flows arrives once the first has arrived; hit rate and misses over time, MF 32K vs GF 4x8K", params }
    }

    fn run(
        &self,
        overrides: &BTreeMap<String, String>,
        quick: bool,
        progress: Progress<'_>,
    ) -> Result<RunOutput, ExperimentError> {
        let p: DynamicParams = resolve_params(
            &self.info(),
            &[
                ("rules", "1000"),
                ("flows", "1500"),
                ("mf_entries", "960"),
                ("gf_entries", "240"),
                ("bins", "12"),
            ],
            quick,
            overrides,
        )?;
        if p.bins < 2 || p.bins > 10_000 {
            return Err(ExperimentError::BadParam {
                field: "bins".into(),
                message: format!("expected 2..=10000, got {}", p.bins),
            });
        }
        let loc = Locality::parse(&p.locality).map_err(bad("locality"))?;
        let profile = Profile::parse(&p.common.profile).map_err(bad("profile"))?;
        let rs = pipebench::render_pipeline(&p.pipeline, profile, p.common.rules, p.common.seed)
            .map_err(ExperimentError::Input)?;
        let pl = Pipeline::parse(&rs.text).map_err(|e| {
            ExperimentError::Input(format!("{}: generated flow file: {e}", p.pipeline))
        })?;
        let cfg = p.common.traffic(loc, p.common.seed).map_err(bad("timing"))?;
        let TwoWorkloads { traffic, second_at_ns: switch_ns, first_flows, second_seen_before: shared } =
            two_workloads(&rs, &cfg).map_err(ExperimentError::Input)?;
        let end_ns = traffic.packets.last().map(|x| x.time_ns).unwrap_or(0);
        // Bins of equal packet counts: the paper replays its trace at a constant packet rate
        // (tgen, ~10 kpps), so its time axis is a packet axis; a bin's trace time is reported too.
        let n = traffic.packets.len();
        let switch_pkt = traffic.packets.partition_point(|x| x.time_ns < switch_ns);
        let per_bin = n.div_ceil(p.bins).max(1);
        let gf = GigaflowConfig {
            tables: p.gf_tables,
            entries_per_table: p.gf_entries,
            ..p.common.gf()
        };
        let runs = [
            (
                "mf",
                CacheSpec::Megaflow {
                    entries: p.mf_entries,
                    eviction: Eviction::None,
                    max_masks: usize::MAX,
                },
            ),
            ("gf", CacheSpec::Gigaflow(gf)),
        ];
        let nic = p.common.nic();
        let mut schemes = Map::new();
        let (
            mut i_col,
            mut t_col,
            mut s_col,
            mut pk_col,
            mut hit_col,
            mut miss_col,
            mut hr_col,
            mut ent_col,
        ) = (
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        );
        for (ri, (name, spec)) in runs.iter().enumerate() {
            let mut o = offload(&pl, spec, nic).map_err(ExperimentError::Input)?;
            // (packets, hits, entries at the end, trace time of the first packet)
            let mut bins = vec![(0u64, 0u64, 0usize, 0u64); n.div_ceil(per_bin)];
            // Before: the second half of the first workload's packets; after: every later packet.
            let (mut before, mut after, mut second) = ((0u64, 0u64), (0u64, 0u64), (0u64, 0u64));
            for (i, (t, pkt)) in traffic.iter().enumerate() {
                let hit = o.process(pkt, t);
                if traffic.packets[i].flow as usize >= first_flows {
                    second.0 += 1;
                    second.1 += hit as u64;
                }
                let b = &mut bins[i / per_bin];
                if b.0 == 0 {
                    b.3 = t;
                }
                b.0 += 1;
                b.1 += hit as u64;
                b.2 = o.entries();
                if i >= switch_pkt {
                    after.0 += 1;
                    after.1 += hit as u64;
                } else if i >= switch_pkt / 2 {
                    before.0 += 1;
                    before.1 += hit as u64;
                }
            }
            let r = result_of(&o).map_err(ExperimentError::Invariant)?;
            for (k, b) in bins.iter().enumerate() {
                i_col.push((k * per_bin) as u64);
                t_col.push(r6(b.3 as f64 / 1e9));
                s_col.push(name.to_string());
                pk_col.push(b.0);
                hit_col.push(b.1);
                miss_col.push(b.0 - b.1);
                hr_col.push(r6(b.1 as f64 / b.0.max(1) as f64));
                ent_col.push(b.2 as u64);
            }
            let frac = |x: (u64, u64)| r6(x.1 as f64 / x.0.max(1) as f64);
            let mut v = result_json(&r);
            let o2 = v.as_object_mut().unwrap();
            o2.insert("hit_rate_before".into(), json!(frac(before)));
            o2.insert("hit_rate_after".into(), json!(frac(after)));
            o2.insert("misses_after".into(), json!(after.0 - after.1));
            o2.insert("second_workload_hit_rate".into(), json!(frac(second)));
            schemes.insert(name.to_string(), v);
            progress((ri + 1) as f64 / runs.len() as f64);
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.dynamic"));
        p.common.describe(&mut summary);
        summary.insert("pipeline".into(), json!(p.pipeline));
        summary.insert("locality".into(), json!(loc_name(loc)));
        summary.insert("flows_per_workload".into(), json!(p.common.flows));
        summary.insert(
            "second_workload_at_s".into(),
            json!(r6(switch_ns as f64 / 1e9)),
        );
        summary.insert("second_workload_at_packet".into(), json!(switch_pkt));
        summary.insert("packets".into(), json!(n));
        summary.insert("end_s".into(), json!(r6(end_ns as f64 / 1e9)));
        summary.insert("second_workload_flows_seen_before".into(), json!(shared));
        summary.insert("second_workload_flows_in_run".into(), json!(traffic.flows.len() - first_flows));
        summary.insert("second_workload_packets".into(), json!(traffic.packets.iter().filter(|x| x.flow as usize >= first_flows).count()));
        summary.insert("schemes".into(), Value::Object(schemes));
        let t = Table::new("series")
            .with("packet", ColumnData::U64(i_col))
            .with("time_s", ColumnData::F64(t_col))
            .with("scheme", ColumnData::Str(s_col))
            .with("packets", ColumnData::U64(pk_col))
            .with("hits", ColumnData::U64(hit_col))
            .with("misses", ColumnData::U64(miss_col))
            .with("hit_rate", ColumnData::F64(hr_col))
            .with("entries", ColumnData::U64(ent_col));
        Ok(RunOutput {
            summary,
            tables: vec![t],
        })
    }
}

// ---------------------------------------------------------------- gigaflow.search

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`), if available.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

struct Search;

#[derive(Deserialize)]
struct SearchParams {
    #[serde(flatten)]
    common: Common,
    pipeline: String,
    locality: String,
    mf_entries: usize,
    gf_tables: usize,
    gf_entries: usize,
    queries: usize,
    max_isets: usize,
    ranges_per_leaf: usize,
}

/// The lookups a cache answers for `traffic`'s packets, per table: (table, tag, headers).
/// Megaflow: one lookup per packet. Gigaflow: the LTM walk (tag 0, then each hit's rewrites
/// and next tag), as the NIC does it.
fn cache_queries(o: &mut Offload<'_>, traffic: &Traffic, limit: usize) -> Vec<(u8, u16, crate::fields::Flow)> {
    let mut q = Vec::with_capacity(limit);
    let mut outs = Vec::new();
    for (_, pkt) in traffic.iter() {
        if q.len() >= limit {
            break;
        }
        match &mut o.cache {
            crate::nic::NicCache::Megaflow(_) => q.push((0, 0, *pkt)),
            crate::nic::NicCache::Gigaflow(g) => {
                let (mut f, mut tag) = (*pkt, crate::ltm::TAG_START);
                for k in 0..g.tables.len() {
                    q.push((k as u8, tag, f));
                    if let Some(id) = g.tables[k].lookup(tag, &f, None) {
                        let e = &g.tables[k].get(id).payload;
                        crate::actions::apply_ops(&e.ops, &mut f, &mut outs);
                        outs.clear();
                        tag = e.next_tag;
                        if tag == crate::ltm::TAG_DONE {
                            break;
                        }
                    }
                }
            }
        }
    }
    q
}

impl Experiment for Search {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec { name: "pipeline", default: "\"PSC\"", doc: "Pipebench pipeline (paper: PSC)" },
            ParamSpec { name: "locality", default: "\"high\"", doc: "high or low (paper: high)" },
            ParamSpec { name: "mf_entries", default: "32000", doc: "Megaflow cache entries (MF 32K)" },
            ParamSpec { name: "gf_tables", default: "4", doc: "Gigaflow LTM tables (K)" },
            ParamSpec { name: "gf_entries", default: "8000", doc: "entries per LTM table" },
            ParamSpec { name: "queries", default: "200000", doc: "packets replayed against the filled caches (per cache)" },
            ParamSpec { name: "max_isets", default: "4", doc: "NuevoMatch iSets (rest: remainder, searched by TSS)" },
            ParamSpec { name: "ranges_per_leaf", default: "16", doc: "NuevoMatch RQ-RMI ranges per leaf model" },
        ]);
        ExperimentInfo { name: "gigaflow.search", description: "Cache search algorithms (Fig. 17): tuple-space search vs NuevoMatch (iSets + RQ-RMI) on the filled MF 32K and GF 4x8K caches: same entry for every lookup, lookups per second", params }
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: SearchParams = resolve_params(&self.info(), &[("rules", "1000"), ("flows", "3000"), ("mf_entries", "960"), ("gf_entries", "240"), ("queries", "20000")], quick, overrides)?;
        if p.queries == 0 || p.max_isets > 16 || p.ranges_per_leaf == 0 {
            return Err(ExperimentError::BadParam { field: "queries/max_isets/ranges_per_leaf".into(), message: "expected queries >= 1, max_isets <= 16, ranges_per_leaf >= 1".into() });
        }
        let loc = Locality::parse(&p.locality).map_err(bad("locality"))?;
        let (_, pl, traffic) = inputs(&p.pipeline, loc, &p.common).map_err(ExperimentError::Input)?;
        let gf = GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, ..p.common.gf() };
        let runs = [("mf", CacheSpec::Megaflow { entries: p.mf_entries, eviction: Eviction::None, max_masks: usize::MAX }), ("gf", CacheSpec::Gigaflow(gf))];
        let nm_cfg = crate::nuevomatch::NuevoMatchConfig { max_isets: p.max_isets, ranges_per_leaf: p.ranges_per_leaf, ..Default::default() };
        let nic = p.common.nic();
        let mut schemes = Map::new();
        let mut rows: Vec<(String, String, u64, f64, f64)> = Vec::new();
        for (ri, (name, spec)) in runs.iter().enumerate() {
            // Fill the cache with the traffic (the e2e replay), then freeze it.
            let mut o = offload(&pl, spec, nic).map_err(ExperimentError::Input)?;
            for (t, pkt) in traffic.iter() {
                o.process(pkt, t);
            }
            let r = result_of(&o).map_err(ExperimentError::Invariant)?;
            let queries = cache_queries(&mut o, &traffic, p.queries);
            // One NuevoMatch per cache table, over the table's entries.
            let n_tables = match &o.cache {
                crate::nic::NicCache::Megaflow(_) => 1,
                crate::nic::NicCache::Gigaflow(g) => g.tables.len(),
            };
            let mut nms: Vec<crate::nuevomatch::NuevoMatch> = (0..n_tables)
                .map(|k| {
                    let rules = match &o.cache {
                        crate::nic::NicCache::Megaflow(m) => crate::nuevomatch::rules_of(&m.table),
                        crate::nic::NicCache::Gigaflow(g) => crate::nuevomatch::rules_of(&g.tables[k]),
                    };
                    crate::nuevomatch::NuevoMatch::build(rules, nm_cfg)
                })
                .collect();
            // The TSS answer of every query, then NuevoMatch's: the same entry, or (when two
            // entries of equal top priority both match) an entry of that priority that matches.
            let tss_lookup = |o: &mut Offload<'_>, k: u8, tag: u16, f: &crate::fields::Flow| -> Option<(u32, u16)> {
                match &mut o.cache {
                    crate::nic::NicCache::Megaflow(m) => m.table.lookup(tag, f, None).map(|id| (id, m.table.get(id).priority)),
                    crate::nic::NicCache::Gigaflow(g) => g.tables[k as usize].lookup(tag, f, None).map(|id| (id, g.tables[k as usize].get(id).priority)),
                }
            };
            let (mut same, mut ties, mut hits) = (0u64, 0u64, 0u64);
            for (k, tag, f) in &queries {
                let a = tss_lookup(&mut o, *k, *tag, f);
                let nm = &mut nms[*k as usize];
                let b = nm.lookup_index(*tag, f).map(|i| (nm.rule(i).id, nm.rule(i).priority, nm.rule(i).matches(*tag, f)));
                match (a, b) {
                    (None, None) => same += 1,
                    (Some((ia, _)), Some((ib, _, _))) if ia == ib => {
                        same += 1;
                        hits += 1;
                    }
                    (Some((_, pa)), Some((_, pb, true))) if pa == pb => {
                        ties += 1;
                        hits += 1;
                    }
                    (a, b) => return Err(ExperimentError::Invariant(format!("{name} table {k} tag {tag}: tuple-space search found {a:?}, NuevoMatch {b:?}"))),
                }
            }
            // Lookups per CPU second of this thread (the box is shared: wall time would count
            // other engineers' jobs): every query, repeated until at least 0.3 s have passed.
            let time = |f: &mut dyn FnMut() -> u64| -> f64 {
                let (c0, t0) = (thread_cpu_ns(), std::time::Instant::now());
                let (mut n, mut sink) = (0u64, 0u64);
                while t0.elapsed().as_secs_f64() < 0.3 {
                    sink = sink.wrapping_add(f());
                    n += queries.len() as u64;
                }
                std::hint::black_box(sink);
                let cpu_s = match (c0, thread_cpu_ns()) {
                    (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
                    _ => t0.elapsed().as_secs_f64(),
                };
                n as f64 / cpu_s
            };
            let tss_rate = time(&mut || queries.iter().map(|(k, tag, f)| tss_lookup(&mut o, *k, *tag, f).map_or(0, |x| x.0 as u64)).sum());
            let nm_rate = time(&mut || queries.iter().map(|(k, tag, f)| nms[*k as usize].lookup(*tag, f).map_or(0, |x| x as u64)).sum());
            let subtables: usize = match &o.cache {
                crate::nic::NicCache::Megaflow(m) => m.table.n_subtables(),
                crate::nic::NicCache::Gigaflow(g) => g.tables.iter().map(|t| t.n_subtables()).sum(),
            };
            let nm_stats: Vec<Value> = nms
                .iter()
                .map(|n| {
                    let s = &n.stats;
                    json!({"rules": s.rules, "isets": s.isets.iter().map(|(f, c)| json!({"field": f, "rules": c})).collect::<Vec<_>>(), "remainder": s.remainder, "leaves": s.leaves, "mean_window": r6(s.mean_window), "max_error": s.max_error})
                })
                .collect();
            let in_isets: usize = nms.iter().map(|n| n.stats.rules - n.stats.remainder).sum();
            let total: usize = nms.iter().map(|n| n.stats.rules).sum();
            let mut v = result_json(&r);
            let o2 = v.as_object_mut().unwrap();
            o2.insert("queries".into(), json!(queries.len()));
            o2.insert("query_hits".into(), json!(hits));
            o2.insert("same_entry".into(), json!(same));
            o2.insert("equal_priority_ties".into(), json!(ties));
            o2.insert("tss_subtables".into(), json!(subtables));
            o2.insert("nm_iset_coverage".into(), json!(r6(in_isets as f64 / total.max(1) as f64)));
            o2.insert("nm_tables".into(), json!(nm_stats));
            o2.insert("tss_lookups_per_s".into(), json!(tss_rate.round()));
            o2.insert("nm_lookups_per_s".into(), json!(nm_rate.round()));
            schemes.insert(name.to_string(), v);
            rows.push((name.to_string(), "tss".into(), queries.len() as u64, tss_rate, r.mean_latency_us));
            rows.push((name.to_string(), "nm".into(), queries.len() as u64, nm_rate, r.mean_latency_us));
            progress((ri + 1) as f64 / runs.len() as f64);
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.search"));
        p.common.describe(&mut summary);
        summary.insert("pipeline".into(), json!(p.pipeline));
        summary.insert("locality".into(), json!(loc_name(loc)));
        summary.insert("schemes".into(), Value::Object(schemes));
        let t = Table::new("search")
            .with("cache", strs(&rows, |r| r.0.clone()))
            .with("classifier", strs(&rows, |r| r.1.clone()))
            .with("queries", u64s(&rows, |r| r.2))
            .with("lookups_per_s", f64s(&rows, |r| r.3.round()))
            .with("mean_latency_us", f64s(&rows, |r| r6(r.4)));
        Ok(RunOutput { summary, tables: vec![t] })
    }
}

pub fn experiments() -> Vec<Box<dyn Experiment>> {
    vec![Box::new(E2e), Box::new(Partitioning), Box::new(Tables), Box::new(Revalidation), Box::new(CoverageExp), Box::new(Dynamic), Box::new(Search)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(e: &dyn Experiment, sets: &[(&str, &str)]) -> RunOutput {
        let o: BTreeMap<String, String> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        e.run(&o, true, &mut |_| {}).unwrap()
    }

    #[test]
    fn two_workloads_split_one_trace_and_replay_the_second_at_the_same_rate() {
        let rs = pipebench::render_pipeline("PSC", Profile::Acl, 1000, 3).unwrap();
        let n = 2000;
        let cfg = TrafficConfig { n_flows: n, seed: 3, locality: Locality::High, ..TrafficConfig::default() };
        let whole = pipebench::generate_traffic(&rs, &TrafficConfig { n_flows: 2 * n, ..cfg.clone() }).unwrap();
        let w = two_workloads(&rs, &cfg).unwrap();
        let t = &w.traffic;
        // Halves of one trace of unique flows: the first workload whole, the second's flows all
        // from the same trace, none repeating a first-workload flow.
        assert_eq!(w.first_flows, n);
        assert_eq!(w.second_seen_before, 0);
        let trace: std::collections::HashSet<_> = whole.flows.iter().map(|f| f.headers).collect();
        assert!(t.flows.iter().all(|f| trace.contains(&f.headers)));
        let heads: std::collections::HashSet<_> = t.flows.iter().map(|f| f.headers).collect();
        assert_eq!(heads.len(), t.flows.len());
        // Every flow plays, its packet count is what the trace holds for it, in time order.
        let mut count = vec![0u32; t.flows.len()];
        for p in &t.packets {
            count[p.flow as usize] += 1;
        }
        assert!(t.flows.iter().zip(&count).all(|(f, &c)| c > 0 && c == f.n_packets));
        assert!(t.packets.windows(2).all(|p| p[0].time_ns <= p[1].time_ns));
        // The second starts at 5/9 of the first's span and ends with it, cut there: part of it
        // plays (its heavy flows, which appear first, all do).
        let first_end = t.packets.iter().filter(|p| (p.flow as usize) < n).map(|p| p.time_ns).max().unwrap();
        let second: Vec<u64> = t.packets.iter().filter(|p| p.flow as usize >= n).map(|p| p.time_ns).collect();
        assert_eq!(w.second_at_ns, first_end / 9 * 5);
        assert!(second.iter().all(|&x| x >= w.second_at_ns && x <= first_end));
        let second_flows = t.flows.len() - n;
        assert!(second_flows > n / 4 && second_flows < n, "{second_flows}");
        // Same timing: after the switch both workloads arrive at about the same rate.
        let first_after = t.packets.iter().filter(|p| (p.flow as usize) < n && p.time_ns >= w.second_at_ns).count() as f64;
        let ratio = second.len() as f64 / first_after;
        assert!((0.7..1.4).contains(&ratio), "second / first packets after the switch: {ratio}");
        // Both halves draw on the same chains (sub-traversals the second can share).
        let chains = |r: std::ops::Range<usize>| t.flows[r].iter().map(|f| f.chain).collect::<std::collections::HashSet<_>>();
        let (a, b) = (chains(0..n), chains(n..t.flows.len()));
        assert!(b.intersection(&a).count() * 2 > b.len(), "{} of {} chains shared", b.intersection(&a).count(), b.len());
    }

    #[test]
    fn e2e_quick_runs_both_caches_on_pipebench() {
        let out = run(&E2e, &[("localities", "high,low"), ("pipelines", "PSC")]);
        for loc in ["high", "low"] {
            let s = &out.summary["pipelines"]["PSC"][loc];
            let (mf, gf) = (&s["mf"], &s["gf"]);
            // Rule-space coverage: GF's cross product is orders of magnitude larger (Table 2).
            assert!(gf["rule_space_coverage"].as_f64().unwrap() > 10.0 * mf["rule_space_coverage"].as_f64().unwrap(), "{s}");
            for x in [mf, gf] {
                assert!(x["entries"].as_u64().unwrap() <= x["capacity"].as_u64().unwrap());
                assert_eq!(x["hits"].as_u64().unwrap() + x["misses"].as_u64().unwrap(), x["packets"].as_u64().unwrap());
                assert!(x["mean_latency_us"].as_f64().unwrap() >= 8.5);
            }
        }
        // Fig. 11: Gigaflow's sub-traversals reoccur (an entry serves several upcalls), more at
        // high locality; a Megaflow never does.
        let p = &out.summary["pipelines"]["PSC"];
        let reoccur = |loc: &str, k: &str| p[loc][k]["sub_traversal_reoccurrence"].as_f64().unwrap();
        assert_eq!(reoccur("high", "mf"), 1.0);
        assert!(reoccur("high", "gf") > 1.1 && reoccur("high", "gf") > reoccur("low", "gf"), "{p}");
        assert_eq!(p["high"]["gf"]["sub_traversal_reoccurrence_per_table"].as_array().unwrap().len(), 4);
        // The headline numbers are derived from the per-pipeline results.
        let h = &out.summary["high_locality"];
        let (mf, gf) = (&p["high"]["mf"], &p["high"]["gf"]);
        let gain = 100.0 * (gf["hit_rate"].as_f64().unwrap() / mf["hit_rate"].as_f64().unwrap() - 1.0);
        assert!((h["hit_rate_gain_pct_max"].as_f64().unwrap() - gain).abs() < 1e-3, "{h} vs {gain}");
        assert_eq!(h["hit_rate_gain_pct_max"], h["hit_rate_gain_pct_mean"], "one pipeline");
        // Low locality has more misses than high for both caches.
        for k in ["mf", "gf"] {
            assert!(p["low"][k]["hit_rate"].as_f64().unwrap() < p["high"][k]["hit_rate"].as_f64().unwrap());
        }
        // The summary names the inputs' settings.
        let set = &out.summary["settings"];
        assert_eq!((set["timing"].as_str(), set["align"].as_bool(), set["host_entries"].as_u64()), (Some("window"), Some(true), Some(0)), "{set}");
        // Deterministic: same seed, same summary.
        let again = run(&E2e, &[("localities", "high,low"), ("pipelines", "PSC")]);
        assert_eq!(out.summary_json(), again.summary_json());
    }

    #[test]
    fn revalidation_quick_removes_stale_entries_of_both_caches() {
        let out = run(&Revalidation, &[("update_every", "5")]);
        for k in ["mf", "gf"] {
            let x = &out.summary["schemes"][k];
            assert_eq!(x["checked"], x["entries"]);
            assert!(x["removed"].as_u64().unwrap() > 0, "{x}");
            // Every entry re-ran at least one lookup.
            assert!(x["lookups_rerun"].as_u64().unwrap() >= x["checked"].as_u64().unwrap(), "{x}");
        }
        // Sub-traversals are shorter than whole traversals (paper §4.3.1, §6.3.6).
        let (mf, gf) = (&out.summary["schemes"]["mf"], &out.summary["schemes"]["gf"]);
        let per_entry = |x: &Value| x["lookups_rerun"].as_f64().unwrap() / x["checked"].as_f64().unwrap();
        assert!(per_entry(gf) < per_entry(mf), "{mf} {gf}");
        assert_eq!(out.tables[0].rows(), 2);
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let o: BTreeMap<String, String> = [("partitioning".to_string(), "zigzag".to_string())].into();
        let e = E2e.run(&o, true, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("partitioning"), "{e}");
        let o: BTreeMap<String, String> = [("ks".to_string(), "0".to_string())].into();
        assert!(Tables.run(&o, true, &mut |_| {}).unwrap_err().to_string().contains("ks"));
    }
    #[test]
    fn coverage_quick_gf_covers_more_than_mf_and_feasible_is_bounded() {
        let out = run(&CoverageExp, &[]);
        for name in ["PSC", "OFD"] {
            let x = &out.summary["pipelines"][name];
            let (mf, gf, tag_only) = (
                x["mf_coverage"].as_f64().unwrap(),
                x["gf_coverage"].as_f64().unwrap(),
                x["gf_chains_tag_only"].as_f64().unwrap(),
            );
            // MF covers one traversal per entry.
            assert_eq!(mf, x["mf_entries"].as_u64().unwrap() as f64, "{x}");
            // Every GF entry chain a packet completes counts; it can not exceed the tag-linked chains.
            assert!(gf <= tag_only, "{x}");
            assert!(gf > mf, "{x}");
        }
        assert_eq!(out.tables[0].rows(), 2);
    }

    #[test]
    fn dynamic_quick_series_conserves_packets_and_shows_the_second_workload() {
        let out = run(&Dynamic, &[]);
        let t = &out.tables[0];
        assert_eq!(t.rows(), 24);
        assert!(out.summary["second_workload_at_packet"].as_u64().unwrap() > 0);
        let col = |n: &str| {
            t.columns
                .iter()
                .find(|c| c.0 == n)
                .map(|c| c.1.clone())
                .unwrap()
        };
        let (ColumnData::U64(pk), ColumnData::U64(h), ColumnData::U64(m)) =
            (col("packets"), col("hits"), col("misses"))
        else {
            panic!()
        };
        for s in ["mf", "gf"] {
            let x = &out.summary["schemes"][s];
            let rows: Vec<usize> = (0..t.rows())
                .filter(|&i| matches!(&t.columns[2].1, ColumnData::Str(v) if v[i] == s))
                .collect();
            assert_eq!(
                rows.iter().map(|&i| pk[i]).sum::<u64>(),
                x["packets"].as_u64().unwrap()
            );
            assert_eq!(
                rows.iter().map(|&i| h[i]).sum::<u64>(),
                x["hits"].as_u64().unwrap()
            );
            assert!(rows.iter().all(|&i| h[i] + m[i] == pk[i]));
            let (ColumnData::U64(e), cap) = (col("entries"), x["capacity"].as_u64().unwrap())
            else {
                panic!()
            };
            // No eviction (the artifact's caches): occupancy only grows, up to the capacity.
            assert!(
                rows.windows(2)
                    .all(|w| e[w[0]] <= e[w[1]] && e[w[1]] <= cap),
                "{x}"
            );
            for k in [
                "hit_rate_before",
                "hit_rate_after",
                "second_workload_hit_rate",
            ] {
                assert!((0.0..=1.0).contains(&x[k].as_f64().unwrap()), "{x}");
            }
        }
        assert!(out.summary["second_workload_at_s"].as_f64().unwrap() > 0.0);
        // Halves of one trace of unique flows: none of the second's flows occurred before.
        assert_eq!(out.summary["second_workload_flows_seen_before"].as_u64(), Some(0));
        let (in_run, per) = (out.summary["second_workload_flows_in_run"].as_u64().unwrap(), out.summary["flows_per_workload"].as_u64().unwrap());
        assert!(in_run > 0 && in_run <= per);
    }

    #[test]
    fn search_quick_nuevomatch_returns_the_tss_entry_for_every_lookup() {
        let out = run(&Search, &[]);
        for s in ["mf", "gf"] {
            let x = &out.summary["schemes"][s];
            let q = x["queries"].as_u64().unwrap();
            assert!(q >= 10_000, "{x}");
            // Every query agreed (a disagreement fails the run); most are the very same entry.
            assert_eq!(x["same_entry"].as_u64().unwrap() + x["equal_priority_ties"].as_u64().unwrap(), q);
            assert!(x["query_hits"].as_u64().unwrap() > 0, "{x}");
            // The iSets hold part of the entries (the rest is the TSS remainder).
            assert!(x["nm_iset_coverage"].as_f64().unwrap() > 0.0, "{x}");
            assert!(x["nm_lookups_per_s"].as_f64().unwrap() > 0.0 && x["tss_lookups_per_s"].as_f64().unwrap() > 0.0);
        }
        assert_eq!(out.tables[0].rows(), 4);
    }
}
