//! Pipebench traffic: packets made from the ruleset's (traversal, ClassBench rule) chains. The
//! packet trace (flow sizes, interleaving) is `innet_workloads::caida`'s: by default the artifact's
//! regime, a replayed slice of ~30 packets per flow from a capped power law (docs/gigaflow.md,
//! "Sizes"). This module gives each flow its headers: a flow's L3/L4 part and its L2 part
//! (in_port, dl_src, dl_dst) come from two independently drawn chains, so header parts examined
//! by different tables recombine (ClassBench's trace generator; many hosts behind one gateway).
//! High locality draws chains by how often their header tuple recurs in the ruleset (Zipf over
//! that ranking), low locality uniformly (the paper's one difference between the two); both
//! build each flow from two chains' anchor packets (a flow is new by its pair).
//! Deterministic from the seed.

use super::classbench::CbRule;
use super::model::{Key, Step};
use super::ruleset::{host_mac, host_of, port_of, router_mac, Ruleset, DHCP_CLIENT_PORT, DHCP_SERVER_PORT, IP_BROADCAST};
use innet_ofswitch::fields::{Field, Flow, ETH_TYPE_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, HashSet};

pub use innet_workloads::caida::{FlowSizes, Timing, TracePacket};
use innet_workloads::{caida, zipf::Zipf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locality {
    High,
    Low,
}

impl Locality {
    pub fn parse(s: &str) -> Result<Locality, String> {
        match s.to_ascii_lowercase().as_str() {
            "high" => Ok(Locality::High),
            "low" => Ok(Locality::Low),
            _ => Err(format!("unknown locality '{s}' (expected high or low)")),
        }
    }
}

/// Traffic parameters; `Default` gives the values used for the paper's experiments.
#[derive(Clone, Debug)]
pub struct TrafficConfig {
    /// Unique flows (distinct headers).
    pub n_flows: usize,
    pub locality: Locality,
    pub seed: u64,
    /// Packets per trace flow; the default is the artifact's replay volume (module doc).
    pub sizes: FlowSizes,
    /// Trace flows replayed onto each header line (tgen maps trace flow i to line i % lines);
    /// 1: one trace flow per unique flow.
    pub trace_flows_per_line: usize,
    pub timing: Timing,
    /// Zipf exponent over the recurrence ranking (high locality only).
    pub zipf_s: f64,
    /// High locality: each flow takes a fresh ephemeral source port (49152–65535, when its
    /// ClassBench rule's source range holds them all) instead of its L3 chain's anchor port, so
    /// a host pair's service carries many connections, as real traffic's does.
    pub fresh_source_ports: bool,
    /// High locality: every flow samples its headers inside its chains' rules (as low locality
    /// does) instead of copying the chains' anchor packets; only the rule choice is local.
    pub sampled_headers: bool,
    /// Low locality: every flow copies its chains' anchor packets (as high locality does), so
    /// the two localities differ only in how chains are drawn (uniformly vs. by recurrence), the
    /// one difference the paper names (the default since 27 Nov); `false`: every flow samples
    /// fresh headers inside its chains' rules (the form until then).
    pub low_anchors: bool,
    /// A flow's L2 part (in_port, dl_src, dl_dst) comes from a second, independently drawn chain
    /// (the default); `false`: from the flow's own L3 chain, so a host's MAC stays with its
    /// address at both ends and flows of one host pair differ only by what else varies (e.g.
    /// `fresh_source_ports`).
    pub recombine_l2: bool,
    /// Every packet enters on port 1, as the artifact's tgen sends every packet over its one
    /// link to the switch (its header lines carry no in_port); `false` (the default): a flow's
    /// in_port is its L2 part's source port (1–4), so every port-dependent traversal (OLS's port
    /// security, ANT's Classifier, OTL's trunk roles) is taken — with one port our pipelines'
    /// port bindings drop 23–56 % of OLS's and ANT's flows at table 0 (docs/gigaflow.md). OVS
    /// examines in_port in every lookup, so it is part of every Megaflow and every LTM entry.
    pub single_in_port: bool,
}

/// The artifact's replay volume: tgen replays a CAIDA slice at ~10 kpps for up to 300 s, about
/// 3M packets over 100K unique flows.
pub const ARTIFACT_PACKETS_PER_FLOW: f64 = 30.0;
/// The largest flow of a slice, in packets.
pub const MAX_PACKETS_PER_FLOW: u32 = 10_000;

/// Packets per flow from an experiment's `flow_sizes` parameter: `mean:M` (the capped power law
/// whose mean is M packets per flow; `mean:30` is the artifact's volume) or `pareto:S` (shape S;
/// `pareto:1.2`, ~5 packets per flow, was the default until 26 Nov).
pub fn parse_flow_sizes(s: &str) -> Result<FlowSizes, String> {
    let bad = || format!("unknown flow sizes '{s}' (expected mean:PACKETS_PER_FLOW, e.g. mean:30, or pareto:SHAPE, e.g. pareto:1.2)");
    let (kind, x) = s.split_once(':').ok_or_else(bad)?;
    let x: f64 = x.trim().parse().map_err(|_| bad())?;
    match kind.trim().to_ascii_lowercase().as_str() {
        "mean" => FlowSizes::with_mean(x, MAX_PACKETS_PER_FLOW),
        "pareto" => FlowSizes::pareto(x, MAX_PACKETS_PER_FLOW),
        _ => Err(bad()),
    }
}

impl Default for TrafficConfig {
    fn default() -> Self {
        TrafficConfig {
            n_flows: 100_000,
            locality: Locality::High,
            seed: 1,
            sizes: FlowSizes::with_mean(ARTIFACT_PACKETS_PER_FLOW, MAX_PACKETS_PER_FLOW).expect("a valid mean"),
            timing: Timing::Window { packet_rate_pps: 10_000.0 },
            trace_flows_per_line: 1,
            zipf_s: 1.0,
            fresh_source_ports: false,
            sampled_headers: false,
            low_anchors: true,
            recombine_l2: true,
            single_in_port: false,
        }
    }
}

/// One flow: its headers (a packet the slow path can trace), the chain it came from, its size.
#[derive(Clone, Debug)]
pub struct TraceFlow {
    pub headers: Flow,
    pub chain: u32,
    pub n_packets: u32,
    pub start_ns: u64,
}

#[derive(Clone, Debug)]
pub struct Traffic {
    pub flows: Vec<TraceFlow>,
    /// In time order.
    pub packets: Vec<TracePacket>,
}

impl Traffic {
    /// The headers of packet `i`.
    pub fn packet(&self, i: usize) -> &Flow {
        &self.flows[self.packets[i].flow as usize].headers
    }
    /// Headers of every packet in time order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Flow)> + '_ {
        self.packets.iter().map(|p| (p.time_ns, &self.flows[p.flow as usize].headers))
    }
}

/// The IPv4 TTL of generated packets.
pub const PACKET_TTL: u64 = 64;

/// The IANA ephemeral port range clients draw source ports from.
const EPHEMERAL_PORTS: (u16, u16) = (49152, 65535);

fn pick_port(rng: &mut ChaCha8Rng, lo: u16, hi: u16) -> u64 {
    rng.gen_range(lo as u64..=hi as u64)
}

/// A packet for `chain`: inside its ClassBench rule, with the header values the traversal's
/// tables look for (router MAC, designated hosts, UDP service ports); `rng` draws the rest.
pub fn packet_for(rs: &Ruleset, path: &[Step], r: &CbRule, rng: &mut ChaCha8Rng) -> Flow {
    let mut p = Flow::default();
    p.set(Field::InPort, port_of(&r.src) as u64);
    p.set(Field::DlType, ETH_TYPE_IP);
    // One TTL for every packet, as the artifact's tgen sends them (its PACKET_TTL, 64; the
    // header line has no TTL). Only pipelines with dec_ttl (ANT) read it.
    p.set(Field::NwTtl, PACKET_TTL);
    p.set(Field::DlSrc, host_mac(&r.src));
    p.set(Field::DlDst, host_mac(&r.dst));
    p.set(Field::NwSrc, r.src.sample(rng) as u64);
    p.set(Field::NwDst, r.dst.sample(rng) as u64);
    let proto = r.proto.unwrap_or(if rng.gen_bool(0.7) { 6 } else { 17 }) as u64;
    p.set(Field::NwProto, proto);
    if proto == IPPROTO_TCP || proto == IPPROTO_UDP {
        p.set(Field::TpSrc, pick_port(rng, r.sport.lo, r.sport.hi));
        p.set(Field::TpDst, pick_port(rng, r.dport.lo, r.dport.hi));
    } else if proto == IPPROTO_ICMP {
        p.set(Field::TpSrc, 8);
    }
    for s in path {
        if let Step::Hit(..) = s {
            for k in rs.spec.edge(*s).keys {
                match k {
                    Key::RouterMac => p.set(Field::DlDst, router_mac(&r.dst)),
                    Key::Udp(port) => {
                        p.set(Field::NwProto, IPPROTO_UDP);
                        p.set(Field::TpSrc, rng.gen_range(1024..65535));
                        p.set(Field::TpDst, *port as u64);
                    }
                    // A DHCP traversal's packet is a discovery: the host has no address yet.
                    Key::DhcpDiscover | Key::DhcpRequest => {
                        p.set(Field::NwSrc, 0);
                        p.set(Field::NwDst, IP_BROADCAST as u64);
                        p.set(Field::NwProto, IPPROTO_UDP);
                        p.set(Field::TpSrc, DHCP_CLIENT_PORT as u64);
                        p.set(Field::TpDst, DHCP_SERVER_PORT as u64);
                    }
                    Key::EthMcast => p.set(Field::DlDst, 0xffff_ffff_ffff),
                    Key::IpSrcHost => p.set(Field::NwSrc, host_of(&r.src) as u64),
                    Key::IpDstHost => p.set(Field::NwDst, host_of(&r.dst) as u64),
                    _ => {}
                }
            }
        }
    }
    p
}

/// The packet of chain `ci` (see `packet_for`).
fn chain_packet(rs: &Ruleset, ci: usize, rng: &mut ChaCha8Rng) -> Flow {
    let chain = rs.chains[ci];
    packet_for(rs, &rs.paths[chain.path as usize], &rs.cb_rules[chain.rule as usize], rng)
}

/// The generator of chain `ci`'s high-locality anchor packet.
fn anchor_rng(seed: u64, ci: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(ci as u64))
}

/// What a traversal (edge path) requires of the L2 part a flow carries.
#[derive(Clone, Copy)]
struct L2Needs {
    /// It needs a particular destination MAC (gateway or multicast).
    sets_dl_dst: bool,
    /// It binds the source's port and MAC to its IPv4 address (port security, spoof guards:
    /// `in_port` + `dl_src` + `nw_src`) or to a DHCP request (OVN's DHCP stage and its
    /// port-security exemption: `in_port` + `dl_src` + the discovery's headers).
    binds_source: bool,
    /// It binds the destination MAC to its IPv4 address (`dl_dst` + `nw_dst`).
    binds_destination: bool,
}

/// [`L2Needs`] of every path of `rs`, by path index.
fn l2_needs(rs: &Ruleset) -> Vec<L2Needs> {
    rs.paths
        .iter()
        .map(|path| {
            let hit_keys = || path.iter().filter(|s| matches!(s, Step::Hit(..))).map(|s| rs.spec.edge(*s).keys);
            let binds = |eth: Key, ip: Key, host: Key| hit_keys().any(|k| k.contains(&eth) && (k.contains(&ip) || k.contains(&host)));
            L2Needs {
                sets_dl_dst: hit_keys().any(|k| k.iter().any(|k| matches!(k, Key::RouterMac | Key::EthMcast))),
                binds_source: binds(Key::EthSrc, Key::IpSrc, Key::IpSrcHost) || hit_keys().any(|k| k.contains(&Key::EthSrc) && k.iter().any(Key::is_dhcp)),
                binds_destination: binds(Key::EthDst, Key::IpDst, Key::IpDstHost),
            }
        })
        .collect()
}

/// How often the chain's header tuples recur among the ruleset's rules (the paper's Fig. 4
/// measure): the products of the counts of rules sharing its destination prefix, its
/// (destination prefix, destination port range) pair and its source prefix.
fn recurrence_scores(rs: &Ruleset) -> Vec<u64> {
    let mut dst: HashMap<_, u64> = HashMap::new();
    let mut dst_port: HashMap<_, u64> = HashMap::new();
    let mut src: HashMap<_, u64> = HashMap::new();
    for r in &rs.cb_rules {
        *dst.entry(r.dst).or_default() += 1;
        *dst_port.entry((r.dst, r.dport.lo, r.dport.hi)).or_default() += 1;
        *src.entry(r.src).or_default() += 1;
    }
    rs.chains
        .iter()
        .map(|c| {
            let r = &rs.cb_rules[c.rule as usize];
            dst[&r.dst] * dst_port[&(r.dst, r.dport.lo, r.dport.hi)] * src[&r.src]
        })
        .collect()
}

/// Generates the traffic for a ruleset.
pub fn generate(rs: &Ruleset, cfg: &TrafficConfig) -> Result<Traffic, String> {
    // The packet trace first: it checks the flow count, sizes and timing.
    let trace = caida::generate_mapped(cfg.n_flows, cfg.trace_flows_per_line, &cfg.sizes, &cfg.timing, cfg.seed)?;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x7a11_ff1c);
    let n_chains = rs.chains.len();
    // High locality: chains ranked by recurrence, drawn by Zipf over the rank.
    let (order, zipf) = match cfg.locality {
        Locality::High => {
            let scores = recurrence_scores(rs);
            let mut order: Vec<usize> = (0..n_chains).collect();
            order.sort_by(|&a, &b| scores[b].cmp(&scores[a]).then(a.cmp(&b)));
            (order, Some(Zipf::new(n_chains, cfg.zipf_s)?))
        }
        Locality::Low => ((0..n_chains).collect(), None),
    };
    let needs = l2_needs(rs);
    // Whether flows copy their chains' anchor packets (high locality; low with `low_anchors`)
    // or sample fresh headers inside the rules (low locality; high with `sampled_headers`).
    let anchored = match cfg.locality {
        Locality::High => !cfg.sampled_headers,
        Locality::Low => cfg.low_anchors,
    };
    // Each anchored chain's flows share one anchor packet.
    let mut anchors: HashMap<usize, Flow> = HashMap::new();
    let mut seen: HashSet<Flow> = HashSet::with_capacity(cfg.n_flows);
    let mut flows = Vec::with_capacity(cfg.n_flows);
    let mut attempts = 0usize;
    let draw_chain = |rng: &mut ChaCha8Rng| match &zipf {
        Some(z) => order[z.sample(rng)],
        None => rng.gen_range(0..n_chains),
    };
    while flows.len() < cfg.n_flows {
        attempts += 1;
        if attempts > cfg.n_flows * 50 {
            return Err(format!("could not draw {} unique flows from {} chains", cfg.n_flows, n_chains));
        }
        // The L3/L4 part (addresses, protocol, ports) comes from chain `ci`, the L2 part (input
        // port, source MAC, destination MAC) from an independently drawn chain `l2`: many hosts
        // sit behind one port/MAC gateway, and ClassBench's trace generator draws each header
        // field from the rules' ranges, so L2 and L3 parts recombine.
        let ci = draw_chain(&mut rng);
        let l2 = draw_chain(&mut rng);
        let l2 = if cfg.recombine_l2 { l2 } else { ci };
        // Anchored: the chains' anchor packets as they are; a flow is new by its (L2 chain, L3
        // chain) pair, so every header part it carries recurs in other flows (a fresh source
        // port per flow made the ACL part, whose megaflow bits include tp_src, new for every
        // flow). Sampled: fresh headers inside the chains' rules.
        let mut part_of = |c: usize, rng: &mut ChaCha8Rng| {
            if anchored {
                *anchors
                    .entry(c)
                    .or_insert_with(|| chain_packet(rs, c, &mut anchor_rng(cfg.seed, c)))
            } else {
                chain_packet(rs, c, rng)
            }
        };
        let mut headers = part_of(ci, &mut rng);
        let l2_part = part_of(l2, &mut rng);
        // When both chains' traversals bind an end's MAC to its IPv4 address (port security,
        // spoof guards), the flow keeps that end's own addresses, as a real host's packets do
        // (recombining them would make the flow a spoofed one, dropped by the binding table);
        // when the L2 chain's traversal does not bind (e.g. uplink traffic classified by port
        // and MAC alone), its addresses divert the flow to that traversal. A traversal that
        // needs a gateway or multicast destination MAC keeps its own.
        let (own, other) = (needs[rs.chains[ci].path as usize], needs[rs.chains[l2].path as usize]);
        if !(own.binds_source && other.binds_source) {
            headers.set(Field::InPort, l2_part.get(Field::InPort));
            headers.set(Field::DlSrc, l2_part.get(Field::DlSrc));
        }
        let keeps_dl_dst = own.sets_dl_dst || (own.binds_destination && other.binds_destination);
        if !keeps_dl_dst {
            headers.set(Field::DlDst, l2_part.get(Field::DlDst));
        }
        if cfg.single_in_port {
            headers.set(Field::InPort, 1);
        }
        if cfg.fresh_source_ports && cfg.locality == Locality::High {
            let sport = rs.cb_rules[rs.chains[ci].rule as usize].sport;
            let l4 = matches!(headers.get(Field::NwProto), p if p == IPPROTO_TCP || p == IPPROTO_UDP);
            if l4 && headers.get(Field::TpSrc) != DHCP_CLIENT_PORT as u64 && sport.lo <= EPHEMERAL_PORTS.0 && sport.hi >= EPHEMERAL_PORTS.1 {
                headers.set(Field::TpSrc, pick_port(&mut rng, EPHEMERAL_PORTS.0, EPHEMERAL_PORTS.1));
            }
        }
        if !seen.insert(headers) {
            continue;
        }
        // The k-th header drawn goes to the k-th flow to appear (tgen maps the trace's k-th
        // flow to header line k).
        let k = flows.len();
        flows.push(TraceFlow { headers, chain: ci as u32, n_packets: trace.sizes[k], start_ns: trace.first_ns[k] });
    }
    Ok(Traffic { flows, packets: trace.packets })
}
