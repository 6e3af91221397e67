//! TCP end to end through the simulated fabric: transfers complete exactly, runs are
//! deterministic for a seed, a lost segment is recovered, and DCTCP keeps queues short where
//! Cubic fills them.

use innet_dataplane::fabric::{build_fabric, l3_switch, Fabric};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_sim::host::{Host, HostConfig};
use innet_sim::network::LossModel;
use innet_sim::tcp::{CongestionControl, TcpConfig};
use innet_sim::time::PS_PER_MS;
use innet_sim::topology::{Topology, TopologySpec};

fn tcp_flow(src: u32, dst: u32, start_ps: u64, size: u64) -> FlowSpec {
    FlowSpec {
        src_host: src,
        dst_host: dst,
        src_ip: 0,
        dst_ip: 0,
        start_ps,
        size_bytes: size,
        kind: FlowKind::Tcp,
    }
}

fn cfg(cc: CongestionControl, ecn: bool) -> HostConfig {
    let mut tcp = TcpConfig::default();
    tcp.mss_bytes = 1000;
    tcp.min_rto_ps = PS_PER_MS;
    tcp.congestion_control = cc;
    tcp.ecn = ecn;
    HostConfig {
        tcp,
        listen_all: true,
    }
}

fn run(
    spec: TopologySpec,
    flows: Vec<FlowSpec>,
    host_cfg: HostConfig,
    seed: u64,
    tweak: impl FnOnce(&mut Fabric),
) -> Fabric {
    let topo = Topology::build(&spec, &[]).unwrap();
    let mut f = build_fabric(topo, seed, host_cfg, flows, l3_switch);
    tweak(&mut f);
    f.sim.run_until(10_000 * PS_PER_MS, &mut |_| {});
    let c = f.sim.finish();
    assert!(c.ok(), "{c}");
    f
}

fn fat_tree_flows() -> Vec<FlowSpec> {
    (0..16u32)
        .map(|i| {
            tcp_flow(
                i,
                (i * 7 + 3) % 16,
                i as u64 * 3_000_000,
                20_000 + 37_000 * i as u64,
            )
        })
        .collect()
}

#[test]
fn every_transfer_completes_no_faster_than_the_line_allows() {
    let f = run(
        TopologySpec::k_ary(4),
        fat_tree_flows(),
        cfg(CongestionControl::cubic(), false),
        1,
        |_| {},
    );
    for (r, s) in f.sim.net.metrics.flows.iter().zip(fat_tree_flows()) {
        let fct = r.fct_ps().expect("flow completed");
        // At least: the bytes at 100 Gbps, plus one RTT for the handshake.
        let min = s.size_bytes * 8 * 1_000_000_000_000 / 100_000_000_000 + 4_000_000;
        assert!(fct > min, "flow {} fct {fct} < {min}", r.flow_id);
    }
    let failed: u64 = f
        .topo
        .hosts
        .iter()
        .map(|&h| f.sim.node::<Host>(h).unwrap().stats.tcp_failed)
        .sum();
    assert_eq!(failed, 0);
    // Connections are torn down at both ends.
    let open: usize = f
        .topo
        .hosts
        .iter()
        .map(|&h| f.sim.node::<Host>(h).unwrap().open_connections())
        .sum();
    assert_eq!(open, 0);
}

#[test]
fn same_seed_same_run_other_seed_other_paths() {
    let a = run(
        TopologySpec::k_ary(4),
        fat_tree_flows(),
        cfg(CongestionControl::cubic(), false),
        5,
        |_| {},
    );
    let b = run(
        TopologySpec::k_ary(4),
        fat_tree_flows(),
        cfg(CongestionControl::cubic(), false),
        5,
        |_| {},
    );
    assert_eq!(a.sim.net.metrics.flows, b.sim.net.metrics.flows);
    assert_eq!(a.sim.net.events_processed(), b.sim.net.events_processed());
    let c = run(
        TopologySpec::k_ary(4),
        fat_tree_flows(),
        cfg(CongestionControl::cubic(), false),
        6,
        |_| {},
    );
    let ports = |f: &Fabric| {
        f.sim
            .net
            .metrics
            .ports
            .iter()
            .map(|p| p.tx_packets)
            .collect::<Vec<_>>()
    };
    assert_ne!(
        ports(&a),
        ports(&c),
        "ECMP seeds differ, so per-port counts should too"
    );
}

#[test]
fn a_lost_segment_is_retransmitted_and_the_flow_completes() {
    let flows = vec![tcp_flow(0, 1, 0, 200_000)];
    let f = run(
        TopologySpec::rack(2),
        flows,
        cfg(CongestionControl::cubic(), false),
        1,
        |f| {
            let nic = f.sim.net.port_id(1, 0);
            // Packet 0 is the SYN, 1 the handshake ACK (or first data); lose a data segment.
            f.sim.net.set_loss(nic, Some(LossModel::Indices(vec![20])));
        },
    );
    let rec = f.sim.net.metrics.flows[0];
    assert!(rec.complete_ps.is_some());
    let h = f.sim.node::<Host>(f.topo.hosts[0]).unwrap();
    assert!(h.stats.retransmits >= 1, "no retransmission recorded");
    assert_eq!(
        f.sim
            .net
            .metrics
            .dropped_by(innet_sim::metrics::DropReason::LinkLoss),
        1
    );
}

#[test]
fn dctcp_keeps_the_incast_queue_near_the_marking_threshold() {
    let threshold = 30 * 1060;
    let flows: Vec<FlowSpec> = (1..9u32).map(|i| tcp_flow(i, 0, 0, 2_000_000)).collect();
    let mut spec = TopologySpec::rack(9);
    spec.ecn_threshold_bytes = Some(threshold);
    let dctcp = run(
        spec.clone(),
        flows.clone(),
        cfg(CongestionControl::dctcp(), true),
        1,
        |_| {},
    );
    let cubic = run(
        spec,
        flows,
        cfg(CongestionControl::cubic(), false),
        1,
        |_| {},
    );
    let maxq = |f: &Fabric| {
        f.sim
            .net
            .metrics
            .ports
            .iter()
            .map(|p| p.max_queue_bytes)
            .max()
            .unwrap()
    };
    let marks: u64 = dctcp
        .sim
        .net
        .metrics
        .ports
        .iter()
        .map(|p| p.ecn_marks)
        .sum();
    assert!(marks > 0, "DCTCP traffic must be marked");
    assert!(
        maxq(&dctcp) < maxq(&cubic),
        "dctcp {} cubic {}",
        maxq(&dctcp),
        maxq(&cubic)
    );
    assert!(dctcp
        .sim
        .net
        .metrics
        .flows
        .iter()
        .all(|r| r.complete_ps.is_some()));
}

#[test]
fn rpc_completes_when_the_whole_response_is_back() {
    let flows = vec![FlowSpec {
        src_host: 0,
        dst_host: 1,
        src_ip: 0,
        dst_ip: 0,
        start_ps: 0,
        size_bytes: 300,
        kind: FlowKind::Rpc {
            response_bytes: 50_000,
        },
    }];
    let f = run(
        TopologySpec::rack(2),
        flows,
        cfg(CongestionControl::cubic(), false),
        1,
        |_| {},
    );
    let rec = f.sim.net.metrics.flows[0];
    let done = rec.complete_ps.expect("rpc completed");
    // Handshake (1 RTT of 4 µs), request + 10 segments, then slow start 20 and 20: 4 RTTs at
    // least, and far less than a retransmission timeout.
    assert!(done > 4 * 4_000_000 && done < 100_000_000, "{done}");
    let client = f.sim.node::<Host>(f.topo.hosts[0]).unwrap();
    let server = f.sim.node::<Host>(f.topo.hosts[1]).unwrap();
    assert_eq!(
        (client.open_connections(), server.open_connections()),
        (0, 0)
    );
}

/// Every packet's passage through every node, in order: (time, node, port, direction, uid).
type Trace = std::rc::Rc<std::cell::RefCell<Vec<(u64, u32, u16, bool, u64)>>>;

struct Recorder(Trace);

impl innet_sim::network::PacketTap for Recorder {
    fn on_packet(
        &mut self,
        time_ps: u64,
        node: u32,
        port: u16,
        dir: innet_sim::network::TapDirection,
        pkt: &innet_sim::packet::Packet,
    ) {
        let tx = dir == innet_sim::network::TapDirection::Tx;
        self.0.borrow_mut().push((time_ps, node, port, tx, pkt.uid));
    }
}

/// Deferring switch ports' TxDone events (the engine's default) is invisible: the same packets
/// pass the same nodes at the same times, and the run counts the same events, as when every
/// TxDone is scheduled; also across runs stopped and resumed at arbitrary times, with TCP
/// and line-rate UDP sharing congested ports.
#[test]
fn deferred_tx_done_changes_nothing() {
    let mut flows = fat_tree_flows();
    for i in 0..8u32 {
        flows.push(FlowSpec {
            kind: FlowKind::Udp {
                payload_bytes: 1000,
                interval_ps: 0,
            },
            ..tcp_flow(i, 15 - i, i as u64 * 5_000_000, 150_000)
        });
    }
    let go = |defer: bool| {
        let topo = Topology::build(&TopologySpec::k_ary(4), &[]).unwrap();
        let mut f = build_fabric(
            topo,
            3,
            cfg(CongestionControl::cubic(), false),
            flows.clone(),
            l3_switch,
        );
        f.sim.net.defer_tx_done = defer;
        let trace = Trace::default();
        f.sim.net.tap = Some(Box::new(Recorder(trace.clone())));
        let mut events_at_stops = Vec::new();
        for stop in [7_777_777u64, 20_000_000, 20_000_001, 61_234_567, 10_000 * PS_PER_MS] {
            f.sim.run_until(stop, &mut |_| {});
            events_at_stops.push((f.sim.net.events_processed(), f.sim.net.pending_events()));
        }
        let c = f.sim.finish();
        assert!(c.ok(), "{c}");
        let ports: Vec<(u64, u64, u64)> = f
            .sim
            .net
            .metrics
            .ports
            .iter()
            .map(|p| (p.tx_packets, p.max_queue_bytes, p.drops))
            .collect();
        let t = trace.borrow().clone();
        (t, events_at_stops, ports, f.sim.net.metrics.flows.clone())
    };
    let (deferred, eager) = (go(true), go(false));
    assert!(deferred.0.len() > 10_000, "a busy run: {} passages", deferred.0.len());
    assert_eq!(deferred.1, eager.1, "events handled and pending at each stop");
    assert!(deferred.0 == eager.0, "packet passages differ");
    assert_eq!(deferred.2, eager.2);
    assert_eq!(deferred.3, eager.3);
}

/// A bulk sender writes its bytes and closes (ns-3's BulkSend, the SwitchV2P artifact's
/// TcpClientApp): the FIN follows the last data segment and the receiver acknowledges it at
/// once, so an odd last segment is not left waiting for a delayed ACK. With a delayed-ACK
/// timeout (200 ms) longer than the minimum RTO (10 ms: the artifact's settings), waiting for
/// the data's ACK before closing made every single-segment flow retransmit after 10 ms.
#[test]
fn a_bulk_senders_fin_follows_its_data_so_an_odd_last_segment_is_not_retransmitted() {
    let mut host_cfg = cfg(CongestionControl::cubic(), false);
    host_cfg.tcp.min_rto_ps = 10 * PS_PER_MS;
    host_cfg.tcp.delayed_ack_count = 2;
    host_cfg.tcp.delayed_ack_timeout_ps = 200 * PS_PER_MS;
    for size in [300u64, 2_500] {
        let f = run(TopologySpec::rack(2), vec![tcp_flow(0, 1, 0, size)], host_cfg.clone(), 1, |_| {});
        let rec = f.sim.net.metrics.flows[0];
        assert!(rec.complete_ps.is_some_and(|t| t < PS_PER_MS), "{size} B: not delivered within 1 ms");
        for h in [0, 1] {
            let host = f.sim.node::<Host>(f.topo.hosts[h]).unwrap();
            assert_eq!(host.stats.retransmits, 0, "{size} B: host {h} retransmitted");
        }
        // SYN, SYN-ACK, the data segments (the last carrying the FIN), their ACKs, the
        // receiver's FIN and its ACK: nothing sent twice.
        let segments = size.div_ceil(1000);
        assert!(f.sim.net.metrics.delivered_packets <= 4 + 2 * segments, "{size} B: {} packets", f.sim.net.metrics.delivered_packets);
    }
}
