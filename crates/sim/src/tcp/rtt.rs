//! RFC 6298 retransmission-timeout estimator: SRTT / RTTVAR from samples, clamped RTO, and
//! exponential backoff that lasts until the next valid sample (Karn's rule is the caller's job:
//! it only feeds samples from segments that were never retransmitted).

#[derive(Debug, Clone)]
pub(crate) struct RttEstimator {
    srtt_ps: Option<u64>,
    rttvar_ps: u64,
    min_rtt_ps: Option<u64>,
    rto_ps: u64,
    min_rto_ps: u64,
    max_rto_ps: u64,
    granularity_ps: u64,
}

impl RttEstimator {
    pub(crate) fn new(initial_rto_ps: u64, min_rto_ps: u64, max_rto_ps: u64, granularity_ps: u64) -> Self {
        let max_rto_ps = max_rto_ps.max(min_rto_ps).max(1);
        RttEstimator {
            srtt_ps: None,
            rttvar_ps: 0,
            min_rtt_ps: None,
            // RFC 6298 (2.1) starts from the initial RTO unclamped by min RTO: a profile may set
            // it below min_rto on purpose (the SwitchV2P artifact's 3 × 106 µs SYN timeout).
            rto_ps: initial_rto_ps.clamp(1, max_rto_ps),
            min_rto_ps,
            max_rto_ps,
            granularity_ps,
        }
    }

    /// Feed one RTT measurement (RFC 6298 §2.2 / §2.3; alpha 1/8, beta 1/4).
    pub(crate) fn sample(&mut self, rtt_ps: u64) {
        match self.srtt_ps {
            None => {
                self.srtt_ps = Some(rtt_ps);
                self.rttvar_ps = rtt_ps / 2;
            }
            Some(srtt) => {
                // u128 so that absurd inputs cannot overflow.
                let err = srtt.abs_diff(rtt_ps) as u128;
                self.rttvar_ps = ((3 * self.rttvar_ps as u128 + err) / 4) as u64;
                self.srtt_ps = Some(((7 * srtt as u128 + rtt_ps as u128) / 8) as u64);
            }
        }
        self.min_rtt_ps = Some(self.min_rtt_ps.map_or(rtt_ps, |m| m.min(rtt_ps)));
        let srtt = self.srtt_ps.unwrap_or(rtt_ps);
        let rto = srtt.saturating_add(self.granularity_ps.max(self.rttvar_ps.saturating_mul(4)));
        self.rto_ps = rto.clamp(self.min_rto_ps, self.max_rto_ps);
    }

    /// RFC 6298 (5.5): double the RTO after a timeout, up to the maximum.
    pub(crate) fn back_off(&mut self) {
        self.rto_ps = self.rto_ps.saturating_mul(2).min(self.max_rto_ps);
    }

    pub(crate) fn rto_ps(&self) -> u64 {
        self.rto_ps
    }

    pub(crate) fn srtt_ps(&self) -> Option<u64> {
        self.srtt_ps
    }

    pub(crate) fn rttvar_ps(&self) -> u64 {
        self.rttvar_ps
    }

    pub(crate) fn min_rtt_ps(&self) -> Option<u64> {
        self.min_rtt_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000_000;

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = RttEstimator::new(1000 * MS, 200 * MS, 60_000 * MS, MS);
        assert_eq!(e.rto_ps(), 1000 * MS);
        e.sample(100 * MS);
        assert_eq!(e.srtt_ps(), Some(100 * MS));
        assert_eq!(e.rttvar_ps(), 50 * MS);
        // 100 + 4 * 50 = 300 ms
        assert_eq!(e.rto_ps(), 300 * MS);
    }

    #[test]
    fn later_samples_use_the_rfc_gains_and_min_rto_clamps() {
        let mut e = RttEstimator::new(1000 * MS, 200 * MS, 60_000 * MS, MS);
        e.sample(100 * MS);
        e.sample(20 * MS);
        // rttvar = (3*50 + 80)/4 = 57.5 ms; srtt = (700 + 20)/8 = 90 ms
        assert_eq!(e.rttvar_ps(), 57_500_000_000);
        assert_eq!(e.srtt_ps(), Some(90 * MS));
        assert_eq!(e.rto_ps(), 90 * MS + 4 * 57_500_000_000);
        for _ in 0..200 {
            e.sample(MS);
        }
        assert_eq!(e.rto_ps(), 200 * MS, "min RTO bounds a tiny RTT");
        assert_eq!(e.min_rtt_ps(), Some(MS));
    }

    #[test]
    fn granularity_bounds_the_variance_term() {
        let mut e = RttEstimator::new(MS, 1, 60_000 * MS, MS);
        for _ in 0..100 {
            e.sample(10_000_000); // 10 µs, no variance after a while
        }
        assert_eq!(e.rto_ps(), 10_000_000 + MS);
    }

    #[test]
    fn backoff_doubles_until_the_maximum_and_a_sample_resets_it() {
        let mut e = RttEstimator::new(1000 * MS, 200 * MS, 5000 * MS, MS);
        e.back_off();
        assert_eq!(e.rto_ps(), 2000 * MS);
        e.back_off();
        e.back_off();
        assert_eq!(e.rto_ps(), 5000 * MS);
        e.sample(100 * MS);
        assert_eq!(e.rto_ps(), 300 * MS);
    }
}
