//! Simulated time: integer picoseconds, and the conversions the rest of the simulator uses.
//!
//! Every duration or instant inside a simulation is a `u64` count of picoseconds (about 213 days
//! of range), so arithmetic is exact and runs are reproducible bit for bit.

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// Time to serialize `bytes` onto a link of `bandwidth_bps`, rounded up to a whole picosecond.
#[inline]
pub fn serialization_ps(bytes: u64, bandwidth_bps: u64) -> u64 {
    debug_assert!(bandwidth_bps > 0);
    let bits_ps = bytes as u128 * 8 * PS_PER_S as u128;
    bits_ps.div_ceil(bandwidth_bps as u128) as u64
}

pub fn ps_to_us(ps: u64) -> f64 {
    ps as f64 / PS_PER_US as f64
}

pub fn us_to_ps(us: f64) -> u64 {
    (us * PS_PER_US as f64).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_is_exact_for_common_rates() {
        assert_eq!(serialization_ps(1, 100_000_000_000), 80);
        assert_eq!(serialization_ps(1500, 100_000_000_000), 120_000);
        assert_eq!(serialization_ps(1500, 400_000_000_000), 30_000);
        // 1 byte at 3 bps = 8/3 s, rounded up to the next picosecond.
        assert_eq!(serialization_ps(1, 3), 2_666_666_666_667);
    }
}
