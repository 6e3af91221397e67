//! Whole frames as the per-header `Repr`s put together: Ethernet, IPv4, then UDP/TCP/other,
//! optionally inside a tunnel (IP-in-IP, a UDP tunnel on a known port, or Geneve with an inner
//! Ethernet frame). `parse_frame` takes a frame apart, validating every layer; `FrameRepr::emit`
//! puts one together byte-exactly.
//!
//! This is not the packet codec: runtime code (both switch runtimes, pcap export) turns frames
//! into packets and back only through `phv::codec`. `FrameRepr` is built from the header
//! `Repr`s alone, independently of that codec, which is why tests and fuzz targets use it as
//! the oracle the codec's output is checked against.

use crate::ethernet::{EthernetPacket, EthernetRepr, ETHERTYPE_IPV4};
use crate::geneve::{GenevePacket, GeneveRepr, PROTOCOL_ETHERNET, UDP_PORT as GENEVE_PORT};
use crate::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_IPIP, PROTO_TCP, PROTO_UDP};
use crate::tcp::{TcpPacket, TcpRepr};
use crate::udp::{UdpPacket, UdpRepr, HEADER_LEN as UDP_LEN};
use crate::{Error, Result};

/// The transport layer of the innermost IPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L4Repr {
    Udp {
        src_port: u16,
        dst_port: u16,
    },
    Tcp(TcpRepr),
    /// Another protocol: everything after the IP header is payload.
    Other,
}

/// How the inner packet is carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncapRepr {
    IpInIp,
    /// IPv4/UDP directly around the inner IPv4 packet.
    Udp {
        src_port: u16,
        dst_port: u16,
    },
    /// IPv4/UDP(6081)/Geneve/Ethernet around the inner IPv4 packet.
    Geneve {
        src_port: u16,
        geneve: GeneveRepr,
        inner_eth: EthernetRepr,
    },
}

/// The outer IPv4 header of a tunnel and its encapsulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelRepr {
    pub outer: Ipv4Repr,
    pub encap: EncapRepr,
}

/// A whole IPv4 frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRepr {
    pub eth: EthernetRepr,
    pub tunnel: Option<TunnelRepr>,
    /// The innermost IPv4 header (lengths and checksums are recomputed on emit).
    pub ip: Ipv4Repr,
    pub l4: L4Repr,
    pub payload: Vec<u8>,
}

fn parse_inner(ip_bytes: &[u8]) -> Result<(Ipv4Repr, L4Repr, Vec<u8>)> {
    let p = Ipv4Packet::new_checked(ip_bytes)?;
    let ip = Ipv4Repr::parse(&p)?;
    let body = p.payload();
    match ip.protocol {
        PROTO_UDP => {
            let u = UdpPacket::new_checked(body)?;
            let r = UdpRepr::parse(&u, ip.src, ip.dst)?;
            Ok((
                ip,
                L4Repr::Udp {
                    src_port: r.src_port,
                    dst_port: r.dst_port,
                },
                u.payload().to_vec(),
            ))
        }
        PROTO_TCP => {
            let t = TcpPacket::new_checked(body)?;
            let r = TcpRepr::parse(&t, ip.src, ip.dst)?;
            Ok((ip, L4Repr::Tcp(r), t.payload().to_vec()))
        }
        _ => Ok((ip, L4Repr::Other, body.to_vec())),
    }
}

/// Parse a frame. UDP to `udp_tunnel_ports` is read as a UDP tunnel carrying IPv4.
pub fn parse_frame_with(frame: &[u8], udp_tunnel_ports: &[u16]) -> Result<FrameRepr> {
    let e = EthernetPacket::new_checked(frame)?;
    let eth = EthernetRepr::parse(&e)?;
    if eth.ethertype != ETHERTYPE_IPV4 {
        return Err(Error::new(
            "frame",
            format!("ethertype 0x{:04x} is not IPv4", eth.ethertype),
        ));
    }
    let outer_p = Ipv4Packet::new_checked(e.payload())?;
    let outer = Ipv4Repr::parse(&outer_p)?;
    let body = outer_p.payload();
    let tunnel_udp = |body: &[u8]| -> Result<Option<(u16, u16, usize)>> {
        if outer.protocol != PROTO_UDP {
            return Ok(None);
        }
        let u = UdpPacket::new_checked(body)?;
        let d = u.dst_port();
        Ok((d == GENEVE_PORT || udp_tunnel_ports.contains(&d)).then(|| (u.src_port(), d, u.len() as usize)))
    };
    let (encap, inner_bytes): (EncapRepr, &[u8]) = if outer.protocol == PROTO_IPIP {
        (EncapRepr::IpInIp, body)
    } else if let Some((src_port, dst_port, len)) = tunnel_udp(body)? {
        let u = UdpPacket::new_checked(body)?;
        UdpRepr::parse(&u, outer.src, outer.dst)?;
        let inner = &body[UDP_LEN..len];
        if dst_port == GENEVE_PORT {
            let g = GenevePacket::new_checked(inner)?;
            let geneve = GeneveRepr::parse(&g)?;
            if geneve.protocol != PROTOCOL_ETHERNET {
                return Err(Error::new(
                    "geneve",
                    format!("protocol 0x{:04x} is not Ethernet", geneve.protocol),
                ));
            }
            let ie = EthernetPacket::new_checked(g.payload())?;
            let inner_eth = EthernetRepr::parse(&ie)?;
            if inner_eth.ethertype != ETHERTYPE_IPV4 {
                return Err(Error::new(
                    "frame",
                    format!("inner ethertype 0x{:04x} is not IPv4", inner_eth.ethertype),
                ));
            }
            let start = inner.len() - ie.payload().len();
            (
                EncapRepr::Geneve {
                    src_port,
                    geneve,
                    inner_eth,
                },
                &inner[start..],
            )
        } else {
            (EncapRepr::Udp { src_port, dst_port }, inner)
        }
    } else {
        let (ip, l4, payload) = parse_inner(e.payload())?;
        return Ok(FrameRepr {
            eth,
            tunnel: None,
            ip,
            l4,
            payload,
        });
    };
    let (ip, l4, payload) = parse_inner(inner_bytes)?;
    Ok(FrameRepr {
        eth,
        tunnel: Some(TunnelRepr { outer, encap }),
        ip,
        l4,
        payload,
    })
}

/// Parse a frame, recognizing IP-in-IP and Geneve tunnels.
pub fn parse_frame(frame: &[u8]) -> Result<FrameRepr> {
    parse_frame_with(frame, &[])
}

impl FrameRepr {
    fn inner_len(&self) -> usize {
        let l4 = match &self.l4 {
            L4Repr::Udp { .. } => UDP_LEN,
            L4Repr::Tcp(t) => t.header_len(),
            L4Repr::Other => 0,
        };
        self.ip.header_len() + l4 + self.payload.len()
    }

    fn tunnel_header_len(&self) -> usize {
        match &self.tunnel {
            None => 0,
            Some(t) => {
                t.outer.header_len()
                    + match &t.encap {
                        EncapRepr::IpInIp => 0,
                        EncapRepr::Udp { .. } => UDP_LEN,
                        EncapRepr::Geneve { geneve, inner_eth, .. } => {
                            UDP_LEN + geneve.header_len() + inner_eth.header_len()
                        }
                    }
            }
        }
    }

    /// Bytes of the frame (no FCS, no padding).
    pub fn buffer_len(&self) -> usize {
        self.eth.header_len() + self.tunnel_header_len() + self.inner_len()
    }

    /// Serialize, recomputing every length and checksum.
    pub fn emit(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; self.buffer_len()];
        let inner_start = buf.len() - self.inner_len();
        self.emit_inner(&mut buf[inner_start..])?;
        self.eth.emit(&mut buf);
        let mut at = self.eth.header_len();
        if let Some(t) = &self.tunnel {
            let mut outer = t.outer.clone();
            outer.payload_len = buf.len() - at - outer.header_len();
            outer.protocol = match t.encap {
                EncapRepr::IpInIp => PROTO_IPIP,
                _ => PROTO_UDP,
            };
            outer.emit(&mut buf[at..])?;
            at += outer.header_len();
            let udp = |src_port, dst_port, buf: &mut [u8]| {
                UdpRepr {
                    src_port,
                    dst_port,
                    payload_len: buf.len() - UDP_LEN,
                }
                .emit(buf, outer.src, outer.dst)
            };
            match &t.encap {
                EncapRepr::IpInIp => {}
                EncapRepr::Udp { src_port, dst_port } => {
                    let end = buf.len();
                    udp(*src_port, *dst_port, &mut buf[at..end])?;
                }
                EncapRepr::Geneve {
                    src_port,
                    geneve,
                    inner_eth,
                } => {
                    let g = at + UDP_LEN;
                    geneve.emit(&mut buf[g..])?;
                    inner_eth.emit(&mut buf[g + geneve.header_len()..]);
                    let end = buf.len();
                    udp(*src_port, GENEVE_PORT, &mut buf[at..end])?;
                }
            }
        }
        Ok(buf)
    }

    fn emit_inner(&self, buf: &mut [u8]) -> Result<()> {
        let mut ip = self.ip.clone();
        ip.payload_len = buf.len() - ip.header_len();
        ip.protocol = match &self.l4 {
            L4Repr::Udp { .. } => PROTO_UDP,
            L4Repr::Tcp(_) => PROTO_TCP,
            L4Repr::Other => ip.protocol,
        };
        let hl = ip.header_len();
        ip.emit(buf)?;
        let body = &mut buf[hl..];
        match &self.l4 {
            L4Repr::Udp { src_port, dst_port } => {
                body[UDP_LEN..].copy_from_slice(&self.payload);
                UdpRepr {
                    src_port: *src_port,
                    dst_port: *dst_port,
                    payload_len: self.payload.len(),
                }
                .emit(body, ip.src, ip.dst)
            }
            L4Repr::Tcp(t) => {
                let mut t = t.clone();
                t.payload_len = self.payload.len();
                body[t.header_len()..].copy_from_slice(&self.payload);
                t.emit(body, ip.src, ip.dst)
            }
            L4Repr::Other => {
                body.copy_from_slice(&self.payload);
                Ok(())
            }
        }
    }
}
