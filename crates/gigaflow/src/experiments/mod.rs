//! Gigaflow's experiments, one module per experiment over the shared inputs, runs and summary
//! helpers here. Every run replays Pipebench traffic through a NIC cache in front of our slow
//! path ([`crate::nic::Offload`]).

mod e2e;
mod partitioning;
mod tables;
mod revalidation;
mod coverage;
mod cpu;
mod dynamic;
mod search;
mod threads;
mod tuples;
mod split;

pub use split::{merge_parts, parts, run_part};

pub use dynamic::{two_workloads, TwoWorkloads};

use crate::ltm::GigaflowConfig;
use crate::megaflow::Eviction;
use crate::nic::{NicModel, Offload};
use crate::partition::Scheme;
use innet_pipebench::{Locality, Profile, Ruleset, Timing, Traffic, TrafficConfig};
use innet_ofswitch::slowpath::{LookupWildcards, Pipeline};
use innet_registry::{ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, List, ParamSpec, Progress, RunOutput, Sweep, Table};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Which cache a run uses.
#[derive(Clone, Debug)]
pub enum CacheSpec {
    Megaflow { entries: usize, eviction: Eviction, max_masks: usize },
    Gigaflow(GigaflowConfig),
}

/// What one (pipeline, locality, cache) run measured. Serialisable without loss (floats as their
/// bits), so a sweep's parts can run as separate tasks and merge into exactly one process's
/// output ([`split`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunResult {
    /// Datapath passes: arrivals plus recirculations.
    pub packets: u64,
    pub arrivals: u64,
    /// Arrivals every pass of which the NIC handled.
    pub arrivals_hit: u64,
    pub hits: u64,
    /// Upcalls to the slow path (the paper's "cache misses"): every NIC miss by default, those
    /// the host datapath's Megaflow cache missed too when it has one (`host_entries`).
    pub misses: u64,
    /// Packets the NIC missed (`packets - hits`) and those of them the host cache handled.
    pub nic_misses: u64,
    pub host_hits: u64,
    pub entries: usize,
    pub capacity: usize,
    /// Table 2's Megaflow-equivalents (the artifact's estimate; a Megaflow's entries).
    #[serde(with = "innet_registry::exact_f64")]
    pub rule_space: f64,
    /// Gigaflow entry chains a packet can complete (an exact count beside the estimate).
    #[serde(with = "innet_registry::exact_f64")]
    pub rule_space_feasible: f64,
    /// Gigaflow entry chains linked by tags alone (an upper bound of `rule_space_feasible`).
    #[serde(with = "innet_registry::exact_f64")]
    pub rule_space_tag_only: f64,
    /// Unique mappings Gigaflow's installs used (0 for Megaflow), and the estimate's sum over
    /// them before the floor at the upcalls, with mappings keyed by full wildcards (the
    /// artifact) and by field sets.
    pub unique_mappings: usize,
    #[serde(with = "innet_registry::exact_f64")]
    pub mapping_sum: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub mapping_sum_by_fields: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub mean_latency_us: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub slowpath_us_per_miss: f64,
    pub recycled: u64,
    pub rejected: u64,
    /// Upcalls per installed entry (Fig. 11; see `GigaflowStats::reoccurrence`): overall and per
    /// LTM table. A Megaflow is never produced twice (the packet would have hit it): 1, no tables.
    #[serde(with = "innet_registry::exact_f64")]
    pub reoccurrence: f64,
    #[serde(with = "innet_registry::exact_f64::list")]
    pub reoccurrence_per_table: Vec<f64>,
    /// Wall-clock slow-path split on this machine (µs per miss): traversal, partition, rulegen.
    #[serde(with = "innet_registry::exact_f64::list")]
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
        arrivals: s.arrivals,
        arrivals_hit: s.arrivals_hit,
        hits: s.hits,
        misses: s.upcalls,
        nic_misses: s.misses,
        host_hits: s.host_hits,
        entries: o.entries(),
        capacity: o.capacity(),
        rule_space: cov.estimate,
        rule_space_feasible: cov.feasible,
        rule_space_tag_only: cov.chains_tag_only,
        mapping_sum: cov.mapping_sum,
        mapping_sum_by_fields: cov.mapping_sum_by_fields,
        unique_mappings: match &o.cache {
            crate::nic::NicCache::Megaflow(_) => 0,
            crate::nic::NicCache::Gigaflow(g) => g.mappings.len(),
        },
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

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`), if available.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

/// The median (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn r6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn result_json(r: &RunResult) -> Value {
    let mut v = result_json_passes(r);
    // Pipelines with ct(table=N) (OLS, ANT) make more than one datapath pass per packet: the
    // counts above are per pass (the artifact's counters count recirculated packets); these
    // give the arrivals and the share of them every pass of which hit.
    if r.arrivals != r.packets {
        v["arrivals"] = json!(r.arrivals);
        v["arrival_hit_rate"] = json!(r6(r.arrivals_hit as f64 / r.arrivals.max(1) as f64));
    }
    v
}

fn result_json_passes(r: &RunResult) -> Value {
    json!({
        "hit_rate": r6(r.hit_rate()),
        "misses": r.misses,
        "entries": r.entries,
        "capacity": r.capacity,
        "rule_space_coverage": r6(r.rule_space),
        "rule_space_feasible_chains": r6(r.rule_space_feasible),
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

/// Inputs shared by the experiments.
#[derive(Deserialize, Clone)]
struct Common {
    rules: usize,
    flows: usize,
    profile: String,
    seed: u64,
    flow_sizes: String,
    trace_flows_per_line: usize,
    timing: String,
    host_entries: usize,
    align: bool,
    fresh_source_ports: bool,
    sampled_headers: bool,
    low_anchors: bool,
    recombine_l2: bool,
    single_in_port: bool,
    conntrack: bool,
    ip_port_security: bool,
    artifact_ltm: bool,
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
                "flow_sizes": self.flow_sizes,
                "trace_flows_per_line": self.trace_flows_per_line,
                "fresh_source_ports": self.fresh_source_ports,
                "sampled_headers": self.sampled_headers,
                "align": self.align,
                "host_entries": self.host_entries,
            }),
        );
        // The pipeline and L2 variants (issue 22) are named only when they differ from their
        // defaults (COMMON), so default runs' summaries stay as they were.
        let settings = summary.get_mut("settings").and_then(Value::as_object_mut).expect("just inserted");
        for (name, value, default) in [("recombine_l2", self.recombine_l2, true), ("single_in_port", self.single_in_port, false), ("low_anchors", self.low_anchors, true), ("conntrack", self.conntrack, false), ("ip_port_security", self.ip_port_security, true), ("artifact_ltm", self.artifact_ltm, false)] {
            if value != default {
                settings.insert(name.into(), json!(value));
            }
        }
    }

    /// The Gigaflow defaults with this run's seed and install alignment.
    fn gf(&self) -> GigaflowConfig {
        let a = self.artifact_ltm;
        let lookup_wildcards = if a { LookupWildcards::PerLookup } else { LookupWildcards::Traversal };
        GigaflowConfig { seed: self.seed, align: self.align, repair: !a, recycle_by_lookup: a, drops_complete: !a, match_metadata: !a, key_after_writes: a, masked_commit: a, vlan_always_matched: a, lookup_wildcards, ..GigaflowConfig::default() }
    }

    fn nic(&self) -> NicModel {
        NicModel { host_cache_entries: self.host_entries, ..NicModel::default() }
    }

    /// The pipeline's generated ruleset, with or without its conntrack stages.
    fn ruleset(&self, name: &str) -> Result<Ruleset, String> {
        let spec = innet_pipebench::pipelines::pipeline(name)?;
        let spec = if self.conntrack { spec } else { innet_pipebench::pipelines::without_conntrack(spec) };
        let spec = if self.ip_port_security { spec } else { innet_pipebench::pipelines::mac_only_port_security(spec) };
        innet_pipebench::ruleset::generate(&spec, Profile::parse(&self.profile)?, self.rules, self.seed)
    }

    fn traffic(&self, locality: Locality, seed: u64) -> Result<TrafficConfig, String> {
        Ok(TrafficConfig {
            n_flows: self.flows,
            locality,
            seed,
            sizes: innet_pipebench::traffic::parse_flow_sizes(&self.flow_sizes)?,
            trace_flows_per_line: self.trace_flows_per_line,
            timing: Timing::parse(&self.timing)?,
            fresh_source_ports: self.fresh_source_ports,
            sampled_headers: self.sampled_headers,
            low_anchors: self.low_anchors,
            recombine_l2: self.recombine_l2,
            single_in_port: self.single_in_port,
            ..TrafficConfig::default()
        })
    }
}

fn inputs(name: &str, loc: Locality, c: &Common) -> Result<(Ruleset, Pipeline, Traffic), String> {
    let rs = c.ruleset(name)?;
    let p = Pipeline::parse(&rs.text).map_err(|e| format!("{name}: generated flow file: {e}"))?;
    let t = innet_pipebench::generate_traffic(&rs, &c.traffic(loc, c.seed)?)?;
    Ok((rs, p, t))
}

/// The exact inputs `gigaflow.e2e` replays for one pipeline and locality, with e2e's parameters
/// (`overrides` uses e2e's `--set` names; parameters that only shape the caches are accepted and
/// ignored): the flow file (`ovs-ofctl add-flows` text) and the traffic. For running other
/// switches — the Gigaflow authors' gvs (bench/artifacts/) — on the same packets.
pub fn e2e_inputs(pipeline: &str, locality: &str, overrides: &BTreeMap<String, String>) -> Result<(Ruleset, Traffic), ExperimentError> {
    #[derive(Deserialize)]
    struct P {
        #[serde(flatten)]
        common: Common,
    }
    let p: P = e2e::E2E.declaration.resolve(overrides, false)?;
    let loc = self::locality("locality", locality)?;
    let (rs, _, t) = inputs(pipeline, loc, &p.common).map_err(ExperimentError::Input)?;
    Ok((rs, t))
}

fn loc_name(l: Locality) -> &'static str {
    match l {
        Locality::High => "high",
        Locality::Low => "low",
    }
}

/// The inputs every experiment takes ([`Common`]): ruleset, traffic and the caches' behaviour.
const COMMON: &[ParamSpec] = &[
    ParamSpec::new("rules", "10000", "ClassBench rules mapped into each pipeline (paper: 10K)"),
    ParamSpec::new("flows", "100000", "unique flows of the traffic (paper: 100K)"),
    ParamSpec::new("profile", "\"acl\"", "ClassBench profile: acl, fw or ipc"),
    ParamSpec::new("seed", "1", "seed of rules and traffic"),
    ParamSpec::new("flow_sizes", "\"mean:30\"", "packets per flow: mean:M, a capped power law (P(size >= k) = k^-a, at most 10,000) with mean M (30: the artifact's replay volume, 3M packets for 100K flows); pareto:S, the shape given (pareto:1.2, ~5 packets per flow, was the default until 26 Nov)"),
    ParamSpec::new("trace_flows_per_line", "1", "trace flows replayed onto each unique flow (header line), as tgen maps trace flow i to line i % lines; flow_sizes is per trace flow"),
    ParamSpec::new("host_entries", "0", "entries of a host datapath Megaflow cache behind the NIC (no eviction; the artifact's OVS has one of 200000): a NIC miss it hits is no upcall; 0 (the paper's design): every NIC miss is upcalled"),
    ParamSpec::new("fresh_source_ports", "false", "high locality: every flow takes a fresh ephemeral source port (many connections per host pair and service) instead of its chain's anchor port"),
    ParamSpec::new("sampled_headers", "false", "high locality: every flow samples its headers inside its rules (only the rule choice is local) instead of copying its chains' anchor packets"),
    ParamSpec::new("low_anchors", "true", "low locality: every flow copies its chains' anchor packets, as high locality does, so the localities differ only in how chains are drawn (uniformly vs by recurrence), the one difference the paper names; false: every flow samples fresh headers inside its rules (the default until 27 Nov)"),
    ParamSpec::new("recombine_l2", "true", "a flow's L2 part (in_port, MACs) comes from a second, independently drawn chain; false: from its own L3 chain (MACs stay with their addresses; combine with fresh_source_ports for flow variety)"),
    ParamSpec::new("single_in_port", "false", "true: every packet enters on port 1, as the artifact's tgen sends all traffic over one link (its header lines have no in_port; the form to compare GF - MF on PSC, OFD and OTL with the paper); false (default): a flow's in_port is its L2 part's port (1-4), so OLS's port security, ANT's Classifier and OTL's trunk ports see every port (with one port our OLS and ANT bindings drop 23-56 % of flows at table 0)"),
    ParamSpec::new("conntrack", "false", "true: OLS and ANT keep OVN's and Antrea's conntrack stages (ct(table=N) recirculation, ANT's dec_ttl); false (default; the paper's pipelines did not recirculate, docs/gigaflow.md): the stateful stages continue as plain goto_table (pipelines::without_conntrack)"),
    ParamSpec::new("ip_port_security", "true", "OLS's IPv4 port security and ANT's SpoofGuard bind an end's MAC to its address; false: MAC-only port security (those tables only continue)"),
    ParamSpec::new("align", "true", "Gigaflow installs continue from the LTM entries already capturing the packet (false: partition the whole traversal, as the artifact)"),
    ParamSpec::new("artifact_ltm", "false", "the LTM as the authors' gvs runs it (docs/results/artifacts.md): recycling by lookup (a new entry that an entry of its table, tag and priority matches is discarded), drop traversals never complete (their last entry sets no DROP tag), entries match no registers or metadata, entry keys hold the headers as their sub-traversal leaves them (commit_odp_actions rewrites the key), a rewritten header written only in the bits the entry matches (a masked set action with the entry's wildcards), every entry matching the VLAN TCI when the traversal read no VLAN field, one output on the last entry, each vSwitch table looked up with a fresh wildcard (its prefix tries consulted again), no repair entries; with partitioning=dp-artifact align=false max_masks=64 host_entries=200000 it is the artifact's configuration"),
    ParamSpec::new("timing", "\"window\"", "window: a replayed trace slice (every flow spread over the run, flows numbered by first packet, as the artifact's tgen); arrivals: Poisson flow starts, log-normal gaps"),
];

const MF_ENTRIES: ParamSpec = ParamSpec::new("mf_entries", "32000", "Megaflow cache entries (MF 32K)");
const GF_TABLES: ParamSpec = ParamSpec::new("gf_tables", "4", "Gigaflow LTM tables (K)");
const GF_ENTRIES: ParamSpec = ParamSpec::new("gf_entries", "8000", "entries per LTM table");
/// The caches most experiments compare: MF 32K and GF 4x8K.
const CACHES: &[ParamSpec] = &[MF_ENTRIES, GF_TABLES, GF_ENTRIES];

/// The Pipebench pipelines a sweep runs (all five of Table 1 by default).
const fn pipelines(doc: &'static str) -> ParamSpec {
    ParamSpec::new("pipelines", "\"OFD,PSC,OLS,ANT,OTL\"", doc)
}

/// A Gigaflow experiment: its declaration and its run, which resolves the parameters through
/// the declaration. [`experiments`] is the table of them.
pub(super) struct GfExperiment {
    pub(super) declaration: Declaration,
    run: fn(&BTreeMap<String, String>, bool, Progress<'_>) -> Result<RunOutput, ExperimentError>,
}

impl Experiment for GfExperiment {
    fn info(&self) -> ExperimentInfo {
        self.declaration.info()
    }
    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        (self.run)(overrides, quick, progress)
    }
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

/// A locality parameter's value (`high` or `low`), the error naming parameter `name`.
fn locality(name: &str, text: &str) -> Result<Locality, ExperimentError> {
    Locality::parse(text).map_err(|m| ExperimentError::param(name, m))
}

/// The `localities` parameter: a list of `high` and `low`.
fn localities(list: &List<String>) -> Result<Vec<Locality>, ExperimentError> {
    list.non_empty("localities")?.iter().map(|l| locality("localities", l)).collect()
}

/// A sweep of named caches over (pipeline, locality): `gigaflow.e2e` and `gigaflow.tables`. Each
/// (pipeline, locality) is a part: its inputs (ruleset, parsed pipeline, traffic) are made once
/// and every cache replays them. `run` makes the parts one after another; `innet reproduce` runs
/// each as a task of its own ([`split`]) and the merge gives the same output, byte for byte.
struct Grid {
    /// The (pipeline, locality) of each part: the pipelines by the localities.
    parts: Sweep<(String, Locality)>,
    common: Common,
    caches: Vec<(String, CacheSpec)>,
    /// The experiment's output from the rows of every run, in the parts' order.
    output: Box<dyn Fn(&[Row]) -> RunOutput>,
}

impl Grid {
    /// Every cache on the inputs of one part, in the caches' order.
    fn run_part(&self, (name, loc): &(String, Locality), progress: Progress<'_>) -> Result<Vec<RunResult>, ExperimentError> {
        let (_, pl, traffic) = inputs(name, *loc, &self.common).map_err(ExperimentError::Input)?;
        let nic = self.common.nic();
        Sweep::over(&self.caches).run(progress, |(_, spec), _| run_cache(&pl, &traffic, spec, nic).map_err(ExperimentError::Invariant))
    }

    /// The output from every part's results, in order.
    fn output(&self, results: Vec<Vec<RunResult>>) -> RunOutput {
        let mut rows = Vec::new();
        for ((name, loc), rs) in self.parts.points.iter().zip(results) {
            for ((cache, _), r) in self.caches.iter().zip(rs) {
                rows.push(Row { pipeline: name.clone(), locality: loc_name(*loc), scheme: cache.clone(), r });
            }
        }
        (self.output)(&rows)
    }

    /// Every part in this process, one after another.
    fn run(&self, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let results = self.parts.run(progress, |part, prog| self.run_part(part, prog))?;
        Ok(self.output(results))
    }
}

/// The results by pipeline → locality → cache name, from the rows.
fn results_tree(rows: &[Row]) -> Map<String, Value> {
    let mut tree = Map::new();
    for r in rows {
        put(&mut tree, &r.pipeline, r.locality, &r.scheme, result_json(&r.r));
    }
    tree
}

/// Every Gigaflow experiment, registered in one place.
pub fn experiments() -> Vec<Box<dyn Experiment>> {
    [e2e::E2E, partitioning::PARTITIONING, tables::TABLES, revalidation::REVALIDATION, coverage::COVERAGE, dynamic::DYNAMIC, search::SEARCH, cpu::CPU, threads::THREADS, tuples::TUPLES]
        .into_iter()
        .map(|e| Box::new(e) as Box<dyn Experiment>)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn run(e: &dyn Experiment, sets: &[(&str, &str)]) -> RunOutput {
        let o: BTreeMap<String, String> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        e.run(&o, true, &mut |_| {}).unwrap()
    }

    #[test]
    fn e2e_inputs_are_what_e2e_replays() {
        let o: BTreeMap<String, String> = [("rules", "200"), ("flows", "300"), ("mf_entries", "96")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (rs, t) = e2e_inputs("PSC", "high", &o).unwrap();
        let c: Common = e2e::E2E.declaration.resolve(&o, false).unwrap();
        let (rs2, _, t2) = inputs("PSC", Locality::High, &c).unwrap();
        assert_eq!(rs.text, rs2.text);
        assert!(t.iter().eq(t2.iter()), "the same packets in the same order");
        assert_eq!(t.flows.len(), 300);
        // The artifact's tag is the IPv4 ToS byte, starting at 0.
        assert!(t.iter().all(|(_, f)| f.is_ip() && f.get(innet_ofswitch::fields::Field::NwTos) == 0));
        let bad = e2e_inputs("PSC", "medium", &o).unwrap_err().to_string();
        assert!(bad.contains("locality"), "{bad}");
        let bad = e2e_inputs("PSC", "high", &[("flows".to_string(), "many".to_string())].into()).unwrap_err().to_string();
        assert!(bad.contains("flows") || bad.contains("parameters"), "{bad}");
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let o: BTreeMap<String, String> = [("partitioning".to_string(), "zigzag".to_string())].into();
        let e = e2e::E2E.run(&o, true, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("partitioning"), "{e}");
        let o: BTreeMap<String, String> = [("ks".to_string(), "0".to_string())].into();
        assert!(tables::TABLES.run(&o, true, &mut |_| {}).unwrap_err().to_string().contains("ks"));
    }
}
