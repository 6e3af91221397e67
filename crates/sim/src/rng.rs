//! Seed derivation: every component gets its own RNG stream from the run seed and a name, so
//! adding a component never shifts another's random numbers.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A stable 64-bit seed for `name` under `seed` (FNV-1a over the name, mixed with the seed).
pub fn derive_seed(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    crate::routing::mix64(h ^ crate::routing::mix64(seed))
}

pub fn rng_for(seed: u64, name: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive_seed(seed, name))
}
