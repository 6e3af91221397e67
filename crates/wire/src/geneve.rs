//! Geneve (RFC 8926): the 8-byte base header, the 24-bit VNI, and TLV options (class, type with
//! its critical bit, 4-byte-word length, data). Options stay generic bytes: system-specific
//! options (SwitchV2P's, SwitchVM's code header) are built on top.

use crate::{be16, be32, put16, put32, Error, Result};

pub const UDP_PORT: u16 = 6081;
pub const HEADER_LEN: usize = 8;
/// Protocol type of an inner Ethernet frame ("Transparent Ethernet Bridging").
pub const PROTOCOL_ETHERNET: u16 = 0x6558;

#[derive(Debug, Clone, Copy)]
pub struct GenevePacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> GenevePacket<T> {
    pub fn new_unchecked(buf: T) -> Self {
        GenevePacket { buf }
    }
    /// Checks version 0 and that the options fit.
    pub fn new_checked(buf: T) -> Result<Self> {
        let have = buf.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::short("geneve", HEADER_LEN, have));
        }
        let p = GenevePacket { buf };
        if p.version() != 0 {
            return Err(Error::new("geneve", format!("version is {}, expected 0", p.version())));
        }
        if p.header_len() > have {
            return Err(Error::new(
                "geneve",
                format!("options length {} exceeds buffer of {have} bytes", p.options_len()),
            ));
        }
        Ok(p)
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn version(&self) -> u8 {
        self.b()[0] >> 6
    }
    /// Length of the options in bytes.
    pub fn options_len(&self) -> usize {
        ((self.b()[0] & 0x3F) as usize) * 4
    }
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options_len()
    }
    pub fn oam(&self) -> bool {
        self.b()[1] & 0x80 != 0
    }
    pub fn critical(&self) -> bool {
        self.b()[1] & 0x40 != 0
    }
    pub fn protocol(&self) -> u16 {
        be16(self.b(), 2)
    }
    pub fn vni(&self) -> u32 {
        be32(self.b(), 4) >> 8
    }
    pub fn options(&self) -> OptionIter<'_> {
        OptionIter {
            b: &self.b()[HEADER_LEN..self.header_len()],
        }
    }
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> GenevePacket<T> {
    pub fn set_oam(&mut self, oam: bool) {
        let b = self.buf.as_mut();
        b[1] = (b[1] & !0x80) | if oam { 0x80 } else { 0 };
    }
    pub fn set_critical(&mut self, critical: bool) {
        let b = self.buf.as_mut();
        b[1] = (b[1] & !0x40) | if critical { 0x40 } else { 0 };
    }
    pub fn set_protocol(&mut self, protocol: u16) {
        put16(self.buf.as_mut(), 2, protocol);
    }
    /// Sets the 24-bit VNI (higher bits of `vni` are dropped), keeping the reserved byte.
    pub fn set_vni(&mut self, vni: u32) {
        let b = self.buf.as_mut();
        let reserved = b[7];
        put32(b, 4, (vni << 8) | reserved as u32);
    }
    /// The option area, for rewriting an option's data in place (e.g. a switch updating a
    /// telemetry field) without re-emitting the header.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buf.as_mut()[HEADER_LEN..h]
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buf.as_mut()[h..]
    }
}

/// One Geneve option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneveOption {
    pub class: u16,
    /// The type byte; its top bit is the critical bit.
    pub kind: u8,
    /// Data, a multiple of 4 bytes, at most 124.
    pub data: Vec<u8>,
}

impl GeneveOption {
    pub fn critical(&self) -> bool {
        self.kind & 0x80 != 0
    }
    pub fn len(&self) -> usize {
        4 + self.data.len()
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Iterates options; yields an error (once, then stops) on a malformed length.
pub struct OptionIter<'a> {
    b: &'a [u8],
}

/// Iterate the TLV options in `options` (the bytes after the 8-byte base header).
pub fn iter_options(options: &[u8]) -> OptionIter<'_> {
    OptionIter { b: options }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<(u16, u8, &'a [u8])>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.b.is_empty() {
            return None;
        }
        if self.b.len() < 4 {
            let n = self.b.len();
            self.b = &[];
            return Some(Err(Error::new(
                "geneve",
                format!("option header needs 4 bytes, {n} left"),
            )));
        }
        let class = be16(self.b, 0);
        let kind = self.b[2];
        let len = ((self.b[3] & 0x1F) as usize) * 4;
        if 4 + len > self.b.len() {
            let left = self.b.len() - 4;
            self.b = &[];
            return Some(Err(Error::new(
                "geneve",
                format!("option class 0x{class:04x} type {kind} length {len} exceeds the {left} bytes left"),
            )));
        }
        let data = &self.b[4..4 + len];
        self.b = &self.b[4 + len..];
        Some(Ok((class, kind, data)))
    }
}

/// A parsed Geneve header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneveRepr {
    pub oam: bool,
    pub critical: bool,
    pub protocol: u16,
    pub vni: u32,
    pub options: Vec<GeneveOption>,
}

impl GeneveRepr {
    pub fn parse<T: AsRef<[u8]>>(p: &GenevePacket<T>) -> Result<Self> {
        let mut options = Vec::new();
        for o in p.options() {
            let (class, kind, data) = o?;
            options.push(GeneveOption {
                class,
                kind,
                data: data.to_vec(),
            });
        }
        Ok(GeneveRepr {
            oam: p.oam(),
            critical: p.critical(),
            protocol: p.protocol(),
            vni: p.vni(),
            options,
        })
    }
    pub fn options_len(&self) -> usize {
        self.options.iter().map(GeneveOption::len).sum()
    }
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options_len()
    }
    /// Same as `header_len`: the Geneve header does not say how long its payload is.
    pub fn buffer_len(&self) -> usize {
        self.header_len()
    }
    /// Write the header and options at the start of `buf` (at least `header_len()` bytes).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let ol = self.options_len();
        if buf.len() < HEADER_LEN + ol {
            return Err(Error::new(
                "geneve",
                format!(
                    "header of {} bytes does not fit in a buffer of {}",
                    HEADER_LEN + ol,
                    buf.len()
                ),
            ));
        }
        if ol > 252 {
            return Err(Error::new(
                "geneve",
                format!("options take {ol} bytes, at most 252 fit"),
            ));
        }
        if self.vni >= 1 << 24 {
            return Err(Error::new(
                "geneve",
                format!("VNI {} does not fit in 24 bits", self.vni),
            ));
        }
        buf[0] = (ol / 4) as u8;
        buf[1] = (if self.oam { 0x80 } else { 0 }) | (if self.critical { 0x40 } else { 0 });
        put16(buf, 2, self.protocol);
        put32(buf, 4, self.vni << 8);
        let mut i = HEADER_LEN;
        for o in &self.options {
            if o.data.len() % 4 != 0 || o.data.len() > 124 {
                return Err(Error::new(
                    "geneve",
                    format!(
                        "option data must be a multiple of 4 bytes up to 124, got {}",
                        o.data.len()
                    ),
                ));
            }
            put16(buf, i, o.class);
            buf[i + 2] = o.kind;
            buf[i + 3] = (o.data.len() / 4) as u8;
            buf[i + 4..i + 4 + o.data.len()].copy_from_slice(&o.data);
            i += o.len();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_bytes() {
        #[rustfmt::skip]
        const HDR: [u8; 24] = [
            0x03, 0x40, 0x65, 0x58, // version 0, 3 words of options; C bit; Ethernet
            0x12, 0x34, 0x56, 0x00, // VNI 0x123456, reserved
            0x01, 0x03, 0x81, 0x01, 0xde, 0xad, 0xbe, 0xef, // class 0x0103, critical type 1, 1 word
            0xff, 0xf0, 0x02, 0x00, // class 0xfff0, type 2, no data
            0x45, 0x00, 0x00, 0x14, // payload starts here
        ];
        let p = GenevePacket::new_checked(&HDR[..]).unwrap();
        assert_eq!((p.version(), p.options_len(), p.header_len()), (0, 12, 20));
        assert_eq!(
            (p.oam(), p.critical(), p.protocol(), p.vni()),
            (false, true, PROTOCOL_ETHERNET, 0x123456)
        );
        let opts: Vec<_> = p.options().collect::<Result<_>>().unwrap();
        assert_eq!(
            opts,
            vec![(0x0103, 0x81, &[0xde, 0xad, 0xbe, 0xef][..]), (0xfff0, 2, &[][..])]
        );
        assert_eq!(p.payload(), &[0x45, 0x00, 0x00, 0x14]);
        let r = GeneveRepr::parse(&p).unwrap();
        assert!(r.options[0].critical() && !r.options[1].critical());
        let mut out = [0u8; 20];
        r.emit(&mut out).unwrap();
        assert_eq!(out[..], HDR[..20]);
        // In-place setters.
        let mut buf = HDR;
        let mut w = GenevePacket::new_checked(&mut buf[..]).unwrap();
        w.set_vni(0xFF00_0001);
        w.set_oam(true);
        w.set_critical(false);
        w.options_mut()[4..8].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!((w.vni(), w.oam(), w.critical()), (1, true, false));
        assert_eq!(w.options().next().unwrap().unwrap().2, &[1, 2, 3, 4]);
        // Version 1 is refused, and an option area longer than the buffer too.
        let mut v1 = HDR;
        v1[0] |= 0x40;
        assert_eq!(
            GenevePacket::new_checked(&v1[..]).unwrap_err().to_string(),
            "geneve: version is 1, expected 0"
        );
        assert_eq!(
            GenevePacket::new_checked(&HDR[..15]).unwrap_err().to_string(),
            "geneve: options length 12 exceeds buffer of 15 bytes"
        );
    }

    #[test]
    fn emit_rejects_what_does_not_fit() {
        let base = GeneveRepr {
            oam: false,
            critical: false,
            protocol: PROTOCOL_ETHERNET,
            vni: 1,
            options: vec![],
        };
        let mut buf = [0u8; 400];
        let e = GeneveRepr {
            vni: 1 << 24,
            ..base.clone()
        }
        .emit(&mut buf)
        .unwrap_err()
        .to_string();
        assert!(e.contains("VNI 16777216"), "{e}");
        let odd = GeneveRepr {
            options: vec![GeneveOption {
                class: 1,
                kind: 1,
                data: vec![0; 3],
            }],
            ..base.clone()
        };
        assert!(odd.emit(&mut buf).unwrap_err().to_string().contains("multiple of 4"));
        let big = GeneveOption {
            class: 1,
            kind: 1,
            data: vec![0; 124],
        };
        let too_many = GeneveRepr {
            options: vec![big.clone(), big.clone(), big],
            ..base.clone()
        };
        assert!(too_many.emit(&mut buf).unwrap_err().to_string().contains("at most 252"));
        assert!(base
            .emit(&mut buf[..7])
            .unwrap_err()
            .to_string()
            .contains("does not fit"));
    }

    #[test]
    fn options_round_trip_and_bad_lengths_are_errors() {
        let r = GeneveRepr {
            oam: false,
            critical: true,
            protocol: PROTOCOL_ETHERNET,
            vni: 0xABCDE,
            options: vec![
                GeneveOption {
                    class: 0x0103,
                    kind: 0x80 | 1,
                    data: vec![1, 2, 3, 4],
                },
                GeneveOption {
                    class: 0xFFFF,
                    kind: 7,
                    data: vec![],
                },
            ],
        };
        let mut buf = vec![0u8; r.header_len()];
        r.emit(&mut buf).unwrap();
        let p = GenevePacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.vni(), 0xABCDE);
        assert_eq!(GeneveRepr::parse(&p).unwrap(), r);
        buf[11] = 0x1F; // first option claims 124 bytes
        let p = GenevePacket::new_checked(&buf[..]).unwrap();
        assert!(GeneveRepr::parse(&p).unwrap_err().to_string().contains("exceeds"));
    }
}
