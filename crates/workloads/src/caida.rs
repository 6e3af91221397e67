//! CAIDA-like packet traces for flow caches: how many packets each flow sends (a capped power
//! law: most flows a packet or two, most packets in a few long flows) and how the flows'
//! packets interleave in time (a replayed trace slice, or Poisson flow starts). Flows are
//! indices numbered by first appearance; their headers are the caller's business. Deterministic
//! for a seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Packets per flow: P(size ≥ k) = k^−shape for 1 ≤ k ≤ `max` (a Pareto with scale 1, floored,
/// capped at `max`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSizes {
    pub shape: f64,
    pub max: u32,
}

impl FlowSizes {
    /// A Pareto of this shape (1.2 gives ~4.8 packets per flow at `max` 10,000).
    pub fn pareto(shape: f64, max: u32) -> Result<FlowSizes, String> {
        if !(shape.is_finite() && shape > 0.0) {
            return Err(format!("the Pareto shape must be positive, got {shape}"));
        }
        if max == 0 {
            return Err("the largest flow must have at least 1 packet".into());
        }
        Ok(FlowSizes { shape, max })
    }

    /// The power law whose mean is `mean` packets per flow at this cap: the shape is solved for
    /// (the mean falls as the shape grows), so a trace's volume (packets / flows) sets it.
    pub fn with_mean(mean: f64, max: u32) -> Result<FlowSizes, String> {
        if max == 0 {
            return Err("the largest flow must have at least 1 packet".into());
        }
        if !(mean.is_finite() && mean > 1.0 && mean < max as f64) {
            return Err(format!("the mean packets per flow must lie in (1, {max}), got {mean}"));
        }
        let (mut lo, mut hi) = (1e-3, 50.0);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if (FlowSizes { shape: mid, max }).mean() > mean {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(FlowSizes { shape: 0.5 * (lo + hi), max })
    }

    /// One flow's packets.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u32 {
        let u = 1.0 - rng.gen::<f64>();
        (u.powf(-1.0 / self.shape).floor() as u64).clamp(1, self.max as u64) as u32
    }

    /// The exact mean: E[size] = Σ_{k=1..max} P(size ≥ k) = Σ k^−shape.
    pub fn mean(&self) -> f64 {
        (1..=self.max).map(|k| (k as f64).powf(-self.shape)).sum()
    }
}

/// When a flow's packets are sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// A replayed trace slice, as a generator replaying a pcap at a fixed rate: every packet of
    /// every flow falls uniformly in one window of `total packets / packet_rate_pps`, so a flow
    /// is active over the whole run, and the flows in progress when the slice starts — the
    /// long ones — show up first.
    Window { packet_rate_pps: f64 },
    /// Flows start as a Poisson process and each sends its packets with log-normal gaps:
    /// short-lived flows, each active for milliseconds to seconds of the run.
    Arrivals { flow_arrivals_per_s: f64, ipg_median_us: f64, ipg_sigma: f64 },
}

impl Timing {
    /// `window` (10 kpps) or `arrivals` (2,000 flows/s, median gap 1 ms, σ 1.5).
    pub fn parse(s: &str) -> Result<Timing, String> {
        match s.to_ascii_lowercase().as_str() {
            "window" => Ok(Timing::Window { packet_rate_pps: 10_000.0 }),
            "arrivals" => Ok(Timing::Arrivals { flow_arrivals_per_s: 2_000.0, ipg_median_us: 1_000.0, ipg_sigma: 1.5 }),
            _ => Err(format!("unknown timing '{s}' (expected window or arrivals)")),
        }
    }

    fn check(&self) -> Result<(), String> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        match *self {
            Timing::Window { packet_rate_pps } if !positive(packet_rate_pps) => Err(format!("packet_rate_pps must be positive, got {packet_rate_pps}")),
            Timing::Arrivals { flow_arrivals_per_s, ipg_median_us, ipg_sigma } if !(positive(flow_arrivals_per_s) && positive(ipg_median_us) && ipg_sigma.is_finite() && ipg_sigma >= 0.0) => {
                Err("flow_arrivals_per_s and ipg_median_us must be positive, ipg_sigma non-negative".into())
            }
            _ => Ok(()),
        }
    }
}

/// One packet: when it is sent and which flow it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracePacket {
    pub time_ns: u64,
    pub flow: u32,
}

/// A trace: flow k is the k-th flow to send a packet.
#[derive(Clone, Debug)]
pub struct PacketTrace {
    /// Packets of each flow.
    pub sizes: Vec<u32>,
    /// Time of each flow's first packet.
    pub first_ns: Vec<u64>,
    /// In time order (ties by flow).
    pub packets: Vec<TracePacket>,
}

/// `n_flows` flows with sizes from `sizes`, interleaved by `timing`.
pub fn generate(n_flows: usize, sizes: &FlowSizes, timing: &Timing, seed: u64) -> Result<PacketTrace, String> {
    generate_mapped(n_flows, 1, sizes, timing, seed)
}

/// A trace of `n_lines × trace_flows_per_line` flows (sizes from `sizes`, interleaved by
/// `timing`) replayed onto `n_lines` header lines as a pcap replayer maps them: the trace's
/// flow i (by first appearance) becomes line `i % n_lines`. Line k is still the k-th line to
/// appear; a line's packets are those of all its trace flows, so lines are less skewed than
/// trace flows when several share one.
pub fn generate_mapped(n_lines: usize, trace_flows_per_line: usize, sizes: &FlowSizes, timing: &Timing, seed: u64) -> Result<PacketTrace, String> {
    if trace_flows_per_line == 0 || trace_flows_per_line > 1000 {
        return Err(format!("trace flows per line must be 1..=1000, got {trace_flows_per_line}"));
    }
    let n_flows = n_lines.saturating_mul(trace_flows_per_line);
    if n_lines == 0 || n_flows > 10_000_000 {
        return Err(format!("flows must be 1..=10000000 (lines × trace flows per line), got {n_lines} × {trace_flows_per_line}"));
    }
    FlowSizes::pareto(sizes.shape, sizes.max)?;
    timing.check()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xca1d_a7ace);
    let drawn: Vec<u32> = (0..n_flows).map(|_| sizes.sample(&mut rng)).collect();
    let total: usize = drawn.iter().map(|&n| n as usize).sum();
    let mut packets = Vec::with_capacity(total);
    match *timing {
        Timing::Arrivals { flow_arrivals_per_s, ipg_median_us, ipg_sigma } => {
            let (mean_gap_ns, mu) = (1e9 / flow_arrivals_per_s, (ipg_median_us * 1e3).ln());
            let mut start = 0f64;
            for (i, &n) in drawn.iter().enumerate() {
                start += -mean_gap_ns * (1.0 - rng.gen::<f64>()).ln();
                let mut t = start;
                for k in 0..n {
                    if k > 0 {
                        t += (mu + ipg_sigma * normal(&mut rng)).exp();
                    }
                    packets.push(TracePacket { time_ns: t as u64, flow: i as u32 });
                }
            }
        }
        Timing::Window { packet_rate_pps } => {
            let window_ns = total as f64 / packet_rate_pps * 1e9;
            for (i, &n) in drawn.iter().enumerate() {
                for _ in 0..n {
                    packets.push(TracePacket { time_ns: (rng.gen::<f64>() * window_ns) as u64, flow: i as u32 });
                }
            }
        }
    }
    packets.sort_unstable_by_key(|p| (p.time_ns, p.flow));
    let trace = number_by_first_packet(&drawn, packets);
    if trace_flows_per_line == 1 {
        return Ok(trace);
    }
    let mut sizes = trace.sizes[..n_lines].to_vec();
    for (i, &n) in trace.sizes.iter().enumerate().skip(n_lines) {
        sizes[i % n_lines] += n;
    }
    let packets = trace.packets.into_iter().map(|p| TracePacket { flow: p.flow % n_lines as u32, ..p }).collect();
    Ok(PacketTrace { sizes, first_ns: trace.first_ns[..n_lines].to_vec(), packets })
}

fn normal<R: Rng>(rng: &mut R) -> f64 {
    let (u1, u2): (f64, f64) = (1.0 - rng.gen::<f64>(), rng.gen::<f64>());
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Renumbers flows by their first packet (as a pcap analyser numbers a trace's 5-tuples),
/// moving each flow's size with it.
fn number_by_first_packet(drawn: &[u32], mut packets: Vec<TracePacket>) -> PacketTrace {
    const UNSEEN: u32 = u32::MAX;
    let mut rank = vec![UNSEEN; drawn.len()];
    let mut next = 0u32;
    let (mut sizes, mut first_ns) = (vec![0u32; drawn.len()], vec![0u64; drawn.len()]);
    for p in packets.iter_mut() {
        let r = &mut rank[p.flow as usize];
        if *r == UNSEEN {
            *r = next;
            sizes[next as usize] = drawn[p.flow as usize];
            first_ns[next as usize] = p.time_ns;
            next += 1;
        }
        p.flow = *r;
    }
    PacketTrace { sizes, first_ns, packets }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_solved_shape_gives_the_mean_and_a_heavy_tail() {
        let s = FlowSizes::with_mean(30.0, 10_000).unwrap();
        assert!((s.mean() - 30.0).abs() < 1e-6, "{}", s.mean());
        assert!(s.shape > 0.7 && s.shape < 0.9, "{}", s.shape);
        let t = generate(200_000, &s, &Timing::parse("window").unwrap(), 3).unwrap();
        let total: u64 = t.sizes.iter().map(|&n| n as u64).sum();
        let mean = total as f64 / t.sizes.len() as f64;
        assert!((mean / 30.0 - 1.0).abs() < 0.1, "sampled mean {mean}");
        let single = t.sizes.iter().filter(|&&n| n == 1).count() as f64 / t.sizes.len() as f64;
        assert!((single - (1.0 - 2f64.powf(-s.shape))).abs() < 0.01, "single-packet flows {single}");
        // Most packets in few flows: the largest 1 % of flows carry over half the packets.
        let mut v = t.sizes.clone();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = v[..v.len() / 100].iter().map(|&n| n as u64).sum();
        assert!(top as f64 > 0.5 * total as f64, "top 1 %: {top} of {total}");
        // Pareto 1.2 keeps its old mean (~4.8 packets per flow).
        assert!((FlowSizes::pareto(1.2, 10_000).unwrap().mean() - 4.8).abs() < 0.1);
    }

    #[test]
    fn flows_are_numbered_by_first_packet_and_conserve_their_sizes() {
        for timing in [Timing::parse("window").unwrap(), Timing::parse("arrivals").unwrap()] {
            let s = FlowSizes::with_mean(10.0, 1_000).unwrap();
            let t = generate(5_000, &s, &timing, 7).unwrap();
            let mut count = vec![0u32; t.sizes.len()];
            let mut next = 0u32;
            for (i, p) in t.packets.iter().enumerate() {
                assert!(i == 0 || t.packets[i - 1].time_ns <= p.time_ns, "time order");
                assert!(p.flow <= next, "flow {} before flow {next}", p.flow);
                if p.flow == next {
                    assert_eq!(t.first_ns[next as usize], p.time_ns);
                    next += 1;
                }
                count[p.flow as usize] += 1;
            }
            assert_eq!(count, t.sizes, "{timing:?}");
            let again = generate(5_000, &s, &timing, 7).unwrap();
            assert_eq!(again.packets, t.packets, "deterministic");
        }
    }

    #[test]
    fn trace_flows_map_onto_lines_by_first_appearance_modulo_the_lines() {
        let s = FlowSizes::with_mean(10.0, 10_000).unwrap();
        let w = Timing::parse("window").unwrap();
        let one = generate(30_000, &s, &w, 5).unwrap();
        let three = generate_mapped(10_000, 3, &s, &w, 5).unwrap();
        // The same trace, folded: line l carries trace flows l, l + 10K and l + 20K.
        assert_eq!(three.packets.len(), one.packets.len());
        for (a, b) in one.packets.iter().zip(&three.packets) {
            assert_eq!((a.time_ns, a.flow % 10_000), (b.time_ns, b.flow));
        }
        assert_eq!(three.sizes[7], one.sizes[7] + one.sizes[10_007] + one.sizes[20_007]);
        let mut next = 0u32;
        for p in &three.packets {
            assert!(p.flow <= next);
            next += (p.flow == next) as u32;
        }
        assert_eq!(next, 10_000, "lines appear in order");
        // Folding makes lines less skewed than trace flows: the largest 1 % carry less.
        let top = |v: &[u32]| {
            let mut v = v.to_vec();
            v.sort_unstable_by(|a, b| b.cmp(a));
            v[..v.len() / 100].iter().map(|&n| n as f64).sum::<f64>() / v.iter().map(|&n| n as f64).sum::<f64>()
        };
        assert!(top(&three.sizes) < top(&one.sizes), "{} vs {}", top(&three.sizes), top(&one.sizes));
        assert!(generate_mapped(10, 0, &s, &w, 1).unwrap_err().contains("trace flows per line"));
    }

    #[test]
    fn the_window_replays_at_its_rate_and_spreads_long_flows() {
        let t = generate(10_000, &FlowSizes::with_mean(30.0, 10_000).unwrap(), &Timing::Window { packet_rate_pps: 10_000.0 }, 1).unwrap();
        let window_ns = t.packets.last().unwrap().time_ns as f64;
        let expected_ns = t.packets.len() as f64 / 10_000.0 * 1e9;
        assert!((window_ns / expected_ns - 1.0).abs() < 0.01, "{window_ns} vs {expected_ns}");
        let mean = |r: std::ops::Range<usize>| t.sizes[r.clone()].iter().map(|&n| n as f64).sum::<f64>() / r.len() as f64;
        assert!(mean(0..1000) > 3.0 * mean(9000..10_000), "long flows show up first");
    }

    #[test]
    fn bad_parameters_are_refused_with_the_expectation() {
        assert!(FlowSizes::with_mean(0.5, 100).unwrap_err().contains("(1, 100)"));
        assert!(FlowSizes::pareto(-1.0, 100).unwrap_err().contains("positive"));
        assert!(Timing::parse("burst").unwrap_err().contains("window or arrivals"));
        let s = FlowSizes::pareto(1.2, 100).unwrap();
        assert!(generate(0, &s, &Timing::parse("window").unwrap(), 1).unwrap_err().contains("flows"));
        assert!(generate(10, &s, &Timing::Window { packet_rate_pps: 0.0 }, 1).unwrap_err().contains("packet_rate_pps"));
    }
}
