//! The answer OVS's path-compressed prefix trie gives for a lookup, computed from the set of
//! prefixes: how many leading bits must be un-wildcarded to rule out every prefix that does not
//! match, and which prefix lengths do match. Used for nw_src/nw_dst and the L4 port trie.

/// A set of (value, length) prefixes over a `width_bits`-wide field (values right-aligned).
#[derive(Clone, Debug, Default)]
pub struct PrefixSet {
    pub width_bits: u32,
    prefixes: Vec<(u64, u32)>,
}

/// What a trie lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrieLookup {
    /// Leading bits of the field that decide the lookup (OVS `maskbits`).
    pub mask_bits: u32,
    /// Bit `len - 1` is set when a prefix of length `len` matches the value.
    pub matching_lengths: u64,
}

impl PrefixSet {
    pub fn new(width_bits: u32) -> Self {
        PrefixSet { width_bits, prefixes: Vec::new() }
    }

    /// Adds a prefix of `len` bits (1..=width) whose leading bits are those of `value`.
    pub fn insert(&mut self, value: u64, len: u32) {
        if len > 0 {
            self.prefixes.push((value & self.prefix_mask(len), len));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty()
    }

    pub fn prefix_mask(&self, len: u32) -> u64 {
        let full = if self.width_bits == 64 { u64::MAX } else { (1u64 << self.width_bits) - 1 };
        if len == 0 {
            0
        } else {
            full & !(full >> len)
        }
    }

    fn common_bits(&self, a: u64, b: u64) -> u32 {
        let x = (a ^ b) << (64 - self.width_bits);
        x.leading_zeros().min(self.width_bits)
    }

    /// Walks the trie as OVS does: stops at the first bit where the value leaves the trie and
    /// returns that depth plus one, or the depth itself when it stopped at a leaf.
    pub fn lookup(&self, value: u64) -> TrieLookup {
        let mut depth = 0u32;
        let mut matching_lengths = 0u64;
        if self.prefixes.is_empty() {
            return TrieLookup { mask_bits: 0, matching_lengths };
        }
        for &(p, len) in &self.prefixes {
            let c = self.common_bits(value, p).min(len);
            depth = depth.max(c);
            if c == len {
                matching_lengths |= 1u64 << (len - 1);
            }
        }
        if depth >= self.width_bits {
            return TrieLookup { mask_bits: self.width_bits, matching_lengths };
        }
        let ends_here = self.prefixes.iter().any(|&(p, len)| len == depth && self.common_bits(value, p) >= len);
        let extends = self.prefixes.iter().any(|&(p, len)| len > depth && self.common_bits(value, p) >= depth);
        let mask_bits = if ends_here && !extends { depth } else { depth + 1 };
        TrieLookup { mask_bits, matching_lengths }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(a: u8, b: u8, c: u8, d: u8) -> u64 {
        u32::from_be_bytes([a, b, c, d]) as u64
    }

    #[test]
    fn reproduces_the_masks_ovs_printed() {
        let mut t = PrefixSet::new(32);
        t.insert(ip(10, 1, 2, 3), 32);
        t.insert(ip(10, 1, 2, 0), 24);
        t.insert(ip(10, 1, 0, 0), 16);
        t.insert(ip(10, 0, 0, 0), 8);
        assert_eq!(t.lookup(ip(10, 1, 2, 4)).mask_bits, 30);
        assert_eq!(t.lookup(ip(10, 1, 3, 4)).mask_bits, 24);
        assert_eq!(t.lookup(ip(10, 2, 3, 4)).mask_bits, 15);
        assert_eq!(t.lookup(ip(10, 200, 3, 4)).mask_bits, 9);
        assert_eq!(t.lookup(ip(11, 2, 3, 4)).mask_bits, 8);
        assert_eq!(t.lookup(ip(0, 0, 0, 0)).mask_bits, 5);
        assert_eq!(t.lookup(ip(10, 1, 2, 3)).mask_bits, 32);
        let l = t.lookup(ip(10, 1, 3, 4));
        assert_eq!(l.matching_lengths, (1 << 7) | (1 << 15));
    }

    #[test]
    fn stops_at_a_leaf() {
        let mut t = PrefixSet::new(32);
        t.insert(ip(10, 0, 0, 0), 8);
        t.insert(ip(192, 168, 0, 0), 16);
        assert_eq!(t.lookup(ip(10, 9, 9, 9)).mask_bits, 8);
    }
}
