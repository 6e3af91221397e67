//! Links and queues, end to end through a real switch: exact serialization and propagation
//! delays, store-and-forward pipelining, drop-tail overflow, ECN marking and conservation.

use innet_dataplane::fabric::{build_fabric, l3_switch};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_sim::host::HostConfig;
use innet_sim::metrics::DropReason;
use innet_sim::tcp::TcpConfig;
use innet_sim::topology::{Topology, TopologySpec};

fn udp(src: u32, dst: u32, start_ps: u64, packets: u64) -> FlowSpec {
    FlowSpec {
        src_host: src,
        dst_host: dst,
        src_ip: 0,
        dst_ip: 0,
        start_ps,
        size_bytes: packets * 1000,
        kind: FlowKind::Udp {
            payload_bytes: 1000,
            interval_ps: 0,
        },
    }
}

fn host_cfg() -> HostConfig {
    HostConfig {
        tcp: TcpConfig::default(),
        listen_all: true,
    }
}

// Frame: 14 Ethernet + 20 IPv4 + 8 UDP + 1000 payload + 4 FCS = 1046 B; on the wire +20 B
// preamble/IFG = 1066 B; at 100 Gbps a byte takes 80 ps.
const SER_100G_PS: u64 = 1066 * 80;
const DELAY_PS: u64 = 1_000_000;

#[test]
fn one_packet_takes_two_serializations_and_two_propagations() {
    let topo = Topology::build(&TopologySpec::rack(2), &[]).unwrap();
    let mut f = build_fabric(topo, 1, host_cfg(), vec![udp(0, 1, 0, 1)], l3_switch);
    f.sim.run_until(u64::MAX, &mut |_| {});
    let rec = f.sim.net.metrics.flows[0];
    assert_eq!(rec.first_arrival_ps, Some(2 * SER_100G_PS + 2 * DELAY_PS));
    assert_eq!(rec.complete_ps, rec.first_arrival_ps);
    assert!(f.sim.finish().ok());
    assert_eq!(f.sim.net.metrics.delivered_packets, 1);
    assert_eq!(f.sim.net.metrics.hops_sum, 1);
}

#[test]
fn a_line_rate_train_pipelines_through_store_and_forward() {
    let topo = Topology::build(&TopologySpec::rack(2), &[]).unwrap();
    let n = 10;
    let mut f = build_fabric(topo, 1, host_cfg(), vec![udp(0, 1, 5_000, n)], l3_switch);
    f.sim.run_until(u64::MAX, &mut |_| {});
    let rec = f.sim.net.metrics.flows[0];
    assert_eq!(
        rec.first_arrival_ps,
        Some(5_000 + 2 * SER_100G_PS + 2 * DELAY_PS)
    );
    assert_eq!(
        rec.complete_ps,
        Some(5_000 + (n + 1) * SER_100G_PS + 2 * DELAY_PS)
    );
    assert_eq!(rec.packets_received, n);
    assert!(f.sim.finish().ok());
}

#[test]
fn faster_fabric_links_serialize_faster() {
    // Two racks under one spine: host→ToR 100G, ToR→spine→ToR 400G (20 ps per byte).
    let spec = TopologySpec::leaf_spine(2, 1, 1);
    let topo = Topology::build(&spec, &[]).unwrap();
    let mut f = build_fabric(topo, 1, host_cfg(), vec![udp(0, 1, 0, 1)], l3_switch);
    f.sim.run_until(u64::MAX, &mut |_| {});
    let rec = f.sim.net.metrics.flows[0];
    let ser_400g = 1066 * 20;
    assert_eq!(
        rec.first_arrival_ps,
        Some(2 * SER_100G_PS + 2 * ser_400g + 4 * DELAY_PS)
    );
    assert_eq!(f.sim.net.metrics.hops_sum, 3);
}

#[test]
fn overflowing_a_small_buffer_drops_with_a_reason_and_conserves() {
    let mut spec = TopologySpec::rack(3);
    spec.switch_buffer_bytes = 20 * 1066;
    let topo = Topology::build(&spec, &[]).unwrap();
    // Two line-rate senders into one 100G port: half the excess must be dropped.
    let flows = vec![udp(0, 2, 0, 500), udp(1, 2, 0, 500)];
    let mut f = build_fabric(topo, 1, host_cfg(), flows, l3_switch);
    f.sim.run_until(u64::MAX, &mut |_| {});
    let c = f.sim.finish();
    assert!(c.ok(), "{c}");
    let m = &f.sim.net.metrics;
    let drops = m.dropped_by(DropReason::BufferOverflow);
    assert!(drops > 300 && drops < 700, "drops {drops}");
    assert_eq!(m.delivered_packets + drops, 1000);
    let port_drops: u64 = m.ports.iter().map(|p| p.drops).sum();
    assert_eq!(port_drops, drops);
}

#[test]
fn ecn_marks_only_ect_packets_above_the_threshold() {
    let mut spec = TopologySpec::rack(3);
    spec.ecn_threshold_bytes = Some(10 * 1066);
    let topo = Topology::build(&spec, &[]).unwrap();
    let flows = vec![udp(0, 2, 0, 200), udp(1, 2, 0, 200)];
    let mut f = build_fabric(topo, 1, host_cfg(), flows, l3_switch);
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    // UDP here is not ECN-capable: queues build but nothing is marked.
    let marks: u64 = f.sim.net.metrics.ports.iter().map(|p| p.ecn_marks).sum();
    assert_eq!(marks, 0);
    let maxq: u64 = f
        .sim
        .net
        .metrics
        .ports
        .iter()
        .map(|p| p.max_queue_bytes)
        .max()
        .unwrap();
    assert!(maxq > 10 * 1066);
}

#[test]
fn fat_tree_udp_all_delivered_and_conserved() {
    let topo = Topology::build(&TopologySpec::k_ary(4), &[]).unwrap();
    let flows: Vec<FlowSpec> = (0..16u32)
        .map(|i| udp(i, (i + 5) % 16, i as u64 * 1000, 50))
        .collect();
    let mut f = build_fabric(topo, 7, host_cfg(), flows, l3_switch);
    f.sim.run_until(u64::MAX, &mut |_| {});
    let c = f.sim.finish();
    assert!(c.ok(), "{c}");
    assert_eq!(f.sim.net.metrics.delivered_packets, 16 * 50);
    assert!(f
        .sim
        .net
        .metrics
        .flows
        .iter()
        .all(|r| r.complete_ps.is_some()));
    // Hops: 1 (same ToR), 3 (same pod) or 5 (across pods) switches.
    let mean = f.sim.net.metrics.mean_packet_hops();
    assert!((1.0..=5.0).contains(&mean));
}

#[test]
fn link_faults_lose_exactly_the_chosen_packets() {
    use innet_sim::network::LossModel;
    let topo = Topology::build(&TopologySpec::rack(2), &[]).unwrap();
    let mut f = build_fabric(topo, 1, host_cfg(), vec![udp(0, 1, 0, 10)], l3_switch);
    // Host 0's NIC is port 0 of node 1 (the switch is node 0).
    let nic = f.sim.net.port_id(1, 0);
    f.sim.net.set_loss(nic, Some(LossModel::Indices(vec![0, 4, 9])));
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    let m = &f.sim.net.metrics;
    assert_eq!(m.dropped_by(DropReason::LinkLoss), 3);
    assert_eq!(m.delivered_packets, 7);
    assert_eq!(
        m.flows[0].complete_ps, None,
        "a UDP flow with losses never completes"
    );
}

#[test]
fn a_tap_sees_each_packet_leave_and_arrive_at_every_node_once() {
    use innet_sim::network::{PacketTap, TapDirection};
    use std::sync::{Arc, Mutex};
    struct Count(Arc<Mutex<Vec<(u64, u32, u16, TapDirection, u64)>>>);
    impl PacketTap for Count {
        fn on_packet(
            &mut self,
            t: u64,
            node: u32,
            port: u16,
            dir: TapDirection,
            pkt: &innet_sim::packet::Packet,
        ) {
            self.0.lock().unwrap().push((t, node, port, dir, pkt.uid));
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let topo = Topology::build(&TopologySpec::rack(2), &[]).unwrap();
    let mut f = build_fabric(topo, 1, host_cfg(), vec![udp(0, 1, 0, 3)], l3_switch);
    f.sim.net.tap = Some(Box::new(Count(seen.clone())));
    f.sim.run_until(u64::MAX, &mut |_| {});
    let seen = seen.lock().unwrap();
    // Three packets, each: Tx at host 0, Rx at the switch, Tx at the switch, Rx at host 1.
    assert_eq!(seen.len(), 12);
    let at =
        |node: u32, dir: TapDirection| seen.iter().filter(|e| e.1 == node && e.3 == dir).count();
    assert_eq!(
        (
            at(1, TapDirection::Tx),
            at(0, TapDirection::Rx),
            at(0, TapDirection::Tx),
            at(2, TapDirection::Rx)
        ),
        (3, 3, 3, 3)
    );
    // The first packet reaches host 1 after two serializations and two propagation delays.
    let first_rx = seen.iter().find(|e| e.1 == 2).unwrap();
    assert_eq!(first_rx.0, 2 * SER_100G_PS + 2 * DELAY_PS);
}
