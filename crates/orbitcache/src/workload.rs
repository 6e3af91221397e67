//! The key-value workload: key popularity (uniform or Zipf over 10M keys by default, rank 0 the
//! hottest), the hot-in pattern (every period the hottest and the coldest `hot_in_keys` ranks
//! swap keys), per-key value sizes (bimodal 82% 64 B / 18% 1,024 B by default, or one fixed
//! size), key length, and the write ratio.

use innet_workloads::popularity::KeySampler;
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


impl WorkloadSpec {
    /// Check every field; errors name the field and what was expected.
    pub fn validate(&self, max_value_bytes: u32) -> Result<(), ExperimentError> {
        if self.keys < 2 * self.hot_in_keys.max(1) {
            return Err(ExperimentError::param("workload.keys", format!("{} keys is too few (need at least {})", self.keys, 2 * self.hot_in_keys.max(1))));
        }
        match self.distribution.as_str() {
            "zipf" => {
                if !(self.zipf_alpha > 0.0 && self.zipf_alpha <= 3.0) {
                    return Err(ExperimentError::bad_param("workload.zipf_alpha", self.zipf_alpha, "a number in (0, 3]"));
                }
            }
            "uniform" => {}
            other => return Err(ExperimentError::bad_param("workload.distribution", other, "\"zipf\" or \"uniform\"")),
        }
        if !(8..=256).contains(&self.key_bytes) {
            return Err(ExperimentError::bad_param("workload.key_bytes", self.key_bytes, "8..=256 bytes"));
        }
        let sizes: Vec<(&str, u32)> = match self.values.as_str() {
            "bimodal" => vec![("small_value_bytes", self.small_value_bytes), ("large_value_bytes", self.large_value_bytes)],
            "fixed" => vec![("fixed_value_bytes", self.fixed_value_bytes)],
            other => return Err(ExperimentError::bad_param("workload.values", other, "\"bimodal\" or \"fixed\"")),
        };
        for (name, v) in sizes {
            let stamp = innet_wire::orbitcache::STAMP_BYTES as u32;
            if v < stamp || v > max_value_bytes {
                return Err(ExperimentError::param(&format!("workload.{name}"), format!("expected {stamp}..={max_value_bytes} bytes (one packet with a {}-byte key), got {v}", self.key_bytes)));
            }
        }
        for (name, v) in [("large_fraction", self.large_fraction), ("write_ratio", self.write_ratio)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(ExperimentError::bad_param(&format!("workload.{name}"), v, "a fraction in [0, 1]"));
            }
        }
        if !matches!(self.large_placement.as_str(), "artifact" | "hottest" | "random") {
            return Err(ExperimentError::bad_param("workload.large_placement", &self.large_placement, "\"artifact\", \"hottest\" or \"random\""));
        }
        if self.hot_in_period_s < 0.0 {
            return Err(ExperimentError::param("workload.hot_in_period_s", "expected ≥ 0 (0 turns hot-in off)"));
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

    /// The key sampler of this (validated) workload: Zipf or uniform ranks, hot-in in picoseconds.
    pub fn sampler(&self) -> KeySampler {
        let zipf_alpha = (self.distribution == "zipf").then_some(self.zipf_alpha);
        KeySampler::new(self.keys, zipf_alpha, (self.hot_in_period_s * 1e12).round() as u64, self.hot_in_keys)
            .expect("validated")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
