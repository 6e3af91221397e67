//! NuevoMatch, the learned packet classifier the paper compares tuple-space search with for the
//! cache lookup (§6.3.4, Fig. 17; Rashelbach et al., "A Computational Approach to Packet
//! Classification", SIGCOMM 2020). Built as its paper describes:
//!
//! - **iSets.** The rules are split into independent sets: each iSet holds rules whose ranges on
//!   one chosen field do not overlap, so a key falls in at most one of them. iSets are chosen
//!   greedily, each time the field with the largest non-overlapping subset (interval scheduling,
//!   earliest end first); a rule's value/mask on that field must be a range (a prefix mask). At
//!   most `max_isets` iSets, each covering at least `min_iset_fraction` of the rules; the rest is
//!   the **remainder**, searched by the baseline classifier (our tuple-space search,
//!   [`crate::tss::TssTable`]), as NuevoMatch does.
//! - **RQ-RMI per iSet.** A range-query recursive model index maps a key to the position of
//!   its range in the iSet's sorted range array: a root model picks one of `leaves` leaf models,
//!   the leaf predicts the position. Each leaf's **error bound is computed over every key of its
//!   input region**, not just training points (RQ-RMI's guarantee): the predicted position is
//!   monotone in the key and the true position is a step function, so the maximum error on each
//!   step is at its two ends. A lookup binary-searches only the window `prediction ± error`,
//!   then validates the one candidate against all of its fields.
//!
//! Choices (docs/gigaflow.md, "NuevoMatch"): the submodels are linear (NuevoMatch's are
//! 8-neuron ReLU nets, i.e. piecewise linear; a linear leaf is the one-piece case and keeps the
//! exact error bound simple); two stages. Cache entries match exactly on a table tag: the tag is
//! put above the field's bits in the iSet key (`tag << width | value`), so ranges of different
//! tags never overlap. 64-bit fields (metadata) cannot carry the tag and are never iSet fields.

use crate::fields::{Field, Flow, N_FIELDS};
use crate::tss::{EntryId, TssTable};

/// One classifier rule: a cache entry's tag, mask, masked key, priority and id.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub tag: u16,
    pub mask: Flow,
    pub key: Flow,
    pub priority: u16,
    pub id: EntryId,
}

impl Rule {
    #[inline]
    pub fn matches(&self, tag: u16, flow: &Flow) -> bool {
        self.tag == tag && (0..N_FIELDS).all(|i| flow.0[i] & self.mask.0[i] == self.key.0[i])
    }
}

/// Build parameters.
#[derive(Clone, Copy, Debug)]
pub struct NuevoMatchConfig {
    pub max_isets: usize,
    /// An iSet must hold at least this fraction of all rules.
    pub min_iset_fraction: f64,
    /// Ranges per leaf model (the number of leaves is `ranges / this`, at least 1).
    pub ranges_per_leaf: usize,
}

impl Default for NuevoMatchConfig {
    fn default() -> Self {
        // NuevoMatch uses up to 4 iSets and sends the rest to the remainder classifier.
        NuevoMatchConfig { max_isets: 4, min_iset_fraction: 0.05, ranges_per_leaf: 16 }
    }
}

/// The range a rule covers on `field`, in iSet key space, if its mask there is a prefix.
fn field_range(r: &Rule, field: usize) -> Option<(u64, u64)> {
    let f = Field::from_index(field);
    let w = f.bits();
    if w + 16 > 64 {
        return None;
    }
    let full = f.full_mask();
    let m = r.mask.0[field] & full;
    let low = !m & full;
    if low & low.wrapping_add(1) != 0 {
        return None;
    }
    let base = (r.tag as u64) << w;
    let lo = base | (r.key.0[field] & m);
    Some((lo, lo | low))
}

#[inline]
fn iset_key(tag: u16, flow: &Flow, field: usize, width: u32) -> u64 {
    ((tag as u64) << width) | (flow.0[field] & Field::from_index(field).full_mask())
}

/// A two-stage RQ-RMI over sorted, non-overlapping ranges starting at `lo`.
#[derive(Clone, Debug)]
struct Rqrmi {
    root_a: f64,
    root_b: f64,
    /// Leaf j: region start, slope, intercept (over `key - start`), error bound in positions.
    leaves: Vec<(u64, f64, f64, u32)>,
    n: usize,
}

impl Rqrmi {
    #[inline]
    fn leaf(&self, x: u64) -> usize {
        let l = self.root_a * x as f64 + self.root_b;
        if l <= 0.0 {
            0
        } else {
            (l as usize).min(self.leaves.len() - 1)
        }
    }

    #[inline]
    fn pos_in(&self, j: usize, x: u64) -> usize {
        let (s, a, b, _) = self.leaves[j];
        let p = a * (x - s) as f64 + b;
        if p <= 0.0 {
            0
        } else {
            (p.round() as usize).min(self.n - 1)
        }
    }

    /// Trains on the range starts `lo` (sorted, distinct).
    fn train(lo: &[u64], ranges_per_leaf: usize) -> Rqrmi {
        let n = lo.len();
        let n_leaves = n.div_ceil(ranges_per_leaf.max(1)).max(1);
        // Root: least squares of leaf-scaled position on the key.
        let (root_a, root_b) = fit(lo.iter().enumerate().map(|(i, &x)| (x as f64, i as f64 * n_leaves as f64 / n as f64)));
        let mut m = Rqrmi { root_a: root_a.max(0.0), root_b, leaves: vec![(0, 0.0, 0.0, 0); n_leaves], n };
        // Exact region boundaries: the first key each leaf index is reached at (leaf() is monotone).
        let mut starts = vec![0u64; n_leaves + 1];
        for (j, s) in starts.iter_mut().enumerate().take(n_leaves).skip(1) {
            let (mut a, mut b) = (0u64, u64::MAX);
            if m.leaf(u64::MAX) < j {
                *s = u64::MAX;
                continue;
            }
            while a < b {
                let mid = a + (b - a) / 2;
                if m.leaf(mid) >= j {
                    b = mid;
                } else {
                    a = mid + 1;
                }
            }
            *s = a;
        }
        // Step k of the true position: keys [lo[k], lo[k+1]-1] have position k (keys below
        // lo[0] have none; position 0 is searched and fails validation).
        let step_end = |k: usize| if k + 1 < n { lo[k + 1] - 1 } else { u64::MAX };
        for j in 0..n_leaves {
            let (rs, re) = (starts[j], if j + 1 < n_leaves { starts[j + 1].saturating_sub(1) } else { u64::MAX });
            m.leaves[j].0 = rs;
            if j + 1 < n_leaves && starts[j + 1] <= rs {
                continue; // empty region
            }
            // Steps intersecting [rs, re], clipped; the step before lo[0] counts as position 0.
            let first = lo.partition_point(|&x| x <= rs).saturating_sub(1);
            let mut pieces: Vec<(u64, u64, usize)> = Vec::new();
            if rs < lo[0] {
                pieces.push((rs, re.min(lo[0] - 1), 0));
            }
            let mut k = first;
            while k < n && lo[k] <= re {
                let (u, v) = (lo[k].max(rs), step_end(k).min(re));
                if u <= v {
                    pieces.push((u, v, k));
                }
                k += 1;
            }
            let (a, b) = fit(pieces.iter().flat_map(|&(u, v, k)| [((u - rs) as f64, k as f64), ((v - rs) as f64, k as f64)]));
            m.leaves[j] = (rs, a.max(0.0), b, 0);
            let mut err = 0usize;
            for &(u, v, k) in &pieces {
                for x in [u, v] {
                    err = err.max(m.pos_in(j, x).abs_diff(k));
                }
            }
            m.leaves[j].3 = err as u32;
        }
        m
    }
}

/// Least-squares line through the points (slope, intercept); a vertical set gives slope 0.
fn fit(points: impl Iterator<Item = (f64, f64)>) -> (f64, f64) {
    let (mut n, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let pts: Vec<(f64, f64)> = points.collect();
    if pts.is_empty() {
        return (0.0, 0.0);
    }
    // Centre x for conditioning.
    let cx = pts.iter().map(|p| p.0).sum::<f64>() / pts.len() as f64;
    for &(x, y) in &pts {
        let x = x - cx;
        n += 1.0;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let var = sxx - sx * sx / n;
    let a = if var > 0.0 { (sxy - sx * sy / n) / var } else { 0.0 };
    let b = (sy - a * sx) / n;
    (a, b - a * cx)
}

/// One iSet: rules non-overlapping on `field`, sorted by range start, and its model.
#[derive(Clone, Debug)]
struct ISet {
    field: usize,
    width: u32,
    lo: Vec<u64>,
    hi: Vec<u64>,
    rules: Vec<u32>,
    model: Rqrmi,
}

impl ISet {
    /// The one rule of this iSet whose range holds `x`, if any.
    #[inline]
    fn candidate(&self, x: u64) -> Option<u32> {
        let j = self.model.leaf(x);
        let p = self.model.pos_in(j, x);
        let e = self.model.leaves[j].3 as usize;
        let (a, b) = (p.saturating_sub(e), (p + e).min(self.lo.len() - 1));
        // Last i in [a, b] with lo[i] <= x.
        let i = a + self.lo[a..=b].partition_point(|&l| l <= x);
        if i == a {
            return None;
        }
        let i = i - 1;
        (x <= self.hi[i]).then_some(self.rules[i])
    }
}

/// What a build produced (for reports).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NuevoMatchStats {
    pub rules: usize,
    /// (field name, rules) per iSet.
    pub isets: Vec<(String, usize)>,
    pub remainder: usize,
    /// Mean search window (2·error + 1) over leaves, weighted by ranges.
    pub mean_window: f64,
    pub max_error: u32,
    pub leaves: usize,
}

/// The classifier.
pub struct NuevoMatch {
    rules: Vec<Rule>,
    isets: Vec<ISet>,
    remainder: TssTable<u32>,
    /// Highest priority in the remainder: an iSet match at or above it ends the search (any
    /// matching entry of the top priority is a correct answer).
    remainder_max_priority: Option<u16>,
    pub stats: NuevoMatchStats,
}

impl NuevoMatch {
    pub fn build(rules: Vec<Rule>, cfg: NuevoMatchConfig) -> NuevoMatch {
        let n = rules.len();
        let mut left: Vec<u32> = (0..n as u32).collect();
        let mut isets = Vec::new();
        let mut stats = NuevoMatchStats { rules: n, ..Default::default() };
        while isets.len() < cfg.max_isets && !left.is_empty() {
            // The field with the largest set of pairwise non-overlapping ranges.
            let mut best: Option<(usize, Vec<(u64, u64, u32)>)> = None;
            for field in 0..N_FIELDS {
                let mut rs: Vec<(u64, u64, u32)> = left.iter().filter_map(|&r| field_range(&rules[r as usize], field).map(|(lo, hi)| (lo, hi, r))).collect();
                if rs.len() <= best.as_ref().map_or(0, |b| b.1.len()) {
                    continue;
                }
                rs.sort_by_key(|&(lo, hi, r)| (hi, std::cmp::Reverse(lo), r));
                let mut chosen = Vec::new();
                let mut last_hi: Option<u64> = None;
                for (lo, hi, r) in rs {
                    if last_hi.is_none_or(|h| lo > h) {
                        chosen.push((lo, hi, r));
                        last_hi = Some(hi);
                    }
                }
                if chosen.len() > best.as_ref().map_or(0, |b| b.1.len()) {
                    best = Some((field, chosen));
                }
            }
            let Some((field, mut chosen)) = best else { break };
            if (chosen.len() as f64) < cfg.min_iset_fraction * n as f64 || chosen.is_empty() {
                break;
            }
            chosen.sort_by_key(|c| c.0);
            let lo: Vec<u64> = chosen.iter().map(|c| c.0).collect();
            let model = Rqrmi::train(&lo, cfg.ranges_per_leaf);
            let in_set: std::collections::HashSet<u32> = chosen.iter().map(|c| c.2).collect();
            left.retain(|r| !in_set.contains(r));
            stats.isets.push((Field::from_index(field).name(), chosen.len()));
            isets.push(ISet { field, width: Field::from_index(field).bits(), hi: chosen.iter().map(|c| c.1).collect(), rules: chosen.iter().map(|c| c.2).collect(), lo, model });
        }
        let mut remainder = TssTable::new(usize::MAX);
        for &r in &left {
            let x = &rules[r as usize];
            remainder.insert(x.tag, &x.mask, x.priority, &x.key, r, 0);
        }
        stats.remainder = left.len();
        let remainder_max_priority = left.iter().map(|&r| rules[r as usize].priority).max();
        let (mut w, mut cnt) = (0.0, 0.0);
        for s in &isets {
            stats.leaves += s.model.leaves.len();
            let per = s.lo.len() as f64 / s.model.leaves.len() as f64;
            for l in &s.model.leaves {
                w += (2.0 * l.3 as f64 + 1.0) * per;
                cnt += per;
                stats.max_error = stats.max_error.max(l.3);
            }
        }
        stats.mean_window = if cnt > 0.0 { w / cnt } else { 0.0 };
        NuevoMatch { rules, isets, remainder, remainder_max_priority, stats }
    }

    /// The highest-priority rule matching (`tag`, `flow`): its index in the build's rule list.
    #[inline]
    pub fn lookup_index(&mut self, tag: u16, flow: &Flow) -> Option<usize> {
        let mut best: Option<(u16, usize)> = None;
        for s in &self.isets {
            if let Some(r) = s.candidate(iset_key(tag, flow, s.field, s.width)) {
                let rule = &self.rules[r as usize];
                if rule.matches(tag, flow) && best.is_none_or(|b| rule.priority > b.0) {
                    best = Some((rule.priority, r as usize));
                }
            }
        }
        let skip = match (best, self.remainder_max_priority) {
            (_, None) => true,
            (Some(b), Some(m)) => b.0 >= m,
            (None, Some(_)) => false,
        };
        if skip {
            return best.map(|b| b.1);
        }
        if let Some(id) = self.remainder.lookup(tag, flow, None) {
            let r = self.remainder.get(id).payload as usize;
            if best.is_none_or(|b| self.rules[r].priority > b.0) {
                best = Some((self.rules[r].priority, r));
            }
        }
        best.map(|b| b.1)
    }

    /// The id of the highest-priority rule matching (`tag`, `flow`).
    #[inline]
    pub fn lookup(&mut self, tag: u16, flow: &Flow) -> Option<EntryId> {
        self.lookup_index(tag, flow).map(|i| self.rules[i].id)
    }

    pub fn rule(&self, i: usize) -> &Rule {
        &self.rules[i]
    }
}

/// The rules of a cache table (its live entries).
pub fn rules_of<P>(t: &TssTable<P>) -> Vec<Rule> {
    t.ids()
        .into_iter()
        .map(|id| {
            let s = t.get(id);
            Rule { tag: s.tag, mask: *t.mask_of(id), key: s.key, priority: s.priority, id }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule(tag: u16, prio: u16, id: u32, fields: &[(Field, u64, u64)]) -> Rule {
        let (mut mask, mut key) = (Flow::default(), Flow::default());
        for &(f, v, m) in fields {
            mask.0[f.index()] = m;
            key.0[f.index()] = v & m;
        }
        Rule { tag, mask, key, priority: prio, id }
    }

    /// The oracle: every rule checked; the highest priority wins.
    fn brute(rules: &[Rule], tag: u16, f: &Flow) -> Option<u16> {
        rules.iter().filter(|r| r.matches(tag, f)).map(|r| r.priority).max()
    }

    #[test]
    fn prefixes_on_one_field_form_an_iset_and_are_found() {
        // 1000 disjoint /24s: one iSet on nw_dst, nothing left over.
        let rules: Vec<Rule> = (0..1000u32).map(|i| rule(1, 1, i, &[(Field::NwDst, (0x0a00_0000 + (i as u64) * 256 * 7) & 0xffff_ff00, 0xffff_ff00)])).collect();
        let mut nm = NuevoMatch::build(rules.clone(), NuevoMatchConfig::default());
        assert_eq!(nm.stats.isets, vec![("nw_dst".to_string(), 1000)]);
        assert_eq!(nm.stats.remainder, 0);
        for (i, r) in rules.iter().enumerate() {
            let mut f = Flow::default();
            f.0[Field::NwDst.index()] = r.key.0[Field::NwDst.index()] | 0x42;
            assert_eq!(nm.lookup(1, &f), Some(i as u32));
            assert_eq!(nm.lookup(2, &f), None, "the tag is matched exactly");
            f.0[Field::NwDst.index()] = r.key.0[Field::NwDst.index()] + 256; // gap between rules
            assert_eq!(nm.lookup(1, &f).is_some(), rules.iter().any(|x| x.matches(1, &f)));
        }
    }

    #[test]
    fn rules_beyond_the_isets_go_to_the_remainder() {
        // Rule 0 is not a range on tp_dst; every other field of both is a (wildcard) range, and
        // two wildcards overlap, so one iSet holds one rule and the other is left over.
        let rules = vec![rule(0, 3, 0, &[(Field::TpDst, 0x50, 0xf0f0)]), rule(0, 1, 1, &[(Field::NwDst, 5, 0xffff_ffff)])];
        assert_eq!(field_range(&rules[0], Field::TpDst.index()), None);
        assert_eq!(field_range(&rules[1], Field::NwDst.index()), Some((5, 5)));
        let mut nm = NuevoMatch::build(rules, NuevoMatchConfig { min_iset_fraction: 0.0, max_isets: 1, ..Default::default() });
        assert_eq!(nm.stats.remainder, 1);
        let mut f = Flow::default();
        f.0[Field::TpDst.index()] = 0x5a;
        f.0[Field::NwDst.index()] = 5;
        assert_eq!(nm.lookup(0, &f), Some(0), "the remainder's higher priority wins");
    }

    fn arb_rule(id: u32) -> impl Strategy<Value = Rule> {
        let fields = [Field::NwSrc, Field::NwDst, Field::TpDst, Field::DlDst];
        (0u16..3, 0u16..4, proptest::collection::vec((0usize..4, any::<u64>(), 0u32..=48, any::<bool>()), 1..4)).prop_map(move |(tag, prio, fs)| {
            let v: Vec<(Field, u64, u64)> = fs
                .into_iter()
                .map(|(fi, val, plen, arbitrary)| {
                    let f = fields[fi];
                    let full = f.full_mask();
                    let plen = plen.min(f.bits());
                    // A prefix, or (sometimes) an arbitrary bit mask.
                    let m = if arbitrary { val.rotate_left(17) & full } else if plen == 0 { 0 } else { (full << (f.bits() - plen)) & full };
                    // Small value spaces so that rules overlap and packets hit.
                    (f, (val & 0x3) << (f.bits() - 2) | (val >> 8) & 0x7, m)
                })
                .collect();
            rule(tag, prio, id, &v)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// NuevoMatch and tuple-space search return an entry of the oracle's priority that
        /// matches the packet, and the same entry whenever only one entry has that priority.
        #[test]
        fn nuevomatch_agrees_with_tuple_space_search_and_the_oracle(
            rules in (1usize..120).prop_flat_map(|n| (0..n as u32).map(arb_rule).collect::<Vec<_>>()),
            probes in proptest::collection::vec((0usize..1000, 0u16..3, any::<u64>()), 1..200),
            rpl in 1usize..20,
        ) {
            let mut tss: TssTable<u32> = TssTable::new(usize::MAX);
            let mut ids = Vec::new();
            for r in &rules {
                ids.push(tss.insert(r.tag, &r.mask, r.priority, &r.key, r.id, 0));
            }
            let mut nm = NuevoMatch::build(rules.clone(), NuevoMatchConfig { ranges_per_leaf: rpl, min_iset_fraction: 0.0, ..Default::default() });
            for (pick, tag, noise) in probes {
                // Probe at a rule's key with some bits changed, or anywhere.
                let base = &rules[pick % rules.len()];
                let mut f = base.key;
                for (i, x) in f.0.iter_mut().enumerate() {
                    if (noise >> (i % 64)) & 1 == 1 && noise % 3 == 0 {
                        *x ^= noise.rotate_left(i as u32) & Field::from_index(i).full_mask();
                    }
                }
                let tag = if noise % 2 == 0 { base.tag } else { tag };
                let want = brute(&rules, tag, &f);
                let got_nm = nm.lookup_index(tag, &f).map(|i| nm.rule(i).clone());
                let got_tss = tss.lookup(tag, &f, None).map(|id| rules[tss.get(id).payload as usize].clone());
                prop_assert_eq!(got_nm.as_ref().map(|r| r.priority), want);
                prop_assert_eq!(got_tss.as_ref().map(|r| r.priority), want);
                if let (Some(a), Some(b)) = (&got_nm, &got_tss) {
                    prop_assert!(a.matches(tag, &f) && b.matches(tag, &f));
                    let top = rules.iter().filter(|r| r.matches(tag, &f) && Some(r.priority) == want).count();
                    if top == 1 {
                        prop_assert_eq!(a.id, b.id);
                    }
                }
            }
        }
    }
}
