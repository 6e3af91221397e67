//! Human-readable slow-path traces in the shape of `ovs-appctl ofproto/trace`: the packet, each
//! table hit with its rule and actions, the final flow, the Megaflow and the actions; plus the
//! parser for the packet description (`in_port=1,tcp,nw_dst=10.0.0.1,tp_dst=80`).

use crate::fields::{Field, Flow, ETH_TYPE_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use crate::flows::{parse_flow_line, Action, ParseError};
use crate::slowpath::{Pipeline, Trace};

/// Parses a packet written like an OVS trace flow: exact values, unspecified fields are zero.
/// Takes what `ofproto/trace` takes for the fields this slow path models (ICMP's 8-bit
/// `icmp_type`/`icmp_code` included) and the packet-only fields OVS prints on its `Flow:` line,
/// so that line pastes back: `nw_ecn` (the ToS byte's low bits), `nw_frag=no`, `recirc_id=0`,
/// `eth`, and `tcp_flags`, which is read and checked but cannot change a trace (the
/// flow language refuses matches on it and no action reads it).
pub fn parse_packet(text: &str) -> Result<Flow, ParseError> {
    let err = |column: usize, message: String| ParseError { line: 1, column, message };
    // Packet-only tokens are blanked (columns kept) before the rest goes to the flow parser.
    let mut rest = String::with_capacity(text.len());
    let mut ecn = None;
    let mut start = 0;
    for piece in text.split_inclusive(|c: char| c == ',' || c.is_whitespace()) {
        let tok = piece.trim_end_matches(|c: char| c == ',' || c.is_whitespace());
        let column = start + 1;
        start += piece.len();
        let (key, val) = tok.split_once('=').map_or((tok, None), |(k, v)| (k, Some(v)));
        let number = |max: u64| -> Result<u64, ParseError> {
            let v = val.filter(|v| !v.is_empty()).ok_or_else(|| err(column, format!("expected a value after '{key}='")))?;
            crate::flows::parse_uint(v, max).map_err(|m| err(column, format!("{key}: {m}")))
        };
        match key {
            "nw_ecn" | "ip_ecn" => ecn = Some(number(3)?),
            "tcp_flags" => {
                // A number or flag names joined by '|', as OVS prints them (`syn|ack`).
                const NAMES: [&str; 9] = ["fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns"];
                let names_ok = val.is_some_and(|v| !v.is_empty() && v.split('|').all(|n| NAMES.contains(&n)));
                if !names_ok {
                    number(0xfff).map_err(|e| err(column, format!("{}, or flag names ({}) joined by '|'", e.message, NAMES.join(", "))))?;
                }
            }
            "recirc_id" if number(u32::MAX as u64)? != 0 => {
                return Err(err(column, "recirc_id must be 0: a trace starts with the packet's first pass (set later passes' conntrack state with --ct-next)".into()));
            }
            "recirc_id" => {}
            "ct_state" => {
                // As OVS prints it on the Flow: line (`new|trk`); a first pass's packet is untracked.
                let v = val.unwrap_or("");
                let state = crate::flows::parse_ct_state(v, false).map_err(|m| err(column, format!("ct_state: {m}")))?.0;
                if state != 0 {
                    return Err(err(column, "ct_state must be 0 in a packet: conntrack sets it for the passes after ct(table=N) (use --ct-next)".into()));
                }
            }
            "eth" if val.is_none() => {}
            "nw_frag" | "ip_frag" => match val {
                Some("no") => {}
                _ => return Err(err(column, format!("{key}: only 'no' (an unfragmented packet) is modelled"))),
            },
            _ => {
                rest.push_str(piece);
                continue;
            }
        }
        rest.push_str(&" ".repeat(piece.len()));
    }
    let rule = parse_flow_line(&format!("{rest},actions=drop"), 1)?;
    let mut flow = Flow::default();
    let icmp = rule.match_value(Field::NwProto).map(|(v, _)| v) == Some(IPPROTO_ICMP);
    for m in &rule.matches {
        let exact = m.mask == m.field.full_mask()
            || (m.field == Field::NwTos && m.mask == 0xfc)
            || m.field == Field::VlanTci
            // icmp_type and icmp_code are the low 8 bits of tp_src and tp_dst.
            || (icmp && matches!(m.field, Field::TpSrc | Field::TpDst) && m.mask == 0xff);
        if !exact {
            return Err(err(1, format!("{} must be an exact value in a packet, not a mask", m.field.name())));
        }
        flow.set(m.field, m.value);
    }
    if let Some(e) = ecn {
        if !flow.is_ip() {
            return Err(err(1, "nw_ecn needs 'ip' (dl_type=0x0800)".into()));
        }
        flow.set(Field::NwTos, flow.get(Field::NwTos) | e);
    }
    Ok(flow)
}

/// Formats a (value, mask) flow as OVS prints matches, with protocol shorthands.
pub fn format_match(value: &Flow, mask: &Flow) -> String {
    format_fields(value, mask, false)
}

/// As [`format_match`]; `packet`: a packet's own fields, with `ct_state` as its flags
/// (`est|trk`, as OVS's `Flow:` line prints them) instead of a match.
fn format_fields(value: &Flow, mask: &Flow, packet: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    let exact = |f: Field| mask.get(f) == f.full_mask();
    let ip = exact(Field::DlType) && value.get(Field::DlType) == ETH_TYPE_IP;
    let proto_name = if ip && exact(Field::NwProto) {
        match value.get(Field::NwProto) {
            IPPROTO_TCP => Some("tcp"),
            IPPROTO_UDP => Some("udp"),
            IPPROTO_ICMP => Some("icmp"),
            _ => None,
        }
    } else {
        None
    };
    // Datapath metadata comes first, as OVS prints it (recirc_id, ct_state, ct_zone, ct_mark).
    for f in DATAPATH_METADATA {
        if mask.get(f) != 0 {
            let text = match f {
                Field::CtState if packet => crate::fields::format_ct_flags(value.get(f)),
                _ => f.format(value.get(f) & mask.get(f), mask.get(f)),
            };
            parts.push(format!("{}={text}", f.name()));
        }
    }
    match (ip, proto_name) {
        (true, Some(p)) => parts.push(p.into()),
        (true, None) => parts.push("ip".into()),
        _ => {}
    }
    for f in print_order() {
        let m = mask.get(f);
        if m == 0 || (f == Field::DlType && ip) || (f == Field::NwProto && proto_name.is_some()) {
            continue;
        }
        if f == Field::NwTos {
            // OVS prints the DSCP and ECN parts of the ToS byte separately, without masks.
            if m & 0xfc != 0 {
                parts.push(format!("nw_tos={}", value.get(f) & m & 0xfc));
            }
            if m & 0x03 != 0 {
                parts.push(format!("nw_ecn={}", value.get(f) & m & 0x03));
            }
            continue;
        }
        if f == Field::VlanTci {
            // OVS prints a present tag with a whole VID (and/or PCP) as dl_vlan/dl_vlan_pcp.
            let (v, vid_m, pcp_m) = (value.get(f) & m, m & 0x0fff, m & 0xe000);
            if m & 0x1000 != 0 && v & 0x1000 != 0 && (vid_m == 0 || vid_m == 0x0fff) && (pcp_m == 0 || pcp_m == 0xe000) && m != 0x1000 {
                if vid_m != 0 {
                    parts.push(format!("dl_vlan={}", v & 0x0fff));
                }
                if pcp_m != 0 {
                    parts.push(format!("dl_vlan_pcp={}", v >> 13));
                }
                continue;
            }
        }
        let name = match (f, proto_name) {
            (Field::TpSrc, Some("icmp")) => "icmp_type".to_string(),
            (Field::TpDst, Some("icmp")) => "icmp_code".to_string(),
            _ => f.name(),
        };
        parts.push(format!("{name}={}", f.format(value.get(f) & m, m)));
    }
    parts.join(",")
}

/// The fields OVS prints before the protocol, in its order (recirc_id, ct_state, ct_zone,
/// ct_mark, ct_label).
const DATAPATH_METADATA: [Field; 5] = [Field::RecircId, Field::CtState, Field::CtZone, Field::CtMark, Field::CtLabel];

/// The order OVS's `match_format` prints the other fields in.
fn print_order() -> Vec<Field> {
    let mut order: Vec<Field> = (0..16).map(Field::Reg).collect();
    order.extend([
        Field::Metadata,
        Field::InPort,
        Field::VlanTci,
        Field::DlSrc,
        Field::DlDst,
        Field::DlType,
        Field::NwSrc,
        Field::NwDst,
        Field::NwProto,
        Field::NwTos,
        Field::NwTtl,
        Field::TpSrc,
        Field::TpDst,
    ]);
    order
}

/// A Megaflow as OVS prints it: `recirc_id=ID`, the conntrack fields examined, `eth`, then
/// the match, with `nw_frag=no` for IP.
pub fn format_megaflow(trace: &Trace) -> String {
    let (mut head, mut rest) = (Flow::default(), trace.megaflow_mask);
    for f in DATAPATH_METADATA {
        head.set(f, rest.get(f));
        rest.set(f, 0);
    }
    let head = format_match(&trace.initial_flow.masked(&head), &head);
    let text = format_match(&trace.initial_flow.masked(&rest), &rest);
    if !trace.initial_flow.is_ip() {
        return format!("{head},eth,{text}");
    }
    // nw_frag follows the L3 fields and precedes the L4 ones.
    let mut parts: Vec<&str> = text.split(',').collect();
    let pos = parts.iter().position(|p| ["tp_src=", "tp_dst=", "icmp_type=", "icmp_code="].iter().any(|k| p.starts_with(k))).unwrap_or(parts.len());
    parts.insert(pos, "nw_frag=no");
    format!("{head},eth,{}", parts.join(","))
}

fn format_action(a: &Action) -> String {
    match a {
        Action::SetField { field, value, mask, .. } => format!("set_field:{}->{}", field.format(*value, *mask), field.name()),
        Action::Move { src, dst } => format!(
            "move:{}[{}..{}]->{}[{}..{}]",
            src.field.name(),
            src.offset_bits,
            src.offset_bits + src.n_bits - 1,
            dst.field.name(),
            dst.offset_bits,
            dst.offset_bits + dst.n_bits - 1
        ),
        Action::Resubmit { table } => format!("resubmit(,{table})"),
        Action::GotoTable { table } => format!("goto_table:{table}"),
        Action::Output { port } => format!("output:{port}"),
        Action::Drop => "drop".into(),
        Action::DecTtl => "dec_ttl".into(),
        Action::CtClear => "ct_clear".into(),
        Action::Ct { commit, zone, table, exec } => {
            let mut args = Vec::new();
            if *commit {
                args.push("commit".to_string());
            }
            if let Some(t) = table {
                args.push(format!("table={t}"));
            }
            if *zone != 0 {
                args.push(format!("zone={zone}"));
            }
            if !exec.is_empty() {
                args.push(format!("exec({})", exec.iter().map(format_action).collect::<Vec<_>>().join(",")));
            }
            format!("ct({})", args.join(","))
        }
    }
}

fn all_ones() -> Flow {
    let mut m = Flow::default();
    for f in Field::all() {
        m.set(f, u64::MAX);
    }
    m
}

/// The packet-visible fields of a flow (zero-valued ones omitted, protocol shorthand used).
fn format_flow(f: &Flow) -> String {
    let mut mask = all_ones();
    for fl in Field::all() {
        if f.get(fl) == 0 && !matches!(fl, Field::InPort) {
            mask.set(fl, 0);
        }
    }
    format_fields(f, &mask, true)
}

/// Our datapath actions: header rewrites as `set(field=value)` before each output that needs
/// them, outputs as OpenFlow port numbers, `drop` when nothing is sent.
pub fn format_actions(trace: &Trace) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut current = trace.initial_flow;
    for o in &trace.outputs {
        for f in crate::oracle::HEADER_FIELDS {
            if o.headers.get(f) != current.get(f) {
                out.push(format!("set({}={})", f.name(), f.format(o.headers.get(f), f.full_mask())));
            }
        }
        current = o.headers;
        out.push(format!("output:{}", o.port));
    }
    if out.is_empty() {
        "drop".into()
    } else {
        out.join(",")
    }
}

/// The whole trace as text.
pub fn format_trace(pipeline: &Pipeline, trace: &Trace) -> String {
    let mut s = format!("Flow: {}\n\n", format_flow(&trace.initial_flow));
    for v in &trace.visits {
        match v.rule {
            Some(r) => {
                let rule = &pipeline.rules[r];
                let mut mask = Flow::default();
                let mut value = Flow::default();
                for m in &rule.matches {
                    mask.set(m.field, m.mask);
                    value.set(m.field, m.value);
                }
                let m = format_match(&value, &mask);
                let sep = if m.is_empty() { "" } else { ", " };
                s += &format!("{:2}. {m}{sep}priority {} (line {})\n", v.table, rule.priority, rule.line);
                for a in &rule.actions {
                    s += &format!("    {}\n", format_action(a));
                }
            }
            None => s += &format!("{:2}. No match (table miss): drop\n", v.table),
        }
    }
    if trace.ttl_exception {
        // OVS prints ">> IPv4 decrement TTL exception" under the dec_ttl and a controller action.
        s += "\n>> IPv4 decrement TTL exception: to the controller (reason invalid_ttl); the rest of that table's actions were skipped\n";
    }
    s += &format!("\nFinal flow: {}\n", format_flow(&trace.final_flow));
    s += &format!("Megaflow: {}\n", format_megaflow(trace));
    s += &format!("Actions: {}\n", format_actions(trace));
    s
}

/// The trace as JSON: tables visited with rule lines, final flow, Megaflow and outputs.
pub fn trace_json(pipeline: &Pipeline, trace: &Trace) -> serde_json::Value {
    serde_json::json!({
        "tables": trace.visits.iter().map(|v| serde_json::json!({
            "table": v.table,
            "rule_line": v.rule.map(|r| pipeline.rules[r].line),
            "priority": v.rule.map(|r| pipeline.rules[r].priority),
            "newly_examined": format_match(&v.flow.masked(&v.wildcards), &v.wildcards),
        })).collect::<Vec<_>>(),
        "final_flow": format_flow(&trace.final_flow),
        "megaflow": format_megaflow(trace),
        "outputs": trace.outputs.iter().map(|o| o.port).collect::<Vec<_>>(),
        "actions": format_actions(trace),
        "ttl_exception": trace.ttl_exception,
    })
}

/// `innet vswitch trace`: parse the flow file text and the packet, trace every datapath pass,
/// and return (text, JSON). `ct_next` is the `ct_state` each recirculated pass resumes with, in
/// order, as `ofproto/trace --ct-next` takes it (`trk,new`; OVS's default when none is left).
/// The JSON is the first pass's, with the later passes under `recirculations`. Errors name the
/// flow file line/column, the packet column or the bad state.
pub fn trace_command(flows_text: &str, packet: &str, ct_next: &[String]) -> Result<(String, String), String> {
    let pipeline = Pipeline::parse(flows_text).map_err(|e| format!("flows: {e}"))?;
    let p = parse_packet(packet).map_err(|e| format!("packet: column {}: {}", e.column, e.message))?;
    let states = ct_next
        .iter()
        .map(|s| {
            let state = crate::fields::parse_ct_next(s).map_err(|e| format!("--ct-next {s}: {e}"))?;
            // Refused as OVS refuses them, with OVS's messages (one line each, joined by "; ").
            crate::fields::validate_ct_state(state).map_err(|e| format!("--ct-next {s}: {}", e.replace('\n', "; ")))?;
            Ok(state)
        })
        .collect::<Result<Vec<u64>, String>>()?;
    let mut next = states.into_iter();
    let default = crate::fields::CT_TRK | crate::fields::CT_NEW;
    let passes = pipeline.trace_passes(&p, |_, _| next.next().unwrap_or(default));
    let mut text = format_trace(&pipeline, &passes[0]);
    let mut js = trace_json(&pipeline, &passes[0]);
    let mut later = Vec::new();
    for t in &passes[1..] {
        let state = crate::fields::format_ct_flags(t.initial_flow.get(Field::CtState));
        text += &format!("\n{}\nrecirc({:#x}) - resume conntrack with ct_state={state}\n{}\n\n", "=".repeat(79), t.initial_flow.get(Field::RecircId), "=".repeat(79));
        text += &format_trace(&pipeline, t);
        later.push(trace_json(&pipeline, t));
    }
    js["recirculations"] = serde_json::Value::Array(later);
    Ok((text, js.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_tables_megaflow_and_actions() {
        let flows = include_str!("../pipelines/l3_router.flows");
        let (text, json) = trace_command(flows, "in_port=1,tcp,nw_src=192.168.0.1,nw_dst=10.1.2.4,tp_dst=80", &[]).unwrap();
        assert!(text.contains(" 1. ip,nw_dst=10.1.2.0/24, priority 124"), "{text}");
        assert!(text.contains("Megaflow: recirc_id=0,eth,tcp,in_port=1,dl_dst=00:00:00:00:00:00,nw_dst=10.1.2.4/30,nw_frag=no,tp_dst=80"), "{text}");
        assert!(text.contains("Actions: set(dl_dst=00:00:00:00:02:02),output:2"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["outputs"], serde_json::json!([2]));
        let e = trace_command(flows, "in_port=1,nw_dst=10.0.0.1", &[]).unwrap_err();
        assert!(e.contains("'ip'"), "{e}");
    }

    #[test]
    fn icmp_type_and_code_are_exact_packet_fields() {
        let p = parse_packet("in_port=1,icmp,nw_dst=10.1.2.3,icmp_type=8,icmp_code=0").unwrap();
        assert_eq!((p.get(Field::TpSrc), p.get(Field::TpDst), p.get(Field::NwProto)), (8, 0, IPPROTO_ICMP));
        // The l3_router's echo-request rule (icmp,icmp_type=8) takes it; type 0 does not.
        let flows = include_str!("../pipelines/l3_router.flows");
        let (echo, _) = trace_command(flows, "in_port=1,icmp,nw_dst=10.1.2.3,icmp_type=8,icmp_code=0", &[]).unwrap();
        let (reply, _) = trace_command(flows, "in_port=1,icmp,nw_dst=10.1.2.3,icmp_type=0,icmp_code=0", &[]).unwrap();
        // As OVS prints it: icmp_type is tp_src's low byte (checked against real OVS).
        assert!(echo.contains("Megaflow: recirc_id=0,eth,icmp,in_port=1,dl_dst=00:00:00:00:00:00,nw_dst=10.1.2.3,nw_frag=no,icmp_type=0x8/0xff\n"), "{echo}");
        assert!(echo.contains(", priority 90") && !reply.contains("priority 90"), "{reply}");
        // A mask is still refused, and a type too large for 8 bits names the field.
        let e = parse_packet("icmp,icmp_type=8/0xf").unwrap_err();
        assert!(e.message.contains("exact"), "{e}");
        assert!(parse_packet("icmp,icmp_type=300").is_err());
    }

    #[test]
    fn recirculated_passes_are_traced_with_their_ct_state() {
        let flows = include_str!("../pipelines/conntrack.flows");
        let packet = "in_port=1,tcp,nw_src=10.1.0.1,nw_dst=10.2.0.1,nw_ttl=64,tp_dst=80";
        let (text, json) = trace_command(flows, packet, &["trk,est".to_string()]).unwrap();
        assert!(text.contains("resume conntrack with ct_state=est|trk"), "{text}");
        assert!(text.contains("Megaflow: recirc_id=0,eth,tcp,in_port=1,dl_src=00:00:00:00:00:00,nw_src=10.1.0.0/16,nw_dst=10.2.0.0/16,nw_ttl=64,nw_frag=no"), "{text}");
        assert!(text.contains("Flow: recirc_id=0x"), "{text}");
        assert!(text.contains(",ct_state=est|trk,ct_zone=5,"), "{text}");
        let js: serde_json::Value = serde_json::from_str(&json).unwrap();
        let later = js["recirculations"].as_array().unwrap();
        assert_eq!(later.len(), 1);
        assert!(later[0]["megaflow"].as_str().unwrap().contains("ct_state=+est-inv+trk,ct_zone=5"), "{}", later[0]);
        assert_eq!(later[0]["outputs"], serde_json::json!([3]));
        let e = trace_command(flows, packet, &["trk,bogus".to_string()]).unwrap_err();
        assert!(e.contains("--ct-next") && e.contains("bogus"), "{e}");
        assert!(parse_packet("ct_state=new|trk,tcp").unwrap_err().message.contains("--ct-next"));
        assert!(parse_packet("ct_state=0,tcp").is_ok());
    }

    #[test]
    fn the_flow_line_ovs_prints_parses_back() {
        let line = "tcp,in_port=1,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_src=192.168.0.1,nw_dst=10.1.2.3,nw_tos=0,nw_ecn=2,nw_ttl=64,nw_frag=no,tp_src=0,tp_dst=80,tcp_flags=syn|ack";
        let p = parse_packet(line).unwrap();
        assert_eq!((p.get(Field::NwDst), p.get(Field::TpDst), p.get(Field::NwTos), p.get(Field::NwTtl)), (0x0a01_0203, 80, 2, 64));
        let e = parse_packet("tcp,nw_frag=first").unwrap_err();
        assert!(e.message.contains("nw_frag") && e.column == 5, "{e}");
        assert!(parse_packet("tcp,tcp_flags=0x12").is_ok());
        assert!(parse_packet("tcp,tcp_flags=syn|bogus").unwrap_err().message.contains("flag names"));
        let e = parse_packet("recirc_id=3,tcp").unwrap_err();
        assert!(e.message.contains("recirc_id"), "{e}");
        // Columns of the flow parser's errors still point into the text as written.
        let e = parse_packet("nw_ttl=3,tcp,frob=1").unwrap_err();
        assert_eq!(e.column, 14, "{e}");
    }
}
