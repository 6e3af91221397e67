//! SwitchV2P's in-band metadata, carried as Geneve options in the tunnel header (the paper's
//! footnote 2: "using the option field in the tunnel header"), and its control messages
//! (learning and invalidation packets, UDP port 333).
//!
//! Every option has class [`OPTION_CLASS`] (from the experimental range 0xFF00–0xFFFF of RFC 8926)
//! and is non-critical, so a tunnel endpoint that does not know SwitchV2P ignores it. Each option
//! carries two 32-bit big-endian words (option length field = 2):
//!
//! | type | name        | word 0          | word 1            | who adds it |
//! |------|-------------|-----------------|-------------------|-------------|
//! | 0x01 | spill       | virtual IP      | physical IP       | a switch that evicted or promotes an entry |
//! | 0x02 | hit         | switch id       | switch IP         | the switch that resolved the packet from its cache |
//! | 0x03 | misdelivery | virtual IP      | stale physical IP | the ToR of a host that could not deliver the packet |
//!
//! A packet holds at most one option of each type. Options of other classes are kept as they
//! are, in front of SwitchV2P's, when the set is re-emitted.
//!
//! Control messages are the UDP payload of packets to a switch address, port [`CONTROL_PORT`]:
//! one option TLV of type 0x11 (learn: virtual IP, physical IP) or 0x12 (invalidate: virtual IP,
//! stale physical IP).

use crate::geneve::iter_options;
use crate::phv::OptionBytes;
use crate::{be32, put16, put32, Error, Result};

/// Geneve option class of SwitchV2P's options.
pub const OPTION_CLASS: u16 = 0xFF56;
/// UDP destination port of learning and invalidation packets.
pub const CONTROL_PORT: u16 = 333;
/// Bytes of one option (4-byte TLV header + two words).
pub const OPTION_LEN: usize = 12;

pub const TYPE_SPILL: u8 = 0x01;
pub const TYPE_HIT: u8 = 0x02;
pub const TYPE_MISDELIVERY: u8 = 0x03;
pub const TYPE_LEARN: u8 = 0x11;
pub const TYPE_INVALIDATE: u8 = 0x12;

/// SwitchV2P's options of one packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct V2pOptions {
    /// An evicted (spillover) or promoted mapping riding to downstream switches: (VIP, PIP).
    pub spill: Option<(u32, u32)>,
    /// The switch that resolved this packet: (switch id, switch IP).
    pub hit: Option<(u32, u32)>,
    /// The packet was misdelivered: (VIP, the stale PIP it was sent to).
    pub misdelivery: Option<(u32, u32)>,
}

impl V2pOptions {
    pub fn is_empty(&self) -> bool {
        self.spill.is_none() && self.hit.is_none() && self.misdelivery.is_none()
    }

    pub fn count(&self) -> usize {
        self.spill.is_some() as usize + self.hit.is_some() as usize + self.misdelivery.is_some() as usize
    }

    /// Bytes the options take on the wire.
    pub fn wire_len(&self) -> usize {
        self.count() * OPTION_LEN
    }

    /// Parse SwitchV2P's options out of a Geneve options area (other classes are skipped).
    /// Errors on a malformed TLV, a SwitchV2P option of the wrong length or an unknown type,
    /// and on a repeated type.
    pub fn parse(options: &[u8]) -> Result<Self> {
        match Self::parse_own(options) {
            Some(out) => Ok(out),
            None => Self::parse_tlvs(options),
        }
    }

    /// [`V2pOptions::parse`] option by option, whatever the area holds.
    fn parse_tlvs(options: &[u8]) -> Result<Self> {
        let mut out = V2pOptions::default();
        for opt in iter_options(options) {
            let (class, kind, data) = opt?;
            if class != OPTION_CLASS {
                continue;
            }
            let kind = kind & 0x7F;
            if data.len() != 8 {
                return Err(Error::new(
                    "switchv2p",
                    format!("option type 0x{kind:02x} has {} data bytes, expected 8", data.len()),
                ));
            }
            let pair = (be32(data, 0), be32(data, 4));
            let slot = match kind {
                TYPE_SPILL => &mut out.spill,
                TYPE_HIT => &mut out.hit,
                TYPE_MISDELIVERY => &mut out.misdelivery,
                other => {
                    return Err(Error::new("switchv2p", format!("unknown option type 0x{other:02x}")));
                }
            };
            if slot.is_some() {
                return Err(Error::new("switchv2p", format!("option type 0x{kind:02x} appears twice")));
            }
            *slot = Some(pair);
        }
        Ok(out)
    }

    /// The common case, checked and parsed in one pass: nothing but well-formed SwitchV2P
    /// options of known types, each at most once (what the switches write). None for anything
    /// else, which [`V2pOptions::parse`]'s general loop then reads (and reports).
    #[inline]
    fn parse_own(options: &[u8]) -> Option<Self> {
        let mut out = V2pOptions::default();
        if options.len() % OPTION_LEN != 0 {
            return None;
        }
        for o in options.chunks_exact(OPTION_LEN) {
            if u16::from_be_bytes([o[0], o[1]]) != OPTION_CLASS || o[3] & 0x1F != 2 {
                return None;
            }
            let slot = match o[2] & 0x7F {
                TYPE_SPILL => &mut out.spill,
                TYPE_HIT => &mut out.hit,
                TYPE_MISDELIVERY => &mut out.misdelivery,
                _ => return None,
            };
            if slot.is_some() {
                return None;
            }
            *slot = Some((be32(o, 4), be32(o, 8)));
        }
        Some(out)
    }

    /// Replace SwitchV2P's options in an options area by `self`, keeping foreign options (in
    /// their order, first). Fails if `area` is malformed or cannot hold the result.
    pub fn rewrite<A: OptionArea + ?Sized>(&self, area: &mut A) -> Result<()> {
        let old = area.bytes();
        // Nothing but our own options (what the switches write): rebuild without a parse.
        if old.len() % OPTION_LEN == 0
            && old.chunks_exact(OPTION_LEN).all(|o| u16::from_be_bytes([o[0], o[1]]) == OPTION_CLASS && o[3] & 0x1F == 2)
        {
            return area.replace(self.encode().as_slice());
        }
        self.rewrite_tlvs(area)
    }

    /// [`V2pOptions::rewrite`], and when the area is malformed, `self` alone in its place (what
    /// a switch or vswitch does: its own options always fit).
    pub fn overwrite<A: OptionArea + ?Sized>(&self, area: &mut A) {
        if self.rewrite(area).is_err() {
            let _ = area.replace(self.encode().as_slice());
        }
    }

    /// [`V2pOptions::rewrite`] option by option, whatever the area holds.
    fn rewrite_tlvs<A: OptionArea + ?Sized>(&self, area: &mut A) -> Result<()> {
        let old = area.bytes();
        let mut new = Vec::with_capacity(old.len() + self.wire_len());
        let mut at = 0;
        for opt in iter_options(old) {
            let (class, _, data) = opt?;
            let len = 4 + data.len();
            if class != OPTION_CLASS {
                new.extend_from_slice(&old[at..at + len]);
            }
            at += len;
        }
        new.extend_from_slice(self.encode().as_slice());
        area.replace(&new)
    }

    /// The options alone, as an area of their own (at most 36 bytes).
    pub fn encode(&self) -> OptionBytes {
        let mut buf = [0u8; 3 * OPTION_LEN];
        let mut len = 0;
        for (kind, v) in [(TYPE_SPILL, self.spill), (TYPE_HIT, self.hit), (TYPE_MISDELIVERY, self.misdelivery)] {
            if let Some((a, b)) = v {
                write_tlv(&mut buf[len..len + OPTION_LEN], kind, a, b);
                len += OPTION_LEN;
            }
        }
        OptionBytes::new(&buf[..len]).expect("at most three 12-byte options")
    }
}

/// Where SwitchV2P's options are written: a Geneve header's options area (`Vec<u8>`), or a
/// tagged tunnel's in-band tags ([`OptionBytes`], at most 40 bytes; [`Encap::IpInIpTagged`]).
///
/// [`Encap::IpInIpTagged`]: crate::phv::Encap::IpInIpTagged
pub trait OptionArea {
    fn bytes(&self) -> &[u8];
    /// Replace the whole area by `new`; an error (and the area unchanged) when it cannot hold it.
    fn replace(&mut self, new: &[u8]) -> Result<()>;
}

impl OptionArea for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn replace(&mut self, new: &[u8]) -> Result<()> {
        self.clear();
        self.extend_from_slice(new);
        Ok(())
    }
}

impl OptionArea for OptionBytes {
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
    fn replace(&mut self, new: &[u8]) -> Result<()> {
        if self.set(new) {
            Ok(())
        } else {
            Err(Error::new("switchv2p", format!("in-band tags of {} bytes (a tagged tunnel holds whole 4-byte words, at most 40 bytes)", new.len())))
        }
    }
}

/// One option (class, type, two words) into `out` (12 bytes).
fn write_tlv(out: &mut [u8], kind: u8, a: u32, b: u32) {
    put16(out, 0, OPTION_CLASS);
    out[2] = kind;
    out[3] = 2; // two 4-byte words
    put32(out, 4, a);
    put32(out, 8, b);
}

/// A learning or invalidation message (the UDP payload of a control packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlMessage {
    /// Insert (VIP → PIP) at the destination switch.
    Learn { vip: u32, pip: u32 },
    /// Remove VIP if it maps to `stale_pip`, at every switch on the way.
    Invalidate { vip: u32, stale_pip: u32 },
}

impl ControlMessage {
    pub const LEN: usize = OPTION_LEN;

    pub fn parse(payload: &[u8]) -> Result<Self> {
        if payload.len() < OPTION_LEN {
            return Err(Error::short("switchv2p control", OPTION_LEN, payload.len()));
        }
        let mut it = iter_options(&payload[..OPTION_LEN]);
        let (class, kind, data) = match it.next() {
            Some(r) => r?,
            None => return Err(Error::short("switchv2p control", OPTION_LEN, 0)),
        };
        if class != OPTION_CLASS {
            return Err(Error::new("switchv2p control", format!("class 0x{class:04x}, expected 0x{OPTION_CLASS:04x}")));
        }
        if data.len() != 8 {
            return Err(Error::new("switchv2p control", format!("{} data bytes, expected 8", data.len())));
        }
        let (a, b) = (be32(data, 0), be32(data, 4));
        match kind & 0x7F {
            TYPE_LEARN => Ok(ControlMessage::Learn { vip: a, pip: b }),
            TYPE_INVALIDATE => Ok(ControlMessage::Invalidate { vip: a, stale_pip: b }),
            other => Err(Error::new("switchv2p control", format!("unknown message type 0x{other:02x}"))),
        }
    }

    pub fn emit(&self) -> [u8; OPTION_LEN] {
        let mut out = [0u8; OPTION_LEN];
        match *self {
            ControlMessage::Learn { vip, pip } => write_tlv(&mut out, TYPE_LEARN, vip, pip),
            ControlMessage::Invalidate { vip, stale_pip } => write_tlv(&mut out, TYPE_INVALIDATE, vip, stale_pip),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opt_pair() -> impl Strategy<Value = Option<(u32, u32)>> {
        proptest::option::of((any::<u32>(), any::<u32>()))
    }

    fn push_tlv(out: &mut Vec<u8>, kind: u8, a: u32, b: u32) {
        let at = out.len();
        out.resize(at + OPTION_LEN, 0);
        write_tlv(&mut out[at..], kind, a, b);
    }

    proptest! {
        #[test]
        fn options_round_trip(spill in opt_pair(), hit in opt_pair(), mis in opt_pair(), foreign in proptest::collection::vec(any::<u8>(), 0..3)) {
            let o = V2pOptions { spill, hit, misdelivery: mis };
            // A foreign option (class 0x0102) in front, with `foreign.len()` words of data.
            let mut area = vec![0x01, 0x02, 0x05, foreign.len() as u8];
            for &b in &foreign { area.extend_from_slice(&[b; 4]); }
            let foreign_area = area.clone();
            o.rewrite(&mut area).unwrap();
            prop_assert_eq!(V2pOptions::parse(&area).unwrap(), o);
            prop_assert_eq!(area.len(), foreign_area.len() + o.wire_len());
            // Rewriting again with nothing leaves exactly the foreign option.
            V2pOptions::default().rewrite(&mut area).unwrap();
            prop_assert_eq!(area, foreign_area);
        }

        /// The one-pass paths for areas of our own options answer as the TLV loops do, on areas
        /// of ours, foreign, malformed and repeated options in any order, errors included.
        #[test]
        fn fast_paths_match_the_tlv_loops(
            parts in proptest::collection::vec((0u8..6, any::<u8>(), any::<u32>(), any::<u32>()), 0..5),
            o in (opt_pair(), opt_pair(), opt_pair()),
        ) {
            let mut area = Vec::new();
            for (what, kind, a, b) in parts {
                match what {
                    0 | 1 | 2 => push_tlv(&mut area, [TYPE_SPILL, TYPE_HIT, TYPE_MISDELIVERY][what as usize], a, b),
                    3 => push_tlv(&mut area, kind, a, b), // our class, any type
                    4 => area.extend_from_slice(&[0x01, 0x02, kind, 1, 1, 2, 3, 4]), // foreign, one word
                    _ => area.extend_from_slice(&[0xFF, 0x56, kind, kind & 0x1F]), // ours, any length (maybe cut)
                }
            }
            let tlv = V2pOptions::parse_tlvs(&area).map_err(|e| e.to_string());
            prop_assert_eq!(V2pOptions::parse(&area).map_err(|e| e.to_string()), tlv);
            let new = V2pOptions { spill: o.0, hit: o.1, misdelivery: o.2 };
            let (mut fast, mut slow) = (area.clone(), area.clone());
            let r_fast = new.rewrite(&mut fast).map_err(|e| e.to_string());
            let r_slow = new.rewrite_tlvs(&mut slow).map_err(|e| e.to_string());
            prop_assert_eq!(&r_fast, &r_slow);
            prop_assert_eq!(&fast, &slow);
            // In-band tags (at most 40 bytes) answer as a Geneve area does, or refuse whole.
            if let Some(mut tags) = OptionBytes::new(&area) {
                let r_tags = new.rewrite(&mut tags).map_err(|e| e.to_string());
                match r_fast {
                    Err(e) => prop_assert_eq!(r_tags, Err(e)),
                    Ok(()) if fast.len() <= 40 => { prop_assert_eq!(r_tags, Ok(())); prop_assert_eq!(tags.as_slice(), &fast[..]); }
                    Ok(()) => { prop_assert!(r_tags.unwrap_err().contains("at most 40 bytes")); prop_assert_eq!(tags.as_slice(), &area[..]); }
                }
            }
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = V2pOptions::parse(&bytes);
            let _ = ControlMessage::parse(&bytes);
        }

        #[test]
        fn control_round_trip(a in any::<u32>(), b in any::<u32>(), learn in any::<bool>()) {
            let m = if learn { ControlMessage::Learn { vip: a, pip: b } } else { ControlMessage::Invalidate { vip: a, stale_pip: b } };
            prop_assert_eq!(ControlMessage::parse(&m.emit()).unwrap(), m);
        }
    }

    #[test]
    fn byte_layout_is_exact() {
        let o = V2pOptions { spill: None, hit: Some((7, 0x0B00_0007)), misdelivery: None };
        assert_eq!(o.encode().as_slice(), [0xFF, 0x56, 0x02, 0x02, 0, 0, 0, 7, 0x0B, 0, 0, 7]);
    }

    #[test]
    fn errors_name_the_problem() {
        let mut v = Vec::new();
        push_tlv(&mut v, TYPE_HIT, 1, 2);
        push_tlv(&mut v, TYPE_HIT, 3, 4);
        assert!(V2pOptions::parse(&v).unwrap_err().to_string().contains("appears twice"));
        let bad = [0xFF, 0x56, 0x09, 0x02, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(V2pOptions::parse(&bad).unwrap_err().to_string().contains("unknown option type 0x09"));
        let short = [0xFF, 0x56, 0x01, 0x01, 0, 0, 0, 0];
        assert!(V2pOptions::parse(&short).unwrap_err().to_string().contains("expected 8"));
    }
}
