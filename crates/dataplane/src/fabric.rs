//! Assembling a simulated datacenter: a topology's nodes become hosts and programmable
//! switches, routes are computed, and a trace of flows is attached. Systems pass a factory that
//! picks each switch's program by its role; everything else is shared.

use std::sync::Arc;

use innet_sim::apps::{FlowSpec, TraceDriver};
use innet_sim::engine::{Node, Simulator};
use innet_sim::host::{Host, HostAddr, HostConfig};
use innet_sim::network::{Network, NodeId};
use innet_sim::routing::Routing;
use innet_sim::topology::{Role, TopoNode, Topology};

use crate::{L3Forward, SimSwitch};

/// What a switch factory is told about the switch it builds.
pub struct SwitchSite<'a> {
    pub node: NodeId,
    pub topo_node: &'a TopoNode,
    pub switch_index: u32,
    pub routing: &'a Arc<Routing>,
    pub net: &'a Network,
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
    let mut nodes: Vec<Box<dyn Node>> = Vec::with_capacity(topo.nodes.len());
    for (id, n) in topo.nodes.iter().enumerate() {
        let node = id as NodeId;
        if n.role == Role::Host {
            let addr = HostAddr {
                node,
                host_index: n.host_index.expect("hosts have an index"),
                ip: n.ip,
                nic: net.port_id(node, 0),
            };
            nodes.push(Box::new(Host::new(addr, host_cfg.clone(), flows.clone())));
        } else {
            let site = SwitchSite {
                node,
                topo_node: n,
                switch_index: n.switch_index.expect("switches have an index"),
                routing: &routing,
                net: &net,
            };
            nodes.push(make_switch(site));
        }
    }
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
