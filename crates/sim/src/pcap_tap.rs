//! pcap export of chosen nodes' traffic: a [`PacketTap`] that turns each simulated packet into
//! its exact frame bytes (the one codec, `innet_wire::phv::codec`) and writes it, with the simulated time, to a pcap file
//! that tshark and Wireshark read.
//!
//! Payload bytes the simulation never materialized are written as zeros; MAC addresses are
//! made up from node ids (02:00:nn:nn:nn:nn); a SYN's 12 option bytes are written as MSS,
//! window scale and SACK-permitted.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;

use innet_wire::ethernet::Mac;
use innet_wire::pcap::PcapWriter;
use innet_wire::phv::codec::{emit_into, EmitError};
use innet_wire::phv::WireExtras;
use innet_wire::tcp::{options_bytes, TcpOption};

use crate::network::{Network, NodeId, PacketTap, TapDirection};
use crate::packet::{Packet, L4, ETHERNET_FCS_BYTES};

pub fn node_mac(node: NodeId) -> Mac {
    let b = node.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// The option bytes a simulated TCP header of `bytes` option bytes is written with.
fn tcp_options(bytes: u8) -> Vec<u8> {
    let opts = match bytes {
        0 => vec![],
        4 => vec![TcpOption::Mss(1460)],
        8 => vec![TcpOption::Mss(1460), TcpOption::WindowScale(0)],
        12 => vec![TcpOption::Mss(1460), TcpOption::WindowScale(0), TcpOption::SackPermitted],
        n => vec![TcpOption::Mss(1460), TcpOption::Unknown { kind: 253, data: vec![0; (n as usize).saturating_sub(6)] }],
    };
    options_bytes(&opts)
}

/// A simulated packet as it would be on the wire between `src_mac` and `dst_mac`: `pkt` with
/// the frame details a simulation does not carry made up (MACs, TCP option bytes, Geneve's
/// inner MACs from the inner addresses) and a window above 16 bits clamped, ready for the
/// codec. A packet that already has its wire extras (one that came from a real frame) keeps
/// them, MACs aside.
pub fn wire_packet(pkt: &Packet, src_mac: Mac, dst_mac: Mac) -> Packet {
    let mut p = pkt.clone();
    let w = p.wire.get_or_insert_with(|| {
        let inner_mac = |a: u32| {
            let b = a.to_be_bytes();
            [0x02, 0x01, b[0], b[1], b[2], b[3]]
        };
        let mut w = WireExtras { inner_eth_dst: inner_mac(pkt.ip.dst), inner_eth_src: inner_mac(pkt.ip.src), ..Default::default() };
        if let L4::Tcp(h) = &pkt.l4 {
            w.tcp_options.set(&tcp_options(h.options_bytes));
        }
        Box::new(w)
    });
    w.eth_src = src_mac;
    w.eth_dst = dst_mac;
    if let L4::Tcp(h) = &mut p.l4 {
        h.window = h.window.min(u16::MAX as u32);
    }
    p
}

/// The frame bytes of a simulated packet between `src_mac` and `dst_mac` (no FCS, no padding).
pub fn packet_frame(pkt: &Packet, src_mac: Mac, dst_mac: Mac) -> Result<Vec<u8>, EmitError> {
    let mut out = Vec::new();
    emit_into(&wire_packet(pkt, src_mac, dst_mac), &mut out)?;
    Ok(out)
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
        let mut frame = match packet_frame(pkt, node_mac(src), node_mac(dst)) {
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
