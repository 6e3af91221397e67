//! `innet bench sim`: fixed simulator scenarios (or a given htsim connection-matrix flow list)
//! timed on the wall clock, reporting events and packet-hops per second, delivered packets and
//! peak memory. The same flow list drives ns-3 (bench/ns3/) for a side-by-side ratio.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use innet_dataplane::fabric::{build_fabric, l3_switch, Fabric};
use innet_sim::apps::FlowKind;
use innet_registry::ExperimentError;
use innet_sim::host::HostConfig;
use innet_sim::report::thread_cpu_s;
use innet_sim::topology::{Topology, TopologySpec};
use serde_json::{json, Map, Value};

use innet_sim::tcp::tcp_config;

#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// An htsim connection-matrix flow list; when absent a built-in one is generated.
    pub flows_path: Option<PathBuf>,
    /// "fattree", "leafspine" or "rack".
    pub topology: String,
    /// Fat-tree arity (k-ary fat-tree); leaf-spine leaves; rack hosts.
    pub k: u32,
    /// "udp" or "tcp".
    pub transport: String,
    /// Named scenario instead of the above: "ft8-udp", "ft8-tcp", "ft4-udp", "ft4-tcp",
    /// "ft16-1m" (FT16-400K with 1,000,000 small UDP flows: the memory check), or one of the
    /// runs reproductions are made of (`basic.fattree`, TCP, Hadoop flows, L3 switches):
    /// "ft8-tcp-hadoop" (its defaults: FT8-10K, 100,000 flows) and "ft16-tcp-hadoop" (FT16-400K).
    pub scenario: Option<String>,
    /// A named scenario's flow count instead of its own: its reduced form for profiling (same
    /// topology, load and flow sizes, so the same arrival rate over a shorter time).
    pub scenario_flows: Option<usize>,
    /// Flows for the generated list (when no file is given).
    pub flows: usize,
    pub seed: u64,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            flows_path: None,
            topology: "fattree".into(),
            k: 8,
            transport: "udp".into(),
            scenario: None,
            scenario_flows: None,
            flows: 1000,
            seed: 1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BenchReport {
    pub fields: Map<String, Value>,
}


fn proc_status_mib(field: &str) -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Peak resident set size of this process in MiB (Linux), if known.
pub fn peak_rss_mib() -> Option<f64> {
    proc_status_mib("VmHWM:")
}

/// Current resident set size of this process in MiB (Linux), if known.
pub fn rss_mib() -> Option<f64> {
    proc_status_mib("VmRSS:")
}

/// `basic.fattree` parameters of the TCP scenarios (None for the others).
fn fattree_scenario(name: &str) -> Option<BTreeMap<String, String>> {
    let set = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    match name {
        "ft8-tcp-hadoop" => Some(set(&[])),
        // FT16-400K's network (SwitchV2P's Fig. 6) under the same workload; 10,000 flows
        // at 30% load (about 20 s of CPU on the project machine).
        "ft16-tcp-hadoop" => Some(set(&[
            ("pods", "50"),
            ("tors_per_pod", "8"),
            ("servers_per_tor", "32"),
            ("spines_per_pod", "8"),
            ("cores", "16"),
            ("flows", FT16_TCP_FLOWS),
        ])),
        _ => None,
    }
}

const FT16_TCP_FLOWS: &str = "10000";
/// `ft16-1m`'s flows: at 30 % load they all start within ~52 µs.
const FT16_1M_FLOWS: usize = 1_000_000;

/// One of the `basic.fattree` scenarios, timed.
fn bench_fattree(name: &str, overrides: &BTreeMap<String, String>) -> Result<BenchReport, ExperimentError> {
    let p = crate::fattree::params(overrides, false)?;
    let rss_before = rss_mib();
    let t0 = Instant::now();
    let crate::fattree::Built { mut fabric, .. } = crate::fattree::build(&p)?;
    let t_build = t0.elapsed().as_secs_f64();
    let n_flows = fabric.sim.net.metrics.flows.len();
    let (t1, cpu0) = (Instant::now(), thread_cpu_s());
    fabric.sim.run_until(p.stop_ps(), &mut |_| {});
    let wall = t1.elapsed().as_secs_f64();
    let cpu = thread_cpu_s().zip(cpu0).map(|(b, a)| b - a);
    let topology = if p.pods == 50 { "ft16-400k" } else { "ft8-10k" };
    Ok(report(&mut fabric, Timing { topology, k: p.pods, transport: &p.transport, n_flows, t_build, wall, cpu, rss_before }, name))
}

/// What a scenario was and how long it took.
struct Timing<'a> {
    topology: &'a str,
    k: u32,
    transport: &'a str,
    n_flows: usize,
    t_build: f64,
    wall: f64,
    /// CPU seconds of the loop (this thread's), if known.
    cpu: Option<f64>,
    rss_before: Option<f64>,
}

fn report(fabric: &mut Fabric, t: Timing<'_>, scenario: &str) -> BenchReport {
    let cons = fabric.sim.finish();
    let m = &fabric.sim.net.metrics;
    let events = fabric.sim.net.events_processed();
    let mut f = Map::new();
    f.insert("simulator".into(), json!("innet"));
    if !scenario.is_empty() {
        f.insert("scenario".into(), json!(scenario));
    }
    f.insert("topology".into(), json!(t.topology));
    f.insert("k".into(), json!(t.k));
    f.insert("transport".into(), json!(t.transport));
    f.insert("flows".into(), json!(t.n_flows));
    f.insert("delivered_packets".into(), json!(m.delivered_packets));
    f.insert("data_packets_completed_flows".into(), json!(m.flows.iter().filter(|r| r.complete_ps.is_some()).count()));
    f.insert("dropped_packets".into(), json!(m.dropped_total()));
    f.insert("packet_hops".into(), json!(m.hops_sum));
    f.insert("events".into(), json!(events));
    f.insert("build_s".into(), json!(t.t_build));
    f.insert("wall_s".into(), json!(t.wall));
    f.insert("loop_cpu_s".into(), json!(t.cpu));
    f.insert("events_per_s".into(), json!(events as f64 / t.wall));
    f.insert("packet_hops_per_s".into(), json!(m.hops_sum as f64 / t.wall));
    f.insert("delivered_packets_per_s".into(), json!(m.delivered_packets as f64 / t.wall));
    f.insert("sim_time_s".into(), json!(m.last_delivery_ps as f64 / 1e12));
    f.insert("conservation_ok".into(), json!(cons.ok()));
    f.insert("peak_rss_mib".into(), json!(peak_rss_mib()));
    // What the process held before the simulation was built (e.g. the Python interpreter).
    f.insert("rss_before_mib".into(), json!(t.rss_before));
    BenchReport { fields: f }
}

pub fn bench_sim(opts: &BenchOptions) -> Result<BenchReport, ExperimentError> {
    if let Some((name, mut overrides)) = opts.scenario.as_deref().and_then(|s| Some((s, fattree_scenario(s)?))) {
        if let Some(n) = opts.scenario_flows {
            overrides.insert("flows".into(), n.to_string());
        }
        return bench_fattree(name, &overrides);
    }
    let mut o = opts.clone();
    let mut ft16 = false;
    if let Some(s) = &opts.scenario {
        let (k, t) = match s.as_str() {
            "ft8-udp" => (8, "udp"),
            "ft8-tcp" => (8, "tcp"),
            "ft4-udp" => (4, "udp"),
            "ft4-tcp" => (4, "tcp"),
            "ft16-1m" => {
                ft16 = true;
                (16, "udp")
            }
            other => {
                return Err(ExperimentError::bad_param("scenario", other, "ft8-udp, ft8-tcp, ft4-udp, ft4-tcp, ft16-1m, ft8-tcp-hadoop or ft16-tcp-hadoop"))
            }
        };
        o.topology = if ft16 { "ft16-400k".into() } else { "fattree".into() };
        o.k = k;
        o.transport = t.into();
        o.flows = opts.scenario_flows.unwrap_or(if ft16 { FT16_1M_FLOWS } else { o.flows });
    }
    let spec = match o.topology.as_str() {
        _ if ft16 => TopologySpec::ft16_400k(),
        "fattree" => {
            if o.k < 2 || o.k % 2 != 0 {
                return Err(ExperimentError::param("k", format!("a k-ary fat-tree needs an even k >= 2, got {}", o.k)));
            }
            TopologySpec::k_ary(o.k)
        }
        "leafspine" => TopologySpec::leaf_spine(o.k.max(1), (o.k / 2).max(1), 8),
        "rack" => TopologySpec::rack(o.k.max(2)),
        other => return Err(ExperimentError::bad_param("topology", other, "fattree, leafspine or rack")),
    };
    let topo = Topology::build(&spec, &[])?;
    let servers = topo.num_servers;
    let raw = match &o.flows_path {
        Some(path) => {
            let m = innet_workloads::htsim::read_file(path).map_err(|e| ExperimentError::Input(e.to_string()))?;
            if m.nodes > servers {
                return Err(ExperimentError::Input(format!(
                    "{}: the flow list has {} nodes but the topology has {} servers",
                    path.display(),
                    m.nodes,
                    servers
                )));
            }
            m.flows
        }
        None if ft16 => innet_workloads::uniform_size_flows(servers, 100_000_000_000, 0.3, o.flows, 1_000, 4_000, o.seed)
            .map_err(|m| ExperimentError::param("flows", m))?,
        None => innet_workloads::uniform_size_flows(servers, 100_000_000_000, 0.5, o.flows, 500_000, 1_500_000, o.seed)
            .map_err(|m| ExperimentError::param("flows", m))?,
    };
    let kind = match o.transport.as_str() {
        "udp" => FlowKind::Udp { payload_bytes: 1000, interval_ps: 0 },
        "tcp" => FlowKind::Tcp,
        other => return Err(ExperimentError::bad_param("transport", other, "udp or tcp")),
    };
    let flows = crate::flow_specs(&raw, kind);
    let n_flows = flows.len();
    let host_cfg = HostConfig { tcp: tcp_config("ns3", "cubic", "profile")?, listen_all: true };
    let rss_before = rss_mib();
    let t0 = Instant::now();
    let mut fabric = build_fabric(topo, o.seed, host_cfg, flows, l3_switch);
    let t_build = t0.elapsed().as_secs_f64();
    let (t1, cpu0) = (Instant::now(), thread_cpu_s());
    fabric.sim.run_until(u64::MAX, &mut |_| {});
    let wall = t1.elapsed().as_secs_f64();
    let cpu = thread_cpu_s().zip(cpu0).map(|(b, a)| b - a);
    let timing = Timing { topology: &o.topology, k: o.k, transport: &o.transport, n_flows, t_build, wall, cpu, rss_before };
    Ok(report(&mut fabric, timing, ""))
}
