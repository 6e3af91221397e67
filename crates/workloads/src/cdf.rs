//! Flow-size distributions given as empirical CDF points (bytes, cumulative percent), sampled
//! by inverse transform with linear interpolation between points — the convention of the
//! HPCC/ns-3 datacenter traffic generators the SwitchV2P workloads come from. The model is the
//! piecewise-linear CDF through the points; mass below the first point's percent sits at its size.

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

    /// Read a CDF file of "bytes percent" lines; errors name `file:line`.
    pub fn from_file(path: &std::path::Path) -> Result<Self, String> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: cannot read: {e}"))?;
        Self::parse(&text, &origin)
    }

    /// Size for a uniform draw `u` in [0, 1): inverse CDF with linear interpolation.
    pub fn quantile(&self, u: f64) -> f64 {
        let p = &self.points;
        if u < p[0].1 {
            // A first point above 0% is a step: that much mass sits at its size.
            return p[0].0;
        }
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

    /// Exact mean of the piecewise-linear model: the step at the first point plus each
    /// segment's probability times its midpoint (sizes are uniform within a segment).
    pub fn mean_bytes(&self) -> f64 {
        let (b0, c0) = self.points[0];
        b0 * c0 + self.points.windows(2).map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0).sum::<f64>()
    }

    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
}

impl std::str::FromStr for FlowSizeCdf {
    type Err = String;

    /// "bytes percent" lines, as in a CDF file; errors name `<string>:line`.
    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text, "<string>")
    }
}

/// A built-in distribution by name, or a CDF file by path.
pub fn cdf_by_name(name: &str) -> Result<FlowSizeCdf, String> {
    match name {
        "hadoop" => Ok(FlowSizeCdf::hadoop()),
        "websearch" => Ok(FlowSizeCdf::websearch()),
        path if std::path::Path::new(path).is_file() => FlowSizeCdf::from_file(std::path::Path::new(path)),
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
    fn mean_is_exact_for_the_piecewise_linear_model() {
        // Two equal-mass segments, uniform on [0,10] and [10,20]: mean 2.5 + 7.5.
        let c: FlowSizeCdf = "0 0\n10 50\n20 100\n".parse().unwrap();
        assert_eq!(c.mean_bytes(), 10.0);
        // 20% at exactly 100 bytes, 80% uniform on [100,200]: 20 + 120.
        let c: FlowSizeCdf = "100 20\n200 100\n".parse().unwrap();
        assert_eq!(c.mean_bytes(), 140.0);
        assert_eq!(c.quantile(0.1), 100.0);
        assert_eq!(c.quantile(0.6), 150.0);
        // A vertical segment is an atom; a flat one carries no mass.
        let c: FlowSizeCdf = "0 0\n50 0\n50 40\n100 100\n".parse().unwrap();
        assert_eq!(c.mean_bytes(), 0.4 * 50.0 + 0.6 * 75.0);
        assert_eq!(c.quantile(0.2), 50.0);
        // Hand-summed hadoop mean (the built-in points above).
        assert!((FlowSizeCdf::hadoop().mean_bytes() - 120_420.75).abs() < 1e-3, "{}", FlowSizeCdf::hadoop().mean_bytes());
    }

    #[test]
    fn samples_are_whole_bytes_of_at_least_one() {
        let c: FlowSizeCdf = "0 0\n1 100\n".parse().unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        assert!((0..1000).all(|_| c.sample(&mut rng) == 1));
    }

    #[test]
    fn from_file_names_file_and_line() {
        let path = std::env::temp_dir().join(format!("innet-workloads-cdf-{}.txt", std::process::id()));
        std::fs::write(&path, "# hadoop-like\n0 0\n\n100 50 7\n").unwrap();
        let e = FlowSizeCdf::from_file(&path).unwrap_err();
        assert!(e.starts_with(&format!("{}:4: expected 'bytes percent'", path.display())), "{e}");
        std::fs::write(&path, "0 0\n100 50\n300 100\n").unwrap();
        assert_eq!(cdf_by_name(path.to_str().unwrap()).unwrap().mean_bytes(), 0.5 * 50.0 + 0.5 * 200.0);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn bad_cdfs_say_what_is_wrong() {
        assert!(FlowSizeCdf::from_percent_points(&[(0.0, 0.0), (10.0, 90.0)]).unwrap_err().contains("100 percent"));
        assert!(FlowSizeCdf::from_percent_points(&[(5.0, 0.0), (1.0, 100.0)]).unwrap_err().contains("point 2"));
        let e = FlowSizeCdf::parse("0 0\n100 fifty\n", "x.cdf").unwrap_err();
        assert!(e.starts_with("x.cdf:2:"), "{e}");
        assert!(cdf_by_name("nosuch").unwrap_err().contains("hadoop"));
        assert!(FlowSizeCdf::from_percent_points(&[(0.0, 0.0)]).unwrap_err().contains("at least 2 points"));
        assert!(FlowSizeCdf::from_percent_points(&[(0.0, 0.0), (5.0, 60.0), (9.0, 50.0), (10.0, 100.0)])
            .unwrap_err()
            .starts_with("point 3: percents must not decrease"));
        assert!(FlowSizeCdf::from_percent_points(&[(0.0, 0.0), (10.0, 101.0)]).unwrap_err().contains("within 0..100"));
        assert!(FlowSizeCdf::from_percent_points(&[(f64::NAN, 0.0), (10.0, 100.0)]).unwrap_err().starts_with("point 1"));
        assert!(FlowSizeCdf::from_percent_points(&[(-1.0, 0.0), (10.0, 100.0)]).unwrap_err().starts_with("point 1"));
    }

    proptest::proptest! {
        #[test]
        fn parsing_any_text_never_panics_and_valid_cdfs_sample_in_range(text in "\\PC{0,120}", u in 0.0f64..1.0) {
            if let Ok(c) = text.parse::<FlowSizeCdf>() {
                let q = c.quantile(u);
                let (lo, hi) = (c.points()[0].0, c.points().last().unwrap().0);
                proptest::prop_assert!(q >= lo && q <= hi, "{q} outside {lo}..{hi}");
            }
        }

        #[test]
        fn quantile_is_monotone(a in 0.0f64..1.0, b in 0.0f64..1.0) {
            let c = FlowSizeCdf::websearch();
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            proptest::prop_assert!(c.quantile(lo) <= c.quantile(hi));
        }
    }
}
