//! What a run measures: packet fates (the conservation law), per-flow records, per-packet
//! latency and hops, per-node and per-port counters.
//!
//! Everything is preallocated or appended to columnar vectors; nothing here is on a slow path.

use crate::time::ps_to_us;

/// Why a packet ended without being delivered. Every drop has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The egress queue or the node's shared buffer was full.
    BufferOverflow = 0,
    TtlExpired,
    /// No route to the destination address.
    NoRoute,
    /// A data-plane program dropped it on purpose.
    Program,
    /// Arrived at a host that does not own the destination address.
    NotForThisHost,
    /// No socket or listener for it at the destination host.
    NoListener,
    /// Late segment for a connection that no longer exists.
    ConnectionClosed,
    /// A link fault injector dropped it.
    LinkLoss,
    /// Still queued or on a wire when the run was stopped by its time limit.
    InFlightAtEnd,
    /// A recirculating packet ran out of passes.
    RecirculationLimit,
    /// A host's virtual switch dropped it.
    Vswitch,
}

impl DropReason {
    pub const ALL: [DropReason; 11] = [
        DropReason::BufferOverflow,
        DropReason::TtlExpired,
        DropReason::NoRoute,
        DropReason::Program,
        DropReason::NotForThisHost,
        DropReason::NoListener,
        DropReason::ConnectionClosed,
        DropReason::LinkLoss,
        DropReason::InFlightAtEnd,
        DropReason::RecirculationLimit,
        DropReason::Vswitch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::BufferOverflow => "buffer_overflow",
            DropReason::TtlExpired => "ttl_expired",
            DropReason::NoRoute => "no_route",
            DropReason::Program => "program",
            DropReason::NotForThisHost => "not_for_this_host",
            DropReason::NoListener => "no_listener",
            DropReason::ConnectionClosed => "connection_closed",
            DropReason::LinkLoss => "link_loss",
            DropReason::InFlightAtEnd => "in_flight_at_end",
            DropReason::RecirculationLimit => "recirculation_limit",
            DropReason::Vswitch => "vswitch",
        }
    }
}

/// One flow's life: set by the traffic apps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowRecord {
    pub flow_id: u64,
    pub src_host: u32,
    pub dst_host: u32,
    pub size_bytes: u64,
    pub start_ps: u64,
    /// First packet of the flow (SYN for TCP) arriving at the destination host.
    pub first_arrival_ps: Option<u64>,
    /// All payload bytes delivered to the receiving application.
    pub complete_ps: Option<u64>,
    pub packets_received: u64,
}

impl FlowRecord {
    pub fn fct_ps(&self) -> Option<u64> {
        self.complete_ps.map(|c| c - self.start_ps)
    }
    pub fn first_packet_latency_ps(&self) -> Option<u64> {
        self.first_arrival_ps.map(|c| c - self.start_ps)
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct NodeCounters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
}

/// One line per port: a hop updates several of them (at FT16 scale the line is cold), and
/// unaligned they straddle two lines half the time.
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
pub struct PortCounters {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops: u64,
    pub ecn_marks: u64,
    pub max_queue_bytes: u64,
}

#[derive(Default)]
pub struct Metrics {
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped: [u64; DropReason::ALL.len()],
    /// Sum over delivered packets of creation-to-delivery latency and switch hops.
    pub latency_sum_ps: u128,
    pub hops_sum: u64,
    /// Per-packet records (latency_ps, hops) of delivered packets, when enabled.
    pub record_packets: bool,
    pub packet_latency_ps: Vec<u64>,
    pub packet_hops: Vec<u16>,
    pub flows: Vec<FlowRecord>,
    pub nodes: Vec<NodeCounters>,
    pub ports: Vec<PortCounters>,
    /// When the last packet was delivered (stale timers may run the clock on past it).
    pub last_delivery_ps: u64,
}

impl Metrics {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }

    pub fn dropped_by(&self, reason: DropReason) -> u64 {
        self.dropped[reason as usize]
    }

    pub fn mean_packet_latency_us(&self) -> f64 {
        if self.delivered_packets == 0 {
            return 0.0;
        }
        ps_to_us((self.latency_sum_ps / self.delivered_packets as u128) as u64)
    }

    pub fn mean_packet_hops(&self) -> f64 {
        if self.delivered_packets == 0 {
            return 0.0;
        }
        self.hops_sum as f64 / self.delivered_packets as f64
    }
}

/// The conservation law: every created packet is delivered, dropped with a reason, or still live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conservation {
    pub created: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub live: u64,
}

impl Conservation {
    pub fn ok(&self) -> bool {
        self.created == self.delivered + self.dropped && self.live == 0
    }
}

impl std::fmt::Display for Conservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "created {} = delivered {} + dropped {} + unaccounted {} (live {})",
            self.created,
            self.delivered,
            self.dropped,
            self.created as i128 - self.delivered as i128 - self.dropped as i128,
            self.live
        )
    }
}

/// Summary statistics of a sample, computed on a sorted copy.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest-rank on the sorted sample.
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        assert_eq!(percentile(&xs, 99.0), 99.0);
        assert_eq!(percentile(&xs, 50.0), 50.0);
        assert_eq!(percentile(&xs, 100.0), 100.0);
        assert_eq!(percentile(&[5.0], 99.0), 5.0);
    }
}
