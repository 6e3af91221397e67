//! Frames for the Python side (its tests, experiments and benchmark captures), built and taken
//! apart by the one codec, `innet_wire` (`frame::FrameRepr`, `phv::codec::TcpFrame`, `geneve`,
//! `pcap`): Python packs no IPv4, UDP, TCP or Geneve header, and computes no checksum, of its
//! own. Every frame is Ethernet (02:00:00:00:00:01 → 02:00:00:00:00:02) around IPv4 (TTL 64,
//! no options) with correct lengths and checksums.

use std::net::Ipv4Addr;

use innet_wire::ethernet::{EthernetPacket, EthernetRepr, ETHERTYPE_IPV4};
use innet_wire::frame::{EncapRepr, FrameRepr, L4Repr, TunnelRepr};
use innet_wire::geneve::{iter_options, GeneveOption, GenevePacket, GeneveRepr, HEADER_LEN as GENEVE_HEADER_LEN, PROTOCOL_ETHERNET};
use innet_wire::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_TCP};
use innet_wire::phv::codec::TcpFrame;
use innet_wire::tcp::TcpPacket;
use innet_wire::udp::HEADER_LEN as UDP_HEADER_LEN;
use pyo3::prelude::*;

use crate::UserInputError;

const MAC_SRC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_DST: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// The Geneve datagrams' inner addresses and ports (a tenant's own packet, which the switch
/// carries untouched) and the outer source port.
const INNER: ([u8; 4], u16, [u8; 4], u16) = ([192, 168, 0, 1], 4000, [192, 168, 0, 2], 4001);
const GENEVE_SRC_PORT: u16 = 40000;

fn addr(what: &str, a: &str) -> PyResult<Ipv4Addr> {
    a.parse().map_err(|_| UserInputError::new_err(format!("{what} address '{a}': expected a dotted quad such as 10.0.0.1")))
}

fn eth() -> EthernetRepr {
    EthernetRepr { dst: MAC_DST, src: MAC_SRC, vlan_tci: None, ethertype: ETHERTYPE_IPV4 }
}

fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, ident: u16, dont_fragment: bool) -> Ipv4Repr {
    Ipv4Repr { src, dst, protocol, ttl: 64, dscp: 0, ecn: 0, ident, dont_fragment, options: Vec::new(), payload_len: 0 }
}

fn emit(f: &FrameRepr) -> PyResult<Vec<u8>> {
    f.emit().map_err(|e| UserInputError::new_err(e.to_string()))
}

/// A plain frame: IPv4 from `src` to `dst` carrying `payload` as IP protocol `protocol` as it is
/// (no transport header is added: for a parser's test, a protocol's bytes written by hand).
#[pyfunction]
#[pyo3(signature = (src, dst, protocol, payload, ident = 1, dont_fragment = true))]
pub fn ipv4_frame(src: &str, dst: &str, protocol: u8, payload: Vec<u8>, ident: u16, dont_fragment: bool) -> PyResult<Vec<u8>> {
    let ip = ipv4(addr("src", src)?, addr("dst", dst)?, protocol, ident, dont_fragment);
    emit(&FrameRepr { eth: eth(), tunnel: None, ip, l4: L4Repr::Other, payload })
}

/// A UDP datagram `sport` → `dport` carrying `payload`, in a frame (UDP checksum filled).
#[pyfunction]
#[pyo3(signature = (src, dst, sport, dport, payload, ident = 1, dont_fragment = true))]
#[allow(clippy::too_many_arguments)]
pub fn udp_frame(src: &str, dst: &str, sport: u16, dport: u16, payload: Vec<u8>, ident: u16, dont_fragment: bool) -> PyResult<Vec<u8>> {
    let ip = ipv4(addr("src", src)?, addr("dst", dst)?, 0, ident, dont_fragment);
    emit(&FrameRepr { eth: eth(), tunnel: None, ip, l4: L4Repr::Udp { src_port: sport, dst_port: dport }, payload })
}

/// A TCP segment `sport` → `dport` carrying `payload`, in a frame (`TcpFrame`: DF, ident 1, no
/// options; `flags` as the header byte, 0x18 = PSH|ACK).
#[pyfunction]
#[pyo3(signature = (src, dst, sport, dport, payload, seq = 1, ack = 0, flags = 0x18, window = 500))]
#[allow(clippy::too_many_arguments)]
pub fn tcp_frame(src: &str, dst: &str, sport: u16, dport: u16, payload: Vec<u8>, seq: u32, ack: u32, flags: u8, window: u16) -> PyResult<Vec<u8>> {
    let f = TcpFrame::new((addr("src", src)?, sport), (addr("dst", dst)?, dport), seq, ack, flags).window(window).payload(&payload);
    Ok(f.emit())
}

/// The frame of a Geneve datagram from `src` to `dst` (UDP 6081): VNI `vni`, the option area
/// `options` (whole TLV options, e.g. `switchvm_options`), and an inner Ethernet/IPv4/UDP frame
/// 192.168.0.1:4000 → 192.168.0.2:4001 carrying `payload`.
fn geneve_repr(src: Ipv4Addr, dst: Ipv4Addr, vni: u32, options: &[u8], payload: Vec<u8>) -> PyResult<FrameRepr> {
    let bad = |e: String| UserInputError::new_err(format!("Geneve options: {e}"));
    if !options.len().is_multiple_of(4) || options.len() > 252 {
        return Err(bad(format!("expected a multiple of 4 bytes up to 252, got {}", options.len())));
    }
    let options = iter_options(options)
        .map(|o| o.map(|(class, kind, data)| GeneveOption { class, kind, data: data.to_vec() }))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    let geneve = GeneveRepr { oam: false, critical: false, protocol: PROTOCOL_ETHERNET, vni, options };
    let (isrc, isport, idst, idport) = INNER;
    Ok(FrameRepr {
        eth: eth(),
        tunnel: Some(TunnelRepr { outer: ipv4(src, dst, 0, 1, false), encap: EncapRepr::Geneve { src_port: GENEVE_SRC_PORT, geneve, inner_eth: eth() } }),
        ip: ipv4(isrc.into(), idst.into(), 0, 1, false),
        l4: L4Repr::Udp { src_port: isport, dst_port: idport },
        payload,
    })
}

/// The Geneve payload of a datagram to UDP port 6081 (what a UDP socket sends): the header with
/// `vni` and `options`, then the inner frame carrying `payload` (see `geneve_frame`).
#[pyfunction]
pub fn geneve(vni: u32, options: Vec<u8>, payload: Vec<u8>) -> PyResult<Vec<u8>> {
    let f = geneve_repr(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, vni, &options, payload)?;
    // The outer Ethernet, IPv4 (no options) and UDP headers come first.
    Ok(emit(&f)?.split_off(f.eth.header_len() + 20 + UDP_HEADER_LEN))
}

/// A whole frame carrying a Geneve datagram from `src` to `dst`, port 40000 → 6081 (for
/// captures): `geneve(vni, options, payload)` in Ethernet/IPv4/UDP.
#[pyfunction]
pub fn geneve_frame(src: &str, dst: &str, vni: u32, options: Vec<u8>, payload: Vec<u8>) -> PyResult<Vec<u8>> {
    emit(&geneve_repr(addr("src", src)?, addr("dst", dst)?, vni, &options, payload)?)
}

/// (VNI, option area, inner frame) of a Geneve payload; an error if it is not one.
#[pyfunction]
pub fn parse_geneve(data: Vec<u8>) -> PyResult<(u32, Vec<u8>, Vec<u8>)> {
    let g = GenevePacket::new_checked(&data[..]).map_err(|e| UserInputError::new_err(e.to_string()))?;
    let options = &data[GENEVE_HEADER_LEN..g.header_len()];
    Ok((g.vni(), options.to_vec(), g.payload().to_vec()))
}

/// (source port, destination port, sequence number, payload) of a captured Ethernet/IPv4/TCP
/// frame; None for any other frame or one whose headers do not fit it. Checksums are not checked:
/// a frame captured on its way out carries the partial checksum the NIC finishes.
#[pyfunction]
pub fn tcp_segment(frame: Vec<u8>) -> Option<(u16, u16, u32, Vec<u8>)> {
    let eth = EthernetPacket::new_checked(&frame[..]).ok().filter(|e| e.ethertype() == ETHERTYPE_IPV4)?;
    let ip = Ipv4Packet::new_checked(eth.payload()).ok().filter(|ip| ip.protocol() == PROTO_TCP)?;
    let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
    Some((tcp.src_port(), tcp.dst_port(), tcp.seq(), tcp.payload().to_vec()))
}

/// A pcap file (nanosecond timestamps, Ethernet) of `frames`, one per millisecond.
#[pyfunction]
pub fn pcap_file(frames: Vec<Vec<u8>>) -> Vec<u8> {
    innet_wire::pcap::file_bytes(frames.iter().map(Vec::as_slice), 1_000_000)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ipv4_frame, m)?)?;
    m.add_function(wrap_pyfunction!(udp_frame, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_frame, m)?)?;
    m.add_function(wrap_pyfunction!(geneve, m)?)?;
    m.add_function(wrap_pyfunction!(geneve_frame, m)?)?;
    m.add_function(wrap_pyfunction!(parse_geneve, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_segment, m)?)?;
    m.add_function(wrap_pyfunction!(pcap_file, m)?)?;
    Ok(())
}
