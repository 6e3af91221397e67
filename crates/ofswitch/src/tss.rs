//! A wildcard cache table searched the way OVS's datapath classifier (dpcls) does: tuple-space
//! search, one hash table per distinct (mask, priority), probed from the highest priority down,
//! the first hit winning. Entries carry an exact-match tag (Gigaflow's table tag; 0 for a
//! Megaflow), live in a slab with a free list, and are kept on an LRU list for eviction.
//!
//! Tuple pruning (Srinivasan et al.'s refinement of tuple-space search): where a tag has many
//! subtables, a lookup first asks, for each of nw_src, nw_dst, tp_src and tp_dst and each prefix
//! length some subtable masks it with, whether any entry of the tag holds the packet's prefix of
//! that length, and skips the subtables ruled out. Only subtables that cannot match are skipped,
//! so the result is the same entry plain tuple-space search finds. The tag's subtables are also
//! grouped by their (nw_src, nw_dst) prefix lengths, so a lookup reads only the groups the
//! prefixes allow and probes the survivors in search order (by their rank in it).

use crate::fields::{Field, Flow, N_FIELDS};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Entry handle inside one table.
pub type EntryId = u32;
const NIL: u32 = u32::MAX;

/// Keys are already well-mixed 64-bit hashes: no second hashing.
#[derive(Default)]
pub struct IdentityHasher(u64);
impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}
type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

/// A fast non-cryptographic hasher (FxHash-style, 8 bytes at a time) for keys that contain a
/// whole [`Flow`] (masks, subtable shapes, tags): SipHash over 224 bytes dominated rule
/// generation.
#[derive(Default)]
pub struct FastHasher(u64);
impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap()));
        }
        for &b in chunks.remainder() {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7cc1_b727_220a);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64)
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64)
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64)
    }
}
/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[inline]
fn mix(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

/// Fields whose prefix masks prune subtables: (field index, width in bits).
const PRUNE_FIELDS: [(usize, u32); 4] = [(22, 32), (23, 32), (26, 16), (27, 16)];
/// A tag's subtables are pruned when it has at least this many (below, probing them all is
/// cheaper than the prefix checks).
const PRUNE_MIN_SUBTABLES: usize = 16;
/// Subtables a pruned lookup probes in plain order before it prunes the rest.
const PRUNE_DIRECT_PROBES: usize = 4;
/// `Subtable::prune_len` of a field the subtable's mask does not constrain to a prefix (a bit
/// every lookup sets in its "prefix present" words, above the 33 lengths).
const NO_PRUNE: u8 = 40;

#[inline]
fn prefix_of(width: u32, len: u32) -> u64 {
    if len == 0 {
        0
    } else {
        let full = (1u64 << width) - 1;
        full & !(full >> len)
    }
}

/// Length of `mask` as a prefix of a `width`-bit field; `NO_PRUNE` when it is not a non-empty
/// prefix.
fn prune_len(mask: u64, width: u32) -> u8 {
    let len = (mask << (64 - width)).leading_ones();
    if mask != 0 && mask == prefix_of(width, len) {
        len as u8
    } else {
        NO_PRUNE
    }
}

/// Key of "an entry of `tag` holds `value` as its prefix of `len` bits of prune field `j`".
#[inline]
fn prefix_key(tag: u16, j: usize, len: u8, value: u64) -> u64 {
    mix(mix(0x2545_f491_4f6c_dd1d ^ ((tag as u64) << 16 | (j as u64) << 8 | len as u64), value), 0x1f)
}

/// `(l0, l1, [(subtable id, prune_len)])`: a tag's subtables whose nw_src and nw_dst prune
/// lengths are l0 and l1.
type PruneGroup = (u8, u8, Vec<(u32, [u8; 4])>);

/// A tag's subtables in search order and, per prune field, how many subtables use each length.
#[derive(Clone)]
struct TagIndex {
    /// (subtable id, its `prune_len`) in search order.
    order: Vec<(u32, [u8; 4])>,
    /// Subtables by (nw_src, nw_dst) prune lengths.
    groups: Vec<PruneGroup>,
    group_of: FastMap<(u8, u8), u32>,
    len_subtables: [[u32; 33]; 4],
    /// Bit L: some subtable masks the field with a prefix of length L.
    lens: [u64; 4],
}

impl Default for TagIndex {
    fn default() -> Self {
        TagIndex { order: Vec::new(), groups: Vec::new(), group_of: FastMap::default(), len_subtables: [[0; 33]; 4], lens: [0; 4] }
    }
}

struct Subtable {
    tag: u16,
    mask: Flow,
    /// Prefix length of the mask on each prune field (`NO_PRUNE`: not a prefix or unmasked).
    prune_len: [u8; 4],
    /// Field indices with a non-zero mask (the only ones hashed and compared).
    fields: Vec<u8>,
    priority: u16,
    /// Position key in the tag's search order: (u16::MAX - priority) << 48 | rank.
    rank: u64,
    /// Hash of the masked key → first entry of its chain (`Slot::bucket_next`); keys in a
    /// chain are distinct, so at most one of them matches a flow.
    buckets: IdMap<EntryId>,
    n_entries: usize,
    /// Hits since creation (equal-priority subtables are searched most-hit first, as OVS's
    /// dpcls re-sorts its subtable vector).
    hits: u64,
}

impl Subtable {
    #[inline]
    fn hash(&self, tag: u16, flow: &Flow) -> u64 {
        let mut h = mix(0x51_7cc1_b727_220a, tag as u64);
        for &i in &self.fields {
            h = mix(h, flow.0[i as usize] & self.mask.0[i as usize]);
        }
        h
    }
}

/// One live entry.
pub struct Slot<P> {
    pub tag: u16,
    /// Key already masked.
    pub key: Flow,
    pub priority: u16,
    subtable: u32,
    pub last_used_ns: u64,
    pub hits: u64,
    prev: u32,
    next: u32,
    /// Next entry with the same subtable hash.
    bucket_next: u32,
    live: bool,
    pub payload: P,
}

/// A tuple-space-search table of at most `capacity` entries.
pub struct TssTable<P> {
    /// Subtables by creation (ids are stable), one per (tag, mask, priority): a lookup only
    /// searches its tag's subtables, listed in `order` by priority (highest first).
    subtables: Vec<Subtable>,
    tags: FastMap<u16, TagIndex>,
    /// `prefix_key`s of live entries with their counts (hash-only: a collision can only keep a
    /// subtable that could have been skipped).
    prefixes: IdMap<u32>,
    by_shape: FastMap<(u16, Flow, u16), u32>,
    lookups_since_sort: u32,
    /// Rank the next new subtable gets (after every existing one of its priority).
    next_rank: u64,
    /// Candidates of a pruned lookup: (rank, subtable id).
    candidates: Vec<(u64, u32)>,
    /// Ids of emptied subtables, for reuse.
    free_subtables: Vec<u32>,
    slots: Vec<Slot<P>>,
    free: Vec<u32>,
    /// Most recently used first.
    lru_head: u32,
    lru_tail: u32,
    len: usize,
    pub capacity: usize,
    masks: FastMap<Flow, u32>,
    /// Subtables probed by lookups so far (tuple-space search cost).
    pub probes: u64,
}

impl<P> TssTable<P> {
    pub fn new(capacity: usize) -> Self {
        debug_assert_eq!(PRUNE_FIELDS.map(|(i, _)| i), [Field::NwSrc, Field::NwDst, Field::TpSrc, Field::TpDst].map(Field::index));
        TssTable { subtables: Vec::new(), tags: FastMap::default(), prefixes: IdMap::default(), by_shape: FastMap::default(), lookups_since_sort: 0, next_rank: 0, candidates: Vec::new(), free_subtables: Vec::new(), slots: Vec::new(), free: Vec::new(), lru_head: NIL, lru_tail: NIL, len: 0, capacity, masks: FastMap::default(), probes: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn is_full(&self) -> bool {
        self.len >= self.capacity
    }
    /// Distinct masks among live entries.
    pub fn n_masks(&self) -> usize {
        self.masks.len()
    }
    /// Whether `mask` is already used by a live entry.
    pub fn has_mask(&self, mask: &Flow) -> bool {
        self.masks.contains_key(mask)
    }
    /// Number of (mask, priority) hash tables a miss probes.
    pub fn n_subtables(&self) -> usize {
        self.subtables.iter().filter(|s| s.n_entries > 0).count()
    }

    /// Re-sorts each tag's subtables by priority, then by hits (within equal priority any
    /// matching entry is a correct answer, so searching the busiest first only saves probes).
    pub fn resort(&mut self) {
        let subtables = &self.subtables;
        for t in self.tags.values_mut() {
            t.order.sort_by_key(|&(i, _)| (std::cmp::Reverse(subtables[i as usize].priority), std::cmp::Reverse(subtables[i as usize].hits)));
        }
        let mut rank = 0u64;
        for t in self.tags.values() {
            for &(i, _) in &t.order {
                let st = &mut self.subtables[i as usize];
                st.rank = ((u16::MAX - st.priority) as u64) << 48 | rank;
                rank += 1;
            }
        }
        self.next_rank = rank;
    }

    pub fn get(&self, id: EntryId) -> &Slot<P> {
        &self.slots[id as usize]
    }
    pub fn get_mut(&mut self, id: EntryId) -> &mut Slot<P> {
        &mut self.slots[id as usize]
    }
    /// The mask of a live entry.
    pub fn mask_of(&self, id: EntryId) -> &Flow {
        &self.subtables[self.slots[id as usize].subtable as usize].mask
    }

    /// Highest-priority entry whose tag equals `tag` and whose key equals `flow` under its mask.
    /// With `now_ns`, the entry is marked used (LRU order, idle timer, hit counter).
    #[inline]
    pub fn lookup(&mut self, tag: u16, flow: &Flow, now_ns: Option<u64>) -> Option<EntryId> {
        let mut found = None;
        self.lookups_since_sort += 1;
        if self.lookups_since_sort >= 1 << 16 {
            self.lookups_since_sort = 0;
            self.resort();
        }
        let ti = self.tags.get(&tag)?;
        let prune = ti.order.len() >= PRUNE_MIN_SUBTABLES;
        // The first subtables in search order are probed directly: with hit-ranked order they
        // hold most hits, and then the prefix checks below would cost more than they save.
        let direct = if prune { PRUNE_DIRECT_PROBES } else { ti.order.len() };
        for i in 0..direct {
            let si = self.tags[&tag].order[i].0;
            if let Some(id) = self.probe(si, tag, flow) {
                found = Some((si, id));
                break;
            }
        }
        let ti = &self.tags[&tag];
        // Per prune field, bit L: some entry of the tag holds the packet's L-bit prefix.
        let mut ok = [u64::MAX; 4];
        if prune && found.is_none() {
            for (j, &(fi, width)) in PRUNE_FIELDS.iter().enumerate() {
                let mut lens = ti.lens[j];
                let mut bits = 0u64;
                while lens != 0 {
                    let len = lens.trailing_zeros();
                    lens &= lens - 1;
                    if self.prefixes.contains_key(&prefix_key(tag, j, len as u8, flow.0[fi] & prefix_of(width, len))) {
                        bits |= 1 << len;
                    }
                }
                ok[j] = bits | 1 << NO_PRUNE;
            }
        }
        if prune && found.is_none() {
            // Only the groups whose (nw_src, nw_dst) lengths the packet's prefixes allow, and in
            // them the subtables its ports allow and not yet probed, in search order.
            let after = self.subtables[ti.order[direct - 1].0 as usize].rank;
            let mut cands = std::mem::take(&mut self.candidates);
            cands.clear();
            for (l0, l1, members) in &ti.groups {
                if (ok[0] >> l0) & (ok[1] >> l1) & 1 == 0 {
                    continue;
                }
                for &(si, l) in members {
                    let rank = self.subtables[si as usize].rank;
                    if (ok[2] >> l[2]) & (ok[3] >> l[3]) & 1 != 0 && rank > after {
                        cands.push((rank, si));
                    }
                }
            }
            cands.sort_unstable();
            for &(_, si) in &cands {
                if let Some(id) = self.probe(si, tag, flow) {
                    found = Some((si, id));
                    break;
                }
            }
            self.candidates = cands;
        }
        let found = found.map(|(si, id)| {
            self.subtables[si as usize].hits += 1;
            id
        });
        if let (Some(id), Some(now)) = (found, now_ns) {
            self.touch(id, now);
        }
        found
    }

    /// The entry of subtable `si` matching `flow`, if any (one hash probe).
    #[inline]
    fn probe(&mut self, si: u32, tag: u16, flow: &Flow) -> Option<EntryId> {
        if self.subtables[si as usize].n_entries == 0 {
            return None;
        }
        self.probes += 1;
        self.match_in(si, tag, flow)
    }

    /// The entry of subtable `si` matching `flow` (its hash chain), without counting a probe.
    #[inline]
    fn match_in(&self, si: u32, tag: u16, flow: &Flow) -> Option<EntryId> {
        let st = &self.subtables[si as usize];
        let mut id = st.buckets.get(&st.hash(tag, flow)).copied().unwrap_or(NIL);
        while id != NIL {
            let s = &self.slots[id as usize];
            if st.fields.iter().all(|&i| flow.0[i as usize] & st.mask.0[i as usize] == s.key.0[i as usize]) {
                return Some(id);
            }
            id = s.bucket_next;
        }
        None
    }

    /// An entry of priority `priority` and tag `tag` that `flow` matches (any mask), as a
    /// lookup in one priority's classifier finds it (the Gigaflow artifact's recycling check,
    /// which looks a new entry's masked key up among the entries of its table and priority).
    pub fn find_matching_at(&self, tag: u16, priority: u16, flow: &Flow) -> Option<EntryId> {
        let ti = self.tags.get(&tag)?;
        for &(si, _) in &ti.order {
            let st = &self.subtables[si as usize];
            if st.priority == priority && st.n_entries > 0 {
                if let Some(id) = self.match_in(si, tag, flow) {
                    return Some(id);
                }
            }
        }
        None
    }

    /// An entry with exactly this tag, mask, priority and (masked) key.
    pub fn find_exact(&self, tag: u16, mask: &Flow, priority: u16, key: &Flow) -> Option<EntryId> {
        let st = &self.subtables[*self.by_shape.get(&(tag, *mask, priority))? as usize];
        let mut id = *st.buckets.get(&st.hash(tag, key))?;
        while id != NIL {
            let s = &self.slots[id as usize];
            if s.tag == tag && s.key == *key {
                return Some(id);
            }
            id = s.bucket_next;
        }
        None
    }

    pub fn touch(&mut self, id: EntryId, now_ns: u64) {
        let s = &mut self.slots[id as usize];
        s.last_used_ns = now_ns;
        s.hits += 1;
        self.unlink(id);
        self.push_front(id);
    }

    /// Inserts an entry (the caller checks capacity). `key` is masked here.
    pub fn insert(&mut self, tag: u16, mask: &Flow, priority: u16, key: &Flow, payload: P, now_ns: u64) -> EntryId {
        let key = key.masked(mask);
        let sti = match self.by_shape.get(&(tag, *mask, priority)) {
            Some(&i) => i as usize,
            None => {
                let fields = (0..N_FIELDS).filter(|&i| mask.0[i] != 0).map(|i| i as u8).collect();
                let prune = PRUNE_FIELDS.map(|(fi, width)| prune_len(mask.0[fi], width));
                let rank = ((u16::MAX - priority) as u64) << 48 | self.next_rank;
                self.next_rank += 1;
                let st = Subtable { tag, mask: *mask, prune_len: prune, fields, priority, rank, buckets: IdMap::default(), n_entries: 0, hits: 0 };
                let id = match self.free_subtables.pop() {
                    Some(id) => {
                        self.subtables[id as usize] = st;
                        id
                    }
                    None => {
                        self.subtables.push(st);
                        (self.subtables.len() - 1) as u32
                    }
                };
                self.by_shape.insert((tag, *mask, priority), id);
                // Keep the search order by priority, highest first (after its equals; the order
                // is sorted by priority, so a binary search finds the place).
                let subtables = &self.subtables;
                let ti = self.tags.entry(tag).or_default();
                let at = ti.order.partition_point(|&(o, _)| subtables[o as usize].priority >= priority);
                ti.order.insert(at, (id, prune));
                let g = *ti.group_of.entry((prune[0], prune[1])).or_insert_with(|| {
                    ti.groups.push((prune[0], prune[1], Vec::new()));
                    (ti.groups.len() - 1) as u32
                });
                ti.groups[g as usize].2.push((id, prune));
                for (j, &l) in prune.iter().enumerate() {
                    if l != NO_PRUNE {
                        ti.len_subtables[j][l as usize] += 1;
                        ti.lens[j] |= 1 << l;
                    }
                }
                id as usize
            }
        };
        let slot = Slot { tag, key, priority, subtable: sti as u32, last_used_ns: now_ns, hits: 0, prev: NIL, next: NIL, bucket_next: NIL, live: true, payload };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        let st = &mut self.subtables[sti];
        for (j, &(fi, _)) in PRUNE_FIELDS.iter().enumerate() {
            if st.prune_len[j] != NO_PRUNE {
                *self.prefixes.entry(prefix_key(tag, j, st.prune_len[j], key.0[fi])).or_insert(0) += 1;
            }
        }
        let h = st.hash(tag, &key);
        if let Some(old) = st.buckets.insert(h, id) {
            self.slots[id as usize].bucket_next = old;
        }
        st.n_entries += 1;
        *self.masks.entry(*mask).or_insert(0) += 1;
        self.len += 1;
        self.push_front(id);
        id
    }

    /// Removes a live entry and returns its payload's slot for inspection before reuse.
    pub fn remove(&mut self, id: EntryId) {
        let (tag, key, sti) = {
            let s = &self.slots[id as usize];
            assert!(s.live, "removing a dead cache entry");
            (s.tag, s.key, s.subtable as usize)
        };
        self.unlink(id);
        let st = &mut self.subtables[sti];
        let h = st.hash(tag, &key);
        let next = self.slots[id as usize].bucket_next;
        match st.buckets.get(&h).copied() {
            Some(head) if head == id => {
                if next == NIL {
                    st.buckets.remove(&h);
                } else {
                    st.buckets.insert(h, next);
                }
            }
            Some(mut prev) => {
                while self.slots[prev as usize].bucket_next != id {
                    prev = self.slots[prev as usize].bucket_next;
                }
                self.slots[prev as usize].bucket_next = next;
            }
            None => unreachable!("a live entry is in its bucket"),
        }
        st.n_entries -= 1;
        for (j, &(fi, _)) in PRUNE_FIELDS.iter().enumerate() {
            if st.prune_len[j] != NO_PRUNE {
                let k = prefix_key(tag, j, st.prune_len[j], key.0[fi]);
                if let Some(c) = self.prefixes.get_mut(&k) {
                    *c -= 1;
                    if *c == 0 {
                        self.prefixes.remove(&k);
                    }
                }
            }
        }
        let mask = st.mask;
        if st.n_entries == 0 {
            // Retire the empty subtable so lookups stop probing it.
            let (tag, prio, prune) = (st.tag, st.priority, st.prune_len);
            self.by_shape.remove(&(tag, mask, prio));
            if let Some(ti) = self.tags.get_mut(&tag) {
                ti.order.retain(|&(x, _)| x as usize != sti);
                if let Some(&g) = ti.group_of.get(&(prune[0], prune[1])) {
                    ti.groups[g as usize].2.retain(|&(x, _)| x as usize != sti);
                }
                for (j, &l) in prune.iter().enumerate() {
                    if l != NO_PRUNE {
                        ti.len_subtables[j][l as usize] -= 1;
                        if ti.len_subtables[j][l as usize] == 0 {
                            ti.lens[j] &= !(1 << l);
                        }
                    }
                }
                if ti.order.is_empty() {
                    self.tags.remove(&tag);
                }
            }
            self.free_subtables.push(sti as u32);
        }
        if let Some(c) = self.masks.get_mut(&mask) {
            *c -= 1;
            if *c == 0 {
                self.masks.remove(&mask);
            }
        }
        self.slots[id as usize].live = false;
        self.free.push(id);
        self.len -= 1;
    }

    /// The least recently used live entry.
    pub fn lru_victim(&self) -> Option<EntryId> {
        (self.lru_tail != NIL).then_some(self.lru_tail)
    }

    /// Live entry ids.
    pub fn ids(&self) -> Vec<EntryId> {
        (0..self.slots.len() as u32).filter(|&i| self.slots[i as usize].live).collect()
    }

    /// Removes every entry unused since `now_ns - idle_ns`; returns how many.
    pub fn expire_idle(&mut self, now_ns: u64, idle_ns: u64) -> usize {
        let mut n = 0;
        // The LRU tail is the oldest: walk from it while entries are idle.
        while self.lru_tail != NIL {
            let id = self.lru_tail;
            if now_ns.saturating_sub(self.slots[id as usize].last_used_ns) < idle_ns {
                break;
            }
            self.remove(id);
            n += 1;
        }
        n
    }

    fn unlink(&mut self, id: EntryId) {
        let (p, n) = (self.slots[id as usize].prev, self.slots[id as usize].next);
        if p != NIL {
            self.slots[p as usize].next = n;
        } else if self.lru_head == id {
            self.lru_head = n;
        }
        if n != NIL {
            self.slots[n as usize].prev = p;
        } else if self.lru_tail == id {
            self.lru_tail = p;
        }
        self.slots[id as usize].prev = NIL;
        self.slots[id as usize].next = NIL;
    }

    fn push_front(&mut self, id: EntryId) {
        self.slots[id as usize].next = self.lru_head;
        self.slots[id as usize].prev = NIL;
        if self.lru_head != NIL {
            self.slots[self.lru_head as usize].prev = id;
        }
        self.lru_head = id;
        if self.lru_tail == NIL {
            self.lru_tail = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::Field;

    fn flow(dst: u64, port: u64) -> Flow {
        let mut f = Flow::default();
        f.set(Field::NwDst, dst);
        f.set(Field::TpDst, port);
        f
    }

    #[test]
    fn highest_priority_wins_and_tags_are_exact() {
        let mut t: TssTable<u32> = TssTable::new(10);
        let mut m24 = Flow::default();
        m24.set(Field::NwDst, 0xffff_ff00);
        let mut m32 = Flow::default();
        m32.set(Field::NwDst, 0xffff_ffff);
        let a = t.insert(1, &m24, 1, &flow(0x0a00_0100, 0), 24, 0);
        let b = t.insert(1, &m32, 3, &flow(0x0a00_0105, 0), 32, 0);
        assert_eq!(t.lookup(1, &flow(0x0a00_0105, 9), None), Some(b));
        assert_eq!(t.lookup(1, &flow(0x0a00_0106, 9), None), Some(a));
        assert_eq!(t.lookup(2, &flow(0x0a00_0105, 9), None), None);
        assert_eq!(t.n_masks(), 2);
        t.remove(b);
        assert_eq!(t.lookup(1, &flow(0x0a00_0105, 9), None), Some(a));
        assert_eq!(t.n_masks(), 1);
        assert_eq!(t.find_exact(1, &m24, 1, &flow(0x0a00_0100, 0)), Some(a));
    }

    #[test]
    fn matching_at_one_priority_ignores_the_mask_as_a_lookup_does() {
        // The artifact's recycling check: the new entry's masked key looked up among one
        // priority's entries; an entry of another mask that the key matches counts.
        let mut t: TssTable<u32> = TssTable::new(10);
        let (mut m24, mut m32) = (Flow::default(), Flow::default());
        m24.set(Field::NwDst, 0xffff_ff00);
        m32.set(Field::NwDst, 0xffff_ffff);
        let a = t.insert(1, &m24, 2, &flow(0x0a00_0100, 0), 24, 0);
        let key = flow(0x0a00_0105, 0).masked(&m32);
        assert_eq!(t.find_exact(1, &m32, 2, &key), None, "no identical entry");
        assert_eq!(t.find_matching_at(1, 2, &key), Some(a), "the /24 entry matches the /32 key");
        assert_eq!(t.find_matching_at(1, 1, &key), None, "another priority");
        assert_eq!(t.find_matching_at(2, 2, &key), None, "another tag");
        assert_eq!(t.find_matching_at(1, 2, &flow(0x0a00_0205, 0)), None, "outside the /24");
    }

    #[test]
    fn lru_and_idle_order() {
        let mut t: TssTable<()> = TssTable::new(10);
        let mut m = Flow::default();
        m.set(Field::TpDst, 0xffff);
        let ids: Vec<_> = (0..3).map(|i| t.insert(0, &m, 0, &flow(0, i), (), i * 10)).collect();
        assert_eq!(t.lru_victim(), Some(ids[0]));
        t.lookup(0, &flow(0, 0), Some(100));
        assert_eq!(t.lru_victim(), Some(ids[1]));
        assert_eq!(t.expire_idle(105, 50), 2);
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(0, &flow(0, 0), None), Some(ids[0]));
    }

    /// Many subtables under one tag (so lookups prune): the entry found is always a matching
    /// entry of the highest matching priority, and a miss means no entry matches, through
    /// inserts and removals.
    #[test]
    fn pruned_lookups_equal_a_scan_of_every_entry() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let mut t: TssTable<()> = TssTable::new(10_000);
        let pfx = |w: u32, l: u32| prefix_of(w, l);
        let mut live: Vec<EntryId> = Vec::new();
        let base = 0x0a00_0000u64;
        let random_flow = |rng: &mut rand_chacha::ChaCha8Rng| {
            let mut f = Flow::default();
            f.set(Field::NwSrc, base ^ (rng.gen::<u64>() & rng.gen::<u64>() & 0xffff_ffff));
            f.set(Field::NwDst, base ^ (rng.gen::<u64>() & rng.gen::<u64>() & 0xffff_ffff));
            f.set(Field::TpDst, rng.gen_range(0..64));
            f.set(Field::NwProto, rng.gen_range(5..8));
            f
        };
        for round in 0..3000 {
            if round % 3 != 2 || live.is_empty() {
                let mut m = Flow::default();
                m.set(Field::NwSrc, pfx(32, rng.gen_range(0..=32)));
                m.set(Field::NwDst, pfx(32, rng.gen_range(0..=32)));
                // Some masks are not prefixes (never pruned on that field).
                m.set(Field::TpDst, if rng.gen_bool(0.3) { 0x0f0f } else { pfx(16, rng.gen_range(0..=16)) });
                if rng.gen_bool(0.5) {
                    m.set(Field::NwProto, 0xff);
                }
                let f = random_flow(&mut rng);
                let prio = rng.gen_range(0..4);
                if t.find_exact(1, &m, prio, &f.masked(&m)).is_none() {
                    live.push(t.insert(1, &m, prio, &f, (), 0));
                }
            } else {
                let id = live.swap_remove(rng.gen_range(0..live.len()));
                t.remove(id);
            }
            if round % 10 == 0 {
                for _ in 0..20 {
                    let f = random_flow(&mut rng);
                    let matches: Vec<EntryId> = live.iter().copied().filter(|&id| f.masked(t.mask_of(id)) == t.get(id).key).collect();
                    let best = matches.iter().map(|&id| t.get(id).priority).max();
                    match t.lookup(1, &f, None) {
                        Some(id) => {
                            assert!(matches.contains(&id), "round {round}: a non-matching entry");
                            assert_eq!(Some(t.get(id).priority), best, "round {round}: not the highest priority");
                        }
                        None => assert!(matches.is_empty(), "round {round}: missed {} matching entries", matches.len()),
                    }
                }
            }
        }
        assert!(t.tags[&1].order.len() >= PRUNE_MIN_SUBTABLES, "the test must exercise pruning");
    }
}
