//! Shortest-path routing with per-flow ECMP: the forwarding tables a control plane would install.
//!
//! For every switch and every destination (a ToR's host subnet, or a switch address) the table
//! holds the group of egress ports on shortest paths. ECMP picks one by hashing the outer 5-tuple
//! with a per-switch seed, so a ToR's uplink choice and a spine's core choice are independent; or,
//! to replay an ns-3 program's paths, with ns-3's own per-flow hash ([`EcmpHash::Ns3`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::network::{Network, NodeId, PortId};
use crate::packet::Packet;
use crate::topology::{Role, Topology};

/// Where a lookup says a packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHop {
    /// Out of this local port.
    Port(u16),
    /// The destination is this switch itself.
    ToSelf,
    NoRoute,
}

/// Forwarding state of one switch.
///
/// Its first cache line answers most lookups toward a ToR by itself (`ecmp_seed` and the
/// [`FastPath`]): at FT16 scale the per-destination table below is cold at almost every hop.
#[derive(Debug, Clone, PartialEq)]
#[repr(C, align(64))]
pub struct Fib {
    pub ecmp_seed: u64,
    fast: FastPath,
    /// Per destination index: group id (u32::MAX = no route, u32::MAX-1 = local host subnet,
    /// u32::MAX-2 = this switch).
    dest_group: Vec<u32>,
    groups: Vec<(u32, u16)>,
    ports: Vec<u16>,
    /// For a ToR: local port per host slot (index = last octet - 1).
    host_ports: Vec<u16>,
    my_tor: Option<u32>,
}

/// Up to this many ports in the default group, and this many ToRs routed otherwise.
const FAST_WIDTH: usize = 8;
/// In `FastPath::exc_port`: the exception's group has more than one port (or is not a port):
/// look it up in the table.
const IN_TABLE: u16 = u16::MAX;

/// The ToR destinations of one switch in one line: the group most of them share (a ToR's
/// uplinks, a spine's core links) with its ports, and the few ToRs routed otherwise (the ToR's
/// own subnet, a spine's own pod's ToRs), each with its port when its group has one. Derived
/// from the table after it is built; `default_len == 0` means "not this switch": use the table.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct FastPath {
    default_ports: [u16; FAST_WIDTH],
    exc_dest: [u16; FAST_WIDTH],
    exc_port: [u16; FAST_WIDTH],
    default_len: u8,
    exc_len: u8,
}

const _: () = assert!(std::mem::offset_of!(Fib, dest_group) == 64, "ecmp_seed and the fast path fill the first line");

const NO_ROUTE: u32 = u32::MAX;
const LOCAL_SUBNET: u32 = u32::MAX - 1;
const SELF: u32 = u32::MAX - 2;

/// Dense destination index of an address, or None if it is not one the fabric routes.
#[inline]
fn dest_index(ip: u32, num_tors: u32, num_switches: u32) -> Option<u32> {
    match ip >> 24 {
        10 => {
            let tor = (ip >> 8) & 0xFFFF;
            (tor < num_tors).then_some(tor)
        }
        11 => {
            let s = ip & 0xFF_FFFF;
            (s < num_switches).then_some(num_tors + s)
        }
        _ => None,
    }
}

/// All switches' tables.
#[derive(Debug, Clone)]
pub struct Routing {
    pub num_tors: u32,
    pub num_switches: u32,
    /// Indexed by switch index.
    pub fibs: Vec<Fib>,
    /// How every switch hashes a packet onto its ECMP group.
    pub ecmp_hash: EcmpHash,
}

/// How ECMP turns a packet's outer header into a member of the group (the member is the hash
/// modulo the group's size, members in the order of the switch's ports).
#[derive(Debug, Clone, Default)]
pub enum EcmpHash {
    /// innet's: [`flow_hash`] of the outer 5-tuple with the switch's own seed.
    #[default]
    Mix,
    /// ns-3.36.1's per-flow ECMP as the SwitchV2P artifact's patch builds it.
    Ns3(Arc<Ns3FlowHash>),
}

/// ns-3's per-flow ECMP hash as the SwitchV2P artifact's ns-3 patch computes it
/// (`Ipv4GlobalRouting::GetFlowHash`): a fresh `ns3::Hasher` (Murmur3 x86-128, seed 0x8BADF00D,
/// the low 64 bits) over the text an `std::ostringstream` makes of source address, destination
/// address, protocol and the two ports, streamed without separators — the addresses dotted, the
/// protocol as one raw byte (a `uint8_t` streams as a character), the ports in decimal. Every
/// switch uses this one function, unseeded, so a ToR's uplink index and a spine's core index are
/// the same number (the artifact's correlated ECMP).
#[derive(Debug)]
pub struct Ns3FlowHash {
    /// The dotted address ns-3 gives the node holding each of our addresses; an address not in
    /// the map is written as itself.
    names: crate::rng::FastMap<u32, Box<str>>,
    /// Protocol and ports an encapsulated packet's outer header shows in the ns-3 program (the
    /// artifact's UDP tunnel: 17, 667 → 667), whatever innet's own tunnel carries.
    tunnel: (u8, u16, u16),
    /// Distinguishes instances in the per-thread cache of tunnel pairs (never reused).
    id: u64,
}

thread_local! {
    /// (instance, outer source << 32 | outer destination) → hash of a tunnel packet.
    static TUNNEL_PAIRS: std::cell::RefCell<crate::rng::FastMap<(u64, u64), u64>> = Default::default();
}

impl Drop for Ns3FlowHash {
    /// Forget this instance's pairs (a worker process runs many simulations in turn).
    fn drop(&mut self) {
        let _ = TUNNEL_PAIRS.try_with(|m| m.borrow_mut().retain(|k, _| k.0 != self.id));
    }
}

/// ns-3's `Hash::Function::Murmur3::SEED`.
const NS3_MURMUR3_SEED: u32 = 0x8BAD_F00D;

impl Ns3FlowHash {
    pub fn new(names: HashMap<u32, String>, tunnel: (u8, u16, u16)) -> Self {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ns3FlowHash { names: names.into_iter().map(|(k, v)| (k, v.into_boxed_str())).collect(), tunnel, id }
    }

    /// The hash of the packet's outer header. A tunnel packet's hash depends on its two
    /// addresses only, so it is computed once per pair and kept (per thread, per instance).
    #[inline]
    pub fn hash(&self, pkt: &Packet) -> u64 {
        match pkt.tunnel {
            Some(ref t) => {
                let (src, dst) = (t.outer.src, t.outer.dst);
                let key = (self.id, (src as u64) << 32 | dst as u64);
                TUNNEL_PAIRS.with(|m| {
                    *m.borrow_mut()
                        .entry(key)
                        .or_insert_with(|| self.hash_fields(src, dst, self.tunnel.0, self.tunnel.1, self.tunnel.2))
                })
            }
            None => {
                let (src, dst, proto, sport, dport) = pkt.outer_five_tuple();
                self.hash_fields(src, dst, proto, sport, dport)
            }
        }
    }

    /// The hash of one header's fields (our addresses, translated through the map). The text is
    /// at most 2 × 15 + 1 + 2 × 5 = 41 bytes, built on the stack.
    pub fn hash_fields(&self, src: u32, dst: u32, proto: u8, sport: u16, dport: u16) -> u64 {
        use std::io::Write;
        let mut buf = [0u8; 48];
        let mut w = &mut buf[..];
        for ip in [src, dst] {
            let _ = match self.names.get(&ip) {
                Some(n) => w.write_all(n.as_bytes()),
                None => write!(w, "{}", std::net::Ipv4Addr::from(ip)),
            };
        }
        let _ = w.write_all(&[proto]);
        let _ = write!(w, "{sport}{dport}");
        let len = 48 - w.len();
        ns3_hash64(&buf[..len])
    }
}

/// ns-3's `Hasher::GetHash64` on a fresh hasher: Murmur3 x86-128 with ns-3's seed; ns-3 returns
/// `hash[1] << 32 | hash[0]`, the low 64 bits of the 128-bit value.
pub fn ns3_hash64(bytes: &[u8]) -> u64 {
    let h = murmur3::murmur3_x86_128(&mut std::io::Cursor::new(bytes), NS3_MURMUR3_SEED).expect("reading from memory cannot fail");
    h as u64
}


pub use crate::rng::mix64;

#[inline]
pub fn flow_hash(t: (u32, u32, u8, u16, u16), seed: u64) -> u64 {
    let a = ((t.0 as u64) << 32) | t.1 as u64;
    let b = ((t.2 as u64) << 32) | ((t.3 as u64) << 16) | t.4 as u64;
    mix64(mix64(a ^ seed) ^ b.wrapping_add(0x9e3779b97f4a7c15))
}

impl Fib {
    /// Next hop for `pkt` (routing on its outer header) with per-flow ECMP.
    #[inline]
    pub fn next_hop(&self, routing: &Routing, pkt: &Packet) -> NextHop {
        let ip = pkt.routing_ip().dst;
        let Some(d) = dest_index(ip, routing.num_tors, routing.num_switches) else {
            return NextHop::NoRoute;
        };
        let f = &self.fast;
        if f.default_len != 0 && d < routing.num_tors {
            match f.exc_dest[..f.exc_len as usize].iter().position(|&e| e as u32 == d) {
                None => {
                    let len = f.default_len as u64;
                    let i = if len == 1 { 0 } else { routing.ecmp(self.ecmp_seed, pkt) % len };
                    return NextHop::Port(f.default_ports[i as usize]);
                }
                Some(k) if f.exc_port[k] != IN_TABLE => return NextHop::Port(f.exc_port[k]),
                Some(_) => {}
            }
        }
        self.next_hop_in_table(routing, ip, d, pkt)
    }

    /// Next hop toward destination index `d` (address `ip`) from the table itself.
    fn next_hop_in_table(&self, routing: &Routing, ip: u32, d: u32, pkt: &Packet) -> NextHop {
        match self.dest_group[d as usize] {
            NO_ROUTE => NextHop::NoRoute,
            SELF => NextHop::ToSelf,
            LOCAL_SUBNET => {
                let slot = (ip & 0xFF).wrapping_sub(1) as usize;
                match self.host_ports.get(slot) {
                    Some(&p) if p != u16::MAX => NextHop::Port(p),
                    _ => NextHop::NoRoute,
                }
            }
            g => {
                let (start, len) = self.groups[g as usize];
                let i = if len == 1 {
                    0
                } else {
                    (routing.ecmp(self.ecmp_seed, pkt) % len as u64) as u32
                };
                NextHop::Port(self.ports[(start + i) as usize])
            }
        }
    }

    /// The ECMP group (local ports) toward an address.
    pub fn group(&self, routing: &Routing, ip: u32) -> &[u16] {
        match dest_index(ip, routing.num_tors, routing.num_switches).map(|d| self.dest_group[d as usize]) {
            Some(g) if g < SELF => {
                let (s, l) = self.groups[g as usize];
                &self.ports[s as usize..(s + l as u32) as usize]
            }
            _ => &[],
        }
    }

    pub fn my_tor(&self) -> Option<u32> {
        self.my_tor
    }

    /// Fill the fast path from the table of the `num_tors` ToR destinations, if their groups
    /// fit it (see [`FastPath`]); else leave it off.
    fn build_fast_path(&mut self, num_tors: u32) {
        self.fast = FastPath::default();
        let tors = &self.dest_group[..num_tors.min(self.dest_group.len() as u32) as usize];
        if num_tors > u16::MAX as u32 || tors.is_empty() {
            return;
        }
        // The most common group (the first of the most common, for a fixed answer).
        let mut counts: HashMap<u32, (usize, usize)> = HashMap::new();
        for (d, &g) in tors.iter().enumerate() {
            counts.entry(g).or_insert((0, d)).0 += 1;
        }
        let (&default, _) = counts.iter().max_by_key(|(_, &(n, first))| (n, std::cmp::Reverse(first))).expect("non-empty");
        if default >= SELF {
            return;
        }
        let (start, len) = self.groups[default as usize];
        let exceptions: Vec<usize> = (0..tors.len()).filter(|&d| tors[d] != default).collect();
        if len as usize > FAST_WIDTH || exceptions.len() > FAST_WIDTH {
            return;
        }
        let mut f = FastPath { default_len: len as u8, exc_len: exceptions.len() as u8, ..FastPath::default() };
        f.default_ports[..len as usize].copy_from_slice(&self.ports[start as usize..(start + len as u32) as usize]);
        for (k, &d) in exceptions.iter().enumerate() {
            f.exc_dest[k] = d as u16;
            f.exc_port[k] = match tors[d] {
                g if g < SELF && self.groups[g as usize].1 == 1 => self.ports[self.groups[g as usize].0 as usize],
                _ => IN_TABLE,
            };
        }
        self.fast = f;
    }
}

impl Routing {
    /// Compute shortest-path tables for every switch of `topo`, whose ports `net` holds.
    /// `seed` derives each switch's ECMP seed.
    pub fn compute(topo: &Topology, net: &Network, seed: u64) -> Routing {
        let n = topo.nodes.len();
        // Adjacency between switches: (neighbor node, local port at this node).
        let mut adj: Vec<Vec<(NodeId, u16)>> = vec![Vec::new(); n];
        for (node, info) in net.nodes.iter().enumerate() {
            for local in 0..info.num_ports {
                let pid = info.first_port + local as PortId;
                let peer = net.ports[net.ports[pid as usize].peer as usize].node;
                adj[node].push((peer, local));
            }
        }
        let num_tors = topo.tors.len() as u32;
        let num_switches = topo.switches.len() as u32;
        let num_dests = (num_tors + num_switches) as usize;
        let mut fibs: Vec<Fib> = topo
            .switches
            .iter()
            .enumerate()
            .map(|(si, &node)| {
                let tn = &topo.nodes[node as usize];
                let mut host_ports = Vec::new();
                if tn.role == Role::Tor {
                    for &(peer, local) in &adj[node as usize] {
                        let pn = &topo.nodes[peer as usize];
                        if pn.role == Role::Host {
                            let slot = ((pn.ip & 0xFF) - 1) as usize;
                            if host_ports.len() <= slot {
                                host_ports.resize(slot + 1, u16::MAX);
                            }
                            host_ports[slot] = local;
                        }
                    }
                }
                Fib {
                    fast: FastPath::default(),
                    dest_group: vec![NO_ROUTE; num_dests],
                    groups: Vec::new(),
                    ports: Vec::new(),
                    host_ports,
                    my_tor: tn.tor,
                    ecmp_seed: crate::rng::derive_seed(seed, &format!("ecmp/{si}")),
                }
            })
            .collect();
        // Hosts are never transit nodes: search and group over switch neighbours only (the
        // order of `adj` kept, so groups list their ports in the same order).
        let switch_adj: Vec<Vec<(NodeId, u16)>> = adj
            .iter()
            .map(|a| a.iter().copied().filter(|&(v, _)| topo.nodes[v as usize].role != Role::Host).collect())
            .collect();
        let mut interned: Vec<HashMap<Vec<u16>, u32>> = vec![HashMap::new(); num_switches as usize];
        let mut dist = vec![u32::MAX; n];
        // Breadth-first order of the search; also the list of `dist` entries to reset.
        let mut reached: Vec<NodeId> = Vec::new();
        let mut group: Vec<u16> = Vec::new();
        for d in 0..num_dests as u32 {
            let target = if d < num_tors { topo.tors[d as usize] } else { topo.switches[(d - num_tors) as usize] };
            for &v in &reached {
                dist[v as usize] = u32::MAX;
            }
            reached.clear();
            dist[target as usize] = 0;
            reached.push(target);
            let mut head = 0;
            while let Some(&u) = reached.get(head) {
                head += 1;
                for &(v, _) in &switch_adj[u as usize] {
                    if dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        reached.push(v);
                    }
                }
            }
            for (si, &sw) in topo.switches.iter().enumerate() {
                let fib = &mut fibs[si];
                if sw == target {
                    fib.dest_group[d as usize] = if d < num_tors { LOCAL_SUBNET } else { SELF };
                    continue;
                }
                let ds = dist[sw as usize];
                if ds == u32::MAX {
                    continue;
                }
                group.clear();
                group.extend(switch_adj[sw as usize].iter().filter(|&&(v, _)| dist[v as usize] + 1 == ds).map(|&(_, p)| p));
                // Group ids in order of first appearance; most destinations reuse the group of
                // the one before (all of another pod's ToRs, say), so try that one first.
                let prev = if d > 0 { fib.dest_group[d as usize - 1] } else { NO_ROUTE };
                let same_as_prev = (prev as usize) < fib.groups.len() && {
                    let (start, len) = fib.groups[prev as usize];
                    fib.ports[start as usize..start as usize + len as usize] == group[..]
                };
                let found = if same_as_prev { Some(prev) } else { interned[si].get(&group[..]).copied() };
                let gid = match found {
                    Some(g) => g,
                    None => {
                        let next = fib.groups.len() as u32;
                        let start = fib.ports.len() as u32;
                        fib.ports.extend_from_slice(&group);
                        fib.groups.push((start, group.len() as u16));
                        interned[si].insert(group.clone(), next);
                        next
                    }
                };
                fib.dest_group[d as usize] = gid;
            }
        }
        for fib in &mut fibs {
            fib.build_fast_path(num_tors);
        }
        Routing { num_tors, num_switches, fibs, ecmp_hash: EcmpHash::Mix }
    }

    /// The ECMP hash of `pkt` at a switch whose seed is `seed`.
    #[inline]
    fn ecmp(&self, seed: u64, pkt: &Packet) -> u64 {
        match &self.ecmp_hash {
            EcmpHash::Mix => flow_hash(pkt.outer_five_tuple(), seed),
            EcmpHash::Ns3(h) => h.hash(pkt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ipv4, L4, IP_PROTO_UDP};
    use crate::topology::{host_ip, TopologySpec};

    fn ft8() -> (Topology, Network, Routing) {
        let t = Topology::build(&TopologySpec::ft8(), &[]).unwrap();
        let mut net = Network::new(1);
        t.instantiate(&mut net);
        let r = Routing::compute(&t, &net, 1);
        (t, net, r)
    }

    /// The tables as the first version computed them (a BFS over every node per destination,
    /// one allocated and hashed group per switch and destination): the oracle for `compute`.
    fn reference_fibs(topo: &Topology, net: &Network, seed: u64) -> Vec<Fib> {
        let n = topo.nodes.len();
        let mut adj: Vec<Vec<(NodeId, u16)>> = vec![Vec::new(); n];
        for (node, info) in net.nodes.iter().enumerate() {
            for local in 0..info.num_ports {
                let pid = info.first_port + local as PortId;
                adj[node].push((net.ports[net.ports[pid as usize].peer as usize].node, local));
            }
        }
        let (num_tors, num_switches) = (topo.tors.len() as u32, topo.switches.len() as u32);
        let num_dests = (num_tors + num_switches) as usize;
        let mut fibs: Vec<Fib> = Routing::compute(topo, net, seed)
            .fibs
            .into_iter()
            .map(|f| Fib { dest_group: vec![NO_ROUTE; num_dests], groups: Vec::new(), ports: Vec::new(), ..f })
            .collect();
        let mut interned: Vec<HashMap<Vec<u16>, u32>> = vec![HashMap::new(); num_switches as usize];
        for d in 0..num_dests as u32 {
            let target = if d < num_tors { topo.tors[d as usize] } else { topo.switches[(d - num_tors) as usize] };
            let mut dist = vec![u32::MAX; n];
            dist[target as usize] = 0;
            let mut queue = std::collections::VecDeque::from([target]);
            while let Some(u) = queue.pop_front() {
                for &(v, _) in &adj[u as usize] {
                    if topo.nodes[v as usize].role != Role::Host && dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for (si, &sw) in topo.switches.iter().enumerate() {
                let fib = &mut fibs[si];
                if sw == target {
                    fib.dest_group[d as usize] = if d < num_tors { LOCAL_SUBNET } else { SELF };
                    continue;
                }
                let ds = dist[sw as usize];
                if ds == u32::MAX {
                    continue;
                }
                let group: Vec<u16> = adj[sw as usize]
                    .iter()
                    .filter(|&&(v, _)| topo.nodes[v as usize].role != Role::Host && dist[v as usize] + 1 == ds)
                    .map(|&(_, p)| p)
                    .collect();
                let next = fib.groups.len() as u32;
                let gid = *interned[si].entry(group.clone()).or_insert_with(|| {
                    fib.groups.push((fib.ports.len() as u32, group.len() as u16));
                    fib.ports.extend_from_slice(&group);
                    next
                });
                fib.dest_group[d as usize] = gid;
            }
        }
        fibs
    }

    /// `compute` gives exactly the reference's tables (same group ids in the same order, same
    /// ports), on regular fabrics and on fabrics with links removed (irregular groups,
    /// unreachable destinations).
    #[test]
    fn compute_matches_the_reference_tables() {
        let specs = [
            TopologySpec::k_ary(4),
            TopologySpec::ft8(),
            TopologySpec::fattree(3, 4, 2, 3, 6),
            TopologySpec::leaf_spine(5, 3, 2),
            TopologySpec::rack(3),
        ];
        for spec in specs {
            for drop_every in [0usize, 2, 3, 7] {
                let mut t = Topology::build(&spec, &[]).unwrap();
                if drop_every > 0 {
                    // Remove some switch-to-switch links.
                    let fabric = |l: &crate::topology::TopoLink| {
                        t.nodes[l.a as usize].role != Role::Host && t.nodes[l.b as usize].role != Role::Host
                    };
                    let keep: Vec<bool> =
                        t.links.iter().enumerate().map(|(i, l)| !(fabric(l) && i % drop_every == 1)).collect();
                    let mut i = 0;
                    t.links.retain(|_| {
                        i += 1;
                        keep[i - 1]
                    });
                }
                let mut net = Network::new(1);
                t.instantiate(&mut net);
                let r = Routing::compute(&t, &net, 9);
                let reference = reference_fibs(&t, &net, 9);
                let same_tables = r.fibs.iter().zip(&reference).all(|(a, b)| {
                    (&a.dest_group, &a.groups, &a.ports, &a.host_ports, a.my_tor, a.ecmp_seed)
                        == (&b.dest_group, &b.groups, &b.ports, &b.host_ports, b.my_tor, b.ecmp_seed)
                });
                assert!(same_tables && r.fibs.len() == reference.len(), "{spec:?}, every {drop_every}th fabric link removed");
                fast_path_agrees_with_the_table(&t, &r);
            }
        }
    }

    /// Every switch's lookup toward every host (one per ToR and the ToR's first and last host
    /// slots) and every switch, for many flows, gives the port the table gives.
    fn fast_path_agrees_with_the_table(t: &Topology, r: &Routing) {
        let mut dests: Vec<u32> = (0..r.num_tors).flat_map(|tor| [host_ip(tor, 0), host_ip(tor, 1), host_ip(tor, 200)]).collect();
        dests.extend((0..r.num_switches).map(|s| 0x0B00_0000 | s));
        for fib in &r.fibs {
            for &dst in &dests {
                for sport in 0..24u16 {
                    let p = pkt(host_ip(0, 3), dst, 1000 + 7 * sport);
                    let d = dest_index(dst, r.num_tors, r.num_switches).unwrap();
                    assert_eq!(fib.next_hop(r, &p), fib.next_hop_in_table(r, dst, d, &p), "{:?} toward {dst:#x}", t.nodes.len());
                }
            }
        }
    }

    /// The fast path is on where it should be: every ToR and spine of a fat-tree (the test
    /// above would pass with it off everywhere).
    #[test]
    fn fat_tree_tors_and_spines_use_the_fast_path() {
        for spec in [TopologySpec::ft8(), TopologySpec::fattree(6, 8, 4, 8, 16)] {
            let t = Topology::build(&spec, &[]).unwrap();
            let mut net = Network::new(1);
            t.instantiate(&mut net);
            let r = Routing::compute(&t, &net, 1);
            for (si, &node) in t.switches.iter().enumerate() {
                let role = t.nodes[node as usize].role;
                let on = r.fibs[si].fast.default_len != 0;
                assert_eq!(on, role != Role::Core, "{spec:?}: switch {si} ({role:?})");
            }
        }
    }

    fn pkt(src: u32, dst: u32, sport: u16) -> Packet {
        Packet::new(Ipv4::new(src, dst, IP_PROTO_UDP), L4::Udp { src_port: sport, dst_port: 80 }, 100)
    }

    #[test]
    fn groups_have_the_fat_tree_fanout() {
        let (t, _net, r) = ft8();
        let tor0 = t.nodes[t.tors[0] as usize].switch_index.unwrap() as usize;
        // From ToR 0: its own hosts are local, pod-mates and other pods go up over 4 spines.
        assert_eq!(r.fibs[tor0].group(&r, host_ip(1, 0)).len(), 4);
        assert_eq!(r.fibs[tor0].group(&r, host_ip(31, 0)).len(), 4);
        // A spine reaches another pod over its 4 cores, its own pod's ToR over one link.
        let spine0 = 16usize;
        assert_eq!(r.fibs[spine0].group(&r, host_ip(31, 0)).len(), 4);
        assert_eq!(r.fibs[spine0].group(&r, host_ip(1, 0)).len(), 1);
        // A core reaches every pod over exactly one spine.
        assert_eq!(r.fibs[0].group(&r, host_ip(31, 0)).len(), 1);
    }

    #[test]
    fn ecmp_spreads_flows_and_seeds_are_independent_per_switch() {
        let (t, _net, r) = ft8();
        let tor0 = t.nodes[t.tors[0] as usize].switch_index.unwrap() as usize;
        let spine0 = 16usize;
        let mut counts = [0u32; 8];
        let mut joint = std::collections::HashMap::new();
        let n = 40_000;
        for i in 0..n {
            let p = pkt(host_ip(0, 0), host_ip(31, 1), i as u16);
            let NextHop::Port(up) = r.fibs[tor0].next_hop(&r, &p) else { panic!() };
            let NextHop::Port(core) = r.fibs[spine0].next_hop(&r, &p) else { panic!() };
            counts[up as usize] += 1;
            *joint.entry((up, core)).or_insert(0u32) += 1;
        }
        // Uplinks are ports 4..8 of the ToR (hosts were attached after spines, so check nonzero set).
        let used: Vec<u32> = counts.iter().copied().filter(|&c| c > 0).collect();
        assert_eq!(used.len(), 4);
        for c in used {
            let share = c as f64 / n as f64;
            assert!((share - 0.25).abs() < 0.02, "uneven ECMP share {share}");
        }
        // Independent per-switch hashes: all 16 (uplink, core) combinations appear evenly.
        assert_eq!(joint.len(), 16);
        for (&k, &c) in &joint {
            let share = c as f64 / n as f64;
            assert!((share - 1.0 / 16.0).abs() < 0.01, "combination {k:?} share {share}");
        }
    }

    #[test]
    fn same_flow_same_path_and_unknown_addresses_have_no_route() {
        let (_t, _net, r) = ft8();
        let p = pkt(host_ip(0, 0), host_ip(31, 1), 7);
        let a = r.fibs[48].next_hop(&r, &p);
        assert_eq!(a, r.fibs[48].next_hop(&r, &p));
        let bad = pkt(host_ip(0, 0), 0x0808_0808, 7);
        assert_eq!(r.fibs[48].next_hop(&r, &bad), NextHop::NoRoute);
        let to_switch = pkt(host_ip(0, 0), crate::topology::switch_ip(3), 7);
        assert_eq!(r.fibs[3].next_hop(&r, &to_switch), NextHop::ToSelf);
        assert!(matches!(r.fibs[48].next_hop(&r, &to_switch), NextHop::Port(_)));
    }

    /// ns-3.36.1's own `Hasher::GetHash64` on the text `GetFlowHash` streams for a UDP 667 → 667
    /// tunnel packet between two artifact addresses (printed by a 20-line C++ program linked to
    /// the artifact's libns3.36.1-core; docs/results/artifacts.md).
    #[test]
    fn ns3_flow_hash_equals_ns3s_hasher() {
        const GOLDEN: [(&str, &str, u64); 6] = [
            ("1.0.0.1", "1.0.4.1", 8560858800910612225),
            ("1.0.0.1", "3.2.1.1", 3701348348344220967),
            ("8.3.3.1", "1.0.4.1", 12392236141568708502),
            ("4.2.1.1", "6.3.0.1", 3855355566424081346),
            ("1.0.4.1", "5.0.0.1", 4519274765161530554),
            ("2.1.3.1", "2.1.0.1", 1599881251182811660),
        ];
        let h = Ns3FlowHash::new(HashMap::new(), (17, 667, 667));
        for (src, dst, want) in GOLDEN {
            let ip = |t: &str| u32::from(t.parse::<std::net::Ipv4Addr>().unwrap());
            assert_eq!(h.hash_fields(ip(src), ip(dst), 17, 667, 667), want, "{src} -> {dst}");
        }
        // Names replace our addresses in the text: the same pair under other addresses.
        let named = Ns3FlowHash::new(HashMap::from([(1, "1.0.0.1".to_string()), (2, "1.0.4.1".to_string())]), (17, 667, 667));
        assert_eq!(named.hash_fields(1, 2, 17, 667, 667), 8560858800910612225);
    }

    /// With the ns-3 hash every switch picks member `hash % size` of its group, so (with groups in
    /// the artifact's order) a ToR's spine index and that spine's core index coincide: inter-pod
    /// traffic crosses only the cores whose index is 5 × the spine offset (cores 0, 5, 10, 15).
    #[test]
    fn ns3_hash_puts_inter_pod_flows_on_the_diagonal_cores() {
        let (t, net, mut r) = ft8();
        r.ecmp_hash = EcmpHash::Ns3(Arc::new(Ns3FlowHash::new(HashMap::new(), (17, 667, 667))));
        let mut cores_used = std::collections::BTreeSet::new();
        for i in 0..64u32 {
            let (src_tor, dst_tor) = (i % 4, 4 + (i * 7) % 28);
            let mut p = pkt(host_ip(src_tor, i % 4), host_ip(dst_tor, 0), 1000 + i as u16);
            p.tunnel = Some(crate::packet::Tunnel { outer: p.ip, encap: crate::packet::Encap::IpInIp });
            let h = match &r.ecmp_hash {
                EcmpHash::Ns3(n) => n.hash(&p),
                EcmpHash::Mix => unreachable!(),
            };
            let tor = t.tors[src_tor as usize];
            let NextHop::Port(up) = r.fibs[t.nodes[tor as usize].switch_index.unwrap() as usize].next_hop(&r, &p) else { panic!("no route") };
            assert_eq!(up as u64, h % 4, "the ToR's uplink is member hash % 4 (spines come first among its ports)");
            let spine = net.ports[net.ports[net.port_id(tor, up) as usize].peer as usize].node;
            let spine_si = t.nodes[spine as usize].switch_index.unwrap() as usize;
            let NextHop::Port(cp) = r.fibs[spine_si].next_hop(&r, &p) else { panic!("no route") };
            let core = net.ports[net.ports[net.port_id(spine, cp) as usize].peer as usize].node;
            cores_used.insert(t.nodes[core as usize].switch_index.unwrap());
        }
        assert!(cores_used.iter().all(|c| c % 5 == 0), "cores used: {cores_used:?}");
        assert!(cores_used.len() > 1, "the flows spread: {cores_used:?}");
    }

}
