//! One OpenFlow table with Open vSwitch's classifier semantics: rules grouped into subtables by
//! mask, subtables searched in order of their highest priority, and each subtable searched in
//! stages (metadata, L2, L3, L4) so a miss un-wildcards only the stages it had to look at. Prefix
//! tries on nw_dst and nw_src and a per-subtable port trie narrow the un-wildcarded bits further.

use crate::fields::{Field, Flow};
use crate::flows::FlowRule;
use crate::trie::{PrefixSet, TrieLookup};
use crate::tss::FastMap;

/// Fields with a prefix trie, in OVS's default order (`prefixes=ip_dst,ip_src`).
pub const TRIE_FIELDS: [Field; 2] = [Field::NwDst, Field::NwSrc];

/// A subtable while the table is built: its mask and its rules keyed by (masked values,
/// priority), so an identical rule replaces the earlier one in O(1).
#[derive(Clone, Debug)]
struct BuildSubtable {
    mask: Flow,
    rules: FastMap<(Flow, u16), usize>,
    max_priority: u16,
}

/// What a lookup reads of one subtable, kept small and flat: the subtables a miss walks are
/// read in order, and on ClassBench tables one traversal walks ~1,000 of them, so every cache
/// line per subtable counts.
#[derive(Clone, Copy, Debug)]
struct Subtable {
    max_priority: u16,
    /// Number of lookup stages; the last one is the final stage.
    n_stages: u8,
    /// Bit i: stage i holds nw_src or nw_dst (the prefix tries are consulted before it).
    trie_stages: u8,
    /// Prefix length of the mask on each trie field (0: not a prefix or not matched).
    trie_prefix_len: [u8; 2],
    /// Length of the mask over (tp_src << 16 | tp_dst) counted from the top, as OVS does.
    ports_mask_len: u8,
    /// `stage_end[i]`: number of masked fields in stages `0..=i`.
    stage_end: [u8; 4],
    /// The subtable's masked fields, stage by stage: `Classifier::fields[fields..]`.
    fields: u32,
    /// Index into `Classifier::port_tries` (`u32::MAX`: the mask has no port bits).
    ports_trie: u32,
    /// Seed of this subtable's hashes (distinct per subtable, so the table-wide indices below
    /// never mix two subtables' keys).
    seed: u64,
}

#[inline]
fn hash_step(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x51_7cc1_b727_220a)
}

#[inline]
fn stage_key(h: u64, stage: usize) -> u64 {
    hash_step(h, 0x9e37_79b9_7f4a_7c15 ^ stage as u64)
}

/// Where a lookup records the bits it examined: a plain mask, or [`DualWildcards`].
pub trait Unwildcard {
    fn or(&mut self, f: Field, mask: u64);
    fn get(&self, f: Field) -> u64;
    /// [`Unwildcard::or`] by field index, with `mask` already within the field's width.
    fn or_index(&mut self, i: usize, mask: u64) {
        self.or(Field::from_index(i), mask)
    }
}

impl Unwildcard for Flow {
    fn or(&mut self, f: Field, mask: u64) {
        Flow::or(self, f, mask)
    }
    #[inline]
    fn or_index(&mut self, i: usize, mask: u64) {
        self.0[i] |= mask;
    }
    fn get(&self, f: Field) -> u64 {
        Flow::get(self, f)
    }
}

/// The traversal-wide wildcards (which steer OVS's lookup shortcuts, so the Megaflow stays
/// exactly OVS's) plus a fresh per-lookup mask that receives every bit the lookup depends on,
/// including bits the traversal had already examined (what a Gigaflow sub-traversal needs).
pub struct DualWildcards<'a> {
    pub global: &'a mut Flow,
    pub lookup: &'a mut Flow,
    /// Which of the two the lookup's shortcuts read ("already un-wildcarded?"): the traversal's
    /// (false: OVS) or the fresh one (true: the Gigaflow artifact's per-table lookups).
    pub read_lookup: bool,
}

impl Unwildcard for DualWildcards<'_> {
    #[inline]
    fn or(&mut self, f: Field, mask: u64) {
        self.global.or(f, mask);
        self.lookup.or(f, mask);
    }
    fn get(&self, f: Field) -> u64 {
        if self.read_lookup {
            self.lookup.get(f)
        } else {
            self.global.get(f)
        }
    }
    #[inline]
    fn or_index(&mut self, i: usize, mask: u64) {
        self.global.0[i] |= mask;
        self.lookup.0[i] |= mask;
    }
}

/// A set of already well-mixed 64-bit keys: open addressing with linear probing on the top
/// bits, at most half full (a stage-index probe is the most frequent operation of a traversal).
#[derive(Clone, Debug, Default)]
struct KeySet {
    /// 0 is the empty slot; key 0 is stored as 1 (a collision, harmless here).
    slots: Vec<u64>,
    len: usize,
    shift: u32,
}

impl KeySet {
    fn insert(&mut self, key: u64) {
        if (self.len + 1) * 2 > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            let n = (old.len() * 2).max(16);
            self.slots = vec![0; n];
            self.shift = 64 - n.trailing_zeros();
            self.len = 0;
            for k in old.into_iter().filter(|&k| k != 0) {
                self.insert(k);
            }
        }
        let key = key.max(1);
        let mask = self.slots.len() - 1;
        let mut i = (key >> self.shift) as usize;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = key;
                    self.len += 1;
                    return;
                }
                k if k == key => return,
                _ => i = (i + 1) & mask,
            }
        }
    }

    #[inline]
    fn contains(&self, key: u64) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let key = key.max(1);
        let mask = self.slots.len() - 1;
        let mut i = (key >> self.shift) as usize;
        loop {
            match self.slots[i] {
                0 => return false,
                k if k == key => return true,
                _ => i = (i + 1) & mask,
            }
        }
    }
}

/// The two prefix-trie lookups of one classifier lookup (done on first use), as bit sets
/// over prefix lengths.
#[derive(Default)]
struct TrieState {
    ready: bool,
    /// Bit L: no rule prefix of length L matches the value.
    unmatched: [u64; 2],
    /// Bit L: the trie's deciding bits (`maskbits`) are at most L.
    within: [u64; 2],
    /// The deciding bits as a field mask.
    bits_mask: [u64; 2],
}

impl TrieState {
    fn compute(&mut self, tries: &[PrefixSet; 2], flow: &Flow) {
        for (j, f) in TRIE_FIELDS.iter().enumerate() {
            let look: TrieLookup = tries[j].lookup(flow.get(*f));
            self.unmatched[j] = !(look.matching_lengths << 1) & !1;
            self.within[j] = if look.mask_bits >= 64 { 0 } else { !((1u64 << look.mask_bits) - 1) };
            self.bits_mask[j] = tries[j].prefix_mask(look.mask_bits);
        }
        self.ready = true;
    }
}

/// One flow table.
#[derive(Clone, Debug, Default)]
pub struct Classifier {
    /// In search order: descending highest priority, OVS's order among equals.
    subtables: Vec<Subtable>,
    /// `(field index, mask)` of every subtable's masked fields, stage by stage.
    fields: Vec<(u8, u64)>,
    tries: [PrefixSet; 2],
    port_tries: Vec<PrefixSet>,
    /// OVS's per-stage indices over all subtables: `stage_key(hash of the rule's values over
    /// stages 0..=i, i)` for every rule and non-final stage i. Hash-only, as OVS's ccmap (a
    /// collision only makes a stage look matchable).
    stage_keys: KeySet,
    /// Rules by the hash of their full masked values (seeded per subtable): a range of `rules`.
    exact: FastMap<u64, (u32, u32)>,
    /// (subtable, priority, rule id, offset of its masked values in `values`).
    rules: Vec<(u32, u16, usize, u32)>,
    /// Rule values over their subtable's fields, in `fields` order.
    values: Vec<u64>,
}

fn prefix_len(mask: u64, bits: u32) -> u32 {
    let m = (mask << (64 - bits)) >> (64 - bits);
    let ones = (m << (64 - bits)).leading_ones();
    if m == 0 || (m << (64 - bits)).trailing_zeros() + ones != 64 {
        0
    } else {
        ones
    }
}

fn ports_word(f: &Flow) -> u64 {
    (f.get(Field::TpSrc) << 16) | f.get(Field::TpDst)
}

impl Classifier {
    /// Builds a table from its rules (`rules[i]` has rule id `ids[i]`).
    pub fn new(rules: &[(usize, &FlowRule)]) -> Self {
        let mut built: Vec<BuildSubtable> = Vec::new();
        let mut by_mask: FastMap<Flow, usize> = FastMap::default();
        // OVS's subtable vector (indices into `built`): a new subtable is appended, a subtable
        // whose highest priority rises keeps its slot, and after each flow mod the vector is
        // re-sorted by priority when out of order, with glibc's stable merge sort (Debian 12).
        // So among equal priorities the order is that of the previous sorted vector.
        let mut order: Vec<usize> = Vec::new();
        let mut tries = [PrefixSet::new(32), PrefixSet::new(32)];
        for &(id, rule) in rules {
            let mut mask = Flow::default();
            let mut values = Flow::default();
            for m in &rule.matches {
                mask.set(m.field, m.mask);
                values.set(m.field, m.value & m.mask);
            }
            let si = *by_mask.entry(mask).or_insert_with(|| {
                built.push(BuildSubtable { mask, rules: FastMap::default(), max_priority: 0 });
                order.push(built.len() - 1);
                built.len() - 1
            });
            let st = &mut built[si];
            // A rule identical to an existing one (same values and priority) replaces it, as
            // ovs-ofctl add-flows does.
            st.rules.insert((values, rule.priority), id);
            st.max_priority = st.max_priority.max(rule.priority);
            for (j, f) in TRIE_FIELDS.iter().enumerate() {
                let plen = prefix_len(mask.get(*f), 32);
                if plen > 0 {
                    tries[j].insert(values.get(*f), plen);
                }
            }
            if order.windows(2).any(|w| built[w[0]].max_priority < built[w[1]].max_priority) {
                order.sort_by_key(|&i| std::cmp::Reverse(built[i].max_priority));
            }
        }
        let mut cls = Classifier { tries, ..Default::default() };
        for (pos, &bi) in order.iter().enumerate() {
            cls.add_subtable(pos as u32, &built[bi]);
        }
        cls
    }

    /// Appends the lookup form of a built subtable (at search position `pos`) and indexes its
    /// rules.
    fn add_subtable(&mut self, pos: u32, b: &BuildSubtable) {
        let mask = &b.mask;
        let mut groups: Vec<Vec<Field>> = vec![Vec::new(); 4];
        for f in Field::all() {
            if mask.get(f) != 0 {
                groups[f.stage()].push(f);
            }
        }
        // OVS: an index per non-empty segment among the first three, the rest is the final
        // stage; when the rest is empty, the last index becomes the final stage.
        let mut stages: Vec<Vec<Field>> = groups[..3].iter().filter(|g| !g.is_empty()).cloned().collect();
        if !groups[3].is_empty() || stages.is_empty() {
            stages.push(groups[3].clone());
        }
        let fields = self.fields.len() as u32;
        let mut stage_end = [0u8; 4];
        let mut trie_stages = 0u8;
        for (i, stage) in stages.iter().enumerate() {
            if stage.iter().any(|f| matches!(f, Field::NwSrc | Field::NwDst)) {
                // nw_src and nw_dst share one 64-bit word of struct flow, so either makes both
                // tries relevant.
                trie_stages |= 1 << i;
            }
            self.fields.extend(stage.iter().map(|f| (f.index() as u8, mask.get(*f))));
            stage_end[i] = (self.fields.len() as u32 - fields) as u8;
        }
        let mut trie_prefix_len = [0u8; 2];
        for (j, f) in TRIE_FIELDS.iter().enumerate() {
            trie_prefix_len[j] = prefix_len(mask.get(*f), 32) as u8;
        }
        let pm = ports_word(mask) as u32;
        let ports_mask_len = if pm == 0 { 0 } else { 32 - pm.trailing_zeros() };
        let ports_trie = if ports_mask_len > 0 {
            let mut t = PrefixSet::new(32);
            for (values, _) in b.rules.keys() {
                t.insert(ports_word(values), ports_mask_len);
            }
            self.port_tries.push(t);
            (self.port_tries.len() - 1) as u32
        } else {
            u32::MAX
        };
        let st = Subtable {
            max_priority: b.max_priority,
            n_stages: stages.len() as u8,
            trie_stages,
            trie_prefix_len,
            ports_mask_len: ports_mask_len as u8,
            stage_end,
            fields,
            ports_trie,
            seed: hash_step(0x243f_6a88_85a3_08d3, pos as u64),
        };
        // Index the rules, grouped by their full hash.
        let fl = &self.fields[fields as usize..];
        let last = stages.len() - 1;
        let mut by_hash: FastMap<u64, Vec<(u16, usize, Flow)>> = FastMap::default();
        for ((values, priority), &id) in &b.rules {
            let mut h = st.seed;
            for i in 0..=last {
                let from = if i == 0 { 0 } else { st.stage_end[i - 1] as usize };
                for &(fi, m) in &fl[from..st.stage_end[i] as usize] {
                    h = hash_step(h, values.0[fi as usize] & m);
                }
                if i < last {
                    self.stage_keys.insert(stage_key(h, i));
                }
            }
            by_hash.entry(h).or_default().push((*priority, id, *values));
        }
        let n_fields = st.stage_end[last] as usize;
        let mut hashes: Vec<u64> = by_hash.keys().copied().collect();
        hashes.sort_unstable();
        for h in hashes {
            let group = &by_hash[&h];
            let start = self.rules.len() as u32;
            for &(priority, id, values) in group {
                self.rules.push((pos, priority, id, self.values.len() as u32));
                self.values.extend(self.fields[fields as usize..fields as usize + n_fields].iter().map(|&(fi, _)| values.0[fi as usize]));
            }
            self.exact.insert(h, (start, group.len() as u32));
        }
        self.subtables.push(st);
    }

    /// Finds the highest-priority rule matching `flow` and ORs into `wc` every bit OVS's
    /// classifier would have examined to find it.
    pub fn lookup<W: Unwildcard>(&self, flow: &Flow, wc: &mut W) -> Option<usize> {
        self.lookup_counted(flow, wc, &mut 0)
    }

    /// [`Classifier::lookup`], adding the number of subtables searched to `probes` (the
    /// tuple-space-search cost the NIC model charges per miss).
    pub fn lookup_counted<W: Unwildcard>(&self, flow: &Flow, wc: &mut W, probes: &mut u64) -> Option<usize> {
        let mut tries = TrieState::default();
        let mut best: Option<(u16, usize)> = None;
        for (pos, st) in self.subtables.iter().enumerate() {
            if let Some((p, _)) = best {
                if st.max_priority <= p {
                    break;
                }
            }
            *probes += 1;
            if let Some((p, id)) = self.find_match_wc(pos as u32, st, flow, wc, &mut tries) {
                if best.is_none_or(|(bp, _)| p > bp) {
                    best = Some((p, id));
                }
            }
        }
        best.map(|(_, id)| id)
    }

    /// Un-wildcards the subtable's mask over its first `n_fields` fields (whole stages).
    #[inline]
    fn fold<W: Unwildcard>(&self, st: &Subtable, n_fields: usize, wc: &mut W) {
        for &(fi, m) in &self.fields[st.fields as usize..st.fields as usize + n_fields] {
            wc.or_index(fi as usize, m);
        }
    }

    /// OVS `check_tries`: true when a trie proves no rule of this subtable can match, after
    /// un-wildcarding the prefix bits that prove it.
    #[inline(always)]
    fn check_tries<W: Unwildcard>(&self, st: &Subtable, flow: &Flow, wc: &mut W, tries: &mut TrieState) -> bool {
        for (j, f) in TRIE_FIELDS.iter().enumerate() {
            let plen = st.trie_prefix_len[j] as u32;
            if plen == 0 {
                continue;
            }
            if !tries.ready {
                tries.compute(&self.tries, flow);
            }
            // No rule prefix of this length matches: proven when the deciding bits are within
            // the subtable's prefix, or were already examined by an earlier table (the proof
            // rests on them).
            if (tries.unmatched[j] >> plen) & 1 != 0 {
                let bits_mask = tries.bits_mask[j];
                if (tries.within[j] >> plen) & 1 != 0 || wc.get(*f) & bits_mask == bits_mask {
                    wc.or_index(f.index(), bits_mask);
                    return true;
                }
            }
        }
        false
    }

    /// OVS `find_match_wc` on the subtable at search position `pos`.
    #[inline]
    fn find_match_wc<W: Unwildcard>(&self, pos: u32, st: &Subtable, flow: &Flow, wc: &mut W, tries: &mut TrieState) -> Option<(u16, usize)> {
        let last = st.n_stages as usize - 1;
        let fl = &self.fields[st.fields as usize..st.fields as usize + st.stage_end[last] as usize];
        let mut h = st.seed;
        let mut done = 0usize;
        for i in 0..last {
            if st.trie_stages & (1 << i) != 0 && self.check_tries(st, flow, wc, tries) {
                self.fold(st, done, wc);
                return None;
            }
            let end = st.stage_end[i] as usize;
            for &(fi, m) in &fl[done..end] {
                h = hash_step(h, flow.0[fi as usize] & m);
            }
            done = end;
            // Whether some rule agrees with `flow` on the stages so far.
            if !self.stage_keys.contains(stage_key(h, i)) {
                self.fold(st, done, wc);
                return None;
            }
        }
        if st.trie_stages & (1 << last) != 0 && self.check_tries(st, flow, wc, tries) {
            self.fold(st, done, wc);
            return None;
        }
        for &(fi, m) in &fl[done..] {
            h = hash_step(h, flow.0[fi as usize] & m);
        }
        // Values and priority are unique within a subtable (an identical rule replaces the old
        // one), so the highest-priority exact match is well defined.
        let mut hit: Option<(u16, usize)> = None;
        if let Some(&(start, n)) = self.exact.get(&h) {
            for &(sp, priority, id, at) in &self.rules[start as usize..(start + n) as usize] {
                let vals = &self.values[at as usize..at as usize + fl.len()];
                if sp == pos && fl.iter().zip(vals).all(|(&(fi, m), &v)| flow.0[fi as usize] & m == v) && hit.is_none_or(|(bp, _)| priority > bp) {
                    hit = Some((priority, id));
                }
            }
        }
        match hit {
            None if st.ports_mask_len > 0 => {
                // The port trie: only the port bits that rule out every rule's ports.
                let t = &self.port_tries[st.ports_trie as usize];
                let pmask = fl.iter().fold(0u64, |acc, &(fi, m)| match fi {
                    x if x as usize == Field::TpSrc.index() => acc | (m << 16),
                    x if x as usize == Field::TpDst.index() => acc | m,
                    _ => acc,
                });
                let look = t.lookup(ports_word(flow) & pmask);
                let bits = pmask & t.prefix_mask(look.mask_bits);
                wc.or(Field::TpSrc, bits >> 16);
                wc.or(Field::TpDst, bits & 0xffff);
                self.fold(st, done, wc);
                None
            }
            None => {
                self.fold(st, fl.len(), wc);
                None
            }
            Some(hit) => {
                self.fold(st, fl.len(), wc);
                Some(hit)
            }
        }
    }
}
