//! Rule-space coverage (paper §6.3.2, Table 2): how many Megaflow-equivalents a cache encodes.
//! A Megaflow entry covers one traversal. Gigaflow's LTM tables cover the *cross product* of
//! their sub-traversal entries.
//!
//! Table 2 is the artifact's estimate, which the cache keeps as it installs
//! ([`crate::mappings::UniqueMappings::estimate`]). Two exact counts are reported beside it.
//! `feasible`: every chain of entries a packet can
//! complete — an entry with the start tag, then entries in later tables each carrying the
//! previous entry's next tag, the last one ending the traversal — where, after entry A's header
//! rewrites, the packet must still be able to match B (on each bit B matches, the value A writes,
//! or for bits A does not write the value A matched, agrees with B's key). `chains_tag_only`:
//! the chains linked by tags alone, an upper bound.

use crate::actions::CachedOp;
use innet_ofswitch::fields::{Flow, N_FIELDS};
use crate::ltm::{GigaflowCache, TAG_DONE, TAG_START};
use std::collections::HashMap;

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
    use innet_ofswitch::fields::Field;

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
}
