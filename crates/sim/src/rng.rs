//! Seed derivation: every component gets its own RNG stream from the run seed and a name, so
//! adding a component never shifts another's random numbers; and the mixer every seeded hash
//! here uses.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A stable 64-bit seed for `name` under `seed` (FNV-1a over the name, mixed with the seed).
pub fn derive_seed(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    mix64(h ^ mix64(seed))
}

/// 64-bit mixer (the murmur3 finalizer): a fast hash with full avalanche.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    x
}

pub fn rng_for(seed: u64, name: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive_seed(seed, name))
}

/// A fast hasher for integer keys (connection keys, address pairs): `mix64` of each word, where
/// SipHash would cost as much as the work the map saves.
#[derive(Default)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix64(self.0 ^ b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = mix64(self.0 ^ x);
    }
    /// One `mix64` for a 32-bit key (addresses), not one per byte.
    fn write_u32(&mut self, x: u32) {
        self.0 = mix64(self.0 ^ x as u64);
    }
}

/// A `HashMap` with [`KeyHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<KeyHasher>>;
/// A `HashSet` with [`KeyHasher`].
pub type FastSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<KeyHasher>>;
