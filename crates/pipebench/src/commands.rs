//! What the `innet gigaflow` commands print: a pipeline's flow file, its traffic as CSV, the
//! traversal check (spec vs. traffic through the slow path), and each pipeline's table-by-table
//! description in Markdown (the text docs/gigaflow.md carries).

use super::model::{Act, Key, Next, PipelineSpec};
use super::traffic::{parse_flow_sizes, Locality, Timing, TrafficConfig};
use super::{classbench::Profile, pipelines, render_pipeline};
use innet_ofswitch::fields::{format_ip, format_mac, Field};
use innet_ofswitch::Pipeline;
use std::collections::BTreeMap;
use std::fmt::Write;

/// `innet gigaflow pipeline NAME --profile P --rules N --seed S`: the flow file.
pub fn pipeline_command(name: &str, profile: &str, n_rules: usize, seed: u64) -> Result<String, String> {
    Ok(render_pipeline(name, Profile::parse(profile)?, n_rules, seed)?.text)
}

/// What `innet gigaflow traffic` generates: locality, unique flows, seed, timing (`window` or
/// `arrivals`), packets per flow (`mean:30`, `pareto:1.2`; `traffic::parse_flow_sizes`).
pub struct TrafficArgs<'a> {
    pub locality: &'a str,
    pub flows: usize,
    pub seed: u64,
    pub timing: &'a str,
    pub flow_sizes: &'a str,
}

/// `innet gigaflow traffic ...`: one CSV line per packet in time order.
pub fn traffic_command(name: &str, profile: &str, n_rules: usize, seed: u64, args: &TrafficArgs<'_>) -> Result<String, String> {
    let rs = render_pipeline(name, Profile::parse(profile)?, n_rules, seed)?;
    let cfg = TrafficConfig { n_flows: args.flows, locality: Locality::parse(args.locality)?, seed: args.seed, timing: Timing::parse(args.timing)?, sizes: parse_flow_sizes(args.flow_sizes)?, ..TrafficConfig::default() };
    let t = super::generate_traffic(&rs, &cfg)?;
    let mut out = String::with_capacity(t.packets.len() * 96);
    out.push_str("time_ns,flow,in_port,dl_src,dl_dst,nw_proto,nw_src,nw_dst,tp_src,tp_dst\n");
    for p in &t.packets {
        let h = &t.flows[p.flow as usize].headers;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            p.time_ns,
            p.flow,
            h.get(Field::InPort),
            format_mac(h.get(Field::DlSrc)),
            format_mac(h.get(Field::DlDst)),
            h.get(Field::NwProto),
            format_ip(h.get(Field::NwSrc)),
            format_ip(h.get(Field::NwDst)),
            h.get(Field::TpSrc),
            h.get(Field::TpDst)
        );
    }
    Ok(out)
}

/// `innet gigaflow traversals ...`: Table 1's counts, the spec's, and those the slow path takes
/// over generated traffic (JSON).
pub fn traversals_command(name: &str, profile: &str, n_rules: usize, seed: u64, locality: &str, n_flows: usize) -> Result<String, String> {
    let rs = render_pipeline(name, Profile::parse(profile)?, n_rules, seed)?;
    let spec_traversals = rs.spec.traversals()?;
    let p = Pipeline::parse(&rs.text).map_err(|e| format!("generated flow file: {e}"))?;
    // Table 1 counts the pipeline's traversals, and some need ports 2-4 (OTL's trunks, OLS's and
    // ANT's port-bound hosts): the traffic enters on every port here, not only the artifact's one.
    let cfg = TrafficConfig { n_flows, locality: Locality::parse(locality)?, seed, single_in_port: false, ..TrafficConfig::default() };
    let t = super::generate_traffic(&rs, &cfg)?;
    let mut seen: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for f in &t.flows {
        *seen.entry(p.traversal_tables(&f.headers)).or_default() += f.n_packets as u64;
    }
    let js = serde_json::json!({
        "pipeline": rs.spec.name,
        "profile": rs.profile.name(),
        "rules": n_rules,
        "seed": seed,
        "locality": locality,
        "flows": n_flows,
        "packets": t.packets.len(),
        "flow_file_rules": rs.rules_per_table.values().sum::<usize>(),
        "paper_tables": rs.spec.paper_tables,
        "paper_traversals": rs.spec.paper_traversals,
        "spec_tables": rs.spec.tables.len(),
        "spec_traversals": spec_traversals.len(),
        "traffic_traversals": seen.len(),
        "packets_per_traversal": seen.iter().map(|(k, v)| (k.iter().map(|t| t.to_string()).collect::<Vec<_>>().join("-"), *v)).collect::<BTreeMap<_, _>>(),
    });
    Ok(serde_json::to_string_pretty(&js).expect("json"))
}

fn key_text(k: Key) -> String {
    match k {
        Key::InPort => "in_port".into(),
        Key::PortGroup(g) => format!("in_port (ports of role {g})"),
        Key::Udp(p) => format!("udp,tp_dst={p}"),
        Key::DhcpDiscover => "DHCP discovery (udp 0.0.0.0:68 → 255.255.255.255:67)".into(),
        Key::DhcpRequest => "DHCP discovery or renewal (udp 68 → 67 from 0.0.0.0, or from the host to the server or broadcast)".into(),
        Key::Untagged => "vlan_tci (untagged)".into(),
        Key::EthSrc => "dl_src".into(),
        Key::EthDst => "dl_dst".into(),
        Key::RouterMac => "dl_dst (router MAC)".into(),
        Key::EthMcast => "dl_dst (multicast bit)".into(),
        Key::IpSrc => "nw_src/prefix".into(),
        Key::IpDst => "nw_dst/prefix".into(),
        Key::IpSrcHost => "nw_src (host)".into(),
        Key::IpDstHost => "nw_dst (host)".into(),
        Key::Proto => "nw_proto".into(),
        Key::SPort => "tp_src (range as masks)".into(),
        Key::DPort => "tp_dst (range as masks)".into(),
    }
}

fn edge_text(requires: Option<(u8, u32)>, acts: &[Act], next: Next) -> String {
    let mut parts = Vec::new();
    if let Some((r, v)) = requires {
        parts.push(format!("if reg{r}={v}:"));
    }
    for a in acts {
        parts.push(match a {
            Act::Load(r, v) => format!("reg{r}={v}"),
            Act::LoadPort(r) => format!("reg{r}=port"),
            Act::RouteMacs => "set MACs".into(),
            Act::SetEthDst => "set dl_dst".into(),
            Act::Dnat => "DNAT nw_dst".into(),
            Act::CtNext(z) => format!("ct(zone={z}), recirculate:"),
            Act::CtCommit(z) => format!("ct(commit,zone={z})"),
            Act::DecTtl => "dec_ttl".into(),
        });
    }
    parts.push(match next {
        Next::Table(t) => format!("→ {t}"),
        Next::Output => "output".into(),
        Next::Port(p) => format!("output:{p}"),
        Next::Drop => "drop".into(),
    });
    parts.join(" ")
}

/// A pipeline's tables as a Markdown table.
pub fn markdown(spec: &PipelineSpec) -> String {
    let mut s = String::new();
    let n = spec.traversals().map(|t| t.len()).unwrap_or(0);
    let _ = writeln!(s, "**{}** — {}: {} tables, {} traversals (Table 1: {}, {}).\n", spec.name, spec.description, spec.tables.len(), n, spec.paper_tables, spec.paper_traversals);
    s.push_str("| table | name | purpose | matches (hit rules) | hit → | miss → |\n|---|---|---|---|---|---|\n");
    for t in &spec.tables {
        let keys: Vec<String> = t.matched_keys().into_iter().map(key_text).collect();
        let guards = t.guards.iter().map(|g| format!("ct_state={}: {}", g.ct_state, edge_text(None, &g.acts, g.next)));
        let hits: Vec<String> = guards.chain(t.hits.iter().map(|e| edge_text(e.requires, &e.acts, e.next))).collect();
        let misses: Vec<String> = t.misses.iter().map(|e| edge_text(e.requires, &e.acts, e.next)).collect();
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {} | {} | {} |",
            t.id,
            t.name,
            t.purpose,
            if keys.is_empty() { "—".into() } else { keys.join(", ") },
            if hits.is_empty() { "—".into() } else { hits.join("; ") },
            misses.join("; ")
        );
    }
    s
}

/// Every pipeline's Markdown, in Table 1 order.
pub fn all_markdown() -> String {
    pipelines::NAMES.iter().map(|n| markdown(&pipelines::pipeline(n).expect("known pipeline"))).collect::<Vec<_>>().join("\n")
}
