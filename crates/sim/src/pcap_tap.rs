//! pcap export of chosen nodes' traffic: a [`PacketTap`] that turns each simulated packet into
//! its exact frame bytes (crates/wire) and writes it, with the simulated time, to a pcap file
//! that tshark and Wireshark read.
//!
//! Payload bytes the simulation never materialized are written as zeros; MAC addresses are
//! made up from node ids (02:00:nn:nn:nn:nn); a SYN's 12 option bytes are written as MSS,
//! window scale and SACK-permitted.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::net::Ipv4Addr;

use innet_wire::ethernet::{EthernetRepr, Mac, ETHERTYPE_IPV4};
use innet_wire::frame::{EncapRepr, FrameRepr, L4Repr, TunnelRepr};
use innet_wire::geneve::{GeneveOption, GenevePacket, GeneveRepr, PROTOCOL_ETHERNET};
use innet_wire::ipv4::Ipv4Repr;
use innet_wire::pcap::PcapWriter;
use innet_wire::tcp::{TcpOption, TcpRepr};

use crate::network::{Network, NodeId, PacketTap, TapDirection};
use crate::packet::{Encap, Ipv4, Packet, L4, ETHERNET_FCS_BYTES};

pub fn node_mac(node: NodeId) -> Mac {
    let b = node.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

fn ip_repr(ip: &Ipv4) -> Ipv4Repr {
    Ipv4Repr {
        src: Ipv4Addr::from(ip.src),
        dst: Ipv4Addr::from(ip.dst),
        protocol: ip.protocol,
        ttl: ip.ttl,
        dscp: ip.dscp,
        ecn: ip.ecn,
        ident: ip.ident,
        dont_fragment: false,
        options: Vec::new(),
        payload_len: 0,
    }
}

fn tcp_options(bytes: u8) -> Vec<TcpOption> {
    match bytes {
        0 => vec![],
        4 => vec![TcpOption::Mss(1460)],
        8 => vec![TcpOption::Mss(1460), TcpOption::WindowScale(0)],
        12 => vec![TcpOption::Mss(1460), TcpOption::WindowScale(0), TcpOption::SackPermitted],
        n => vec![TcpOption::Mss(1460), TcpOption::Unknown { kind: 253, data: vec![0; (n as usize).saturating_sub(6)] }],
    }
}

/// The frame a simulated packet would be on the wire between `src_mac` and `dst_mac`.
pub fn packet_frame(pkt: &Packet, src_mac: Mac, dst_mac: Mac) -> FrameRepr {
    let l4 = match pkt.l4 {
        L4::Udp { src_port, dst_port } => L4Repr::Udp { src_port, dst_port },
        L4::Tcp(h) => L4Repr::Tcp(TcpRepr {
            src_port: h.src_port,
            dst_port: h.dst_port,
            seq: h.seq,
            ack: h.ack,
            flags: h.flags.0,
            window: h.window.min(u16::MAX as u32) as u16,
            urgent: 0,
            options: tcp_options(h.options_bytes),
            payload_len: 0,
        }),
        L4::Other => L4Repr::Other,
    };
    let mut payload = vec![0u8; pkt.payload_len as usize];
    if let Some(b) = &pkt.payload_bytes {
        let n = b.len().min(payload.len());
        payload[..n].copy_from_slice(&b[..n]);
    }
    let tunnel = pkt.tunnel.as_ref().map(|t| TunnelRepr {
        outer: ip_repr(&t.outer),
        encap: match &t.encap {
            Encap::IpInIp | Encap::IpInIpTagged { .. } => EncapRepr::IpInIp,
            Encap::Udp { src_port, dst_port } => EncapRepr::Udp { src_port: *src_port, dst_port: *dst_port },
            Encap::Geneve { src_port, vni, options } => {
                // Options are TLVs the simulation built; the 8-byte stub header lets the wire
                // crate's iterator read them.
                let mut hdr = vec![(options.len() / 4) as u8, 0, 0x65, 0x58, 0, 0, 0, 0];
                hdr.extend_from_slice(options);
                let opts = GenevePacket::new_checked(&hdr[..])
                    .map(|g| {
                        g.options()
                            .filter_map(|o| o.ok())
                            .map(|(class, kind, data)| GeneveOption { class, kind, data: data.to_vec() })
                            .collect()
                    })
                    .unwrap_or_default();
                let inner_mac = |a: u32| {
                    let b = a.to_be_bytes();
                    [0x02, 0x01, b[0], b[1], b[2], b[3]]
                };
                EncapRepr::Geneve {
                    src_port: *src_port,
                    geneve: GeneveRepr { oam: false, critical: false, protocol: PROTOCOL_ETHERNET, vni: *vni, options: opts },
                    inner_eth: EthernetRepr {
                        dst: inner_mac(pkt.ip.dst),
                        src: inner_mac(pkt.ip.src),
                        vlan_tci: None,
                        ethertype: ETHERTYPE_IPV4,
                    },
                }
            }
        },
    });
    FrameRepr {
        eth: EthernetRepr { dst: dst_mac, src: src_mac, vlan_tci: None, ethertype: ETHERTYPE_IPV4 },
        tunnel,
        ip: ip_repr(&pkt.ip),
        l4,
        payload,
    }
}

/// Writes the traffic of chosen nodes to a pcap file.
pub struct PcapTap {
    nodes: Vec<bool>,
    /// (node, local port) → node at the other end of the link.
    peers: HashMap<(NodeId, u16), NodeId>,
    writer: PcapWriter<BufWriter<File>>,
    path: String,
    error: Option<String>,
    pub frames: u64,
}

impl PcapTap {
    /// Capture every packet sent or received by `nodes` into `path`, cut to `snaplen` bytes.
    pub fn create(net: &Network, nodes: &[NodeId], path: &str, snaplen: u32) -> Result<Self, String> {
        let file = File::create(path).map_err(|e| format!("{path}: cannot create the pcap file: {e}"))?;
        let writer = PcapWriter::new(BufWriter::new(file), snaplen).map_err(|e| format!("{path}: {e}"))?;
        let mut mask = vec![false; net.nodes.len()];
        for &n in nodes {
            if let Some(m) = mask.get_mut(n as usize) {
                *m = true;
            }
        }
        let peers = net
            .ports
            .iter()
            .map(|p| ((p.node, p.local), net.ports[p.peer as usize].node))
            .collect();
        Ok(PcapTap { nodes: mask, peers, writer, path: path.to_string(), error: None, frames: 0 })
    }
}

impl PacketTap for PcapTap {
    fn on_packet(&mut self, time_ps: u64, node: NodeId, port: u16, dir: TapDirection, pkt: &Packet) {
        if !self.nodes.get(node as usize).copied().unwrap_or(false) || self.error.is_some() {
            return;
        }
        let other = self.peers.get(&(node, port)).copied().unwrap_or(node);
        let (src, dst) = match dir {
            TapDirection::Tx => (node, other),
            TapDirection::Rx => (other, node),
        };
        let mut frame = match packet_frame(pkt, node_mac(src), node_mac(dst)).emit() {
            Ok(f) => f,
            Err(e) => {
                self.error = Some(format!("{}: packet {} cannot be encoded: {e}", self.path, pkt.uid));
                return;
            }
        };
        // The original length is the frame as simulated (FCS excluded, as captures do); short
        // frames carry the Ethernet padding the simulation counted.
        let orig = pkt.frame_bytes() - ETHERNET_FCS_BYTES;
        if frame.len() > orig as usize {
            self.error = Some(format!("{}: packet {} encodes to {} bytes, simulated as {orig}", self.path, pkt.uid, frame.len()));
            return;
        }
        frame.resize(orig as usize, 0);
        if let Err(e) = self.writer.write(time_ps / 1000, &frame, orig) {
            self.error = Some(format!("{}: write failed: {e}", self.path));
            return;
        }
        self.frames += 1;
    }

    fn finish(&mut self) -> Result<String, String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.writer.flush().map_err(|e| format!("{}: {e}", self.path))?;
        Ok(format!("{} frames written to {}", self.frames, self.path))
    }
}
