//! The event loop: pops events in (time, sequence) order and hands them to nodes.
//!
//! Nodes are trait objects (hosts, switches, anything that receives packets); the loop owns them
//! apart from the [`Network`] so each handler gets `&mut self` and `&mut Network` together.

use std::any::Any;

use crate::metrics::Conservation;
use crate::network::{Event, Network, NodeId, PortId};
use crate::packet::PacketId;

/// Anything attached to the network that receives packets.
pub trait Node: Any {
    /// A packet arrived on `in_port` (global id; `net.ports[in_port].local` is the node's index).
    fn receive(&mut self, net: &mut Network, me: NodeId, in_port: PortId, pkt: PacketId);
    /// A timer this node scheduled fired.
    fn timer(&mut self, _net: &mut Network, _me: NodeId, _token: u64) {}
    /// `port` finished sending and its queue is empty (only if the node asked for it).
    fn port_idle(&mut self, _net: &mut Network, _me: NodeId, _port: PortId) {}
    /// The run is ending: end (drop with a reason) any packet the node still holds.
    fn finish(&mut self, _net: &mut Network, _me: NodeId) {}
}

/// Something that starts flows on hosts at their start times (see [`crate::apps`]).
pub trait FlowDriver {
    /// Start flow `index`; return the start time of the next flow to schedule, if any.
    fn start(&mut self, net: &mut Network, nodes: &mut [Box<dyn Node>], index: u32) -> Option<(u64, u32)>;
    /// The first flow to schedule.
    fn first(&self) -> Option<(u64, u32)>;
}

/// A network plus its nodes: the whole simulation.
pub struct Simulator {
    pub net: Network,
    pub nodes: Vec<Box<dyn Node>>,
    pub driver: Option<Box<dyn FlowDriver>>,
}

impl Simulator {
    pub fn new(net: Network, nodes: Vec<Box<dyn Node>>) -> Self {
        assert_eq!(net.nodes.len(), nodes.len(), "one Node per network node");
        Simulator { net, nodes, driver: None }
    }

    pub fn set_driver(&mut self, driver: Box<dyn FlowDriver>) {
        if let Some((t, i)) = driver.first() {
            self.net.schedule(t, Event::FlowStart { index: i });
        }
        self.driver = Some(driver);
    }

    pub fn node<T: 'static>(&self, id: NodeId) -> Option<&T> {
        let node: &dyn Any = &*self.nodes[id as usize]; // trait upcasting: a `Node` is `Any`
        node.downcast_ref::<T>()
    }

    pub fn node_mut<T: 'static>(&mut self, id: NodeId) -> Option<&mut T> {
        let node: &mut dyn Any = &mut *self.nodes[id as usize];
        node.downcast_mut::<T>()
    }

    /// Run until no events remain or simulated time passes `until_ps`. `progress` is called with
    /// the current time every `progress_every` events.
    pub fn run_until(&mut self, until_ps: u64, progress: &mut dyn FnMut(u64)) {
        const PROGRESS_EVERY: u64 = 1 << 18;
        let mut countdown = PROGRESS_EVERY;
        self.net.begin_run(until_ps);
        while let Some(ev) = self.net.pop(until_ps) {
            match ev {
                Event::WireHead { port, pkt, wire_bytes } => {
                    if let Some((port, node)) = self.net.wire_head(port, pkt) {
                        let m = &mut self.net.metrics.nodes[node as usize];
                        m.rx_packets += 1;
                        m.rx_bytes += wire_bytes as u64;
                        self.nodes[node as usize].receive(&mut self.net, node, port, pkt);
                    }
                }
                Event::TxDone { port } => {
                    if self.net.tx_done(port) {
                        let node = self.net.ports[port as usize].node;
                        if self.net.nodes[node as usize].wants_port_idle {
                            self.nodes[node as usize].port_idle(&mut self.net, node, port);
                        }
                    }
                }
                Event::Timer { node, token } => {
                    self.nodes[node as usize].timer(&mut self.net, node, token);
                }
                Event::FlowStart { index } => {
                    if let Some(d) = self.driver.as_mut() {
                        if let Some((t, i)) = d.start(&mut self.net, &mut self.nodes, index) {
                            self.net.schedule(t, Event::FlowStart { index: i });
                        }
                    }
                }
            }
            countdown -= 1;
            if countdown == 0 {
                countdown = PROGRESS_EVERY;
                progress(self.net.now_ps());
            }
        }
        if self.net.pending_events() != 0 {
            self.net.set_now(until_ps);
        }
        self.net.end_run();
    }

    /// End the run: drop whatever is still in flight with a reason and check conservation.
    pub fn finish(&mut self) -> Conservation {
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.finish(&mut self.net, i as NodeId);
        }
        self.net.drain_in_flight();
        self.net.conservation()
    }
}
