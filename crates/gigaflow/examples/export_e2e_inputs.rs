//! `cargo run --release -p innet-gigaflow --example export_e2e_inputs -- PIPELINE LOCALITY OUTDIR [k=v ...]`:
//! writes the exact inputs `gigaflow.e2e` replays for one pipeline and locality (same `k=v`
//! parameter names as `--set` of gigaflow.e2e) so another switch can run them:
//! - `OUTDIR/PIPELINE-LOCALITY.flows`: the flow file (`ovs-ofctl add-flows` syntax);
//! - `OUTDIR/PIPELINE-LOCALITY.pcap`: every packet in replay order, Ethernet/IPv4 (ToS 0: the
//!   Gigaflow artifact's table tag), TCP, UDP, ICMP or bare IPv4, padded to 60 bytes (a 64-byte
//!   frame with FCS, as the artifact's tgen sends), timestamped with the trace time;
//! - `OUTDIR/PIPELINE-LOCALITY.json`: the parameters, packet and flow counts, in_ports and the
//!   first/last packet of each input port (what bench/artifacts/gvs_run.py reads).
//! Frames are put together by the wire crate's `FrameRepr`; the pcap by its `PcapWriter`.
use innet_ofswitch::fields::{Field, Flow};
use innet_wire::ethernet::{EthernetRepr, ETHERTYPE_IPV4};
use innet_wire::frame::{FrameRepr, L4Repr};
use innet_wire::ipv4::Ipv4Repr;
use innet_wire::pcap::PcapWriter;
use innet_wire::tcp::TcpRepr;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::Ipv4Addr;

const FRAME_LEN: usize = 60;

fn mac(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// The frame of a packet with headers `f`, or why it cannot be one.
fn frame(f: &Flow) -> Result<Vec<u8>, String> {
    if f.get(Field::DlType) != 0x0800 {
        return Err(format!("dl_type 0x{:04x}: only IPv4 packets carry the artifact's ToS tag", f.get(Field::DlType)));
    }
    if f.get(Field::NwTos) != 0 {
        return Err(format!("nw_tos {}: the artifact's start tag is ToS 0", f.get(Field::NwTos)));
    }
    if f.get(Field::VlanTci) != 0 {
        return Err("a VLAN tag (Pipebench traffic is untagged)".into());
    }
    let proto = f.get(Field::NwProto) as u8;
    let (l4, hdr) = match proto {
        6 => (L4Repr::Tcp(TcpRepr { src_port: f.get(Field::TpSrc) as u16, dst_port: f.get(Field::TpDst) as u16, seq: 0, ack: 0, flags: 0, window: 0, urgent: 0, options: Vec::new(), payload_len: 0 }), 20),
        17 => (L4Repr::Udp { src_port: f.get(Field::TpSrc) as u16, dst_port: f.get(Field::TpDst) as u16 }, 8),
        _ => (L4Repr::Other, 0),
    };
    let mut payload = Vec::new();
    if proto == 1 {
        // ICMP: type and code are the flow's tp_src / tp_dst (OVS's icmp_type / icmp_code).
        payload.extend_from_slice(&[f.get(Field::TpSrc) as u8, f.get(Field::TpDst) as u8, 0, 0, 0, 0, 0, 0]);
    }
    let used = 14 + 20 + hdr + payload.len();
    payload.resize(payload.len() + FRAME_LEN.saturating_sub(used), 0);
    let ip = Ipv4Repr {
        src: Ipv4Addr::from(f.get(Field::NwSrc) as u32),
        dst: Ipv4Addr::from(f.get(Field::NwDst) as u32),
        protocol: proto,
        ttl: f.get(Field::NwTtl) as u8,
        dscp: 0,
        ecn: 0,
        ident: 0,
        dont_fragment: false,
        options: Vec::new(),
        payload_len: 0,
    };
    let fr = FrameRepr { eth: EthernetRepr { dst: mac(f.get(Field::DlDst)), src: mac(f.get(Field::DlSrc)), vlan_tci: None, ethertype: ETHERTYPE_IPV4 }, tunnel: None, ip, l4, payload };
    fr.emit().map_err(|e| e.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: export_e2e_inputs PIPELINE LOCALITY OUTDIR [k=v ...]   (k=v: gigaflow.e2e's parameters)");
        std::process::exit(2)
    }
    let (pipe, loc, out) = (&args[0], &args[1], std::path::Path::new(&args[2]));
    let mut sets = BTreeMap::new();
    for a in &args[3..] {
        let Some((k, v)) = a.split_once('=') else {
            eprintln!("export_e2e_inputs: argument '{a}' is not k=v");
            std::process::exit(2)
        };
        sets.insert(k.to_string(), v.to_string());
    }
    let (rs, traffic) = match innet_gigaflow::experiments::e2e_inputs(pipe, loc, &sets) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("export_e2e_inputs: {e}");
            std::process::exit(2)
        }
    };
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("export_e2e_inputs: {}: {e}", out.display());
        std::process::exit(2)
    }
    let stem = out.join(format!("{pipe}-{loc}"));
    let fail = |what: &str, e: String| -> ! {
        eprintln!("export_e2e_inputs: {what}: {e}");
        std::process::exit(2)
    };
    std::fs::write(stem.with_extension("flows"), &rs.text).unwrap_or_else(|e| fail("flows", e.to_string()));
    let pcap_path = stem.with_extension("pcap");
    let file = std::fs::File::create(&pcap_path).unwrap_or_else(|e| fail(&pcap_path.display().to_string(), e.to_string()));
    let mut w = PcapWriter::new(std::io::BufWriter::new(file), 65535).unwrap_or_else(|e| fail("pcap", e.to_string()));
    let mut ports = BTreeSet::new();
    let mut n = 0u64;
    for (i, (t, f)) in traffic.iter().enumerate() {
        let bytes = frame(f).unwrap_or_else(|e| fail(&format!("packet {i}"), e));
        w.write(t, &bytes, bytes.len() as u32).unwrap_or_else(|e| fail("pcap", e.to_string()));
        ports.insert(f.get(Field::InPort));
        n += 1;
    }
    // The pcap has no input port: a sidecar lists each packet's, one byte per packet.
    let in_ports: Vec<u8> = traffic.iter().map(|(_, f)| f.get(Field::InPort) as u8).collect();
    std::fs::write(stem.with_extension("inport"), &in_ports).unwrap_or_else(|e| fail("inport", e.to_string()));
    w.flush().unwrap_or_else(|e| fail("pcap", e.to_string()));
    let meta = serde_json::json!({
        "pipeline": pipe, "locality": loc, "params": sets, "packets": n, "flows": traffic.flows.len(),
        "in_ports": ports.into_iter().collect::<Vec<_>>(), "flow_file": stem.with_extension("flows"), "pcap": pcap_path,
        "in_port_file": stem.with_extension("inport"),
    });
    let mut m = std::fs::File::create(stem.with_extension("json")).unwrap_or_else(|e| fail("json", e.to_string()));
    writeln!(m, "{}", serde_json::to_string_pretty(&meta).unwrap()).unwrap_or_else(|e| fail("json", e.to_string()));
    eprintln!("wrote {} ({} packets, {} flows)", stem.display(), n, traffic.flows.len());
}
