//! The switch's cache (the paper's §4.1): an LRU of keys, each holding the exact reply bytes
//! learned from the server's answers to misses (one per query shape), with write-through
//! consistency: a write invalidates its key when it is seen, no answer to a read that was in
//! flight across a write may fill the cache, and a write's successful reply may update the entry
//! only if no other write to that key overlapped it. So no read that starts after a write's
//! reply can see the value from before the write.

/// Looked up on every request: a fast seeded hasher instead of SipHash.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use hashbrown::HashTable;
use std::hash::BuildHasher;

/// A read's place in the order of write events, taken when the request passes the switch, and
/// the time it passed (the age of the answer it may fill is counted from there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadToken(u64, u64);

/// A write's place in the order of write events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteToken(u64);

const NIL: usize = usize::MAX;

/// Overwrite `buf` with `src`, keeping its allocation.
fn refill(buf: &mut Vec<u8>, src: &[u8]) {
    buf.clear();
    buf.extend_from_slice(src);
}

struct Node {
    key: Vec<u8>,
    /// The key's hash in `index` (kept so an eviction does not hash the victim's key again).
    hash: u64,
    /// (query shape, reply bytes, learned at ns): a key can be asked for in several ways
    /// (different columns, prepared or not); each way has its own learned answer.
    answers: Vec<(Vec<u8>, Vec<u8>, u64)>,
    prev: usize,
    next: usize,
}

#[derive(Debug, Default, Clone, Copy)]
struct KeyState {
    /// Clock of the last write event (begin or end) on this key.
    last_write: u64,
    pending: u32,
}

/// Counters of cache events.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub fills: u64,
    /// Answers to reads not stored because a write overlapped the read.
    pub fills_refused: u64,
    pub updates: u64,
    pub invalidations: u64,
    pub flushes: u64,
    pub evictions: u64,
    /// Answers found but older than the maximum age (counted as misses too).
    pub expired: u64,
}

/// LRU with a capacity in keys, plus the write bookkeeping that keeps it consistent.
pub struct Cache {
    capacity: usize,
    /// Key → node, as node indexes hashed by their node's key: a fill hashes its key once
    /// (look-up and insertion), an eviction not at all.
    index: HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    nodes: Vec<Node>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
    clock: u64,
    keys: HashMap<Vec<u8>, KeyState>,
    /// Reads taken before this clock may not fill (write bookkeeping was forgotten or a flush
    /// happened after them).
    floor: u64,
    /// Writes to unknown keys in flight: nothing may fill until they end.
    pending_all: u32,
    /// Answers older than this are not served (`max_age_ms`; None: no bound). An answer's age
    /// counts from when its read request passed the switch (it reflects the server at some
    /// moment after that), or from a write's reply for an answer a write set.
    max_age_ns: Option<u64>,
    /// The current time (the runtime's clock, set per packet).
    now_ns: u64,
    pub stats: CacheStats,
}

impl Cache {
    pub fn new(capacity: usize) -> Self {
        Cache {
            capacity,
            index: HashTable::new(),
            hasher: Default::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            clock: 1,
            keys: HashMap::default(),
            floor: 0,
            pending_all: 0,
            max_age_ns: None,
            now_ns: 0,
            stats: CacheStats::default(),
        }
    }
    /// Bound the age of the answers served (None: serve them until a write or eviction).
    pub fn set_max_age_ns(&mut self, max: Option<u64>) {
        self.max_age_ns = max;
    }
    /// The time now, on the clock ages are measured with.
    pub fn set_now_ns(&mut self, now: u64) {
        self.now_ns = now;
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    pub fn len(&self) -> usize {
        self.index.len()
    }
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.nodes[i].prev, self.nodes[i].next);
        if p == NIL {
            self.head = n
        } else {
            self.nodes[p].next = n
        }
        if n == NIL {
            self.tail = p
        } else {
            self.nodes[n].prev = p
        }
    }
    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }
    /// The node holding `key` (hashed `h`).
    fn find(&self, h: u64, key: &[u8]) -> Option<usize> {
        let nodes = &self.nodes;
        self.index.find(h, |&i| nodes[i].key == key).copied()
    }
    fn remove_key(&mut self, key: &[u8]) -> bool {
        let h = self.hash(key);
        let nodes = &self.nodes;
        let Ok(e) = self.index.find_entry(h, |&i| nodes[i].key == key) else {
            return false;
        };
        let (i, _) = e.remove();
        self.unlink(i);
        self.nodes[i].answers.clear();
        self.nodes[i].key.clear();
        self.free.push(i);
        true
    }

    /// The answer for `(key, shape)`, marking the key most recently used.
    pub fn lookup(&mut self, key: &[u8], shape: &[u8]) -> Option<&[u8]> {
        let h = self.hash(key);
        let found = self.find(h, key).and_then(|i| {
            let a = self.nodes[i].answers.iter().position(|a| a.0 == shape)?;
            Some((i, a))
        });
        let found = match (found, self.max_age_ns) {
            (Some((i, a)), Some(max))
                if self.now_ns.saturating_sub(self.nodes[i].answers[a].2) > max =>
            {
                self.stats.expired += 1;
                None
            }
            (f, _) => f,
        };
        match found {
            None => {
                self.stats.misses += 1;
                None
            }
            Some((i, a)) => {
                self.stats.hits += 1;
                self.unlink(i);
                self.push_front(i);
                Some(self.nodes[i].answers[a].1.as_slice())
            }
        }
    }

    /// A token for a write not yet begun (replaced by [`Cache::begin_write`]'s).
    pub(crate) fn placeholder_token() -> WriteToken {
        WriteToken(0)
    }

    /// A read request passed on to the server: remember when. The clock ticks, so a read that
    /// begins right after a write ended (or a flush) is ordered after it and may fill.
    pub fn begin_read(&mut self) -> ReadToken {
        self.clock += 1;
        ReadToken(self.clock, self.now_ns)
    }

    fn may_fill(&self, key: &[u8], token: ReadToken) -> bool {
        token.0 > self.floor
            && self.pending_all == 0
            && self
                .keys
                .get(key)
                .is_none_or(|s| s.pending == 0 && s.last_write < token.0)
    }

    /// The server answered a read: store the answer unless a write overlapped the read.
    pub fn fill(&mut self, key: &[u8], shape: &[u8], reply: &[u8], token: ReadToken) -> bool {
        if self.capacity == 0 {
            return false;
        }
        if !self.may_fill(key, token) {
            self.stats.fills_refused += 1;
            return false;
        }
        self.stats.fills += 1;
        self.insert(key, shape, reply, token.1);
        true
    }

    fn insert(&mut self, key: &[u8], shape: &[u8], reply: &[u8], learned_at_ns: u64) {
        let h = self.hash(key);
        if let Some(i) = self.find(h, key) {
            let n = &mut self.nodes[i];
            match n.answers.iter_mut().find(|a| a.0 == shape) {
                Some(a) => {
                    a.1.clear();
                    a.1.extend_from_slice(reply);
                    a.2 = learned_at_ns;
                }
                None => n
                    .answers
                    .push((shape.to_vec(), reply.to_vec(), learned_at_ns)),
            }
            self.unlink(i);
            self.push_front(i);
            return;
        }
        // Evict the least recently used key, keeping its buffers for the new entry (no
        // allocation per fill once the cache is full).
        let mut spare_answer = None;
        if self.index.len() >= self.capacity {
            let victim = self.tail;
            if let Ok(e) = self
                .index
                .find_entry(self.nodes[victim].hash, |&i| i == victim)
            {
                e.remove();
            }
            self.unlink(victim);
            spare_answer = self.nodes[victim].answers.pop();
            self.nodes[victim].answers.clear();
            self.free.push(victim);
            self.stats.evictions += 1;
        }
        let (mut s, mut r, _) = spare_answer.unwrap_or_default();
        refill(&mut s, shape);
        refill(&mut r, reply);
        let i = match self.free.pop() {
            Some(i) => {
                let n = &mut self.nodes[i];
                refill(&mut n.key, key);
                n.hash = h;
                n.answers.clear();
                n.answers.push((s, r, learned_at_ns));
                n.prev = NIL;
                n.next = NIL;
                i
            }
            None => {
                self.nodes.push(Node {
                    key: key.to_vec(),
                    hash: h,
                    answers: vec![(s, r, learned_at_ns)],
                    prev: NIL,
                    next: NIL,
                });
                self.nodes.len() - 1
            }
        };
        let nodes = &self.nodes;
        self.index.insert_unique(h, i, |&j| nodes[j].hash);
        self.push_front(i);
    }

    /// A write to `key` passed on to the server: invalidate now, block fills until it ends.
    pub fn begin_write(&mut self, key: &[u8]) -> WriteToken {
        if self.remove_key(key) {
            self.stats.invalidations += 1;
        }
        self.clock += 1;
        let s = self.keys.entry(key.to_vec()).or_default();
        s.pending += 1;
        s.last_write = self.clock;
        WriteToken(self.clock)
    }

    /// The server answered a write to `key`. With `update = Some((shape, reply))` (the write
    /// succeeded and its outcome is the value `reply` answers for `shape`), the entry is set
    /// to it if no other write to the key overlapped this one; otherwise the key stays absent.
    pub fn end_write(&mut self, key: &[u8], token: WriteToken, update: Option<(&[u8], &[u8])>) {
        if self.remove_key(key) {
            self.stats.invalidations += 1;
        }
        self.clock += 1;
        let clock = self.clock;
        let s = self.keys.entry(key.to_vec()).or_default();
        let alone = s.last_write == token.0 && s.pending == 1;
        s.pending = s.pending.saturating_sub(1);
        s.last_write = clock;
        if let (true, Some((shape, reply)), 0, true) =
            (alone, update, self.pending_all, self.capacity > 0)
        {
            if token.0 > self.floor {
                self.stats.updates += 1;
                self.insert(key, shape, reply, self.now_ns);
            }
        }
        self.prune_keys();
    }

    /// A write whose keys are unknown (a BATCH, DDL, TRUNCATE, a multi-key write): flush all.
    pub fn begin_write_all(&mut self) {
        self.flush();
        self.pending_all += 1;
    }
    pub fn end_write_all(&mut self) {
        self.flush();
        self.pending_all = self.pending_all.saturating_sub(1);
    }

    /// Drop every entry; reads in flight may not fill.
    pub fn flush(&mut self) {
        self.stats.flushes += 1;
        self.index.clear();
        self.nodes.clear();
        self.free.clear();
        self.head = NIL;
        self.tail = NIL;
        self.clock += 1;
        self.floor = self.clock;
    }

    /// Forget idle key states when they pile up; reads in flight then may not fill.
    fn prune_keys(&mut self) {
        if self.keys.len() > 4 * self.capacity + 1024 {
            self.keys.retain(|_, s| s.pending > 0);
            self.clock += 1;
            self.floor = self.clock;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[test]
    fn a_read_after_a_write_ended_may_fill_one_in_flight_may_not() {
        let mut c = Cache::new(4);
        let during = {
            let w = c.begin_write(b"k");
            let t = c.begin_read();
            c.end_write(b"k", w, None);
            t
        };
        assert!(
            !c.fill(b"k", b"s", b"old", during),
            "in flight across the write"
        );
        let after = c.begin_read();
        assert!(
            c.fill(b"k", b"s", b"new", after),
            "begun after the write ended"
        );
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"new"[..]));
        c.flush();
        let t = c.begin_read();
        assert!(c.fill(b"k", b"s", b"v", t), "begun after a flush");
    }

    /// With a maximum age, an answer is served only while younger than it, counted from when
    /// its read passed the switch (not when the answer came back); a new answer restarts it.
    #[test]
    fn answers_older_than_the_maximum_age_are_not_served() {
        let mut c = Cache::new(4);
        c.set_max_age_ns(Some(100));
        c.set_now_ns(1_000);
        let t = c.begin_read();
        c.set_now_ns(1_060);
        assert!(c.fill(b"k", b"s", b"v1", t));
        c.set_now_ns(1_100);
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"v1"[..]));
        c.set_now_ns(1_101);
        assert_eq!(c.lookup(b"k", b"s"), None, "101 ns after the read began");
        assert_eq!(c.stats.expired, 1);
        let t = c.begin_read();
        assert!(c.fill(b"k", b"s", b"v2", t));
        c.set_now_ns(1_201);
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"v2"[..]));
        // A write's update is as old as its reply.
        let w = c.begin_write(b"k");
        c.set_now_ns(1_300);
        c.end_write(b"k", w, Some((b"s", b"v3")));
        c.set_now_ns(1_400);
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"v3"[..]));
        c.set_now_ns(1_401);
        assert_eq!(c.lookup(b"k", b"s"), None);
        // Without a bound, age never matters.
        c.set_max_age_ns(None);
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"v3"[..]));
    }

    #[test]
    fn lru_evicts_least_recent() {
        let mut c = Cache::new(2);
        let t = c.begin_read();
        c.fill(b"a", b"s", b"1", t);
        c.fill(b"b", b"s", b"2", t);
        assert_eq!(c.lookup(b"a", b"s"), Some(&b"1"[..]));
        c.fill(b"c", b"s", b"3", t);
        assert_eq!(c.lookup(b"b", b"s"), None);
        assert_eq!(c.lookup(b"a", b"s"), Some(&b"1"[..]));
        assert_eq!(c.lookup(b"c", b"s"), Some(&b"3"[..]));
        assert_eq!(c.lookup(b"a", b"other shape"), None);
        assert_eq!(c.stats.evictions, 1);
    }

    #[test]
    fn read_after_a_write_or_flush_fills() {
        // A read that begins after a write (or a flush) ended is not across it: it may fill.
        let mut c = Cache::new(8);
        let w = c.begin_write(b"k");
        c.end_write(b"k", w, None);
        let r = c.begin_read();
        assert!(c.fill(b"k", b"s", b"v", r));
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"v"[..]));
        c.begin_write_all();
        c.end_write_all();
        let r = c.begin_read();
        assert!(c.fill(b"k", b"s", b"w", r));
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"w"[..]));
    }

    #[test]
    fn read_across_write_does_not_fill() {
        let mut c = Cache::new(8);
        let r = c.begin_read();
        let w = c.begin_write(b"k");
        assert!(!c.fill(b"k", b"s", b"old", r));
        c.end_write(b"k", w, Some((b"s", b"new")));
        assert_eq!(c.lookup(b"k", b"s"), Some(&b"new"[..]));
        // Overlapping writes: neither updates.
        let w1 = c.begin_write(b"k");
        let w2 = c.begin_write(b"k");
        c.end_write(b"k", w2, Some((b"s", b"two")));
        c.end_write(b"k", w1, Some((b"s", b"one")));
        assert_eq!(c.lookup(b"k", b"s"), None);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Read(u8),
        Write(u8, u8),
        WriteAll,
        Serve(usize),
        Deliver(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u8..4).prop_map(Op::Read),
            1 => (0u8..4, 0u8..50).prop_map(|(k, v)| Op::Write(k, v)),
            1 => Just(Op::WriteAll).prop_filter("rare", |_| true),
            3 => (0usize..8).prop_map(Op::Serve),
            3 => (0usize..8).prop_map(Op::Deliver),
        ]
    }

    enum Req {
        Read(u8, ReadToken),
        Write(u8, u8, WriteToken),
        WriteAll,
    }

    proptest! {
        /// Clients send reads and writes over many connections; the server handles requests in
        /// any order and answers reach the switch in any order. A hit must always equal what the
        /// server holds for that key at that moment (the slow path's answer).
        #[test]
        fn hit_equals_slow_path(ops in proptest::collection::vec(op(), 1..200), cap in 1usize..4) {
            let mut cache = Cache::new(cap);
            let mut server = [0u8; 4];
            let mut to_server: VecDeque<Req> = VecDeque::new();
            let mut to_switch: VecDeque<(Req, u8)> = VecDeque::new();
            for o in ops {
                match o {
                    Op::Read(k) => match cache.lookup(&[k], b"get") {
                        Some(v) => prop_assert_eq!(v, &[server[k as usize]][..]),
                        None => to_server.push_back(Req::Read(k, cache.begin_read())),
                    },
                    Op::Write(k, v) => { let t = cache.begin_write(&[k]); to_server.push_back(Req::Write(k, v, t)) }
                    Op::WriteAll => { cache.begin_write_all(); to_server.push_back(Req::WriteAll) }
                    Op::Serve(i) => if !to_server.is_empty() {
                        let r = to_server.remove(i % to_server.len()).unwrap();
                        let answer = match &r {
                            Req::Read(k, _) => server[*k as usize],
                            Req::Write(k, v, _) => { server[*k as usize] = *v; *v }
                            Req::WriteAll => { server = [0; 4]; 0 }
                        };
                        to_switch.push_back((r, answer));
                    },
                    Op::Deliver(i) => if !to_switch.is_empty() {
                        let (r, a) = to_switch.remove(i % to_switch.len()).unwrap();
                        match r {
                            Req::Read(k, t) => { cache.fill(&[k], b"get", &[a], t); }
                            Req::Write(k, _, t) => cache.end_write(&[k], t, Some((b"get", &[a]))),
                            Req::WriteAll => cache.end_write_all(),
                        }
                    },
                }
                prop_assert!(cache.len() <= cap);
            }
        }
    }
}
