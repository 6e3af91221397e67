//! Counters every part of a SwitchV2P run shares (hosts, gateways, switches): one `Rc<RefCell>`
//! per simulation, single-threaded like the simulator itself.

use std::cell::RefCell;
use std::rc::Rc;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct V2pStats {
    /// Tenant packets the VMs sent (first transmissions by the host stack; re-sends of
    /// misdelivered packets are not counted again).
    pub tenant_packets_sent: u64,
    /// Tenant packets delivered to their VM, and the switches they crossed in total.
    pub tenant_packets_delivered: u64,
    pub tenant_hops_total: u64,
    /// Sum over delivered tenant packets of (delivery − creation), for the average packet latency.
    pub tenant_latency_total_ps: u64,
    /// Packets a gateway processed (any packet arriving at a gateway).
    pub gateway_packets: u64,
    /// Cache hits that resolved a packet, per switch index, and those on a flow's first packet.
    pub hits: Vec<u64>,
    pub first_hits: Vec<u64>,
    /// Generated learning packets (gateway ToRs) and invalidation packets (ToRs).
    pub learning_packets: u64,
    /// Of the learning packets, those carrying a spilled entry rather than the packet's own.
    pub learning_packets_spilled: u64,
    pub invalidation_packets: u64,
    /// Invalidations a timestamp vector suppressed.
    pub invalidations_suppressed: u64,
    /// Packets that reached a server their VM had left, and when the last one did.
    pub misdelivered_packets: u64,
    pub last_misdelivered_ps: u64,
    /// Misdelivery tags ToRs added.
    pub misdelivery_tags: u64,
    /// Entries carried to downstream switches (evictions) and promoted from spines to cores.
    pub spills: u64,
    pub promotions: u64,
    /// Mapping insertions into switch caches, by learning source.
    pub inserts_source: u64,
    pub inserts_destination: u64,
    pub inserts_spill: u64,
    pub inserts_learning: u64,
    pub invalidated_entries: u64,
    /// Bluebird: packets through the switch CPU path, and those its queue dropped.
    pub cpu_packets: u64,
    pub cpu_drops: u64,
    /// Invariant violations (must stay 0): a packet resolved to a PIP that never held its VIP;
    /// a tenant packet ending anywhere but at its VM.
    pub resolved_to_foreign_pip: u64,
    pub tenant_packets_lost: u64,
}

pub type SharedStats = Rc<RefCell<V2pStats>>;

impl V2pStats {
    pub fn shared(num_switches: usize) -> SharedStats {
        Rc::new(RefCell::new(V2pStats {
            hits: vec![0; num_switches],
            first_hits: vec![0; num_switches],
            ..Default::default()
        }))
    }

    pub fn total_hits(&self) -> u64 {
        self.hits.iter().sum()
    }

    /// The paper's hit rate: the fraction of sent tenant packets that did not reach a gateway.
    pub fn hit_rate(&self) -> f64 {
        if self.tenant_packets_sent == 0 {
            return 0.0;
        }
        (1.0 - self.gateway_packets as f64 / self.tenant_packets_sent as f64).max(0.0)
    }
}
