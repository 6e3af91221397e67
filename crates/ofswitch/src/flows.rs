//! Parser for pipelines written in `ovs-ofctl add-flows` syntax: one flow per line with
//! `table=`, `priority=`, matches (with masks and prefixes) and `actions=`. Errors carry the
//! line and column and say what was expected; no input makes it panic.

use crate::fields::{Field, CT_STATE_NAMES, ETH_TYPE_ARP, ETH_TYPE_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use std::fmt;

/// One match on a field: the packet matches when `field & mask == value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldMatch {
    pub field: Field,
    pub value: u64,
    pub mask: u64,
}

/// Which protocol a written field requires (OVS "prerequisites"), checked per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prereq {
    None,
    Ip,
    Proto(u8),
}

/// A bit range of a field, as in `NXM_NX_REG0[8..15]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubField {
    pub field: Field,
    pub prereq: Prereq,
    pub offset_bits: u32,
    pub n_bits: u32,
}

impl SubField {
    pub fn mask(&self) -> u64 {
        let m = if self.n_bits >= 64 { u64::MAX } else { (1u64 << self.n_bits) - 1 };
        m << self.offset_bits
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `set_field`, `mod_*` and `load`: write `value` into the bits of `mask`.
    SetField { field: Field, prereq: Prereq, value: u64, mask: u64 },
    /// `move:SRC[]->DST[]`.
    Move { src: SubField, dst: SubField },
    /// `resubmit(,T)`: look up table T now and come back.
    Resubmit { table: u8 },
    /// `goto_table:T` (always the last instruction).
    GotoTable { table: u8 },
    Output { port: u32 },
    Drop,
    /// `ct(commit,zone=Z,table=N)`: send the packet through conntrack in `zone`; `commit`
    /// records the connection; with `table` a clone recirculates and resumes at table N with
    /// `ct_state`/`ct_zone` set (the current pass continues, with the conntrack fields cleared).
    /// `exec(...)`: the `set_field`/`load`/`move` writes into `ct_mark`/`ct_label` the commit
    /// stores with the connection (OVS takes no other nested action, and only with `commit`).
    Ct { commit: bool, zone: u16, table: Option<u8>, exec: Vec<Action> },
    /// `ct_clear`: clear the conntrack fields.
    CtClear,
    /// `dec_ttl`: decrement the IPv4 TTL; at a TTL of 0 or 1 OVS sends the packet to the
    /// controller and ends the current table's actions (callers' pending actions still run).
    DecTtl,
}

/// One line of a flow file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRule {
    pub table: u8,
    pub priority: u16,
    pub matches: Vec<FieldMatch>,
    pub actions: Vec<Action>,
    /// 1-based line in the source.
    pub line: usize,
    /// The source text of the line, for traces.
    pub text: String,
}

impl FlowRule {
    pub fn match_value(&self, f: Field) -> Option<(u64, u64)> {
        self.matches.iter().find(|m| m.field == f).map(|m| (m.value, m.mask))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// OVS's default priority when a flow names none.
pub const DEFAULT_PRIORITY: u16 = 32768;

/// Parses a whole flow file. Blank lines and `#` comments are skipped.
pub fn parse_flows(text: &str) -> Result<Vec<FlowRule>, ParseError> {
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let content = match line.find('#') {
            Some(p) => &line[..p],
            None => line,
        };
        if content.trim().is_empty() {
            continue;
        }
        rules.push(parse_flow_line(content, i + 1)?);
    }
    Ok(rules)
}

/// A token of the line with its byte offset.
#[derive(Clone, Copy)]
struct Tok<'a> {
    text: &'a str,
    offset: usize,
}

struct LineCtx {
    line: usize,
    /// Parsing the nested actions of `ct(exec(...))`, where `ct_mark`/`ct_label` are writable.
    in_ct_exec: bool,
}

impl LineCtx {
    fn err(&self, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError { line: self.line, column: offset + 1, message: message.into() }
    }
}

/// Splits at commas (and, for matches, spaces) outside parentheses and brackets.
fn split_top(s: &str, base: usize, spaces: bool) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ => {}
        }
        let sep = depth <= 0 && (c == ',' || (spaces && c.is_whitespace()));
        if sep {
            if i > start {
                out.push(Tok { text: &s[start..i], offset: base + start });
            }
            start = i + c.len_utf8();
        }
    }
    if s.len() > start {
        out.push(Tok { text: &s[start..], offset: base + start });
    }
    out.into_iter()
        .map(|t| {
            let trimmed = t.text.trim_start();
            let off = t.offset + (t.text.len() - trimmed.len());
            Tok { text: trimmed.trim_end(), offset: off }
        })
        .filter(|t| !t.text.is_empty())
        .collect()
}

pub fn parse_flow_line(line: &str, line_no: usize) -> Result<FlowRule, ParseError> {
    let ctx = LineCtx { line: line_no, in_ct_exec: false };
    let (match_part, actions_at) = match line.find("actions=") {
        Some(p) => (&line[..p], Some(p)),
        None => (line, None),
    };
    let Some(actions_at) = actions_at else {
        return Err(ctx.err(line.trim_end().len(), "expected 'actions=' in the flow"));
    };
    let mut rule = FlowRule {
        table: 0,
        priority: DEFAULT_PRIORITY,
        matches: Vec::new(),
        actions: Vec::new(),
        line: line_no,
        text: line.trim().to_string(),
    };
    for tok in split_top(match_part, 0, true) {
        parse_match_token(&ctx, tok, &mut rule)?;
    }
    check_match_prereqs(&ctx, &rule)?;
    let action_text = &line[actions_at + "actions=".len()..];
    let base = actions_at + "actions=".len();
    let toks = split_top(action_text, base, false);
    if toks.is_empty() {
        return Err(ctx.err(base, "expected at least one action after 'actions=' (use 'drop')"));
    }
    let n = toks.len();
    for (i, tok) in toks.into_iter().enumerate() {
        let a = parse_action(&ctx, tok, &rule)?;
        if let Action::GotoTable { table } = a {
            if i + 1 != n {
                return Err(ctx.err(tok.offset, "goto_table must be the last action"));
            }
            if table <= rule.table {
                return Err(ctx.err(tok.offset, format!("goto_table:{table} must name a table after table {}", rule.table)));
            }
        }
        rule.actions.push(a);
    }
    Ok(rule)
}

fn add_match(ctx: &LineCtx, off: usize, rule: &mut FlowRule, field: Field, value: u64, mask: u64) -> Result<(), ParseError> {
    let mask = mask & field.full_mask();
    if value & !mask != 0 && value > field.full_mask() {
        return Err(ctx.err(off, format!("value does not fit in {} ({} bits)", field.name(), field.bits())));
    }
    let value = value & mask;
    if let Some(m) = rule.matches.iter_mut().find(|m| m.field == field) {
        if (m.value ^ value) & (m.mask & mask) != 0 {
            return Err(ctx.err(off, format!("conflicting matches on {}", field.name())));
        }
        m.value |= value;
        m.mask |= mask;
    } else {
        rule.matches.push(FieldMatch { field, value, mask });
    }
    Ok(())
}

fn parse_match_token(ctx: &LineCtx, tok: Tok<'_>, rule: &mut FlowRule) -> Result<(), ParseError> {
    let (key, val, voff) = match tok.text.find('=') {
        Some(p) => (&tok.text[..p], Some(&tok.text[p + 1..]), tok.offset + p + 1),
        None => (tok.text, None, tok.offset),
    };
    let off = tok.offset;
    let need = |what: &str| -> Result<&str, ParseError> {
        match val {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(ctx.err(voff, format!("expected {what} after '{key}='"))),
        }
    };
    let shorthand = |rule: &mut FlowRule, ty: u64, proto: Option<u64>| -> Result<(), ParseError> {
        add_match(ctx, off, rule, Field::DlType, ty, u64::MAX)?;
        if let Some(p) = proto {
            add_match(ctx, off, rule, Field::NwProto, p, u64::MAX)?;
        }
        Ok(())
    };
    match key {
        "ip" | "ipv4" if val.is_none() => shorthand(rule, ETH_TYPE_IP, None),
        "tcp" if val.is_none() => shorthand(rule, ETH_TYPE_IP, Some(IPPROTO_TCP)),
        "udp" if val.is_none() => shorthand(rule, ETH_TYPE_IP, Some(IPPROTO_UDP)),
        "icmp" if val.is_none() => shorthand(rule, ETH_TYPE_IP, Some(IPPROTO_ICMP)),
        "arp" if val.is_none() => shorthand(rule, ETH_TYPE_ARP, None),
        "table" => {
            let v = parse_uint(need("a table number")?, 254).map_err(|m| ctx.err(voff, m))?;
            rule.table = v as u8;
            Ok(())
        }
        "priority" => {
            let v = parse_uint(need("a priority")?, 65535).map_err(|m| ctx.err(voff, m))?;
            rule.priority = v as u16;
            Ok(())
        }
        "cookie" | "idle_timeout" | "hard_timeout" => {
            need("a value")?;
            Ok(())
        }
        "in_port" => {
            let v = parse_uint(need("a port number")?, 0xffff).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::InPort, v, u64::MAX)
        }
        "dl_src" | "eth_src" | "dl_dst" | "eth_dst" => {
            let field = if key.ends_with("src") { Field::DlSrc } else { Field::DlDst };
            let (v, m) = parse_masked(need("a MAC address")?, parse_mac, 48).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, field, v, m)
        }
        "dl_type" | "eth_type" => {
            let v = parse_uint(need("an ethertype")?, 0xffff).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::DlType, v, u64::MAX)
        }
        "dl_vlan" => {
            let v = parse_uint(need("a VLAN id")?, 0xfff).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::VlanTci, 0x1000 | v, 0x1fff)
        }
        "vlan_tci" => {
            let (v, m) = parse_masked(need("a TCI")?, |s| parse_uint(s, 0xffff), 16).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::VlanTci, v, m)
        }
        "nw_src" | "ip_src" | "nw_dst" | "ip_dst" => {
            let field = if key.ends_with("src") { Field::NwSrc } else { Field::NwDst };
            let (v, m) = parse_ip_masked(need("an IPv4 address")?).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, field, v, m)
        }
        "nw_proto" | "ip_proto" => {
            let v = parse_uint(need("a protocol number")?, 255).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::NwProto, v, u64::MAX)
        }
        "nw_ttl" | "ip_ttl" => {
            let v = parse_uint(need("a TTL")?, 255).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::NwTtl, v, u64::MAX)
        }
        "ct_state" => {
            let (v, m) = parse_ct_state(need("conntrack flags like +trk+new")?, true).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::CtState, v, m)
        }
        "ct_zone" => {
            let v = parse_uint(need("a zone number")?, 0xffff).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::CtZone, v, u64::MAX)
        }
        "ct_mark" => {
            let (v, m) = parse_masked(need("a value")?, |s| parse_uint(s, 0xffff_ffff), 32).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::CtMark, v, m)
        }
        "ct_label" => {
            let (v, m) = parse_field_value(Field::CtLabel, need("a value")?).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::CtLabel, v, m)
        }
        "nw_tos" => {
            let v = parse_uint(need("a ToS value")?, 255).map_err(|m| ctx.err(voff, m))?;
            if v & 3 != 0 {
                return Err(ctx.err(voff, "nw_tos must have its two ECN bits clear (a multiple of 4)"));
            }
            add_match(ctx, off, rule, Field::NwTos, v, 0xfc)
        }
        "tp_src" | "tp_dst" | "tcp_src" | "tcp_dst" | "udp_src" | "udp_dst" | "icmp_type" | "icmp_code" => {
            let field = if key.ends_with("src") || key == "icmp_type" { Field::TpSrc } else { Field::TpDst };
            let limit = if key.starts_with("icmp") { 8 } else { 16 };
            let (v, m) = parse_masked(need("a port number")?, |s| parse_uint(s, (1 << limit) - 1), limit)
                .map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, field, v, m)
        }
        "metadata" => {
            let (v, m) = parse_masked(need("a value")?, |s| parse_uint(s, u64::MAX), 64).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::Metadata, v, m)
        }
        k if k.starts_with("reg") && val.is_some() => {
            let r = parse_reg_index(&k[3..]).ok_or_else(|| ctx.err(off, format!("unknown register '{k}' (expected reg0..reg15)")))?;
            let (v, m) = parse_masked(need("a value")?, |s| parse_uint(s, 0xffff_ffff), 32).map_err(|m| ctx.err(voff, m))?;
            add_match(ctx, off, rule, Field::Reg(r), v, m)
        }
        _ => Err(ctx.err(off, format!("unknown match field '{key}' (expected table, priority, in_port, dl_src, dl_dst, dl_type, dl_vlan, ip, tcp, udp, icmp, arp, nw_src, nw_dst, nw_proto, nw_tos, nw_ttl, tp_src, tp_dst, ct_state, ct_zone, ct_mark, ct_label, reg0..reg15, metadata or actions=)"))),
    }
}

/// OVS refuses L3 matches without an L3 ethertype, and L4 matches without a protocol.
fn check_match_prereqs(ctx: &LineCtx, rule: &FlowRule) -> Result<(), ParseError> {
    let dl_type = rule.match_value(Field::DlType).map(|(v, _)| v);
    let proto = rule.match_value(Field::NwProto).map(|(v, _)| v);
    for m in &rule.matches {
        match m.field {
            Field::NwSrc | Field::NwDst if dl_type != Some(ETH_TYPE_IP) && dl_type != Some(ETH_TYPE_ARP) => {
                return Err(ctx.err(0, format!("{} needs 'ip' or 'arp' (dl_type=0x0800 or 0x0806)", m.field.name())));
            }
            Field::NwProto | Field::NwTos | Field::NwTtl if dl_type != Some(ETH_TYPE_IP) => {
                return Err(ctx.err(0, format!("{} needs 'ip' (dl_type=0x0800)", m.field.name())));
            }
            Field::TpSrc | Field::TpDst
                if dl_type != Some(ETH_TYPE_IP) || !matches!(proto, Some(IPPROTO_TCP | IPPROTO_UDP | IPPROTO_ICMP)) =>
            {
                return Err(ctx.err(0, format!("{} needs 'tcp', 'udp' or 'icmp'", m.field.name())));
            }
            _ => {}
        }
    }
    Ok(())
}

fn parse_reg_index(s: &str) -> Option<u8> {
    let r: u8 = s.parse().ok()?;
    (r < 16 && !s.starts_with('+')).then_some(r)
}

/// `ct_state` flags written `+trk+new-est` (a match) or `trk|new` (a packet's state):
/// (value, mask). `signed` selects the match form.
pub fn parse_ct_state(s: &str, signed: bool) -> Result<(u64, u64), String> {
    let bit = |name: &str| {
        CT_STATE_NAMES.iter().position(|&n| n == name).map(|i| 1u64 << i).ok_or_else(|| {
            format!("unknown ct_state flag '{name}' (expected {})", CT_STATE_NAMES.join(", "))
        })
    };
    if s.starts_with("0x") || s.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        let (v, m) = match s.split_once('/') {
            Some((v, m)) => (parse_uint(v, 0xff)?, parse_uint(m, 0xff)?),
            None => (parse_uint(s, 0xff)?, 0xff),
        };
        return Ok((v & m, m));
    }
    let (mut value, mut mask) = (0, 0);
    if signed {
        let mut rest = s;
        while !rest.is_empty() {
            let plus = match rest.as_bytes()[0] {
                b'+' => true,
                b'-' => false,
                _ => return Err(format!("expected '+flag' or '-flag' in ct_state, got '{rest}'")),
            };
            let end = rest[1..].find(['+', '-']).map_or(rest.len(), |p| p + 1);
            let b = bit(&rest[1..end])?;
            if mask & b != 0 {
                return Err(format!("ct_state flag '{}' given twice", &rest[1..end]));
            }
            mask |= b;
            if plus {
                value |= b;
            }
            rest = &rest[end..];
        }
    } else {
        for name in s.split('|') {
            value |= bit(name)?;
        }
        mask = 0xff;
    }
    Ok((value, mask))
}

/// Parses a decimal or `0x` hexadecimal number no larger than `max`.
pub fn parse_uint(s: &str, max: u64) -> Result<u64, String> {
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if h.is_empty() || !h.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("expected a hexadecimal number, got '{s}'"));
        }
        u64::from_str_radix(h, 16).map_err(|_| format!("number '{s}' is too large"))?
    } else {
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("expected a number, got '{s}'"));
        }
        s.parse::<u64>().map_err(|_| format!("number '{s}' is too large"))?
    };
    if v > max {
        return Err(format!("{v} is larger than the maximum {max}"));
    }
    Ok(v)
}

/// A decimal or `0x` hexadecimal number of up to 128 bits (`ct_label`).
pub fn parse_u128(s: &str) -> Result<u128, String> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("expected a number, got '{s}'"));
    }
    u128::from_str_radix(digits, radix).map_err(|_| format!("number '{s}' is too large for 128 bits"))
}

/// `VALUE` or `VALUE/MASK`, both parsed by `p`.
fn parse_masked(s: &str, p: impl Fn(&str) -> Result<u64, String>, bits: u32) -> Result<(u64, u64), String> {
    let full = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    match s.split_once('/') {
        Some((v, m)) => {
            let m = p(m)?;
            Ok((p(v)? & m, m))
        }
        None => Ok((p(s)?, full)),
    }
}

pub fn parse_mac(s: &str) -> Result<u64, String> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(format!("expected a MAC address like 00:11:22:33:44:55, got '{s}'"));
    }
    let mut v = 0u64;
    for p in parts {
        if p.is_empty() || p.len() > 2 || !p.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("expected a MAC address like 00:11:22:33:44:55, got '{s}'"));
        }
        v = (v << 8) | u64::from_str_radix(p, 16).map_err(|_| format!("bad MAC byte '{p}'"))?;
    }
    Ok(v)
}

pub fn parse_ip(s: &str) -> Result<u64, String> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return Err(format!("expected an IPv4 address like 10.0.0.1, got '{s}'"));
    }
    let mut v = 0u64;
    for p in parts {
        let b: u8 = (!p.is_empty() && p.len() <= 3 && p.chars().all(|c| c.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
            .ok_or_else(|| format!("expected an IPv4 address like 10.0.0.1, got '{s}'"))?;
        v = (v << 8) | b as u64;
    }
    Ok(v)
}

/// `A.B.C.D`, `A.B.C.D/LEN` or `A.B.C.D/MASK`.
pub fn parse_ip_masked(s: &str) -> Result<(u64, u64), String> {
    match s.split_once('/') {
        Some((a, m)) => {
            let v = parse_ip(a)?;
            let mask = if m.contains('.') {
                parse_ip(m)?
            } else {
                let len = parse_uint(m, 32).map_err(|_| format!("expected a prefix length 0..32 after '/', got '{m}'"))?;
                if len == 0 { 0 } else { (u32::MAX << (32 - len)) as u64 }
            };
            Ok((v & mask, mask))
        }
        None => Ok((parse_ip(s)?, 0xffff_ffff)),
    }
}

/// A field name as written in set_field/load/move (OVS and NXM/OXM spellings).
pub fn field_by_name(name: &str) -> Option<(Field, Prereq)> {
    let tcp = Prereq::Proto(IPPROTO_TCP as u8);
    let udp = Prereq::Proto(IPPROTO_UDP as u8);
    Some(match name {
        "in_port" | "NXM_OF_IN_PORT" => (Field::InPort, Prereq::None),
        "metadata" | "OXM_OF_METADATA" => (Field::Metadata, Prereq::None),
        "eth_src" | "dl_src" | "NXM_OF_ETH_SRC" | "OXM_OF_ETH_SRC" => (Field::DlSrc, Prereq::None),
        "eth_dst" | "dl_dst" | "NXM_OF_ETH_DST" | "OXM_OF_ETH_DST" => (Field::DlDst, Prereq::None),
        "eth_type" | "dl_type" | "NXM_OF_ETH_TYPE" => (Field::DlType, Prereq::None),
        "vlan_tci" | "NXM_OF_VLAN_TCI" => (Field::VlanTci, Prereq::None),
        "ip_src" | "nw_src" | "ipv4_src" | "NXM_OF_IP_SRC" | "OXM_OF_IPV4_SRC" => (Field::NwSrc, Prereq::Ip),
        "ip_dst" | "nw_dst" | "ipv4_dst" | "NXM_OF_IP_DST" | "OXM_OF_IPV4_DST" => (Field::NwDst, Prereq::Ip),
        "nw_proto" | "ip_proto" | "NXM_OF_IP_PROTO" => (Field::NwProto, Prereq::Ip),
        "nw_tos" | "NXM_OF_IP_TOS" => (Field::NwTos, Prereq::Ip),
        "nw_ttl" | "ip_ttl" | "NXM_NX_IP_TTL" => (Field::NwTtl, Prereq::Ip),
        "tcp_src" | "tp_src" | "NXM_OF_TCP_SRC" | "OXM_OF_TCP_SRC" => (Field::TpSrc, tcp),
        "tcp_dst" | "tp_dst" | "NXM_OF_TCP_DST" | "OXM_OF_TCP_DST" => (Field::TpDst, tcp),
        "udp_src" | "NXM_OF_UDP_SRC" | "OXM_OF_UDP_SRC" => (Field::TpSrc, udp),
        "udp_dst" | "NXM_OF_UDP_DST" | "OXM_OF_UDP_DST" => (Field::TpDst, udp),
        "ct_mark" | "NXM_NX_CT_MARK" => (Field::CtMark, Prereq::None),
        "ct_label" | "NXM_NX_CT_LABEL" => (Field::CtLabel, Prereq::None),
        _ => {
            let r = name
                .strip_prefix("NXM_NX_REG")
                .or_else(|| name.strip_prefix("reg"))
                .and_then(parse_reg_index)?;
            (Field::Reg(r), Prereq::None)
        }
    })
}

fn parse_subfield(ctx: &LineCtx, s: &str, off: usize) -> Result<SubField, ParseError> {
    let Some(open) = s.find('[') else {
        return Err(ctx.err(off, format!("expected FIELD[] or FIELD[a..b], got '{s}'")));
    };
    let name = &s[..open];
    let (field, prereq) = field_by_name(name).ok_or_else(|| ctx.err(off, format!("unknown field '{name}'")))?;
    let Some(range) = s[open + 1..].strip_suffix(']') else {
        return Err(ctx.err(off + s.len(), "expected ']'"));
    };
    let roff = off + open + 1;
    let width = field.bits();
    if field == Field::CtLabel && (range.is_empty() || range.split("..").any(|b| parse_uint(b, 63).is_err() && parse_uint(b, 127).is_ok())) {
        return Err(ctx.err(roff, format!("{name}[{range}]: ct_label is 128 bits in OVS; only bits 0..63 are modelled (write e.g. {name}[0..31])")));
    }
    let (lo, hi) = if range.is_empty() {
        (0, width - 1)
    } else if let Some((a, b)) = range.split_once("..") {
        let a = parse_uint(a, 63).map_err(|m| ctx.err(roff, m))? as u32;
        let b = parse_uint(b, 63).map_err(|m| ctx.err(roff, m))? as u32;
        (a, b)
    } else {
        let a = parse_uint(range, 63).map_err(|m| ctx.err(roff, m))? as u32;
        (a, a)
    };
    if lo > hi || hi >= width {
        return Err(ctx.err(roff, format!("bit range [{lo}..{hi}] is outside {} ({width} bits)", field.name())));
    }
    Ok(SubField { field, prereq, offset_bits: lo, n_bits: hi - lo + 1 })
}

fn check_writable(ctx: &LineCtx, off: usize, field: Field, prereq: Prereq, rule: &FlowRule) -> Result<(), ParseError> {
    if matches!(field, Field::DlType | Field::NwProto) {
        return Err(ctx.err(off, format!("{} is not writable", field.name())));
    }
    // OVS (ovs-ofctl): "cannot set CT fields outside of ct action", and inside ct(exec(...))
    // "ct action doesn't support nested modification of FIELD".
    match (ctx.in_ct_exec, matches!(field, Field::CtMark | Field::CtLabel)) {
        (false, true) => return Err(ctx.err(off, format!("cannot set CT fields outside of ct action ({} is written in ct(commit,exec(...)))", field.name()))),
        (true, false) => return Err(ctx.err(off, format!("ct action doesn't support nested modification of {} (only ct_mark and ct_label)", field.name()))),
        _ => {}
    }
    check_prereq(ctx, off, field, prereq, rule)
}

/// OVS rejects actions on fields the flow's match does not guarantee.
fn check_prereq(ctx: &LineCtx, off: usize, field: Field, prereq: Prereq, rule: &FlowRule) -> Result<(), ParseError> {
    let dl_type = rule.match_value(Field::DlType).map(|(v, _)| v);
    let proto = rule.match_value(Field::NwProto).map(|(v, _)| v);
    match prereq {
        Prereq::None => Ok(()),
        Prereq::Ip if dl_type == Some(ETH_TYPE_IP) => Ok(()),
        Prereq::Proto(p) if dl_type == Some(ETH_TYPE_IP) && proto == Some(p as u64) => Ok(()),
        Prereq::Ip => Err(ctx.err(off, format!("{} needs the flow to match 'ip'", field.name()))),
        Prereq::Proto(p) => Err(ctx.err(off, format!("{} needs the flow to match {}", field.name(), if p == 6 { "'tcp'" } else { "'udp'" }))),
    }
}

fn parse_action(ctx: &LineCtx, tok: Tok<'_>, rule: &FlowRule) -> Result<Action, ParseError> {
    let s = tok.text;
    let off = tok.offset;
    let (name, arg, aoff) = match s.find([':', '(']) {
        Some(p) if s.as_bytes()[p] == b':' => (&s[..p], Some(&s[p + 1..]), off + p + 1),
        Some(p) => (&s[..p], Some(&s[p..]), off + p),
        None => (s, None, off),
    };
    let need = |what: &str| -> Result<&str, ParseError> {
        match arg {
            Some(a) if !a.is_empty() => Ok(a),
            _ => Err(ctx.err(aoff, format!("expected {what} after '{name}'"))),
        }
    };
    match name {
        "drop" if arg.is_none() => Ok(Action::Drop),
        "ct_clear" if arg.is_none() => Ok(Action::CtClear),
        "dec_ttl" if arg.is_none() => {
            // OVS refuses dec_ttl in an OpenFlow 1.3 flow that does not match IP.
            check_prereq(ctx, off, Field::NwTtl, Prereq::Ip, rule)?;
            Ok(Action::DecTtl)
        }
        "ct" => parse_ct(ctx, aoff, arg.unwrap_or("()"), rule),
        "output" => {
            let p = parse_uint(need("a port number")?, 0xfeff).map_err(|m| ctx.err(aoff, m))?;
            Ok(Action::Output { port: p as u32 })
        }
        n if arg.is_none() && n.chars().all(|c| c.is_ascii_digit()) => {
            let p = parse_uint(n, 0xfeff).map_err(|m| ctx.err(off, m))?;
            Ok(Action::Output { port: p as u32 })
        }
        "goto_table" => {
            let t = parse_uint(need("a table number")?, 254).map_err(|m| ctx.err(aoff, m))?;
            Ok(Action::GotoTable { table: t as u8 })
        }
        "resubmit" => {
            let a = need("'(,TABLE)'")?;
            let inner = a
                .strip_prefix('(')
                .and_then(|x| x.strip_suffix(')'))
                .ok_or_else(|| ctx.err(aoff, "expected resubmit(,TABLE)"))?;
            let (port, table) = inner.split_once(',').ok_or_else(|| ctx.err(aoff, "expected resubmit(,TABLE)"))?;
            if !port.trim().is_empty() {
                return Err(ctx.err(aoff + 1, "resubmit with an in_port is not supported; expected resubmit(,TABLE)"));
            }
            let t = parse_uint(table.trim(), 254).map_err(|m| ctx.err(aoff + 2, m))?;
            Ok(Action::Resubmit { table: t as u8 })
        }
        "mod_dl_src" | "mod_dl_dst" => {
            let v = parse_mac(need("a MAC address")?).map_err(|m| ctx.err(aoff, m))?;
            let field = if name == "mod_dl_src" { Field::DlSrc } else { Field::DlDst };
            Ok(Action::SetField { field, prereq: Prereq::None, value: v, mask: field.full_mask() })
        }
        "mod_nw_src" | "mod_nw_dst" => {
            let v = parse_ip(need("an IPv4 address")?).map_err(|m| ctx.err(aoff, m))?;
            let field = if name == "mod_nw_src" { Field::NwSrc } else { Field::NwDst };
            check_prereq(ctx, off, field, Prereq::Ip, rule)?;
            Ok(Action::SetField { field, prereq: Prereq::Ip, value: v, mask: field.full_mask() })
        }
        "mod_nw_tos" => {
            let v = parse_uint(need("a ToS value")?, 255).map_err(|m| ctx.err(aoff, m))?;
            if v & 3 != 0 {
                return Err(ctx.err(aoff, "mod_nw_tos needs a multiple of 4 (ECN bits clear)"));
            }
            check_prereq(ctx, off, Field::NwTos, Prereq::Ip, rule)?;
            Ok(Action::SetField { field: Field::NwTos, prereq: Prereq::Ip, value: v, mask: 0xfc })
        }
        "mod_tp_src" | "mod_tp_dst" => {
            let v = parse_uint(need("a port number")?, 0xffff).map_err(|m| ctx.err(aoff, m))?;
            let field = if name == "mod_tp_src" { Field::TpSrc } else { Field::TpDst };
            let proto = match rule.match_value(Field::NwProto) {
                Some((p, _)) if p == IPPROTO_TCP || p == IPPROTO_UDP => p as u8,
                _ => return Err(ctx.err(off, format!("{name} needs the flow to match 'tcp' or 'udp'"))),
            };
            Ok(Action::SetField { field, prereq: Prereq::Proto(proto), value: v, mask: 0xffff })
        }
        "set_field" => {
            let a = need("VALUE->FIELD")?;
            let (v, f) = a.split_once("->").ok_or_else(|| ctx.err(aoff, "expected set_field:VALUE->FIELD"))?;
            let foff = aoff + v.len() + 2;
            let (field, prereq) = field_by_name(f).ok_or_else(|| ctx.err(foff, format!("unknown field '{f}'")))?;
            check_writable(ctx, foff, field, prereq, rule)?;
            let (value, mask) = parse_field_value(field, v).map_err(|m| ctx.err(aoff, m))?;
            Ok(Action::SetField { field, prereq, value, mask })
        }
        "load" => {
            let a = need("VALUE->FIELD[a..b]")?;
            let (v, f) = a.split_once("->").ok_or_else(|| ctx.err(aoff, "expected load:VALUE->FIELD[a..b]"))?;
            let foff = aoff + v.len() + 2;
            let dst = parse_subfield(ctx, f, foff)?;
            check_writable(ctx, foff, dst.field, dst.prereq, rule)?;
            let value = parse_uint(v, u64::MAX).map_err(|m| ctx.err(aoff, m))?;
            if dst.n_bits < 64 && value >> dst.n_bits != 0 {
                return Err(ctx.err(aoff, format!("value {v} does not fit in {} bits", dst.n_bits)));
            }
            Ok(Action::SetField { field: dst.field, prereq: dst.prereq, value: value << dst.offset_bits, mask: dst.mask() })
        }
        "move" => {
            let a = need("SRC[]->DST[]")?;
            let (src, dst) = a.split_once("->").ok_or_else(|| ctx.err(aoff, "expected move:SRC[a..b]->DST[c..d]"))?;
            let doff = aoff + src.len() + 2;
            let src = parse_subfield(ctx, src, aoff)?;
            let dst = parse_subfield(ctx, dst, doff)?;
            if src.n_bits != dst.n_bits {
                return Err(ctx.err(aoff, format!("move copies {} bits into {} bits; the widths must be equal", src.n_bits, dst.n_bits)));
            }
            check_prereq(ctx, aoff, src.field, src.prereq, rule)?;
            check_writable(ctx, doff, dst.field, dst.prereq, rule)?;
            Ok(Action::Move { src, dst })
        }
        _ => Err(ctx.err(off, format!("unknown action '{s}' (expected output, drop, resubmit, goto_table, set_field, load, move, mod_*, ct, ct_clear or dec_ttl)"))),
    }
}

/// `ct(...)` with `commit`, `zone=N`, `table=N` and `exec(...)` (writes into ct_mark and
/// ct_label); what else OVS takes (nat, alg, force, a zone from a field) is refused as not
/// modelled.
fn parse_ct(ctx: &LineCtx, off: usize, arg: &str, rule: &FlowRule) -> Result<Action, ParseError> {
    let inner = arg.strip_prefix('(').and_then(|a| a.strip_suffix(')')).ok_or_else(|| ctx.err(off, "expected ct(...) with parentheses"))?;
    if rule.match_value(Field::DlType).map(|(v, _)| v) != Some(ETH_TYPE_IP) {
        return Err(ctx.err(off, "ct needs the flow to match 'ip' (OVS: OFPBAC_MATCH_INCONSISTENT)"));
    }
    let (mut commit, mut zone, mut table, mut exec) = (false, 0u16, None, Vec::new());
    for tok in split_top(inner, off + 1, false) {
        let (k, v) = tok.text.split_once('=').map_or((tok.text, None), |(k, v)| (k, Some(v)));
        match (k, v) {
            ("commit", None) => commit = true,
            ("zone", Some(v)) => zone = parse_uint(v, 0xffff).map_err(|m| ctx.err(tok.offset, format!("ct zone: {m} (a zone taken from a field is not supported)")))? as u16,
            ("table", Some(v)) => table = Some(parse_uint(v, 254).map_err(|m| ctx.err(tok.offset, format!("ct table: {m}")))? as u8),
            _ if tok.text.starts_with("exec(") && tok.text.ends_with(')') => {
                let body = &tok.text["exec(".len()..tok.text.len() - 1];
                let nested = LineCtx { line: ctx.line, in_ct_exec: true };
                for t in split_top(body, tok.offset + "exec(".len(), false) {
                    let a = parse_action(&nested, t, rule)?;
                    if !matches!(a, Action::SetField { .. } | Action::Move { .. }) {
                        let name = t.text.split([':', '(']).next().unwrap_or(t.text);
                        return Err(ctx.err(t.offset, format!("ct action doesn't support nested action {name} (only set_field, load and move into ct_mark or ct_label)")));
                    }
                    exec.push(a);
                }
            }
            _ => return Err(ctx.err(tok.offset, format!("ct argument '{}' is not modelled (expected commit, zone=N, table=N or exec(...))", tok.text))),
        }
    }
    if !exec.is_empty() && !commit {
        // OVS: OFPBAC_BAD_ARGUMENT.
        return Err(ctx.err(off, "CT action requires commit flag if actions other than NAT without arguments are specified (ct(commit,exec(...)))"));
    }
    Ok(Action::Ct { commit, zone, table, exec })
}

/// The value of a `set_field`, in the field's own notation, with an optional `/mask`.
fn parse_field_value(field: Field, s: &str) -> Result<(u64, u64), String> {
    match field {
        Field::DlSrc | Field::DlDst => parse_masked(s, parse_mac, 48),
        Field::NwSrc | Field::NwDst => match s.split_once('/') {
            Some((v, m)) => {
                let m = parse_ip(m)?;
                Ok((parse_ip(v)? & m, m))
            }
            None => Ok((parse_ip(s)?, 0xffff_ffff)),
        },
        Field::CtLabel => {
            let bits = |x: &str| -> Result<u64, String> {
                let v = parse_u128(x)?;
                crate::fields::ct_label_bits(v).ok_or_else(|| format!("ct_label {x}: only the low 64 bits of the 128-bit label are modelled"))
            };
            match s.split_once('/') {
                Some((v, m)) => {
                    let m = bits(m)?;
                    Ok((bits(v)? & m, m))
                }
                None => Ok((bits(s)?, u64::MAX)),
            }
        }
        Field::NwTos => {
            let v = parse_uint(s, 255)?;
            if v & 3 != 0 {
                return Err("nw_tos must be a multiple of 4".into());
            }
            Ok((v, 0xfc))
        }
        f => {
            let max = f.full_mask();
            parse_masked(s, |x| parse_uint(x, max), f.bits())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_matches_and_actions() {
        let r = parse_flow_line(
            "table=1,priority=132,tcp,nw_dst=10.1.2.0/24,tp_dst=0x50/0xfff0,reg3=5/0xff,actions=set_field:00:00:00:00:03:03->eth_dst,load:0x2a->NXM_NX_REG0[0..7],move:NXM_OF_TCP_DST[]->NXM_NX_REG1[0..15],resubmit(,5),goto_table:2",
            1,
        )
        .unwrap();
        assert_eq!(r.table, 1);
        assert_eq!(r.priority, 132);
        assert_eq!(r.match_value(Field::NwDst), Some((0x0a010200, 0xffffff00)));
        assert_eq!(r.match_value(Field::TpDst), Some((0x50, 0xfff0)));
        assert_eq!(r.match_value(Field::Reg(3)), Some((5, 0xff)));
        assert_eq!(r.actions.len(), 5);
        assert_eq!(r.actions[3], Action::Resubmit { table: 5 });
        assert_eq!(r.actions[4], Action::GotoTable { table: 2 });
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse_flows("table=0,actions=drop\n\ntable=1,nw_dst=10.0.0.0/8,actions=drop\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("'ip'"), "{e}");
        let e = parse_flows("priority=5,tcp,tp_dst=99999,actions=drop").unwrap_err();
        assert_eq!((e.line, e.column), (1, 23));
        let e = parse_flows("in_port=1,actions=output:2,frobnicate").unwrap_err();
        assert_eq!(e.column, 28);
        let e = parse_flows("in_port=1").unwrap_err();
        assert!(e.message.contains("actions="));
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in ["actions=", "=,=,actions=load:->[", "reg99=1,actions=drop", "actions=move:reg0[5..1]->reg1[]",
            "actions=resubmit(", "nw_src=1.2.3.4/33,ip,actions=drop", "actions=load:1->reg0[0..70]", "é=1,actions=drop"] {
            assert!(parse_flows(s).is_err(), "{s}");
        }
    }

    #[test]
    fn ct_exec_writes_ct_mark_and_ct_label_only_and_only_with_commit() {
        let r = parse_flow_line("ip,actions=ct(commit,table=3,zone=2,exec(set_field:0x1/0x1->ct_mark,load:0x1->NXM_NX_CT_LABEL[5],move:NXM_NX_REG0[0..7]->NXM_NX_CT_MARK[8..15]))", 1).unwrap();
        let Action::Ct { commit: true, zone: 2, table: Some(3), exec } = &r.actions[0] else { panic!("{:?}", r.actions) };
        assert_eq!(exec[0], Action::SetField { field: Field::CtMark, prereq: Prereq::None, value: 1, mask: 1 });
        assert_eq!(exec[1], Action::SetField { field: Field::CtLabel, prereq: Prereq::None, value: 0x20, mask: 0x20 });
        assert!(matches!(exec[2], Action::Move { .. }));
        // 128-bit label notation; the upper 64 bits are not modelled.
        let r = parse_flow_line("ct_label=0x3/0xffffffffffffffffffffffffffffffff,ip,actions=drop", 1).unwrap();
        assert_eq!(r.match_value(Field::CtLabel), Some((3, u64::MAX)));
        for (bad, says) in [
            ("ip,actions=ct(exec(set_field:1->ct_mark))", "requires commit"),
            ("ip,actions=ct(commit,exec(output:1))", "nested action output"),
            ("ip,actions=ct(commit,exec(set_field:1->reg0))", "nested modification of reg0"),
            ("ip,actions=set_field:1->ct_mark", "outside of ct action"),
            ("ip,actions=ct(commit,exec(load:1->NXM_NX_CT_LABEL[96..127]))", "only bits 0..63"),
            ("ct_label=0x10000000000000000,ip,actions=drop", "low 64 bits"),
            ("ip,actions=ct(commit,exec(set_field:1->ct_mark)", "is not modelled"),
        ] {
            let e = parse_flow_line(bad, 1).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {e}");
        }
    }
}
