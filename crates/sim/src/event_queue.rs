//! The event list: a 4-ary min-heap over (time, sequence) keys.
//!
//! Ties in time are broken by the sequence number of scheduling, so runs are deterministic.
//! (A radix heap was tried and measured slower on fat-tree runs; the 4-ary heap is a little
//! faster than std's binary heap at FT16 scale: see docs/architecture.md.) The key is stored as
//! one `u128` (time above sequence) so a comparison is two instructions, and `pop` sifts the hole
//! to the bottom choosing children by a 3-comparison tournament, then sifts the last item up
//! (Floyd's bottom-up pop: the last item nearly always belongs near the bottom). Entries sit two
//! per 64-byte line so that a node's four children are two whole lines (see [`EventQueue`]).

/// A 4-ary min-heap: half the depth of a binary heap, and a node's four children on two whole
/// cache lines.
pub struct EventQueue<T> {
    /// The entries, two per 64-byte line; node `i` is entry `i + 1`, so the children of node `i`
    /// (entries `4i + 2 ..= 4i + 5`) are exactly two lines. (In a plain `Vec` the allocation is
    /// only 16-byte aligned, and a group of four 32-byte entries spans two or three lines.)
    /// Entries past the last node are stale copies.
    lines: Vec<Pair<T>>,
    len: usize,
}

/// Two entries on one cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Pair<T>([(u128, T); 2]);

#[inline(always)]
fn key(time_ps: u64, seq: u64) -> u128 {
    ((time_ps as u128) << 64) | seq as u128
}

impl<T: Copy> EventQueue<T> {
    /// A line holds exactly two entries (true for the 16-byte events; 32-byte entries).
    const TWO_PER_LINE: () = assert!(
        std::mem::size_of::<Pair<T>>() == 2 * std::mem::size_of::<(u128, T)>(),
        "an event queue entry must be half a cache line"
    );

    pub fn new() -> Self {
        EventQueue { lines: Vec::with_capacity(2048), len: 0 }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The nodes, as one slice (node `i` at index `i`).
    #[inline(always)]
    fn nodes(&mut self) -> &mut [(u128, T)] {
        #[allow(clippy::let_unit_value)]
        let () = Self::TWO_PER_LINE;
        let entries = 2 * self.lines.len();
        // SAFETY: `Pair<T>` is `repr(C)` around `[(u128, T); 2]` with no padding (checked by
        // `TWO_PER_LINE`) and an alignment that is a multiple of the entry's, so the pairs are
        // `entries` initialized entries in a row, borrowed mutably with `self`.
        let all = unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<(u128, T)>(), entries) };
        &mut all[1..1 + self.len]
    }
    /// The root entry.
    #[inline(always)]
    fn root(&self) -> Option<&(u128, T)> {
        (self.len > 0).then(|| &self.lines[0].0[1])
    }
    #[inline(always)]
    pub fn push(&mut self, time_ps: u64, seq: u64, item: T) {
        let new = (key(time_ps, seq), item);
        if 2 * self.lines.len() < self.len + 2 {
            self.lines.push(Pair([new; 2]));
        }
        self.len += 1;
        let items = self.nodes();
        let mut i = items.len() - 1;
        // SAFETY (the unchecked indexing below and in `pop`): every index is a node below the
        // slice's length: `i` starts at the last node and only moves to its parent, which is
        // smaller. (Checked indexing cost 2.9 % more instructions on the k=4 run.)
        while i > 0 {
            let parent = (i - 1) / 4;
            let p = unsafe { *items.get_unchecked(parent) };
            if new.0 < p.0 {
                unsafe { *items.get_unchecked_mut(i) = p };
                i = parent;
            } else {
                break;
            }
        }
        unsafe { *items.get_unchecked_mut(i) = new };
    }
    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        self.root().map(|i| (i.0 >> 64) as u64)
    }
    /// The (time, sequence) key of the next item, as one number (time above sequence).
    #[inline]
    pub fn peek_key(&self) -> Option<u128> {
        self.root().map(|i| i.0)
    }
    /// The next item, without removing it.
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        self.root().map(|i| &i.1)
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, T)> {
        let n = self.len.checked_sub(1)?;
        let items = self.nodes();
        let last = items[n];
        let top = items[0];
        self.len = n;
        if n == 0 {
            return Some(((last.0 >> 64) as u64, last.1));
        }
        let items = &mut self.nodes()[..n];
        // Move the hole at the root down to a leaf along the smallest children.
        let mut hole = 0;
        loop {
            let first = 4 * hole + 1;
            let best = if first + 4 <= n {
                // Tournament of the four children: two independent comparisons, then one.
                let c = &items[first..first + 4];
                let a = if c[1].0 < c[0].0 { 1 } else { 0 };
                let b = if c[3].0 < c[2].0 { 3 } else { 2 };
                first + if c[b].0 < c[a].0 { b } else { a }
            } else if first < n {
                let mut best = first;
                for c in first + 1..n {
                    if items[c].0 < items[best].0 {
                        best = c;
                    }
                }
                best
            } else {
                break;
            };
            // SAFETY: `best` is a child found below `n` above, and `hole` its parent.
            debug_assert!(hole < best && best < n);
            unsafe { *items.get_unchecked_mut(hole) = *items.get_unchecked(best) };
            hole = best;
        }
        // Sift the last item up from the hole. (The same loop as `push`'s, written out twice on
        // purpose: a shared helper cost 2.3 % more instructions on the FT8 TCP run, cachegrind.)
        // SAFETY: as in `push`: `hole` is a node below `n` and only moves to its parent.
        debug_assert!(hole < n);
        while hole > 0 {
            let parent = (hole - 1) / 4;
            let p = unsafe { *items.get_unchecked(parent) };
            if last.0 < p.0 {
                unsafe { *items.get_unchecked_mut(hole) = p };
                hole = parent;
            } else {
                break;
            }
        }
        unsafe { *items.get_unchecked_mut(hole) = last };
        Some(((top.0 >> 64) as u64, top.1))
    }
    pub fn drain_all(&mut self) -> Vec<(u64, T)> {
        if self.len == 0 {
            return Vec::new();
        }
        let out = self.nodes().iter().map(|&(k, x)| ((k >> 64) as u64, x)).collect();
        self.lines.clear();
        self.len = 0;
        out
    }
}

impl<T: Copy> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_of_a_node_are_two_whole_lines() {
        let mut q = EventQueue::new();
        for i in 0..5_000u64 {
            q.push(i, i, i);
            let base = q.lines.as_ptr() as usize;
            assert_eq!(base % 64, 0);
            for node in [0, 1, 7, (q.len() - 1) / 4] {
                // Node i is entry i + 1; its first child, node 4i + 1, is entry 4i + 2.
                assert_eq!((base + 32 * (4 * node + 2)) % 64, 0, "node {node}'s children start a line");
            }
        }
    }

    #[test]
    fn ties_in_time_come_out_in_scheduling_order() {
        let mut q = EventQueue::new();
        q.push(10, 3, 'c');
        q.push(5, 4, 'd');
        q.push(10, 1, 'a');
        q.push(10, 2, 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, c)| c)).collect();
        assert_eq!(order, vec!['d', 'a', 'b', 'c']);
        assert!(q.drain_all().is_empty() && EventQueue::<char>::new().drain_all().is_empty());
        q.push(1, 5, 'e');
        q.push(0, 6, 'f');
        assert_eq!(q.drain_all().len(), 2);
        assert!(q.is_empty() && q.pop().is_none());
    }

    proptest::proptest! {
        /// Interleaved pushes (never before the current time) and pops come out exactly in
        /// (time, seq) order, as from a reference binary heap.
        #[test]
        fn pops_in_time_then_sequence_order(ops in proptest::collection::vec((0u8..3, 0u64..1_000), 1..3000)) {
            use std::cmp::Reverse;
            let mut q = EventQueue::new();
            let mut model = std::collections::BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (op, delta) in ops {
                if op == 0 && !model.is_empty() {
                    let Reverse((t, s)) = model.pop().unwrap();
                    proptest::prop_assert_eq!(q.pop(), Some((t, s)));
                    now = t;
                } else {
                    seq += 1;
                    let t = now + if op == 1 { delta } else { delta % 3 };
                    q.push(t, seq, seq);
                    model.push(Reverse((t, seq)));
                }
            }
            while let Some(Reverse((t, s))) = model.pop() {
                proptest::prop_assert_eq!(q.pop(), Some((t, s)));
            }
            proptest::prop_assert!(q.pop().is_none());
        }
    }
}
