//! Turning a finished run's metrics into the standard summary entries and tables every
//! experiment shares: flow completion and first-packet latency statistics, packet fates,
//! per-switch and per-port counters.

use serde_json::{json, Map, Value};

use crate::engine::Simulator;
use innet_registry::{ColumnData, Table};
use crate::metrics::{mean, percentile, Conservation, DropReason};
use crate::time::ps_to_us;
use crate::topology::Topology;

/// Flow statistics over completed flows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FlowStats {
    pub flows: u64,
    pub completed: u64,
    pub fct_mean_us: f64,
    pub fct_p50_us: f64,
    pub fct_p99_us: f64,
    pub first_packet_latency_mean_us: f64,
    pub first_packet_latency_p99_us: f64,
}

pub fn flow_stats(sim: &Simulator) -> FlowStats {
    let flows = &sim.net.metrics.flows;
    let mut fct: Vec<f64> = flows.iter().filter_map(|f| f.fct_ps()).map(ps_to_us).collect();
    let mut fpl: Vec<f64> = flows.iter().filter_map(|f| f.first_packet_latency_ps()).map(ps_to_us).collect();
    fct.sort_by(f64::total_cmp);
    fpl.sort_by(f64::total_cmp);
    FlowStats {
        flows: flows.len() as u64,
        completed: fct.len() as u64,
        fct_mean_us: mean(&fct),
        fct_p50_us: percentile(&fct, 50.0),
        fct_p99_us: percentile(&fct, 99.0),
        first_packet_latency_mean_us: mean(&fpl),
        first_packet_latency_p99_us: percentile(&fpl, 99.0),
    }
}

/// Round to a fixed number of significant decimals so summaries print stably.
pub fn round6(x: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    (x * 1e6).round() / 1e6
}

/// The packet-fate entries of a summary: delivered, dropped (total and by reason), conservation.
pub fn packet_fates(sim: &Simulator, cons: &Conservation) -> Map<String, Value> {
    let m = &sim.net.metrics;
    let mut out = Map::new();
    out.insert("delivered_packets".into(), json!(m.delivered_packets));
    out.insert("dropped_packets".into(), json!(m.dropped_total()));
    let mut by = Map::new();
    for r in DropReason::ALL {
        let n = m.dropped_by(r);
        if n > 0 {
            by.insert(r.name().into(), json!(n));
        }
    }
    out.insert("drops_by_reason".into(), Value::Object(by));
    out.insert("created_packets".into(), json!(cons.created));
    out.insert("conservation_ok".into(), json!(cons.ok()));
    out.insert("mean_packet_latency_us".into(), json!(round6(m.mean_packet_latency_us())));
    out.insert("mean_packet_hops".into(), json!(round6(m.mean_packet_hops())));
    out
}

/// One row per flow.
pub fn flows_table(sim: &Simulator) -> Table {
    let f = &sim.net.metrics.flows;
    let opt_us = |v: Option<u64>| v.map(ps_to_us).unwrap_or(f64::NAN);
    Table::new("flows")
        .with("flow_id", ColumnData::U64(f.iter().map(|r| r.flow_id).collect()))
        .with("src_host", ColumnData::U64(f.iter().map(|r| r.src_host as u64).collect()))
        .with("dst_host", ColumnData::U64(f.iter().map(|r| r.dst_host as u64).collect()))
        .with("size_bytes", ColumnData::U64(f.iter().map(|r| r.size_bytes).collect()))
        .with("start_us", ColumnData::F64(f.iter().map(|r| ps_to_us(r.start_ps)).collect()))
        .with("fct_us", ColumnData::F64(f.iter().map(|r| opt_us(r.fct_ps())).collect()))
        .with(
            "first_packet_latency_us",
            ColumnData::F64(f.iter().map(|r| opt_us(r.first_packet_latency_ps())).collect()),
        )
        .with("completed", ColumnData::Bool(f.iter().map(|r| r.complete_ps.is_some()).collect()))
}

/// One row per switch: role, packets and bytes it received.
pub fn switches_table(sim: &Simulator, topo: &Topology) -> Table {
    let ids = &topo.switches;
    let m = &sim.net.metrics.nodes;
    Table::new("switches")
        .with("node", ColumnData::U64(ids.iter().map(|&n| n as u64).collect()))
        .with("name", ColumnData::Str(ids.iter().map(|&n| topo.nodes[n as usize].name.clone()).collect()))
        .with("role", ColumnData::Str(ids.iter().map(|&n| topo.nodes[n as usize].role.name().to_string()).collect()))
        .with("rx_packets", ColumnData::U64(ids.iter().map(|&n| m[n as usize].rx_packets).collect()))
        .with("rx_bytes", ColumnData::U64(ids.iter().map(|&n| m[n as usize].rx_bytes).collect()))
}

/// One row per port: traffic sent, drops, ECN marks and the deepest queue seen.
pub fn ports_table(sim: &Simulator) -> Table {
    let net = &sim.net;
    let pc = &net.metrics.ports;
    Table::new("ports")
        .with("node", ColumnData::U64(net.ports.iter().map(|p| p.node as u64).collect()))
        .with("node_name", ColumnData::Str(net.ports.iter().map(|p| net.nodes[p.node as usize].name.clone()).collect()))
        .with("port", ColumnData::U64(net.ports.iter().map(|p| p.local as u64).collect()))
        .with("tx_packets", ColumnData::U64(pc.iter().map(|c| c.tx_packets).collect()))
        .with("tx_bytes", ColumnData::U64(pc.iter().map(|c| c.tx_bytes).collect()))
        .with("drops", ColumnData::U64(pc.iter().map(|c| c.drops).collect()))
        .with("ecn_marks", ColumnData::U64(pc.iter().map(|c| c.ecn_marks).collect()))
        .with("max_queue_bytes", ColumnData::U64(pc.iter().map(|c| c.max_queue_bytes).collect()))
}

/// CPU seconds (user + system) the calling thread has used so far (Linux: `/proc/thread-self/stat`,
/// in clock ticks of 1/100 s), or None where that file is missing. A single-threaded run's loop
/// time per core: its wall time on a machine it shares counts other processes' turns too.
pub fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may hold spaces, so split after its closing paren):
    // state is the 3rd field, utime the 14th and stime the 15th.
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: f64 = f.next()?.parse().ok()?;
    let stime: f64 = f.next()?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
