//! A Zipf sampler over ranks: rank r (0-based) is drawn with probability ∝ 1/(r+1)^s. The
//! locality model of flow-cache traffic ("the k-th most recurring item is drawn k^−s as often
//! as the first"); what is ranked is the caller's business.
//!
//! `popularity::KeySampler` draws key ranks with `rand_distr::Zipf` (rejection sampling) for the
//! key-value systems; this inverse-CDF sampler is Gigaflow's and is kept apart only because its
//! draw sequence pins every Gigaflow number in docs/results/gigaflow.md. Folding the two into one
//! is a known duplicate, to be done together with a re-measurement of those numbers.

use rand::Rng;

#[derive(Clone, Debug)]
pub struct Zipf {
    /// Cumulative weights by rank.
    cdf: Vec<f64>,
}

impl Zipf {
    /// Over `n` ranks with exponent `s` (≥ 0; 0 is uniform).
    pub fn new(n: usize, s: f64) -> Result<Zipf, String> {
        if n == 0 {
            return Err("a Zipf distribution needs at least one rank".into());
        }
        if !(s.is_finite() && s >= 0.0) {
            return Err(format!("the Zipf exponent must be non-negative, got {s}"));
        }
        let mut acc = 0.0;
        let cdf = (0..n)
            .map(|i| {
                acc += 1.0 / ((i + 1) as f64).powf(s);
                acc
            })
            .collect();
        Ok(Zipf { cdf })
    }

    /// A rank in 0..n.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> usize {
        let n = self.cdf.len();
        let u = rng.gen::<f64>() * self.cdf[n - 1];
        self.cdf.partition_point(|&c| c < u).min(n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn rank_frequencies_follow_the_power_law() {
        let z = Zipf::new(100, 1.0).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut count = [0u32; 100];
        for _ in 0..200_000 {
            count[z.sample(&mut rng)] += 1;
        }
        // Rank 0 is drawn about twice as often as rank 1 and ten times as often as rank 9.
        let r = |a: usize, b: usize| count[a] as f64 / count[b] as f64;
        assert!((r(0, 1) - 2.0).abs() < 0.1 && (r(0, 9) - 10.0).abs() < 1.0, "{count:?}");
        let u = Zipf::new(4, 0.0).unwrap();
        let mut c = [0u32; 4];
        for _ in 0..40_000 {
            c[u.sample(&mut rng)] += 1;
        }
        assert!(c.iter().all(|&x| (9_000..11_000).contains(&x)), "uniform at s = 0: {c:?}");
        assert!(Zipf::new(0, 1.0).is_err() && Zipf::new(3, -1.0).unwrap_err().contains("non-negative"));
    }
}
