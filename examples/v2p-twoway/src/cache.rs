//! The idea: SwitchV2P's cache with two ways instead of one.
//!
//! SwitchV2P gives each switch a direct-mapped cache (paper §3.1, citing Hill's "A Case for
//! Direct-Mapped Caches"): one slot per key, so two hot VIPs that share an index keep evicting
//! each other while other slots sit idle. [`TwoWay`] splits the same number of slots into two
//! direct-mapped ways, each indexed by its own hash (way 0 by SwitchV2P's CRC-32, way 1 by
//! CRC-32C: a *skewed*-associative cache, so keys that collide in one way rarely collide in the
//! other). On Tofino each way is one register array in its own stage, as SwitchV2P's one cache is.
//!
//! The protocol keeps its rules; what they mean here ([`MappingCache`]'s contract):
//! - lookup probes way 0, and way 1 only if way 0 missed; a probe that misses clears the bit
//!   of the slot it landed on (the paper's rule, per way);
//! - an insertion of a key not cached takes an empty way first, then a way whose entry has its
//!   access bit clear, then way 0; `slot_bit` is the bit of that slot, so SwitchV2P's spines
//!   refuse a newcomer only when *both* ways hold entries in use;
//! - a key is never in both ways.

use innet_dataplane::state::{HashAlgorithm, HashUnit, ResourceEntry};
use innet_switchv2p::cache::{DirectMapped, Evicted, MappingCache};

/// Two direct-mapped ways of (nearly) half the slots each.
#[derive(Debug, Clone)]
pub struct TwoWay {
    ways: [DirectMapped; 2],
}

impl TwoWay {
    /// `slots` in all (way 0 takes the odd one); way 0 indexed by CRC-32 salted with `salt`
    /// (SwitchV2P's function when `salt` is 0), way 1 by CRC-32C with the same salt.
    pub fn new(slots: u32, salt: u32) -> Self {
        let w0 = slots.div_ceil(2);
        TwoWay {
            ways: [
                DirectMapped::new(w0, salt),
                DirectMapped::with_hash(slots - w0, HashUnit::new(HashAlgorithm::Crc32c, salt)),
            ],
        }
    }

    /// The way holding `key`.
    fn way_of(&self, key: u32) -> Option<usize> {
        (0..2).find(|&w| self.ways[w].find(key).is_some())
    }

    /// The way an insertion of `key` (not cached) takes: an empty one, else one whose entry is
    /// not in use, else way 0; None when the cache has no slots.
    fn victim_way(&self, key: u32) -> Option<usize> {
        let usable = |w: &usize| self.ways[*w].capacity() > 0;
        let occupant = |w: usize| self.ways[w].occupant(key);
        (0..2)
            .filter(usable)
            .find(|&w| occupant(w).is_none())
            .or_else(|| (0..2).filter(usable).find(|&w| occupant(w).is_some_and(|(_, _, bit)| !bit)))
            .or_else(|| (0..2).find(usable))
    }

    /// Every cached (key, val, bit): way 0's, then way 1's, each in slot order.
    pub fn entries(&self) -> Vec<(u32, u32, bool)> {
        self.ways.iter().flat_map(|w| w.entries()).collect()
    }
}

impl MappingCache for TwoWay {
    fn capacity(&self) -> u32 {
        self.ways[0].capacity() + self.ways[1].capacity()
    }

    fn get(&mut self, key: u32) -> Option<u32> {
        self.ways[0].get(key).or_else(|| self.ways[1].get(key))
    }

    fn find(&self, key: u32) -> Option<u32> {
        self.ways[0].find(key).or_else(|| self.ways[1].find(key))
    }

    fn slot_bit(&self, key: u32) -> bool {
        match self.way_of(key).or_else(|| self.victim_way(key)) {
            Some(w) => self.ways[w].slot_bit(key),
            None => false,
        }
    }

    fn put(&mut self, key: u32, val: u32) -> Result<Evicted, ()> {
        let w = self.way_of(key).or_else(|| self.victim_way(key)).ok_or(())?;
        self.ways[w].put(key, val)
    }

    fn put_if_free(&mut self, key: u32, val: u32) -> bool {
        if let Some(w) = self.way_of(key) {
            return self.ways[w].put_if_free(key, val);
        }
        (0..2).any(|w| self.ways[w].occupant(key).is_none() && self.ways[w].put_if_free(key, val))
    }

    fn remove(&mut self, key: u32) -> bool {
        self.way_of(key).is_some_and(|w| self.ways[w].remove(key))
    }

    fn index_bits(&self) -> u32 {
        self.ways[0].index_bits()
    }

    /// Each way is SwitchV2P's pair of register arrays.
    fn resource_entries(&self, prefix: &str) -> Vec<ResourceEntry> {
        (0..2).flat_map(|w| self.ways[w].resource_entries(&format!("{prefix}_way{w}"))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Against the plain truth: a hit returns the last value put for that key; a key is in
        /// one way at most; occupancy never exceeds the slots; `put` reports what it displaced.
        #[test]
        fn two_way_never_answers_wrong(slots in 0u32..9, salt in any::<u32>(), ops in proptest::collection::vec((0u8..5, 0u32..40, 0u32..4), 1..300)) {
            let mut c = TwoWay::new(slots, salt);
            let mut truth: HashMap<u32, u32> = HashMap::new();
            for (op, k, v) in ops {
                match op {
                    0 => if let Some(got) = c.get(k) { prop_assert_eq!(truth.get(&k), Some(&got)) },
                    1 => match c.put(k, v) {
                        Ok(evicted) => {
                            if let Some((ek, ev)) = evicted {
                                prop_assert_ne!(ek, k);
                                prop_assert_eq!(truth.get(&ek), Some(&ev));
                                truth.remove(&ek);
                            }
                            truth.insert(k, v);
                        }
                        Err(()) => prop_assert_eq!(slots, 0),
                    },
                    2 => if c.put_if_free(k, v) { truth.insert(k, v); },
                    3 => { if c.remove(k) { truth.remove(&k); } }
                    _ => { if c.remove_if(k, v) { prop_assert_eq!(truth.remove(&k), Some(v)); } }
                }
                let entries = c.entries();
                prop_assert!(entries.len() as u32 <= slots);
                let mut keys: Vec<u32> = entries.iter().map(|e| e.0).collect();
                keys.sort_unstable();
                keys.dedup();
                prop_assert_eq!(keys.len(), entries.len(), "a key in both ways");
                for (k, v, _) in entries {
                    prop_assert_eq!(truth.get(&k), Some(&v));
                }
            }
        }
    }

    /// Two keys that share a way-0 slot both stay cached (one in each way), and a third key
    /// meets a "busy" slot only when both ways hold entries in use.
    #[test]
    fn a_conflict_in_one_way_lands_in_the_other() {
        let mut c = TwoWay::new(16, 0);
        let idx = |w: usize, k: u32| c.ways[w].index(k);
        let a = 7u32;
        let b = (a + 1..).find(|&b| idx(0, b) == idx(0, a) && idx(1, b) != idx(1, a)).unwrap();
        let n = (b + 1..).find(|&n| idx(0, n) == idx(0, a) && idx(1, n) == idx(1, b)).unwrap();
        assert_eq!(c.put(a, 1), Ok(None), "a takes the empty way 0");
        assert_eq!(c.get(a), Some(1));
        assert!(!c.slot_bit(b), "b's way-1 slot is empty");
        assert_eq!(c.put(b, 2), Ok(None), "b takes way 1: a direct-mapped cache would have evicted a");
        assert_eq!(c.get(b), Some(2), "a probe of way 0 (a's slot) missed first: a's bit is clear");
        assert!(!c.slot_bit(n), "n would displace a, not in use");
        assert_eq!(c.get(a), Some(1));
        assert!(c.slot_bit(n), "both of n's slots hold entries in use");
        assert_eq!(c.put(n, 3), Ok(Some((a, 1))), "with both busy, way 0 gives way");
        assert_eq!((c.find(a), c.find(b), c.find(n)), (None, Some(2), Some(3)));
        assert_eq!(c.capacity(), 16);
        assert_eq!(TwoWay::new(1, 0).capacity(), 1);
    }
}
