//! The parsed packet both switch runtimes and the simulator share: a header stack (like a P4
//! PHV) plus a virtual payload length, and its one byte codec (`codec`: frame ↔ packet, with
//! the fast plain-TCP path) and the edits programs make (`edit`: replies, payloads, options).
//!
//! Bytes exist only where someone needs them (`payload_bytes`); the size on the wire is always
//! exact, computed from the headers present, so serialization delays are right.

pub mod codec;
pub mod edit;

pub use crate::ipv4::{PROTO_IPIP as IP_PROTO_IPIP, PROTO_TCP as IP_PROTO_TCP, PROTO_UDP as IP_PROTO_UDP};
pub use crate::tcp::TcpFlags;
pub use codec::{emit_into, parse_into, EmitError, Refusal};

pub const ETHERNET_HEADER_BYTES: u32 = 14;
pub const ETHERNET_FCS_BYTES: u32 = 4;
/// Preamble + start-of-frame delimiter (8) and the minimum inter-frame gap (12): occupy the link
/// but are not part of the frame.
pub const ETHERNET_PHY_OVERHEAD_BYTES: u32 = 20;
pub const ETHERNET_MIN_FRAME_BYTES: u32 = 64;
pub const IPV4_HEADER_BYTES: u32 = 20;
pub const UDP_HEADER_BYTES: u32 = 8;
pub const TCP_HEADER_BYTES: u32 = 20;
pub const GENEVE_HEADER_BYTES: u32 = 8;

/// ECN codepoints of the IPv4 header.
pub mod ecn {
    pub const NOT_ECT: u8 = 0;
    pub const ECT1: u8 = 1;
    pub const ECT0: u8 = 2;
    pub const CE: u8 = 3;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ipv4 {
    pub src: u32,
    pub dst: u32,
    pub protocol: u8,
    pub ttl: u8,
    pub dscp: u8,
    pub ecn: u8,
    pub ident: u16,
}

impl Ipv4 {
    pub fn new(src: u32, dst: u32, protocol: u8) -> Self {
        Ipv4 { src, dst, protocol, ttl: 64, dscp: 0, ecn: ecn::NOT_ECT, ident: 0 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub window: u32,
    /// TCP option bytes (MSS, window scale, ...), counted in the wire size.
    pub options_bytes: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    Udp { src_port: u16, dst_port: u16 },
    Tcp(TcpHeader),
    /// No transport header the simulator understands; `payload_len` covers the rest.
    Other,
}

impl L4 {
    #[inline]
    pub fn ports(&self) -> (u16, u16) {
        match *self {
            L4::Udp { src_port, dst_port } => (src_port, dst_port),
            L4::Tcp(h) => (h.src_port, h.dst_port),
            L4::Other => (0, 0),
        }
    }
    #[inline]
    pub fn header_bytes(&self) -> u32 {
        match self {
            L4::Udp { .. } => UDP_HEADER_BYTES,
            L4::Tcp(h) => TCP_HEADER_BYTES + h.options_bytes as u32,
            L4::Other => 0,
        }
    }
}

/// How the inner packet is carried when a tunnel header is present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encap {
    /// Outer IPv4 directly around the inner IPv4 (protocol 4).
    IpInIp,
    /// Outer IPv4 + UDP around the inner IPv4 (e.g. SwitchV2P's UDP tunnel).
    Udp { src_port: u16, dst_port: u16 },
    /// Outer IPv4 + UDP(6081) + Geneve + inner Ethernet. Options are raw TLV bytes (multiple of 4).
    Geneve { src_port: u16, vni: u32, options: Vec<u8> },
    /// IP-in-IP on the wire, plus in-band metadata that costs no wire bytes (TLVs in Geneve's
    /// option format, at most 40 bytes), like ns-3's packet tags. For reproducing simulations
    /// that carried per-packet state for free (the SwitchV2P artifact: its three options take
    /// 36 bytes); pcap shows plain IP-in-IP. The tags live in the packet itself, not in an
    /// allocation of their own: every switch hop reads them, and a separate buffer was a cold
    /// miss per hop (docs/results/engine.md, issue 34).
    IpInIpTagged { tags: OptionBytes },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    pub outer: Ipv4,
    pub encap: Encap,
}

impl Tunnel {
    pub fn header_bytes(&self) -> u32 {
        IPV4_HEADER_BYTES
            + match &self.encap {
                Encap::IpInIp | Encap::IpInIpTagged { .. } => 0,
                Encap::Udp { .. } => UDP_HEADER_BYTES,
                Encap::Geneve { options, .. } => {
                    UDP_HEADER_BYTES + GENEVE_HEADER_BYTES + options.len() as u32 + ETHERNET_HEADER_BYTES
                }
            }
    }
}

/// Up to 40 option bytes in 32-bit words, kept raw: IPv4 or TCP options (so a frame re-emits
/// byte-exactly), or a tagged tunnel's in-band tags ([`Encap::IpInIpTagged`]).
/// Two values are equal when their option bytes are (bytes past `len` are ignored: `set` does
/// not clear them).
#[derive(Clone, Copy, Eq)]
pub struct OptionBytes {
    len: u8,
    bytes: [u8; 40],
}

impl Default for OptionBytes {
    fn default() -> Self {
        OptionBytes { len: 0, bytes: [0; 40] }
    }
}

impl OptionBytes {
    /// Raw options; `None` if longer than 40 bytes or not a multiple of 4.
    pub fn new(raw: &[u8]) -> Option<Self> {
        let mut o = OptionBytes::default();
        o.set(raw).then_some(o)
    }
    /// Replace the options; false (and unchanged) if `raw` is longer than 40 bytes or not a
    /// multiple of 4 (IPv4 and TCP headers are counted in 32-bit words).
    pub fn set(&mut self, raw: &[u8]) -> bool {
        if raw.len() > 40 || !raw.len().is_multiple_of(4) {
            return false;
        }
        self.bytes[..raw.len()].copy_from_slice(raw);
        self.len = raw.len() as u8;
        true
    }
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl PartialEq for OptionBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::fmt::Debug for OptionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OptionBytes({:02x?})", self.as_slice())
    }
}

/// What a real frame carries beyond the simulator's header stack. The real-packet runtime
/// (crates/dataplane `real`) fills it on receive and writes it back on transmit, so a program
/// that does not touch it forwards the frame byte-exactly.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireExtras {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    /// 802.1Q tag control information, if the frame was tagged.
    pub vlan_tci: Option<u16>,
    /// The IPv4 flags/fragment-offset field (DF and the reserved bit; fragments are never
    /// handed to a program).
    pub ip_flags_fragment: u16,
    pub ip_options: OptionBytes,
    /// TCP option bytes (length = the TCP header's `options_bytes`).
    pub tcp_options: OptionBytes,
    /// The 4 bits between the TCP data offset and the flags (reserved + AccECN/NS).
    pub tcp_reserved_bits: u8,
    pub tcp_urgent: u16,
    /// True when a UDP sender sent checksum 0 (none): re-emitted as 0. Otherwise the runtime
    /// computes the UDP checksum.
    pub udp_checksum_zero: bool,
    /// Bytes after the IPv4 packet (Ethernet padding of short frames), re-emitted as they came.
    pub trailer: Vec<u8>,
    // ---- tunnelled frames only (`Packet::tunnel` set); the fields above describe the inner packet ----
    /// The outer IPv4 header's flags/fragment field and options.
    pub outer_ip_flags_fragment: u16,
    pub outer_ip_options: OptionBytes,
    /// True when the outer UDP (Geneve) checksum was 0 (none).
    pub outer_udp_checksum_zero: bool,
    /// Geneve: the flag byte (O, C, reserved bits) and the last reserved byte.
    pub geneve_flags: u8,
    pub geneve_reserved: u8,
    /// Geneve: the inner Ethernet addresses.
    pub inner_eth_dst: [u8; 6],
    pub inner_eth_src: [u8; 6],
}

/// One packet: the parsed headers, the payload (virtual or materialized) and the metadata a
/// simulation carries beside it.
///
/// Field order is fixed (`repr(C)`) so that what a switch hop reads — the hop count, the IPv4
/// and transport headers, the payload length — is the first 56 bytes, and the tunnel (whose
/// tag every hop reads too) the next 48: in the simulator's 64-byte-aligned packet slots a hop
/// reads two cache lines of a packet instead of three.
#[derive(Debug, Clone, PartialEq)]
#[repr(C)]
pub struct Packet {
    /// Switches traversed so far (simulation-only, like the fields after `tunnel`).
    pub hops: u16,
    /// Passes through a switch's recirculation port so far (reset when it leaves the switch).
    pub recirculations: u16,
    /// Payload bytes after the transport header (virtual unless `payload_bytes` is set).
    pub payload_len: u32,
    pub ip: Ipv4,
    pub l4: L4,
    /// Set for packets the traffic apps count as data (not pure ACKs or control).
    pub is_data: bool,
    pub tunnel: Option<Tunnel>,
    /// Unique for the run (creation order), for traces and pcaps.
    pub uid: u64,
    /// Real payload bytes for applications that need them; its length never exceeds `payload_len`
    /// (the rest is zero filler).
    pub payload_bytes: Option<Box<Vec<u8>>>,
    /// Frame details only a real interface has (MACs, raw IP/TCP options, ...): set by the
    /// real-packet runtime, `None` in simulations (one pointer, so the hot path stays the same).
    pub wire: Option<Box<WireExtras>>,
    // ---- simulation-only metadata (like ns-3 packet tags), never on the wire ----
    /// Flow/connection this packet belongs to, for metrics (u64::MAX when none).
    pub flow_id: u64,
    /// Creation time.
    pub created_ps: u64,
}

const _: () = {
    assert!(std::mem::offset_of!(Packet, tunnel) <= 64 - 8);
    assert!(std::mem::offset_of!(Packet, uid) <= 128);
};

pub const NO_FLOW: u64 = u64::MAX;

impl Packet {
    pub fn new(ip: Ipv4, l4: L4, payload_len: u32) -> Self {
        Packet {
            uid: 0,
            tunnel: None,
            ip,
            l4,
            payload_len,
            payload_bytes: None,
            wire: None,
            flow_id: NO_FLOW,
            created_ps: 0,
            hops: 0,
            is_data: false,
            recirculations: 0,
        }
    }

    /// The header that routing and ECMP look at: the tunnel's outer header when encapsulated.
    #[inline]
    pub fn routing_ip(&self) -> &Ipv4 {
        match &self.tunnel {
            Some(t) => &t.outer,
            None => &self.ip,
        }
    }

    #[inline]
    pub fn routing_ip_mut(&mut self) -> &mut Ipv4 {
        match &mut self.tunnel {
            Some(t) => &mut t.outer,
            None => &mut self.ip,
        }
    }

    /// The outer 5-tuple (src, dst, protocol, src port, dst port) that ECMP hashes.
    #[inline]
    pub fn outer_five_tuple(&self) -> (u32, u32, u8, u16, u16) {
        match &self.tunnel {
            None => {
                let (s, d) = self.l4.ports();
                (self.ip.src, self.ip.dst, self.ip.protocol, s, d)
            }
            Some(t) => match &t.encap {
                Encap::IpInIp | Encap::IpInIpTagged { .. } => (t.outer.src, t.outer.dst, IP_PROTO_IPIP, 0, 0),
                Encap::Udp { src_port, dst_port } => {
                    (t.outer.src, t.outer.dst, IP_PROTO_UDP, *src_port, *dst_port)
                }
                Encap::Geneve { src_port, .. } => {
                    (t.outer.src, t.outer.dst, IP_PROTO_UDP, *src_port, 6081)
                }
            },
        }
    }

    /// Ethernet frame length (header, IP packet, FCS; padded to the 64 B minimum).
    #[inline]
    pub fn frame_bytes(&self) -> u32 {
        let tunnel = self.tunnel.as_ref().map(|t| t.header_bytes()).unwrap_or(0);
        let l3 = tunnel + IPV4_HEADER_BYTES + self.l4.header_bytes() + self.payload_len;
        (ETHERNET_HEADER_BYTES + l3 + ETHERNET_FCS_BYTES).max(ETHERNET_MIN_FRAME_BYTES)
    }

    /// Bytes the frame occupies on the link, including preamble and inter-frame gap.
    #[inline]
    pub fn wire_bytes(&self) -> u32 {
        self.frame_bytes() + ETHERNET_PHY_OVERHEAD_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes_follow_the_headers_present() {
        let p = Packet::new(Ipv4::new(1, 2, IP_PROTO_UDP), L4::Udp { src_port: 1, dst_port: 2 }, 1000);
        assert_eq!(p.frame_bytes(), 14 + 20 + 8 + 1000 + 4);
        assert_eq!(p.wire_bytes(), p.frame_bytes() + 20);
        let mut t = p.clone();
        t.tunnel = Some(Tunnel {
            outer: Ipv4::new(3, 4, IP_PROTO_UDP),
            encap: Encap::Geneve { src_port: 9, vni: 7, options: vec![0; 8] },
        });
        assert_eq!(t.frame_bytes(), p.frame_bytes() + 20 + 8 + 8 + 8 + 14);
        let small = Packet::new(Ipv4::new(1, 2, IP_PROTO_UDP), L4::Udp { src_port: 1, dst_port: 2 }, 0);
        assert_eq!(small.frame_bytes(), 64);
    }
}
