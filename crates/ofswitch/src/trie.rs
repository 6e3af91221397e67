//! The answer OVS's path-compressed prefix trie gives for a lookup, computed from the set of
//! prefixes: how many leading bits must be un-wildcarded to rule out every prefix that does not
//! match, and which prefix lengths do match. Used for nw_src/nw_dst and the L4 port trie.

/// A set of (value, length) prefixes over a `width_bits`-wide field (values right-aligned),
/// stored as an uncompressed binary trie so a lookup walks at most `width_bits` nodes whatever
/// the number of prefixes (a table of 10K ClassBench rules has thousands of them).
#[derive(Clone, Debug)]
pub struct PrefixSet {
    pub width_bits: u32,
    /// Node 0 is the root (depth 0); a node at depth d stands for the d leading bits of every
    /// prefix through it.
    nodes: Vec<TrieNode>,
    n_prefixes: usize,
}

#[derive(Clone, Copy, Debug)]
struct TrieNode {
    /// Child for the next bit 0 / 1 (0: none; the root is never a child).
    child: [u32; 2],
    /// A prefix ends at this node.
    ends: bool,
}

const EMPTY_NODE: TrieNode = TrieNode { child: [0, 0], ends: false };

impl Default for PrefixSet {
    fn default() -> Self {
        PrefixSet::new(32)
    }
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
        PrefixSet { width_bits, nodes: vec![EMPTY_NODE], n_prefixes: 0 }
    }

    #[inline]
    fn bit(&self, value: u64, depth: u32) -> usize {
        ((value >> (self.width_bits - 1 - depth)) & 1) as usize
    }

    /// Adds a prefix of `len` bits (1..=width) whose leading bits are those of `value`.
    pub fn insert(&mut self, value: u64, len: u32) {
        if len == 0 {
            return;
        }
        let mut n = 0usize;
        for d in 0..len.min(self.width_bits) {
            let b = self.bit(value, d);
            n = match self.nodes[n].child[b] {
                0 => {
                    self.nodes.push(EMPTY_NODE);
                    let c = self.nodes.len() - 1;
                    self.nodes[n].child[b] = c as u32;
                    c
                }
                c => c as usize,
            };
        }
        self.nodes[n].ends = true;
        self.n_prefixes += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.n_prefixes == 0
    }

    pub fn prefix_mask(&self, len: u32) -> u64 {
        let full = if self.width_bits == 64 { u64::MAX } else { (1u64 << self.width_bits) - 1 };
        if len == 0 {
            0
        } else {
            full & !(full >> len)
        }
    }

    /// Walks the trie as OVS does: stops at the first bit where the value leaves the trie and
    /// returns that depth plus one, or the depth itself when it stopped at a leaf.
    ///
    /// With d = the deepest bit the value shares with any prefix (the depth of the walk),
    /// `maskbits` = d if a prefix ends at d and none extends below it, else d + 1 (the width on
    /// a full match).
    #[inline]
    pub fn lookup(&self, value: u64) -> TrieLookup {
        let mut matching_lengths = 0u64;
        if self.n_prefixes == 0 {
            return TrieLookup { mask_bits: 0, matching_lengths };
        }
        let mut n = 0usize;
        let mut depth = 0u32;
        loop {
            let node = self.nodes[n];
            if node.ends && depth > 0 {
                matching_lengths |= 1u64 << (depth - 1);
            }
            if depth >= self.width_bits {
                return TrieLookup { mask_bits: self.width_bits, matching_lengths };
            }
            match node.child[self.bit(value, depth)] {
                0 => {
                    let leaf = node.child == [0, 0];
                    let mask_bits = if node.ends && leaf { depth } else { depth + 1 };
                    return TrieLookup { mask_bits, matching_lengths };
                }
                c => {
                    n = c as usize;
                    depth += 1;
                }
            }
        }
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

    /// The definition the trie walk must agree with, over a plain list of prefixes.
    fn lookup_by_scan(width: u32, prefixes: &[(u64, u32)], value: u64) -> TrieLookup {
        let t = PrefixSet::new(width);
        let common = |a: u64, b: u64| (((a ^ b) << (64 - width)).leading_zeros()).min(width);
        let (mut depth, mut matching_lengths) = (0, 0u64);
        if prefixes.is_empty() {
            return TrieLookup { mask_bits: 0, matching_lengths };
        }
        for &(p, len) in prefixes {
            let c = common(value, p).min(len);
            depth = depth.max(c);
            if c == len {
                matching_lengths |= 1u64 << (len - 1);
            }
        }
        if depth >= width {
            return TrieLookup { mask_bits: width, matching_lengths };
        }
        let ends_here = prefixes.iter().any(|&(p, len)| len == depth && common(value, p) >= len);
        let extends = prefixes.iter().any(|&(p, len)| len > depth && common(value, p) >= depth);
        let _ = t;
        TrieLookup { mask_bits: if ends_here && !extends { depth } else { depth + 1 }, matching_lengths }
    }

    #[test]
    fn the_trie_walk_equals_the_prefix_scan() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for width in [16u32, 32] {
            for round in 0..200 {
                let mut t = PrefixSet::new(width);
                let mut list = Vec::new();
                // Few distinct top bits so prefixes share paths, and lengths 1..=width.
                let base: u64 = rng.gen::<u64>() & t.prefix_mask(width);
                for _ in 0..(round % 40) {
                    let len = rng.gen_range(1..=width);
                    let v = (base ^ (1u64 << rng.gen_range(0..width))) & t.prefix_mask(len);
                    t.insert(v, len);
                    list.push((v, len));
                }
                for _ in 0..50 {
                    let v = (base ^ (rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>())) & t.prefix_mask(width);
                    assert_eq!(t.lookup(v), lookup_by_scan(width, &list, v), "width {width} value {v:#x} prefixes {list:x?}");
                }
            }
        }
    }

    #[test]
    fn stops_at_a_leaf() {
        let mut t = PrefixSet::new(32);
        t.insert(ip(10, 0, 0, 0), 8);
        t.insert(ip(192, 168, 0, 0), 16);
        assert_eq!(t.lookup(ip(10, 9, 9, 9)).mask_bits, 8);
    }
}
