//! Building and reading simulated key-value packets: UDP packets whose real payload bytes are
//! the OrbitCache header, the key and the value's 12-byte stamp, and whose virtual payload
//! length is the whole message (header + key + value), so wire sizes are exact.

use innet_sim::packet::{Ipv4, Packet, L4, IP_PROTO_UDP};
use innet_wire::orbitcache::{Header, Stamp, HEADER_BYTES, STAMP_BYTES};

/// Build a message packet. `value` is (stamp, value length in bytes); length 0 means no value.
pub fn build(
    src: (u32, u16),
    dst: (u32, u16),
    header: &Header,
    key: &[u8],
    value: Option<(Stamp, u32)>,
) -> Packet {
    let value_len = value.map(|(_, l)| l).unwrap_or(0);
    let real = HEADER_BYTES + key.len() + if value.is_some() { STAMP_BYTES } else { 0 };
    let mut bytes = vec![0u8; real];
    header.emit(&mut bytes);
    bytes[HEADER_BYTES..HEADER_BYTES + key.len()].copy_from_slice(key);
    if let Some((stamp, _)) = value {
        stamp.emit(&mut bytes[HEADER_BYTES + key.len()..]);
    }
    let mut pkt = Packet::new(
        Ipv4::new(src.0, dst.0, IP_PROTO_UDP),
        L4::Udp { src_port: src.1, dst_port: dst.1 },
        (HEADER_BYTES + key.len()) as u32 + value_len,
    );
    pkt.payload_bytes = Some(Box::new(bytes));
    pkt.is_data = true;
    pkt
}

/// The header of a packet, if it carries one.
#[inline]
pub fn header(pkt: &Packet) -> Option<Header> {
    Header::parse(pkt.payload_bytes.as_deref()?).ok()
}

/// Rewrite the header of a packet that carries one.
#[inline]
pub fn set_header(pkt: &mut Packet, h: &Header) {
    if let Some(b) = pkt.payload_bytes.as_deref_mut() {
        if b.len() >= HEADER_BYTES {
            h.emit(b);
        }
    }
}

/// The key bytes of a message with `key_len`-byte keys.
#[inline]
pub fn key(pkt: &Packet, key_len: usize) -> Option<&[u8]> {
    pkt.payload_bytes.as_deref()?.get(HEADER_BYTES..HEADER_BYTES + key_len)
}

/// The value carried: (stamp, value length), if the message has a value.
#[inline]
pub fn value(pkt: &Packet, key_len: usize) -> Option<(Stamp, u32)> {
    let b = pkt.payload_bytes.as_deref()?;
    let at = HEADER_BYTES + key_len;
    let stamp = Stamp::parse(b.get(at..)?).ok()?;
    Some((stamp, pkt.payload_len.saturating_sub(at as u32)))
}

/// Replace the value (stamp and length) of a message, keeping header and key.
pub fn set_value(pkt: &mut Packet, key_len: usize, value: Option<(Stamp, u32)>) {
    let at = HEADER_BYTES + key_len;
    if let Some(b) = pkt.payload_bytes.as_deref_mut() {
        b.truncate(at);
        if let Some((stamp, _)) = value {
            b.resize(at + STAMP_BYTES, 0);
            stamp.emit(&mut b[at..]);
        }
    }
    pkt.payload_len = at as u32 + value.map(|(_, l)| l).unwrap_or(0);
}

/// Swap source and destination addresses and ports (a reply from the switch).
pub fn swap_endpoints(pkt: &mut Packet) {
    std::mem::swap(&mut pkt.ip.src, &mut pkt.ip.dst);
    if let L4::Udp { src_port, dst_port } = &mut pkt.l4 {
        std::mem::swap(src_port, dst_port);
    }
}

/// (source IP, source port, destination IP, destination port) of a UDP packet.
#[inline]
pub fn endpoints(pkt: &Packet) -> (u32, u16, u32, u16) {
    let (s, d) = pkt.l4.ports();
    (pkt.ip.src, s, pkt.ip.dst, d)
}

pub fn set_dst(pkt: &mut Packet, ip: u32, port: u16) {
    pkt.ip.dst = ip;
    if let L4::Udp { dst_port, .. } = &mut pkt.l4 {
        *dst_port = port;
    }
}

pub fn set_src(pkt: &mut Packet, ip: u32, port: u16) {
    pkt.ip.src = ip;
    if let L4::Udp { src_port, .. } = &mut pkt.l4 {
        *src_port = port;
    }
}

/// Whether a UDP packet is a key-value message by its ports (the switch's parser condition).
#[inline]
pub fn is_kv(pkt: &Packet) -> bool {
    match pkt.l4 {
        L4::Udp { src_port, dst_port } => {
            innet_wire::orbitcache::is_kv_port(src_port) || innet_wire::orbitcache::is_kv_port(dst_port)
        }
        _ => false,
    }
}
