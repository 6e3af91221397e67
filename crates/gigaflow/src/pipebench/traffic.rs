//! Pipebench traffic: packets made from the ruleset's (traversal, ClassBench rule) chains, with
//! CAIDA-like heavy-tailed flow sizes (Pareto packets per flow) and one of two timings: a replayed
//! trace slice (the default, as the artifact's tgen replays a CAIDA slice: every flow's packets
//! spread over the whole run, flows numbered by first appearance) or Poisson flow arrivals with
//! log-normal inter-packet gaps. A flow's L3/L4 part and its L2 part (in_port,
//! dl_src, dl_dst) come from two independently drawn chains, so header parts examined by
//! different tables recombine (ClassBench's trace generator; many hosts behind one gateway).
//! High locality draws chains by how often their header tuple recurs in the ruleset (Zipf over
//! that ranking) and builds each flow from two chains' anchor packets (a flow is new by its pair); low
//! locality draws chains uniformly and headers uniformly inside each rule. Deterministic from
//! the seed.

use super::classbench::CbRule;
use super::model::{Key, Step};
use super::ruleset::{host_mac, host_of, port_of, router_mac, Ruleset};
use crate::fields::{Field, Flow, ETH_TYPE_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, HashSet};

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

/// When a flow's packets are sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// A replayed trace slice, as the artifact's tgen replays a CAIDA slice at ~10 kpps: every
    /// packet of every flow falls uniformly in one window of `total packets / packet_rate_pps`,
    /// so a flow is active over the whole run, and flows are numbered (and given their headers)
    /// in order of their first packet, as `pcap-file-analyzer` numbers CAIDA's flows and tgen
    /// maps flow i to header line i. Heavy flows show up first, as in a trace slice, where the
    /// flows in progress when it starts carry most packets.
    Window { packet_rate_pps: f64 },
    /// Flows start as a Poisson process (`flow_arrivals_per_s`) and each sends its packets with
    /// log-normal gaps (`ipg_median_us`, `ipg_sigma`): short-lived flows, each active for
    /// milliseconds to seconds of the run.
    Arrivals,
}

impl Timing {
    /// `window` (at the default 10 kpps) or `arrivals`.
    pub fn parse(s: &str) -> Result<Timing, String> {
        match s.to_ascii_lowercase().as_str() {
            "window" => Ok(Timing::Window { packet_rate_pps: 10_000.0 }),
            "arrivals" => Ok(Timing::Arrivals),
            _ => Err(format!("unknown timing '{s}' (expected window or arrivals)")),
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
    /// Pareto shape of packets per flow (scale 1 packet); 1.2 gives CAIDA's mice-and-elephants mix.
    pub pareto_shape: f64,
    pub max_packets_per_flow: u32,
    /// Mean rate of new flows (Poisson arrivals).
    pub flow_arrivals_per_s: f64,
    /// Median gap between packets of one flow, and the log-normal sigma of that gap.
    pub ipg_median_us: f64,
    pub ipg_sigma: f64,
    /// Zipf exponent over the recurrence ranking (high locality only).
    pub zipf_s: f64,
    pub timing: Timing,
    /// High locality: each flow takes a fresh ephemeral source port (49152–65535, when its
    /// ClassBench rule's source range holds them all) instead of its L3 chain's anchor port, so
    /// a host pair's service carries many connections, as real traffic's does.
    pub fresh_source_ports: bool,
    /// High locality: every flow samples its headers inside its chains' rules (as low locality
    /// does) instead of copying the chains' anchor packets; only the rule choice is local.
    pub sampled_headers: bool,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        TrafficConfig {
            n_flows: 100_000,
            locality: Locality::High,
            seed: 1,
            pareto_shape: 1.2,
            max_packets_per_flow: 10_000,
            flow_arrivals_per_s: 2_000.0,
            ipg_median_us: 1_000.0,
            ipg_sigma: 1.5,
            zipf_s: 1.0,
            timing: Timing::Window { packet_rate_pps: 10_000.0 },
            fresh_source_ports: false,
            sampled_headers: false,
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

/// One packet: when it arrives and which flow it belongs to (its headers are the flow's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracePacket {
    pub time_ns: u64,
    pub flow: u32,
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
                        p.set(Field::TpSrc, if *port == 67 { 68 } else { rng.gen_range(1024..65535) });
                        p.set(Field::TpDst, *port as u64);
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
    /// `in_port` + `dl_src` + `nw_src`).
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
                binds_source: binds(Key::EthSrc, Key::IpSrc, Key::IpSrcHost),
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

fn exp_sample(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    -mean * (1.0 - rng.gen::<f64>()).ln()
}

fn normal_sample(rng: &mut ChaCha8Rng) -> f64 {
    let (u1, u2): (f64, f64) = (1.0 - rng.gen::<f64>(), rng.gen::<f64>());
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Generates the traffic for a ruleset.
pub fn generate(rs: &Ruleset, cfg: &TrafficConfig) -> Result<Traffic, String> {
    if cfg.n_flows == 0 || cfg.n_flows > 10_000_000 {
        return Err(format!("flows must be 1..=10000000, got {}", cfg.n_flows));
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    let valid = positive(cfg.pareto_shape) && positive(cfg.flow_arrivals_per_s) && positive(cfg.ipg_median_us) && cfg.ipg_sigma.is_finite() && cfg.ipg_sigma >= 0.0;
    if !valid {
        return Err("pareto_shape, flow_arrivals_per_s and ipg_median_us must be positive, ipg_sigma non-negative".into());
    }
    if let Timing::Window { packet_rate_pps } = cfg.timing {
        if !positive(packet_rate_pps) {
            return Err(format!("packet_rate_pps must be positive, got {packet_rate_pps}"));
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x7a11_ff1c);
    let n_chains = rs.chains.len();
    // High locality: chains ranked by recurrence, drawn by Zipf over the rank.
    let (order, cdf) = match cfg.locality {
        Locality::High => {
            let scores = recurrence_scores(rs);
            let mut order: Vec<usize> = (0..n_chains).collect();
            order.sort_by(|&a, &b| scores[b].cmp(&scores[a]).then(a.cmp(&b)));
            let mut acc = 0.0;
            let cdf: Vec<f64> = (0..n_chains)
                .map(|i| {
                    acc += 1.0 / ((i + 1) as f64).powf(cfg.zipf_s);
                    acc
                })
                .collect();
            (order, cdf)
        }
        Locality::Low => ((0..n_chains).collect(), Vec::new()),
    };
    let needs = l2_needs(rs);
    // High locality: each chain's flows share one anchor packet (all but the source port).
    let mut anchors: HashMap<usize, Flow> = HashMap::new();
    let mut seen: HashSet<Flow> = HashSet::with_capacity(cfg.n_flows);
    let mut flows = Vec::with_capacity(cfg.n_flows);
    let mut t_ns = 0f64;
    let mean_arrival_ns = 1e9 / cfg.flow_arrivals_per_s;
    let mut attempts = 0usize;
    let draw_chain = |rng: &mut ChaCha8Rng| match cfg.locality {
        Locality::High => {
            let u = rng.gen::<f64>() * cdf[n_chains - 1];
            order[cdf.partition_point(|&c| c < u).min(n_chains - 1)]
        }
        Locality::Low => rng.gen_range(0..n_chains),
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
        let mut headers = match cfg.locality {
            _ if cfg.sampled_headers => chain_packet(rs, ci, &mut rng),
            Locality::Low => chain_packet(rs, ci, &mut rng),
            // High locality: the L3 chain's anchor as it is; a flow is new by its (L2 chain, L3
            // chain) pair, so every header part it carries recurs in other flows (a fresh
            // source port per flow made the ACL part, whose megaflow bits include tp_src, new for
            // every flow).
            Locality::High => *anchors.entry(ci).or_insert_with(|| chain_packet(rs, ci, &mut anchor_rng(cfg.seed, ci))),
        };
        let l2_part = match cfg.locality {
            _ if cfg.sampled_headers => chain_packet(rs, l2, &mut rng),
            Locality::Low => chain_packet(rs, l2, &mut rng),
            Locality::High => *anchors.entry(l2).or_insert_with(|| chain_packet(rs, l2, &mut anchor_rng(cfg.seed, l2))),
        };
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
        if !own.sets_dl_dst && !(own.binds_destination && other.binds_destination) {
            headers.set(Field::DlDst, l2_part.get(Field::DlDst));
        }
        if cfg.fresh_source_ports && cfg.locality == Locality::High {
            let sport = rs.cb_rules[rs.chains[ci].rule as usize].sport;
            let l4 = matches!(headers.get(Field::NwProto), p if p == IPPROTO_TCP || p == IPPROTO_UDP);
            if l4 && headers.get(Field::TpSrc) != 68 && sport.lo <= EPHEMERAL_PORTS.0 && sport.hi >= EPHEMERAL_PORTS.1 {
                headers.set(Field::TpSrc, pick_port(&mut rng, EPHEMERAL_PORTS.0, EPHEMERAL_PORTS.1));
            }
        }
        if !seen.insert(headers) {
            continue;
        }
        let u = 1.0 - rng.gen::<f64>();
        let n_packets = (u.powf(-1.0 / cfg.pareto_shape).floor() as u64).clamp(1, cfg.max_packets_per_flow as u64) as u32;
        t_ns += exp_sample(&mut rng, mean_arrival_ns);
        flows.push(TraceFlow { headers, chain: ci as u32, n_packets, start_ns: t_ns as u64 });
    }
    let total: usize = flows.iter().map(|f| f.n_packets as usize).sum();
    let mut packets = Vec::with_capacity(total);
    match cfg.timing {
        Timing::Arrivals => {
            let mu = (cfg.ipg_median_us * 1e3).ln();
            for (i, f) in flows.iter().enumerate() {
                let mut t = f.start_ns as f64;
                for k in 0..f.n_packets {
                    if k > 0 {
                        t += (mu + cfg.ipg_sigma * normal_sample(&mut rng)).exp();
                    }
                    packets.push(TracePacket { time_ns: t as u64, flow: i as u32 });
                }
            }
        }
        Timing::Window { packet_rate_pps } => {
            let window_ns = total as f64 / packet_rate_pps * 1e9;
            for (i, f) in flows.iter().enumerate() {
                for _ in 0..f.n_packets {
                    packets.push(TracePacket { time_ns: (rng.gen::<f64>() * window_ns) as u64, flow: i as u32 });
                }
            }
        }
    }
    packets.sort_by_key(|p| (p.time_ns, p.flow));
    if matches!(cfg.timing, Timing::Window { .. }) {
        number_by_first_packet(&mut flows, &mut packets);
    }
    Ok(Traffic { flows, packets })
}

/// Renumbers a window's flows by their first packet and gives the k-th flow to appear the k-th
/// header drawn (tgen maps the trace's k-th flow to header line k), keeping each flow's size
/// and packet times: the flow that appears first gets the first header, whatever its size.
fn number_by_first_packet(flows: &mut [TraceFlow], packets: &mut [TracePacket]) {
    const UNSEEN: u32 = u32::MAX;
    let mut rank = vec![UNSEEN; flows.len()];
    let mut next = 0u32;
    for p in packets.iter_mut() {
        let r = &mut rank[p.flow as usize];
        if *r == UNSEEN {
            *r = next;
            next += 1;
        }
        p.flow = *r;
    }
    // Sizes and first-packet times move to the flow's new number; headers and chains stay in
    // the order they were drawn.
    let mut sized: Vec<(u32, u64)> = vec![(0, 0); flows.len()];
    for (old, f) in flows.iter().enumerate() {
        sized[rank[old] as usize].0 = f.n_packets;
    }
    for p in packets.iter().rev() {
        sized[p.flow as usize].1 = p.time_ns;
    }
    for (f, &(n, start)) in flows.iter_mut().zip(&sized) {
        f.n_packets = n;
        f.start_ns = start;
    }
}
