//! Traffic descriptions and the driver that starts them: trace-driven flows (TCP transfers,
//! UDP packet trains, request/response RPCs) handed to hosts at their start times.

use std::sync::Arc;

use crate::engine::{FlowDriver, Node};
use crate::host::Host;
use crate::metrics::FlowRecord;
use crate::network::{Network, NodeId};

pub use crate::flow::{FlowKind, FlowSpec};

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
        let host: &mut dyn std::any::Any = &mut *nodes[node as usize];
        let host = host.downcast_mut::<Host>().expect("flow sources are hosts");
        host.start_flow(net, node, index, &spec);
        let next = index + 1;
        self.flows.get(next as usize).map(|f| (f.start_ps, next))
    }
}
