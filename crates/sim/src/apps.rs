//! Traffic descriptions and the driver that starts them: trace-driven flows (TCP transfers,
//! UDP packet trains, request/response RPCs) handed to hosts at their start times.

use std::sync::Arc;

use crate::engine::{FlowDriver, Node};
use crate::host::Host;
use crate::metrics::FlowRecord;
use crate::network::{Network, NodeId};

/// What a flow does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlowKind {
    /// One TCP connection sending `size_bytes` from src to dst, then closing.
    Tcp,
    /// ceil(size / payload) UDP packets of `payload_bytes`; `interval_ps` = 0 sends at line rate
    /// (the NIC pulls the next packet when it goes idle), otherwise one packet per interval.
    Udp { payload_bytes: u32, interval_ps: u64 },
    /// A TCP connection carrying one request of `size_bytes` and a response of `response_bytes`;
    /// completion is when the client has the whole response.
    Rpc { response_bytes: u64 },
}

/// One flow of a workload, between host indices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpec {
    pub src_host: u32,
    pub dst_host: u32,
    /// Addresses the sender uses; default to the hosts' own addresses (set them for VMs).
    pub src_ip: u32,
    pub dst_ip: u32,
    pub start_ps: u64,
    pub size_bytes: u64,
    pub kind: FlowKind,
}

impl FlowSpec {
    pub fn udp_packets(&self) -> u64 {
        match self.kind {
            FlowKind::Udp { payload_bytes, .. } => self.size_bytes.div_ceil(payload_bytes as u64).max(1),
            _ => 0,
        }
    }
}

/// Starts flows in start-time order; flow index = position in the (sorted) list = flow id.
pub struct TraceDriver {
    pub flows: Arc<Vec<FlowSpec>>,
    /// Node id of each host index.
    pub host_nodes: Vec<NodeId>,
}

impl TraceDriver {
    /// Sorts by start time (stable) and registers a flow record for each flow in `net`.
    pub fn new(mut flows: Vec<FlowSpec>, host_nodes: Vec<NodeId>, net: &mut Network) -> (Self, Arc<Vec<FlowSpec>>) {
        flows.sort_by_key(|f| f.start_ps);
        net.metrics.flows = flows
            .iter()
            .enumerate()
            .map(|(i, f)| FlowRecord {
                flow_id: i as u64,
                src_host: f.src_host,
                dst_host: f.dst_host,
                size_bytes: f.size_bytes,
                start_ps: f.start_ps,
                first_arrival_ps: None,
                complete_ps: None,
                packets_received: 0,
                last_arrival_ps: 0,
            })
            .collect();
        let flows = Arc::new(flows);
        (TraceDriver { flows: flows.clone(), host_nodes }, flows)
    }
}

impl FlowDriver for TraceDriver {
    fn first(&self) -> Option<(u64, u32)> {
        self.flows.first().map(|f| (f.start_ps, 0))
    }

    fn start(&mut self, net: &mut Network, nodes: &mut [Box<dyn Node>], index: u32) -> Option<(u64, u32)> {
        let spec = self.flows[index as usize];
        let node = self.host_nodes[spec.src_host as usize];
        let host = nodes[node as usize]
            .as_any_mut()
            .downcast_mut::<Host>()
            .expect("flow sources are hosts");
        host.start_flow(net, node, index, &spec);
        let next = index + 1;
        self.flows.get(next as usize).map(|f| (f.start_ps, next))
    }
}
