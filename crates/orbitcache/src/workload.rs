//! The key-value workload: key popularity (uniform or Zipf over 10M keys by default, rank 0 the
//! hottest), the hot-in pattern (every period the hottest and the coldest `hot_in_keys` ranks
//! swap keys), per-key value sizes (bimodal 82% 64 B / 18% 1,024 B by default, or one fixed
//! size), key length, and the write ratio.

use rand::Rng;
use rand_distr::{Distribution, Zipf};
use serde::Deserialize;

use crate::keys::key_uniform;
use innet_registry::ExperimentError;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Number of distinct keys.
    pub keys: u64,
    /// "zipf" or "uniform".
    pub distribution: String,
    pub zipf_alpha: f64,
    pub key_bytes: usize,
    /// "bimodal" (per-key choice of the small or large size) or "fixed".
    pub values: String,
    pub small_value_bytes: u32,
    pub large_value_bytes: u32,
    /// Fraction of keys with the large value (bimodal).
    pub large_fraction: f64,
    /// Every value's size when `values = "fixed"`.
    pub fixed_value_bytes: u32,
    /// Fraction of requests that are writes.
    pub write_ratio: f64,
    /// Hot-in: every this many seconds the hottest and coldest `hot_in_keys` swap (0 = never).
    pub hot_in_period_s: f64,
    pub hot_in_keys: u64,
    /// Where the large values of a bimodal workload sit: "artifact" (the ranks the artifact's
    /// NetCache key file leaves out of the hottest 128 are large, `ARTIFACT_LARGE_RANKS`; the
    /// rest are drawn per key), "hottest" (the artifact's OrbitCache preload: the hottest
    /// ⌈large_fraction × 128⌉ ranks are large, the rest drawn) or "random" (every key drawn
    /// independently, the paper's wording).
    pub large_placement: String,
    /// Seed of the per-key size draw.
    pub size_seed: u64,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            keys: 10_000_000,
            distribution: "zipf".into(),
            zipf_alpha: 0.99,
            key_bytes: 16,
            values: "bimodal".into(),
            small_value_bytes: 64,
            large_value_bytes: 1024,
            large_fraction: 0.18,
            fixed_value_bytes: 1024,
            write_ratio: 0.0,
            hot_in_period_s: 0.0,
            hot_in_keys: 128,
            large_placement: "artifact".into(),
            size_seed: 0,
        }
    }
}

/// The ranks among the hottest 128 that the artifact's NetCache key file
/// (netcache/gen_keys_10000_18.txt: 8,200 of the 10,000 hottest ranks, drawn uniformly as the
/// paper's §5.1 says) leaves out, i.e. the items its NetCache could not cache — the placement
/// behind the paper's NetCache and FarReach numbers. 32 of 128 (25 %); rank 0 is cacheable.
pub const ARTIFACT_LARGE_RANKS: [u64; 32] =
    [1, 4, 13, 18, 20, 21, 32, 33, 35, 41, 52, 53, 54, 59, 62, 63, 76, 77, 79, 81, 84, 91, 97, 100, 108, 112, 113, 116, 120, 123, 126, 127];

/// Salt of the per-key size draw (fixed so every scheme and run sees the same sizes).
const SIZE_SALT: u64 = 0x5EED_0F_5A1E;

fn bad(field: &str, message: impl Into<String>) -> ExperimentError {
    ExperimentError::BadParam { field: format!("workload.{field}"), message: message.into() }
}

impl WorkloadSpec {
    /// Check every field; errors name the field and what was expected.
    pub fn validate(&self, max_value_bytes: u32) -> Result<(), ExperimentError> {
        if self.keys < 2 * self.hot_in_keys.max(1) {
            return Err(bad("keys", format!("{} keys is too few (need at least {})", self.keys, 2 * self.hot_in_keys.max(1))));
        }
        match self.distribution.as_str() {
            "zipf" => {
                if !(self.zipf_alpha > 0.0 && self.zipf_alpha <= 3.0) {
                    return Err(bad("zipf_alpha", format!("expected a number in (0, 3], got {}", self.zipf_alpha)));
                }
            }
            "uniform" => {}
            other => return Err(bad("distribution", format!("expected \"zipf\" or \"uniform\", got \"{other}\""))),
        }
        if !(8..=256).contains(&self.key_bytes) {
            return Err(bad("key_bytes", format!("expected 8..=256 bytes, got {}", self.key_bytes)));
        }
        let sizes: Vec<(&str, u32)> = match self.values.as_str() {
            "bimodal" => vec![("small_value_bytes", self.small_value_bytes), ("large_value_bytes", self.large_value_bytes)],
            "fixed" => vec![("fixed_value_bytes", self.fixed_value_bytes)],
            other => return Err(bad("values", format!("expected \"bimodal\" or \"fixed\", got \"{other}\""))),
        };
        for (name, v) in sizes {
            let stamp = innet_wire::orbitcache::STAMP_BYTES as u32;
            if v < stamp || v > max_value_bytes {
                return Err(bad(
                    name,
                    format!("expected {stamp}..={max_value_bytes} bytes (one packet with a {}-byte key), got {v}", self.key_bytes),
                ));
            }
        }
        for (name, v) in [("large_fraction", self.large_fraction), ("write_ratio", self.write_ratio)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(bad(name, format!("expected a fraction in [0, 1], got {v}")));
            }
        }
        if !matches!(self.large_placement.as_str(), "artifact" | "hottest" | "random") {
            return Err(bad("large_placement", format!("expected \"artifact\", \"hottest\" or \"random\", got \"{}\"", self.large_placement)));
        }
        if self.hot_in_period_s < 0.0 {
            return Err(bad("hot_in_period_s", "expected ≥ 0 (0 turns hot-in off)"));
        }
        Ok(())
    }

    /// The size of key `id`'s value (fixed per key).
    pub fn value_bytes(&self, id: u64) -> u32 {
        match self.values.as_str() {
            "fixed" => self.fixed_value_bytes,
            _ => {
                let hottest = (self.large_fraction * 128.0).ceil() as u64;
                match self.large_placement.as_str() {
                    "hottest" if id < hottest => return self.large_value_bytes,
                    "artifact" if id < 128 => {
                        return if ARTIFACT_LARGE_RANKS.contains(&id) { self.large_value_bytes } else { self.small_value_bytes };
                    }
                    _ => {}
                }
                if key_uniform(id, SIZE_SALT ^ self.size_seed) < self.large_fraction {
                    self.large_value_bytes
                } else {
                    self.small_value_bytes
                }
            }
        }
    }
}

/// Draws keys by popularity rank and maps ranks to keys at a point in time (hot-in).
pub struct KeySampler {
    keys: u64,
    zipf: Option<Zipf<f64>>,
    hot_in_period_ps: u64,
    hot_in_keys: u64,
}

impl KeySampler {
    pub fn new(spec: &WorkloadSpec) -> Self {
        let zipf = (spec.distribution == "zipf").then(|| Zipf::new(spec.keys, spec.zipf_alpha).expect("validated"));
        KeySampler {
            keys: spec.keys,
            zipf,
            hot_in_period_ps: (spec.hot_in_period_s * 1e12).round() as u64,
            hot_in_keys: spec.hot_in_keys,
        }
    }

    /// A popularity rank (0 = hottest).
    #[inline]
    pub fn sample_rank<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match &self.zipf {
            Some(z) => (z.sample(rng) as u64).clamp(1, self.keys) - 1,
            None => rng.gen_range(0..self.keys),
        }
    }

    /// The key that has popularity `rank` at time `now_ps`.
    #[inline]
    pub fn key_of_rank(&self, rank: u64, now_ps: u64) -> u64 {
        let swapped = self.hot_in_period_ps > 0 && (now_ps / self.hot_in_period_ps) % 2 == 1;
        if !swapped {
            return rank;
        }
        let n = self.hot_in_keys;
        if rank < n {
            self.keys - n + rank
        } else if rank >= self.keys - n {
            rank - (self.keys - n)
        } else {
            rank
        }
    }

    /// The `count` hottest keys at time `now_ps`, hottest first.
    pub fn hottest(&self, count: u64, now_ps: u64) -> Vec<u64> {
        (0..count.min(self.keys)).map(|r| self.key_of_rank(r, now_ps)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zipf_099_puts_the_expected_share_on_the_hottest_keys() {
        let spec = WorkloadSpec::default();
        let s = KeySampler::new(&spec);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let n = 400_000;
        let mut top128 = 0;
        let mut rank0 = 0;
        for _ in 0..n {
            let r = s.sample_rank(&mut rng);
            top128 += (r < 128) as u32;
            rank0 += (r == 0) as u32;
        }
        // H(10M, 0.99) ≈ 16.2: rank 0 takes ≈ 6.2 %, the top 128 ≈ 34 %.
        let (p0, p128) = (rank0 as f64 / n as f64, top128 as f64 / n as f64);
        assert!((0.055..0.07).contains(&p0), "{p0}");
        assert!((0.30..0.38).contains(&p128), "{p128}");
    }

    #[test]
    fn hot_in_swaps_the_hottest_and_coldest_every_period() {
        let spec = WorkloadSpec { hot_in_period_s: 10.0, keys: 1000, ..Default::default() };
        let s = KeySampler::new(&spec);
        assert_eq!(s.key_of_rank(0, 0), 0);
        let t = 10_000_000_000_000; // 10 s
        assert_eq!(s.key_of_rank(0, t), 872);
        assert_eq!(s.key_of_rank(999, t), 127);
        assert_eq!(s.key_of_rank(500, t), 500);
        assert_eq!(s.key_of_rank(0, 2 * t), 0);
    }

    #[test]
    fn bimodal_sizes_follow_the_fraction_and_bad_specs_are_named() {
        let spec = WorkloadSpec::default();
        // The artifact's NetCache key file: rank 0 cacheable, rank 1 not, 32 of the top 128 large.
        assert_eq!((spec.value_bytes(0), spec.value_bytes(1), spec.value_bytes(4)), (64, 1024, 1024));
        assert_eq!((0..128).filter(|&k| spec.value_bytes(k) == 1024).count(), 32);
        let hottest = WorkloadSpec { large_placement: "hottest".into(), ..Default::default() };
        assert!((0..24).all(|k| hottest.value_bytes(k) == 1024), "the artifact's OrbitCache preload: the hottest 24 large");
        let large = (0..100_000u64).filter(|&k| spec.value_bytes(k) == 1024).count();
        assert!((17_000..19_000).contains(&large), "{large}");
        let e = WorkloadSpec { distribution: "pareto".into(), ..Default::default() }.validate(1416).unwrap_err();
        assert!(e.to_string().contains("workload.distribution"), "{e}");
        let e = WorkloadSpec { values: "fixed".into(), fixed_value_bytes: 2000, ..Default::default() }.validate(1416).unwrap_err();
        assert!(e.to_string().contains("fixed_value_bytes"), "{e}");
    }
}
