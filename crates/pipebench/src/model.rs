//! The shape of a Pipebench pipeline: tables with rule slots. Each table has *hit edges* (rules
//! generated from ClassBench rules, matching the table's fields, with actions and a next table)
//! and *miss edges* (priority-0/1 defaults). Edges may require or set a register value, which is
//! how pipelines carry decisions forward (OVN's outport, OF-DPA's action-set group, Antrea's
//! marks). `traversals` enumerates every table sequence the edges allow.

use std::collections::BTreeSet;

/// OpenFlow ports of the bridge the pipelines output to (the OVS oracle creates 1..=N_PORTS).
pub const N_PORTS: u32 = 4;

/// The header part a hit-edge rule matches, each derived from the ClassBench rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// `in_port`: the port the rule's source subnet sits behind.
    InPort,
    /// `in_port` as `InPort`, on a port of group g (ports 1,3 are group 0; 2,4 group 1): for
    /// tables whose ports have roles (access vs. trunk); a rule's chain must fit the role.
    PortGroup(u8),
    /// `udp,tp_dst=P`: a well-known UDP service (DNS 53) regardless of the rule.
    Udp(u16),
    /// `udp,nw_src=0.0.0.0,nw_dst=255.255.255.255,tp_src=68,tp_dst=67`: a DHCPv4 discovery, sent
    /// before the host has an address (OVN's port-security exemption for it).
    DhcpDiscover,
    /// The DHCPv4 requests ovn-northd answers for a port with DHCP options: the discovery
    /// (`DhcpDiscover`) and the renewal from the port's address (the source prefix's designated
    /// host) to the DHCP server or to broadcast, all `udp,tp_src=68,tp_dst=67`.
    DhcpRequest,
    /// `vlan_tci=0x0000/0x1fff`: untagged frames (the VLAN is assigned by the table).
    Untagged,
    /// `dl_src`: the source subnet's host MAC.
    EthSrc,
    /// `dl_dst`: the destination subnet's host MAC.
    EthDst,
    /// `dl_dst`: the router (gateway) MAC of the destination subnet.
    RouterMac,
    /// `dl_dst=01:00:00:00:00:00/01:00:00:00:00:00`: multicast/broadcast frames.
    EthMcast,
    /// `nw_src`: the rule's source prefix.
    IpSrc,
    /// `nw_dst`: the rule's destination prefix.
    IpDst,
    /// `nw_src`: the one host address of the source prefix (`addr | 1` below /32).
    IpSrcHost,
    /// `nw_dst`: the one host address of the destination prefix.
    IpDstHost,
    /// `nw_proto` (when the ClassBench rule names one).
    Proto,
    /// `tp_src`: the rule's source-port range, expanded to masks.
    SPort,
    /// `tp_dst`: the rule's destination-port range, expanded to masks.
    DPort,
}

impl Key {
    /// A DHCP key: the packet's L3/L4 header is the DHCP request's, not the ClassBench rule's.
    pub fn is_dhcp(&self) -> bool {
        matches!(self, Key::DhcpDiscover | Key::DhcpRequest)
    }
    /// Whether the key matches L3/L4 values taken from the ClassBench rule.
    pub fn reads_rule_l3(&self) -> bool {
        matches!(self, Key::IpSrc | Key::IpDst | Key::IpSrcHost | Key::IpDstHost | Key::Proto | Key::SPort | Key::DPort | Key::Udp(_))
    }
}

/// What an edge does besides choosing the next table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// `load:V->NXM_NX_REGr[]`.
    Load(u8, u32),
    /// Routing rewrite: `mod_dl_src:<router MAC>,mod_dl_dst:<destination host MAC>`.
    RouteMacs,
    /// `mod_dl_dst:<destination host MAC>` (ARP/neighbour resolution).
    SetEthDst,
    /// `load:<port of the destination>->NXM_NX_REGr[]` (the chosen output port, 1..=N_PORTS).
    LoadPort(u8),
    /// Service DNAT: `mod_nw_dst:<endpoint>` (the destination prefix's `addr | 2`), `ip` only.
    Dnat,
    /// `ct(table=NEXT,zone=Z)` instead of `goto_table:NEXT`: conntrack, then the next table in
    /// a recirculated datapath pass (OVN's `ct_next`, Antrea's Conntrack table).
    CtNext(u16),
    /// `ct(commit,zone=Z)`.
    CtCommit(u16),
    /// `dec_ttl`.
    DecTtl,
}

/// A fixed rule on the connection state (not from ClassBench, not a traversal of its own: it
/// continues as the table's default does, or drops packets our traffic never has, like
/// `+inv`): how the stateful stages read `ct_state`, which puts its bits in the Megaflow.
#[derive(Clone, Debug)]
pub struct Guard {
    pub priority: u16,
    /// `ct_state` match, OVS syntax (`+inv+trk`).
    pub ct_state: &'static str,
    pub acts: Vec<Act>,
    pub next: Next,
}

/// Where a rule sends the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Table(u8),
    /// `output:P` (P from the destination subnet) and end.
    Output,
    /// `output:P` to a fixed port (register-dispatched output, e.g. a group's bucket).
    Port(u32),
    Drop,
}

#[derive(Clone, Debug)]
pub struct Edge {
    /// Fields matched (empty for miss edges).
    pub keys: &'static [Key],
    /// `regR=V` required in the match.
    pub requires: Option<(u8, u32)>,
    pub acts: Vec<Act>,
    pub next: Next,
}

#[derive(Clone, Debug)]
pub struct TableSpec {
    /// OpenFlow table number.
    pub id: u8,
    pub name: &'static str,
    pub purpose: &'static str,
    pub hits: Vec<Edge>,
    pub misses: Vec<Edge>,
    pub guards: Vec<Guard>,
    /// Longest-prefix-match priorities (`100 + 10·len` of the table's single prefix key)
    /// instead of ClassBench order.
    pub lpm: bool,
}

impl TableSpec {
    pub fn new(id: u8, name: &'static str, purpose: &'static str) -> Self {
        TableSpec { id, name, purpose, hits: Vec::new(), misses: Vec::new(), guards: Vec::new(), lpm: false }
    }
    pub fn guard(mut self, priority: u16, ct_state: &'static str, acts: &[Act], next: Next) -> Self {
        self.guards.push(Guard { priority, ct_state, acts: acts.to_vec(), next });
        self
    }
    pub fn lpm(mut self) -> Self {
        self.lpm = true;
        self
    }
    pub fn hit(mut self, keys: &'static [Key], acts: &[Act], next: Next) -> Self {
        self.hits.push(Edge { keys, requires: None, acts: acts.to_vec(), next });
        self
    }
    pub fn hit_if(mut self, reg: (u8, u32), keys: &'static [Key], acts: &[Act], next: Next) -> Self {
        self.hits.push(Edge { keys, requires: Some(reg), acts: acts.to_vec(), next });
        self
    }
    pub fn miss(mut self, acts: &[Act], next: Next) -> Self {
        self.misses.push(Edge { keys: &[], requires: None, acts: acts.to_vec(), next });
        self
    }
    /// Register-conditional misses (priority 1) come before the unconditional one (priority 0).
    pub fn miss_if(mut self, reg: (u8, u32), acts: &[Act], next: Next) -> Self {
        let at = self.misses.iter().take_while(|e| e.requires.is_some()).count();
        self.misses.insert(at, Edge { keys: &[], requires: Some(reg), acts: acts.to_vec(), next });
        self
    }
    /// Every match field the table's rules use (for documentation).
    pub fn matched_keys(&self) -> Vec<Key> {
        let mut out: Vec<Key> = Vec::new();
        for e in &self.hits {
            for k in e.keys {
                if !out.contains(k) {
                    out.push(*k);
                }
            }
        }
        out
    }
    /// Every possible next hop.
    pub fn nexts(&self) -> Vec<Next> {
        let mut out: Vec<Next> = Vec::new();
        for e in self.hits.iter().chain(&self.misses) {
            if !out.contains(&e.next) {
                out.push(e.next);
            }
        }
        out
    }
}

/// A pipeline: its tables (the first is where packets enter).
#[derive(Clone, Debug)]
pub struct PipelineSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub tables: Vec<TableSpec>,
    /// Table 1 of the paper: tables and distinct traversals.
    pub paper_tables: usize,
    pub paper_traversals: usize,
    /// The distinct traversals of this spec: Table 1's, except where docs/gigaflow.md says why
    /// not (OLS: ovn-northd's DHCP matches).
    pub traversals_built: usize,
}

/// A step of a path: a table and which of its edges fired (hit edge i or miss edge i).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    Hit(u8, usize),
    Miss(u8, usize),
}

impl Step {
    pub fn table(&self) -> u8 {
        match *self {
            Step::Hit(t, _) | Step::Miss(t, _) => t,
        }
    }
}

/// Register state along a path: (reg, value), sorted.
type Regs = Vec<(u8, u32)>;

impl PipelineSpec {
    pub fn table(&self, id: u8) -> Option<&TableSpec> {
        self.tables.iter().find(|t| t.id == id)
    }
    pub fn edge(&self, s: Step) -> &Edge {
        match s {
            Step::Hit(t, i) => &self.table(t).expect("table").hits[i],
            Step::Miss(t, i) => &self.table(t).expect("table").misses[i],
        }
    }

    /// Every edge path from the first table to an end, following register requirements.
    /// A state in which no miss edge applies is an error (the pipeline must define its misses).
    pub fn edge_paths(&self) -> Result<Vec<Vec<Step>>, String> {
        let mut out = Vec::new();
        let first = self.tables.first().ok_or("pipeline has no tables")?.id;
        self.walk(first, Vec::new(), &mut Vec::new(), &mut out)?;
        let mut seen = BTreeSet::new();
        out.retain(|p| seen.insert(p.clone()) && self.coherent(p));
        Ok(out)
    }

    /// Whether one packet can take `path`. A path with a DHCP edge carries a DHCP request
    /// (0.0.0.0 → 255.255.255.255 for the discovery): it takes the DHCP edge of every table
    /// that has one (OVN writes the port-security exemption and the DHCP-options flows for the
    /// same port) and no edge matching the ClassBench rule's addresses or ports, which such a
    /// packet does not carry.
    fn coherent(&self, path: &[Step]) -> bool {
        let dhcp_edge = |s: &Step| matches!(s, Step::Hit(..)) && self.edge(*s).keys.iter().any(Key::is_dhcp);
        if !path.iter().any(dhcp_edge) {
            return true;
        }
        path.iter().all(|s| {
            let table_has_dhcp = self.table(s.table()).is_some_and(|t| t.hits.iter().any(|e| e.keys.iter().any(Key::is_dhcp)));
            let reads_l3 = matches!(s, Step::Hit(..)) && self.edge(*s).keys.iter().any(Key::reads_rule_l3);
            !reads_l3 && (!table_has_dhcp || dhcp_edge(s))
        })
    }

    fn walk(&self, table: u8, regs: Regs, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) -> Result<(), String> {
        if path.len() > 64 {
            return Err(format!("{}: a path is longer than 64 tables (a loop?)", self.name));
        }
        let t = self.table(table).ok_or_else(|| format!("{}: goto to missing table {table}", self.name))?;
        let ok = |e: &Edge| e.requires.is_none_or(|(r, v)| regs.iter().any(|&(rr, vv)| rr == r && vv == v));
        let mut any_miss = false;
        for (kind, edges) in [(true, &t.hits), (false, &t.misses)] {
            for (i, e) in edges.iter().enumerate() {
                if !ok(e) {
                    continue;
                }
                if !kind {
                    // Only the first applicable miss edge fires (priority 1 with a register, then 0).
                    if any_miss {
                        continue;
                    }
                    any_miss = true;
                }
                let step = if kind { Step::Hit(table, i) } else { Step::Miss(table, i) };
                // Register states after the edge (LoadPort forks over every port).
                let mut states = vec![regs.clone()];
                for a in &e.acts {
                    let values: Vec<(u8, u32)> = match *a {
                        Act::Load(r, v) => vec![(r, v)],
                        Act::LoadPort(r) => (1..=N_PORTS).map(|p| (r, p)).collect(),
                        _ => continue,
                    };
                    states = states
                        .iter()
                        .flat_map(|s| {
                            values.iter().map(move |&(r, v)| {
                                let mut s2 = s.clone();
                                s2.retain(|&(rr, _)| rr != r);
                                s2.push((r, v));
                                s2.sort();
                                s2
                            })
                        })
                        .collect();
                }
                path.push(step);
                for regs2 in states {
                    match e.next {
                        Next::Table(n) => {
                            if n <= table {
                                return Err(format!("{}: table {table} goes back to table {n}", self.name));
                            }
                            self.walk(n, regs2, path, out)?
                        }
                        _ => out.push(path.clone()),
                    }
                }
                path.pop();
            }
        }
        if !any_miss {
            return Err(format!("{}: table {} ({}) has no miss rule for registers {:?}", self.name, t.id, t.name, regs));
        }
        Ok(())
    }

    /// Distinct table sequences (the paper's "traversals").
    pub fn traversals(&self) -> Result<BTreeSet<Vec<u8>>, String> {
        Ok(self.edge_paths()?.iter().map(|p| p.iter().map(|s| s.table()).collect()).collect())
    }
}
