//! `basic.fattree`: FT8-10K (or any fat-tree) with plain L3 switches under a trace-driven
//! workload — Hadoop or WebSearch flow sizes, Poisson arrivals at a load fraction of the total
//! host bandwidth, uniformly random server pairs, one TCP (or UDP) flow per row.

use std::collections::BTreeMap;

use innet_dataplane::fabric::{build_fabric, l3_switch, Fabric};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_registry::{
    Declaration, Experiment, ExperimentError, ExperimentInfo, List, ParamSpec, Progress, RunOutput,
};
use innet_sim::host::HostConfig;
use innet_sim::pcap_tap::PcapTap;
use innet_sim::report::{flow_stats, flows_table, packet_fates, ports_table, round6, switches_table};
use innet_sim::time::{ps_to_us, PS_PER_MS};
use innet_sim::topology::{Topology, TopologySpec};
use serde::Deserialize;
use serde_json::json;

use innet_sim::tcp::tcp_config;

pub struct BasicFattree;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub pods: u32,
    pub tors_per_pod: u32,
    pub servers_per_tor: u32,
    pub spines_per_pod: u32,
    pub cores: u32,
    pub host_link_gbps: f64,
    pub fabric_link_gbps: f64,
    pub link_delay_ns: u64,
    pub switch_buffer_bytes: u64,
    pub ecn_threshold_bytes: u64,
    pub trace: String,
    pub load: f64,
    pub flows: u64,
    pub transport: String,
    pub congestion_control: String,
    pub tcp_profile: String,
    pub hystart: String,
    pub udp_payload_bytes: u32,
    pub stop_ms: f64,
    pub seed: u64,
    pub pcap_nodes: List<String>,
    pub pcap_file: String,
    pub pcap_snaplen: u32,
}

const FATTREE: Declaration = Declaration::new(
    "basic.fattree",
    "FT8-10K with plain L3 switches: Hadoop/WebSearch flows, Poisson arrivals, FCT and first-packet latency",
    &[&[
        ParamSpec::new("pods", "8", "fat-tree pods"),
        ParamSpec::new("tors_per_pod", "4", "ToRs per pod"),
        ParamSpec::new("servers_per_tor", "4", "servers per ToR"),
        ParamSpec::new("spines_per_pod", "4", "spines per pod (each reaches cores/spines_per_pod cores)"),
        ParamSpec::new("cores", "16", "core switches"),
        ParamSpec::new("host_link_gbps", "100.0", "host-ToR link bandwidth"),
        ParamSpec::new("fabric_link_gbps", "400.0", "switch-switch link bandwidth"),
        ParamSpec::new("link_delay_ns", "1000", "propagation delay of every link"),
        ParamSpec::new("switch_buffer_bytes", "33554432", "shared buffer per switch (32 MiB)"),
        ParamSpec::new("ecn_threshold_bytes", "0", "ECN marking threshold per port; 0 = no marking"),
        ParamSpec::new("trace", "\"hadoop\"", "flow-size distribution: hadoop or websearch"),
        ParamSpec::new("load", "0.3", "offered load as a fraction of total host bandwidth"),
        ParamSpec::new("flows", "100000", "number of flows"),
        ParamSpec::new("transport", "\"tcp\"", "tcp or udp"),
        ParamSpec::new("congestion_control", "\"cubic\"", "cubic, dctcp or newreno"),
        ParamSpec::new("tcp_profile", "\"switchv2p\"", "switchv2p (the paper's ns-3 settings) or datacenter"),
        ParamSpec::new("hystart", "\"profile\"", "CUBIC's slow-start exit: profile (the profile's: rfc9406 today), rfc9406, ns3 (ns-3.36's HyStart) or off"),
        ParamSpec::new("udp_payload_bytes", "1000", "UDP payload per packet when transport = udp"),
        ParamSpec::new("stop_ms", "2000.0", "simulated-time limit; flows unfinished by then count as incomplete"),
        ParamSpec::new("seed", "1", "seed of every random choice"),
        ParamSpec::new("pcap_nodes", "\"\"", "comma-separated node names (e.g. host0,tor0.0,core3) whose traffic to capture"),
        ParamSpec::new("pcap_file", "\"capture.pcap\"", "where the capture of pcap_nodes is written"),
        ParamSpec::new("pcap_snaplen", "128", "bytes kept of each captured frame"),
]],
)
.quick(&[("flows", "2000")]);

impl Params {
    fn topology(&self) -> TopologySpec {
        let mut t = TopologySpec::fattree(self.pods, self.tors_per_pod, self.servers_per_tor, self.spines_per_pod, self.cores);
        t.host_link_gbps = self.host_link_gbps;
        t.fabric_link_gbps = self.fabric_link_gbps;
        t.link_delay_ns = self.link_delay_ns;
        t.switch_buffer_bytes = self.switch_buffer_bytes;
        t.ecn_threshold_bytes = (self.ecn_threshold_bytes > 0).then_some(self.ecn_threshold_bytes);
        t
    }

    fn check(&self) -> Result<(), ExperimentError> {
        if !(self.load > 0.0 && self.load <= 1.0) {
            return Err(ExperimentError::bad_param("load", self.load, "a fraction in (0, 1]"));
        }
        if self.flows == 0 {
            return Err(ExperimentError::bad_param("flows", self.flows, "at least 1"));
        }
        if !matches!(self.transport.as_str(), "tcp" | "udp") {
            return Err(ExperimentError::bad_param("transport", &self.transport, "tcp or udp"));
        }
        if self.udp_payload_bytes == 0 || self.udp_payload_bytes > 1472 {
            return Err(ExperimentError::bad_param("udp_payload_bytes", self.udp_payload_bytes, "1..=1472"));
        }
        if !(self.stop_ms > 0.0) {
            return Err(ExperimentError::bad_param("stop_ms", self.stop_ms, "a positive time"));
        }
        Ok(())
    }
}

/// The experiment's parameters: defaults, the quick form if asked, then `overrides`; checked.
pub fn params(overrides: &BTreeMap<String, String>, quick: bool) -> Result<Params, ExperimentError> {
    let p: Params = FATTREE.resolve(overrides, quick)?;
    p.check()?;
    Ok(p)
}

/// A fabric ready to run, and when its last flow starts.
pub struct Built {
    pub fabric: Fabric,
    pub last_start_ps: u64,
}

/// The network, hosts and flows of a run with parameters `p` (the experiment and `innet bench
/// sim`'s fat-tree scenarios build it the same way).
pub fn build(p: &Params) -> Result<Built, ExperimentError> {
    let topo = Topology::build(&p.topology(), &[])?;
    let flows = generate_flows(p, topo.num_servers)?;
    let last_start_ps = flows.iter().map(|f| f.start_ps).max().unwrap_or(0);
    let host_cfg = HostConfig { tcp: tcp_config(&p.tcp_profile, &p.congestion_control, &p.hystart)?, listen_all: true };
    Ok(Built { fabric: build_fabric(topo, p.seed, host_cfg, flows, l3_switch), last_start_ps })
}

impl Params {
    /// The simulated-time limit in picoseconds.
    pub fn stop_ps(&self) -> u64 {
        (self.stop_ms * PS_PER_MS as f64) as u64
    }
}

/// Node ids for a comma-separated list of node names; unknown names are an error listing examples.
fn node_ids(topo: &Topology, names: &[String]) -> Result<Vec<u32>, ExperimentError> {
    names
        .iter()
        .map(|name| {
            topo.nodes.iter().position(|n| &n.name == name).map(|i| i as u32).ok_or_else(|| {
                ExperimentError::bad_param("pcap_nodes", name, "node names like host0, tor0.0, spine1.2, core3")
            })
        })
        .collect()
}

/// Trace-driven flows between servers of `topo` per the parameters.
pub fn generate_flows(p: &Params, num_servers: u32) -> Result<Vec<FlowSpec>, ExperimentError> {
    let cdf = innet_workloads::cdf_by_name(&p.trace).map_err(|m| ExperimentError::param("trace", m))?;
    let host_bps = (p.host_link_gbps * 1e9) as u64;
    let flows = innet_workloads::poisson_flows(&cdf, num_servers, host_bps, p.load, p.flows as usize, p.seed)
        .map_err(|m| ExperimentError::param("load", m))?;
    let kind = if p.transport == "udp" {
        FlowKind::Udp { payload_bytes: p.udp_payload_bytes, interval_ps: 0 }
    } else {
        FlowKind::Tcp
    };
    Ok(crate::flow_specs(&flows, kind))
}

impl Experiment for BasicFattree {
    fn info(&self) -> ExperimentInfo {
        FATTREE.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p = params(overrides, quick)?;
        let Built { mut fabric, last_start_ps } = build(&p)?;
        let capture = !p.pcap_nodes.is_empty();
        if capture {
            let nodes = node_ids(&fabric.topo, &p.pcap_nodes)?;
            let tap = PcapTap::create(&fabric.sim.net, &nodes, &p.pcap_file, p.pcap_snaplen.max(64))
                .map_err(|m| ExperimentError::param("pcap_file", m))?;
            fabric.sim.net.tap = Some(Box::new(tap));
        }
        let stop_ps = p.stop_ps();
        // Progress: flow starts dominate early; report simulated time against the last start.
        let horizon = last_start_ps.max(1) as f64 * 1.2;
        fabric.sim.run_until(stop_ps, &mut |now| progress((now as f64 / horizon).min(0.99)));
        let cons = fabric.sim.finish();
        let capture_note = match fabric.sim.net.tap.as_mut().map(|t| t.finish()) {
            Some(Err(e)) => return Err(ExperimentError::Input(e)),
            Some(Ok(note)) => Some(note),
            None => None,
        };
        if !cons.ok() {
            return Err(ExperimentError::Invariant(format!("packet conservation failed: {cons}")));
        }
        progress(1.0);
        let stats = flow_stats(&fabric.sim);
        let mut s = serde_json::Map::new();
        s.insert("experiment".into(), json!("basic.fattree"));
        s.insert("seed".into(), json!(p.seed));
        s.insert("flows".into(), json!(stats.flows));
        s.insert("completed_flows".into(), json!(stats.completed));
        s.insert("fct_mean_us".into(), json!(round6(stats.fct_mean_us)));
        s.insert("fct_p50_us".into(), json!(round6(stats.fct_p50_us)));
        s.insert("fct_p99_us".into(), json!(round6(stats.fct_p99_us)));
        s.insert("first_packet_latency_mean_us".into(), json!(round6(stats.first_packet_latency_mean_us)));
        s.insert("first_packet_latency_p99_us".into(), json!(round6(stats.first_packet_latency_p99_us)));
        for (k, v) in packet_fates(&fabric.sim, &cons) {
            s.insert(k, v);
        }
        s.insert("last_delivery_us".into(), json!(round6(ps_to_us(fabric.sim.net.metrics.last_delivery_ps))));
        s.insert("events".into(), json!(fabric.sim.net.events_processed()));
        let hosts = fabric.topo.hosts.iter().filter_map(|&h| fabric.sim.node::<innet_sim::host::Host>(h));
        let (mut retx, mut rto, mut failed) = (0, 0, 0);
        for h in hosts {
            retx += h.stats.retransmits;
            rto += h.stats.timeouts;
            failed += h.stats.tcp_failed;
        }
        s.insert("tcp_retransmits".into(), json!(retx));
        s.insert("tcp_timeouts".into(), json!(rto));
        s.insert("tcp_failed_connections".into(), json!(failed));
        s.insert("offered_load".into(), json!(p.load));
        s.insert("trace".into(), json!(p.trace));
        s.insert("transport".into(), json!(p.transport));
        if let Some(note) = capture_note.filter(|_| capture) {
            s.insert("pcap".into(), json!(note));
        }
        let tables = vec![flows_table(&fabric.sim), switches_table(&fabric.sim, &fabric.topo), ports_table(&fabric.sim)];
        Ok(RunOutput { summary: s, tables })
    }
}
