//! Keys: ids ↔ key bytes, the 128-bit key hash the switch matches on, the partition a key lives
//! on, and the per-key value size of a workload.
//!
//! A key is its id written in lowercase hex, right-aligned and padded with '0' to the key length
//! (the artifact writes ranks in base 62; any injective printable form will do). The hash is two
//! independent 64-bit string hashes side by side, as the artifact's `hkey_hi`/`hkey_lo` are
//! (ours: FNV-1a and a ×33 polynomial, each finished with a 64-bit mixer). `hkey_bits` < 128
//! keeps only the top bits, to force collisions in tests of the correction path.

/// Write `id` as the key of `out.len()` bytes.
pub fn key_bytes(id: u64, out: &mut [u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut v = id;
    for b in out.iter_mut().rev() {
        *b = HEX[(v & 15) as usize];
        v >>= 4;
    }
}

/// The id of a key written by [`key_bytes`], if it is one.
pub fn key_id(key: &[u8]) -> Option<u64> {
    let digits = key.iter().skip_while(|&&b| b == b'0').count();
    if digits > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in key {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | d as u64;
    }
    Some(v)
}

#[inline]
fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The 128-bit key hash, keeping the top `bits` bits (1..=128).
pub fn hkey(key: &[u8], bits: u32) -> u128 {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0xABCDEF;
    for &c in key {
        a ^= c as u64;
        a = a.wrapping_mul(0x0000_0100_0000_01b3);
        b = b.wrapping_mul(33).wrapping_add(c as u64 + 0x45);
    }
    let h = ((mix64(a) as u128) << 64) | mix64(b ^ 0x1234_5678_9ABC_DEF1) as u128;
    if bits >= 128 {
        h
    } else {
        h & !(u128::MAX >> bits.max(1))
    }
}

/// The storage partition of a key: 16-bit FNV-1 of the key, modulo the partition count.
pub fn partition(key: &[u8], partitions: u32) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &c in key {
        h = h.wrapping_mul(0x0100_0193);
        h ^= c as u32;
    }
    let h16 = (h >> 16) ^ (h & 0xffff);
    h16 % partitions.max(1)
}

/// A uniform number in [0, 1) fixed by a key id and a salt (per-key sizes and cacheability).
pub fn key_uniform(id: u64, salt: u64) -> f64 {
    (mix64(id ^ mix64(salt)) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ids_round_trip_through_keys(id in 0u64..u64::MAX, len in 16usize..128) {
            let mut k = vec![0u8; len];
            key_bytes(id, &mut k);
            prop_assert_eq!(key_id(&k), Some(id));
        }
    }

    #[test]
    fn distinct_keys_get_distinct_hashes_and_partitions_spread() {
        let mut seen = std::collections::HashSet::new();
        let mut per = [0u32; 32];
        let mut k = [0u8; 16];
        for id in 0..100_000u64 {
            key_bytes(id, &mut k);
            assert!(seen.insert(hkey(&k, 128)));
            per[partition(&k, 32) as usize] += 1;
        }
        let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
        assert!(*hi as f64 / *lo as f64 <= 1.15, "{per:?}");
        // Truncated hashes collide as soon as there are more keys than values.
        let few: std::collections::HashSet<u128> = (0..1000u64)
            .map(|id| {
                key_bytes(id, &mut k);
                hkey(&k, 4)
            })
            .collect();
        assert!(few.len() <= 16);
    }
}
