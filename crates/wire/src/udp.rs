//! UDP datagrams (RFC 768) with the IPv4 pseudo-header checksum.

use std::net::Ipv4Addr;

use crate::checksum;
use crate::ipv4::PROTO_UDP;
use crate::{be16, put16, Error, Result};

pub const HEADER_LEN: usize = 8;

#[derive(Debug, Clone, Copy)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    pub fn new_unchecked(buf: T) -> Self {
        UdpPacket { buf }
    }
    /// Checks the header fits and the length field is within 8..=buffer.
    pub fn new_checked(buf: T) -> Result<Self> {
        let have = buf.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::short("udp", HEADER_LEN, have));
        }
        let p = UdpPacket { buf };
        let len = p.len() as usize;
        if len < HEADER_LEN || len > have {
            return Err(Error::new(
                "udp",
                format!("length {len} is outside 8..={have} (the buffer)"),
            ));
        }
        Ok(p)
    }
    pub fn src_port(&self) -> u16 {
        be16(self.buf.as_ref(), 0)
    }
    pub fn dst_port(&self) -> u16 {
        be16(self.buf.as_ref(), 2)
    }
    pub fn len(&self) -> u16 {
        be16(self.buf.as_ref(), 4)
    }
    pub fn is_empty(&self) -> bool {
        self.len() as usize <= HEADER_LEN
    }
    pub fn checksum(&self) -> u16 {
        be16(self.buf.as_ref(), 6)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..self.len() as usize]
    }
    /// True if the checksum is absent (0) or right.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let d = &self.buf.as_ref()[..self.len() as usize];
        checksum::finish(checksum::pseudo_header(src, dst, PROTO_UDP, self.len()) + checksum::sum(d)) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    pub fn set_src_port(&mut self, port: u16) {
        put16(self.buf.as_mut(), 0, port);
    }
    pub fn set_dst_port(&mut self, port: u16) {
        put16(self.buf.as_mut(), 2, port);
    }
    pub fn set_len(&mut self, len: u16) {
        put16(self.buf.as_mut(), 4, len);
    }
    pub fn set_checksum(&mut self, c: u16) {
        put16(self.buf.as_mut(), 6, c);
    }
    /// Recompute the checksum over the datagram (as long as the length field says).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let len = self.len();
        self.set_checksum(0);
        let d = &self.buf.as_ref()[..len as usize];
        let c = checksum::finish(checksum::pseudo_header(src, dst, PROTO_UDP, len) + checksum::sum(d));
        // A computed 0 is sent as all ones (RFC 768): 0 means "no checksum".
        self.set_checksum(if c == 0 { 0xFFFF } else { c });
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = self.len() as usize;
        &mut self.buf.as_mut()[HEADER_LEN..len]
    }
}

/// A parsed UDP header; `payload_len` bytes follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub payload_len: usize,
}

impl UdpRepr {
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>, src: Ipv4Addr, dst: Ipv4Addr) -> Result<Self> {
        if !p.verify_checksum(src, dst) {
            return Err(Error::new("udp", format!("checksum 0x{:04x} is wrong", p.checksum())));
        }
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() as usize - HEADER_LEN,
        })
    }
    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }
    /// Write the header at the start of `buf`, whose payload (`payload_len` bytes after the
    /// header) must already be in place, and fill the checksum.
    pub fn emit(&self, buf: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr) -> Result<()> {
        let len = self.buffer_len();
        if len > u16::MAX as usize {
            return Err(Error::new("udp", format!("length {len} exceeds 65535")));
        }
        if buf.len() < len {
            return Err(Error::new(
                "udp",
                format!("datagram of {len} bytes does not fit in a buffer of {}", buf.len()),
            ));
        }
        let mut p = UdpPacket::new_unchecked(&mut buf[..len]);
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len(len as u16);
        p.fill_checksum(src, dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_bytes() {
        // 10.0.0.1:667 -> 10.0.0.2:667 "hello"; checksum 0xa2c9 computed outside this crate.
        const DGRAM: [u8; 13] = [
            0x02, 0x9b, 0x02, 0x9b, 0x00, 0x0d, 0xa2, 0xc9, b'h', b'e', b'l', b'l', b'o',
        ];
        let (s, d) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let p = UdpPacket::new_checked(&DGRAM[..]).unwrap();
        assert_eq!(
            UdpRepr::parse(&p, s, d).unwrap(),
            UdpRepr {
                src_port: 667,
                dst_port: 667,
                payload_len: 5
            }
        );
        let mut buf = DGRAM;
        buf[..8].fill(0);
        UdpRepr {
            src_port: 667,
            dst_port: 667,
            payload_len: 5,
        }
        .emit(&mut buf, s, d)
        .unwrap();
        assert_eq!(buf, DGRAM);
        // Trailing bytes past the length field (link padding) are not payload.
        let mut padded = DGRAM.to_vec();
        padded.extend_from_slice(&[0, 0, 0]);
        assert_eq!(UdpPacket::new_checked(&padded[..]).unwrap().payload(), b"hello");
        let e = UdpPacket::new_checked(&DGRAM[..10]).unwrap_err().to_string();
        assert_eq!(e, "udp: length 13 is outside 8..=10 (the buffer)");
    }

    #[test]
    fn zero_checksum_means_none_and_computed_zero_is_sent_as_ffff() {
        let (s, d) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut buf = [0x02, 0x9b, 0x02, 0x9b, 0x00, 0x0a, 0x00, 0x00, 0, 0];
        assert!(UdpPacket::new_checked(&buf[..]).unwrap().verify_checksum(s, d));
        // Choose two payload bytes that make the one's-complement sum 0xffff, so the
        // checksum computes to 0 and must go out as 0xffff.
        let partial = checksum::pseudo_header(s, d, PROTO_UDP, 10) + checksum::sum(&buf);
        let mut folded = partial;
        while folded >> 16 != 0 {
            folded = (folded & 0xFFFF) + (folded >> 16);
        }
        buf[8..10].copy_from_slice(&(0xFFFF - folded as u16).to_be_bytes());
        UdpRepr {
            src_port: 667,
            dst_port: 667,
            payload_len: 2,
        }
        .emit(&mut buf, s, d)
        .unwrap();
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.checksum(), 0xFFFF);
        assert!(p.verify_checksum(s, d));
    }

    #[test]
    fn round_trip_with_checksum() {
        let (s, d) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let r = UdpRepr {
            src_port: 667,
            dst_port: 667,
            payload_len: 5,
        };
        let mut buf = vec![0u8; 13];
        buf[8..].copy_from_slice(b"hello");
        r.emit(&mut buf, s, d).unwrap();
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, s, d).unwrap(), r);
        assert_eq!(p.payload(), b"hello");
        buf[9] ^= 1;
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert!(UdpRepr::parse(&p, s, d).unwrap_err().to_string().contains("checksum"));
        assert!(UdpPacket::new_checked(&buf[..7]).is_err());
    }
}
