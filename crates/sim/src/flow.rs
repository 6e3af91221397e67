//! What a workload's flow is: its endpoints, start, size and kind. Hosts run flows and the
//! trace driver (`apps`) starts them; both name them from here.

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
