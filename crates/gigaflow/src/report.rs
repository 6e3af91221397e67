//! Human-readable slow-path traces in the shape of `ovs-appctl ofproto/trace`: the packet, each
//! table hit with its rule and actions, the final flow, the Megaflow and the actions; plus the
//! parser for the packet description (`in_port=1,tcp,nw_dst=10.0.0.1,tp_dst=80`).

use crate::fields::{Field, Flow, ETH_TYPE_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use crate::flows::{parse_flow_line, Action, ParseError};
use crate::slowpath::{Pipeline, Trace};

/// Parses a packet written like an OVS trace flow: exact values, unspecified fields are zero.
pub fn parse_packet(text: &str) -> Result<Flow, ParseError> {
    let rule = parse_flow_line(&format!("{text},actions=drop"), 1)?;
    let mut flow = Flow::default();
    for m in &rule.matches {
        if m.mask != m.field.full_mask() && !(m.field == Field::NwTos && m.mask == 0xfc) && (m.field != Field::VlanTci) {
            return Err(ParseError { line: 1, column: 1, message: format!("{} must be an exact value in a packet, not a mask", m.field.name()) });
        }
        flow.set(m.field, m.value);
    }
    Ok(flow)
}

/// Formats a (value, mask) flow as OVS prints matches, with protocol shorthands.
pub fn format_match(value: &Flow, mask: &Flow) -> String {
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

/// The order OVS's `match_format` prints fields in.
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
        Field::TpSrc,
        Field::TpDst,
    ]);
    order
}

/// A Megaflow as OVS prints it: `recirc_id=0,eth,` then the match, with `nw_frag=no` for IP.
pub fn format_megaflow(trace: &Trace) -> String {
    let text = format_match(&trace.initial_flow.masked(&trace.megaflow_mask), &trace.megaflow_mask);
    if !trace.initial_flow.is_ip() {
        return format!("recirc_id=0,eth,{text}");
    }
    // nw_frag follows the L3 fields and precedes the L4 ones.
    let mut parts: Vec<&str> = text.split(',').collect();
    let pos = parts.iter().position(|p| ["tp_src=", "tp_dst=", "icmp_type=", "icmp_code="].iter().any(|k| p.starts_with(k))).unwrap_or(parts.len());
    parts.insert(pos, "nw_frag=no");
    format!("recirc_id=0,eth,{}", parts.join(","))
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
    format_match(f, &mask)
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
    })
}

/// `innet vswitch trace`: parse the flow file text and the packet, trace, and return
/// (text, JSON). Errors name the flow file line/column or the packet column.
pub fn trace_command(flows_text: &str, packet: &str) -> Result<(String, String), String> {
    let pipeline = Pipeline::parse(flows_text).map_err(|e| format!("flows: {e}"))?;
    let p = parse_packet(packet).map_err(|e| format!("packet: column {}: {}", e.column, e.message))?;
    let t = pipeline.trace(&p);
    Ok((format_trace(&pipeline, &t), trace_json(&pipeline, &t).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_tables_megaflow_and_actions() {
        let flows = include_str!("../pipelines/l3_router.flows");
        let (text, json) = trace_command(flows, "in_port=1,tcp,nw_src=192.168.0.1,nw_dst=10.1.2.4,tp_dst=80").unwrap();
        assert!(text.contains(" 1. ip,nw_dst=10.1.2.0/24, priority 124"), "{text}");
        assert!(text.contains("Megaflow: recirc_id=0,eth,tcp,in_port=1,dl_dst=00:00:00:00:00:00,nw_dst=10.1.2.4/30,nw_frag=no,tp_dst=80"), "{text}");
        assert!(text.contains("Actions: set(dl_dst=00:00:00:00:02:02),output:2"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["outputs"], serde_json::json!([2]));
        let e = trace_command(flows, "in_port=1,nw_dst=10.0.0.1").unwrap_err();
        assert!(e.contains("'ip'"), "{e}");
    }
}
