//! The paper's experiments as `innet run orbitcache.*`: each is a sweep over one axis (skew,
//! write ratio, servers, cache size, key size, value size, Twitter-derived workload) with a
//! throughput search per (scheme, point), or a fixed-load series (latency vs throughput, the
//! hot-in timeline). Every experiment takes the same flat parameters; each has its own defaults
//! and `--quick` form.
//!
//! Throughput is the highest offered load at which loss (requests sent in the measurement
//! window and not answered by the end of the drain) stays ≤ `max_loss` (0.1 %): the search
//! doubles or halves from `start_mrps` until the loss crosses the threshold and then bisects
//! `refine` times between the last passing and the first failing load.

use std::collections::BTreeMap;

use innet_registry::{ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, List, ListItem, ParamSpec, Progress, RunOutput, Sweep, Table};
use innet_sim::report::round6;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::run::{run, search, RunResult, RunSpec, Scheme};
use crate::workload::WorkloadSpec;

/// Parameters shared by every OrbitCache experiment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    schemes: List<Scheme>,
    axis: List<String>,
    seed: u64,
    keys: u64,
    distribution: String,
    zipf_alpha: f64,
    key_bytes: u64,
    values: String,
    fixed_value_bytes: u64,
    large_fraction: f64,
    large_placement: String,
    size_seed: u64,
    write_ratio: f64,
    clients: u64,
    servers: u64,
    partitions_per_server: u64,
    server_rate_rps: f64,
    server_queue_requests: u64,
    server_ns_per_key_byte: f64,
    server_rate_window_us: f64,
    server_service_ns: f64,
    cache_size: u64,
    queue_slots: u64,
    hkey_bits: u64,
    switch_pipeline_ns: u64,
    recirculation_gbps: f64,
    link_gbps: f64,
    netcache_entries: u64,
    netcache_key_seed: u64,
    netcache_stages: u64,
    netcache_bytes_per_stage: u64,
    pegasus_keys: u64,
    warmup_us: f64,
    duration_us: f64,
    drain_us: f64,
    max_loss: f64,
    refine: u64,
    start_mrps: f64,
    offered_mrps: f64,
    controller_period_us: f64,
    hot_in_period_us: f64,
    report_min_count: u64,
    fetch_timeout_us: f64,
    auto_size: bool,
    insert_valid: bool,
    cache_sizes: List<usize>,
}

impl ListItem for Scheme {
    fn parse_item(item: &str) -> Result<Scheme, String> {
        Scheme::parse(item).map_err(|_| "one of nocache, netcache, farreach, pegasus, orbitcache".into())
    }
}

const SCHEMES_DOC: &str = "schemes to compare: nocache, netcache, farreach, pegasus, orbitcache";

/// Parameters of every OrbitCache experiment, after its own `schemes` and `axis`.
const COMMON: &[ParamSpec] = &[
    ParamSpec::new("seed", "1", "run seed (clients' arrivals and keys)"),
    ParamSpec::new("keys", "10000000", "number of distinct keys"),
    ParamSpec::new("distribution", "\"zipf\"", "key popularity: zipf or uniform"),
    ParamSpec::new("zipf_alpha", "0.99", "Zipf skew"),
    ParamSpec::new("key_bytes", "16", "key length in bytes"),
    ParamSpec::new("values", "\"bimodal\"", "value sizes: bimodal (per key, small 64 B or large 1,024 B) or fixed"),
    ParamSpec::new("fixed_value_bytes", "1024", "every value's size when values = fixed"),
    ParamSpec::new("large_fraction", "0.18", "fraction of keys with 1,024-byte values (bimodal)"),
    ParamSpec::new("large_placement", "\"artifact\"", "artifact: the hottest 128 ranks large as the artifact's NetCache key file leaves them out (32 of 128), the rest drawn; hottest: the hottest ⌈large_fraction×128⌉ ranks large (the artifact's OrbitCache preload); random: every key drawn"),
    ParamSpec::new("size_seed", "0", "seed of the per-key value-size draw"),
    ParamSpec::new("write_ratio", "0.0", "fraction of requests that are writes"),
    ParamSpec::new("clients", "4", "client hosts"),
    ParamSpec::new("servers", "4", "storage hosts"),
    ParamSpec::new("partitions_per_server", "8", "emulated storage servers (partitions) per storage host"),
    ParamSpec::new("server_rate_rps", "100000.0", "requests per second one emulated storage server serves"),
    ParamSpec::new("server_queue_requests", "128", "requests an emulated server can hold waiting"),
    ParamSpec::new("server_ns_per_key_byte", "0.0", "extra server time per key byte (ns)"),
    ParamSpec::new("server_rate_window_us", "5000.0", "0: each request paced at 1/server_rate_rps; > 0: the artifact's fixed-window receive counter (window in µs), requests served in server_service_ns"),
    ParamSpec::new("server_service_ns", "1000.0", "a request's service time under a window limit (ns)"),
    ParamSpec::new("cache_size", "128", "OrbitCache: cached items"),
    ParamSpec::new("queue_slots", "8", "OrbitCache: request-table slots per key (S)"),
    ParamSpec::new("hkey_bits", "128", "bits of the key hash the switch matches (fewer forces collisions)"),
    ParamSpec::new("switch_pipeline_ns", "500", "one pipeline pass of the ToR (ingress + traffic manager), ns"),
    ParamSpec::new("recirculation_gbps", "100.0", "bandwidth of the recirculation port"),
    ParamSpec::new("link_gbps", "100.0", "host link bandwidth"),
    ParamSpec::new("netcache_entries", "10000", "NetCache/FarReach: cache entries (preloaded with the hottest cacheable keys)"),
    ParamSpec::new("netcache_key_seed", "0", "NetCache: seed of the key file's draw (Fig. 13's mixes cache a uniform share of the hottest ranks)"),
    ParamSpec::new("netcache_stages", "8", "NetCache/FarReach: stages holding value bytes"),
    ParamSpec::new("netcache_bytes_per_stage", "16", "NetCache/FarReach: value bytes per stage (8 × 16 = 128 B)"),
    ParamSpec::new("pegasus_keys", "64", "Pegasus: replicated hot keys"),
    ParamSpec::new("warmup_us", "500.0", "warm-up before the measurement window (µs)"),
    ParamSpec::new("duration_us", "20000.0", "measurement window (µs)"),
    ParamSpec::new("drain_us", "3000.0", "time after the window for replies to arrive (µs)"),
    ParamSpec::new("max_loss", "0.001", "throughput = highest offered load with loss at most this (0.1 %: no partition falls behind, as the artifact's backlog-lengthened runs measure)"),
    ParamSpec::new("refine", "5", "bisection steps of the throughput search"),
    ParamSpec::new("start_mrps", "1.0", "first offered load the search tries (million requests/s)"),
    ParamSpec::new("offered_mrps", "0.0", "fixed offered load for series experiments (0 = the experiment's own)"),
    ParamSpec::new("controller_period_us", "0.0", "OrbitCache controller period (0 = static cache)"),
    ParamSpec::new("hot_in_period_us", "0.0", "hot-in: swap the 128 hottest and coldest keys every this many µs (0 = off)"),
    ParamSpec::new("report_min_count", "100", "servers report keys counted more than this per period"),
    ParamSpec::new("fetch_timeout_us", "1000000.0", "controller fetch timeout (µs)"),
    ParamSpec::new("auto_size", "false", "OrbitCache controller sizes the cache from the overflow ratio"),
    ParamSpec::new("cache_sizes", "\"\"", "OrbitCache: also search over these cache sizes and keep the best (Fig. 17c's effective cache size)"),
    ParamSpec::new("insert_valid", "true", "OrbitCache: new entries valid at once (requests park during the fetch, as the artifact); false forwards them until the value arrives"),
];

impl Params {
    fn spec(&self, scheme: Scheme) -> RunSpec {
        RunSpec {
            scheme,
            seed: self.seed,
            workload: WorkloadSpec {
                keys: self.keys,
                distribution: self.distribution.clone(),
                zipf_alpha: self.zipf_alpha,
                key_bytes: self.key_bytes as usize,
                values: self.values.clone(),
                fixed_value_bytes: self.fixed_value_bytes as u32,
                large_fraction: self.large_fraction,
                large_placement: self.large_placement.clone(),
                size_seed: self.size_seed,
                write_ratio: self.write_ratio,
                hot_in_period_s: self.hot_in_period_us / 1e6,
                ..WorkloadSpec::default()
            },
            clients: self.clients as u32,
            servers: self.servers as u32,
            partitions_per_server: self.partitions_per_server as u32,
            server_rate_rps: self.server_rate_rps,
            server_queue_requests: self.server_queue_requests as usize,
            server_ns_per_key_byte: self.server_ns_per_key_byte,
            server_rate_window_us: self.server_rate_window_us,
            server_service_ns: self.server_service_ns,
            cache_size: self.cache_size as usize,
            queue_slots: self.queue_slots as usize,
            hkey_bits: self.hkey_bits as u32,
            switch_pipeline_ns: self.switch_pipeline_ns,
            recirculation_gbps: self.recirculation_gbps,
            link_gbps: self.link_gbps,
            netcache_entries: self.netcache_entries as usize,
            netcache_key_seed: self.netcache_key_seed,
            netcache_stages: self.netcache_stages as u32,
            netcache_bytes_per_stage: self.netcache_bytes_per_stage as u32,
            pegasus_keys: self.pegasus_keys as usize,
            warmup_us: self.warmup_us,
            duration_us: self.duration_us,
            drain_us: self.drain_us,
            controller_period_us: self.controller_period_us,
            report_min_count: self.report_min_count as u32,
            fetch_timeout_us: self.fetch_timeout_us,
            auto_size: self.auto_size,
            insert_valid: self.insert_valid,
            ..RunSpec::default()
        }
    }
}

/// One Twitter-derived mix of Fig. 13.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwitterMix {
    pub id: &'static str,
    pub cluster: &'static str,
    /// NetCache's cacheable-item ratio: the share of the 10K hottest ranks in its key file,
    /// drawn independently of the value sizes (§5.2).
    pub cacheable: f64,
    /// The portion of 64-B values (the rest 1,024 B).
    pub small: f64,
    pub write_ratio: f64,
}

/// The mixes of Fig. 13. The paper names A–D as Twitter clusters 045/016/044/017 and states A's
/// cacheable ratio (95 %) and E's (1 %). Write ratios are the clusters' published operation mix
/// (twitter/cache-trace, stat/2020Mar.md: 045 add 0.15; 016 set 0.04 + add 0.01; 044 add 0.01;
/// 017 get 0.99); the portion of 64-B values matches each cluster's published mean value size
/// with the 64/1,024-B bimodal (120, 115, 22, 212 B → 0.94, 0.95, 1, 0.89); E takes the paper's
/// default 82 % (its cluster is not named). B–D's cacheable ratios are ours (docs/orbitcache.md).
pub const TWITTER_WORKLOADS: &[TwitterMix] = &[
    TwitterMix { id: "A", cluster: "cluster045", cacheable: 0.95, small: 0.94, write_ratio: 0.15 },
    TwitterMix { id: "B", cluster: "cluster016", cacheable: 0.60, small: 0.95, write_ratio: 0.05 },
    TwitterMix { id: "C", cluster: "cluster044", cacheable: 0.40, small: 1.0, write_ratio: 0.01 },
    TwitterMix { id: "D", cluster: "cluster017", cacheable: 0.20, small: 0.89, write_ratio: 0.0 },
    TwitterMix { id: "E", cluster: "unnamed", cacheable: 0.01, small: 0.82, write_ratio: 0.0 },
];

/// Apply one axis value to a run.
fn apply(axis: &str, value: &str, spec: &mut RunSpec) -> Result<(), ExperimentError> {
    let num = |v: &str| v.parse::<f64>().map_err(|_| ExperimentError::bad_param("axis", v, format!("a number for the {axis} axis")));
    match axis {
        "zipf_alpha" => {
            if value == "uniform" {
                spec.workload.distribution = "uniform".into();
            } else {
                spec.workload.distribution = "zipf".into();
                spec.workload.zipf_alpha = num(value)?;
            }
        }
        "write_ratio" => spec.workload.write_ratio = num(value)?,
        "emulated_servers" => {
            let n = num(value)? as u32;
            if n == 0 || n % spec.servers != 0 {
                return Err(ExperimentError::param("axis", format!("{n} emulated servers do not spread over {} hosts", spec.servers)));
            }
            spec.partitions_per_server = n / spec.servers;
        }
        "cache_size" => {
            spec.cache_size = num(value)? as usize;
            spec.table_entries = spec.table_entries.max(spec.cache_size);
        }
        "key_bytes" => spec.workload.key_bytes = num(value)? as usize,
        "value_bytes" => {
            spec.workload.values = "fixed".into();
            spec.workload.fixed_value_bytes = num(value)? as u32;
        }
        "workload" => {
            let Some(mix) = TWITTER_WORKLOADS.iter().find(|w| w.id == value) else {
                return Err(ExperimentError::bad_param("axis", value, "a workload id: A, B, C, D or E"));
            };
            spec.workload.values = "bimodal".into();
            spec.workload.large_fraction = 1.0 - mix.small;
            spec.workload.large_placement = "random".into();
            spec.workload.write_ratio = mix.write_ratio;
            spec.netcache_key_fraction = Some(mix.cacheable);
        }
        "offered_mrps" => spec.offered_rps = num(value)? * 1e6,
        other => return Err(ExperimentError::param("axis", format!("unknown axis {other}"))),
    }
    Ok(())
}

fn metrics(r: &RunResult) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("throughput_rps".into(), json!(round6(r.throughput_rps)));
    m.insert("server_throughput_rps".into(), json!(round6(r.server_throughput_rps)));
    m.insert("switch_throughput_rps".into(), json!(round6(r.switch_throughput_rps)));
    m.insert("offered_rps".into(), json!(round6(r.offered_rps)));
    m.insert("loss".into(), json!(round6(r.loss)));
    m.insert("latency_p50_us".into(), json!(round6(r.latency_p50_us)));
    m.insert("latency_p99_us".into(), json!(round6(r.latency_p99_us)));
    m.insert("switch_latency_p50_us".into(), json!(round6(r.switch_latency_p50_us)));
    m.insert("switch_latency_p99_us".into(), json!(round6(r.switch_latency_p99_us)));
    m.insert("server_latency_p50_us".into(), json!(round6(r.server_latency_p50_us)));
    m.insert("server_latency_p99_us".into(), json!(round6(r.server_latency_p99_us)));
    m.insert("overflow_ratio".into(), json!(round6(r.overflow_ratio)));
    m.insert("balancing_efficiency".into(), json!(round6(r.balancing_efficiency)));
    m.insert("cache_size".into(), json!(r.cache_size));
    m.insert("min_server_rps".into(), json!(round6(r.min_server_rps)));
    let mut ps = r.per_server_rps.clone();
    ps.sort_by(|a, b| b.partial_cmp(a).unwrap());
    m.insert("per_server_rps".into(), json!(ps.iter().map(|x| round6(*x)).collect::<Vec<_>>()));
    m.insert("collisions".into(), json!(r.collisions));
    m.insert("corrections".into(), json!(r.corrections));
    m.insert("counters".into(), Value::Object(r.counters.clone()));
    m
}

/// How an experiment measures each point.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Throughput search per (scheme, axis value).
    Search,
    /// One run per (scheme, axis value) at a fixed offered load.
    Fixed,
}

/// One OrbitCache experiment: its declaration (its own `schemes` and `axis`, then [`COMMON`]),
/// the parameter its axis values set, the value its summary headlines, and how a point runs.
#[derive(Clone, Copy)]
struct AxisSweep {
    declaration: Declaration,
    axis_name: &'static str,
    /// The axis value whose results make the summary's per-scheme entry.
    headline: &'static str,
    mode: Mode,
}

/// An experiment's own parameters: the schemes it compares and its axis values by default.
const fn own(schemes: &'static str, axis: &'static str, axis_doc: &'static str) -> [ParamSpec; 2] {
    [ParamSpec::new("schemes", schemes, SCHEMES_DOC), ParamSpec::new("axis", axis, axis_doc)]
}

impl Experiment for AxisSweep {
    fn info(&self) -> ExperimentInfo {
        self.declaration.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: Params = self.declaration.resolve(overrides, quick)?;
        let (schemes, values) = (p.schemes.0.clone(), p.axis.0.clone());
        if schemes.is_empty() || values.is_empty() {
            return Err(ExperimentError::param("schemes/axis", "expected at least one scheme and one axis value"));
        }
        let sweep = Sweep::over(schemes).by(&values);
        let points = sweep
            .points
            .iter()
            .map(|(s, v)| {
                let mut spec = p.spec(*s);
                if p.offered_mrps > 0.0 {
                    spec.offered_rps = p.offered_mrps * 1e6;
                }
                apply(self.axis_name, v, &mut spec)?;
                spec.validate()?;
                Ok((*s, v.clone(), spec))
            })
            .collect::<Result<Vec<_>, ExperimentError>>()?;
        let sizes = &p.cache_sizes;
        let runs = Sweep::over(points.iter().map(|(_, _, spec)| spec)).run(progress, |&spec, prog| match self.mode {
            Mode::Search if !sizes.is_empty() && spec.scheme == Scheme::OrbitCache => {
                // Fig. 17c: the effective cache size — the size with the highest throughput.
                let mut best: Option<RunResult> = None;
                let mut runs = 0u64;
                for (j, &c) in sizes.iter().enumerate() {
                    let sized = RunSpec { cache_size: c, table_entries: spec.table_entries.max(c), ..spec.clone() };
                    let mut sub = |f: f64| prog((j as f64 + f) / sizes.len() as f64);
                    let s = search(&sized, p.start_mrps * 1e6, p.max_loss, p.refine as u32, &mut sub)?;
                    runs += s.probes.len() as u64;
                    if best.as_ref().is_none_or(|b| s.best.throughput_rps > b.throughput_rps) {
                        best = Some(s.best);
                    }
                }
                Ok((best.expect("at least one size"), runs))
            }
            Mode::Search => {
                let s = search(spec, p.start_mrps * 1e6, p.max_loss, p.refine as u32, prog)?;
                Ok((s.best, s.probes.len() as u64))
            }
            Mode::Fixed => Ok((run(spec, prog)?, 1)),
        })?;
        let (results, probes_col): (Vec<RunResult>, Vec<u64>) = runs.into_iter().unzip();
        let name = self.declaration.name;
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!(name));
        summary.insert("axis".into(), json!(self.axis_name));
        summary.insert("axis_values".into(), json!(values));
        summary.insert("seed".into(), json!(p.seed));
        summary.insert(
            "throughput_definition".into(),
            json!(format!("highest offered load with loss <= {} (doubling/halving then {} bisection steps)", p.max_loss, p.refine)),
        );
        let headline = if values.iter().any(|v| v == self.headline) { self.headline.to_string() } else { values[0].clone() };
        let mut by_scheme = Map::new();
        for ((s, v, _), r) in points.iter().zip(&results) {
            if *v == headline {
                let mut m = metrics(r);
                m.insert(self.axis_name.into(), json!(v));
                by_scheme.insert(s.name().into(), Value::Object(m));
            }
        }
        summary.insert("headline".into(), json!(headline));
        summary.insert("derived".into(), Value::Object(derived(self.axis_name, &values, &points, &results, &headline)));
        summary.insert("schemes".into(), Value::Object(by_scheme));
        let mut tables = vec![points_table(self.axis_name, &points, &results, probes_col)
            .with("effective_cache_size", ColumnData::U64(results.iter().map(|r| r.cache_size as u64).collect()))];

        tables.push(per_server_table(&points, &results));
        if results.iter().any(|r| !r.ticks.is_empty()) {
            tables.push(ticks_table(&points, &results));
        }
        if self.mode == Mode::Fixed {
            tables.push(timeline_table(&points, &results));
        }
        Ok(RunOutput { summary, tables })
    }
}

/// Where a margin measured at the sweep's axis values (in order) first turns negative: the point
/// where the straight line between the last value with a margin >= 0 and the first one below 0
/// crosses zero (the curves are sampled, so the first sampled value past the crossing would
/// overstate it by up to a grid step: FarReach overtakes OrbitCache between write ratios 0.25 and
/// 0.5, and "0.5" read as the crossing was a mismatch with the paper's "over 25 %"). The first
/// value itself when the margin is already negative there; None when it never turns negative or an
/// axis value is not a number.
fn crossing(values: &[String], margin: impl Fn(&str) -> Option<f64>) -> Option<f64> {
    let mut prev: Option<(f64, f64)> = None;
    for v in values {
        let x: f64 = v.parse().ok()?;
        let Some(m) = margin(v) else { continue };
        if m < 0.0 {
            return Some(match prev {
                Some((x0, m0)) => x0 + (x - x0) * m0 / (m0 - m),
                None => x,
            });
        }
        prev = Some((x, m));
    }
    None
}

/// Numbers the paper states in words, computed from the sweep: throughput ratios at the headline
/// point, the write ratio where FarReach overtakes OrbitCache, the best cache size, and the
/// switch-latency gap to NetCache.
fn derived(axis: &str, values: &[String], points: &[(Scheme, String, RunSpec)], results: &[RunResult], headline: &str) -> Map<String, Value> {
    let at = |s: Scheme, v: &str| points.iter().zip(results).find(|((sc, x, _), _)| *sc == s && x == v).map(|(_, r)| r);
    let mut d = Map::new();
    if let Some(o) = at(Scheme::OrbitCache, headline) {
        for other in [Scheme::NoCache, Scheme::NetCache, Scheme::FarReach, Scheme::Pegasus] {
            if let Some(r) = at(other, headline) {
                if r.throughput_rps > 0.0 {
                    d.insert(format!("orbitcache_over_{}", other.name()), json!(round6(o.throughput_rps / r.throughput_rps)));
                }
            }
        }
        if let Some(n) = at(Scheme::NetCache, headline) {
            if n.switch_throughput_rps > 0.0 && o.switch_throughput_rps > 0.0 {
                d.insert("orbitcache_minus_netcache_switch_p50_us".into(), json!(round6(o.switch_latency_p50_us - n.switch_latency_p50_us)));
            }
        }
    }
    if axis == "write_ratio" {
        if let Some(x) = crossing(values, |v| match (at(Scheme::FarReach, v), at(Scheme::OrbitCache, v)) {
            (Some(f), Some(o)) => Some(o.throughput_rps - f.throughput_rps),
            _ => None,
        }) {
            d.insert("farreach_overtakes_at_write_ratio".into(), json!(round6(x)));
        }
    }
    if axis == "cache_size" {
        let best = points
            .iter()
            .zip(results)
            .filter(|((s, _, _), _)| *s == Scheme::OrbitCache)
            .max_by(|a, b| a.1.throughput_rps.partial_cmp(&b.1.throughput_rps).unwrap());
        if let Some(((_, v, _), _)) = best {
            d.insert("best_cache_size".into(), json!(v.parse::<f64>().unwrap_or(f64::NAN)));
        }
    }
    d
}

fn points_table(axis: &str, points: &[(Scheme, String, RunSpec)], results: &[RunResult], probes: Vec<u64>) -> Table {
    let f = |g: &dyn Fn(&RunResult) -> f64| ColumnData::F64(results.iter().map(|r| round6(g(r))).collect());
    Table::new("points")
        .with("scheme", ColumnData::Str(points.iter().map(|p| p.0.name().to_string()).collect()))
        .with(axis, ColumnData::Str(points.iter().map(|p| p.1.clone()).collect()))
        .with("throughput_rps", f(&|r| r.throughput_rps))
        .with("server_throughput_rps", f(&|r| r.server_throughput_rps))
        .with("switch_throughput_rps", f(&|r| r.switch_throughput_rps))
        .with("offered_rps", f(&|r| r.offered_rps))
        .with("loss", f(&|r| r.loss))
        .with("latency_p50_us", f(&|r| r.latency_p50_us))
        .with("latency_p99_us", f(&|r| r.latency_p99_us))
        .with("switch_latency_p50_us", f(&|r| r.switch_latency_p50_us))
        .with("switch_latency_p99_us", f(&|r| r.switch_latency_p99_us))
        .with("server_latency_p50_us", f(&|r| r.server_latency_p50_us))
        .with("server_latency_p99_us", f(&|r| r.server_latency_p99_us))
        .with("overflow_ratio", f(&|r| r.overflow_ratio))
        .with("balancing_efficiency", f(&|r| r.balancing_efficiency))
        .with("min_server_rps", f(&|r| r.min_server_rps))
        .with("runs", ColumnData::U64(probes))
}

fn per_server_table(points: &[(Scheme, String, RunSpec)], results: &[RunResult]) -> Table {
    let (mut s, mut a, mut rank, mut rps) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((sc, v, _), r) in points.iter().zip(results) {
        let mut ps = r.per_server_rps.clone();
        ps.sort_by(|x, y| y.partial_cmp(x).unwrap());
        for (i, x) in ps.into_iter().enumerate() {
            s.push(sc.name().to_string());
            a.push(v.clone());
            rank.push(i as u64);
            rps.push(round6(x));
        }
    }
    Table::new("per_server")
        .with("scheme", ColumnData::Str(s))
        .with("axis_value", ColumnData::Str(a))
        .with("server_rank", ColumnData::U64(rank))
        .with("rps", ColumnData::F64(rps))
}

fn ticks_table(points: &[(Scheme, String, RunSpec)], results: &[RunResult]) -> Table {
    let (mut s, mut a, mut t, mut hits, mut ov, mut ratio, mut ins, mut ev) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((sc, v, _), r) in points.iter().zip(results) {
        for k in &r.ticks {
            s.push(sc.name().to_string());
            a.push(v.clone());
            t.push(k.at_ps as f64 / 1e6);
            hits.push(k.cache_hits);
            ov.push(k.overflows);
            ratio.push(round6(k.overflow_ratio));
            ins.push(k.inserted as u64);
            ev.push(k.evicted as u64);
        }
    }
    Table::new("controller_ticks")
        .with("scheme", ColumnData::Str(s))
        .with("axis_value", ColumnData::Str(a))
        .with("time_us", ColumnData::F64(t))
        .with("cache_hits", ColumnData::U64(hits))
        .with("overflows", ColumnData::U64(ov))
        .with("overflow_ratio", ColumnData::F64(ratio))
        .with("inserted", ColumnData::U64(ins))
        .with("evicted", ColumnData::U64(ev))
}

fn timeline_table(points: &[(Scheme, String, RunSpec)], results: &[RunResult]) -> Table {
    let (mut s, mut a, mut t, mut rps, mut ov) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((sc, v, _), r) in points.iter().zip(results) {
        for &(at, x, o) in &r.timeline {
            s.push(sc.name().to_string());
            a.push(v.clone());
            t.push(at);
            rps.push(round6(x));
            ov.push(round6(o));
        }
    }
    Table::new("timeline")
        .with("scheme", ColumnData::Str(s))
        .with("axis_value", ColumnData::Str(a))
        .with("time_us", ColumnData::F64(t))
        .with("answers_per_s", ColumnData::F64(rps))
        .with("overflow_answers_per_s", ColumnData::F64(ov))
}

const QUICK_RUN: &[(&str, &str)] = &[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0")];

/// Every OrbitCache experiment.
const SWEEPS: &[AxisSweep] = &[
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.skew",
            "Fig. 8: throughput (total, servers, switch) vs key-popularity skew",
            &[&own("\"nocache,netcache,orbitcache\"", "\"uniform,0.9,0.95,0.99\"", "key distributions: uniform or a Zipf alpha"), COMMON],
        )
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0"), ("axis", "\"0.99\"")]),
        axis_name: "zipf_alpha",
        headline: "0.99",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.server_load",
            "Fig. 9: load on each emulated storage server at each scheme's throughput (Zipf-0.99)",
            &[&own("\"nocache,netcache,orbitcache\"", "\"0.99\"", "key distribution"), COMMON],
        )
        .quick(QUICK_RUN),
        axis_name: "zipf_alpha",
        headline: "0.99",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.latency",
            "Figs. 10 and 14: median and 99th-percentile latency (all, switch-served, server-served) vs offered load",
            &[&own("\"nocache,netcache,orbitcache\"", "\"0.5,1,1.5,2,3,4,5\"", "offered loads (million requests/s)"), COMMON],
        )
        .quick(&[("duration_us", "5000.0"), ("axis", "\"1,3\"")]),
        axis_name: "offered_mrps",
        headline: "1",
        mode: Mode::Fixed,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.writes",
            "Figs. 11 and 18b: throughput vs write ratio (with FarReach's write-back)",
            &[&own("\"nocache,netcache,farreach,orbitcache\"", "\"0,0.05,0.1,0.25,0.5,0.75,1\"", "write ratios"), COMMON],
        )
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0"), ("axis", "\"0,0.5,1\""), ("schemes", "\"nocache,farreach,orbitcache\"")]),
        axis_name: "write_ratio",
        headline: "0",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.scalability",
            "Fig. 12: throughput and balancing efficiency vs the number of emulated storage servers (50K RPS each)",
            &[&own("\"nocache,netcache,orbitcache\"", "\"4,8,16,32,64\"", "emulated storage servers (spread over the storage hosts)"), COMMON],
        )
        .defaults(&[("server_rate_rps", "50000.0")])
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "1.0"), ("axis", "\"8,32\"")]),
        axis_name: "emulated_servers",
        headline: "32",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.workloads",
            "Fig. 13: throughput on Twitter-derived mixes A–E (cacheable-item ratio and write ratio)",
            &[&own("\"nocache,netcache,orbitcache\"", "\"A,B,C,D,E\"", "workload ids (see docs/orbitcache.md)"), COMMON],
        )
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0"), ("axis", "\"A,E\"")]),
        axis_name: "workload",
        headline: "E",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.cachesize",
            "Fig. 15: throughput breakdown, switch latency and overflow ratio vs the number of cached items",
            &[&own("\"orbitcache\"", "\"8,16,32,64,128,256,512,1024\"", "cached items"), COMMON],
        )
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0"), ("axis", "\"16,128,512\"")]),
        axis_name: "cache_size",
        headline: "128",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.keysize",
            "Fig. 16: throughput and balancing efficiency vs key size (values all 64 B)",
            &[&own("\"orbitcache\"", "\"16,32,64,128\"", "key sizes in bytes"), COMMON],
        )
        .defaults(&[("values", "\"fixed\""), ("fixed_value_bytes", "64"), ("server_ns_per_key_byte", "10.0"), ("server_rate_window_us", "0.0")])
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0"), ("axis", "\"16,128\"")]),
        axis_name: "key_bytes",
        headline: "16",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.valuesize",
            "Fig. 17: throughput and balancing efficiency vs value size (every value the same size)",
            &[&own("\"orbitcache\"", "\"64,128,256,512,1024,1416\"", "value sizes in bytes"), COMMON],
        )
        .defaults(&[("values", "\"fixed\""), ("cache_sizes", "\"16,32,64,128,256\"")])
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0"), ("axis", "\"64,1416\""), ("cache_sizes", "\"32,128\"")]),
        axis_name: "value_bytes",
        headline: "1024",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.pegasus",
            "Fig. 18a: throughput vs skew against Pegasus's selective replication",
            &[&own("\"netcache,pegasus,orbitcache\"", "\"0.9,0.95,0.99\"", "Zipf skews"), COMMON],
        )
        .quick(&[("duration_us", "8000.0"), ("refine", "3"), ("start_mrps", "2.0"), ("axis", "\"0.99\"")]),
        axis_name: "zipf_alpha",
        headline: "0.99",
        mode: Mode::Search,
    },
    AxisSweep {
        declaration: Declaration::new(
            "orbitcache.dynamic",
            "Fig. 19: throughput and overflow ratio over time under hot-in (time compressed: see docs/orbitcache.md)",
            &[&own("\"orbitcache\"", "\"5\"", "offered load (million requests/s)"), COMMON],
        )
        .defaults(&[
                    ("controller_period_us", "10000.0"),
                    ("hot_in_period_us", "100000.0"),
                    ("duration_us", "600000.0"),
                    ("report_min_count", "2"),
                    ("fetch_timeout_us", "10000.0"),
                    ("servers", "4"),
                    ("partitions_per_server", "1"),
                    ("server_rate_rps", "1000000.0"),
                    ("server_queue_requests", "4096"),
                ])
        .quick(&[("duration_us", "60000.0"), ("hot_in_period_us", "20000.0"), ("controller_period_us", "2000.0"), ("fetch_timeout_us", "2000.0")]),
        axis_name: "offered_mrps",
        headline: "5",
        mode: Mode::Fixed,
    },
];

/// Every OrbitCache experiment.
pub fn experiments() -> Vec<Box<dyn Experiment>> {
    SWEEPS.iter().map(|s| Box::new(*s) as Box<dyn Experiment>).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_scheme_or_cache_size_names_its_parameter_and_item() {
        let skew = experiments().into_iter().find(|e| e.info().name == "orbitcache.skew").unwrap();
        let run = |k: &str, v: &str| skew.run(&BTreeMap::from([(k.to_string(), v.to_string())]), true, &mut |_| {}).unwrap_err().to_string();
        let e = run("schemes", "nocache,bogus");
        assert!(e.starts_with("parameter 'schemes': expected each item to be one of nocache") && e.ends_with("got 'bogus'"), "{e}");
        assert_eq!(run("cache_sizes", "16,lots"), "parameter 'cache_sizes': expected each item to be a whole number, got 'lots'");
        assert!(run("axis", "0.9,steep").contains("got 'steep'"));
    }

    fn axis(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_crossing_lies_between_the_two_sampled_values_that_bracket_it() {
        // Fig. 18b's shape: OrbitCache ahead by 0.10 MRPS at 0.25, behind by 0.55 at 0.5.
        let values = axis(&["0", "0.25", "0.5", "1"]);
        let margin = |v: &str| Some(match v { "0" => 1.8, "0.25" => 0.10, "0.5" => -0.55, _ => -1.0 });
        let x = crossing(&values, margin).unwrap();
        assert!((x - (0.25 + 0.25 * 0.10 / 0.65)).abs() < 1e-12, "{x}");
        assert!(x > 0.25 && x < 0.5);
        // behind from the start: the first value; never behind: none; a point without data is skipped
        assert_eq!(crossing(&values, |_| Some(-1.0)), Some(0.0));
        assert_eq!(crossing(&values, |_| Some(1.0)), None);
        let gap = |v: &str| if v == "0.25" { None } else { Some(match v { "0" => 1.0, "0.5" => -1.0, _ => -2.0 }) };
        assert_eq!(crossing(&values, gap), Some(0.25));
    }
}
