//! Rule-space coverage (paper §6.3.2, Table 2): how many Megaflow-equivalents a cache encodes.
//! A Megaflow entry covers one traversal. Gigaflow's LTM tables cover the *cross product* of
//! their sub-traversal entries.
//!
//! Table 2 is the artifact's estimate (`gf_perf_update_stats`, notes §2.9), which this module
//! reproduces as [`UniqueMappings::estimate`]: every install belongs to a *unique mapping* —
//! which LTM tables it wrote, from which tag to which next tag, under which wildcard — and each
//! mapping counts the entries it added to each table. A mapping whose consecutive tables'
//! wildcards share one of the seven partitioning fields contributes its largest table count (no
//! cross product); a disjoint one contributes the largest product of two adjacent non-zero
//! counts (at least 1), and nothing while no table of it holds two entries. The total,
//! floored at the number of upcalls, is the Megaflow-equivalents Gigaflow captures.
//!
//! Two exact counts are reported beside it. `feasible`: every chain of entries a packet can
//! complete — an entry with the start tag, then entries in later tables each carrying the
//! previous entry's next tag, the last one ending the traversal — where, after entry A's header
//! rewrites, the packet must still be able to match B (on each bit B matches, the value A writes,
//! or for bits A does not write the value A matched, agrees with B's key). `chains_tag_only`:
//! the chains linked by tags alone, an upper bound.

use crate::actions::CachedOp;
use crate::fields::{Flow, N_FIELDS};
use crate::ltm::{GigaflowCache, TAG_DONE, TAG_START};
use crate::partition::field_set;
use std::collections::HashMap;

/// One LTM table's part of a mapping: (LTM table, tag, next tag, wildcard).
pub type MappingPart = (usize, u16, u16, Flow);

/// A wildcard reduced to the fields it examines (each examined field all ones): the key of the
/// artifact's unused alternative, mappings equal by their field sets
/// (`mapping_equal_with_bit_wildcards`), used to show how much the full wildcards split them.
pub fn fields_only(mask: &Flow) -> Flow {
    let mut m = Flow::default();
    for f in crate::fields::Field::all() {
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

/// One LTM entry reduced to what chaining needs.
struct Node {
    tag: u16,
    next_tag: u16,
    mask: Flow,
    key: Flow,
    /// Net rewrite of the entry's ops: bits written and their values.
    write_mask: Flow,
    write_value: Flow,
}

fn node_of(tag: u16, next_tag: u16, mask: &Flow, key: &Flow, ops: &[CachedOp]) -> Node {
    let mut wm = Flow::default();
    let mut wv = Flow::default();
    for op in ops {
        if let CachedOp::Set { field, value, mask } = *op {
            let i = field as usize;
            wm.0[i] |= mask;
            wv.0[i] = (wv.0[i] & !mask) | (value & mask);
        }
    }
    Node {
        tag,
        next_tag,
        mask: *mask,
        key: key.masked(mask),
        write_mask: wm,
        write_value: wv,
    }
}

/// Whether some packet that matches `a` still matches `b` after `a`'s rewrites.
fn chains_to(a: &Node, b: &Node) -> bool {
    (0..N_FIELDS).all(|i| {
        let bm = b.mask.0[i];
        if bm == 0 {
            return true;
        }
        let w = a.write_mask.0[i];
        let written_ok = (a.write_value.0[i] ^ b.key.0[i]) & bm & w == 0;
        let kept_ok = (a.key.0[i] ^ b.key.0[i]) & bm & a.mask.0[i] & !w == 0;
        written_ok && kept_ok
    })
}

/// Coverage of a Gigaflow cache, three ways.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Coverage {
    /// Table 2's count: the artifact's estimate over unique mappings ([`UniqueMappings`]).
    pub estimate: f64,
    /// The estimate's sum over mappings before the floor at the upcalls.
    pub mapping_sum: f64,
    /// The same sum with mappings keyed by field sets instead of full wildcards.
    pub mapping_sum_by_fields: f64,
    /// Chains whose adjacent entries a packet can pass.
    pub feasible: f64,
    /// Chains linked by tags alone (an upper bound).
    pub chains_tag_only: f64,
}

/// Rule-space coverage of `g` in Megaflow-equivalents, after `upcalls` upcalls.
pub fn gigaflow_coverage(g: &GigaflowCache, upcalls: u64) -> Coverage {
    let tables: Vec<Vec<Node>> = g
        .tables
        .iter()
        .map(|t| {
            t.ids()
                .into_iter()
                .map(|id| {
                    let s = t.get(id);
                    node_of(
                        s.tag,
                        s.payload.next_tag,
                        t.mask_of(id),
                        &s.key,
                        &s.payload.ops,
                    )
                })
                .collect()
        })
        .collect();
    // ways[k][i]: chains that start with entry i of table k and end the traversal.
    let mut ways: Vec<Vec<(f64, f64)>> = vec![Vec::new(); tables.len()];
    // Entries of tables > k grouped by tag: (table, index).
    let mut later_by_tag: HashMap<u16, Vec<(usize, usize)>> = HashMap::new();
    for k in (0..tables.len()).rev() {
        let w: Vec<(f64, f64)> = tables[k]
            .iter()
            .map(|a| {
                if a.next_tag == TAG_DONE {
                    return (1.0, 1.0);
                }
                let (mut feas, mut tag_only) = (0.0, 0.0);
                for &(j, i) in later_by_tag
                    .get(&a.next_tag)
                    .map(|v| v.as_slice())
                    .unwrap_or(&[])
                {
                    let (wf, wt) = ways[j][i];
                    tag_only += wt;
                    if wf > 0.0 && chains_to(a, &tables[j][i]) {
                        feas += wf;
                    }
                }
                (feas, tag_only)
            })
            .collect();
        ways[k] = w;
        for (i, n) in tables[k].iter().enumerate() {
            later_by_tag.entry(n.tag).or_default().push((k, i));
        }
    }
    let mut c = Coverage {
        estimate: g.mappings.estimate(upcalls),
        mapping_sum: g.mappings.sum() as f64,
        mapping_sum_by_fields: g.mappings_by_fields.sum() as f64,
        ..Coverage::default()
    };
    for (k, t) in tables.iter().enumerate() {
        for (i, n) in t.iter().enumerate() {
            if n.tag == TAG_START {
                c.feasible += ways[k][i].0;
                c.chains_tag_only += ways[k][i].1;
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::Field;

    fn node(tag: u16, next: u16, m: &[(Field, u64, u64)], sets: &[(Field, u64, u64)]) -> Node {
        let (mut mask, mut key) = (Flow::default(), Flow::default());
        for &(f, v, mk) in m {
            mask.0[f.index()] = mk;
            key.0[f.index()] = v & mk;
        }
        let ops: Vec<CachedOp> = sets
            .iter()
            .map(|&(f, v, mk)| CachedOp::Set {
                field: f.index() as u8,
                value: v,
                mask: mk,
            })
            .collect();
        node_of(tag, next, &mask, &key, &ops)
    }

    #[test]
    fn a_chain_needs_agreeing_bits_after_rewrites() {
        let a = node(0, 3, &[(Field::NwDst, 0x0a00_0000, 0xff00_0000)], &[]);
        // Same bits, different value: no packet matches both.
        assert!(!chains_to(
            &a,
            &node(
                3,
                TAG_DONE,
                &[(Field::NwDst, 0x0b00_0000, 0xff00_0000)],
                &[]
            )
        ));
        // A narrower prefix inside A's: feasible.
        assert!(chains_to(
            &a,
            &node(
                3,
                TAG_DONE,
                &[(Field::NwDst, 0x0a01_0000, 0xffff_0000)],
                &[]
            )
        ));
        // Disjoint fields always chain.
        assert!(chains_to(
            &a,
            &node(3, TAG_DONE, &[(Field::TpDst, 80, 0xffff)], &[])
        ));
        // A rewrites dl_dst: B must match the written value, whatever A matched.
        let r = node(
            0,
            3,
            &[(Field::DlDst, 1, u64::MAX)],
            &[(Field::DlDst, 7, 0xffff_ffff_ffff)],
        );
        assert!(chains_to(
            &r,
            &node(3, TAG_DONE, &[(Field::DlDst, 7, 0xffff_ffff_ffff)], &[])
        ));
        assert!(!chains_to(
            &r,
            &node(3, TAG_DONE, &[(Field::DlDst, 1, 0xffff_ffff_ffff)], &[])
        ));
    }

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
