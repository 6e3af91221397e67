//! Splitting a traversal into sub-traversals, one per Gigaflow (LTM) table: the paper's
//! disjoint partitioning (DP, §4.2.2), and the two alternatives of its Fig. 16 — random
//! partitioning (RND) and the ideal 1-1 mapping (one sub-traversal per vSwitch lookup).
//!
//! Each lookup is summarised by the set of the seven header fields it examined (the artifact's
//! `DL_SRC, DL_DST, NW_SRC, NW_DST, NW_PROTO, TP_SRC, TP_DST`; prefix lengths ignored). A
//! segment is *coupled* when every lookup after its first shares a field with the union of the
//! lookups before it (or one side is empty); a segment that crosses a disjointness boundary
//! scores 0. A coupled segment scores its length (paper); ties go to fewer segments (the
//! artifact's base score per joined lookup). Every partition covers the whole traversal.

use innet_ofswitch::fields::{Field, Flow};
use rand::Rng;

/// The seven fields partitioning looks at, in bit order.
pub const PARTITION_FIELDS: [Field; 7] = [Field::DlSrc, Field::DlDst, Field::NwSrc, Field::NwDst, Field::NwProto, Field::TpSrc, Field::TpDst];

/// Bit set over [`PARTITION_FIELDS`] of the fields `wildcards` examines.
pub fn field_set(wildcards: &Flow) -> u8 {
    PARTITION_FIELDS.iter().enumerate().fold(0, |s, (i, &f)| if wildcards.get(f) != 0 { s | 1 << i } else { s })
}

/// Lookups `start..=end` placed on Gigaflow table `table`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: usize,
    pub end: usize,
    pub table: usize,
}

impl Segment {
    pub fn len(&self) -> usize {
        self.end - self.start + 1
    }
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// How traversals are split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Disjoint partitioning (the paper's DP).
    Disjoint,
    /// The artifact's DP as its code scores it (`maximize_optimality_dp`): a coupled segment
    /// scores 10 × (length − 1), ties keep the earliest cut, a sub-problem scoring 0 maps
    /// nothing (a prefix can stay unmapped) and a traversal scoring 0 becomes one whole entry in
    /// the first available table.
    DisjointArtifact,
    /// Random cut points and a random number of segments (RND).
    Random,
    /// One segment per lookup (1-1); the tail is merged when lookups outnumber tables.
    OneToOne,
}

impl Scheme {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "dp" | "disjoint" => Ok(Scheme::Disjoint),
            "dp-artifact" => Ok(Scheme::DisjointArtifact),
            "rnd" | "random" => Ok(Scheme::Random),
            "1-1" | "one-to-one" => Ok(Scheme::OneToOne),
            _ => Err(format!("partitioning scheme `{s}`: expected `dp`, `dp-artifact`, `rnd` or `1-1`")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Disjoint => "dp",
            Scheme::DisjointArtifact => "dp-artifact",
            Scheme::Random => "rnd",
            Scheme::OneToOne => "1-1",
        }
    }
}

/// Whether lookups with field sets `sets` form one coupled segment (artifact `get_coupling`).
pub fn coupled(sets: &[u8]) -> bool {
    let Some((&first, rest)) = sets.split_first() else { return true };
    let mut u = first;
    for &b in rest {
        if u == 0 || b == 0 || u & b != 0 {
            u |= b;
        } else {
            return false;
        }
    }
    true
}

/// Score of a partition given by its segments' lengths: (Σ length of coupled segments,
/// −segments), compared lexicographically.
pub fn score(sets: &[u8], lens: &[usize]) -> (usize, i64) {
    let mut s = 0;
    let mut at = 0;
    for &l in lens {
        if coupled(&sets[at..at + l]) {
            s += l;
        }
        at += l;
    }
    (s, -(lens.len() as i64))
}

/// Reusable DP tables (no allocation per call once warm).
#[derive(Default)]
pub struct Partitioner {
    best: Vec<(usize, i64)>,
    choice: Vec<usize>,
    reach: Vec<usize>,
    /// DP cells evaluated by the last call (its cost, for the NIC model's breakdown).
    pub last_cells: usize,
}

const NONE: (usize, i64) = (0, i64::MIN);

impl Partitioner {
    /// Disjoint partitioning of lookups with field sets `sets` onto the tables `available`
    /// (increasing Gigaflow table indices). Segments take the last tables available, as the
    /// artifact's DP does (a fully coupled traversal lands in the last table). Empty when no
    /// table is available or the traversal is empty.
    pub fn disjoint(&mut self, sets: &[u8], available: &[usize]) -> Vec<Segment> {
        let n = sets.len();
        let m = available.len().min(n);
        self.last_cells = 0;
        if n == 0 || m == 0 {
            return Vec::new();
        }
        // best[j][e] (flattened): best score of lookups 0..e (exclusive end e) in exactly j segments.
        let w = n + 1;
        self.best.clear();
        self.best.resize((m + 1) * w, NONE);
        self.choice.clear();
        self.choice.resize((m + 1) * w, 0);
        self.best[0] = (0, 0);
        // reach[s]: the largest exclusive end e such that s..e is coupled (coupling only breaks
        // as a segment grows, never heals).
        self.reach.clear();
        for st in 0..n {
            let mut u = sets[st];
            let mut e = st + 1;
            while e < n {
                let b = sets[e];
                if u == 0 || b == 0 || u & b != 0 {
                    u |= b;
                    e += 1;
                } else {
                    break;
                }
            }
            self.reach.push(e);
        }
        for e in 1..=n {
            for j in 1..=m.min(e) {
                let mut best = NONE;
                let mut arg = 0;
                for s in (j - 1)..e {
                    self.last_cells += 1;
                    let prev = self.best[(j - 1) * w + s];
                    if prev == NONE {
                        continue;
                    }
                    let l = e - s;
                    let seg = if e <= self.reach[s] { l } else { 0 };
                    let cand = (prev.0 + seg, prev.1 - 1);
                    if cand > best {
                        best = cand;
                        arg = s;
                    }
                }
                self.best[j * w + e] = best;
                self.choice[j * w + e] = arg;
            }
        }
        let (mut j, mut best) = (1, NONE);
        for jj in 1..=m {
            if self.best[jj * w + n] > best {
                best = self.best[jj * w + n];
                j = jj;
            }
        }
        let mut segs = Vec::with_capacity(j);
        let mut e = n;
        let tables = &available[available.len() - j..];
        for k in (0..j).rev() {
            let s = self.choice[(k + 1) * w + e];
            segs.push(Segment { start: s, end: e - 1, table: tables[k] });
            e = s;
        }
        segs.reverse();
        segs
    }
}

/// The artifact's coupling score of lookups `s..=e`: 10 per lookup joined to a chain-coupled
/// segment, 0 for a single lookup, an empty range or a segment crossing a boundary.
fn artifact_coupling(sets: &[u8], s: usize, e: usize) -> u32 {
    if s >= e || e >= sets.len() || !coupled(&sets[s..=e]) {
        0
    } else {
        10 * (e - s) as u32
    }
}

/// The artifact's DP (see [`Scheme::DisjointArtifact`]): OPT(e, g) maps lookups 0..=e onto
/// available tables 0..=g; for g > 0 it tries every cut t in −1..=e, the candidate being
/// OPT(t, g − 1) plus the coupling of t+1..=e placed on table g, and keeps the first candidate
/// scoring strictly more than 0 and every earlier one. Segments are in traversal order.
pub fn disjoint_artifact(sets: &[u8], available: &[usize]) -> Vec<Segment> {
    let (n, m) = (sets.len(), available.len());
    if n == 0 || m == 0 {
        return Vec::new();
    }
    // opt[g][e + 1]: (score, segments as (start, end, table index)).
    let mut opt: Vec<Vec<(u32, Vec<(usize, usize, usize)>)>> = vec![vec![(0, Vec::new()); n + 1]; m];
    for e in 0..n {
        opt[0][e + 1] = (artifact_coupling(sets, 0, e), vec![(0, e, 0)]);
    }
    for g in 1..m {
        for e in 0..n {
            let mut best: (u32, Vec<(usize, usize, usize)>) = (0, Vec::new());
            for t in -1..=(e as i64) {
                let sub = &opt[g - 1][(t + 1) as usize];
                let start = (t + 1) as usize;
                let cand = sub.0 + artifact_coupling(sets, start, e);
                if cand > best.0 {
                    let mut segs = sub.1.clone();
                    if start <= e {
                        segs.push((start, e, g));
                    }
                    best = (cand, segs);
                }
            }
            opt[g][e + 1] = best;
        }
    }
    let (score, segs) = &opt[m - 1][n];
    if *score == 0 {
        return vec![Segment { start: 0, end: n - 1, table: available[0] }];
    }
    segs.iter().map(|&(start, end, g)| Segment { start, end, table: available[g] }).collect()
}

/// Random partitioning: a uniformly drawn number of segments (1..=min(n, tables)), random cut
/// points, placed on a random increasing choice of the available tables.
pub fn random<R: Rng>(n: usize, available: &[usize], rng: &mut R) -> Vec<Segment> {
    let m = available.len().min(n);
    if m == 0 {
        return Vec::new();
    }
    let j = rng.gen_range(1..=m);
    let mut cuts = rand::seq::index::sample(rng, n - 1, j - 1).into_vec();
    cuts.iter_mut().for_each(|c| *c += 1);
    cuts.sort_unstable();
    let mut tables = rand::seq::index::sample(rng, available.len(), j).into_vec();
    tables.sort_unstable();
    let mut segs = Vec::with_capacity(j);
    let mut s = 0;
    for (k, &t) in tables.iter().enumerate() {
        let e = if k + 1 < j { cuts[k] } else { n };
        segs.push(Segment { start: s, end: e - 1, table: available[t] });
        s = e;
    }
    segs
}

/// 1-1 mapping: lookup i on the i-th available table; when the traversal is longer than the
/// tables available, the last table takes the rest.
pub fn one_to_one(n: usize, available: &[usize]) -> Vec<Segment> {
    let m = available.len().min(n);
    (0..m).map(|k| Segment { start: k, end: if k + 1 == m { n - 1 } else { k }, table: available[k] }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const ETH: u8 = 0b0000011;
    const IP: u8 = 0b0001100;
    const DTCP: u8 = 0b1000000;
    const STCP: u8 = 0b0100000;

    fn lens(segs: &[Segment]) -> Vec<usize> {
        segs.iter().map(|s| s.len()).collect()
    }

    /// All partitions into at most `m` segments, by brute force.
    fn brute(sets: &[u8], m: usize) -> (usize, i64) {
        let n = sets.len();
        let mut best = NONE;
        for mask in 0u32..(1 << (n - 1)) {
            if mask.count_ones() as usize + 1 > m {
                continue;
            }
            let mut ls = Vec::new();
            let mut l = 1;
            for i in 0..n - 1 {
                if mask >> i & 1 == 1 {
                    ls.push(l);
                    l = 1;
                } else {
                    l += 1;
                }
            }
            ls.push(l);
            best = best.max(score(sets, &ls));
        }
        best
    }

    #[test]
    fn papers_running_example() {
        // Fig. 7: ETH, ETH+IP/24, ETH+IP/24, dTCP, dTCP, sTCP -> {ETH,IP} | {dTCP} | {sTCP}, score 6.
        let sets = [ETH, ETH | IP, ETH | IP, DTCP, DTCP, STCP];
        let mut p = Partitioner::default();
        let segs = p.disjoint(&sets, &[0, 1, 2, 3]);
        assert_eq!(lens(&segs), vec![3, 2, 1]);
        assert_eq!(score(&sets, &lens(&segs)), (6, -3));
        // Last tables first, in order.
        assert_eq!(segs.iter().map(|s| s.table).collect::<Vec<_>>(), vec![1, 2, 3]);
        // With two tables only one boundary can be kept: {ETH,IP} | rest (the rest is not coupled).
        let two = p.disjoint(&sets, &[0, 2]);
        assert_eq!(lens(&two), vec![3, 3]);
        assert_eq!(score(&sets, &lens(&two)), (3, -2));
    }

    #[test]
    fn the_artifacts_dp_scores_joins_and_can_leave_a_prefix_unmapped() {
        // Fig. 7's traversal: {ETH,IP} | {dTCP} | {sTCP} scores 10·2 + 10·1 + 0, each segment
        // on a later table than the one before.
        let sets = [ETH, ETH | IP, ETH | IP, DTCP, DTCP, STCP];
        let segs = disjoint_artifact(&sets, &[0, 1, 2, 3]);
        assert_eq!(lens(&segs), vec![3, 2, 1], "{segs:?}");
        assert!(segs.windows(2).all(|w| w[0].end + 1 == w[1].start && w[0].table < w[1].table));
        // Fully coupled: one entry in the last table.
        assert_eq!(disjoint_artifact(&[ETH, ETH | IP, IP], &[0, 1, 2, 3]), vec![Segment { start: 0, end: 2, table: 3 }]);
        // Nothing coupled (PSC-like L2 | route | ACL): one whole entry in the first table.
        assert_eq!(disjoint_artifact(&[ETH, IP, DTCP], &[1, 2, 3]), vec![Segment { start: 0, end: 2, table: 1 }]);
        // Only the tail couples: the unscored prefix is left unmapped.
        assert_eq!(disjoint_artifact(&[ETH, IP, DTCP, DTCP], &[0, 1, 2, 3]), vec![Segment { start: 2, end: 3, table: 3 }]);
    }

    #[test]
    fn fully_coupled_traversal_is_one_entry_in_the_last_table() {
        let sets = [ETH, ETH | IP, IP | DTCP, DTCP];
        let segs = Partitioner::default().disjoint(&sets, &[0, 1, 2, 3]);
        assert_eq!(segs, vec![Segment { start: 0, end: 3, table: 3 }]);
    }

    #[test]
    fn empty_field_sets_couple_with_anything() {
        assert!(coupled(&[0, ETH, 0, ETH | IP]));
        assert!(!coupled(&[ETH, DTCP]));
        assert!(!coupled(&[0, ETH, DTCP]));
        let segs = Partitioner::default().disjoint(&[0, ETH, DTCP, 0], &[0, 1]);
        assert_eq!(lens(&segs), vec![2, 2]);
    }

    #[test]
    fn dp_matches_brute_force() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut p = Partitioner::default();
        for _ in 0..2000 {
            let n = rng.gen_range(1..=9);
            let sets: Vec<u8> = (0..n).map(|_| if rng.gen_bool(0.2) { 0 } else { 1 << rng.gen_range(0..7) | if rng.gen_bool(0.3) { 1 << rng.gen_range(0..7) } else { 0 } }).collect();
            let k = rng.gen_range(1..=5);
            let avail: Vec<usize> = (0..k).collect();
            let segs = p.disjoint(&sets, &avail);
            // Covers the traversal in order on increasing tables.
            assert_eq!(segs[0].start, 0);
            assert_eq!(segs.last().unwrap().end, n - 1);
            assert!(segs.windows(2).all(|w| w[0].end + 1 == w[1].start && w[0].table < w[1].table));
            assert_eq!(score(&sets, &lens(&segs)), brute(&sets, k), "{sets:?} k={k}");
        }
    }

    #[test]
    fn alternatives_cover_the_traversal() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for n in 1..12 {
            for avail in [vec![0], vec![1, 3], vec![0, 1, 2, 3]] {
                for segs in [random(n, &avail, &mut rng), one_to_one(n, &avail)] {
                    assert_eq!(segs[0].start, 0);
                    assert_eq!(segs.last().unwrap().end, n - 1);
                    assert!(segs.len() <= avail.len());
                    assert!(segs.windows(2).all(|w| w[0].end + 1 == w[1].start && w[0].table < w[1].table));
                }
            }
        }
        assert_eq!(lens(&one_to_one(3, &[0, 1, 2, 3])), vec![1, 1, 1]);
        assert_eq!(lens(&one_to_one(6, &[0, 1, 2, 3])), vec![1, 1, 1, 3]);
        assert_eq!(field_set(&Flow::default()), 0);
        assert_eq!(Scheme::parse("1-1"), Ok(Scheme::OneToOne));
        assert!(Scheme::parse("x").is_err());
    }
}
