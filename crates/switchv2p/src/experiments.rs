//! The paper's evaluation as `innet run` experiments. Each runs a set of (scheme, setting)
//! points, normalises against NoCache where the paper does, and returns the figure's data.
//!
//! | experiment | paper | points |
//! |---|---|---|
//! | `switchv2p.cachesize` | Fig. 5 | schemes × cache fractions |
//! | `switchv2p.migration` | Table 4 | NoCache, OnDemand, SwitchV2P ablations on the incast |
//! | `switchv2p.hits_by_layer` | Table 5 | SwitchV2P at 50 % cache |
//! | `switchv2p.pod_bytes` | Figs. 7–8 | bytes per pod and per switch, packet stretch |
//! | `switchv2p.gateways` | Fig. 9 | schemes × gateway counts |
//! | `switchv2p.topology` | Fig. 10 | schemes × pod counts at 128 servers |
//!
//! An experiment outside this crate (examples/v2p-twoway, docs/extending.md) starts from the same
//! parameters and reports the same metrics: [`Params`], [`TRACE_PARAMS`], [`header`], [`metrics`]
//! and [`points_table`] are public for it.

use std::collections::BTreeMap;
use std::sync::Arc;

use innet_registry::{
    ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, List, ParamSpec, Progress, RunOutput, Sweep, Table,
};
use innet_sim::report::round6;
use innet_sim::time::{PS_PER_MS, PS_PER_US};
use innet_sim::topology::TopologySpec;
use innet_sim::vswitch::TunnelKind;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::run::{run_scheme, run_scheme_costed, CacheIndex, Ecmp, RunCost, NetworkSpec, RunSpec, SchemeResult, Transport};
use crate::scheme::Scheme;
use crate::traces::{self, TraceRequest};
use innet_workloads::trace::TraceRow;
use innet_workloads::vm_traces;

/// Parameters of every SwitchV2P experiment (each exposes the subset it uses).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    pub trace: String,
    pub trace_file: String,
    pub trace_transport: String,
    pub trace_speedup: f64,
    pub trace_rpctypes: String,
    pub duration_ms: f64,
    pub load: f64,
    pub schemes: String,
    pub cache_fraction: f64,
    pub cache_fractions: List<f64>,
    pub gateway_counts: List<u32>,
    pub pod_counts: List<u32>,
    pub gateways_per_tor: u32,
    pub p_learn: f64,
    pub promote_requires_access_bit: bool,
    pub gateway_processing_us: f64,
    pub tcp_profile: String,
    pub congestion_control: String,
    pub hystart: String,
    pub stop_ms: f64,
    pub seed: u64,
    pub migrate_vm: u32,
    pub migrate_at_us: f64,
    pub migrate_to_server: u32,
    pub incast_senders: u32,
    pub incast_packets: u32,
    pub invalidation_spacing: String,
    pub tunnel: String,
    pub topology: String,
    pub ecmp: String,
    pub cache_index: String,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            trace: "hadoop".into(),
            trace_file: String::new(),
            trace_transport: "tcp".into(),
            trace_speedup: 1.0,
            trace_rpctypes: innet_workloads::alibaba_callgraph::DEFAULT_RPCTYPES.into(),
            duration_ms: 25.0,
            load: 0.3,
            schemes: "nocache,locallearning,gwcache,switchv2p".into(),
            cache_fraction: 0.5,
            cache_fractions: List(vec![0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 50.0, 100.0, 500.0, 1000.0, 1500.0]),
            gateway_counts: List(vec![40, 20, 12, 4]),
            pod_counts: List(vec![1, 8, 16, 32]),
            gateways_per_tor: 10,
            p_learn: 0.005,
            promote_requires_access_bit: false,
            gateway_processing_us: 40.0,
            tcp_profile: "switchv2p".into(),
            congestion_control: "cubic".into(),
            hystart: "profile".into(),
            stop_ms: 2000.0,
            seed: 1,
            migrate_vm: 5200,
            migrate_at_us: 500.0,
            migrate_to_server: 68,
            incast_senders: 64,
            incast_packets: 1000,
            invalidation_spacing: "base_rtt".into(),
            tunnel: "ipip_tags".into(),
            topology: "ft8_10k".into(),
            ecmp: "independent".into(),
            cache_index: "vip".into(),
        }
    }
}


/// A list of non-negative numbers, not empty.
fn non_negative(name: &str, list: &List<f64>) -> Result<Vec<f64>, ExperimentError> {
    let v = list.non_empty(name)?;
    match v.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
        Some(x) => Err(ExperimentError::bad_param(name, x, "a non-negative number")),
        None => Ok(v),
    }
}

impl Params {
    fn check(&self) -> Result<(), ExperimentError> {
        if !(self.load > 0.0 && self.load <= 1.0) {
            return Err(ExperimentError::bad_param("load", self.load, "a fraction in (0, 1]"));
        }
        if !(self.duration_ms > 0.0) {
            return Err(ExperimentError::bad_param("duration_ms", self.duration_ms, "a positive duration"));
        }
        if !(0.0..=1.0).contains(&self.p_learn) {
            return Err(ExperimentError::bad_param("p_learn", self.p_learn, "a probability in [0, 1]"));
        }
        if !(self.stop_ms > 0.0) {
            return Err(ExperimentError::bad_param("stop_ms", self.stop_ms, "a positive time"));
        }
        if !(self.gateway_processing_us >= 0.0) {
            return Err(ExperimentError::param("gateway_processing_us", "expected a non-negative time"));
        }
        NetworkSpec::by_name(&self.topology).map_err(|m| ExperimentError::param("topology", m))?;
        if !(self.trace_speedup > 0.0 && self.trace_speedup.is_finite()) {
            return Err(ExperimentError::bad_param("trace_speedup", self.trace_speedup, "a positive factor"));
        }
        if !(self.cache_fraction >= 0.0 && self.cache_fraction.is_finite()) {
            return Err(ExperimentError::bad_param("cache_fraction", self.cache_fraction, "a non-negative fraction"));
        }
        Ok(())
    }

    fn schemes(&self) -> Result<Vec<Scheme>, ExperimentError> {
        Scheme::parse_list("schemes", &self.schemes)
    }

    /// A run spec on `net` with this trace.
    pub fn spec(&self, net: NetworkSpec) -> Result<RunSpec, ExperimentError> {
        self.check()?;
        let req = TraceRequest {
            name: self.trace.as_str(),
            file: self.trace_file.as_str(),
            file_transport: self.trace_transport.as_str(),
            callgraph_speedup: self.trace_speedup,
            callgraph_rpctypes: self.trace_rpctypes.as_str(),
            servers: net.topo.num_servers(),
            vms_per_server: net.vms_per_server,
            host_bps: (net.topo.host_link_gbps * 1e9) as u64,
            load: self.load,
            duration_ns: (self.duration_ms * 1e6) as u64,
            seed: self.seed,
        };
        let (rows, transport) = traces::load_shared(&req)?;
        self.spec_with_rows(net, rows, transport)
    }

    fn spec_with_rows(&self, net: NetworkSpec, rows: impl Into<Arc<Vec<TraceRow>>>, transport: Transport) -> Result<RunSpec, ExperimentError> {
        let tcp = innet_sim::tcp::tcp_config(&self.tcp_profile, &self.congestion_control, &self.hystart)?;
        let mut s = RunSpec::new(net, rows, transport, tcp);
        s.cache_fraction = self.cache_fraction;
        s.p_learn = self.p_learn;
        s.promote_requires_access_bit = self.promote_requires_access_bit;
        s.gateway_processing_ps = (self.gateway_processing_us * PS_PER_US as f64) as u64;
        s.stop_ps = (self.stop_ms * PS_PER_MS as f64) as u64;
        s.seed = self.seed;
        s.ecmp = match self.ecmp.as_str() {
            "independent" => Ecmp::Independent,
            "correlated" => Ecmp::Correlated,
            "artifact" => Ecmp::Artifact,
            other => return Err(ExperimentError::bad_param("ecmp", other, "independent, correlated or artifact")),
        };
        if s.ecmp == Ecmp::Artifact && s.net.topo.kind != "fattree" {
            return Err(ExperimentError::param("ecmp", format!("artifact needs a fat tree (the artifact's addressing plan), not topology kind '{}'", s.net.topo.kind)));
        }
        s.cache_index = match self.cache_index.as_str() {
            "vip" => CacheIndex::Vip,
            "artifact" => CacheIndex::Artifact,
            other => return Err(ExperimentError::bad_param("cache_index", other, "vip or artifact")),
        };
        s.tunnel = match self.tunnel.as_str() {
            "ipip_tags" => TunnelKind::IpInIpTagged,
            "geneve" => TunnelKind::Geneve { vni: 1 },
            other => return Err(ExperimentError::bad_param("tunnel", other, "ipip_tags or geneve")),
        };
        Ok(s)
    }

    /// The network the `topology` and `gateways_per_tor` parameters name.
    pub fn net(&self) -> NetworkSpec {
        let mut n = NetworkSpec::by_name(&self.topology).unwrap_or_else(|_| NetworkSpec::ft8_10k());
        n.gateways_per_tor = self.gateways_per_tor;
        n
    }
}

/// The trace, network and transport parameters every SwitchV2P experiment starts from.
pub const TRACE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("trace", "\"hadoop\"", "generated trace: hadoop or websearch (TCP), microbursts (request/response), microbursts_oneway or video (UDP)"),
    ParamSpec::new(
        "trace_file",
        "\"\"",
        "a trace CSV instead of a generated one: src_vm,dst_vm,ts_ns,flow_id,size_bytes rows, or an Alibaba microservice call graph (MSCallGraph_*.csv of cluster-trace-microservices-v2021, told by its header), of which the first duration_ms is run",
    ),
    ParamSpec::new("trace_transport", "\"tcp\"", "how trace_file rows travel: tcp (one connection per row) or udp (one 64 B packet per row)"),
    ParamSpec::new("trace_speedup", "1.0", "call-graph trace_file only: trace time runs this many times faster than simulated time (1 = real time)"),
    ParamSpec::new("trace_rpctypes", "\"rpc,http\"", "call-graph trace_file only: the rpctypes that become flows (e.g. rpc,http,mc,db,mq; all for every type)"),
    ParamSpec::new("duration_ms", "25.0", "length of the generated trace, or of the prefix of a call-graph trace_file (the artifact's traces span 25 ms)"),
    ParamSpec::new("load", "0.3", "offered load as a fraction of total host bandwidth"),
    ParamSpec::new("gateways_per_tor", "10", "gateways on each of the 4 gateway ToRs (FT8-10K: 10 → 40 gateways)"),
    ParamSpec::new("p_learn", "0.005", "probability that a gateway ToR sends a learning packet for a mapping it learns"),
    ParamSpec::new("promote_requires_access_bit", "false", "spines promote only already-hot entries (the paper's wording) instead of on every hit (the artifact)"),
    ParamSpec::new("gateway_processing_us", "40.0", "gateway processing delay per packet"),
    ParamSpec::new("tcp_profile", "\"switchv2p\"", "TCP settings: switchv2p (the artifact's ns-3 settings), datacenter or ns3"),
    ParamSpec::new("congestion_control", "\"cubic\"", "cubic, dctcp or newreno"),
    ParamSpec::new(
        "hystart",
        "\"profile\"",
        "CUBIC's slow-start exit: profile (the profile's: rfc9406 today), rfc9406 (HyStart++), ns3 (ns-3.36's ACK-train and delay HyStart, which the artifact runs) or off",
    ),
    ParamSpec::new("stop_ms", "2000.0", "simulated-time limit"),
    ParamSpec::new("seed", "1", "seed of every random choice"),
    ParamSpec::new(
        "ecmp",
        "\"independent\"",
        "independent: each switch hashes flows with its own seed; correlated: one seed for all, so a ToR's spine and the spine's core choice coincide (the artifact's ns-3 ECMP: on FT8-10K only cores 0, 5, 10, 15 carry inter-pod traffic); artifact: the artifact's own hash of its own addresses (ns-3's Murmur3 flow hash, fat trees), so every flow takes the artifact's path",
    ),
    ParamSpec::new(
        "cache_index",
        "\"vip\"",
        "what the direct-mapped caches hash to find a slot: vip (CRC-32 of the VIP) or artifact (the ns-3 artifact's P4Cache::GetIndex: CRC-32 of the VM's number in the artifact's numbering, gateways counted, and the salt; GwCache unsalted as there)",
    ),
    ParamSpec::new(
        "tunnel",
        "\"ipip_tags\"",
        "ipip_tags: IP-in-IP with SwitchV2P's metadata as zero-byte tags, as the paper's simulations; geneve: Geneve with the options on the wire (12 B each)",
    ),
];

const SCHEMES_DOC: &str = "schemes to compare";
const CACHE_FRACTION: ParamSpec = ParamSpec::new("cache_fraction", "0.5", "total cache as a fraction of the address space");

/// Every (scheme, spec) in turn, with progress over the whole set.
fn run_all(points: Vec<(Scheme, RunSpec)>, progress: Progress<'_>) -> Result<Vec<SchemeResult>, ExperimentError> {
    Sweep::over(points).run(progress, |(scheme, spec), prog| run_scheme(spec, *scheme, prog))
}

/// The per-scheme metrics every summary carries; improvements against `base` (NoCache).
pub fn metrics(r: &SchemeResult, base: Option<&SchemeResult>) -> Map<String, Value> {
    let mut m = Map::new();
    let imp = |b: f64, x: f64| if x > 0.0 && b > 0.0 { round6(b / x) } else { 0.0 };
    m.insert("hit_rate".into(), json!(round6(r.stats.hit_rate())));
    m.insert("fct_mean_us".into(), json!(round6(r.fct_mean_us)));
    m.insert("fct_p99_us".into(), json!(round6(r.fct_p99_us)));
    m.insert("fct_improvement".into(), json!(base.map(|b| imp(b.fct_mean_us, r.fct_mean_us)).unwrap_or(0.0)));
    m.insert("first_packet_latency_mean_us".into(), json!(round6(r.fpl_mean_us)));
    m.insert("fpl_improvement".into(), json!(base.map(|b| imp(b.fpl_mean_us, r.fpl_mean_us)).unwrap_or(0.0)));
    m.insert("gateway_packets".into(), json!(r.stats.gateway_packets));
    m.insert("avg_packet_hops".into(), json!(round6(r.avg_packet_hops)));
    m.insert("avg_packet_latency_us".into(), json!(round6(r.avg_packet_latency_us)));
    m.insert("tenant_packets".into(), json!(r.stats.tenant_packets_sent));
    m.insert("flows".into(), json!(r.flows));
    m.insert("completed_flows".into(), json!(r.completed_flows));
    m.insert("learning_packets".into(), json!(r.stats.learning_packets));
    m.insert("invalidation_packets".into(), json!(r.stats.invalidation_packets));
    m.insert("misdelivered_packets".into(), json!(r.stats.misdelivered_packets));
    m.insert("last_misdelivered_us".into(), json!(round6(r.stats.last_misdelivered_ps as f64 / PS_PER_US as f64)));
    m.insert("switch_bytes".into(), json!(r.total_switch_bytes()));
    m.insert("cache_slots_per_switch".into(), json!(r.cache_slots_per_switch));
    m.insert("caching_switches".into(), json!(r.caching_switches));
    for (layer, n) in r.hits_by_layer(false) {
        m.insert(format!("hits_{layer}"), json!(n));
    }
    for (layer, n) in r.hits_by_layer(true) {
        m.insert(format!("first_hits_{layer}"), json!(n));
    }
    m.insert("spills".into(), json!(r.stats.spills));
    m.insert("promotions".into(), json!(r.stats.promotions));
    m.insert("cpu_packets".into(), json!(r.stats.cpu_packets));
    m.insert("drops".into(), json!(r.drops.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<_, _>>()));
    m.insert("events".into(), json!(r.events));
    if let Some(st) = &r.solver {
        m.insert(
            "controller".into(),
            json!({"solves": st.solves, "optimal": st.optimal, "time_limited": st.time_limited,
                   "solver_wall_s": round6(st.wall_seconds), "largest_columns": st.largest_columns}),
        );
    }
    m
}

/// A table with one row per point: `keys` (name, values) columns first, then the metrics.
pub fn points_table(name: &str, keys: Vec<(&str, ColumnData)>, rows: &[Map<String, Value>]) -> Table {
    let mut t = Table::new(name);
    for (k, c) in keys {
        t = t.with(k, c);
    }
    let Some(first) = rows.first() else { return t };
    for (k, v) in first {
        let col = match v {
            Value::Number(n) if n.is_u64() => ColumnData::U64(rows.iter().map(|r| r[k].as_u64().unwrap_or(0)).collect()),
            Value::Number(_) => ColumnData::F64(rows.iter().map(|r| r[k].as_f64().unwrap_or(0.0)).collect()),
            _ => continue,
        };
        t = t.with(k.as_str(), col);
    }
    t
}

/// The summary's first keys: the experiment, its trace and seed.
pub fn header(name: &str, p: &Params) -> Map<String, Value> {
    let mut s = Map::new();
    s.insert("experiment".into(), json!(name));
    s.insert("trace".into(), json!(if p.trace_file.is_empty() { p.trace.clone() } else { p.trace_file.clone() }));
    s.insert("seed".into(), json!(p.seed));
    s
}

// ---------------------------------------------------------------- switchv2p.cachesize (Fig. 5)

/// The cache-size sweep's own parameters (Fig. 5 on FT8-10K, Fig. 6 on FT16-400K).
const CACHESIZE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("topology", "\"ft8_10k\"", "ft8_10k (128 servers, 10,240 VMs) or ft16_400k (12,800 servers, 409,600 VMs)"),
    ParamSpec::new("schemes", "\"nocache,locallearning,gwcache,switchv2p\"", "schemes to compare (NoCache is always run as the baseline)"),
    ParamSpec::new("cache_fractions", "\"0.01,0.02,0.05,0.1,0.5,1,5,10,50,100,500,1000,1500\"", "total cache sizes as fractions of the VM address space"),
];

/// Fig. 5: the cache-size sweep on FT8-10K.
pub const CACHESIZE: SplitExperiment = SplitExperiment {
    declaration: Declaration::new(
        "switchv2p.cachesize",
        "Fig. 5: hit rate, FCT and first-packet-latency improvement over NoCache vs total cache size, per scheme",
        &[TRACE_PARAMS, CACHESIZE_PARAMS],
    )
    .quick(&[("duration_ms", "0.6"), ("cache_fractions", "\"0.1,0.5,10\""), ("stop_ms", "200.0")]),
    split: Split::CacheSize,
};

/// Fig. 6: the same sweep on FT16-400K under the Alibaba-like trace.
pub const ALIBABA: SplitExperiment = SplitExperiment {
    declaration: Declaration::new(
        "switchv2p.alibaba",
        "Fig. 6: the cache-size sweep on FT16-400K under the Alibaba-like microservice RPC trace",
        &[TRACE_PARAMS, CACHESIZE_PARAMS],
    )
    .defaults(&[("trace", "\"alibaba\""), ("duration_ms", "5.0"), ("topology", "\"ft16_400k\"")])
    .quick(&[("duration_ms", "0.3"), ("cache_fractions", "\"0.5\""), ("stop_ms", "100.0")]),
    split: Split::CacheSize,
};

/// The runs of the cache-size sweep: NoCache, then each scheme at every size (a scheme without
/// switch caches does not depend on the size: one run at the parameters' own).
fn cachesize_runs(p: &Params) -> Result<Vec<(Scheme, Setting)>, ExperimentError> {
    let fractions = non_negative("cache_fractions", &p.cache_fractions)?;
    let schemes: Vec<Scheme> = p.schemes()?.into_iter().filter(|&s| s != Scheme::NoCache).collect();
    let mut runs = vec![(Scheme::NoCache, Setting::CacheFraction(p.cache_fraction))];
    for &s in &schemes {
        if s.uses_switch_cache() || s == Scheme::Bluebird || s.controller_interval_ps().is_some() {
            runs.extend(fractions.iter().map(|&f| (s, Setting::CacheFraction(f))));
        } else {
            runs.push((s, Setting::CacheFraction(p.cache_fraction)));
        }
    }
    Ok(runs)
}

fn cachesize_output(name: &str, p: &Params, runs: &[(Scheme, Setting)], results: &[SchemeResult]) -> Result<RunOutput, ExperimentError> {
    let fractions = non_negative("cache_fractions", &p.cache_fractions)?;
    let base = &results[0];
    let mut rows = Vec::new();
    let (mut names, mut fr) = (Vec::new(), Vec::new());
    let mut by_scheme: Map<String, Value> = Map::new();
    for ((s, setting), r) in runs.iter().zip(results) {
        let Setting::CacheFraction(fraction) = *setting else { unreachable!("the cache-size sweep runs cache fractions") };
        let m = metrics(r, Some(base));
        names.push(s.name().to_string());
        fr.push(fraction);
        // The summary's per-scheme entry: the point closest to the paper's 50 % analysis size.
        let better = match by_scheme.get(s.name()) {
            None => true,
            Some(prev) => (fraction - 0.5).abs() < (prev["cache_fraction"].as_f64().unwrap_or(f64::MAX) - 0.5).abs(),
        };
        if better {
            let mut e = m.clone();
            e.insert("cache_fraction".into(), json!(fraction));
            by_scheme.insert(s.name().into(), Value::Object(e));
        }
        rows.push(m);
    }
    let mut s = header(name, p);
    s.insert("topology".into(), json!(p.topology));
    s.insert("cache_fractions".into(), json!(fractions));
    s.insert("schemes".into(), Value::Object(by_scheme));
    let table = points_table("points", vec![("scheme", ColumnData::Str(names)), ("cache_fraction", ColumnData::F64(fr))], &rows);
    Ok(RunOutput { summary: s, tables: vec![table] })
}

// ---------------------------------------------------------------- switchv2p.migration (Table 4)

/// Table 4: a VM migrates during a 64-sender incast.
pub struct MigrationExp;

const MIGRATION: Declaration = Declaration::new(
    "switchv2p.migration",
    "Table 4: a VM migrates during a 64-sender incast; gateway packets, latency, misdelivered and invalidation packets",
    &[
        TRACE_PARAMS,
        &[
            ParamSpec::new("schemes", "\"nocache,ondemand,switchv2p_noinval,switchv2p_nots,switchv2p\"", "schemes (Table 4's rows)"),
            ParamSpec::new("cache_fraction", "0.09375", "total cache as a fraction of the address space (the artifact: 12 entries per switch × 80 switches / 10,240 VMs)"),
            ParamSpec::new("migrate_vm", "5200", "the VM every sender sends to, and that migrates"),
            ParamSpec::new("migrate_at_us", "500.0", "when it migrates"),
            ParamSpec::new("migrate_to_server", "68", "server index it moves to (68 = ToR 17, first server: another rack and pod)"),
            ParamSpec::new("incast_senders", "64", "senders, the first VM of servers 0, 1, …"),
            ParamSpec::new("incast_packets", "1000", "packets per sender, 1 µs apart"),
            ParamSpec::new(
                "invalidation_spacing",
                "\"base_rtt\"",
                "timestamp vector: minimum time between two invalidations to one switch: base_rtt (the paper's text), a time in µs, or never (one per switch for the whole run, as the artifact's never-cleared bit array)",
            ),
        ],
    ],
)
.omit(&["trace", "trace_file", "trace_transport", "trace_speedup", "trace_rpctypes", "duration_ms", "load", "tcp_profile", "congestion_control", "hystart"])
.quick(&[("stop_ms", "50.0")]);

impl Experiment for MigrationExp {
    fn info(&self) -> ExperimentInfo {
        MIGRATION.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: Params = MIGRATION.resolve(overrides, quick)?;
        p.check()?;
        let net = p.net();
        let vm_count = net.vm_count();
        if p.migrate_vm as u64 >= vm_count {
            return Err(ExperimentError::param("migrate_vm", format!("VM {} does not exist ({vm_count} VMs)", p.migrate_vm)));
        }
        if p.incast_senders == 0 || p.incast_senders > net.topo.num_servers() {
            return Err(ExperimentError::param("incast_senders", format!("expected 1..={} senders", net.topo.num_servers())));
        }
        let rows = vm_traces::incast(p.incast_senders, net.vms_per_server, p.migrate_vm, p.incast_packets, 1000);
        let mut spec = p.spec_with_rows(net, rows, Transport::UdpPacket { payload_bytes: vm_traces::UDP_PAYLOAD_BYTES })?;
        spec.migrations = vec![(p.migrate_vm, (p.migrate_at_us * PS_PER_US as f64) as u64, p.migrate_to_server)];
        // OnDemand's hosts already use the migrating VM's mapping (Table 4: 0 % gateway
        // packets); what is measured is how long their stale copy lasts.
        spec.ondemand_preinstalled = vec![p.migrate_vm];
        spec.invalidation_spacing_ps = match p.invalidation_spacing.as_str() {
            "base_rtt" => None,
            "never" => Some(u64::MAX),
            x => match x.parse::<f64>() {
                Ok(us) if us >= 0.0 && us.is_finite() => Some((us * PS_PER_US as f64) as u64),
                _ => return Err(ExperimentError::param("invalidation_spacing", format!("expected base_rtt, never or a time in µs ≥ 0, got {x:?}"))),
            },
        };
        let mut schemes = p.schemes()?;
        if !schemes.contains(&Scheme::NoCache) {
            schemes.insert(0, Scheme::NoCache);
        }
        let results = run_all(schemes.iter().map(|&s| (s, spec.clone())).collect(), progress)?;
        let base = results.iter().find(|r| r.scheme == Scheme::NoCache).expect("NoCache runs");
        let mut by_scheme = Map::new();
        let mut rows = Vec::new();
        for r in &results {
            let mut m = metrics(r, Some(base));
            let norm = |x: f64, b: f64| if b > 0.0 { round6(x / b) } else { 0.0 };
            m.insert("gateway_packets_fraction".into(), json!(norm(r.stats.gateway_packets as f64, r.stats.tenant_packets_sent as f64)));
            m.insert("avg_packet_latency_vs_nocache".into(), json!(norm(r.avg_packet_latency_us, base.avg_packet_latency_us)));
            m.insert("misdelivered_vs_nocache".into(), json!(norm(r.stats.misdelivered_packets as f64, base.stats.misdelivered_packets as f64)));
            m.insert("invalidations_suppressed".into(), json!(r.stats.invalidations_suppressed));
            by_scheme.insert(r.scheme.name().into(), Value::Object(m.clone()));
            rows.push(m);
        }
        let mut s = header("switchv2p.migration", &p);
        s.insert("trace".into(), json!("incast"));
        s.insert("schemes".into(), Value::Object(by_scheme));
        let names = results.iter().map(|r| r.scheme.name().to_string()).collect();
        Ok(RunOutput { summary: s, tables: vec![points_table("table4", vec![("scheme", ColumnData::Str(names))], &rows)] })
    }
}

// ------------------------------------------------- switchv2p.hits_by_layer (Table 5), pod_bytes

/// Table 5: where SwitchV2P's cache hits happen.
pub struct HitsByLayer;

const HITS_BY_LAYER: Declaration = Declaration::new(
    "switchv2p.hits_by_layer",
    "Table 5: where SwitchV2P's cache hits happen (core, spine, ToR), for all packets and first packets",
    &[
        TRACE_PARAMS,
        &[CACHE_FRACTION, ParamSpec::new("topology", "\"ft8_10k\"", "ft8_10k, or ft16_400k for Table 5's Alibaba row (with trace=alibaba)")],
    ],
)
.quick(&[("duration_ms", "0.8"), ("stop_ms", "200.0")]);

impl Experiment for HitsByLayer {
    fn info(&self) -> ExperimentInfo {
        HITS_BY_LAYER.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: Params = HITS_BY_LAYER.resolve(overrides, quick)?;
        let spec = p.spec(p.net())?;
        let results = run_all(vec![(Scheme::SwitchV2P, spec)], progress)?;
        let r = &results[0];
        let share = |v: [(&'static str, u64); 3]| {
            let total: u64 = v.iter().map(|x| x.1).sum();
            v.map(|(l, n)| (l, if total > 0 { round6(n as f64 / total as f64) } else { 0.0 }))
        };
        let mut s = header("switchv2p.hits_by_layer", &p);
        let mut layers = Map::new();
        for (kind, v) in [("total", share(r.hits_by_layer(false))), ("first_packet", share(r.hits_by_layer(true)))] {
            layers.insert(kind.into(), json!(v.iter().map(|(l, x)| (l.to_string(), json!(x))).collect::<Map<_, _>>()));
        }
        s.insert("hit_share".into(), Value::Object(layers));
        let mut schemes = Map::new();
        schemes.insert("switchv2p".into(), Value::Object(metrics(r, None)));
        s.insert("schemes".into(), Value::Object(schemes));
        Ok(RunOutput { summary: s, tables: vec![switch_table(&results)] })
    }
}

/// One row per (scheme, switch): where bytes went and where hits happened.
fn switch_table(results: &[SchemeResult]) -> Table {
    let all = || results.iter().flat_map(|r| r.switches.iter().map(move |s| (r.scheme, s)));
    Table::new("switches")
        .with("scheme", ColumnData::Str(all().map(|(sc, _)| sc.name().to_string()).collect()))
        .with("switch", ColumnData::Str(all().map(|(_, s)| s.name.clone()).collect()))
        .with("pod", ColumnData::U64(all().map(|(_, s)| s.pod as u64).collect()))
        .with("role", ColumnData::Str(all().map(|(_, s)| s.role.name().to_string()).collect()))
        .with("layer", ColumnData::Str(all().map(|(_, s)| s.role.layer().to_string()).collect()))
        .with("bytes", ColumnData::U64(all().map(|(_, s)| s.bytes).collect()))
        .with("packets", ColumnData::U64(all().map(|(_, s)| s.packets).collect()))
        .with("hits", ColumnData::U64(all().map(|(_, s)| s.hits).collect()))
        .with("first_hits", ColumnData::U64(all().map(|(_, s)| s.first_hits).collect()))
}

/// Figs. 7-8: bytes per pod and per switch, and packet stretch.
pub const POD_BYTES: SplitExperiment = SplitExperiment {
    declaration: Declaration::new(
        "switchv2p.pod_bytes",
        "Figs. 7-8: bytes processed per pod and per switch of a gateway pod, total bandwidth overhead and packet stretch",
        &[TRACE_PARAMS, &[ParamSpec::new("schemes", "\"nocache,locallearning,gwcache,switchv2p,direct\"", SCHEMES_DOC), CACHE_FRACTION]],
    )
    .quick(&[("duration_ms", "0.6"), ("stop_ms", "200.0")]),
    split: Split::PodBytes,
};

/// Every scheme once on the parameters' network, NoCache (the baseline) first if not named.
fn pod_bytes_runs(p: &Params) -> Result<Vec<(Scheme, Setting)>, ExperimentError> {
    let mut schemes = p.schemes()?;
    if !schemes.contains(&Scheme::NoCache) {
        schemes.insert(0, Scheme::NoCache);
    }
    Ok(schemes.into_iter().map(|s| (s, Setting::Base)).collect())
}

fn pod_bytes_output(p: &Params, results: &[SchemeResult]) -> Result<RunOutput, ExperimentError> {
    let base = results.iter().find(|r| r.scheme == Scheme::NoCache).expect("NoCache runs");
    let mut by_scheme = Map::new();
    for r in results {
        let mut m = metrics(r, Some(base));
        let pods = r.switches.iter().map(|s| s.pod).max().unwrap_or(0) + 1;
        let mut per_pod = vec![0u64; pods as usize];
        for s in r.switches.iter().filter(|s| s.role.layer() != "core") {
            per_pod[s.pod as usize] += s.bytes;
        }
        m.insert("pod_bytes".into(), json!(per_pod));
        m.insert(
            "bytes_reduction_vs_nocache".into(),
            json!(if r.total_switch_bytes() > 0 { round6(base.total_switch_bytes() as f64 / r.total_switch_bytes() as f64) } else { 0.0 }),
        );
        by_scheme.insert(r.scheme.name().into(), Value::Object(m));
    }
    let tables = vec![switch_table(results)];
    let mut s = header("switchv2p.pod_bytes", p);
    s.insert("schemes".into(), Value::Object(by_scheme));
    Ok(RunOutput { summary: s, tables })
}

// -------------------------------------------- switchv2p.gateways (Fig. 9), topology (Fig. 10)

/// Fig. 9: the gateways shrink from 40 to 4.
pub const GATEWAYS: SplitExperiment = SplitExperiment {
    declaration: Declaration::new(
        "switchv2p.gateways",
        "Fig. 9: FCT and first-packet latency as the gateways shrink from 40 to 4",
        &[
            TRACE_PARAMS,
            &[
                ParamSpec::new("schemes", "\"nocache,locallearning,switchv2p\"", SCHEMES_DOC),
                CACHE_FRACTION,
                ParamSpec::new("gateway_counts", "\"40,20,12,4\"", "total gateways, spread evenly over the 4 gateway ToRs"),
            ],
        ],
    )
    .omit(&["gateways_per_tor"])
    .quick(&[("duration_ms", "0.6"), ("gateway_counts", "\"40,4\""), ("stop_ms", "200.0")]),
    split: Split::Gateways,
};

/// Every scheme at every gateway count (the counts outside).
fn gateways_runs(p: &Params) -> Result<Vec<(Scheme, Setting)>, ExperimentError> {
    let counts = p.gateway_counts.within("gateway_counts", 1..=u32::MAX, "a positive whole number")?;
    if let Some(c) = counts.iter().find(|&&c| c % 4 != 0) {
        return Err(ExperimentError::bad_param("gateway_counts", c, "multiples of 4 (gateways spread evenly over the 4 gateway ToRs)"));
    }
    Ok(Sweep::over(counts).by(&p.schemes()?).points.into_iter().map(|(c, s)| (s, Setting::Gateways(c))).collect())
}

/// The network with `c` gateways spread over the 4 gateway ToRs.
fn gateways_net(p: &Params, c: u32) -> NetworkSpec {
    let mut net = p.net();
    net.gateways_per_tor = c / 4;
    net
}

/// Fig. 10: the same 128 servers over 1 to 32 pods.
pub const TOPOLOGY: SplitExperiment = SplitExperiment {
    declaration: Declaration::new(
        "switchv2p.topology",
        "Fig. 10: FCT as the same 128 servers spread over 1 to 32 pods",
        &[
            TRACE_PARAMS,
            &[
                ParamSpec::new("schemes", "\"nocache,locallearning,gwcache,switchv2p\"", SCHEMES_DOC),
                CACHE_FRACTION,
                ParamSpec::new("pod_counts", "\"1,8,16,32\"", "pods; servers per ToR = 128 / (4 × pods), so the 128 servers stay"),
            ],
        ],
    )
    .quick(&[("duration_ms", "0.5"), ("pod_counts", "\"1,8\""), ("stop_ms", "200.0")]),
    split: Split::Topology,
};

/// Every scheme at every pod count (the counts outside).
fn topology_runs(p: &Params) -> Result<Vec<(Scheme, Setting)>, ExperimentError> {
    let pods = p.pod_counts.within("pod_counts", 1..=u32::MAX, "a positive whole number")?;
    if let Some(k) = pods.iter().find(|&&k| 128 % (4 * k) != 0) {
        return Err(ExperimentError::bad_param("pod_counts", k, "1, 2, 4, 8, 16 or 32 pods (4 ToRs per pod dividing 128 servers)"));
    }
    Ok(Sweep::over(pods).by(&p.schemes()?).points.into_iter().map(|(k, s)| (s, Setting::Pods(k))).collect())
}

/// The 128 servers spread over `k` pods.
fn topology_net(k: u32) -> NetworkSpec {
    let mut topo = TopologySpec::fattree(k, 4, 128 / (4 * k), 4, 16);
    topo.host_link_gbps = 100.0;
    // Gateway ToRs as in the artifact: the last ToR index of the scaled layout and
    // three spread before it (the first ToR of pods 0, ~1/4, ~5/8 and the last ToR).
    let tors = 4 * k;
    let mut gw: Vec<u32> = vec![0, tors * 10 / 32, tors * 20 / 32, tors - 1];
    gw.dedup();
    NetworkSpec { topo, gateway_tors: gw.clone(), gateways_per_tor: 40 / gw.len() as u32, vms_per_server: 80 }
}

/// Summary + table of a (scheme × setting) sweep; improvements against NoCache at the same setting.
fn sweep_output(name: &str, key: &str, p: &Params, points: Vec<(Scheme, u32)>, results: &[SchemeResult]) -> Result<RunOutput, ExperimentError> {
    let mut rows = Vec::new();
    let mut by_scheme = Map::new();
    for (i, ((s, k), r)) in points.iter().zip(results).enumerate() {
        let base = points.iter().zip(results).find(|((bs, bk), _)| *bs == Scheme::NoCache && bk == k).map(|(_, b)| b);
        let m = metrics(r, base);
        let _ = i;
        let e = by_scheme.entry(s.name().to_string()).or_insert_with(|| json!({}));
        e.as_object_mut().expect("object").insert(k.to_string(), Value::Object(m.clone()));
        rows.push(m);
    }
    let mut s = header(name, p);
    s.insert("schemes".into(), Value::Object(by_scheme));
    let t = points_table(
        "points",
        vec![
            ("scheme", ColumnData::Str(points.iter().map(|x| x.0.name().to_string()).collect())),
            (key, ColumnData::U64(points.iter().map(|x| x.1 as u64).collect())),
        ],
        &rows,
    );
    Ok(RunOutput { summary: s, tables: vec![t] })
}

// ------------------------------------------------- sweeps, and their runs as separate parts

/// The axis value one run of a sweep is at.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Setting {
    /// The parameters' own network and cache size.
    Base,
    CacheFraction(f64),
    Gateways(u32),
    Pods(u32),
}

/// How a sweep that splits into parts runs.
#[derive(Debug, Clone, Copy)]
pub enum Split {
    /// Fig. 5 (`switchv2p.cachesize`) and Fig. 6 (`switchv2p.alibaba`).
    CacheSize,
    PodBytes,
    Gateways,
    Topology,
}

/// An experiment that sweeps schemes × an axis inside one run: a list of independent
/// simulations (`runs`), each built from the parameters alone (`spec`), whose results become the
/// output (`output`). `run` simulates them one after another; `innet reproduce` runs each as a
/// task of its own ([`parts`], [`run_part`]) and [`merge_parts`] gives the same output, byte for
/// byte (python/tests/test_sweep.py compares the two).
#[derive(Debug, Clone, Copy)]
pub struct SplitExperiment {
    pub declaration: Declaration,
    pub split: Split,
}

/// Every experiment that splits into parts.
const SPLITS: &[SplitExperiment] = &[CACHESIZE, ALIBABA, POD_BYTES, GATEWAYS, TOPOLOGY];

impl Experiment for SplitExperiment {
    fn info(&self) -> ExperimentInfo {
        self.declaration.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        self.run_all(&self.declaration.resolve(overrides, quick)?, progress)
    }
}

impl SplitExperiment {
    /// The sweep `name` is, with its parameters resolved from `overrides`.
    fn resolve(name: &str, overrides: &BTreeMap<String, String>, quick: bool) -> Option<Result<(SplitExperiment, Params), ExperimentError>> {
        let e = *SPLITS.iter().find(|e| e.declaration.name == name)?;
        Some(e.declaration.resolve(overrides, quick).map(|p| (e, p)))
    }

    fn runs(self, p: &Params) -> Result<Vec<(Scheme, Setting)>, ExperimentError> {
        p.check()?;
        match self.split {
            Split::CacheSize => cachesize_runs(p),
            Split::PodBytes => pod_bytes_runs(p),
            Split::Gateways => gateways_runs(p),
            Split::Topology => topology_runs(p),
        }
    }

    /// The spec of one run (the trace is generated once per process: [`traces::load_shared`]).
    fn spec(self, p: &Params, setting: Setting) -> Result<RunSpec, ExperimentError> {
        match setting {
            Setting::Base => p.spec(p.net()),
            Setting::CacheFraction(f) => {
                let mut spec = p.spec(p.net())?;
                spec.cache_fraction = f;
                Ok(spec)
            }
            Setting::Gateways(c) => p.spec(gateways_net(p, c)),
            Setting::Pods(k) => p.spec(topology_net(k)),
        }
    }

    fn output(self, p: &Params, runs: &[(Scheme, Setting)], results: &[SchemeResult]) -> Result<RunOutput, ExperimentError> {
        let axis = |key: &str| -> Vec<(Scheme, u32)> {
            runs.iter().map(|&(s, setting)| (s, match setting {
                Setting::Gateways(c) | Setting::Pods(c) => c,
                other => unreachable!("{key} sweep run at {other:?}"),
            })).collect()
        };
        let name = self.declaration.name;
        match self.split {
            Split::CacheSize => cachesize_output(name, p, runs, results),
            Split::PodBytes => pod_bytes_output(p, results),
            Split::Gateways => sweep_output(name, "gateways", p, axis("gateways"), results),
            Split::Topology => sweep_output(name, "pods", p, axis("pods"), results),
        }
    }

    /// Every run in this process, one after another.
    fn run_all(self, p: &Params, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let runs = self.runs(p)?;
        let specs = runs.iter().map(|&(s, setting)| Ok((s, self.spec(p, setting)?))).collect::<Result<Vec<_>, ExperimentError>>()?;
        let results = run_all(specs, progress)?;
        self.output(p, &runs, &results)
    }
}

fn part_label(scheme: Scheme, setting: Setting) -> String {
    match setting {
        Setting::Base => scheme.name().to_string(),
        Setting::CacheFraction(f) => format!("{} cache_fraction={f}", scheme.name()),
        Setting::Gateways(c) => format!("{} gateways={c}", scheme.name()),
        Setting::Pods(k) => format!("{} pods={k}", scheme.name()),
    }
}

/// The independent runs ("parts") that `name` with these parameters makes, by label, in the
/// order [`merge_parts`] takes their results; None when `name` is not a sweep that splits.
pub fn parts(name: &str, overrides: &BTreeMap<String, String>, quick: bool) -> Option<Result<Vec<String>, ExperimentError>> {
    Some(SplitExperiment::resolve(name, overrides, quick)?.and_then(|(sweep, p)| {
        Ok(sweep.runs(&p)?.into_iter().map(|(s, setting)| part_label(s, setting)).collect())
    }))
}

/// Simulate part `index` alone: its label, its result and what it cost.
fn simulate_part(name: &str, overrides: &BTreeMap<String, String>, quick: bool, index: usize, progress: Progress<'_>) -> Option<Result<(String, SchemeResult, RunCost), ExperimentError>> {
    Some(SplitExperiment::resolve(name, overrides, quick)?.and_then(|(sweep, p)| {
        let runs = sweep.runs(&p)?;
        let &(scheme, setting) = runs
            .get(index)
            .ok_or_else(|| ExperimentError::Input(format!("{name}: part {index} does not exist (these parameters make {} parts)", runs.len())))?;
        let (r, cost) = run_scheme_costed(&sweep.spec(&p, setting)?, scheme, progress)?;
        progress(1.0);
        Ok((part_label(scheme, setting), r, cost))
    }))
}

/// Simulate part `index` alone; its result as JSON text (floats kept exactly) for [`merge_parts`].
pub fn run_part(name: &str, overrides: &BTreeMap<String, String>, quick: bool, index: usize, progress: Progress<'_>) -> Option<Result<String, ExperimentError>> {
    Some(simulate_part(name, overrides, quick, index, progress)?.map(|(label, r, _)| {
        let part = json!({"part": label, "result": r});
        serde_json::to_string(&part).expect("a run's result is plain data")
    }))
}

/// Simulate part `index` alone for its cost (`examples/v2p_bench.rs`): its label and [`RunCost`].
pub fn part_cost(name: &str, overrides: &BTreeMap<String, String>, quick: bool, index: usize) -> Option<Result<(String, RunCost), ExperimentError>> {
    Some(simulate_part(name, overrides, quick, index, &mut |_| {})?.map(|(label, _, cost)| (label, cost)))
}

/// The output `run` gives, from every part's [`run_part`] text in order.
pub fn merge_parts(name: &str, overrides: &BTreeMap<String, String>, quick: bool, parts: &[String]) -> Option<Result<RunOutput, ExperimentError>> {
    Some(SplitExperiment::resolve(name, overrides, quick)?.and_then(|(sweep, p)| {
        let runs = sweep.runs(&p)?;
        if parts.len() != runs.len() {
            return Err(ExperimentError::Input(format!("{name}: {} part results given, these parameters make {}", parts.len(), runs.len())));
        }
        let mut results = Vec::with_capacity(parts.len());
        for (i, (text, &(scheme, setting))) in parts.iter().zip(&runs).enumerate() {
            #[derive(Deserialize)]
            struct Part {
                part: String,
                result: SchemeResult,
            }
            let part: Part = serde_json::from_str(text).map_err(|e| ExperimentError::Input(format!("{name}: part {i}: not a part result ({e})")))?;
            let want = part_label(scheme, setting);
            if part.part != want || part.result.scheme != scheme {
                return Err(ExperimentError::Input(format!("{name}: part {i} is the result of '{}', expected '{want}'", part.part)));
            }
            results.push(part.result);
        }
        sweep.output(&p, &runs, &results)
    }))
}

pub fn all() -> Vec<Box<dyn Experiment>> {
    vec![Box::new(CACHESIZE), Box::new(ALIBABA), Box::new(MigrationExp), Box::new(HitsByLayer), Box::new(POD_BYTES), Box::new(GATEWAYS), Box::new(TOPOLOGY)]
}
