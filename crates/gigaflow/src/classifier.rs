//! One OpenFlow table with Open vSwitch's classifier semantics: rules grouped into subtables by
//! mask, subtables searched in order of their highest priority, and each subtable searched in
//! stages (metadata, L2, L3, L4) so a miss un-wildcards only the stages it had to look at. Prefix
//! tries on nw_dst and nw_src and a per-subtable port trie narrow the un-wildcarded bits further.

use crate::fields::{Field, Flow, N_FIELDS};
use crate::flows::FlowRule;
use crate::trie::{PrefixSet, TrieLookup};
use crate::tss::FastMap;

/// Fields with a prefix trie, in OVS's default order (`prefixes=ip_dst,ip_src`).
pub const TRIE_FIELDS: [Field; 2] = [Field::NwDst, Field::NwSrc];

#[derive(Clone, Debug)]
struct SubtableRule {
    rule_id: usize,
    priority: u16,
    /// The rule's values, already masked with the subtable mask.
    values: Flow,
}

#[derive(Clone, Debug)]
struct Subtable {
    mask: Flow,
    /// Fields of each lookup stage in order; the last entry is the final stage.
    stages: Vec<Vec<Field>>,
    rules: Vec<SubtableRule>,
    max_priority: u16,
    /// Prefix length of the mask on each trie field (0: not a prefix or not matched).
    trie_prefix_len: [u32; 2],
    /// Length of the mask over (tp_src << 16 | tp_dst) counted from the top, as OVS does.
    ports_mask_len: u32,
    ports_trie: PrefixSet,
    /// `cum_fields[i]`: indices of the masked fields of stages `0..=i`.
    cum_fields: Vec<Vec<u8>>,
    /// `stage_keys[i]`: hashes of the rules' values over `cum_fields[i]` — OVS's per-stage
    /// indices, which are hash-only too (a collision only makes a stage look matchable, as in
    /// OVS's ccmap).
    stage_keys: Vec<FastMap<u64, ()>>,
    /// Rules by the hash of their full masked values: (values, priority, rule id), verified.
    exact: FastMap<u64, Vec<(Flow, u16, usize)>>,
}

/// Where a lookup records the bits it examined: a plain mask, or [`DualWildcards`].
pub trait Unwildcard {
    fn or(&mut self, f: Field, mask: u64);
    fn get(&self, f: Field) -> u64;
}

impl Unwildcard for Flow {
    fn or(&mut self, f: Field, mask: u64) {
        Flow::or(self, f, mask)
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
}

impl Unwildcard for DualWildcards<'_> {
    fn or(&mut self, f: Field, mask: u64) {
        self.global.or(f, mask);
        self.lookup.or(f, mask);
    }
    fn get(&self, f: Field) -> u64 {
        self.global.get(f)
    }
}

/// One flow table.
#[derive(Clone, Debug, Default)]
pub struct Classifier {
    subtables: Vec<Subtable>,
    tries: Vec<PrefixSet>,
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
        let mut cls = Classifier { subtables: Vec::new(), tries: vec![PrefixSet::new(32), PrefixSet::new(32)] };
        for &(id, rule) in rules {
            cls.insert(id, rule);
            // OVS's subtable vector: a new subtable is appended, a subtable whose highest
            // priority rises keeps its slot, and after each flow mod the vector is re-sorted by
            // priority when out of order, with glibc's stable merge sort (Debian 12). So among
            // equal priorities the order is that of the previous sorted vector.
            if cls.subtables.windows(2).any(|w| w[0].max_priority < w[1].max_priority) {
                cls.subtables.sort_by_key(|s| std::cmp::Reverse(s.max_priority));
            }
        }
        for st in &mut cls.subtables {
            st.build_indices();
        }
        cls
    }

    fn insert(&mut self, id: usize, rule: &FlowRule) {
        let mut mask = Flow::default();
        let mut values = Flow::default();
        for m in &rule.matches {
            mask.set(m.field, m.mask);
            values.set(m.field, m.value & m.mask);
        }
        let st = match self.subtables.iter().position(|s| s.mask == mask) {
            Some(i) => i,
            None => {
                self.subtables.push(Subtable::new(mask));
                self.subtables.len() - 1
            }
        };
        let st = &mut self.subtables[st];
        // A rule identical to an existing one replaces it, as ovs-ofctl add-flows does.
        st.rules.retain(|r| !(r.values == values && r.priority == rule.priority));
        st.rules.push(SubtableRule { rule_id: id, priority: rule.priority, values });
        st.max_priority = st.rules.iter().map(|r| r.priority).max().unwrap_or(0);
        if st.ports_mask_len > 0 {
            let p = ports_word(&values);
            st.ports_trie.insert(p, st.ports_mask_len);
        }
        for (j, f) in TRIE_FIELDS.iter().enumerate() {
            if st.trie_prefix_len[j] > 0 {
                self.tries[j].insert(values.get(*f), st.trie_prefix_len[j]);
            }
        }
    }

    /// Finds the highest-priority rule matching `flow` and ORs into `wc` every bit OVS's
    /// classifier would have examined to find it.
    pub fn lookup<W: Unwildcard>(&self, flow: &Flow, wc: &mut W) -> Option<usize> {
        self.lookup_counted(flow, wc, &mut 0)
    }

    /// [`Classifier::lookup`], adding the number of subtables searched to `probes` (the
    /// tuple-space-search cost the NIC model charges per miss).
    pub fn lookup_counted<W: Unwildcard>(&self, flow: &Flow, wc: &mut W, probes: &mut u64) -> Option<usize> {
        let mut tries: [Option<TrieLookup>; 2] = [None, None];
        let mut best: Option<(u16, usize)> = None;
        for st in &self.subtables {
            if let Some((p, _)) = best {
                if st.max_priority <= p {
                    break;
                }
            }
            *probes += 1;
            if let Some((p, id)) = st.find_match_wc(flow, wc, &self.tries, &mut tries) {
                if best.is_none_or(|(bp, _)| p > bp) {
                    best = Some((p, id));
                }
            }
        }
        best.map(|(_, id)| id)
    }
}

impl Subtable {
    fn new(mask: Flow) -> Self {
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
        let mut trie_prefix_len = [0; 2];
        for (j, f) in TRIE_FIELDS.iter().enumerate() {
            trie_prefix_len[j] = prefix_len(mask.get(*f), 32);
        }
        let pm = ports_word(&mask) as u32;
        let ports_mask_len = if pm == 0 { 0 } else { 32 - pm.trailing_zeros() };
        let mut cum_fields = Vec::with_capacity(stages.len());
        let mut cum: Vec<u8> = Vec::new();
        for stage in &stages {
            cum.extend(stage.iter().map(|f| f.index() as u8));
            cum_fields.push(cum.clone());
        }
        Subtable { mask, stages, rules: Vec::new(), max_priority: 0, trie_prefix_len, ports_mask_len, ports_trie: PrefixSet::new(32), cum_fields, stage_keys: Vec::new(), exact: FastMap::default() }
    }

    /// Hash of `flow` under the mask, over the fields of stages `0..=stage`.
    #[inline]
    fn stage_hash(&self, flow: &Flow, stage: usize) -> u64 {
        let mut h: u64 = 0x243f_6a88_85a3_08d3;
        for &i in &self.cum_fields[stage] {
            h = (h.rotate_left(5) ^ (flow.0[i as usize] & self.mask.0[i as usize])).wrapping_mul(0x51_7cc1_b727_220a);
        }
        h
    }

    /// Builds the hash indices the staged lookup probes (after every rule is in).
    fn build_indices(&mut self) {
        let last = self.stages.len() - 1;
        self.stage_keys = (0..last).map(|i| self.rules.iter().map(|r| (self.stage_hash(&r.values, i), ())).collect()).collect();
        let mut exact: FastMap<u64, Vec<(Flow, u16, usize)>> = FastMap::default();
        for r in &self.rules {
            exact.entry(self.stage_hash(&r.values, last)).or_default().push((r.values, r.priority, r.rule_id));
        }
        self.exact = exact;
    }

    fn fold<W: Unwildcard>(&self, fields: &[Field], wc: &mut W) {
        for &f in fields {
            wc.or(f, self.mask.get(f));
        }
    }

    fn fold_all<W: Unwildcard>(&self, wc: &mut W) {
        for i in 0..N_FIELDS {
            if self.mask.0[i] != 0 {
                wc.or(Field::from_index(i), self.mask.0[i]);
            }
        }
    }

    /// OVS `check_tries`: true when a trie proves no rule of this subtable can match, after
    /// un-wildcarding the prefix bits that prove it.
    fn check_tries<W: Unwildcard>(&self, stage: &[Field], flow: &Flow, wc: &mut W, tries: &[PrefixSet], cache: &mut [Option<TrieLookup>; 2]) -> bool {
        // nw_src and nw_dst share one 64-bit word of struct flow, so either makes both relevant.
        if !stage.iter().any(|f| matches!(f, Field::NwSrc | Field::NwDst)) {
            return false;
        }
        for (j, f) in TRIE_FIELDS.iter().enumerate() {
            let plen = self.trie_prefix_len[j];
            if plen == 0 {
                continue;
            }
            let look = *cache[j].get_or_insert_with(|| tries[j].lookup(flow.get(*f)));
            if look.matching_lengths & (1u64 << (plen - 1)) == 0 {
                let bits_mask = tries[j].prefix_mask(look.mask_bits);
                if look.mask_bits <= plen {
                    wc.or(*f, bits_mask);
                    return true;
                }
                if wc.get(*f) & bits_mask == bits_mask {
                    // Already examined by an earlier table: the proof rests on these bits.
                    wc.or(*f, bits_mask);
                    return true;
                }
            }
        }
        false
    }

    /// Whether some rule may match `flow` on the fields of the first `n_stages` stages.
    fn any_matches(&self, flow: &Flow, n_stages: usize) -> bool {
        self.stage_keys[n_stages - 1].contains_key(&self.stage_hash(flow, n_stages - 1))
    }

    fn fold_stages<W: Unwildcard>(&self, n_stages: usize, wc: &mut W) {
        for stage in &self.stages[..n_stages] {
            self.fold(stage, wc);
        }
    }

    /// OVS `find_match_wc`.
    fn find_match_wc<W: Unwildcard>(&self, flow: &Flow, wc: &mut W, tries: &[PrefixSet], cache: &mut [Option<TrieLookup>; 2]) -> Option<(u16, usize)> {
        let last = self.stages.len() - 1;
        for i in 0..last {
            if self.check_tries(&self.stages[i], flow, wc, tries, cache) {
                self.fold_stages(i, wc);
                return None;
            }
            if !self.any_matches(flow, i + 1) {
                self.fold_stages(i + 1, wc);
                return None;
            }
        }
        if self.check_tries(&self.stages[last], flow, wc, tries, cache) {
            self.fold_stages(last, wc);
            return None;
        }
        // Values and priority are unique within a subtable (an identical rule replaces the old
        // one), so the highest-priority exact match is well defined.
        let hit = self.exact.get(&self.stage_hash(flow, last)).and_then(|v| {
            v.iter().filter(|(vals, _, _)| self.stages.iter().flatten().all(|&f| flow.get(f) & self.mask.get(f) == vals.get(f))).max_by_key(|x| x.1).map(|&(_, p, id)| (p, id))
        });
        match hit {
            None if self.ports_mask_len > 0 => {
                let pmask = ports_word(&self.mask);
                let value = ports_word(flow) & pmask;
                let look = self.ports_trie.lookup(value);
                let bits = pmask & self.ports_trie.prefix_mask(look.mask_bits);
                wc.or(Field::TpSrc, bits >> 16);
                wc.or(Field::TpDst, bits & 0xffff);
                self.fold_stages(last, wc);
                None
            }
            None => {
                self.fold_all(wc);
                None
            }
            Some((priority, rule_id)) => {
                self.fold_all(wc);
                Some((priority, rule_id))
            }
        }
    }
}
