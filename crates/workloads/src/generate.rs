//! Open-loop flow generators: Poisson arrivals at a target load with sizes from a CDF, and the
//! uniform-size lists of the simulator benchmark. Deterministic for a seed.
//!
//! Load is offered against the total host bandwidth: flows arrive at rate
//! `load × servers × host_bps / (8 × mean_size_bytes)` (the SwitchV2P convention: 128 servers ×
//! 100 Gbps at 30% ≈ 3.84 Tbps), with uniformly random source and destination servers, src ≠ dst.
//! Flow ids count from 1 (htsim reads id 0 as "no id").

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Flow, FlowSizeCdf};

const PS_PER_S: f64 = 1e12;

fn check(servers: u32, host_bps: u64, load: f64, mean_bytes: f64) -> Result<f64, String> {
    if servers < 2 {
        return Err(format!("need at least 2 servers, got {servers}"));
    }
    if !(load > 0.0 && load.is_finite()) {
        return Err(format!("load must be a positive fraction, got {load}"));
    }
    if host_bps == 0 {
        return Err("host bandwidth must be positive".into());
    }
    if mean_bytes.is_nan() || mean_bytes <= 0.0 {
        return Err("the mean flow size must be positive".into());
    }
    // Mean inter-arrival time in picoseconds.
    Ok(mean_bytes * 8.0 / (load * servers as f64 * host_bps as f64) * PS_PER_S)
}

fn pair<R: Rng>(rng: &mut R, servers: u32) -> (u32, u32) {
    let src = rng.gen_range(0..servers);
    let mut dst = rng.gen_range(0..servers - 1);
    if dst >= src {
        dst += 1;
    }
    (src, dst)
}

fn exp_ps<R: Rng>(rng: &mut R, mean_ps: f64) -> f64 {
    let u: f64 = rng.gen();
    -(1.0 - u).ln() * mean_ps
}

/// When a generated list ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// Exactly this many flows.
    Count(usize),
    /// Every flow that starts before this time (picoseconds).
    DurationPs(u64),
}

/// Flows with exponential gaps of mean `mean_gap_ps`, random pairs, sizes from `size`.
fn poisson<F: FnMut(&mut ChaCha8Rng) -> u64>(servers: u32, until: Until, mean_gap_ps: f64, seed: u64, mut size: F) -> Vec<Flow> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0f64;
    let mut flows = Vec::new();
    if let Until::Count(n) = until {
        flows.reserve(n);
    }
    for id in 1u64.. {
        t += exp_ps(&mut rng, mean_gap_ps);
        let start_ps = t.round() as u64;
        match until {
            Until::Count(n) if flows.len() >= n => break,
            Until::DurationPs(d) if start_ps >= d => break,
            _ => {}
        }
        let (src, dst) = pair(&mut rng, servers);
        flows.push(Flow { id, src, dst, start_ps, size_bytes: size(&mut rng) });
    }
    flows
}

/// `count` flows with Poisson arrivals (first at t = 0 + one gap), CDF sizes, random pairs.
pub fn poisson_flows(
    cdf: &FlowSizeCdf,
    servers: u32,
    host_bps: u64,
    load: f64,
    count: usize,
    seed: u64,
) -> Result<Vec<Flow>, String> {
    poisson_flows_until(cdf, servers, host_bps, load, Until::Count(count), seed)
}

/// Poisson arrivals at `load` with CDF sizes, ending by count or by duration.
pub fn poisson_flows_until(
    cdf: &FlowSizeCdf,
    servers: u32,
    host_bps: u64,
    load: f64,
    until: Until,
    seed: u64,
) -> Result<Vec<Flow>, String> {
    let mean_gap_ps = check(servers, host_bps, load, cdf.mean_bytes())?;
    Ok(poisson(servers, until, mean_gap_ps, seed, |rng| cdf.sample(rng)))
}

/// `count` flows with sizes uniform in [min_bytes, max_bytes] and Poisson arrivals at `load`.
pub fn uniform_size_flows(
    servers: u32,
    host_bps: u64,
    load: f64,
    count: usize,
    min_bytes: u64,
    max_bytes: u64,
    seed: u64,
) -> Result<Vec<Flow>, String> {
    if min_bytes == 0 || max_bytes < min_bytes {
        return Err(format!("need 1 <= min_bytes <= max_bytes, got {min_bytes}..{max_bytes}"));
    }
    let mean = (min_bytes + max_bytes) as f64 / 2.0;
    let mean_gap_ps = check(servers, host_bps, load, mean)?;
    Ok(poisson(servers, Until::Count(count), mean_gap_ps, seed, |rng| rng.gen_range(min_bytes..=max_bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offered_load_hits_the_target() {
        let cdf = FlowSizeCdf::hadoop();
        let flows = poisson_flows(&cdf, 128, 100_000_000_000, 0.3, 200_000, 3).unwrap();
        let bytes: u64 = flows.iter().map(|f| f.size_bytes).sum();
        let span_s = flows.last().unwrap().start_ps as f64 / 1e12;
        let offered = bytes as f64 * 8.0 / span_s / (128.0 * 100e9);
        assert!((offered - 0.3).abs() < 0.03, "offered {offered}");
        // About 100K flows in 25 ms, as the SwitchV2P hadoop trace (99,297 flows over 25.0 ms).
        let per_25ms = flows.iter().filter(|f| f.start_ps < 25_000_000_000).count();
        assert!((90_000..110_000).contains(&per_25ms), "{per_25ms}");
    }

    #[test]
    fn a_duration_bounds_the_start_times_and_sets_the_count() {
        // 16 hosts x 100 Gbps at 50% with 1 MB mean flows: one flow per 10 us on average.
        let cdf: FlowSizeCdf = "500000 0\n1500000 100\n".parse().unwrap();
        let flows = poisson_flows_until(&cdf, 16, 100_000_000_000, 0.5, Until::DurationPs(100_000_000_000), 5).unwrap();
        assert!(flows.iter().all(|f| f.start_ps < 100_000_000_000));
        assert!((9_500..10_500).contains(&flows.len()), "{}", flows.len());
        // The same seed by count gives the same prefix.
        let by_count = poisson_flows(&cdf, 16, 100_000_000_000, 0.5, flows.len(), 5).unwrap();
        assert_eq!(by_count, flows);
        assert!(poisson_flows_until(&cdf, 16, 1, 0.5, Until::DurationPs(0), 5).unwrap().is_empty());
    }

    #[test]
    fn same_seed_same_flows() {
        let cdf = FlowSizeCdf::websearch();
        let a = poisson_flows(&cdf, 16, 100_000_000_000, 0.5, 1000, 9).unwrap();
        assert_eq!(a, poisson_flows(&cdf, 16, 100_000_000_000, 0.5, 1000, 9).unwrap());
        assert_ne!(a, poisson_flows(&cdf, 16, 100_000_000_000, 0.5, 1000, 10).unwrap());
    }

    #[test]
    fn bad_inputs_are_errors() {
        let cdf = FlowSizeCdf::hadoop();
        assert!(poisson_flows(&cdf, 1, 1, 0.3, 10, 1).is_err());
        assert!(poisson_flows(&cdf, 8, 1, 0.0, 10, 1).is_err());
        assert!(uniform_size_flows(8, 1, 0.5, 10, 5, 4, 1).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        #[test]
        fn offered_load_is_within_a_few_percent(seed in any::<u64>(), servers in 2u32..200, load in 0.05f64..1.0) {
            let host_bps = 100_000_000_000;
            let f = uniform_size_flows(servers, host_bps, load, 50_000, 1_000, 100_000, seed).unwrap();
            let bytes: u64 = f.iter().map(|x| x.size_bytes).sum();
            let offered = bytes as f64 * 8.0 / (f.last().unwrap().start_ps as f64 / 1e12) / (servers as f64 * host_bps as f64);
            prop_assert!((offered / load - 1.0).abs() < 0.03, "offered {} for load {}", offered, load);
        }
    }

    proptest! {
        #[test]
        fn pairs_differ_and_starts_are_sorted(seed in 0u64..1000, servers in 2u32..50) {
            let f = uniform_size_flows(servers, 100_000_000_000, 0.5, 300, 500_000, 1_500_000, seed).unwrap();
            for w in f.windows(2) {
                prop_assert!(w[0].start_ps <= w[1].start_ps);
            }
            for x in &f {
                prop_assert!(x.src != x.dst && x.src < servers && x.dst < servers);
                prop_assert!((500_000..=1_500_000).contains(&x.size_bytes));
            }
        }
    }
}
