//! Helpers the SwitchVM end-to-end experiments share: a one-switch rack (a
//! `dataplane::fabric::Rack`), the SwitchVM tenant packet (Geneve with the DPF header), and
//! latency timelines in time bins.

use innet_dataplane::fabric::Rack;
use innet_registry::ExperimentError;
use innet_sim::metrics::percentile;
use innet_sim::packet::{Encap, Ipv4, Packet, Tunnel, IP_PROTO_UDP, L4};
use innet_sim::topology::TopologySpec;

use crate::machine::DpfPacket;

pub fn internal(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Invariant(e.to_string())
}

/// One switch and `hosts` hosts, links of `link_gbps`, a pass through the switch `pipeline_ns`.
pub fn rack(hosts: u32, link_gbps: f64, pipeline_ns: u64, seed: u64) -> Result<Rack, ExperimentError> {
    Rack::build(&TopologySpec { host_link_gbps: link_gbps, switch_pipeline_latency_ns: pipeline_ns, ..TopologySpec::rack(hosts) }, seed)
}

/// A UDP packet of a tenant: Geneve with the tenant's VNI and, when `dpf` is given, SwitchVM's
/// options (the invocation, code and stack).
pub fn tenant_packet(src: u32, dst: u32, ports: (u16, u16), payload_len: u32, vni: u32, dpf: Option<&DpfPacket>, lanes: u8) -> Result<Packet, ExperimentError> {
    let mut p = Packet::new(Ipv4::new(src, dst, IP_PROTO_UDP), L4::Udp { src_port: ports.0, dst_port: ports.1 }, payload_len);
    p.is_data = true;
    let options = match dpf {
        Some(d) => crate::encoding::encode(d, lanes).map_err(internal)?,
        None => Vec::new(),
    };
    p.tunnel = Some(Tunnel { outer: Ipv4::new(src, dst, IP_PROTO_UDP), encap: Encap::Geneve { src_port: 49152 ^ ports.0, vni, options } });
    Ok(p)
}

/// The SwitchVM stack a packet carries (empty when it has no SwitchVM options).
pub fn stack_of(p: &Packet, lanes: u8) -> Vec<u32> {
    match &p.tunnel {
        Some(Tunnel { encap: Encap::Geneve { options, .. }, .. }) => crate::encoding::decode(options, lanes).map(|d| d.stack).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Latency percentiles per time bin: (bin start s, count, p50 µs, p99 µs).
pub fn timeline(samples: &[(u64, f64)], bin_s: f64, end_s: f64) -> Vec<(f64, u64, f64, f64)> {
    let bins = (end_s / bin_s).ceil().max(1.0) as usize;
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); bins];
    for &(t_ps, lat) in samples {
        let b = ((t_ps as f64 / 1e12) / bin_s) as usize;
        if b < bins {
            per[b].push(lat);
        }
    }
    per.into_iter()
        .enumerate()
        .map(|(i, mut v)| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (i as f64 * bin_s, v.len() as u64, percentile(&v, 50.0), percentile(&v, 99.0))
        })
        .collect()
}

pub fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}
