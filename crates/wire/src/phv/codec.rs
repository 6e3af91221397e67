//! The one frame codec: `parse_into` turns an Ethernet/IPv4 frame into the header stack plus
//! [`WireExtras`] (MACs, raw options, padding) and the payload bytes; `emit_into` writes a
//! packet back as a frame, recomputing lengths and checksums. A frame `parse_into` accepts and
//! no one changes re-emits byte-identically. Plain IPv4/TCP, the common frame, has a fast path
//! each way; `write_tcp_frame` writes one from its fields without a [`Packet`].
//!
//! Frames the header stack cannot carry (not IPv4, fragments, a bad checksum, ...) are refused
//! with a [`Refusal`]; the real runtime then forwards them raw, untouched.

use super::{Encap, Ipv4, OptionBytes, Packet, TcpFlags, TcpHeader, Tunnel, WireExtras, L4, NO_FLOW};
use crate::checksum;
use crate::ethernet::{EthernetPacket, ETHERTYPE_IPV4, ETHERTYPE_VLAN};
use crate::geneve::{PROTOCOL_ETHERNET, UDP_PORT as GENEVE_PORT};
use crate::ipv4::{Ipv4Packet, PROTO_IPIP, PROTO_TCP, PROTO_UDP};
use crate::tcp::TcpPacket;
use crate::{be16, Ipv4Addr};

/// Why a frame was not handed to the program as a [`Packet`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A well-formed frame of another protocol (ARP, IPv6, ...): passed raw.
    NotIpv4 { ethertype: u16 },
    /// Well-formed IPv4 the header stack cannot represent exactly (fragments, a checksum written
    /// as the other one's-complement zero): passed raw.
    Unsupported(&'static str),
    /// Truncated or inconsistent: which header and what was wrong.
    Malformed(crate::Error),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotIpv4 { ethertype } => write!(f, "ethertype 0x{ethertype:04x} is not IPv4"),
            Refusal::Unsupported(why) => write!(f, "not representable: {why}"),
            Refusal::Malformed(e) => write!(f, "malformed: {e}"),
        }
    }
}

fn malformed(header: &'static str, msg: impl Into<String>) -> Refusal {
    Refusal::Malformed(crate::Error::new(header, msg))
}

impl From<crate::Error> for Refusal {
    fn from(e: crate::Error) -> Self {
        Refusal::Malformed(e)
    }
}

/// Why a packet could not be written as a frame (a program's mistake, not the input's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("emit: {0}")]
pub struct EmitError(pub String);


/// Checksum of a transport segment over the IPv4 pseudo-header, with the checksum field (at
/// `field`, an even offset) counted as zero.
fn l4_checksum(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, seg: &[u8], field: usize) -> u16 {
    l4_checksum_u32(u32::from(src), u32::from(dst), proto, seg, field)
}

/// [`l4_checksum`] with the addresses as u32 (no octet arrays summed).
#[inline]
fn l4_checksum_u32(src: u32, dst: u32, proto: u8, seg: &[u8], field: usize) -> u16 {
    let stored = u16::from_be_bytes([seg[field], seg[field + 1]]) as u32;
    // Sum the whole segment, then take the stored field out (one's-complement subtraction).
    let all = checksum::sum(seg) + (0xFFFF - stored);
    checksum::finish(checksum::pseudo_header_u32(src, dst, proto, seg.len() as u16) + all)
}

/// One IPv4 header taken apart: the header stack's fields, the raw flags/fragment field and
/// options, the payload (total-length bounded) and what follows it.
struct IpParts<'a> {
    ip: Ipv4,
    flags_fragment: u16,
    options: &'a [u8],
    body: &'a [u8],
    rest: &'a [u8],
}

fn parse_ipv4(l3: &[u8]) -> Result<IpParts<'_>, Refusal> {
    let ipp = Ipv4Packet::new_checked(l3)?;
    let hl = ipp.header_len();
    let total = ipp.total_len() as usize;
    let stored = ipp.header_checksum();
    // The header summed whole (32-bit words) with the stored field taken out again.
    let computed = checksum::finish(checksum::sum(&l3[..hl]) + (0xFFFF - stored as u32));
    if stored != computed {
        if stored == !computed {
            return Err(Refusal::Unsupported(
                "IPv4 header checksum written as the other zero",
            ));
        }
        return Err(malformed(
            "ipv4",
            format!("header checksum 0x{stored:04x} is wrong (expected 0x{computed:04x})"),
        ));
    }
    if ipp.more_fragments() || ipp.frag_offset() != 0 {
        return Err(Refusal::Unsupported("IPv4 fragment"));
    }
    Ok(IpParts {
        ip: Ipv4 {
            src: u32::from(ipp.src()),
            dst: u32::from(ipp.dst()),
            protocol: ipp.protocol(),
            ttl: ipp.ttl(),
            dscp: ipp.dscp(),
            ecn: ipp.ecn(),
            ident: ipp.ident(),
        },
        flags_fragment: be16(l3, 6),
        options: &l3[20..hl],
        body: &l3[hl..total],
        rest: &l3[total..],
    })
}

/// Check a UDP header against its IPv4 packet; Ok(true) when its checksum is 0 (none).
fn check_udp(ip: &Ipv4, body: &[u8]) -> Result<bool, Refusal> {
    if body.len() < 8 {
        return Err(malformed(
            "udp",
            format!("needs 8 bytes, IP payload has {}", body.len()),
        ));
    }
    let len = be16(body, 4) as usize;
    if len != body.len() {
        return Err(malformed(
            "udp",
            format!(
                "length {len} differs from the IP payload length {}",
                body.len()
            ),
        ));
    }
    let stored = be16(body, 6);
    if stored == 0 {
        return Ok(true);
    }
    let c = l4_checksum(
        Ipv4Addr::from(ip.src),
        Ipv4Addr::from(ip.dst),
        PROTO_UDP,
        body,
        6,
    );
    let c = if c == 0 { 0xFFFF } else { c };
    if stored != c {
        return Err(malformed(
            "udp",
            format!("checksum 0x{stored:04x} is wrong (expected 0x{c:04x})"),
        ));
    }
    Ok(false)
}

/// Parse `frame` into `pkt`, reusing its boxes (no allocation once they have grown). On a
/// refusal `pkt` holds garbage and must not be used. Simulation-only metadata is reset.
/// IP-in-IP and Geneve (UDP 6081, Ethernet inside) frames whose inner packet is plain IPv4 come
/// out with `pkt.tunnel` set; if the inside does not parse, the frame is read as plain IPv4
/// (the tunnel stays payload).
pub fn parse_into(frame: &[u8], pkt: &mut Packet) -> Result<(), Refusal> {
    if parse_plain_tcp(frame, pkt) {
        return Ok(());
    }
    match parse_impl(frame, pkt, true) {
        Ok(()) => Ok(()),
        // A tunnel whose inside does not parse is plain IPv4 carrying it as payload.
        Err(_) => parse_impl(frame, pkt, false),
    }
}

/// The common frame — untagged Ethernet, IPv4 that is not a fragment, TCP, both checksums
/// right — parsed straight from the bytes with one pass of checks. Returns false for anything
/// else (and then `pkt` may be partly written: the caller parses the frame in full, which
/// overwrites it and gives the precise refusal). When it returns true, `pkt` is exactly what
/// [`parse_impl`] makes of the frame (test `fast_parse_equals_full_parse` in
/// crates/wire/tests/phv_codec.rs).
fn parse_plain_tcp(frame: &[u8], pkt: &mut Packet) -> bool {
    if frame.len() < 14 + 20 || frame[12] != 0x08 || frame[13] != 0x00 {
        return false;
    }
    let l3 = &frame[14..];
    if l3[0] >> 4 != 4 || l3[9] != PROTO_TCP {
        return false;
    }
    let hl = ((l3[0] & 0x0F) as usize) * 4;
    let total = be16(l3, 2) as usize;
    let flags_fragment = be16(l3, 6);
    // MF set or a fragment offset: a fragment (the full parser refuses it).
    if hl < 20 || total < hl || total > l3.len() || flags_fragment & 0x3FFF != 0 {
        return false;
    }
    let stored = be16(l3, 10);
    if stored != checksum::finish(checksum::sum(&l3[..hl]) + (0xFFFF - stored as u32)) {
        return false;
    }
    let body = &l3[hl..total];
    if body.len() < 20 {
        return false;
    }
    let thl = ((body[12] >> 4) as usize) * 4;
    if thl < 20 || thl > body.len() {
        return false;
    }
    let src = u32::from_be_bytes([l3[12], l3[13], l3[14], l3[15]]);
    let dst = u32::from_be_bytes([l3[16], l3[17], l3[18], l3[19]]);
    if be16(body, 16) != l4_checksum_u32(src, dst, PROTO_TCP, body, 16) {
        return false;
    }
    pkt.tunnel = None;
    let wire = pkt.wire.get_or_insert_with(Box::default);
    wire.eth_dst.copy_from_slice(&frame[0..6]);
    wire.eth_src.copy_from_slice(&frame[6..12]);
    wire.vlan_tci = None;
    // (Empty copies skipped: each would be a call.)
    wire.trailer.clear();
    if total < l3.len() {
        wire.trailer.extend_from_slice(&l3[total..]);
    }
    wire.ip_flags_fragment = flags_fragment;
    if hl > 20 {
        wire.ip_options.set(&l3[20..hl]);
    } else {
        wire.ip_options = OptionBytes::default();
    }
    wire.tcp_options.set(&body[20..thl]);
    wire.tcp_reserved_bits = body[12] & 0x0F;
    wire.tcp_urgent = be16(body, 18);
    wire.udp_checksum_zero = false;
    let payload = &body[thl..];
    let buf = pkt.payload_bytes.get_or_insert_with(Box::default);
    buf.clear();
    buf.extend_from_slice(payload);
    pkt.payload_len = payload.len() as u32;
    pkt.ip = Ipv4 {
        src,
        dst,
        protocol: PROTO_TCP,
        ttl: l3[8],
        dscp: l3[1] >> 2,
        ecn: l3[1] & 0x03,
        ident: be16(l3, 4),
    };
    pkt.l4 = L4::Tcp(TcpHeader {
        src_port: be16(body, 0),
        dst_port: be16(body, 2),
        seq: u32::from_be_bytes([body[4], body[5], body[6], body[7]]),
        ack: u32::from_be_bytes([body[8], body[9], body[10], body[11]]),
        flags: TcpFlags(body[13]),
        window: be16(body, 14) as u32,
        options_bytes: (thl - 20) as u8,
    });
    pkt.uid = 0;
    pkt.flow_id = NO_FLOW;
    pkt.created_ps = 0;
    pkt.hops = 0;
    pkt.is_data = pkt.payload_len > 0;
    pkt.recirculations = 0;
    true
}

/// The full parser: every frame kind, with the reason for a refusal. `pub` for the
/// differential test of the fast path (not part of the runtime's interface).
#[doc(hidden)]
pub fn parse_into_full(frame: &[u8], pkt: &mut Packet) -> Result<(), Refusal> {
    match parse_impl(frame, pkt, true) {
        Ok(()) => Ok(()),
        Err(_) => parse_impl(frame, pkt, false),
    }
}

fn parse_impl(frame: &[u8], pkt: &mut Packet, tunnels: bool) -> Result<(), Refusal> {
    pkt.tunnel = None;
    let e = EthernetPacket::new_checked(frame)?;
    if e.ethertype() != ETHERTYPE_IPV4 {
        return Err(Refusal::NotIpv4 {
            ethertype: e.ethertype(),
        });
    }
    let outer = parse_ipv4(e.payload())?;
    let wire = pkt.wire.get_or_insert_with(Box::default);
    wire.eth_dst = e.dst();
    wire.eth_src = e.src();
    wire.vlan_tci = e.vlan_tci();
    wire.trailer.clear();
    wire.trailer.extend_from_slice(outer.rest);
    // The tunnel, if any: which IPv4 packet is the inner one.
    let mut inner = None;
    if tunnels && outer.ip.protocol == PROTO_IPIP {
        let i = parse_ipv4(outer.body)?;
        if !i.rest.is_empty() {
            return Err(Refusal::Unsupported(
                "inner IPv4 shorter than the outer payload",
            ));
        }
        pkt.tunnel = Some(Tunnel {
            outer: outer.ip,
            encap: Encap::IpInIp,
        });
        inner = Some(i);
    } else if tunnels
        && outer.ip.protocol == PROTO_UDP
        && outer.body.len() >= 8 + 8 + 14
        && be16(outer.body, 2) == GENEVE_PORT
    {
        let zero = check_udp(&outer.ip, outer.body)?;
        let g = &outer.body[8..];
        let opt_len = ((g[0] & 0x3F) as usize) * 4;
        if g[0] >> 6 != 0 || be16(g, 2) != PROTOCOL_ETHERNET || g.len() < 8 + opt_len + 14 {
            return Err(Refusal::Unsupported("Geneve without an Ethernet payload"));
        }
        let ie = &g[8 + opt_len..];
        if be16(ie, 12) != ETHERTYPE_IPV4 {
            return Err(Refusal::Unsupported("Geneve inner frame is not IPv4"));
        }
        let i = parse_ipv4(&ie[14..])?;
        if !i.rest.is_empty() {
            return Err(Refusal::Unsupported(
                "inner IPv4 shorter than the Geneve payload",
            ));
        }
        wire.outer_udp_checksum_zero = zero;
        wire.geneve_flags = g[1];
        wire.geneve_reserved = g[7];
        wire.inner_eth_dst.copy_from_slice(&ie[0..6]);
        wire.inner_eth_src.copy_from_slice(&ie[6..12]);
        let vni = u32::from_be_bytes([0, g[4], g[5], g[6]]);
        let src_port = be16(outer.body, 0);
        pkt.tunnel = Some(Tunnel {
            outer: outer.ip,
            encap: Encap::Geneve {
                src_port,
                vni,
                options: g[8..8 + opt_len].to_vec(),
            },
        });
        inner = Some(i);
    }
    let ipx = match inner {
        Some(i) => {
            if !wire.outer_ip_options.set(outer.options) {
                return Err(malformed(
                    "ipv4",
                    format!("{} option bytes", outer.options.len()),
                ));
            }
            wire.outer_ip_flags_fragment = outer.flags_fragment;
            i
        }
        None => outer,
    };
    let (src, dst, proto) = (
        Ipv4Addr::from(ipx.ip.src),
        Ipv4Addr::from(ipx.ip.dst),
        ipx.ip.protocol,
    );
    let body = ipx.body;
    wire.ip_flags_fragment = ipx.flags_fragment;
    if !wire.ip_options.set(ipx.options) {
        return Err(malformed(
            "ipv4",
            format!("{} option bytes", ipx.options.len()),
        ));
    }
    wire.tcp_options = OptionBytes::default();
    wire.tcp_reserved_bits = 0;
    wire.tcp_urgent = 0;
    wire.udp_checksum_zero = false;
    let payload_at;
    let l4 = match proto {
        PROTO_UDP => {
            wire.udp_checksum_zero = check_udp(&ipx.ip, body)?;
            payload_at = 8;
            L4::Udp {
                src_port: be16(body, 0),
                dst_port: be16(body, 2),
            }
        }
        PROTO_TCP => {
            let t = TcpPacket::new_checked(body)?;
            let thl = t.header_len();
            let stored = t.checksum();
            let c = l4_checksum(src, dst, PROTO_TCP, body, 16);
            if stored != c {
                if stored == !c {
                    return Err(Refusal::Unsupported(
                        "TCP checksum written as the other zero",
                    ));
                }
                return Err(malformed(
                    "tcp",
                    format!("checksum 0x{stored:04x} is wrong (expected 0x{c:04x})"),
                ));
            }
            wire.tcp_options.set(t.options());
            wire.tcp_reserved_bits = body[12] & 0x0F;
            wire.tcp_urgent = t.urgent();
            payload_at = thl;
            L4::Tcp(TcpHeader {
                src_port: t.src_port(),
                dst_port: t.dst_port(),
                seq: t.seq(),
                ack: t.ack(),
                flags: TcpFlags(t.flags()),
                window: t.window() as u32,
                options_bytes: (thl - 20) as u8,
            })
        }
        _ => {
            payload_at = 0;
            L4::Other
        }
    };
    let payload = &body[payload_at..];
    let buf = pkt.payload_bytes.get_or_insert_with(Box::default);
    buf.clear();
    buf.extend_from_slice(payload);
    pkt.payload_len = payload.len() as u32;
    pkt.ip = ipx.ip;
    pkt.l4 = l4;
    pkt.uid = 0;
    pkt.flow_id = NO_FLOW;
    pkt.created_ps = 0;
    pkt.hops = 0;
    pkt.is_data = pkt.payload_len > 0;
    pkt.recirculations = 0;
    Ok(())
}

fn push_ipv4_header(
    out: &mut Vec<u8>,
    ip: &Ipv4,
    proto: u8,
    total: usize,
    flags_fragment: u16,
    options: &[u8],
) -> Result<(), EmitError> {
    if ip.dscp > 63 || ip.ecn > 3 {
        return Err(EmitError(format!(
            "DSCP {} / ECN {} do not fit in 6 / 2 bits",
            ip.dscp, ip.ecn
        )));
    }
    if total > u16::MAX as usize {
        return Err(EmitError(format!(
            "IPv4 total length {total} exceeds 65535"
        )));
    }
    let ihl = 20 + options.len();
    // The fixed 20 bytes built on the stack, then appended at once.
    let mut h = [0u8; 20];
    h[0] = 0x40 | (ihl / 4) as u8;
    h[1] = (ip.dscp << 2) | ip.ecn;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[4..6].copy_from_slice(&ip.ident.to_be_bytes());
    h[6..8].copy_from_slice(&flags_fragment.to_be_bytes());
    h[8] = ip.ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&ip.src.to_be_bytes());
    h[16..20].copy_from_slice(&ip.dst.to_be_bytes());
    let c = checksum::finish(checksum::sum(&h) + checksum::sum(options));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(options);
    Ok(())
}

/// Write `pkt` as a frame into `out` (cleared first): Ethernet from its [`WireExtras`], the
/// tunnel if any (IP-in-IP, or Geneve with its options and inner Ethernet), IPv4 and TCP/UDP
/// headers from the header stack and extras, the payload (`payload_bytes`, zero-filled up to
/// `payload_len`), then the trailer. IPv4, TCP and UDP checksums and all lengths are computed
/// here; ICMP and other protocols' checksums are the program's (they are payload).
pub fn emit_into(pkt: &Packet, out: &mut Vec<u8>) -> Result<(), EmitError> {
    out.clear();
    let Some(wire) = pkt.wire.as_deref() else {
        return Err(EmitError("packet has no wire extras (MAC addresses); set `pkt.wire` (see phv::edit::make_reply)".into()));
    };
    let ip = &pkt.ip;
    let (l4_len, proto) = match &pkt.l4 {
        L4::Udp { .. } => (8usize, PROTO_UDP),
        L4::Tcp(h) => {
            if h.options_bytes as usize != wire.tcp_options.len() {
                return Err(EmitError(format!(
                    "TCP options_bytes is {} but wire.tcp_options holds {} bytes",
                    h.options_bytes,
                    wire.tcp_options.len()
                )));
            }
            if h.window > u16::MAX as u32 {
                return Err(EmitError(format!(
                    "TCP window {} does not fit in 16 bits",
                    h.window
                )));
            }
            (20 + wire.tcp_options.len(), PROTO_TCP)
        }
        L4::Other => (0, ip.protocol),
    };
    if matches!(pkt.l4, L4::Other) && (ip.protocol == PROTO_TCP || ip.protocol == PROTO_UDP) {
        return Err(EmitError(format!(
            "IP protocol {} with no transport header (L4::Other)",
            ip.protocol
        )));
    }
    let payload_len = pkt.payload_len as usize;
    let inner_total = 20 + wire.ip_options.len() + l4_len + payload_len;
    if let (None, L4::Tcp(h)) = (&pkt.tunnel, &pkt.l4) {
        return emit_plain_tcp(pkt, wire, h, inner_total, out);
    }
    // Ethernet.
    out.extend_from_slice(&wire.eth_dst);
    out.extend_from_slice(&wire.eth_src);
    if let Some(tci) = wire.vlan_tci {
        out.extend_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        out.extend_from_slice(&tci.to_be_bytes());
    }
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    // Tunnel.
    let mut tunnel_udp_at = None;
    if let Some(t) = &pkt.tunnel {
        let oopts = wire.outer_ip_options.as_slice();
        match &t.encap {
            Encap::IpInIp | Encap::IpInIpTagged { .. } => {
                push_ipv4_header(
                    out,
                    &t.outer,
                    PROTO_IPIP,
                    20 + oopts.len() + inner_total,
                    wire.outer_ip_flags_fragment,
                    oopts,
                )?;
            }
            Encap::Geneve {
                src_port,
                vni,
                options,
            } => {
                if options.len() % 4 != 0 || options.len() > 252 {
                    return Err(EmitError(format!(
                        "Geneve options of {} bytes (a multiple of 4 up to 252)",
                        options.len()
                    )));
                }
                if *vni >= 1 << 24 {
                    return Err(EmitError(format!(
                        "Geneve VNI {vni} does not fit in 24 bits"
                    )));
                }
                let udp_len = 8 + 8 + options.len() + 14 + inner_total;
                push_ipv4_header(
                    out,
                    &t.outer,
                    PROTO_UDP,
                    20 + oopts.len() + udp_len,
                    wire.outer_ip_flags_fragment,
                    oopts,
                )?;
                tunnel_udp_at = Some(out.len());
                out.extend_from_slice(&src_port.to_be_bytes());
                out.extend_from_slice(&GENEVE_PORT.to_be_bytes());
                out.extend_from_slice(&(udp_len as u16).to_be_bytes());
                out.extend_from_slice(&[0, 0]);
                out.push((options.len() / 4) as u8);
                out.push(wire.geneve_flags);
                out.extend_from_slice(&PROTOCOL_ETHERNET.to_be_bytes());
                out.extend_from_slice(&vni.to_be_bytes()[1..]);
                out.push(wire.geneve_reserved);
                out.extend_from_slice(options);
                out.extend_from_slice(&wire.inner_eth_dst);
                out.extend_from_slice(&wire.inner_eth_src);
                out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
            }
            Encap::Udp { src_port, dst_port } => {
                let udp_len = 8 + inner_total;
                push_ipv4_header(
                    out,
                    &t.outer,
                    PROTO_UDP,
                    20 + oopts.len() + udp_len,
                    wire.outer_ip_flags_fragment,
                    oopts,
                )?;
                tunnel_udp_at = Some(out.len());
                out.extend_from_slice(&src_port.to_be_bytes());
                out.extend_from_slice(&dst_port.to_be_bytes());
                out.extend_from_slice(&(udp_len as u16).to_be_bytes());
                out.extend_from_slice(&[0, 0]);
            }
        }
    }
    // IPv4.
    push_ipv4_header(
        out,
        ip,
        proto,
        inner_total,
        wire.ip_flags_fragment,
        wire.ip_options.as_slice(),
    )?;
    // Transport header.
    let l4_at = out.len();
    match &pkt.l4 {
        L4::Udp { src_port, dst_port } => {
            out.extend_from_slice(&src_port.to_be_bytes());
            out.extend_from_slice(&dst_port.to_be_bytes());
            out.extend_from_slice(&((8 + payload_len) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
        }
        L4::Tcp(h) => {
            let mut t = [0u8; 20];
            t[0..2].copy_from_slice(&h.src_port.to_be_bytes());
            t[2..4].copy_from_slice(&h.dst_port.to_be_bytes());
            t[4..8].copy_from_slice(&h.seq.to_be_bytes());
            t[8..12].copy_from_slice(&h.ack.to_be_bytes());
            t[12] = ((l4_len / 4) as u8) << 4 | (wire.tcp_reserved_bits & 0x0F);
            t[13] = h.flags.0;
            t[14..16].copy_from_slice(&(h.window as u16).to_be_bytes());
            t[18..20].copy_from_slice(&wire.tcp_urgent.to_be_bytes());
            out.extend_from_slice(&t);
            out.extend_from_slice(wire.tcp_options.as_slice());
        }
        L4::Other => {}
    }
    // Payload, zero-filled past the materialized bytes.
    let bytes: &[u8] = pkt
        .payload_bytes
        .as_deref()
        .map(|v| v.as_slice())
        .unwrap_or(&[]);
    let n = bytes.len().min(payload_len);
    out.extend_from_slice(&bytes[..n]);
    out.resize(out.len() + (payload_len - n), 0);
    // Transport checksums over whole segments: the inner one first, then the tunnel's UDP.
    let (src, dst) = (Ipv4Addr::from(ip.src), Ipv4Addr::from(ip.dst));
    match &pkt.l4 {
        L4::Udp { .. } if !wire.udp_checksum_zero => {
            let c = l4_checksum(src, dst, PROTO_UDP, &out[l4_at..], 6);
            let c = if c == 0 { 0xFFFF } else { c };
            out[l4_at + 6..l4_at + 8].copy_from_slice(&c.to_be_bytes());
        }
        L4::Tcp(_) => {
            let c = l4_checksum(src, dst, PROTO_TCP, &out[l4_at..], 16);
            out[l4_at + 16..l4_at + 18].copy_from_slice(&c.to_be_bytes());
        }
        _ => {}
    }
    if let (Some(at), Some(t)) = (tunnel_udp_at, &pkt.tunnel) {
        if !wire.outer_udp_checksum_zero {
            let (os, od) = (Ipv4Addr::from(t.outer.src), Ipv4Addr::from(t.outer.dst));
            let c = l4_checksum(os, od, PROTO_UDP, &out[at..], 6);
            let c = if c == 0 { 0xFFFF } else { c };
            out[at + 6..at + 8].copy_from_slice(&c.to_be_bytes());
        }
    }
    out.extend_from_slice(&wire.trailer);
    Ok(())
}

/// [`emit_into`] for the common packet, plain IPv4 + TCP (checked by the caller): all headers
/// built in one stack array and appended at once, the TCP checksum summed over that array and
/// the payload bytes where they are (not over the written frame again). The same layout as
/// [`write_tcp_frame`], kept apart because building that one's header struct from a packet costs
/// ~60 instructions per forwarded frame; test `reply_tcp_frame_equals_the_packet_way` (in
/// `program.rs`) holds the two together. Writing both through one `#[inline(always)]` helper
/// taking the fields as arguments was measured too (23 Nov): +14 instructions per frame for
/// `forward`, +30 for a Redis miss (~1.2 %), so the two stay apart.
fn emit_plain_tcp(
    pkt: &Packet,
    wire: &WireExtras,
    h: &TcpHeader,
    ip_total: usize,
    out: &mut Vec<u8>,
) -> Result<(), EmitError> {
    let ip = &pkt.ip;
    if ip.dscp > 63 || ip.ecn > 3 {
        return Err(EmitError(format!(
            "DSCP {} / ECN {} do not fit in 6 / 2 bits",
            ip.dscp, ip.ecn
        )));
    }
    if ip_total > u16::MAX as usize {
        return Err(EmitError(format!(
            "IPv4 total length {ip_total} exceeds 65535"
        )));
    }
    // Ethernet (18 with a tag) + IPv4 (60) + TCP (60) at most.
    let mut hdr = [0u8; 18 + 60 + 60];
    hdr[0..6].copy_from_slice(&wire.eth_dst);
    hdr[6..12].copy_from_slice(&wire.eth_src);
    let mut n = 12;
    if let Some(tci) = wire.vlan_tci {
        hdr[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        hdr[14..16].copy_from_slice(&tci.to_be_bytes());
        n = 16;
    }
    hdr[n..n + 2].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    n += 2;
    // IPv4.
    let ip_at = n;
    let ip_opts = wire.ip_options.as_slice();
    let ihl = 20 + ip_opts.len();
    {
        let x = &mut hdr[ip_at..ip_at + ihl];
        x[0] = 0x40 | (ihl / 4) as u8;
        x[1] = (ip.dscp << 2) | ip.ecn;
        x[2..4].copy_from_slice(&(ip_total as u16).to_be_bytes());
        x[4..6].copy_from_slice(&ip.ident.to_be_bytes());
        x[6..8].copy_from_slice(&wire.ip_flags_fragment.to_be_bytes());
        x[8] = ip.ttl;
        x[9] = PROTO_TCP;
        x[12..16].copy_from_slice(&ip.src.to_be_bytes());
        x[16..20].copy_from_slice(&ip.dst.to_be_bytes());
        if !ip_opts.is_empty() {
            x[20..].copy_from_slice(ip_opts);
        }
        let c = checksum::finish(checksum::sum(x));
        x[10..12].copy_from_slice(&c.to_be_bytes());
    }
    n += ihl;
    // TCP.
    let tcp_at = n;
    let tcp_opts = wire.tcp_options.as_slice();
    let thl = 20 + tcp_opts.len();
    let payload_len = pkt.payload_len as usize;
    let bytes: &[u8] = pkt
        .payload_bytes
        .as_deref()
        .map(|v| v.as_slice())
        .unwrap_or(&[]);
    let bytes = &bytes[..bytes.len().min(payload_len)];
    {
        let t = &mut hdr[tcp_at..tcp_at + thl];
        t[0..2].copy_from_slice(&h.src_port.to_be_bytes());
        t[2..4].copy_from_slice(&h.dst_port.to_be_bytes());
        t[4..8].copy_from_slice(&h.seq.to_be_bytes());
        t[8..12].copy_from_slice(&h.ack.to_be_bytes());
        t[12] = ((thl / 4) as u8) << 4 | (wire.tcp_reserved_bits & 0x0F);
        t[13] = h.flags.0;
        t[14..16].copy_from_slice(&(h.window as u16).to_be_bytes());
        t[18..20].copy_from_slice(&wire.tcp_urgent.to_be_bytes());
        t[20..].copy_from_slice(tcp_opts);
        // The header is a whole number of 32-bit words, so the payload's words line up; the
        // zero filler past the materialized bytes adds nothing.
        let c = checksum::finish(
            checksum::pseudo_header_u32(ip.src, ip.dst, PROTO_TCP, (thl + payload_len) as u16) + checksum::sum(t)
                + checksum::sum(bytes),
        );
        t[16..18].copy_from_slice(&c.to_be_bytes());
    }
    n += thl;
    out.clear();
    out.reserve(n + payload_len + wire.trailer.len());
    out.extend_from_slice(&hdr[..n]);
    out.extend_from_slice(bytes);
    if bytes.len() < payload_len {
        out.resize(out.len() + (payload_len - bytes.len()), 0);
    }
    if !wire.trailer.is_empty() {
        out.extend_from_slice(&wire.trailer);
    }
    Ok(())
}

/// The headers of a plain (untunnelled) IPv4/TCP frame, for [`write_tcp_frame`]. `ip.protocol`
/// and `tcp.options_bytes` are ignored (TCP, and the length of `tcp_options`).
#[derive(Debug, Clone, Copy)]
pub struct TcpFrameHeaders<'a> {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    pub vlan_tci: Option<u16>,
    pub ip: Ipv4,
    pub ip_flags_fragment: u16,
    pub ip_options: &'a [u8],
    pub tcp: TcpHeader,
    pub tcp_reserved_bits: u8,
    pub tcp_urgent: u16,
    pub tcp_options: &'a [u8],
}

/// Write a plain IPv4/TCP frame into `out` (cleared first): the headers built on the stack and
/// appended at once, lengths and both checksums computed (the TCP one summed over the headers
/// and the payload where it is, not over the written frame again), then `payload`, zeros up to
/// `payload_len`, and `trailer`. The bytes [`emit_into`] writes for a packet with these fields.
pub fn write_tcp_frame(
    h: &TcpFrameHeaders<'_>,
    payload: &[u8],
    payload_len: usize,
    trailer: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), EmitError> {
    let (ip_opts, tcp_opts) = (h.ip_options, h.tcp_options);
    if ip_opts.len() > 40
        || ip_opts.len() % 4 != 0
        || tcp_opts.len() > 40
        || tcp_opts.len() % 4 != 0
    {
        return Err(EmitError(format!(
            "options of {} (IPv4) and {} (TCP) bytes: each a multiple of 4 up to 40",
            ip_opts.len(),
            tcp_opts.len()
        )));
    }
    let ip = &h.ip;
    if ip.dscp > 63 || ip.ecn > 3 {
        return Err(EmitError(format!(
            "DSCP {} / ECN {} do not fit in 6 / 2 bits",
            ip.dscp, ip.ecn
        )));
    }
    if h.tcp.window > u16::MAX as u32 {
        return Err(EmitError(format!(
            "TCP window {} does not fit in 16 bits",
            h.tcp.window
        )));
    }
    let payload = &payload[..payload.len().min(payload_len)];
    let ihl = 20 + ip_opts.len();
    let thl = 20 + tcp_opts.len();
    let ip_total = ihl + thl + payload_len;
    if ip_total > u16::MAX as usize {
        return Err(EmitError(format!(
            "IPv4 total length {ip_total} exceeds 65535"
        )));
    }
    // Ethernet (18 with a tag) + IPv4 (60) + TCP (60) at most.
    let mut hdr = [0u8; 18 + 60 + 60];
    hdr[0..6].copy_from_slice(&h.eth_dst);
    hdr[6..12].copy_from_slice(&h.eth_src);
    let mut n = 12;
    if let Some(tci) = h.vlan_tci {
        hdr[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        hdr[14..16].copy_from_slice(&tci.to_be_bytes());
        n = 16;
    }
    hdr[n..n + 2].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    n += 2;
    // IPv4.
    let ip_at = n;
    {
        let x = &mut hdr[ip_at..ip_at + ihl];
        x[0] = 0x40 | (ihl / 4) as u8;
        x[1] = (ip.dscp << 2) | ip.ecn;
        x[2..4].copy_from_slice(&(ip_total as u16).to_be_bytes());
        x[4..6].copy_from_slice(&ip.ident.to_be_bytes());
        x[6..8].copy_from_slice(&h.ip_flags_fragment.to_be_bytes());
        x[8] = ip.ttl;
        x[9] = PROTO_TCP;
        x[12..16].copy_from_slice(&ip.src.to_be_bytes());
        x[16..20].copy_from_slice(&ip.dst.to_be_bytes());
        if !ip_opts.is_empty() {
            x[20..].copy_from_slice(ip_opts);
        }
        let c = checksum::finish(checksum::sum(x));
        x[10..12].copy_from_slice(&c.to_be_bytes());
    }
    n += ihl;
    // TCP.
    let tcp_at = n;
    {
        let t = &mut hdr[tcp_at..tcp_at + thl];
        let tcp = &h.tcp;
        t[0..2].copy_from_slice(&tcp.src_port.to_be_bytes());
        t[2..4].copy_from_slice(&tcp.dst_port.to_be_bytes());
        t[4..8].copy_from_slice(&tcp.seq.to_be_bytes());
        t[8..12].copy_from_slice(&tcp.ack.to_be_bytes());
        t[12] = ((thl / 4) as u8) << 4 | (h.tcp_reserved_bits & 0x0F);
        t[13] = tcp.flags.0;
        t[14..16].copy_from_slice(&(tcp.window as u16).to_be_bytes());
        t[18..20].copy_from_slice(&h.tcp_urgent.to_be_bytes());
        t[20..].copy_from_slice(tcp_opts);
        // The header is a whole number of 32-bit words, so the payload's words line up; the
        // zero filler past the materialized bytes adds nothing.
        let c = checksum::finish(
            checksum::pseudo_header_u32(ip.src, ip.dst, PROTO_TCP, (thl + payload_len) as u16) + checksum::sum(t)
                + checksum::sum(payload),
        );
        t[16..18].copy_from_slice(&c.to_be_bytes());
    }
    n += thl;
    out.clear();
    out.reserve(n + payload_len + trailer.len());
    out.extend_from_slice(&hdr[..n]);
    out.extend_from_slice(payload);
    if payload.len() < payload_len {
        out.resize(out.len() + (payload_len - payload.len()), 0);
    }
    if !trailer.is_empty() {
        out.extend_from_slice(trailer);
    }
    Ok(())
}

/// One TCP segment as an Ethernet/IPv4 frame with correct lengths and checksums, for test rigs
/// and benchmark captures (the one builder they share). MACs default to 02:00:00:00:00:01 →
/// 02:00:00:00:00:02, TTL 64, DF set, IP ident 1, window 500, no options.
#[derive(Debug, Clone)]
pub struct TcpFrame<'a> {
    pub eth_src: [u8; 6],
    pub eth_dst: [u8; 6],
    pub src: (Ipv4Addr, u16),
    pub dst: (Ipv4Addr, u16),
    pub seq: u32,
    pub ack: u32,
    /// TCP flags (`crate::tcp::flags`).
    pub flags: u8,
    pub window: u16,
    pub ident: u16,
    pub options: Vec<crate::tcp::TcpOption>,
    pub payload: &'a [u8],
}

impl<'a> TcpFrame<'a> {
    /// A segment from `src` to `dst` with the defaults above and no payload.
    pub fn new(src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), seq: u32, ack: u32, flags: u8) -> Self {
        TcpFrame {
            eth_src: [2, 0, 0, 0, 0, 1],
            eth_dst: [2, 0, 0, 0, 0, 2],
            src,
            dst,
            seq,
            ack,
            flags,
            window: 500,
            ident: 1,
            options: Vec::new(),
            payload: &[],
        }
    }
    pub fn payload(mut self, payload: &'a [u8]) -> Self {
        self.payload = payload;
        self
    }
    pub fn options(mut self, options: Vec<crate::tcp::TcpOption>) -> Self {
        self.options = options;
        self
    }
    pub fn window(mut self, window: u16) -> Self {
        self.window = window;
        self
    }
    /// The frame's bytes. Panics only if the options do not fit in 40 bytes (a caller's bug).
    pub fn emit(&self) -> Vec<u8> {
        let options = crate::tcp::options_bytes(&self.options);
        let ip = Ipv4 {
            src: u32::from(self.src.0),
            dst: u32::from(self.dst.0),
            protocol: PROTO_TCP,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: self.ident,
        };
        let tcp = TcpHeader {
            src_port: self.src.1,
            dst_port: self.dst.1,
            seq: self.seq,
            ack: self.ack,
            flags: TcpFlags(self.flags),
            window: self.window as u32,
            options_bytes: options.len() as u8,
        };
        let headers = TcpFrameHeaders {
            eth_dst: self.eth_dst,
            eth_src: self.eth_src,
            vlan_tci: None,
            ip,
            ip_flags_fragment: 0x4000, // DF
            ip_options: &[],
            tcp,
            tcp_reserved_bits: 0,
            tcp_urgent: 0,
            tcp_options: &options,
        };
        let mut out = Vec::new();
        write_tcp_frame(&headers, self.payload, self.payload.len(), &[], &mut out)
            .expect("TcpFrame: options longer than 40 bytes");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::L4Repr;
    use crate::phv::edit::{blank_packet, make_reply, payload, set_payload, tcp_options};
    use crate::tcp::TcpOption;

    fn tcp_frame(payload: &[u8], options: Vec<TcpOption>) -> Vec<u8> {
        TcpFrame::new(
            (Ipv4Addr::new(10, 0, 0, 1), 40000),
            (Ipv4Addr::new(10, 0, 0, 2), 9042),
            100,
            200,
            0x18,
        )
        .options(options)
        .payload(payload)
        .emit()
    }

    #[test]
    fn tcp_with_timestamps_round_trips_and_is_editable() {
        let f = tcp_frame(
            b"hello",
            vec![
                TcpOption::Nop,
                TcpOption::Nop,
                TcpOption::Timestamps { value: 5, echo: 6 },
            ],
        );
        let mut p = blank_packet();
        parse_into(&f, &mut p).unwrap();
        let mut out = Vec::new();
        emit_into(&p, &mut out).unwrap();
        assert_eq!(out, f);
        assert_eq!(payload(&p), b"hello");
        assert!(tcp_options(&p)
            .unwrap()
            .contains(&TcpOption::Timestamps { value: 5, echo: 6 }));
        // Change seq and payload: the result must parse (checksums right) with the new values.
        if let L4::Tcp(h) = &mut p.l4 {
            h.seq = 7777;
        }
        set_payload(&mut p, b"a longer payload");
        emit_into(&p, &mut out).unwrap();
        let g = crate::frame::parse_frame(&out).unwrap();
        match g.l4 {
            L4Repr::Tcp(t) => assert_eq!(t.seq, 7777),
            _ => panic!(),
        }
        assert_eq!(g.payload, b"a longer payload");
    }

    #[test]
    fn reply_swaps_addresses_and_has_right_checksums() {
        let f = tcp_frame(b"GET k", vec![TcpOption::Mss(1460)]);
        let mut p = blank_packet();
        parse_into(&f, &mut p).unwrap();
        let mut r = p.clone();
        make_reply(&mut r, false);
        set_payload(&mut r, b"VALUE");
        let mut out = Vec::new();
        emit_into(&r, &mut out).unwrap();
        let g = crate::frame::parse_frame(&out).unwrap();
        assert_eq!(g.eth.dst, [2, 0, 0, 0, 0, 1]);
        assert_eq!(g.ip.src, Ipv4Addr::new(10, 0, 0, 2));
        match g.l4 {
            L4Repr::Tcp(t) => {
                assert_eq!((t.src_port, t.dst_port), (9042, 40000));
                assert!(t.options.is_empty());
            }
            _ => panic!(),
        }
        assert_eq!(g.payload, b"VALUE");
    }

    #[test]
    fn refusals() {
        let mut p = blank_packet();
        let mut arp = vec![0xffu8; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.extend_from_slice(&[0; 28]);
        assert_eq!(
            parse_into(&arp, &mut p),
            Err(Refusal::NotIpv4 { ethertype: 0x0806 })
        );
        let f = tcp_frame(b"x", vec![]);
        for cut in 0..f.len() {
            assert!(
                parse_into(&f[..cut], &mut p).is_err(),
                "truncated at {cut} accepted"
            );
        }
        let mut bad = f.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(matches!(
            parse_into(&bad, &mut p),
            Err(Refusal::Malformed(_))
        ));
        let mut frag = f.clone();
        frag[14 + 6] |= 0x20; // MF
        let c = checksum::finish(checksum::sum(&frag[14..24]) + checksum::sum(&frag[26..34]));
        frag[24..26].copy_from_slice(&c.to_be_bytes());
        assert_eq!(
            parse_into(&frag, &mut p),
            Err(Refusal::Unsupported("IPv4 fragment"))
        );
    }

    #[test]
    fn padding_trailer_is_kept() {
        let mut f = tcp_frame(b"", vec![]);
        f.resize(60, 0xAB);
        let mut p = blank_packet();
        parse_into(&f, &mut p).unwrap();
        let mut out = Vec::new();
        emit_into(&p, &mut out).unwrap();
        assert_eq!(out, f);
    }
}

