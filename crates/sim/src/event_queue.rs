//! The event list: a 4-ary min-heap over (time, sequence) keys.
//!
//! Ties in time are broken by the sequence number of scheduling, so runs are deterministic.
//! (A radix heap was tried and measured slower on fat-tree runs; the 4-ary heap is a little
//! faster than std's binary heap at FT16 scale: see docs/architecture.md.)


/// A 4-ary min-heap: half the depth of a binary heap, and a node's children share cache lines.
pub struct EventQueue<T> {
    items: Vec<(u64, u64, T)>,
}

impl<T: Copy> EventQueue<T> {
    pub fn new() -> Self {
        EventQueue { items: Vec::with_capacity(4096) }
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    #[inline]
    fn less(a: &(u64, u64, T), b: &(u64, u64, T)) -> bool {
        Self::key(a) < Self::key(b)
    }
    #[inline]
    fn key(a: &(u64, u64, T)) -> u128 {
        ((a.0 as u128) << 64) | a.1 as u128
    }
    #[inline]
    pub fn push(&mut self, time_ps: u64, seq: u64, item: T) {
        let mut i = self.items.len();
        let new = (time_ps, seq, item);
        self.items.push(new);
        while i > 0 {
            let parent = (i - 1) / 4;
            if Self::less(&new, &self.items[parent]) {
                self.items[i] = self.items[parent];
                i = parent;
            } else {
                break;
            }
        }
        self.items[i] = new;
    }
    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        self.items.first().map(|i| i.0)
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, T)> {
        let n = self.items.len();
        if n == 0 {
            return None;
        }
        let top = self.items[0];
        let last = self.items.pop().expect("non-empty");
        let n = n - 1;
        if n > 0 {
            let mut i = 0;
            loop {
                let first = 4 * i + 1;
                if first >= n {
                    break;
                }
                let end = (first + 4).min(n);
                // Branch-free choice of the smallest child: the comparisons are unpredictable.
                let mut best = first;
                let mut best_key = Self::key(&self.items[first]);
                for c in first + 1..end {
                    let k = Self::key(&self.items[c]);
                    let lt = k < best_key;
                    best = if lt { c } else { best };
                    best_key = if lt { k } else { best_key };
                }
                if best_key < Self::key(&last) {
                    self.items[i] = self.items[best];
                    i = best;
                } else {
                    break;
                }
            }
            self.items[i] = last;
        }
        Some((top.0, top.2))
    }
    pub fn drain_all(&mut self) -> Vec<(u64, T)> {
        self.items.drain(..).map(|(t, _, x)| (t, x)).collect()
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
    fn ties_in_time_come_out_in_scheduling_order() {
        let mut q = EventQueue::new();
        q.push(10, 3, 'c');
        q.push(5, 4, 'd');
        q.push(10, 1, 'a');
        q.push(10, 2, 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, c)| c)).collect();
        assert_eq!(order, vec!['d', 'a', 'b', 'c']);
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
