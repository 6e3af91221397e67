//! Pipebench's multi-table ruleset generation, as the paper describes it (§6.1): repeatedly pick
//! a traversal of the pipeline, pick a ClassBench rule, and map the rule's fields onto every
//! table of that traversal (each table keeps the fields it matches on). The result is a flow
//! file for `ovs-ofctl add-flows` plus the (traversal, rule) chains the traffic generator uses.

use super::classbench::{CbRule, Prefix, Profile, RuleGen};
use super::model::{Act, Edge, Key, Next, PipelineSpec, Step, N_PORTS};
use innet_ofswitch::fields::{format_ip, format_mac};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

/// The most ClassBench rules one ruleset maps.
pub const MAX_RULES: usize = 60_000;

/// One ClassBench rule mapped along one traversal (edge path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// Index into `Ruleset::paths`.
    pub path: u32,
    /// Index into `Ruleset::cb_rules`.
    pub rule: u32,
}

/// A generated pipeline: the flow file and what it was made from.
#[derive(Clone, Debug)]
pub struct Ruleset {
    pub spec: PipelineSpec,
    pub profile: Profile,
    pub seed: u64,
    /// The flow file (`ovs-ofctl add-flows` syntax).
    pub text: String,
    pub cb_rules: Vec<CbRule>,
    /// Every edge path of the pipeline (see `PipelineSpec::edge_paths`).
    pub paths: Vec<Vec<Step>>,
    pub chains: Vec<Chain>,
    /// Flow-file lines (rules) per table, misses included.
    pub rules_per_table: BTreeMap<u8, usize>,
}

/// The MAC of the hosts behind a prefix: 02:00 followed by the prefix address.
pub fn host_mac(p: &Prefix) -> u64 {
    0x0200_0000_0000 | p.addr as u64
}
/// The gateway MAC for a destination (four routers, by the address's second byte).
pub fn router_mac(p: &Prefix) -> u64 {
    0x0000_5e00_0100 | (1 + ((p.addr >> 16) & 3)) as u64
}
/// The switch port behind which a prefix sits.
pub fn port_of(p: &Prefix) -> u32 {
    1 + ((p.addr.wrapping_mul(2_654_435_761) >> 16) % N_PORTS)
}
/// The designated host of a prefix (`addr | 1` when the prefix has room).
pub fn host_of(p: &Prefix) -> u32 {
    if p.len < 32 { p.addr | 1 } else { p.addr }
}
/// The DHCP server address (`server_id`) of the switch's one DHCP_Options row.
pub const DHCP_SERVER: u32 = 0x0aff_fffe;
/// The IPv4 broadcast address a DHCP discovery is sent to.
pub const IP_BROADCAST: u32 = 0xffff_ffff;
/// The DHCPv4 client and server ports.
pub const DHCP_CLIENT_PORT: u16 = 68;
pub const DHCP_SERVER_PORT: u16 = 67;

/// The DHCP request headers (ip4.src, ip4.dst) a DHCP key matches, as ovn-northd writes them
/// for a port whose hosts sit in `src`: the discovery, and for the DHCP stage also the renewal
/// from the port's address to broadcast and to the server.
fn dhcp_addresses(k: Key, src: &Prefix) -> Vec<(u32, u32)> {
    let discovery = (0, IP_BROADCAST);
    match k {
        Key::DhcpRequest => vec![discovery, (host_of(src), IP_BROADCAST), (host_of(src), DHCP_SERVER)],
        _ => vec![discovery],
    }
}

/// The service endpoint a DNAT rewrites a destination prefix to.
pub fn endpoint_of(p: &Prefix) -> u32 {
    if p.len < 31 { p.addr | 2 } else { p.addr }
}

fn proto_name(p: u8) -> String {
    match p {
        6 => "tcp".into(),
        17 => "udp".into(),
        1 => "icmp".into(),
        p => format!("ip,nw_proto={p}"),
    }
}

/// The match strings one hit edge installs for one ClassBench rule (several when port ranges
/// expand to more than one mask), with the priority.
pub fn edge_matches(edge: &Edge, r: &CbRule, lpm: bool, index: usize, n_rules: usize) -> (Vec<String>, u16) {
    let mut base: Vec<String> = Vec::new();
    if let Some((reg, v)) = edge.requires {
        base.push(format!("reg{reg}={v}"));
    }
    let has = |k: Key| edge.keys.contains(&k);
    let ports = (has(Key::SPort) && !r.sport.is_wildcard()) || (has(Key::DPort) && !r.dport.is_wildcard());
    let udp_service = edge.keys.iter().find_map(|k| if let Key::Udp(p) = k { Some(*p) } else { None });
    let l3 = udp_service.is_some()
        || ports
        || edge.acts.contains(&Act::Dnat)
        || [Key::IpSrc, Key::IpDst, Key::IpSrcHost, Key::IpDstHost, Key::Proto].iter().any(|&k| has(k));
    let mut prefix_len = 0u8;
    // Whether any key constrains an address (L2 or L3) or the input port. A projection that
    // constrains only the protocol and ports (ClassBench's "any to any" FW rules, or a rule's
    // wildcards projected onto this table's fields) is not installed: one such deny would
    // shadow the whole table for every address.
    let mut specific = false;
    for &k in edge.keys {
        specific |= !matches!(k, Key::IpSrc | Key::IpDst | Key::Proto | Key::SPort | Key::DPort);
        match k {
            Key::InPort | Key::PortGroup(_) => base.push(format!("in_port={}", port_of(&r.src))),
            Key::Untagged => base.push("vlan_tci=0x0000/0x1fff".into()),
            Key::EthSrc => base.push(format!("dl_src={}", format_mac(host_mac(&r.src)))),
            Key::EthDst => base.push(format!("dl_dst={}", format_mac(host_mac(&r.dst)))),
            Key::RouterMac => base.push(format!("dl_dst={}", format_mac(router_mac(&r.dst)))),
            Key::EthMcast => base.push("dl_dst=01:00:00:00:00:00/01:00:00:00:00:00".into()),
            _ => {}
        }
    }
    // A DHCP key's forms (one match line each); every other edge has one form.
    let forms: Vec<String> = match edge.keys.iter().find(|k| k.is_dhcp()) {
        Some(&k) => dhcp_addresses(k, &r.src)
            .into_iter()
            .map(|(s, d)| format!("udp,nw_src={},nw_dst={},tp_src={DHCP_CLIENT_PORT},tp_dst={DHCP_SERVER_PORT}", format_ip(s as u64), format_ip(d as u64)))
            .collect(),
        None => vec![String::new()],
    };
    if let Some(p) = udp_service {
        base.push(format!("udp,tp_dst={p}"));
    } else if l3 {
        match r.proto {
            Some(p) if has(Key::Proto) || ports => base.push(proto_name(p)),
            _ => base.push("ip".into()),
        }
    }
    for &k in edge.keys {
        match k {
            Key::IpSrc if r.src.len > 0 => {
                specific = true;
                base.push(format!("nw_src={}", r.src));
                prefix_len = r.src.len;
            }
            Key::IpDst if r.dst.len > 0 => {
                specific = true;
                base.push(format!("nw_dst={}", r.dst));
                prefix_len = r.dst.len;
            }
            Key::IpSrcHost => {
                base.push(format!("nw_src={}", format_ip(host_of(&r.src) as u64)));
                prefix_len = 32;
            }
            Key::IpDstHost => {
                base.push(format!("nw_dst={}", format_ip(host_of(&r.dst) as u64)));
                prefix_len = 32;
            }
            _ => {}
        }
    }
    if !specific {
        return (Vec::new(), 0);
    }
    let one = [(0u16, 0u16)];
    let smasks = if has(Key::SPort) && ports && !r.sport.is_wildcard() { r.sport.to_masks() } else { one.to_vec() };
    let dmasks = if has(Key::DPort) && ports && !r.dport.is_wildcard() { r.dport.to_masks() } else { one.to_vec() };
    let mut out = Vec::new();
    for form in &forms {
        for &(sv, sm) in &smasks {
            for &(dv, dm) in &dmasks {
                let mut m = base.clone();
                if !form.is_empty() {
                    m.push(form.clone());
                }
                if sm != 0 {
                    m.push(if sm == 0xffff { format!("tp_src={sv}") } else { format!("tp_src={sv}/0x{sm:04x}") });
                }
                if dm != 0 {
                    m.push(if dm == 0xffff { format!("tp_dst={dv}") } else { format!("tp_dst={dv}/0x{dm:04x}") });
                }
                out.push(m.join(","));
            }
        }
    }
    let priority = if lpm {
        100 + 10 * prefix_len as u16
    } else {
        // More specific rules first (as ACLs are written: exceptions before broad rules), then
        // ClassBench order; specificity counts only the fields this table matches.
        let port_bits = |p: &super::classbench::PortRange| 16 - (p.hi as u32 - p.lo as u32 + 1).ilog2().min(16);
        let mut spec = 0u32;
        for &k in edge.keys {
            spec += match k {
                Key::IpSrc => r.src.len as u32,
                Key::IpDst => r.dst.len as u32,
                Key::IpSrcHost | Key::IpDstHost => 32,
                // Both addresses, protocol and both ports exact.
                Key::DhcpDiscover | Key::DhcpRequest => 32 + 32 + 8 + 16 + 16,
                Key::Proto if r.proto.is_some() => 8,
                Key::SPort if ports => port_bits(&r.sport),
                Key::DPort if ports => port_bits(&r.dport),
                _ => 0,
            };
        }
        (100 + spec * 500 + 499 - (index * 500 / n_rules.max(1)) as u32) as u16
    };
    (out, priority)
}

/// The action list of an edge (for a hit, `r` is its ClassBench rule).
pub fn edge_actions(edge: &Edge, r: Option<&CbRule>) -> String {
    let mut a: Vec<String> = Vec::new();
    for act in &edge.acts {
        match (*act, r) {
            (Act::Load(reg, v), _) => a.push(format!("load:{v}->NXM_NX_REG{reg}[]")),
            (Act::LoadPort(reg), Some(r)) => a.push(format!("load:{}->NXM_NX_REG{reg}[]", port_of(&r.dst))),
            (Act::RouteMacs, Some(r)) => {
                a.push(format!("mod_dl_src:{}", format_mac(router_mac(&r.dst))));
                a.push(format!("mod_dl_dst:{}", format_mac(host_mac(&r.dst))));
            }
            (Act::SetEthDst, Some(r)) => a.push(format!("mod_dl_dst:{}", format_mac(host_mac(&r.dst)))),
            (Act::Dnat, Some(r)) => a.push(format!("mod_nw_dst:{}", format_ip(endpoint_of(&r.dst) as u64))),
            // A commit in the zone the edge recirculates in is one action, ct(commit,table=N).
            (Act::CtCommit(z), _) if !edge.acts.contains(&Act::CtNext(z)) => a.push(format!("ct(commit,zone={z})")),
            (Act::DecTtl, _) => a.push("dec_ttl".into()),
            _ => {}
        }
    }
    let ct_next = edge.acts.iter().find_map(|a| if let Act::CtNext(z) = *a { Some(z) } else { None });
    match (edge.next, r) {
        (Next::Table(t), _) => match ct_next {
            Some(z) if edge.acts.contains(&Act::CtCommit(z)) => a.push(format!("ct(commit,table={t},zone={z})")),
            Some(z) => a.push(format!("ct(table={t},zone={z})")),
            None => a.push(format!("goto_table:{t}")),
        },
        (Next::Output, Some(r)) => a.push(format!("output:{}", port_of(&r.dst))),
        // A miss that outputs floods to every port (OVS skips the input port).
        (Next::Output, None) => a.extend((1..=N_PORTS).map(|p| format!("output:{p}"))),
        (Next::Port(p), _) => a.push(format!("output:{p}")),
        (Next::Drop, _) => {
            if a.is_empty() {
                a.push("drop".into())
            }
        }
    }
    a.join(",")
}

/// Whether ClassBench rule `r` can travel `path` (its source port fits every port-role table).
pub fn fits(spec: &PipelineSpec, path: &[Step], r: &CbRule) -> bool {
    path.iter().filter(|s| matches!(s, Step::Hit(..))).all(|s| {
        spec.edge(*s).keys.iter().all(|k| match k {
            Key::PortGroup(g) => (port_of(&r.src) - 1) % 2 == *g as u32,
            _ => true,
        })
    })
}

/// Renders a full flow file for `spec` from `n_rules` ClassBench rules of `profile`.
pub fn generate(spec: &PipelineSpec, profile: Profile, n_rules: usize, seed: u64) -> Result<Ruleset, String> {
    if n_rules == 0 || n_rules > MAX_RULES {
        return Err(format!("rules must be 1..={MAX_RULES}, got {n_rules}"));
    }
    let paths = spec.edge_paths()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gen = RuleGen::new(profile, &mut rng);
    let mut lines: BTreeMap<u8, Vec<String>> = BTreeMap::new();
    let mut seen: HashSet<(u8, String)> = HashSet::new();
    let mut cb_rules = Vec::with_capacity(n_rules);
    let mut chains = Vec::with_capacity(n_rules);
    // The first rules cover every path once, then paths are drawn uniformly. A path made only
    // of misses installs nothing; its chain gives traffic that misses (e.g. spoofed sources).
    for i in 0..n_rules {
        let path = if i < paths.len() { i } else { rng.gen_range(0..paths.len()) };
        // A rule whose source port does not fit a port-role table of the path is redrawn.
        let mut r = gen.rule(&mut rng);
        while !fits(spec, &paths[path], &r) {
            r = gen.rule(&mut rng);
        }
        for step in &paths[path] {
            let Step::Hit(t, _) = *step else { continue };
            let table = spec.table(t).expect("table of a path");
            let edge = spec.edge(*step);
            let (matches, priority) = edge_matches(edge, &r, table.lpm, i, n_rules);
            let actions = edge_actions(edge, Some(&r));
            for m in matches {
                if seen.insert((t, m.clone())) {
                    lines.entry(t).or_default().push(format!("table={t},priority={priority},{m},actions={actions}"));
                }
            }
        }
        cb_rules.push(r);
        chains.push(Chain { path: path as u32, rule: i as u32 });
    }
    let mut text = String::new();
    let _ = writeln!(text, "# Pipebench {} ({}): {} ClassBench-{} rules, seed {seed}", spec.name, spec.description, n_rules, profile.name());
    let _ = writeln!(text, "# generated by innet-gigaflow pipebench; tables and traversals: see docs/gigaflow.md");
    let mut rules_per_table = BTreeMap::new();
    for t in &spec.tables {
        let _ = writeln!(text, "# table {}: {} — {}", t.id, t.name, t.purpose);
        let body = lines.remove(&t.id).unwrap_or_default();
        let mut n = body.len();
        for l in body {
            text.push_str(&l);
            text.push('\n');
        }
        for g in &t.guards {
            let e = Edge { keys: &[], requires: None, acts: g.acts.clone(), next: g.next };
            let _ = writeln!(text, "table={},priority={},ct_state={},ip,actions={}", t.id, g.priority, g.ct_state, edge_actions(&e, None));
            n += 1;
        }
        let n_cond = t.misses.iter().filter(|e| e.requires.is_some()).count();
        for (i, e) in t.misses.iter().enumerate() {
            // Conditional misses in their listed order (the first wins), above the default.
            let (prio, mut m) = match e.requires {
                Some((reg, v)) => (1 + n_cond - i, format!(",reg{reg}={v}")),
                None => (0, String::new()),
            };
            // OVS takes ct and dec_ttl only in flows that match IP.
            if e.acts.iter().any(|a| matches!(a, Act::CtNext(_) | Act::CtCommit(_) | Act::DecTtl)) {
                m.push_str(",ip");
            }
            let _ = writeln!(text, "table={},priority={prio}{m},actions={}", t.id, edge_actions(e, None));
            n += 1;
        }
        if t.misses.iter().all(|e| e.requires.is_some()) {
            let _ = writeln!(text, "table={},priority=0,actions=drop", t.id);
            n += 1;
        }
        rules_per_table.insert(t.id, n);
    }
    Ok(Ruleset { spec: spec.clone(), profile, seed, text, cb_rules, paths, chains, rules_per_table })
}
