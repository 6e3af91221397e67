//! Key popularity for key-value workloads: popularity ranks drawn uniformly or from a Zipf
//! distribution (rank 0 the hottest), and the hot-in pattern (every period the hottest and the
//! coldest ranks swap keys), as OrbitCache's and NetCache's evaluations use.

use rand::Rng;
use rand_distr::{Distribution, Zipf};

/// Draws keys by popularity rank and maps ranks to keys at a point in time (hot-in).
#[derive(Debug, Clone)]
pub struct KeySampler {
    keys: u64,
    zipf: Option<Zipf<f64>>,
    hot_in_period_ps: u64,
    hot_in_keys: u64,
}

impl KeySampler {
    /// `keys` ranks, Zipf with exponent `zipf_alpha` (None: uniform); every `hot_in_period_ps`
    /// (0: never) the `hot_in_keys` hottest and coldest ranks swap keys.
    pub fn new(keys: u64, zipf_alpha: Option<f64>, hot_in_period_ps: u64, hot_in_keys: u64) -> Result<Self, String> {
        if keys < 2 * hot_in_keys.max(1) {
            return Err(format!("{keys} keys is too few (need at least {})", 2 * hot_in_keys.max(1)));
        }
        let zipf = zipf_alpha
            .map(|a| Zipf::new(keys, a).map_err(|e| format!("Zipf exponent {a}: {e}")))
            .transpose()?;
        Ok(KeySampler { keys, zipf, hot_in_period_ps, hot_in_keys })
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
        let s = KeySampler::new(10_000_000, Some(0.99), 0, 128).unwrap();
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
        let t = 10_000_000_000_000; // 10 s
        let s = KeySampler::new(1000, Some(0.99), t, 128).unwrap();
        assert_eq!(s.key_of_rank(0, 0), 0);
        assert_eq!(s.key_of_rank(0, t), 872);
        assert_eq!(s.key_of_rank(999, t), 127);
        assert_eq!(s.key_of_rank(500, t), 500);
        assert_eq!(s.key_of_rank(0, 2 * t), 0);
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(KeySampler::new(100, Some(0.99), 0, 128).unwrap_err().contains("too few"));
        assert!(KeySampler::new(1000, Some(-1.0), 0, 128).unwrap_err().contains("Zipf"));
    }
}
