//! Ethernet II frames, with an optional 802.1Q VLAN tag.

use crate::{be16, put16, Error, Result};

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const HEADER_LEN: usize = 14;

pub type Mac = [u8; 6];

/// A view of an Ethernet frame.
#[derive(Debug, Clone, Copy)]
pub struct EthernetPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> EthernetPacket<T> {
    pub fn new_unchecked(buf: T) -> Self {
        EthernetPacket { buf }
    }

    /// Checks that the header (and the VLAN tag, if any) fits.
    pub fn new_checked(buf: T) -> Result<Self> {
        let p = EthernetPacket { buf };
        let have = p.buf.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::short("ethernet", HEADER_LEN, have));
        }
        if p.outer_ethertype() == ETHERTYPE_VLAN && have < HEADER_LEN + 4 {
            return Err(Error::new(
                "ethernet",
                format!("802.1Q tag needs 18 bytes, buffer has {have}"),
            ));
        }
        Ok(p)
    }

    pub fn dst(&self) -> Mac {
        self.buf.as_ref()[0..6].try_into().expect("checked length")
    }
    pub fn src(&self) -> Mac {
        self.buf.as_ref()[6..12].try_into().expect("checked length")
    }
    fn outer_ethertype(&self) -> u16 {
        be16(self.buf.as_ref(), 12)
    }
    /// The VLAN TCI if the frame is tagged.
    pub fn vlan_tci(&self) -> Option<u16> {
        (self.outer_ethertype() == ETHERTYPE_VLAN).then(|| be16(self.buf.as_ref(), 14))
    }
    /// The ethertype of the payload (after any VLAN tag).
    pub fn ethertype(&self) -> u16 {
        if self.vlan_tci().is_some() {
            be16(self.buf.as_ref(), 16)
        } else {
            self.outer_ethertype()
        }
    }
    pub fn header_len(&self) -> usize {
        if self.vlan_tci().is_some() {
            HEADER_LEN + 4
        } else {
            HEADER_LEN
        }
    }
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[self.header_len()..]
    }
    pub fn into_inner(self) -> T {
        self.buf
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetPacket<T> {
    pub fn set_dst(&mut self, mac: Mac) {
        self.buf.as_mut()[0..6].copy_from_slice(&mac);
    }
    pub fn set_src(&mut self, mac: Mac) {
        self.buf.as_mut()[6..12].copy_from_slice(&mac);
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buf.as_mut()[h..]
    }
}

/// A parsed Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    pub dst: Mac,
    pub src: Mac,
    pub vlan_tci: Option<u16>,
    pub ethertype: u16,
}

impl EthernetRepr {
    pub fn parse<T: AsRef<[u8]>>(p: &EthernetPacket<T>) -> Result<Self> {
        Ok(EthernetRepr {
            dst: p.dst(),
            src: p.src(),
            vlan_tci: p.vlan_tci(),
            ethertype: p.ethertype(),
        })
    }
    pub fn header_len(&self) -> usize {
        HEADER_LEN + if self.vlan_tci.is_some() { 4 } else { 0 }
    }
    /// Write the header at the start of `buf` (which must hold `header_len()` bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0..6].copy_from_slice(&self.dst);
        buf[6..12].copy_from_slice(&self.src);
        match self.vlan_tci {
            Some(tci) => {
                put16(buf, 12, ETHERTYPE_VLAN);
                put16(buf, 14, tci);
                put16(buf, 16, self.ethertype);
            }
            None => put16(buf, 12, self.ethertype),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_and_untagged_round_trip() {
        for vlan in [None, Some(0x2064)] {
            let r = EthernetRepr {
                dst: [1, 2, 3, 4, 5, 6],
                src: [7, 8, 9, 10, 11, 12],
                vlan_tci: vlan,
                ethertype: 0x0800,
            };
            let mut buf = vec![0u8; r.header_len() + 3];
            r.emit(&mut buf);
            let p = EthernetPacket::new_checked(&buf[..]).unwrap();
            assert_eq!(EthernetRepr::parse(&p).unwrap(), r);
            assert_eq!(p.payload().len(), 3);
        }
    }

    #[test]
    fn known_tagged_bytes() {
        const F: [u8; 20] = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x81, 0x00, 0x20, 0x64, 0x08, 0x00, 0x45, 0x00,
        ];
        let p = EthernetPacket::new_checked(&F[..]).unwrap();
        let r = EthernetRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            EthernetRepr {
                dst: [0xff; 6],
                src: [2, 0, 0, 0, 0, 1],
                vlan_tci: Some(0x2064),
                ethertype: ETHERTYPE_IPV4
            }
        );
        assert_eq!((p.header_len(), p.payload()), (18, &[0x45, 0x00][..]));
        let mut out = [0u8; 18];
        r.emit(&mut out);
        assert_eq!(out[..], F[..18]);
    }

    #[test]
    fn short_buffers_are_errors() {
        assert!(EthernetPacket::new_checked(&[0u8; 13][..]).is_err());
        let mut b = [0u8; 16];
        b[12] = 0x81;
        let e = EthernetPacket::new_checked(&b[..]).unwrap_err();
        assert!(e.to_string().contains("802.1Q"), "{e}");
    }
}
