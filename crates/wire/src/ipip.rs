//! IP-in-IP (RFC 2003, IPv4 protocol 4): put a whole IPv4 packet behind an outer IPv4 header and
//! take it out again. The systems that tunnel between hypervisors (SwitchV2P's baseline) use it;
//! `frame` parses and emits it as part of whole frames.

use crate::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_IPIP};
use crate::{Error, Result};

/// Write `outer` (protocol forced to 4, length from `inner`) followed by `inner` into `buf`;
/// returns the bytes written. `inner` must itself be a valid IPv4 packet.
pub fn encapsulate_into(outer: &Ipv4Repr, inner: &[u8], buf: &mut [u8]) -> Result<usize> {
    Ipv4Packet::new_checked(inner).map_err(|e| Error::new("ipip", format!("inner packet: {e}")))?;
    let outer = Ipv4Repr {
        protocol: PROTO_IPIP,
        payload_len: inner.len(),
        ..outer.clone()
    };
    let total = outer.buffer_len();
    if buf.len() < total {
        return Err(Error::new(
            "ipip",
            format!(
                "encapsulated packet of {total} bytes does not fit in a buffer of {}",
                buf.len()
            ),
        ));
    }
    outer.emit(buf)?;
    buf[outer.header_len()..total].copy_from_slice(inner);
    Ok(total)
}

/// `encapsulate_into` a new buffer of exactly the right size.
pub fn encapsulate(outer: &Ipv4Repr, inner: &[u8]) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; outer.header_len() + inner.len()];
    let n = encapsulate_into(outer, inner, &mut buf)?;
    debug_assert_eq!(n, buf.len());
    Ok(buf)
}

/// Validate the outer header of an IP-in-IP packet and return it with a checked view of the
/// inner packet (borrowed, no copy). Fails unless the outer protocol is 4 and the inner
/// header is a well-formed IPv4 header.
pub fn decapsulate(packet: &[u8]) -> Result<(Ipv4Repr, Ipv4Packet<&[u8]>)> {
    let p = Ipv4Packet::new_checked(packet)?;
    let outer = Ipv4Repr::parse(&p)?;
    if outer.protocol != PROTO_IPIP {
        return Err(Error::new(
            "ipip",
            format!("outer protocol is {}, expected 4 (IP-in-IP)", outer.protocol),
        ));
    }
    let body = &packet[p.header_len()..p.total_len() as usize];
    let inner = Ipv4Packet::new_checked(body).map_err(|e| Error::new("ipip", format!("inner packet: {e}")))?;
    Ok((outer, inner))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::PROTO_UDP;
    use std::net::Ipv4Addr;

    fn hdr(src: [u8; 4], dst: [u8; 4], protocol: u8, payload_len: usize) -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::from(src),
            dst: Ipv4Addr::from(dst),
            protocol,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_fragment: false,
            options: vec![],
            payload_len,
        }
    }

    #[test]
    fn encapsulate_then_decapsulate() {
        let inner_r = hdr([172, 16, 0, 1], [172, 16, 0, 2], PROTO_UDP, 3);
        let mut inner = vec![0u8; 23];
        inner_r.emit(&mut inner).unwrap();
        inner[20..].copy_from_slice(b"abc");
        // The outer's protocol and length are wrong on purpose: encapsulate sets them.
        let bytes = encapsulate(&hdr([10, 0, 0, 1], [10, 0, 0, 2], 17, 999), &inner).unwrap();
        assert_eq!(bytes.len(), 43);
        assert_eq!((bytes[9], u16::from_be_bytes([bytes[2], bytes[3]])), (4, 43));
        let (outer, view) = decapsulate(&bytes).unwrap();
        assert_eq!(outer, hdr([10, 0, 0, 1], [10, 0, 0, 2], 4, 23));
        assert_eq!(Ipv4Repr::parse(&view).unwrap(), inner_r);
        assert_eq!(view.payload(), b"abc");
    }

    #[test]
    fn errors_say_which_layer() {
        let e = encapsulate(&hdr([1; 4], [2; 4], 4, 0), &[0x45, 0])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "ipip: inner packet: ipv4: needs 20 bytes, buffer has 2");
        let mut plain = vec![0u8; 20];
        hdr([1; 4], [2; 4], 17, 0).emit(&mut plain).unwrap();
        let e = decapsulate(&plain).unwrap_err().to_string();
        assert_eq!(e, "ipip: outer protocol is 17, expected 4 (IP-in-IP)");
        let mut small = [0u8; 30];
        let e = encapsulate_into(&hdr([1; 4], [2; 4], 4, 0), &plain, &mut small)
            .unwrap_err()
            .to_string();
        assert!(e.contains("40 bytes does not fit in a buffer of 30"), "{e}");
    }
}
