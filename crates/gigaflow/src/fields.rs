//! The header and pipeline fields the slow path matches on, laid out in OVS's `struct flow`
//! order so the classifier's lookup stages (metadata, L2, L3, L4) are ranges of this list.

use std::fmt;

/// A matchable field. Values of every field live in a `u64`, right-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    InPort,
    Metadata,
    Reg(u8),
    DlDst,
    DlSrc,
    DlType,
    VlanTci,
    NwSrc,
    NwDst,
    NwProto,
    NwTos,
    TpSrc,
    TpDst,
}

/// Number of fields (16 registers included).
pub const N_FIELDS: usize = 28;

/// IPv4 ethertype.
pub const ETH_TYPE_IP: u64 = 0x0800;
/// ARP ethertype.
pub const ETH_TYPE_ARP: u64 = 0x0806;
pub const IPPROTO_ICMP: u64 = 1;
pub const IPPROTO_TCP: u64 = 6;
pub const IPPROTO_UDP: u64 = 17;

impl Field {
    /// All fields in flow order.
    pub fn all() -> impl Iterator<Item = Field> {
        (0..N_FIELDS).map(Field::from_index)
    }

    pub fn index(self) -> usize {
        match self {
            Field::InPort => 0,
            Field::Metadata => 1,
            Field::Reg(r) => 2 + r as usize,
            Field::DlDst => 18,
            Field::DlSrc => 19,
            Field::DlType => 20,
            Field::VlanTci => 21,
            Field::NwSrc => 22,
            Field::NwDst => 23,
            Field::NwProto => 24,
            Field::NwTos => 25,
            Field::TpSrc => 26,
            Field::TpDst => 27,
        }
    }

    pub fn from_index(i: usize) -> Field {
        match i {
            0 => Field::InPort,
            1 => Field::Metadata,
            2..=17 => Field::Reg((i - 2) as u8),
            18 => Field::DlDst,
            19 => Field::DlSrc,
            20 => Field::DlType,
            21 => Field::VlanTci,
            22 => Field::NwSrc,
            23 => Field::NwDst,
            24 => Field::NwProto,
            25 => Field::NwTos,
            26 => Field::TpSrc,
            _ => Field::TpDst,
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            Field::InPort => 16,
            Field::Metadata => 64,
            Field::Reg(_) => 32,
            Field::DlDst | Field::DlSrc => 48,
            Field::DlType | Field::VlanTci => 16,
            Field::NwSrc | Field::NwDst => 32,
            Field::NwProto | Field::NwTos => 8,
            Field::TpSrc | Field::TpDst => 16,
        }
    }

    /// All-ones mask of the field's width.
    pub fn full_mask(self) -> u64 {
        if self.bits() == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits()) - 1
        }
    }

    /// The classifier stage (OVS flow segment) the field belongs to: 0 metadata, 1 L2, 2 L3, 3 L4.
    pub fn stage(self) -> usize {
        match self {
            Field::InPort | Field::Metadata | Field::Reg(_) => 0,
            Field::DlDst | Field::DlSrc | Field::DlType | Field::VlanTci => 1,
            Field::NwSrc | Field::NwDst | Field::NwProto | Field::NwTos => 2,
            Field::TpSrc | Field::TpDst => 3,
        }
    }

    /// Whether the field is a packet header (kept in a Megaflow) rather than pipeline state.
    pub fn is_packet_field(self) -> bool {
        !matches!(self, Field::Metadata | Field::Reg(_))
    }

    pub fn name(self) -> String {
        match self {
            Field::InPort => "in_port".into(),
            Field::Metadata => "metadata".into(),
            Field::Reg(r) => format!("reg{r}"),
            Field::DlDst => "dl_dst".into(),
            Field::DlSrc => "dl_src".into(),
            Field::DlType => "dl_type".into(),
            Field::VlanTci => "vlan_tci".into(),
            Field::NwSrc => "nw_src".into(),
            Field::NwDst => "nw_dst".into(),
            Field::NwProto => "nw_proto".into(),
            Field::NwTos => "nw_tos".into(),
            Field::TpSrc => "tp_src".into(),
            Field::TpDst => "tp_dst".into(),
        }
    }

    /// Formats a value (and mask when partial) the way OVS prints the field.
    pub fn format(self, value: u64, mask: u64) -> String {
        let full = mask == self.full_mask();
        match self {
            Field::DlDst | Field::DlSrc => {
                if full {
                    format_mac(value)
                } else {
                    format!("{}/{}", format_mac(value), format_mac(mask))
                }
            }
            Field::NwSrc | Field::NwDst => {
                let m = mask as u32;
                if full {
                    format_ip(value)
                } else if m.leading_ones() + m.trailing_zeros() == 32 {
                    format!("{}/{}", format_ip(value), m.leading_ones())
                } else {
                    format!("{}/{}", format_ip(value), format_ip(mask))
                }
            }
            Field::DlType | Field::VlanTci => {
                if full {
                    format!("0x{value:04x}")
                } else {
                    format!("0x{value:04x}/0x{mask:04x}")
                }
            }
            _ => {
                if full {
                    if matches!(self, Field::Reg(_) | Field::Metadata) {
                        format!("0x{value:x}")
                    } else {
                        format!("{value}")
                    }
                } else {
                    format!("0x{value:x}/0x{mask:x}")
                }
            }
        }
    }
}

pub fn format_mac(v: u64) -> String {
    let b = v.to_be_bytes();
    format!("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[2], b[3], b[4], b[5], b[6], b[7])
}

pub fn format_ip(v: u64) -> String {
    let b = (v as u32).to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// Values of every field: a packet's headers plus its pipeline state (registers, metadata).
/// The same type holds wildcard masks (1 bits are examined).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flow(pub [u64; N_FIELDS]);

impl Flow {
    pub fn get(&self, f: Field) -> u64 {
        self.0[f.index()]
    }
    pub fn set(&mut self, f: Field, v: u64) {
        self.0[f.index()] = v & f.full_mask();
    }
    /// Sets the bits of `mask` to those of `value`.
    pub fn set_masked(&mut self, f: Field, value: u64, mask: u64) {
        let old = self.get(f);
        self.set(f, (old & !mask) | (value & mask));
    }
    /// ORs `mask` into the field (for wildcard masks).
    pub fn or(&mut self, f: Field, mask: u64) {
        self.0[f.index()] |= mask & f.full_mask();
    }
    pub fn is_ip(&self) -> bool {
        self.get(Field::DlType) == ETH_TYPE_IP
    }
    /// `self | other`, field by field.
    pub fn union(&self, other: &Flow) -> Flow {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0.iter()) {
            *a |= b;
        }
        out
    }
    /// `self & mask`, field by field.
    pub fn masked(&self, mask: &Flow) -> Flow {
        let mut out = *self;
        for i in 0..N_FIELDS {
            out.0[i] &= mask.0[i];
        }
        out
    }
}

impl fmt::Debug for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Field::all()
            .filter(|&fl| self.get(fl) != 0)
            .map(|fl| format!("{}={:#x}", fl.name(), self.get(fl)))
            .collect();
        write!(f, "Flow({})", parts.join(","))
    }
}
