//! The receiver's out-of-order store: a short sorted list of disjoint, non-touching byte ranges
//! (virtual bytes, so only the interval ends are kept). The Vec is reused, so steady-state
//! inserts do not allocate.

#[derive(Debug, Clone, Default)]
pub(crate) struct RangeSet {
    /// Sorted by start; half-open [start, end); no two ranges overlap or touch.
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
    }

    /// Add [start, end), merging with every range it overlaps or touches.
    pub(crate) fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // First range whose end reaches `start` (could merge), then all that begin by `end`.
        let first = self.ranges.partition_point(|&(_, e)| e < start);
        let mut last = first;
        let (mut s, mut e) = (start, end);
        while last < self.ranges.len() && self.ranges[last].0 <= end {
            s = s.min(self.ranges[last].0);
            e = e.max(self.ranges[last].1);
            last += 1;
        }
        if first == last {
            self.ranges.insert(first, (s, e));
        } else {
            self.ranges[first] = (s, e);
            self.ranges.drain(first + 1..last);
        }
    }

    /// Given the next expected byte, take every range that starts at or before it and return
    /// the new next expected byte.
    pub(crate) fn advance(&mut self, mut next: u64) -> u64 {
        let taken = self.ranges.partition_point(|&(s, _)| s <= next);
        for &(_, e) in &self.ranges[..taken] {
            next = next.max(e);
        }
        self.ranges.drain(..taken);
        next
    }

    #[cfg(test)]
    pub(crate) fn as_slice(&self) -> &[(u64, u64)] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn merges_overlapping_and_touching_ranges() {
        let mut r = RangeSet::default();
        r.insert(10, 20);
        r.insert(30, 40);
        r.insert(20, 25); // touches the first
        assert_eq!(r.as_slice(), &[(10, 25), (30, 40)]);
        r.insert(24, 31); // bridges both
        assert_eq!(r.as_slice(), &[(10, 40)]);
        r.insert(0, 5);
        r.insert(50, 60);
        assert_eq!(r.as_slice(), &[(0, 5), (10, 40), (50, 60)]);
        assert_eq!(r.advance(5), 5, "a gap at 5..10 stops the advance");
        assert_eq!(r.as_slice(), &[(10, 40), (50, 60)]);
        assert_eq!(r.advance(10), 40);
        assert_eq!(r.as_slice(), &[(50, 60)]);
    }

    proptest! {
        #[test]
        fn matches_a_bitmap(ops in proptest::collection::vec((0u64..200, 0u64..30), 1..40), next in 0u64..100) {
            let mut r = RangeSet::default();
            let mut bits = [false; 256];
            for (s, l) in ops {
                r.insert(s, s + l);
                for b in &mut bits[s as usize..(s + l) as usize] { *b = true; }
            }
            let mut prev_end = None;
            for &(s, e) in r.as_slice() {
                prop_assert!(s < e);
                if let Some(p) = prev_end { prop_assert!(s > p, "ranges must not touch"); }
                prev_end = Some(e);
            }
            for (i, &b) in bits.iter().enumerate() {
                let i = i as u64;
                prop_assert_eq!(b, r.as_slice().iter().any(|&(s, e)| s <= i && i < e));
            }
            let mut expect = next;
            while bits.get(expect as usize).copied().unwrap_or(false) { expect += 1; }
            prop_assert_eq!(r.advance(next), expect);
            prop_assert!(r.as_slice().iter().all(|&(s, _)| s > expect));
        }
    }
}
