//! pcap export: a simulated TCP transfer captured at a host is a valid capture whose every
//! frame parses with correct checksums and lengths, and which Debian's tshark decodes.

use std::process::Command;

use innet_dataplane::fabric::{build_fabric, l3_switch};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_sim::host::HostConfig;
use innet_sim::pcap_tap::PcapTap;
use innet_sim::tcp::TcpConfig;
use innet_sim::topology::{Topology, TopologySpec};
use innet_wire::frame::{parse_frame, L4Repr};

fn capture(path: &str) -> (u64, u64) {
    let topo = Topology::build(&TopologySpec::rack(2), &[]).unwrap();
    let flow = FlowSpec {
        src_host: 0,
        dst_host: 1,
        src_ip: 0,
        dst_ip: 0,
        start_ps: 0,
        size_bytes: 20_000,
        kind: FlowKind::Tcp,
    };
    let host0 = topo.hosts[0];
    let mut tcp = TcpConfig::default();
    tcp.mss_bytes = 1000;
    let mut f = build_fabric(
        topo,
        1,
        HostConfig {
            tcp,
            listen_all: true,
        },
        vec![flow],
        l3_switch,
    );
    f.sim.net.tap = Some(Box::new(
        PcapTap::create(&f.sim.net, &[host0], path, 65535).unwrap(),
    ));
    f.sim.run_until(u64::MAX, &mut |_| {});
    let msg = f.sim.net.tap.as_mut().unwrap().finish().unwrap();
    assert!(msg.contains("frames written"), "{msg}");
    assert!(f.sim.finish().ok());
    let nic = f.sim.net.port_id(host0, 0) as usize;
    let m = &f.sim.net.metrics;
    (m.ports[nic].tx_packets, m.nodes[host0 as usize].rx_packets)
}

#[test]
fn every_captured_frame_is_valid_and_tshark_reads_the_capture() {
    let dir = std::env::temp_dir().join(format!("innet-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("host0.pcap");
    let (tx, rx) = capture(path.to_str().unwrap());
    let (_, recs) = innet_wire::pcap::parse(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(recs.len() as u64, tx + rx);
    let mut data_bytes = 0;
    for r in &recs {
        let f = parse_frame(&r.data).expect("every frame parses, checksums included");
        assert_eq!(r.data.len() as u32, r.orig_len);
        if let L4Repr::Tcp(t) = &f.l4 {
            if t.dst_port >= 5000 && f.ip.src.octets()[3] == 1 {
                data_bytes += f.payload.len();
            }
        }
    }
    // Host 0 sent the 20,000 bytes (plus possibly spurious retransmissions).
    assert!(data_bytes >= 20_000, "{data_bytes}");
    // The first frame is host 0's SYN.
    let first = parse_frame(&recs[0].data).unwrap();
    let L4Repr::Tcp(syn) = &first.l4 else {
        panic!("not TCP")
    };
    assert_eq!(syn.flags & 0x02, 0x02);

    let out = Command::new("tshark")
        .args([
            "-r",
            path.to_str().unwrap(),
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
        ])
        .args([
            "-T",
            "fields",
            "-e",
            "frame.len",
            "-e",
            "ip.checksum.status",
            "-e",
            "tcp.checksum.status",
            "-e",
            "tcp.flags.syn",
        ])
        .output()
        .unwrap_or_else(|e| panic!("tshark is needed for this test (run scripts/setup.sh): {e}"));
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), recs.len());
    for (line, r) in lines.iter().zip(&recs) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols[0].parse::<usize>().unwrap(), r.data.len());
        assert_eq!(
            cols[1], "1",
            "tshark: IP checksum not good (1 = good): {line}"
        );
        assert_eq!(
            cols[2], "1",
            "tshark: TCP checksum not good (1 = good): {line}"
        );
    }
    assert!(
        lines[0].ends_with("\t1") || lines[0].ends_with("\tTrue"),
        "first frame is a SYN: {}",
        lines[0]
    );
}

#[test]
fn tunnelled_packets_are_captured_with_their_geneve_header_and_options() {
    use innet_sim::packet::{Encap, Ipv4, Packet, Tunnel, IP_PROTO_UDP, L4};
    use innet_sim::pcap_tap::packet_frame;
    use innet_wire::frame::EncapRepr;
    let mut p = Packet::new(
        Ipv4::new(0xC0A8_0001, 0xC0A8_0002, IP_PROTO_UDP),
        L4::Udp {
            src_port: 1,
            dst_port: 2,
        },
        100,
    );
    p.tunnel = Some(Tunnel {
        outer: Ipv4::new(0x0A00_0001, 0x0A00_0102, IP_PROTO_UDP),
        // One option: class 0x0102, type 3, one word of data.
        encap: Encap::Geneve {
            src_port: 4000,
            vni: 77,
            options: vec![0x01, 0x02, 0x03, 0x01, 9, 9, 9, 9],
        },
    });
    let bytes = packet_frame(&p, [2; 6], [4; 6]).unwrap();
    assert_eq!(bytes.len() as u32 + 4, p.frame_bytes());
    let f = parse_frame(&bytes).unwrap();
    let EncapRepr::Geneve { geneve, .. } = &f.tunnel.as_ref().unwrap().encap else {
        panic!("not geneve")
    };
    assert_eq!(geneve.vni, 77);
    assert_eq!(
        (
            geneve.options[0].class,
            geneve.options[0].kind,
            geneve.options[0].data.clone()
        ),
        (0x0102, 3, vec![9; 4])
    );
    assert_eq!(f.payload.len(), 100);
}
