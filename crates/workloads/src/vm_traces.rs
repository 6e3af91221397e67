//! Generated VM-level traces (`src_vm,dst_vm,ts_ns,flow_id,size_bytes` rows) for VM-to-VM
//! address translation experiments (SwitchV2P's): Poisson flows with CDF sizes spread over VMs,
//! request/response microbursts with a hot destination set, 8K video streams, an Alibaba-like
//! microservice call trace (the real one is read by [`crate::alibaba_callgraph`]) and an
//! incast. Each generator is seeded and deterministic; bad parameters are errors that say what
//! was expected.

use rand::{Rng, SeedableRng};

use crate::trace::TraceRow;
use crate::{FlowSizeCdf, Until};

/// Payload of one UDP packet in the UDP traces (the SwitchV2P artifact's UDP mode).
pub const UDP_PAYLOAD_BYTES: u32 = 64;

/// Microbursts: short trains of UDP packets (64 B each, one row per packet, the burst's rows
/// sharing a flow id). Exchanges start as a Poisson process between a uniformly random client VM
/// and a VM of a hot set (destination reuse). With `replies` (the default; the paper's sources
/// measure microbursts as request/response traffic) the client sends a one-packet request (odd
/// flow id) and the server answers `reply_after_us` later with the burst (the next, even flow
/// id); without, the burst goes from the client to the hot VM (one-directional). A burst lasts a
/// log-normal time calibrated so its 99th percentile is `p99_burst_us` (the paper: 158 µs) and
/// sends one packet every `gap_ns`.
#[derive(Debug, Clone)]
pub struct MicroburstSpec {
    pub bursts_per_ms: f64,
    pub median_burst_us: f64,
    pub p99_burst_us: f64,
    pub gap_ns: u64,
    /// VMs that receive bursts (the first ones of a seeded shuffle).
    pub hot_destinations: u32,
    /// Popularity skew among them: Zipf exponent (0 = uniform).
    pub zipf_exponent: f64,
    /// Request/response exchanges (the burst is the reply) instead of one-directional bursts.
    pub replies: bool,
    /// Server time between a request's send and the reply burst's start: longer than a request's
    /// path through a gateway (40 µs + ~12 µs), so the reply follows the request's arrival.
    pub reply_after_us: f64,
}

impl Default for MicroburstSpec {
    fn default() -> Self {
        MicroburstSpec { bursts_per_ms: 2_000.0, median_burst_us: 20.0, p99_burst_us: 158.0, gap_ns: 2_000, hot_destinations: 4_096, zipf_exponent: 0.0, replies: true, reply_after_us: 60.0 }
    }
}

/// The standard normal's 99th percentile.
const Z99: f64 = 2.326_347_874;

pub fn microbursts(spec: &MicroburstSpec, vms: u32, duration_ns: u64, seed: u64) -> Result<Vec<TraceRow>, String> {
    if vms < 2 || spec.hot_destinations == 0 || spec.gap_ns == 0 || !(spec.bursts_per_ms > 0.0) {
        return Err("microbursts need at least 2 VMs, a positive burst rate, gap and hot set".into());
    }
    if !(spec.reply_after_us >= 0.0 && spec.reply_after_us.is_finite()) {
        return Err("microbursts need a reply delay >= 0".into());
    }
    if !(spec.p99_burst_us > spec.median_burst_us && spec.median_burst_us > 0.0) {
        return Err("microbursts need 0 < median burst < p99 burst".into());
    }
    let sigma = (spec.p99_burst_us / spec.median_burst_us).ln() / Z99;
    let dur = rand_distr::LogNormal::new(spec.median_burst_us.ln(), sigma).map_err(|e| e.to_string())?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6d62);
    let hot = shuffled_prefix(vms, spec.hot_destinations.min(vms), &mut rng);
    let mean_gap_ns = 1e6 / spec.bursts_per_ms;
    let zipf = (spec.zipf_exponent > 0.0)
        .then(|| rand_distr::Zipf::new(hot.len() as u64, spec.zipf_exponent))
        .transpose()
        .map_err(|e| format!("microburst skew: {e}"))?;
    let mut rows = Vec::new();
    let mut t = 0.0f64;
    for id in 1u64.. {
        t += -(1.0 - rng.gen::<f64>()).ln() * mean_gap_ns;
        if t as u64 >= duration_ns {
            break;
        }
        let dst = match &zipf {
            Some(z) => hot[rand_distr::Distribution::<f64>::sample(z, &mut rng) as usize - 1],
            None => hot[rng.gen_range(0..hot.len())],
        };
        let mut src = rng.gen_range(0..vms);
        while src == dst {
            src = rng.gen_range(0..vms);
        }
        let len_ns = (rand_distr::Distribution::sample(&dur, &mut rng) * 1000.0) as u64;
        let packets = (len_ns / spec.gap_ns).max(1);
        let (from, to, start, flow_id) = if spec.replies {
            rows.push(TraceRow { src_vm: src, dst_vm: dst, ts_ns: t as u64, flow_id: 2 * id - 1, size_bytes: UDP_PAYLOAD_BYTES as u64 });
            (dst, src, t as u64 + (spec.reply_after_us * 1000.0) as u64, 2 * id)
        } else {
            (src, dst, t as u64, id)
        };
        for k in 0..packets {
            rows.push(TraceRow { src_vm: from, dst_vm: to, ts_ns: start + k * spec.gap_ns, flow_id, size_bytes: UDP_PAYLOAD_BYTES as u64 });
        }
    }
    rows.sort_by_key(|r| r.ts_ns);
    Ok(rows)
}

/// The first `n` of a seeded shuffle of `0..total`.
fn shuffled_prefix(total: u32, n: u32, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<u32> {
    let mut v: Vec<u32> = (0..total).collect();
    for i in 0..n as usize {
        let j = rng.gen_range(i..v.len());
        v.swap(i, j);
    }
    v.truncate(n as usize);
    v
}

/// 8K video (the paper's Video trace, after the artifact's): `senders` flows from the first VM of
/// distinct servers to a VM of other distinct servers, each destination used once (no reuse),
/// 48 Mbps of 1,000 B frames = one packet every 166.667 µs (sent as 64 B UDP packets, as the
/// artifact's UDP mode), flows starting uniformly within the first 4.8 ms.
pub fn video(servers: u32, vms_per_server: u32, senders: u32, duration_ns: u64, seed: u64) -> Result<Vec<TraceRow>, String> {
    if servers < 2 * senders {
        return Err(format!("video needs {} servers for {senders} senders and receivers, the network has {servers}", 2 * senders));
    }
    const GAP_NS: u64 = 166_667;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x7669);
    let order = shuffled_prefix(servers, 2 * senders, &mut rng);
    let mut rows = Vec::new();
    for f in 0..senders {
        let src = order[f as usize] * vms_per_server;
        let dst = order[(senders + f) as usize] * vms_per_server + rng.gen_range(0..vms_per_server);
        let start = rng.gen_range(0..4_800_000u64);
        let mut t = start;
        while t < duration_ns.max(start + 1) {
            rows.push(TraceRow { src_vm: src, dst_vm: dst, ts_ns: t, flow_id: f as u64 + 1, size_bytes: UDP_PAYLOAD_BYTES as u64 });
            t += GAP_NS;
        }
    }
    rows.sort_by_key(|r| r.ts_ns);
    Ok(rows)
}

/// An Alibaba-like microservice call trace, synthesised because the real one (public:
/// alibaba/clusterdata, cluster-trace-microservices-v2021, ~25 GiB of call graphs; read by
/// [`crate::alibaba_callgraph`]) cannot be downloaded where the reproduction runs:
/// VMs are grouped into services of `containers_per_service` at random places; calls arrive as a
/// Poisson process at `calls_per_ms`; the caller is a uniformly random VM; the callee service is
/// one of the hot `hot_service_fraction` (5 %) with probability `hot_call_fraction` (95 %, the
/// published skew: over 95 % of calls go to 5 % of the services), else a cold one; the callee
/// container is uniform within the service. Each call is one TCP flow of a log-normal size
/// (median `median_call_bytes`).
#[derive(Debug, Clone)]
pub struct AlibabaSpec {
    pub containers_per_service: u32,
    pub hot_service_fraction: f64,
    pub hot_call_fraction: f64,
    pub calls_per_ms: f64,
    pub median_call_bytes: f64,
}

impl Default for AlibabaSpec {
    fn default() -> Self {
        AlibabaSpec { containers_per_service: 20, hot_service_fraction: 0.05, hot_call_fraction: 0.95, calls_per_ms: 70_000.0, median_call_bytes: 1_024.0 }
    }
}

/// Sizes of microservice calls (the call traces carry none): log-normal with median
/// `median_bytes` and σ = 1 in ln bytes, clamped to 64 B ..= 1 MiB. The synthetic Alibaba-like
/// trace and the real call-graph reader both draw from it.
#[derive(Debug, Clone, Copy)]
pub struct CallSizes(rand_distr::LogNormal<f64>);

impl CallSizes {
    pub fn new(median_bytes: f64) -> Result<Self, String> {
        if !(median_bytes > 0.0 && median_bytes.is_finite()) {
            return Err(format!("the median call size must be a positive number of bytes, got {median_bytes}"));
        }
        rand_distr::LogNormal::new(median_bytes.ln(), 1.0).map(CallSizes).map_err(|e| e.to_string())
    }

    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        (rand_distr::Distribution::sample(&self.0, rng) as u64).clamp(64, 1 << 20)
    }
}

pub fn alibaba_like(spec: &AlibabaSpec, vms: u32, duration_ns: u64, seed: u64) -> Result<Vec<TraceRow>, String> {
    if spec.containers_per_service == 0 || vms < 2 * spec.containers_per_service {
        return Err("the Alibaba-like trace needs at least two services".into());
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x616c);
    let placement = shuffled_prefix(vms, vms, &mut rng);
    let services = vms / spec.containers_per_service;
    let hot = ((services as f64 * spec.hot_service_fraction).round() as u32).clamp(1, services - 1);
    let size = CallSizes::new(spec.median_call_bytes)?;
    let mean_gap_ns = 1e6 / spec.calls_per_ms;
    let mut rows = Vec::new();
    let mut t = 0.0f64;
    for id in 1u64.. {
        t += -(1.0 - rng.gen::<f64>()).ln() * mean_gap_ns;
        if t as u64 >= duration_ns {
            break;
        }
        let service = if rng.gen::<f64>() < spec.hot_call_fraction { rng.gen_range(0..hot) } else { rng.gen_range(hot..services) };
        let dst = placement[(service * spec.containers_per_service + rng.gen_range(0..spec.containers_per_service)) as usize];
        let mut src = rng.gen_range(0..vms);
        while src == dst {
            src = rng.gen_range(0..vms);
        }
        let bytes = size.sample(&mut rng);
        rows.push(TraceRow { src_vm: src, dst_vm: dst, ts_ns: t as u64, flow_id: id, size_bytes: bytes });
    }
    Ok(rows)
}

/// Destination reuse: how many destinations appear in at least 1, 2 and 10 flows.
pub fn destination_reuse(rows: &[TraceRow]) -> (usize, usize, usize) {
    let mut flows_per_dst: std::collections::HashMap<u32, std::collections::HashSet<u64>> = Default::default();
    for r in rows {
        flows_per_dst.entry(r.dst_vm).or_default().insert(r.flow_id);
    }
    let n = |k: usize| flows_per_dst.values().filter(|f| f.len() >= k).count();
    (n(1), n(2), n(10))
}

/// The migration test's incast: `senders` VMs (the first VM of each of as many servers) each
/// send `packets` UDP packets `gap_ns` apart to `dst_vm`, one flow per sender, numbered as the
/// artifact's `datasets/incast.csv` numbers them (the sender's VM + 1).
pub fn incast(senders: u32, vms_per_server: u32, dst_vm: u32, packets: u32, gap_ns: u64) -> Vec<TraceRow> {
    let mut rows = Vec::with_capacity((senders * packets) as usize);
    for s in 0..senders {
        for k in 0..packets {
            rows.push(TraceRow {
                src_vm: s * vms_per_server,
                dst_vm,
                ts_ns: k as u64 * gap_ns,
                flow_id: (s * vms_per_server) as u64 + 1,
                size_bytes: UDP_PAYLOAD_BYTES as u64,
            });
        }
    }
    rows.sort_by_key(|r| r.ts_ns);
    rows
}

/// Poisson flows at `load` with CDF sizes between uniformly random VMs on different servers
/// (`vms_per_server` VMs on each of `servers`), for `duration_ns`.
pub fn vm_flows(
    cdf: &FlowSizeCdf,
    servers: u32,
    vms_per_server: u32,
    host_bps: u64,
    load: f64,
    duration_ns: u64,
    seed: u64,
) -> Result<Vec<TraceRow>, String> {
    let flows = crate::poisson_flows_until(cdf, servers, host_bps, load, Until::DurationPs(duration_ns * 1000), seed)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x766d);
    Ok(flows
        .iter()
        .map(|f| TraceRow {
            src_vm: f.src * vms_per_server + rng.gen_range(0..vms_per_server),
            dst_vm: f.dst * vms_per_server + rng.gen_range(0..vms_per_server),
            ts_ns: f.start_ps / 1000,
            flow_id: f.id,
            size_bytes: f.size_bytes,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microbursts_have_the_papers_burst_tail_and_reuse() {
        let rows = microbursts(&MicroburstSpec::default(), 10_240, 25_000_000, 1).unwrap();
        // Every request (odd flow, one packet) is answered by the burst (the next flow id) from
        // the VM it went to, back to its sender, 60 µs later.
        let mut first: std::collections::HashMap<u64, &TraceRow> = Default::default();
        let mut packets: std::collections::HashMap<u64, usize> = Default::default();
        for r in &rows {
            first.entry(r.flow_id).or_insert(r);
            *packets.entry(r.flow_id).or_default() += 1;
        }
        for (id, req) in first.iter().filter(|(id, _)| *id % 2 == 1) {
            assert_eq!(packets[id], 1);
            let reply = first[&(id + 1)];
            assert_eq!((reply.src_vm, reply.dst_vm, reply.ts_ns), (req.dst_vm, req.src_vm, req.ts_ns + 60_000));
        }
        let mut bursts: std::collections::HashMap<u64, (u64, u64)> = Default::default();
        for r in rows.iter().filter(|r| r.flow_id % 2 == 0) {
            let e = bursts.entry(r.flow_id).or_insert((u64::MAX, 0));
            e.0 = e.0.min(r.ts_ns);
            e.1 = e.1.max(r.ts_ns);
        }
        let mut d: Vec<u64> = bursts.values().map(|(a, b)| b - a + 2_000).collect();
        d.sort_unstable();
        let p99_us = d[d.len() * 99 / 100] as f64 / 1000.0;
        assert!((120.0..200.0).contains(&p99_us), "p99 burst {p99_us} µs");
        let (_, _, ten) = destination_reuse(&rows);
        assert!(ten > 2_600, "{ten} destinations in >= 10 flows");
        let oneway = microbursts(&MicroburstSpec { replies: false, ..MicroburstSpec::default() }, 10_240, 25_000_000, 1).unwrap();
        assert!(oneway.iter().all(|r| first.get(&(2 * r.flow_id)).is_some_and(|b| b.src_vm == r.dst_vm)), "same exchanges, one direction");
    }

    #[test]
    fn video_has_no_destination_reuse_and_48_mbps() {
        let rows = video(128, 80, 64, 25_000_000, 1).unwrap();
        let (one, two, _) = destination_reuse(&rows);
        assert_eq!((one, two), (64, 0));
        let per_flow = rows.iter().filter(|r| r.flow_id == 1).count() as f64;
        let first = rows.iter().find(|r| r.flow_id == 1).unwrap().ts_ns;
        // 6,000 packets per second of 1,000 B frames is 48 Mbps.
        let expect = (25_000_000 - first) as f64 / 166_667.0;
        assert!((per_flow - expect).abs() <= 1.0, "{per_flow} vs {expect}");
    }

    #[test]
    fn alibaba_like_is_skewed_like_the_published_trace() {
        let spec = AlibabaSpec::default();
        let rows = alibaba_like(&spec, 409_600, 5_000_000, 1).unwrap();
        let (_, _, ten) = destination_reuse(&rows);
        assert!(ten > 18_000, "{ten} destinations with >= 10 flows");
        // Calls to the hot 5 % of services: ≥ 95 % (up to sampling).
        let services = 409_600 / spec.containers_per_service;
        let hot = (services as f64 * 0.05).round() as usize;
        let mut calls = vec![0u64; services as usize];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1 ^ 0x616c);
        let placement = shuffled_prefix(409_600, 409_600, &mut rng);
        let mut service_of = vec![0u32; 409_600];
        for (i, &vm) in placement.iter().enumerate() {
            service_of[vm as usize] = i as u32 / spec.containers_per_service;
        }
        for r in &rows {
            calls[service_of[r.dst_vm as usize] as usize] += 1;
        }
        let hot_calls: u64 = calls[..hot].iter().sum();
        assert!(hot_calls as f64 / rows.len() as f64 > 0.94);
        // What bounds first-packet hits (docs/switchv2p.md): callers are uniform, so most calls
        // go to a callee called before somewhere, but few to one called before from the same
        // rack (1,024 VMs per ToR on FT16-400K) — the sender's ToR rarely holds the mapping.
        let mut seen = std::collections::HashSet::new();
        let mut seen_from_rack = std::collections::HashSet::new();
        let (mut again, mut again_rack) = (0usize, 0usize);
        for r in &rows {
            again += !seen.insert(r.dst_vm) as usize;
            again_rack += !seen_from_rack.insert((r.src_vm / 1_024, r.dst_vm)) as usize;
        }
        let n = rows.len() as f64;
        assert!(again as f64 / n > 0.85 && (again_rack as f64 / n) < 0.03, "{again} / {again_rack} of {n}");
    }
}
