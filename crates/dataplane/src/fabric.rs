//! Assembling a simulated network: a topology's nodes become hosts and programmable switches,
//! routes are computed, and a trace of flows is attached. Systems pass factories: a switch
//! factory that picks each switch's program by its role and, when their hosts are not the
//! standard [`Host`], a host factory ([`build_nodes`]). A datacenter with trace-driven hosts is
//! [`build_fabric`]; a one-switch rack whose hosts and switch the experiment builds is a [`Rack`].

use std::sync::Arc;

use innet_sim::apps::{FlowSpec, TraceDriver};
use innet_sim::engine::{Node, Simulator};
use innet_sim::host::{Host, HostAddr, HostConfig};
use innet_registry::ExperimentError;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::routing::Routing;
use innet_sim::topology::{Role, TopoNode, Topology, TopologySpec};

use crate::{L3Forward, SimSwitch};

/// What a switch factory is told about the switch it builds.
pub struct SwitchSite<'a> {
    pub node: NodeId,
    pub topo_node: &'a TopoNode,
    pub switch_index: u32,
    pub routing: &'a Arc<Routing>,
    pub net: &'a mut Network,
}

/// What a host factory is told about the host it builds.
pub struct HostSite<'a> {
    pub node: NodeId,
    pub host_index: u32,
    pub ip: u32,
    /// The host's NIC (its port 0).
    pub nic: PortId,
    pub net: &'a mut Network,
}

/// Every node of `topo`, in node order (the simulator's node ids): hosts from `make_host`,
/// switches from `make_switch`. Both get the network mutably (to schedule their first events).
pub fn build_nodes(
    topo: &Topology,
    net: &mut Network,
    routing: &Arc<Routing>,
    mut make_host: impl FnMut(HostSite<'_>) -> Box<dyn Node>,
    mut make_switch: impl FnMut(SwitchSite<'_>) -> Box<dyn Node>,
) -> Vec<Box<dyn Node>> {
    let mut nodes: Vec<Box<dyn Node>> = Vec::with_capacity(topo.nodes.len());
    for (id, n) in topo.nodes.iter().enumerate() {
        let node = id as NodeId;
        if n.role == Role::Host {
            let nic = net.port_id(node, 0);
            let host_index = n.host_index.expect("hosts have an index");
            nodes.push(make_host(HostSite { node, host_index, ip: n.ip, nic, net }));
        } else {
            let switch_index = n.switch_index.expect("switches have an index");
            nodes.push(make_switch(SwitchSite { node, topo_node: n, switch_index, routing, net }));
        }
    }
    nodes
}

/// A built simulation and the facts experiments need about it.
pub struct Fabric {
    pub sim: Simulator,
    pub topo: Topology,
    pub routing: Arc<Routing>,
    pub flows: Arc<Vec<FlowSpec>>,
}

/// Build hosts (with `host_cfg`) and switches (from `make_switch`), compute routes, and attach
/// `flows` (host indices refer to `topo.hosts`). Flow addresses of 0 default to the hosts' IPs.
pub fn build_fabric(
    topo: Topology,
    seed: u64,
    host_cfg: HostConfig,
    mut flows: Vec<FlowSpec>,
    mut make_switch: impl FnMut(SwitchSite<'_>) -> Box<dyn Node>,
) -> Fabric {
    let mut net = Network::new(seed);
    topo.instantiate(&mut net);
    let routing = Arc::new(Routing::compute(&topo, &net, seed));
    for f in &mut flows {
        if f.src_ip == 0 {
            f.src_ip = topo.nodes[topo.hosts[f.src_host as usize] as usize].ip;
        }
        if f.dst_ip == 0 {
            f.dst_ip = topo.nodes[topo.hosts[f.dst_host as usize] as usize].ip;
        }
    }
    let (driver, flows) = TraceDriver::new(flows, topo.hosts.clone(), &mut net);
    let host = |h: HostSite<'_>| -> Box<dyn Node> {
        let addr = HostAddr { node: h.node, host_index: h.host_index, ip: h.ip, nic: h.nic };
        Box::new(Host::new(addr, host_cfg.clone(), flows.clone()))
    };
    let nodes = build_nodes(&topo, &mut net, &routing, host, &mut make_switch);
    let mut sim = Simulator::new(net, nodes);
    sim.set_driver(Box::new(driver));
    Fabric {
        sim,
        topo,
        routing,
        flows,
    }
}

/// The default factory: every switch runs plain L3 forwarding.
pub fn l3_switch(site: SwitchSite<'_>) -> Box<dyn Node> {
    Box::new(SimSwitch::new(
        L3Forward::default(),
        site.switch_index,
        site.routing.clone(),
        site.net,
        site.node,
    ))
}

/// A one-switch rack (a `TopologySpec::rack`, with any link settings), its network and routes:
/// the rack-scale experiments (OrbitCache, SwitchVM) and the twin build their hosts and switch
/// on it with [`Rack::nodes`].
pub struct Rack {
    pub topo: Topology,
    pub net: Network,
    pub routing: Arc<Routing>,
    pub switch_node: NodeId,
    pub switch_index: u32,
}

impl Rack {
    /// The rack `spec` describes (its kind must be `rack`), its links instantiated and routes computed with `seed`.
    pub fn build(spec: &TopologySpec, seed: u64) -> Result<Rack, ExperimentError> {
        if spec.kind != "rack" {
            return Err(ExperimentError::bad_param("topology.kind", &spec.kind, "rack"));
        }
        let topo = Topology::build(spec, &[])?;
        let mut net = Network::new(seed);
        topo.instantiate(&mut net);
        let routing = Arc::new(Routing::compute(&topo, &net, seed));
        let switch_node = topo.tors[0];
        let switch_index = topo.nodes[switch_node as usize].switch_index.expect("a switch has an index");
        Ok(Rack { topo, net, routing, switch_node, switch_index })
    }

    /// The node of host `h`.
    pub fn host_node(&self, h: usize) -> NodeId {
        self.topo.hosts[h]
    }

    /// The IP of host `h`.
    pub fn ip(&self, h: usize) -> u32 {
        self.topo.nodes[self.topo.hosts[h] as usize].ip
    }

    /// Host index of a node, if it is a host.
    pub fn host_index(&self, node: NodeId) -> Option<usize> {
        self.topo.nodes[node as usize].host_index.map(|h| h as usize)
    }

    /// The rack's nodes in node order: each host from `make_host`, the switch from `make_switch`.
    pub fn nodes(
        &mut self,
        make_host: impl FnMut(HostSite<'_>) -> Box<dyn Node>,
        make_switch: impl FnMut(SwitchSite<'_>) -> Box<dyn Node>,
    ) -> Vec<Box<dyn Node>> {
        build_nodes(&self.topo, &mut self.net, &self.routing, make_host, make_switch)
    }
}
