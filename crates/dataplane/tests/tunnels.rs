//! The host virtual switch: VM-to-VM traffic is encapsulated toward the destination server,
//! routed on the outer header, and decapsulated there; the wire size grows by the tunnel header.

use std::collections::HashMap;
use std::sync::Arc;

use innet_dataplane::fabric::{build_fabric, l3_switch};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_sim::host::{Host, HostConfig};
use innet_sim::metrics::DropReason;
use innet_sim::tcp::TcpConfig;
use innet_sim::topology::{Topology, TopologySpec};
use innet_sim::vswitch::{TunnelKind, TunnelVswitch};

const VM_BASE: u32 = 0xC0A8_0000; // 192.168.0.0/16: virtual addresses

fn run(kind: TunnelKind, dst_vm: u32) -> (u64, u64, Option<u64>) {
    let spec = TopologySpec::rack(2);
    let topo = Topology::build(&spec, &[]).unwrap();
    let hosts: Vec<u32> = topo
        .hosts
        .iter()
        .map(|&h| topo.nodes[h as usize].ip)
        .collect();
    // VM i lives on host i.
    let dir: Arc<HashMap<u32, u32>> =
        Arc::new((0..2).map(|i| (VM_BASE + i, hosts[i as usize])).collect());
    let flow = FlowSpec {
        src_host: 0,
        dst_host: 1,
        src_ip: VM_BASE,
        dst_ip: dst_vm,
        start_ps: 0,
        size_bytes: 1000,
        kind: FlowKind::Udp {
            payload_bytes: 1000,
            interval_ps: 0,
        },
    };
    let host_ids = topo.hosts.clone();
    let cfg = HostConfig {
        tcp: TcpConfig::default(),
        listen_all: true,
    };
    let mut f = build_fabric(topo, 1, cfg, vec![flow], l3_switch);
    for (i, &h) in host_ids.iter().enumerate() {
        let host = f.sim.node_mut::<Host>(h).unwrap();
        host.vswitch = Some(Box::new(TunnelVswitch::new(
            kind.clone(),
            dir.clone(),
            vec![VM_BASE + i as u32],
        )));
    }
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    let m = &f.sim.net.metrics;
    (
        m.delivered_packets,
        m.dropped_by(DropReason::Vswitch),
        m.flows[0].first_arrival_ps,
    )
}

#[test]
fn vm_traffic_is_tunnelled_and_pays_for_the_outer_header() {
    let (plain_delivered, _, plain) = {
        // Same path, no vswitch: addresses are the hosts' own.
        let topo = Topology::build(&TopologySpec::rack(2), &[]).unwrap();
        let flow = FlowSpec {
            src_host: 0,
            dst_host: 1,
            src_ip: 0,
            dst_ip: 0,
            start_ps: 0,
            size_bytes: 1000,
            kind: FlowKind::Udp {
                payload_bytes: 1000,
                interval_ps: 0,
            },
        };
        let cfg = HostConfig {
            tcp: TcpConfig::default(),
            listen_all: true,
        };
        let mut f = build_fabric(topo, 1, cfg, vec![flow], l3_switch);
        f.sim.run_until(u64::MAX, &mut |_| {});
        (
            f.sim.net.metrics.delivered_packets,
            0,
            f.sim.net.metrics.flows[0].first_arrival_ps,
        )
    };
    assert_eq!(plain_delivered, 1);
    for (kind, extra_bytes) in [
        (TunnelKind::IpInIp, 20u64),
        (
            TunnelKind::Udp {
                port: 667,
                entropy: false,
            },
            28,
        ),
        (TunnelKind::Geneve { vni: 5 }, 50),
    ] {
        let (delivered, vs_drops, arrival) = run(kind.clone(), VM_BASE + 1);
        assert_eq!((delivered, vs_drops), (1, 0), "{kind:?}");
        // Two serializations at 100 Gbps (80 ps per byte) of the extra bytes.
        assert_eq!(
            arrival.unwrap() - plain.unwrap(),
            2 * 80 * extra_bytes,
            "{kind:?}"
        );
    }
}

#[test]
fn unknown_virtual_destinations_are_dropped_by_the_vswitch() {
    let (delivered, vs_drops, _) = run(TunnelKind::IpInIp, VM_BASE + 77);
    assert_eq!((delivered, vs_drops), (0, 1));
}
