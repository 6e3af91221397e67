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
    /// The datapath's recirculation id: 0 for a packet's first pass, the id of the frozen
    /// pipeline state (resume table, registers, metadata, conntrack zone) after a `ct(table=N)`.
    RecircId,
    /// Connection-tracking state flags ([`CT_NEW`] ...), set by conntrack before a recirculated pass.
    CtState,
    CtZone,
    CtMark,
    NwTtl,
    /// `ct_label`: the low 64 bits of OVS's 128-bit label (values and masks that reach the
    /// upper 64 bits are refused by the parsers as not modelled; a full mask here stands for
    /// OVS's full 128-bit mask, the upper half of every label being 0).
    CtLabel,
}

/// Number of fields (16 registers included).
pub const N_FIELDS: usize = 34;

/// `ct_state` flags, in OVS's bit order (`CS_NEW` ... `CS_DST_NAT`).
pub const CT_NEW: u64 = 0x01;
pub const CT_EST: u64 = 0x02;
pub const CT_REL: u64 = 0x04;
pub const CT_RPL: u64 = 0x08;
pub const CT_INV: u64 = 0x10;
pub const CT_TRK: u64 = 0x20;
pub const CT_SNAT: u64 = 0x40;
pub const CT_DNAT: u64 = 0x80;
/// Flag names as OVS prints and parses them, lowest bit first.
pub const CT_STATE_NAMES: [&str; 8] = ["new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"];


/// A conntrack state as `ofproto/trace --ct-next` takes it: flag names separated by commas or
/// spaces (OVS's `parse_ct_state`; empty names are skipped, so `""` is the state 0), or joined
/// by `|` as OVS prints them. Unknown names are refused as OVS refuses them.
pub fn parse_ct_next(s: &str) -> Result<u64, String> {
    let mut state = 0;
    for name in s.split([',', ' ', '|']).filter(|n| !n.is_empty()) {
        match CT_STATE_NAMES.iter().position(|&n| n == name) {
            Some(i) => state |= 1 << i,
            None => return Err(format!("{name}: unknown connection tracking state flag")),
        }
    }
    Ok(state)
}

/// OVS's `validate_ct_state` (lib/flow.c, the constraints of ovs-fields(7)) with its messages,
/// one per violated rule, each naming the state as OVS prints it: `trk` must be set when any
/// flag is, `inv` allows only `trk` beside it, `new` excludes `est` and `rpl`. (OVS spells the
/// last message's flag "rpy"; the text is kept verbatim so it compares equal to OVS's.)
pub fn validate_ct_state(state: u64) -> Result<(), String> {
    let s = format_ct_flags(state);
    let mut errors = Vec::new();
    if state != 0 && state & CT_TRK == 0 {
        errors.push(format!("{s}: invalid connection state: If \"trk\" is unset, no other flags are set"));
    }
    if state & CT_INV != 0 && state & !(CT_TRK | CT_INV) != 0 {
        errors.push(format!("{s}: invalid connection state: when \"inv\" is set, only \"trk\" may also be set"));
    }
    if state & CT_NEW != 0 && state & CT_EST != 0 {
        errors.push(format!("{s}: invalid connection state: \"new\" and \"est\" are mutually exclusive"));
    }
    if state & CT_NEW != 0 && state & CT_RPL != 0 {
        errors.push(format!("{s}: invalid connection state: \"new\" and \"rpy\" are mutually exclusive"));
    }
    if errors.is_empty() { Ok(()) } else { Err(errors.join("\n")) }
}

/// A `ct_label` value or mask as OVS writes it (up to 128 bits, e.g. `0x10000000000000002`),
/// as this model holds it: the low 64 bits, a full 128-bit mask as `u64::MAX`. `None` for a
/// number that needs the upper 64 bits (or a mask that covers all 64 low bits but not all 128,
/// which would print differently): not modelled.
pub fn ct_label_bits(v: u128) -> Option<u64> {
    match v {
        u128::MAX => Some(u64::MAX),
        v if v >> 64 == 0 && v as u64 != u64::MAX => Some(v as u64),
        _ => None,
    }
}

/// A packet's `ct_state` as OVS prints it (`new|trk`), or `0`.
pub fn format_ct_flags(value: u64) -> String {
    let names: Vec<&str> = CT_STATE_NAMES.iter().enumerate().filter(|(i, _)| value >> i & 1 == 1).map(|(_, n)| *n).collect();
    if names.is_empty() { "0".into() } else { names.join("|") }
}

/// `ct_state` as OVS prints a match (`+new+trk`, `-new+est+trk`; masked bits only).
pub fn format_ct_state(value: u64, mask: u64) -> String {
    let mut s = String::new();
    for (i, n) in CT_STATE_NAMES.iter().enumerate() {
        if mask >> i & 1 == 1 {
            s.push(if value >> i & 1 == 1 { '+' } else { '-' });
            s.push_str(n);
        }
    }
    s
}

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
            Field::RecircId => 28,
            Field::CtState => 29,
            Field::CtZone => 30,
            Field::CtMark => 31,
            Field::NwTtl => 32,
            Field::CtLabel => 33,
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
            27 => Field::TpDst,
            28 => Field::RecircId,
            29 => Field::CtState,
            30 => Field::CtZone,
            31 => Field::CtMark,
            32 => Field::NwTtl,
            _ => Field::CtLabel,
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            Field::InPort => 16,
            Field::Metadata | Field::CtLabel => 64,
            Field::Reg(_) => 32,
            Field::DlDst | Field::DlSrc => 48,
            Field::DlType | Field::VlanTci => 16,
            Field::NwSrc | Field::NwDst => 32,
            Field::NwProto | Field::NwTos => 8,
            Field::TpSrc | Field::TpDst => 16,
            Field::RecircId | Field::CtMark => 32,
            Field::CtState | Field::NwTtl => 8,
            Field::CtZone => 16,
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
            Field::InPort | Field::Metadata | Field::Reg(_) | Field::RecircId | Field::CtState | Field::CtZone | Field::CtMark | Field::CtLabel => 0,
            Field::DlDst | Field::DlSrc | Field::DlType | Field::VlanTci => 1,
            Field::NwSrc | Field::NwDst | Field::NwProto | Field::NwTos | Field::NwTtl => 2,
            Field::TpSrc | Field::TpDst => 3,
        }
    }

    /// Whether the field is a packet header or datapath metadata (kept in a Megaflow: the
    /// conntrack fields and recirc_id are) rather than pipeline state.
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
            Field::RecircId => "recirc_id".into(),
            Field::CtState => "ct_state".into(),
            Field::CtZone => "ct_zone".into(),
            Field::CtMark => "ct_mark".into(),
            Field::NwTtl => "nw_ttl".into(),
            Field::CtLabel => "ct_label".into(),
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
            Field::CtState => format_ct_state(value, mask),
            // C's `%#x`, as OVS prints these: "0" for zero, "0x5" otherwise.
            Field::RecircId | Field::CtMark | Field::CtLabel => {
                let c = |v: u64| if v == 0 { "0".to_string() } else { format!("{v:#x}") };
                if full { c(value) } else { format!("{}/{}", c(value), c(mask)) }
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
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Flow(pub [u64; N_FIELDS]);

impl Default for Flow {
    fn default() -> Self {
        Flow([0; N_FIELDS])
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ct_states_ovs_refuses_are_refused_with_its_messages() {
        let v = |s: &str| validate_ct_state(parse_ct_next(s).unwrap());
        assert_eq!(v("new,rpl,trk").unwrap_err(), "new|rpl|trk: invalid connection state: \"new\" and \"rpy\" are mutually exclusive");
        assert!(v("trk,new,est").unwrap_err().contains("\"new\" and \"est\""));
        assert!(v("trk,inv,est").unwrap_err().starts_with("est|inv|trk: invalid connection state: when \"inv\""));
        assert!(v("new").unwrap_err().contains("If \"trk\" is unset"));
        assert_eq!(v("trk,inv,new,est,rpl").unwrap_err().lines().count(), 3);
        for ok in ["trk,new", "trk est rpl", "trk|rel|new", "trk,inv", "trk,new,dnat", ""] {
            assert!(v(ok).is_ok(), "{ok}");
        }
        assert_eq!(parse_ct_next("trk,bogus").unwrap_err(), "bogus: unknown connection tracking state flag");
    }
}
