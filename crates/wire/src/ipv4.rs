//! IPv4 headers (RFC 791), options carried as bytes, ECN and checksum helpers.

use std::net::Ipv4Addr;

use crate::checksum;
use crate::{be16, put16, Error, Result};

pub const PROTO_IPIP: u8 = 4;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const MIN_HEADER_LEN: usize = 20;

/// The two ECN bits of the traffic-class byte (RFC 3168 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ecn {
    NotEct = 0,
    Ect1 = 1,
    Ect0 = 2,
    Ce = 3,
}

impl Ecn {
    /// The codepoint of the low two bits of `bits` (higher bits are ignored).
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0x03 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    pub fn bits(self) -> u8 {
        self as u8
    }
    /// True for the codepoints a router may rewrite to CE (ECT(0), ECT(1)); CE itself counts,
    /// as the packet came from an ECN-capable transport.
    pub fn is_ecn_capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// A view of an IPv4 packet.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    pub fn new_unchecked(buf: T) -> Self {
        Ipv4Packet { buf }
    }

    /// Checks version 4, IHL ≥ 5, and that header and total length fit in the buffer.
    pub fn new_checked(buf: T) -> Result<Self> {
        let have = buf.as_ref().len();
        if have < MIN_HEADER_LEN {
            return Err(Error::short("ipv4", MIN_HEADER_LEN, have));
        }
        let p = Ipv4Packet { buf };
        if p.version() != 4 {
            return Err(Error::new("ipv4", format!("version is {}, expected 4", p.version())));
        }
        let hl = p.header_len();
        if hl < MIN_HEADER_LEN {
            return Err(Error::new(
                "ipv4",
                format!("header length {hl} is below the minimum 20"),
            ));
        }
        if hl > have {
            return Err(Error::new(
                "ipv4",
                format!("header length {hl} exceeds buffer of {have} bytes"),
            ));
        }
        let tl = p.total_len() as usize;
        if tl < hl {
            return Err(Error::new(
                "ipv4",
                format!("total length {tl} is shorter than the header ({hl})"),
            ));
        }
        if tl > have {
            return Err(Error::new(
                "ipv4",
                format!("total length {tl} exceeds buffer of {have} bytes"),
            ));
        }
        Ok(p)
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn version(&self) -> u8 {
        self.b()[0] >> 4
    }
    pub fn header_len(&self) -> usize {
        ((self.b()[0] & 0x0F) as usize) * 4
    }
    pub fn dscp(&self) -> u8 {
        self.b()[1] >> 2
    }
    pub fn ecn(&self) -> u8 {
        self.b()[1] & 0x03
    }
    pub fn ecn_codepoint(&self) -> Ecn {
        Ecn::from_bits(self.b()[1])
    }
    pub fn total_len(&self) -> u16 {
        be16(self.b(), 2)
    }
    pub fn ident(&self) -> u16 {
        be16(self.b(), 4)
    }
    pub fn dont_fragment(&self) -> bool {
        self.b()[6] & 0x40 != 0
    }
    pub fn more_fragments(&self) -> bool {
        self.b()[6] & 0x20 != 0
    }
    pub fn frag_offset(&self) -> u16 {
        be16(self.b(), 6) & 0x1FFF
    }
    pub fn ttl(&self) -> u8 {
        self.b()[8]
    }
    pub fn protocol(&self) -> u8 {
        self.b()[9]
    }
    pub fn header_checksum(&self) -> u16 {
        be16(self.b(), 10)
    }
    pub fn src(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.b()[12], self.b()[13], self.b()[14], self.b()[15])
    }
    pub fn dst(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.b()[16], self.b()[17], self.b()[18], self.b()[19])
    }
    pub fn options(&self) -> &[u8] {
        &self.b()[MIN_HEADER_LEN..self.header_len()]
    }
    pub fn verify_checksum(&self) -> bool {
        checksum::checksum(&self.b()[..self.header_len()]) == 0
    }
    /// The payload up to the total length (trailing link padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..self.total_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buf.as_mut()[8] = ttl;
    }
    pub fn set_ecn(&mut self, ecn: u8) {
        let b = self.buf.as_mut();
        b[1] = (b[1] & !0x03) | (ecn & 0x03);
    }
    pub fn set_ecn_codepoint(&mut self, ecn: Ecn) {
        self.set_ecn(ecn.bits());
    }
    /// Congestion-experienced marking as an AQM does it: an ECN-capable packet becomes CE and
    /// the checksum is refilled; returns false (packet untouched) for Not-ECT, which the
    /// caller must drop instead.
    pub fn mark_ce(&mut self) -> bool {
        if !self.ecn_codepoint().is_ecn_capable() {
            return false;
        }
        self.set_ecn_codepoint(Ecn::Ce);
        self.fill_checksum();
        true
    }
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = self.buf.as_mut();
        b[1] = (dscp << 2) | (b[1] & 0x03);
    }
    pub fn set_total_len(&mut self, len: u16) {
        put16(self.buf.as_mut(), 2, len);
    }
    pub fn set_ident(&mut self, ident: u16) {
        put16(self.buf.as_mut(), 4, ident);
    }
    pub fn set_dont_fragment(&mut self, df: bool) {
        let b = self.buf.as_mut();
        b[6] = (b[6] & !0x40) | if df { 0x40 } else { 0 };
    }
    pub fn set_protocol(&mut self, protocol: u8) {
        self.buf.as_mut()[9] = protocol;
    }
    pub fn set_header_checksum(&mut self, c: u16) {
        put16(self.buf.as_mut(), 10, c);
    }
    pub fn set_src(&mut self, a: Ipv4Addr) {
        self.buf.as_mut()[12..16].copy_from_slice(&a.octets());
    }
    pub fn set_dst(&mut self, a: Ipv4Addr) {
        self.buf.as_mut()[16..20].copy_from_slice(&a.octets());
    }
    /// Recompute the header checksum after changing fields.
    pub fn fill_checksum(&mut self) {
        let hl = self.header_len();
        let b = self.buf.as_mut();
        put16(b, 10, 0);
        let c = checksum::checksum(&b[..hl]);
        put16(b, 10, c);
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (h, t) = (self.header_len(), self.total_len() as usize);
        &mut self.buf.as_mut()[h..t]
    }
}

/// A parsed IPv4 header. `payload_len` is the total length minus the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub ttl: u8,
    pub dscp: u8,
    pub ecn: u8,
    pub ident: u16,
    pub dont_fragment: bool,
    /// Option bytes (length a multiple of 4, at most 40).
    pub options: Vec<u8>,
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// Parse and validate: the checksum must be right; fragments are refused (we never make them).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self> {
        if !p.verify_checksum() {
            return Err(Error::new(
                "ipv4",
                format!("header checksum 0x{:04x} is wrong", p.header_checksum()),
            ));
        }
        if p.more_fragments() || p.frag_offset() != 0 {
            return Err(Error::new("ipv4", "fragments are not supported"));
        }
        Ok(Ipv4Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            ttl: p.ttl(),
            dscp: p.dscp(),
            ecn: p.ecn(),
            ident: p.ident(),
            dont_fragment: p.dont_fragment(),
            options: p.options().to_vec(),
            payload_len: p.total_len() as usize - p.header_len(),
        })
    }

    pub fn header_len(&self) -> usize {
        MIN_HEADER_LEN + self.options.len()
    }

    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    pub fn ecn_codepoint(&self) -> Ecn {
        Ecn::from_bits(self.ecn)
    }

    /// Write the header (with checksum) at the start of `buf`, which must hold at least
    /// `header_len()` bytes (an error otherwise, not a panic).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if self.dscp > 63 || self.ecn > 3 {
            return Err(Error::new(
                "ipv4",
                format!("DSCP {} / ECN {} do not fit in 6 / 2 bits", self.dscp, self.ecn),
            ));
        }
        if !self.options.len().is_multiple_of(4) || self.options.len() > 40 {
            return Err(Error::new(
                "ipv4",
                format!(
                    "options must be a multiple of 4 bytes up to 40, got {}",
                    self.options.len()
                ),
            ));
        }
        let total = self.buffer_len();
        if total > u16::MAX as usize {
            return Err(Error::new("ipv4", format!("total length {total} exceeds 65535")));
        }
        let hl = self.header_len();
        if buf.len() < hl {
            return Err(Error::new(
                "ipv4",
                format!("header of {hl} bytes does not fit in a buffer of {}", buf.len()),
            ));
        }
        buf[0] = 0x40 | (hl / 4) as u8;
        buf[1] = (self.dscp << 2) | (self.ecn & 0x03);
        put16(buf, 2, total as u16);
        put16(buf, 4, self.ident);
        put16(buf, 6, if self.dont_fragment { 0x4000 } else { 0 });
        buf[8] = self.ttl;
        buf[9] = self.protocol;
        put16(buf, 10, 0);
        buf[12..16].copy_from_slice(&self.src.octets());
        buf[16..20].copy_from_slice(&self.dst.octets());
        buf[20..hl].copy_from_slice(&self.options);
        let c = checksum::checksum(&buf[..hl]);
        put16(buf, 10, c);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 1, 2),
            protocol: PROTO_UDP,
            ttl: 64,
            dscp: 10,
            ecn: 2,
            ident: 0x1234,
            dont_fragment: true,
            options: vec![],
            payload_len: 8,
        }
    }

    /// A textbook header (192.168.0.1 -> 192.168.0.199, UDP, total length 115) whose checksum
    /// 0xb861 is the one published with it, not one this crate computed.
    #[test]
    fn published_header_bytes() {
        #[rustfmt::skip]
        const HDR: [u8; 20] = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
            0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let mut pkt = HDR.to_vec();
        pkt.resize(0x73, 0xAA);
        let p = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        assert!(p.verify_checksum());
        let r = Ipv4Repr::parse(&p).unwrap();
        let want = Ipv4Repr {
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 199),
            protocol: PROTO_UDP,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 0,
            dont_fragment: true,
            options: vec![],
            payload_len: 95,
        };
        assert_eq!(r, want);
        assert_eq!(r.ecn_codepoint(), Ecn::NotEct);
        let mut out = [0u8; 20];
        want.emit(&mut out).unwrap();
        assert_eq!(out, HDR);
    }

    #[test]
    fn ecn_codepoints_and_ce_marking() {
        assert_eq!(
            [0, 1, 2, 3].map(Ecn::from_bits),
            [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce]
        );
        assert_eq!(Ecn::from_bits(0xFE), Ecn::Ect0, "only the low two bits count");
        let mut buf = vec![0u8; 28];
        for (ecn, marked) in [
            (Ecn::NotEct, false),
            (Ecn::Ect0, true),
            (Ecn::Ect1, true),
            (Ecn::Ce, true),
        ] {
            Ipv4Repr {
                ecn: ecn.bits(),
                ..repr()
            }
            .emit(&mut buf)
            .unwrap();
            let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
            assert_eq!(p.mark_ce(), marked, "{ecn:?}");
            let r = Ipv4Repr::parse(&p).expect("checksum refilled");
            assert_eq!(r.ecn_codepoint(), if marked { Ecn::Ce } else { Ecn::NotEct });
            assert_eq!(r.dscp, 10, "DSCP untouched by marking");
        }
    }

    #[test]
    fn options_set_the_header_length() {
        let r = Ipv4Repr {
            options: vec![1, 1, 1, 0, 0x94, 0x04, 0, 0],
            ..repr()
        };
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut buf).unwrap();
        assert_eq!(buf[0], 0x47);
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(
            (p.header_len(), p.options(), p.payload().len()),
            (28, &r.options[..], 8)
        );
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        let e = Ipv4Repr {
            options: vec![1; 5],
            ..repr()
        }
        .emit(&mut buf)
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("ipv4: options must be a multiple of 4"), "{e}");
        buf[0] = 0x44;
        let e = Ipv4Packet::new_checked(&buf[..]).unwrap_err().to_string();
        assert_eq!(e, "ipv4: header length 16 is below the minimum 20");
    }

    #[test]
    fn fragments_are_refused() {
        let mut buf = vec![0u8; 28];
        repr().emit(&mut buf).unwrap();
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.buf[6] |= 0x20;
        p.fill_checksum();
        assert!(Ipv4Repr::parse(&p).unwrap_err().to_string().contains("fragments"));
    }

    #[test]
    fn known_header_bytes() {
        let mut buf = vec![0u8; 28];
        repr().emit(&mut buf).unwrap();
        assert_eq!(
            &buf[..12],
            &[0x45, 0x2a, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, buf[10], buf[11]]
        );
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn errors_name_the_field() {
        let mut buf = vec![0u8; 28];
        repr().emit(&mut buf).unwrap();
        let e = Ipv4Packet::new_checked(&buf[..25]).unwrap_err().to_string();
        assert_eq!(e, "ipv4: total length 28 exceeds buffer of 25 bytes");
        buf[8] = 3; // change TTL without fixing the checksum
        let e = Ipv4Repr::parse(&Ipv4Packet::new_checked(&buf[..]).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum"), "{e}");
        buf[0] = 0x65;
        assert!(Ipv4Packet::new_checked(&buf[..])
            .unwrap_err()
            .to_string()
            .contains("version"));
    }

    #[test]
    fn setters_and_checksum_refill() {
        let mut buf = vec![0u8; 28];
        repr().emit(&mut buf).unwrap();
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.set_ttl(9);
        p.set_ecn(3);
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!((p.ttl(), p.ecn(), p.dscp()), (9, 3, 10));
    }
}
