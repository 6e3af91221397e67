//! Flow-size distributions given as empirical CDF points (bytes, cumulative percent), sampled
//! by inverse transform with linear interpolation between points — the convention of the
//! HPCC/ns-3 datacenter traffic generators the SwitchV2P workloads come from.

use rand::Rng;

/// A piecewise-linear flow-size CDF.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSizeCdf {
    /// (bytes, cumulative fraction in [0, 1]), bytes non-decreasing, fraction increasing to 1.
    points: Vec<(f64, f64)>,
}

impl FlowSizeCdf {
    /// Build from (bytes, cumulative percent) points. Errors say which point is wrong.
    pub fn from_percent_points(points: &[(f64, f64)]) -> Result<Self, String> {
        if points.len() < 2 {
            return Err(format!("a CDF needs at least 2 points, got {}", points.len()));
        }
        let mut out = Vec::with_capacity(points.len());
        let mut prev: Option<(f64, f64)> = None;
        for (i, &(bytes, pct)) in points.iter().enumerate() {
            if !bytes.is_finite() || bytes < 0.0 {
                return Err(format!("point {}: size {bytes} must be a non-negative number of bytes", i + 1));
            }
            if !(0.0..=100.0).contains(&pct) {
                return Err(format!("point {}: cumulative percent {pct} must be within 0..100", i + 1));
            }
            if let Some((pb, pp)) = prev {
                if bytes < pb {
                    return Err(format!("point {}: sizes must not decrease ({bytes} after {pb})", i + 1));
                }
                if pct < pp {
                    return Err(format!("point {}: percents must not decrease ({pct} after {pp})", i + 1));
                }
            }
            prev = Some((bytes, pct));
            out.push((bytes, pct / 100.0));
        }
        let last = out.last().expect("len >= 2").1;
        if (last - 1.0).abs() > 1e-9 {
            return Err(format!("the last point must be at 100 percent, got {}", last * 100.0));
        }
        Ok(FlowSizeCdf { points: out })
    }

    /// Parse "bytes percent" lines (blank lines and `#` comments ignored). `origin` names the
    /// source in errors (a file name).
    pub fn parse(text: &str, origin: &str) -> Result<Self, String> {
        let mut pts = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() != 2 {
                return Err(format!("{origin}:{}: expected 'bytes percent', got '{line}'", n + 1));
            }
            let b: f64 = fields[0]
                .parse()
                .map_err(|_| format!("{origin}:{}: size '{}' is not a number", n + 1, fields[0]))?;
            let p: f64 = fields[1]
                .parse()
                .map_err(|_| format!("{origin}:{}: percent '{}' is not a number", n + 1, fields[1]))?;
            pts.push((b, p));
        }
        Self::from_percent_points(&pts).map_err(|e| format!("{origin}: {e}"))
    }

    /// Facebook Hadoop flow sizes (the SwitchV2P/HPCC "FbHdp" distribution).
    pub fn hadoop() -> Self {
        Self::from_percent_points(&[
            (0.0, 0.0),
            (100.0, 1.0),
            (200.0, 2.0),
            (300.0, 5.0),
            (350.0, 15.0),
            (400.0, 20.0),
            (500.0, 30.0),
            (600.0, 40.0),
            (700.0, 50.0),
            (1000.0, 60.0),
            (2000.0, 67.0),
            (7000.0, 70.0),
            (30000.0, 72.0),
            (50000.0, 82.0),
            (80000.0, 87.0),
            (120000.0, 90.0),
            (300000.0, 95.0),
            (1000000.0, 97.5),
            (2000000.0, 99.0),
            (10000000.0, 100.0),
        ])
        .expect("built-in CDF is valid")
    }

    /// Web search flow sizes (the DCTCP paper's distribution as used by SwitchV2P/HPCC).
    pub fn websearch() -> Self {
        Self::from_percent_points(&[
            (0.0, 0.0),
            (10000.0, 15.0),
            (20000.0, 20.0),
            (30000.0, 30.0),
            (50000.0, 40.0),
            (80000.0, 53.0),
            (200000.0, 60.0),
            (1000000.0, 70.0),
            (2000000.0, 80.0),
            (5000000.0, 90.0),
            (10000000.0, 97.0),
            (30000000.0, 100.0),
        ])
        .expect("built-in CDF is valid")
    }

    /// Size for a uniform draw `u` in [0, 1): inverse CDF with linear interpolation.
    pub fn quantile(&self, u: f64) -> f64 {
        let p = &self.points;
        // First point whose cumulative fraction exceeds u.
        let i = p.partition_point(|&(_, c)| c <= u).clamp(1, p.len() - 1);
        let (b0, c0) = p[i - 1];
        let (b1, c1) = p[i];
        if c1 <= c0 {
            return b1;
        }
        b0 + (b1 - b0) * (u - c0) / (c1 - c0)
    }

    /// One flow size in whole bytes (at least 1).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.gen();
        (self.quantile(u).round() as u64).max(1)
    }

    /// Mean of the piecewise-linear distribution (each segment contributes its midpoint).
    pub fn mean_bytes(&self) -> f64 {
        self.points.windows(2).map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0).sum()
    }

    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
}

/// A built-in distribution by name, or a CDF file by path.
pub fn cdf_by_name(name: &str) -> Result<FlowSizeCdf, String> {
    match name {
        "hadoop" => Ok(FlowSizeCdf::hadoop()),
        "websearch" => Ok(FlowSizeCdf::websearch()),
        path if std::path::Path::new(path).is_file() => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            FlowSizeCdf::parse(&text, path)
        }
        other => Err(format!("expected hadoop, websearch or the path of a CDF file ('bytes percent' lines), got '{other}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn quantiles_interpolate_between_points() {
        let c = FlowSizeCdf::hadoop();
        assert_eq!(c.quantile(0.5), 700.0);
        assert!((c.quantile(0.55) - 850.0).abs() < 1e-9);
        assert_eq!(c.quantile(0.0), 0.0);
        assert!((c.quantile(0.999999) - 9_999_200.0).abs() < 1e-3);
    }

    #[test]
    fn sample_mean_matches_the_analytic_mean() {
        for c in [FlowSizeCdf::hadoop(), FlowSizeCdf::websearch()] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
            let n = 400_000;
            let m: f64 = (0..n).map(|_| c.sample(&mut rng) as f64).sum::<f64>() / n as f64;
            let rel = (m - c.mean_bytes()).abs() / c.mean_bytes();
            assert!(rel < 0.03, "sample mean {m} vs {}", c.mean_bytes());
        }
        // The SwitchV2P artifact's hadoop trace has a mean of 122,707 B; this model gives ~120 KB.
        let h = FlowSizeCdf::hadoop().mean_bytes();
        assert!((100_000.0..140_000.0).contains(&h), "{h}");
    }

    #[test]
    fn bad_cdfs_say_what_is_wrong() {
        assert!(FlowSizeCdf::from_percent_points(&[(0.0, 0.0), (10.0, 90.0)]).unwrap_err().contains("100 percent"));
        assert!(FlowSizeCdf::from_percent_points(&[(5.0, 0.0), (1.0, 100.0)]).unwrap_err().contains("point 2"));
        let e = FlowSizeCdf::parse("0 0\n100 fifty\n", "x.cdf").unwrap_err();
        assert!(e.starts_with("x.cdf:2:"), "{e}");
        assert!(cdf_by_name("nosuch").unwrap_err().contains("hadoop"));
    }
}
