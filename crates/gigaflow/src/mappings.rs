//! The artifact's rule-space estimate (Table 2; gvs `gf_perf_update_stats`): every install of a
//! Gigaflow cache belongs to a *unique mapping* — which LTM tables it wrote, from which tag to
//! which next tag, under which wildcard — and each mapping counts the entries it added to each
//! table. A mapping whose consecutive tables' wildcards share one of the seven partitioning
//! fields contributes its largest table count (no cross product); a disjoint one contributes the
//! largest product of two adjacent non-zero counts (at least 1), and nothing while no table of it
//! holds two entries. The total, floored at the number of upcalls, is the Megaflow-equivalents
//! Gigaflow captures. The cache ([`crate::ltm`]) keeps these tallies as it installs; the exact
//! counts beside them are in [`crate::coverage`].

use innet_ofswitch::fields::Flow;
use crate::partition::field_set;
use std::collections::HashMap;

/// One LTM table's part of a mapping: (LTM table, tag, next tag, wildcard).
pub type MappingPart = (usize, u16, u16, Flow);

/// A wildcard reduced to the fields it examines (each examined field all ones): the key of the
/// artifact's unused alternative, mappings equal by their field sets
/// (`mapping_equal_with_bit_wildcards`), used to show how much the full wildcards split them.
pub fn fields_only(mask: &Flow) -> Flow {
    let mut m = Flow::default();
    for f in innet_ofswitch::fields::Field::all() {
        if mask.get(f) != 0 {
            m.set(f, f.full_mask());
        }
    }
    m
}

/// The unique mappings of a Gigaflow cache's installs and the entries each added per table
/// (the artifact's `unique_mappings_cache_occupancy`).
#[derive(Default)]
pub struct UniqueMappings {
    index: HashMap<Vec<MappingPart>, usize>,
    /// Per mapping: whether consecutive parts share a partitioning field, entries per table.
    tallies: Vec<(bool, Vec<u64>)>,
}

impl UniqueMappings {
    /// The mapping `parts` (in increasing LTM table order), registered on first sight.
    pub fn mapping(&mut self, parts: Vec<MappingPart>, tables: usize) -> usize {
        if let Some(&i) = self.index.get(&parts) {
            return i;
        }
        let overlaps = parts.windows(2).any(|w| field_set(&w[0].3) & field_set(&w[1].3) != 0);
        self.tallies.push((overlaps, vec![0; tables]));
        self.index.insert(parts, self.tallies.len() - 1);
        self.tallies.len() - 1
    }

    /// Mapping `m` added an entry to LTM table `table`.
    pub fn added(&mut self, m: usize, table: usize) {
        self.tallies[m].1[table] += 1;
    }

    pub fn len(&self) -> usize {
        self.tallies.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tallies.is_empty()
    }

    /// Table 2's Megaflow-equivalents, as the artifact estimates them, floored at `upcalls`.
    pub fn estimate(&self, upcalls: u64) -> f64 {
        self.sum().max(upcalls) as f64
    }

    /// The mappings' contributions before the floor.
    pub fn sum(&self) -> u64 {
        let mut total = 0u64;
        for (overlaps, counts) in &self.tallies {
            let largest = counts.iter().copied().max().unwrap_or(0);
            if *overlaps {
                total += largest.max(1);
            } else if largest > 1 {
                let non_zero: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
                total += non_zero.windows(2).map(|w| w[0] * w[1]).max().unwrap_or(1).max(1);
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_ofswitch::fields::Field;

    /// The tag an entry that ends its traversal carries (any tag value does here: the
    /// tallies do not interpret tags).
    const TAG_DONE: u16 = u16::MAX;

    /// A hand-countable run of the artifact's estimate. PSC-like traversals: an L2 lookup
    /// (dl_dst) then an ACL lookup (nw_src, tp_dst), split onto LTM tables 0 and 1.
    #[test]
    fn the_estimate_counts_unique_mappings_as_the_artifact() {
        let (mut l2, mut acl, mut both) = (Flow::default(), Flow::default(), Flow::default());
        l2.set(Field::DlDst, u64::MAX >> 16);
        acl.set(Field::NwSrc, 0xffff_ff00);
        acl.set(Field::TpDst, 0xffff);
        both.set(Field::DlDst, u64::MAX >> 16);
        both.set(Field::NwSrc, 0xffff_ff00);
        let mut u = UniqueMappings::default();
        // Mapping A (disjoint: L2 | ACL): 3 L2 entries and 4 ACL entries were added under it,
        // so 3 x 4 = 12 L2 x ACL combinations.
        let a = u.mapping(vec![(0, 0, 1, l2), (1, 1, TAG_DONE, acl)], 4);
        assert_eq!(u.mapping(vec![(0, 0, 1, l2), (1, 1, TAG_DONE, acl)], 4), a, "same parts, same mapping");
        (0..3).for_each(|_| u.added(a, 0));
        (0..4).for_each(|_| u.added(a, 1));
        assert_eq!(u.estimate(0), 12.0);
        // Mapping B has another ACL wildcard (a new unique mapping), adjacent parts sharing
        // dl_dst: no cross product, its largest table counts (5).
        let b = u.mapping(vec![(0, 0, 1, l2), (1, 1, TAG_DONE, both)], 4);
        assert_ne!(a, b);
        u.added(b, 0);
        (0..5).for_each(|_| u.added(b, 1));
        assert_eq!(u.estimate(0), 17.0);
        // Mapping C: one whole-traversal entry (Megaflow-like) in table 3 — a single table is
        // never a product: 1 once it holds two entries, nothing before.
        let c = u.mapping(vec![(3, 0, TAG_DONE, both)], 4);
        u.added(c, 3);
        assert_eq!(u.estimate(0), 17.0);
        u.added(c, 3);
        assert_eq!(u.estimate(0), 18.0);
        // Disjoint over three tables: the best adjacent product (2 x 6), not all three.
        let d = u.mapping(vec![(0, 0, 1, l2), (1, 1, 2, acl), (3, 2, TAG_DONE, Flow::default())], 4);
        u.added(d, 0);
        u.added(d, 0);
        (0..6).for_each(|_| u.added(d, 1));
        (0..5).for_each(|_| u.added(d, 3));
        assert_eq!(u.estimate(0), 18.0 + 30.0);
        // Floored at the upcalls (the artifact's "hard to estimate").
        assert_eq!(u.estimate(1000), 1000.0);
        assert_eq!(u.sum(), 48);
        // Keyed by field sets, A and B's ACL wildcards stay apart (B's adds dl_dst), two
        // prefix lengths of one field do not.
        let mut short = acl;
        short.set(Field::NwSrc, 0xffff_0000);
        assert_eq!(fields_only(&short), fields_only(&acl));
        assert_ne!(fields_only(&both), fields_only(&acl));
        assert_eq!(u.len(), 4);
    }
}
