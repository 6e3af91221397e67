//! Topology helpers (in the ns-3 sense): fat-tree, leaf-spine and single-rack builders that
//! describe nodes, roles, addresses and links, and turn that description into a [`Network`].
//!
//! Addresses: a host is 10.T1.T0.(i+1) where T = its ToR's index (16 bits) and i its slot under
//! the ToR; a switch is 11.S2.S1.S0 with S its switch index. Node ids put switches first (cores,
//! spines, ToRs), then servers, then extra hosts (e.g. gateways), as the SwitchV2P artifact does.

use serde::Deserialize;

use innet_registry::ExperimentError;
use crate::network::{LinkParams, Network, NodeId, PortId};
use crate::time::{PS_PER_NS, PS_PER_US};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Host,
    Tor,
    Spine,
    Core,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Host => "host",
            Role::Tor => "tor",
            Role::Spine => "spine",
            Role::Core => "core",
        }
    }
}

#[derive(Debug, Clone)]
pub struct TopoNode {
    pub role: Role,
    pub name: String,
    /// Pod of the node (0 for cores and for topologies without pods).
    pub pod: u32,
    pub ip: u32,
    /// For hosts: the ToR index (into `Topology::tors`) they hang off; for ToRs: their own index.
    pub tor: Option<u32>,
    /// For switches: index into `Topology::switches`.
    pub switch_index: Option<u32>,
    /// For hosts: index into `Topology::hosts`.
    pub host_index: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
pub struct TopoLink {
    pub a: NodeId,
    pub b: NodeId,
    pub link: LinkParams,
}

/// The kinds of topology the builders make, as read from TOML or `--set`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// "fattree", "leafspine" or "rack".
    pub kind: String,
    #[serde(default = "d_pods")]
    pub pods: u32,
    #[serde(default = "d_tors_per_pod")]
    pub tors_per_pod: u32,
    #[serde(default = "d_servers_per_tor")]
    pub servers_per_tor: u32,
    #[serde(default = "d_spines_per_pod")]
    pub spines_per_pod: u32,
    #[serde(default = "d_cores")]
    pub cores: u32,
    /// Leaf-spine: number of spines (every leaf connects to every spine).
    #[serde(default = "d_spines")]
    pub spines: u32,
    #[serde(default = "d_host_gbps")]
    pub host_link_gbps: f64,
    #[serde(default = "d_fabric_gbps")]
    pub fabric_link_gbps: f64,
    #[serde(default = "d_delay_ns")]
    pub link_delay_ns: u64,
    #[serde(default = "d_switch_buffer")]
    pub switch_buffer_bytes: u64,
    #[serde(default = "d_host_buffer")]
    pub host_buffer_bytes: u64,
    #[serde(default)]
    pub ecn_threshold_bytes: Option<u64>,
    #[serde(default)]
    pub switch_pipeline_latency_ns: u64,
    /// Every switch gets one recirculation port (its last local port) looped back to itself.
    #[serde(default = "d_recirc_gbps")]
    pub recirculation_gbps: f64,
    #[serde(default)]
    pub recirculation_latency_ns: u64,
}

fn d_pods() -> u32 { 8 }
fn d_tors_per_pod() -> u32 { 4 }
fn d_servers_per_tor() -> u32 { 4 }
fn d_spines_per_pod() -> u32 { 4 }
fn d_cores() -> u32 { 16 }
fn d_spines() -> u32 { 4 }
fn d_host_gbps() -> f64 { 100.0 }
fn d_fabric_gbps() -> f64 { 400.0 }
fn d_delay_ns() -> u64 { 1_000 }
fn d_switch_buffer() -> u64 { 32 << 20 }
fn d_host_buffer() -> u64 { 32 << 20 }
fn d_recirc_gbps() -> f64 { 100.0 }

impl TopologySpec {
    /// FT8-10K as SwitchV2P uses it: 8 pods × 4 ToRs × 4 servers, 4 spines per pod, 16 cores.
    pub fn ft8() -> Self {
        Self::fattree(8, 4, 4, 4, 16)
    }

    /// FT16-400K: 50 pods × 8 ToRs × 32 servers (12,800 servers), 8 spines per pod, 16 cores.
    pub fn ft16_400k() -> Self {
        Self::fattree(50, 8, 32, 8, 16)
    }

    /// The classic k-ary fat-tree (k pods of k/2 ToRs and k/2 spines, k/2 servers per ToR).
    pub fn k_ary(k: u32) -> Self {
        Self::fattree(k, k / 2, k / 2, k / 2, (k / 2) * (k / 2))
    }

    pub fn fattree(pods: u32, tors_per_pod: u32, servers_per_tor: u32, spines_per_pod: u32, cores: u32) -> Self {
        TopologySpec {
            kind: "fattree".into(),
            pods,
            tors_per_pod,
            servers_per_tor,
            spines_per_pod,
            cores,
            spines: d_spines(),
            host_link_gbps: d_host_gbps(),
            fabric_link_gbps: d_fabric_gbps(),
            link_delay_ns: d_delay_ns(),
            switch_buffer_bytes: d_switch_buffer(),
            host_buffer_bytes: d_host_buffer(),
            ecn_threshold_bytes: None,
            switch_pipeline_latency_ns: 0,
            recirculation_gbps: d_recirc_gbps(),
            recirculation_latency_ns: 0,
        }
    }

    pub fn leaf_spine(leaves: u32, spines: u32, servers_per_leaf: u32) -> Self {
        TopologySpec { kind: "leafspine".into(), pods: 1, tors_per_pod: leaves, servers_per_tor: servers_per_leaf, spines, ..Self::ft8() }
    }

    pub fn rack(hosts: u32) -> Self {
        TopologySpec { kind: "rack".into(), pods: 1, tors_per_pod: 1, servers_per_tor: hosts, ..Self::ft8() }
    }

    /// Check the numbers make a buildable topology; errors name the field.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        match self.kind.as_str() {
            "fattree" | "leafspine" | "rack" => {}
            other => {
                return Err(ExperimentError::bad_param("topology.kind", other, "one of fattree, leafspine, rack"))
            }
        }
        let positive = [
            ("pods", self.pods),
            ("tors_per_pod", self.tors_per_pod),
            ("servers_per_tor", self.servers_per_tor),
        ];
        for (f, v) in positive {
            if v == 0 {
                return Err(ExperimentError::param(&format!("topology.{f}"), "must be at least 1"));
            }
        }
        if self.kind == "fattree" {
            if self.spines_per_pod == 0 || self.cores == 0 {
                return Err(ExperimentError::param("topology.cores", "a fat-tree needs at least one spine per pod and one core"));
            }
            if self.cores % self.spines_per_pod != 0 {
                return Err(ExperimentError::param("topology.cores", format!(
                        "must be a multiple of spines_per_pod ({}) so every spine reaches cores/spines_per_pod cores; got {}",
                        self.spines_per_pod, self.cores
                    )));
            }
        }
        if self.kind == "leafspine" && self.spines == 0 {
            return Err(ExperimentError::param("topology.spines", "must be at least 1"));
        }
        if self.servers_per_tor > 250 {
            return Err(ExperimentError::param("topology.servers_per_tor", "at most 250 hosts fit under one ToR's /24"));
        }
        if self.num_tors() > 65_535 {
            return Err(ExperimentError::param("topology.pods", "at most 65,535 ToRs"));
        }
        for (f, v) in [
            ("host_link_gbps", self.host_link_gbps),
            ("fabric_link_gbps", self.fabric_link_gbps),
            ("recirculation_gbps", self.recirculation_gbps),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(ExperimentError::bad_param(&format!("topology.{f}"), v, "a positive number of Gbps"));
            }
        }
        if self.switch_buffer_bytes < 2048 || self.host_buffer_bytes < 2048 {
            return Err(ExperimentError::param("topology.switch_buffer_bytes", "buffers must hold at least one full frame (2048 bytes)"));
        }
        Ok(())
    }

    pub fn num_tors(&self) -> u32 {
        match self.kind.as_str() {
            "rack" => 1,
            "leafspine" => self.tors_per_pod,
            _ => self.pods * self.tors_per_pod,
        }
    }

    pub fn num_servers(&self) -> u32 {
        self.num_tors() * self.servers_per_tor
    }

    pub fn host_link(&self) -> LinkParams {
        LinkParams {
            bandwidth_bps: (self.host_link_gbps * 1e9).round() as u64,
            delay_ps: self.link_delay_ns * PS_PER_NS,
            ecn_threshold_bytes: self.ecn_threshold_bytes,
            queue_limit_bytes: None,
        }
    }

    /// The loopback link of a switch's recirculation port.
    pub fn recirculation_link(&self) -> LinkParams {
        LinkParams {
            bandwidth_bps: (self.recirculation_gbps * 1e9).round() as u64,
            delay_ps: self.recirculation_latency_ns * PS_PER_NS,
            ecn_threshold_bytes: None,
            queue_limit_bytes: None,
        }
    }

    pub fn fabric_link(&self) -> LinkParams {
        LinkParams { bandwidth_bps: (self.fabric_link_gbps * 1e9).round() as u64, ..self.host_link() }
    }
}

/// A built description: nodes with roles and addresses, and links.
#[derive(Debug, Clone)]
pub struct Topology {
    pub spec: TopologySpec,
    pub nodes: Vec<TopoNode>,
    pub links: Vec<TopoLink>,
    /// Node ids of switches, in switch-index order.
    pub switches: Vec<NodeId>,
    /// Node ids of ToRs, in ToR-index order.
    pub tors: Vec<NodeId>,
    /// Node ids of hosts (servers first, then extra hosts), in host-index order.
    pub hosts: Vec<NodeId>,
    /// Number of servers (the first hosts); the rest are extra hosts.
    pub num_servers: u32,
}

pub fn host_ip(tor: u32, slot: u32) -> u32 {
    (10 << 24) | (tor << 8) | (slot + 1)
}

pub fn switch_ip(switch_index: u32) -> u32 {
    (11 << 24) | switch_index
}

pub fn fmt_ip(ip: u32) -> String {
    std::net::Ipv4Addr::from(ip).to_string()
}

impl Topology {
    /// Build the description for `spec`, with `extra_hosts` (ToR index, count) appended under
    /// the given ToRs after the servers (e.g. SwitchV2P's gateways).
    pub fn build(spec: &TopologySpec, extra_hosts: &[(u32, u32)]) -> Result<Topology, ExperimentError> {
        spec.validate()?;
        let num_tors = spec.num_tors();
        for &(tor, count) in extra_hosts {
            if tor >= num_tors {
                return Err(ExperimentError::param("extra_hosts", format!("ToR {tor} does not exist (there are {num_tors})")));
            }
            if spec.servers_per_tor + count > 250 {
                return Err(ExperimentError::param("extra_hosts", format!("ToR {tor} would have more than 250 hosts")));
            }
        }
        let mut t = Topology {
            spec: spec.clone(),
            nodes: Vec::new(),
            links: Vec::new(),
            switches: Vec::new(),
            tors: Vec::new(),
            hosts: Vec::new(),
            num_servers: spec.num_servers(),
        };
        let host_link = spec.host_link();
        let fabric = spec.fabric_link();
        let add_switch = |t: &mut Topology, role: Role, pod: u32, name: String| -> NodeId {
            let id = t.nodes.len() as NodeId;
            let si = t.switches.len() as u32;
            t.nodes.push(TopoNode {
                role,
                name,
                pod,
                ip: switch_ip(si),
                tor: None,
                switch_index: Some(si),
                host_index: None,
            });
            t.switches.push(id);
            if role == Role::Tor {
                let ti = t.tors.len() as u32;
                t.nodes[id as usize].tor = Some(ti);
                t.tors.push(id);
            }
            id
        };
        match spec.kind.as_str() {
            "fattree" => {
                let cores: Vec<NodeId> =
                    (0..spec.cores).map(|c| add_switch(&mut t, Role::Core, 0, format!("core{c}"))).collect();
                let mut spines = Vec::new();
                for p in 0..spec.pods {
                    for s in 0..spec.spines_per_pod {
                        spines.push(add_switch(&mut t, Role::Spine, p, format!("spine{p}.{s}")));
                    }
                }
                for p in 0..spec.pods {
                    for r in 0..spec.tors_per_pod {
                        add_switch(&mut t, Role::Tor, p, format!("tor{p}.{r}"));
                    }
                }
                let per_spine = spec.cores / spec.spines_per_pod;
                for p in 0..spec.pods {
                    for s in 0..spec.spines_per_pod {
                        let spine = spines[(p * spec.spines_per_pod + s) as usize];
                        for r in 0..spec.tors_per_pod {
                            let tor = t.tors[(p * spec.tors_per_pod + r) as usize];
                            t.links.push(TopoLink { a: tor, b: spine, link: fabric });
                        }
                        for c in 0..per_spine {
                            t.links.push(TopoLink { a: spine, b: cores[(s * per_spine + c) as usize], link: fabric });
                        }
                    }
                }
            }
            "leafspine" => {
                let spines: Vec<NodeId> =
                    (0..spec.spines).map(|s| add_switch(&mut t, Role::Spine, 0, format!("spine{s}"))).collect();
                for l in 0..spec.tors_per_pod {
                    let leaf = add_switch(&mut t, Role::Tor, 0, format!("leaf{l}"));
                    for &s in &spines {
                        t.links.push(TopoLink { a: leaf, b: s, link: fabric });
                    }
                }
            }
            _ => {
                add_switch(&mut t, Role::Tor, 0, "tor0".into());
            }
        }
        // Servers, then extra hosts.
        let mut slots_used = vec![spec.servers_per_tor; num_tors as usize];
        let add_host = |t: &mut Topology, tor: u32, slot: u32, name: String| {
            let id = t.nodes.len() as NodeId;
            let tor_node = t.tors[tor as usize];
            let pod = t.nodes[tor_node as usize].pod;
            t.nodes.push(TopoNode {
                role: Role::Host,
                name,
                pod,
                ip: host_ip(tor, slot),
                tor: Some(tor),
                switch_index: None,
                host_index: Some(t.hosts.len() as u32),
            });
            t.hosts.push(id);
            t.links.push(TopoLink { a: id, b: tor_node, link: host_link });
        };
        for tor in 0..num_tors {
            for s in 0..spec.servers_per_tor {
                add_host(&mut t, tor, s, format!("host{}", tor * spec.servers_per_tor + s));
            }
        }
        for &(tor, count) in extra_hosts {
            for _ in 0..count {
                let slot = slots_used[tor as usize];
                slots_used[tor as usize] += 1;
                add_host(&mut t, tor, slot, format!("extra{}.{}", tor, slot));
            }
        }
        Ok(t)
    }

    /// Host index for an address, if it names a host of this topology.
    pub fn host_by_ip(&self, ip: u32) -> Option<u32> {
        if ip >> 24 != 10 {
            return None;
        }
        let tor = (ip >> 8) & 0xFFFF;
        let slot = (ip & 0xFF).checked_sub(1)?;
        let tor_node = *self.tors.get(tor as usize)?;
        // Hosts of a ToR are its links to Role::Host nodes; search is fine off the hot path.
        self.links.iter().find_map(|l| {
            let h = if l.b == tor_node { l.a } else { return None };
            let n = &self.nodes[h as usize];
            (n.role == Role::Host && n.ip == host_ip(tor, slot)).then(|| n.host_index.unwrap())
        })
    }

    /// Create the network: nodes in id order, each node's ports in the order its links were
    /// listed, and for a switch one more port last, its recirculation port. Returns the network and, per link, the two port ids (a side, b side).
    pub fn instantiate(&self, net: &mut Network) -> Vec<(PortId, PortId)> {
        let mut incident: Vec<Vec<(usize, bool)>> = vec![Vec::new(); self.nodes.len()];
        for (i, l) in self.links.iter().enumerate() {
            incident[l.a as usize].push((i, true));
            incident[l.b as usize].push((i, false));
        }
        let mut ends = vec![(0 as PortId, 0 as PortId); self.links.len()];
        let pipeline_ps = self.spec.switch_pipeline_latency_ns * PS_PER_NS;
        for (id, n) in self.nodes.iter().enumerate() {
            let (buf, ingress) = if n.role == Role::Host {
                (self.spec.host_buffer_bytes, 0)
            } else {
                (self.spec.switch_buffer_bytes, pipeline_ps)
            };
            let nid = net.add_node(n.name.clone(), buf, ingress);
            debug_assert_eq!(nid as usize, id);
            for &(li, is_a) in &incident[id] {
                let p = net.add_ports(nid, 1, self.links[li].link);
                if is_a {
                    ends[li].0 = p;
                } else {
                    ends[li].1 = p;
                }
            }
            if n.role == Role::Host {
                net.nodes[nid as usize].wants_port_idle = true;
            } else {
                // The recirculation port: its peer is itself (Port::peer defaults to the port).
                net.add_ports(nid, 1, self.spec.recirculation_link());
            }
        }
        for &(a, b) in &ends {
            net.connect_pair(a, b);
        }
        ends
    }

    pub fn role(&self, node: NodeId) -> Role {
        self.nodes[node as usize].role
    }
}

/// Default base round-trip time of the longest path (for documentation and timeouts): 2 × hops
/// × (link delay), ignoring serialization.
pub fn base_rtt_ps(spec: &TopologySpec) -> u64 {
    let hops = match spec.kind.as_str() {
        "fattree" => 6,
        "leafspine" => 4,
        _ => 2,
    };
    2 * hops * spec.link_delay_ns * PS_PER_NS
}

#[allow(dead_code)]
const _: u64 = PS_PER_US;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ft8_has_the_papers_shape() {
        let t = Topology::build(&TopologySpec::ft8(), &[]).unwrap();
        let count = |r| t.nodes.iter().filter(|n| n.role == r).count();
        assert_eq!(count(Role::Core), 16);
        assert_eq!(count(Role::Spine), 32);
        assert_eq!(count(Role::Tor), 32);
        assert_eq!(count(Role::Host), 128);
        // Every spine has 4 ToR links and 4 core links; every core 8 spine links (one per pod).
        let degree = |n: NodeId| t.links.iter().filter(|l| l.a == n || l.b == n).count();
        for (i, n) in t.nodes.iter().enumerate() {
            match n.role {
                Role::Spine => assert_eq!(degree(i as NodeId), 8),
                Role::Core => assert_eq!(degree(i as NodeId), 8),
                Role::Tor => assert_eq!(degree(i as NodeId), 8),
                Role::Host => assert_eq!(degree(i as NodeId), 1),
            }
        }
        // Artifact numbering: cores 0-15, spines 16-47, ToRs 48-79.
        assert_eq!(t.tors[0], 48);
        assert_eq!(t.hosts[0], 80);
    }

    #[test]
    fn ft16_400k_counts() {
        let s = TopologySpec::ft16_400k();
        let t = Topology::build(&s, &[]).unwrap();
        assert_eq!(t.num_servers, 12_800);
        assert_eq!(t.switches.len(), 816);
    }

    #[test]
    fn extra_hosts_and_addresses() {
        let t = Topology::build(&TopologySpec::ft8(), &[(0, 10), (31, 10)]).unwrap();
        assert_eq!(t.hosts.len(), 148);
        let gw = t.hosts[128];
        assert_eq!(fmt_ip(t.nodes[gw as usize].ip), "10.0.0.5");
        assert_eq!(t.host_by_ip(host_ip(31, 13)), Some(147));
        assert_eq!(t.host_by_ip(host_ip(31, 14)), None);
    }

    #[test]
    fn specs_read_from_toml_and_unknown_fields_are_named() {
        let s: TopologySpec = toml::from_str("kind = \"leafspine\"\ntors_per_pod = 6\nspines = 3\nservers_per_tor = 2\n").unwrap();
        let t = Topology::build(&s, &[]).unwrap();
        assert_eq!((t.tors.len(), t.switches.len(), t.hosts.len()), (6, 9, 12));
        // Every leaf reaches every spine.
        assert_eq!(t.links.iter().filter(|l| t.role(l.b) == Role::Spine).count(), 18);
        let e = toml::from_str::<TopologySpec>("kind = \"rack\"\nhosts = 4\n").unwrap_err().to_string();
        assert!(e.contains("hosts") && e.contains("unknown field"), "{e}");
        let r = Topology::build(&TopologySpec::rack(5), &[]).unwrap();
        assert_eq!((r.switches.len(), r.hosts.len(), r.links.len()), (1, 5, 5));
    }

    #[test]
    fn bad_specs_name_the_field() {
        let mut s = TopologySpec::ft8();
        s.cores = 10;
        let e = Topology::build(&s, &[]).unwrap_err().to_string();
        assert!(e.contains("topology.cores"), "{e}");
        s = TopologySpec::ft8();
        s.kind = "torus".into();
        assert!(Topology::build(&s, &[]).unwrap_err().to_string().contains("topology.kind"));
    }
}
