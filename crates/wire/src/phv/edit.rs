//! The edits a program makes to a received packet: a reply to its sender, a new payload, new
//! TCP options; and fresh packets for the codec to fill or for a program to generate.

use super::{Ipv4, OptionBytes, Packet, WireExtras, L4};

/// A fresh packet with empty wire extras and payload buffer, for [`parse_into`] to fill.
pub fn blank_packet() -> Packet {
    let mut p = Packet::new(Ipv4::default(), L4::Other, 0);
    p.wire = Some(Box::default());
    p.payload_bytes = Some(Box::default());
    p
}

/// Turn `pkt` (a copy of a received packet) into a packet going back to its sender: MACs, IP
/// addresses (outer ones and inner MACs too, when tunnelled) and ports swapped, TTL 64, new IP ident 0, no padding trailer, no payload. A TCP
/// reply keeps the request's options only if `keep_tcp_options` (e.g. timestamps a program
/// rewrites); otherwise it has none. The caller then sets seq/ack/flags/window and the payload.
pub fn make_reply(pkt: &mut Packet, keep_tcp_options: bool) {
    let w = pkt.wire.get_or_insert_with(Box::default);
    std::mem::swap(&mut w.eth_dst, &mut w.eth_src);
    w.trailer.clear();
    w.ip_options = OptionBytes::default();
    w.udp_checksum_zero = false;
    w.tcp_urgent = 0;
    w.tcp_reserved_bits = 0;
    if !keep_tcp_options {
        w.tcp_options = OptionBytes::default();
    }
    let opts = w.tcp_options.len() as u8;
    std::mem::swap(&mut w.inner_eth_dst, &mut w.inner_eth_src);
    if let Some(t) = &mut pkt.tunnel {
        std::mem::swap(&mut t.outer.src, &mut t.outer.dst);
        t.outer.ttl = 64;
    }
    std::mem::swap(&mut pkt.ip.src, &mut pkt.ip.dst);
    pkt.ip.ttl = 64;
    pkt.ip.ident = 0;
    pkt.ip.ecn = 0;
    match &mut pkt.l4 {
        L4::Udp { src_port, dst_port } => std::mem::swap(src_port, dst_port),
        L4::Tcp(h) => {
            std::mem::swap(&mut h.src_port, &mut h.dst_port);
            h.options_bytes = opts;
        }
        L4::Other => {}
    }
    set_payload(pkt, &[]);
}

/// Replace the payload bytes (and `payload_len`).
pub fn set_payload(pkt: &mut Packet, bytes: &[u8]) {
    let b = pkt.payload_bytes.get_or_insert_with(Box::default);
    b.clear();
    b.extend_from_slice(bytes);
    pkt.payload_len = bytes.len() as u32;
}

/// The payload bytes a received packet carries (empty if none were materialized).
pub fn payload(pkt: &Packet) -> &[u8] {
    pkt.payload_bytes
        .as_deref()
        .map(|v| v.as_slice())
        .unwrap_or(&[])
}

/// Replace the TCP options (raw bytes, a multiple of 4 up to 40), keeping `options_bytes` in
/// step. False if the packet is not TCP or the options do not fit.
pub fn set_tcp_options(pkt: &mut Packet, raw: &[u8]) -> bool {
    let L4::Tcp(h) = &mut pkt.l4 else {
        return false;
    };
    let w = pkt.wire.get_or_insert_with(Box::default);
    if !w.tcp_options.set(raw) {
        return false;
    }
    h.options_bytes = raw.len() as u8;
    true
}

/// The parsed TCP options of a packet (timestamps, SACK, MSS, ...), via crates/wire.
pub fn tcp_options(pkt: &Packet) -> crate::Result<Vec<crate::tcp::TcpOption>> {
    match pkt.wire.as_deref() {
        Some(w) => crate::tcp::parse_options(w.tcp_options.as_slice()),
        None => Ok(Vec::new()),
    }
}

/// A brand-new packet with the given wire extras (e.g. a clone of a received packet's), for
/// programs that generate traffic.
pub fn new_wire_packet(ip: Ipv4, l4: L4, wire: WireExtras) -> Packet {
    let mut p = Packet::new(ip, l4, 0);
    p.wire = Some(Box::new(wire));
    p.payload_bytes = Some(Box::default());
    p
}

