//! The Gigaflow cache: K Longest-Traversal-Match tables in front of the slow path (paper §4.1,
//! artifact §2.4–2.7). An entry matches exactly on a table tag and ternary on the fields its
//! sub-traversal examined; its priority is the sub-traversal's length (the longest match wins
//! per table); its actions are the sub-traversal's rewrites and outputs plus the next tag. A
//! packet walks the K tables once, in order, carrying its tag and rewritten headers; it is a hit
//! when some entry ends its traversal.
//!
//! Tags: a tag names where a sub-traversal starts — the vSwitch table and the actions still
//! pending from enclosing `resubmit`s (see [`TableVisit::continuation`]); for pipelines whose
//! resubmits are tail calls that is the table id, as in the paper. Packets enter with tag 0
//! (table 0, nothing pending) and zero registers/metadata, which entries match and set like
//! headers (the NIC carries them as P4 metadata).

use crate::actions::{apply_ops, artifact_commit_ops, window_ops, CachedOp};
use crate::mappings::UniqueMappings;
use innet_ofswitch::fields::Flow;
use crate::megaflow::{CacheStats, Revalidation};
use crate::partition::{self, field_set, Partitioner, Scheme, Segment};
use innet_ofswitch::slowpath::{Frame, LookupWildcards, Pipeline, TableVisit, Trace};
use innet_ofswitch::tss::{EntryId, FastMap, TssTable};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::time::Instant;

/// Default number of LTM tables ("GF 4x8K").
pub const DEFAULT_LTM_TABLES: usize = 4;
/// Default entries per LTM table (the artifact's 8000).
pub const DEFAULT_LTM_ENTRIES: usize = 8_000;
/// The artifact's per-table mask limit (`gigaflow-max-masks`).
pub const DEFAULT_MAX_MASKS: usize = 64;
/// Most LTM tables a lookup can walk.
pub const MAX_LTM_TABLES: usize = 32;
/// The VLAN TCI's VID and CFI bits.
const VLAN_VID_CFI: u64 = 0x1fff;
/// The tag of a finished traversal (the artifact's 255/254 pseudo tables).
pub const TAG_DONE: u16 = u16::MAX;
/// The tag a packet enters the NIC with.
pub const TAG_START: u16 = 0;

/// Gigaflow cache parameters.
#[derive(Clone, Copy, Debug)]
pub struct GigaflowConfig {
    pub tables: usize,
    pub entries_per_table: usize,
    /// A mapping that would give a table more distinct masks than this is rejected whole.
    pub max_masks: usize,
    pub scheme: Scheme,
    /// Remove entries unused this long ([`GigaflowCache::expire`]); `None`: never (artifact).
    pub idle_timeout_ns: Option<u64>,
    /// Seed of the random partitioner.
    pub seed: u64,
    /// After installing a mapping that the packet still cannot complete (its path through the
    /// tables is captured by longer entries of other traversals), also install the whole
    /// traversal as one entry in the first table with room, so the flow is not upcalled forever.
    pub repair: bool,
    /// Continue from the entries that already capture the packet: before partitioning, walk
    /// the tables as a lookup would, and partition only the rest of the traversal onto the
    /// tables after the last entry matched (the artifact partitions the whole traversal, so a
    /// longer entry of another traversal that captures the packet in an early table sends it to
    /// a tag the new mapping does not continue).
    pub align: bool,
    /// Keep Table 2's bookkeeping ([`GigaflowCache::mappings`], `mappings_by_fields`) on every
    /// install. It is measurement, not the mechanism, and costs about as many instructions as
    /// the rest of rule generation; the CPU-cost experiment (Fig. 13) and the benches turn it off
    /// so their rule-generation time is Gigaflow's own. Off, both counts stay empty.
    pub count_coverage: bool,
    /// The artifact's recycling (gvs `dp_netdev_flow_add_gigaflow`): a new entry is discarded as
    /// recycled when its masked key, looked up among the entries of its table, tag and priority,
    /// matches any of them (whatever their mask). Off: only an identical entry (same mask and key)
    /// is recycled, so an entry another mask's entry would shadow is still installed.
    pub recycle_by_lookup: bool,
    /// A traversal that ends without any `output` action (a drop) is a hit when its last entry
    /// matches. Off (the artifact, mapper.c `compose_one_gigaflow`): its last entry's actions are
    /// composed towards the never-recorded flow after the traversal (all zeros, not IPv4), so they
    /// set no DROP tag: the packet keeps the entry's tag, completes nothing and falls to the
    /// datapath's Megaflow cache (counted neither as a Gigaflow hit nor as an upcall).
    pub drops_complete: bool,
    /// Entries match the registers and metadata their sub-traversal examined (the NIC carries
    /// them between LTM tables). Off (the artifact, ofproto-dpif-xlate.c
    /// `flow_wildcards_clear_non_packet_fields` on every per-table wildcard): entries never match
    /// them, so a segment that reads a register written by an earlier segment (PSC's ACL reads the
    /// output port reg2 from dmac) is shared by packets the register tells apart.
    pub match_metadata: bool,
    /// An entry's key holds the packet's header fields as they *enter* its sub-traversal. On
    /// (the artifact): as they *leave* it — mapper.c `compose_one_gigaflow` composes the entry's
    /// actions with `commit_odp_actions(next flow, key flow, ...)`, which overwrites the key
    /// flow with the rewritten values of every header group it commits (the IPv4 group always:
    /// the tag is its ToS), after which the key is installed. A sub-traversal that both examines
    /// and rewrites a field (a routing segment that matched the router MAC and rewrites dl_dst)
    /// then matches only packets already carrying the rewritten value: it never hits. A drop's
    /// last entry gets zero MACs (committed towards the all-zero flow).
    pub key_after_writes: bool,
    /// Which wildcards steer the slow path's lookups for this cache's upcalls: the traversal's
    /// (OVS) or a fresh one per table (the artifact: [`innet_ofswitch::LookupWildcards`]).
    pub lookup_wildcards: LookupWildcards,
    /// When the Megaflow mask leaves the VLAN TCI out (always for an untagged packet: OVS drops
    /// the mask of a header the packet lacks), every entry matches the VLAN VID and CFI, as gvs's
    /// upcall sets on every per-table wildcard (dpif-netdev.c `handle_packet_upcall`: a datapath
    /// key cannot wildcard the presence of a VLAN tag). Through the per-table mask limit it
    /// changes which mappings are accepted. Off: an entry matches the VLAN TCI only where its
    /// sub-traversal read it.
    pub vlan_always_matched: bool,
    /// An entry's rewrites as the artifact composes them ([`artifact_commit_ops`]): a header
    /// field that differs between the flows entering and leaving the sub-traversal is written
    /// only in the bits the entry matches, and a traversal's outputs become one output to its
    /// last port on its last entry. Off: every written bit is set absolutely and every output
    /// is emitted where the slow path emitted it ([`window_ops`]).
    pub masked_commit: bool,
}

impl Default for GigaflowConfig {
    fn default() -> Self {
        // No mask limit by default: with ClassBench rules the artifact's 64 rejects most installs
        // of both caches (docs/gigaflow.md); set `max_masks: DEFAULT_MAX_MASKS` to restore it.
        GigaflowConfig { tables: DEFAULT_LTM_TABLES, entries_per_table: DEFAULT_LTM_ENTRIES, max_masks: usize::MAX, scheme: Scheme::Disjoint, idle_timeout_ns: None, seed: 1, repair: true, align: true, count_coverage: true, recycle_by_lookup: false, drops_complete: true, match_metadata: true, key_after_writes: false, lookup_wildcards: LookupWildcards::Traversal, masked_commit: false, vlan_always_matched: false }
    }
}

/// One cached sub-traversal.
pub struct LtmEntry {
    pub ops: Vec<CachedOp>,
    pub next_tag: u16,
    /// Installs that produced this entry (1 + times it was recycled).
    pub refs: u32,
    /// Flow at the start of the sub-traversal (revalidation re-runs it).
    pub start_flow: Flow,
    pub start_depth: u8,
    pub lookups: u8,
}

/// Interned tags: (vSwitch table, pending frames) → tag.
#[derive(Default)]
pub struct Tags {
    map: FastMap<(u8, Vec<Frame>), u16>,
    keys: Vec<(u8, Vec<Frame>)>,
}

impl Tags {
    /// The tag of a lookup in `table` with `frames` pending (`None` when tags run out).
    pub fn tag(&mut self, table: u8, frames: &[Frame]) -> Option<u16> {
        if frames.is_empty() {
            // Fast path without allocating the key.
            if let Some(&t) = self.map.get(&(table, Vec::new())) {
                return Some(t);
            }
        } else if let Some(&t) = self.map.get(&(table, frames.to_vec())) {
            return Some(t);
        }
        if self.keys.len() >= TAG_DONE as usize {
            return None;
        }
        let t = self.keys.len() as u16;
        self.map.insert((table, frames.to_vec()), t);
        self.keys.push((table, frames.to_vec()));
        Some(t)
    }
    pub fn key(&self, tag: u16) -> &(u8, Vec<Frame>) {
        &self.keys[tag as usize]
    }
    fn of_visit(&mut self, v: &TableVisit) -> Option<u16> {
        self.tag(v.table, &v.continuation)
    }
}

/// The mask of an entry for the lookups `visits`: the OR of their window wildcards.
pub fn sub_traversal_mask(visits: &[TableVisit]) -> Flow {
    visits.iter().fold(Flow::default(), |m, v| m.union(&v.window_wildcards))
}

/// Counters beyond hits and misses.
#[derive(Clone, Debug, Default)]
pub struct GigaflowStats {
    pub cache: CacheStats,
    /// Entries added to tables.
    pub entries_inserted: u64,
    /// Sub-traversals that found an identical entry already installed.
    pub entries_recycled: u64,
    /// Upcalls whose mapping was rejected for the per-table mask limit.
    pub rejected_masks: u64,
    /// Upcalls with no table available (all full).
    pub rejected_full: u64,
    /// Traversals that cannot be cached (resubmit depth limit, tag space exhausted).
    pub uncacheable: u64,
    /// Whole-traversal repair entries installed.
    pub repairs: u64,
    /// Installs that continued from entries already capturing the packet (`align`).
    pub aligned: u64,
    pub expired_idle: u64,
    /// Hits per LTM table (an entry used on a hit's path).
    pub table_hits: Vec<u64>,
    /// Entries added per LTM table.
    pub table_inserted: Vec<u64>,
    /// Sub-traversals per LTM table that found their entry already installed (recycled).
    pub table_recycled: Vec<u64>,
}

impl GigaflowStats {
    /// How often an installed sub-traversal reoccurred (Fig. 11): upcalls that produced an
    /// entry per entry installed, (inserted + recycled) / inserted; per LTM table, then overall.
    pub fn reoccurrence(&self) -> (Vec<f64>, f64) {
        let ratio = |ins: u64, rec: u64| if ins == 0 { 0.0 } else { (ins + rec) as f64 / ins as f64 };
        let per_table = self.table_inserted.iter().zip(&self.table_recycled).map(|(&i, &r)| ratio(i, r)).collect();
        (per_table, ratio(self.entries_inserted, self.entries_recycled))
    }
}

/// The time one upcall spent in each Gigaflow step (Fig. 13), in ns of this machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpcallCost {
    pub partition_ns: u64,
    pub rulegen_ns: u64,
    /// DP cells evaluated.
    pub dp_cells: usize,
    pub entries_built: usize,
}

/// A candidate entry before installation.
struct NewEntry {
    table: usize,
    tag: u16,
    mask: Flow,
    priority: u16,
    entry: LtmEntry,
}

/// K LTM tables.
pub struct GigaflowCache {
    pub cfg: GigaflowConfig,
    pub tables: Vec<TssTable<LtmEntry>>,
    pub tags: Tags,
    pub stats: GigaflowStats,
    /// Installs by unique mapping, for Table 2's rule-space estimate ([`crate::coverage`]).
    pub mappings: UniqueMappings,
    /// The same installs with mappings keyed by field sets ([`crate::mappings::fields_only`]).
    pub mappings_by_fields: UniqueMappings,
    partitioner: Partitioner,
    rng: ChaCha8Rng,
    touched: Vec<(usize, EntryId)>,
    sets: Vec<u8>,
    scratch_outputs: Vec<(u32, Flow)>,
}

impl GigaflowCache {
    pub fn new(cfg: GigaflowConfig) -> Result<Self, String> {
        if cfg.tables == 0 || cfg.tables > MAX_LTM_TABLES {
            return Err(format!("gigaflow tables = {}: expected 1..={MAX_LTM_TABLES}", cfg.tables));
        }
        if cfg.entries_per_table == 0 {
            return Err("gigaflow entries per table = 0: expected at least 1".into());
        }
        let mut tags = Tags::default();
        let start = tags.tag(0, &[]);
        debug_assert_eq!(start, Some(TAG_START));
        Ok(GigaflowCache {
            tables: (0..cfg.tables).map(|_| TssTable::new(cfg.entries_per_table)).collect(),
            stats: GigaflowStats { table_hits: vec![0; cfg.tables], table_inserted: vec![0; cfg.tables], table_recycled: vec![0; cfg.tables], ..Default::default() },
            tags,
            mappings: UniqueMappings::default(),
            mappings_by_fields: UniqueMappings::default(),
            partitioner: Partitioner::default(),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            touched: Vec::with_capacity(cfg.tables),
            sets: Vec::new(),
            scratch_outputs: Vec::new(),
            cfg,
        })
    }

    /// Entries in all tables.
    pub fn len(&self) -> usize {
        self.tables.iter().map(|t| t.len()).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Walks the K tables with `packet` (tag 0). On a hit `flow_out` holds the final headers
    /// and `outputs` the emitted packets (cleared first), and the entries used are refreshed.
    /// Counts the packet.
    #[inline]
    pub fn lookup(&mut self, packet: &Flow, now_ns: u64, flow_out: &mut Flow, outputs: &mut Vec<(u32, Flow)>) -> bool {
        self.stats.cache.packets += 1;
        let hit = self.walk(packet, flow_out, outputs);
        if hit {
            self.stats.cache.hits += 1;
            for i in 0..self.touched.len() {
                let (k, id) = self.touched[i];
                self.tables[k].touch(id, now_ns);
                self.stats.table_hits[k] += 1;
            }
        } else {
            self.stats.cache.misses += 1;
            outputs.clear();
        }
        hit
    }

    /// The lookup without counting or refreshing anything; `touched` lists the entries used.
    fn walk(&mut self, packet: &Flow, flow_out: &mut Flow, outputs: &mut Vec<(u32, Flow)>) -> bool {
        outputs.clear();
        self.touched.clear();
        *flow_out = *packet;
        let Some(mut tag) = self.start_tag(packet) else { return false };
        for k in 0..self.tables.len() {
            if let Some(id) = self.tables[k].lookup(tag, flow_out, None) {
                let e = &self.tables[k].get(id).payload;
                apply_ops(&e.ops, flow_out, outputs);
                tag = e.next_tag;
                self.touched.push((k, id));
                if tag == TAG_DONE {
                    return true;
                }
            }
        }
        false
    }

    /// The tag a packet's pass starts with: [`TAG_START`], or for a recirculated pass the tag
    /// of the table it resumes in (its entries also match its recirc_id, which every lookup
    /// examines, so passes never share entries). `None` when tags run out.
    fn start_tag(&mut self, packet: &Flow) -> Option<u16> {
        match innet_ofswitch::slowpath::resume_table(packet) {
            0 if packet.get(innet_ofswitch::fields::Field::RecircId) == 0 => Some(TAG_START),
            t => self.tags.tag(t, &[]),
        }
    }

    /// Whether `packet` would hit now (no counters touched).
    pub fn would_hit(&mut self, packet: &Flow) -> bool {
        let (mut f, mut o) = (Flow::default(), Vec::new());
        self.walk(packet, &mut f, &mut o)
    }

    /// Tables that can take an entry.
    fn available(&self) -> Vec<usize> {
        (0..self.tables.len()).filter(|&k| !self.tables[k].is_full()).collect()
    }

    /// Splits `trace` per the configured scheme onto the available tables.
    pub fn partition(&mut self, trace: &Trace, available: &[usize]) -> Vec<Segment> {
        self.partition_from(trace, 0, available)
    }

    /// Splits lookups `from..` of `trace` onto the available tables.
    fn partition_from(&mut self, trace: &Trace, from: usize, available: &[usize]) -> Vec<Segment> {
        let visits = &trace.visits[from..];
        let mut segs = match self.cfg.scheme {
            Scheme::Disjoint => {
                self.sets.clear();
                self.sets.extend(visits.iter().map(|v| field_set(&v.window_wildcards)));
                let sets = std::mem::take(&mut self.sets);
                let segs = self.partitioner.disjoint(&sets, available);
                self.sets = sets;
                segs
            }
            Scheme::DisjointArtifact => {
                let sets: Vec<u8> = visits.iter().map(|v| field_set(&v.window_wildcards)).collect();
                partition::disjoint_artifact(&sets, available)
            }
            Scheme::Random => partition::random(visits.len(), available, &mut self.rng),
            Scheme::OneToOne => partition::one_to_one(visits.len(), available),
        };
        for s in &mut segs {
            s.start += from;
            s.end += from;
        }
        segs
    }

    /// How far a lookup of the traversal's packet gets through the tables now: the lookups the
    /// matched entries cover and the first table after the last one matched. A matched entry's
    /// mask holds every bit its sub-traversal examined, so the packet's own traversal takes the
    /// same lookups there.
    fn captured_prefix(&mut self, trace: &Trace) -> (usize, usize) {
        let mut flow = trace.initial_flow;
        let Some(start) = self.start_tag(&flow) else { return (0, 0) };
        let (mut tag, mut done, mut next_table) = (start, 0usize, 0usize);
        let mut outputs = std::mem::take(&mut self.scratch_outputs);
        for k in 0..self.tables.len() {
            if let Some(id) = self.tables[k].lookup(tag, &flow, None) {
                let e = &self.tables[k].get(id).payload;
                if e.lookups == u8::MAX || e.next_tag == TAG_DONE {
                    break; // a capped length is not exact; a finished walk would have hit
                }
                apply_ops(&e.ops, &mut flow, &mut outputs);
                done += e.lookups as usize;
                tag = e.next_tag;
                next_table = k + 1;
            }
        }
        outputs.clear();
        self.scratch_outputs = outputs;
        if done >= trace.visits.len() || self.tags.of_visit(&trace.visits[done]) != Some(tag) {
            return (0, 0); // not the packet's own path: partition the whole traversal
        }
        (done, next_table)
    }

    /// Builds the LTM entry of lookups `seg.start..=seg.end` of `trace` for table `seg.table`.
    fn build(&mut self, trace: &Trace, seg: &Segment) -> Option<NewEntry> {
        let v = &trace.visits;
        let mut mask = sub_traversal_mask(&v[seg.start..=seg.end]);
        if self.cfg.vlan_always_matched && trace.megaflow_mask.get(innet_ofswitch::fields::Field::VlanTci) == 0 {
            mask.set(innet_ofswitch::fields::Field::VlanTci, VLAN_VID_CFI);
        }
        if !self.cfg.match_metadata {
            mask.set(innet_ofswitch::fields::Field::Metadata, 0);
            for r in 0..16 {
                mask.set(innet_ofswitch::fields::Field::Reg(r), 0);
            }
        }
        let tag = self.tags.of_visit(&v[seg.start])?;
        let next_tag = if seg.end + 1 < v.len() {
            self.tags.of_visit(&v[seg.end + 1])?
        } else if !self.cfg.drops_complete && trace.output_actions == 0 {
            tag
        } else {
            TAG_DONE
        };
        let lookups = seg.len().min(u8::MAX as usize) as u8;
        let mut start = v[seg.start].flow;
        if self.cfg.key_after_writes {
            use innet_ofswitch::fields::Field;
            if seg.end + 1 == v.len() && trace.output_actions == 0 {
                // A drop's "next flow" is the all-zero one (see `drops_complete`): only the
                // Ethernet group is committed (the others need an L3 protocol), zeroing the MACs.
                start.set(Field::DlSrc, 0);
                start.set(Field::DlDst, 0);
            } else {
                let end = if seg.end + 1 < v.len() { &v[seg.end + 1].flow } else { &trace.final_flow };
                for f in [Field::DlSrc, Field::DlDst, Field::NwSrc, Field::NwDst, Field::NwProto, Field::NwTtl, Field::TpSrc, Field::TpDst] {
                    start.set(f, end.get(f));
                }
            }
        }
        let ops = if self.cfg.masked_commit {
            let end = if seg.end + 1 < v.len() { &v[seg.end + 1].flow } else { &trace.final_flow };
            let output = (seg.end + 1 == v.len()).then(|| trace.outputs.last().map(|o| o.port)).flatten();
            artifact_commit_ops(&v[seg.start].flow, end, &mask, output)
        } else {
            window_ops(trace, seg.start, seg.end)
        };
        let entry = LtmEntry { ops, next_tag, refs: 1, start_flow: start.masked(&mask), start_depth: v[seg.start].depth, lookups };
        Some(NewEntry { table: seg.table, tag, mask, priority: seg.len() as u16, entry })
    }

    /// Handles an upcall's traversal: partition, build the entries, check the mask limits and
    /// install (recycling identical entries). Returns the time spent in partitioning and rule
    /// generation.
    pub fn install(&mut self, trace: &Trace, now_ns: u64) -> UpcallCost {
        let mut cost = UpcallCost::default();
        if trace.depth_limited || trace.visits.is_empty() {
            self.stats.uncacheable += 1;
            return cost;
        }
        let t0 = Instant::now();
        let (mut from, first_table) = if self.cfg.align { self.captured_prefix(trace) } else { (0, 0) };
        let mut available: Vec<usize> = self.available().into_iter().filter(|&k| k >= first_table).collect();
        if available.is_empty() && from > 0 {
            // No table left after the captured part: map the whole traversal as the artifact does.
            from = 0;
            available = self.available();
        }
        if available.is_empty() {
            self.stats.rejected_full += 1;
            return cost;
        }
        if from > 0 {
            self.stats.aligned += 1;
        }
        let segs = self.partition_from(trace, from, &available);
        cost.dp_cells = self.partitioner.last_cells;
        let t1 = Instant::now();
        cost.partition_ns = (t1 - t0).as_nanos() as u64;
        let mut built = Vec::with_capacity(segs.len());
        for s in &segs {
            match self.build(trace, s) {
                Some(e) => built.push(e),
                None => {
                    self.stats.uncacheable += 1;
                    return cost;
                }
            }
        }
        cost.entries_built = built.len();
        if !self.masks_fit(&built) {
            self.stats.rejected_masks += 1;
            cost.rulegen_ns = t1.elapsed().as_nanos() as u64;
            return cost;
        }
        self.put_mapping(built, now_ns);
        if self.cfg.repair && !self.would_hit(&trace.initial_flow) {
            let n = trace.visits.len();
            if let Some(&k) = self.available().first() {
                if let Some(e) = self.build(trace, &Segment { start: 0, end: n - 1, table: k }) {
                    if self.masks_fit(std::slice::from_ref(&e)) {
                        self.put_mapping(vec![e], now_ns);
                        self.stats.repairs += 1;
                    }
                }
            }
        }
        cost.rulegen_ns = t1.elapsed().as_nanos() as u64;
        cost
    }

    /// Whether adding `built` keeps every table within its mask limit (the artifact rejects
    /// the mapping when `masks + 1 >= max`).
    fn masks_fit(&self, built: &[NewEntry]) -> bool {
        let mut new_masks: Vec<(usize, Flow)> = Vec::new();
        for e in built {
            if !self.tables[e.table].has_mask(&e.mask) && !new_masks.contains(&(e.table, e.mask)) {
                new_masks.push((e.table, e.mask));
            }
        }
        (0..self.tables.len()).all(|k| {
            let add = new_masks.iter().filter(|(t, _)| *t == k).count();
            add == 0 || self.tables[k].n_masks() + add < self.cfg.max_masks
        })
    }

    /// Installs the entries of one mapping, counting the ones it adds under that mapping.
    fn put_mapping(&mut self, built: Vec<NewEntry>, now_ns: u64) {
        if !self.cfg.count_coverage {
            for e in built {
                self.put(e, now_ns);
            }
            return;
        }
        let parts: Vec<_> = built.iter().map(|e| (e.table, e.tag, e.entry.next_tag, e.mask)).collect();
        let coarse = parts.iter().map(|&(k, t, n, m)| (k, t, n, crate::mappings::fields_only(&m))).collect();
        let m = self.mappings.mapping(parts, self.tables.len());
        let mc = self.mappings_by_fields.mapping(coarse, self.tables.len());
        for e in built {
            let table = e.table;
            if self.put(e, now_ns) {
                self.mappings.added(m, table);
                self.mappings_by_fields.added(mc, table);
            }
        }
    }

    /// Installs one entry, or recycles the identical one; true when it was added.
    fn put(&mut self, e: NewEntry, now_ns: u64) -> bool {
        let t = &mut self.tables[e.table];
        let key = e.entry.start_flow;
        let same = if self.cfg.recycle_by_lookup { t.find_matching_at(e.tag, e.priority, &key) } else { t.find_exact(e.tag, &e.mask, e.priority, &key) };
        if let Some(id) = same {
            t.get_mut(id).payload.refs += 1;
            self.stats.entries_recycled += 1;
            self.stats.table_recycled[e.table] += 1;
            false
        } else if !t.is_full() {
            t.insert(e.tag, &e.mask, e.priority, &key, e.entry, now_ns);
            self.stats.entries_inserted += 1;
            self.stats.table_inserted[e.table] += 1;
            true
        } else {
            false
        }
    }

    /// Removes entries idle longer than the idle timeout; returns how many.
    pub fn expire(&mut self, now_ns: u64) -> usize {
        let Some(idle) = self.cfg.idle_timeout_ns else { return 0 };
        let n: usize = self.tables.iter_mut().map(|t| t.expire_idle(now_ns, idle)).sum();
        self.stats.expired_idle += n as u64;
        n
    }

    /// Revalidation after a pipeline change (paper §4.3.1): every entry's sub-traversal is
    /// re-run from its tag's table for its length; entries whose match, actions or next tag
    /// changed are removed.
    pub fn revalidate(&mut self, pipeline: &Pipeline) -> Revalidation {
        let t0 = Instant::now();
        let mut r = Revalidation::default();
        for k in 0..self.tables.len() {
            for id in self.tables[k].ids() {
                r.checked += 1;
                let slot = self.tables[k].get(id);
                let (table, frames) = self.tags.key(slot.tag).clone();
                let e = &slot.payload;
                let t = pipeline.trace_segment(&e.start_flow, table, &frames, e.start_depth, e.lookups as usize);
                r.lookups += t.visits.len() as u64;
                let still = t.visits.len() == e.lookups as usize && !t.depth_limited && {
                    let mask = sub_traversal_mask(&t.visits);
                    let (ops, next) = (window_ops(&t, 0, t.visits.len() - 1), t.next_lookup.clone());
                    let next_tag = match next {
                        None => Some(TAG_DONE),
                        Some((tb, fr, _)) => self.tags.tag(tb, &fr),
                    };
                    let slot = self.tables[k].get(id);
                    mask == *self.tables[k].mask_of(id) && ops == slot.payload.ops && next_tag == Some(slot.payload.next_tag)
                };
                if !still {
                    self.tables[k].remove(id);
                    r.removed += 1;
                }
            }
        }
        r.elapsed_ns = t0.elapsed().as_nanos() as u64;
        r
    }

    /// Rule-space coverage in Megaflow-equivalents: the number of distinct entry chains a
    /// packet can complete (tag 0 in some table, each next entry in a later table with the
    /// previous entry's next tag, the last one ending the traversal) — the cross product the
    /// LTM tables encode.
    pub fn rule_space(&self) -> f64 {
        // ways[tag] for tables k.. ; computed from the last table backwards.
        let mut ways: HashMap<u16, f64> = HashMap::new();
        for k in (0..self.tables.len()).rev() {
            let mut here: Vec<(u16, f64)> = Vec::new();
            for id in self.tables[k].ids() {
                let s = self.tables[k].get(id);
                let w = if s.payload.next_tag == TAG_DONE { 1.0 } else { ways.get(&s.payload.next_tag).copied().unwrap_or(0.0) };
                if w > 0.0 {
                    here.push((s.tag, w));
                }
            }
            for (tag, w) in here {
                *ways.entry(tag).or_insert(0.0) += w;
            }
        }
        ways.get(&TAG_START).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_ofswitch::fields::{Field, ETH_TYPE_IP, IPPROTO_TCP};

    const ROUTER: &str = include_str!("../../ofswitch/pipelines/l3_router.flows");

    fn pkt(src_port: u64, dst: u32, port: u64) -> Flow {
        let mut f = Flow::default();
        f.set(Field::InPort, src_port);
        f.set(Field::DlType, ETH_TYPE_IP);
        f.set(Field::NwProto, IPPROTO_TCP);
        f.set(Field::NwDst, dst as u64);
        f.set(Field::TpDst, port);
        f
    }

    fn run(c: &mut GigaflowCache, p: &Pipeline, f: &Flow) -> bool {
        let (mut out, mut outs) = (Flow::default(), Vec::new());
        if c.lookup(f, 0, &mut out, &mut outs) {
            let t = p.trace(f);
            assert_eq!(out, t.final_flow);
            assert_eq!(outs, t.outputs.iter().map(|o| (o.port, o.headers)).collect::<Vec<_>>());
            true
        } else {
            c.install(&p.trace(f), 0);
            false
        }
    }

    #[test]
    fn sub_traversals_combine_into_new_flows() {
        // Router: in_port admission | nw_dst routing (rewrites dl_dst) | tp_dst policy. Learn
        // two routes with port 80 and one route with port 443: the third route with port 80 is
        // then a hit without an upcall (a cross-product Megaflow never saw).
        let p = Pipeline::parse(ROUTER).unwrap();
        let mut c = GigaflowCache::new(GigaflowConfig::default()).unwrap();
        assert!(!run(&mut c, &p, &pkt(1, 0x0a01_0203, 80)));
        assert!(!run(&mut c, &p, &pkt(1, 0xac10_0001, 443)));
        assert!(run(&mut c, &p, &pkt(1, 0x0a01_0203, 80)));
        assert!(run(&mut c, &p, &pkt(1, 0xac10_0001, 80)), "cross product of cached sub-traversals");
        assert!(run(&mut c, &p, &pkt(1, 0x0a01_0203, 443)));
        assert!(c.rule_space() >= 4.0, "{}", c.rule_space());
        // Two upcalls, no sub-traversal shared between them yet: every entry occurred once.
        let (per_table, all) = c.stats.reoccurrence();
        assert_eq!((per_table.len(), all), (4, 1.0));
        assert!(!run(&mut c, &p, &pkt(1, 0x0a01_0210, 443)), "a new route");
        assert!(c.stats.reoccurrence().1 > 1.0, "its policy sub-traversal (port 443) was recycled: {:?}", c.stats);
        assert_eq!(c.stats.table_inserted.iter().sum::<u64>(), c.stats.entries_inserted);
        assert_eq!(c.stats.table_recycled.iter().sum::<u64>(), c.stats.entries_recycled);
        let s = &c.stats.cache;
        assert_eq!(s.hits + s.misses, s.packets);
    }

    #[test]
    fn artifact_drops_never_complete() {
        // gvs composes a drop traversal's last entry towards an all-zero flow, so it sets no
        // DROP tag: the dropped packet is upcalled once, then never hits (the datapath's own
        // Megaflow takes it there); ours completes it unless drops_complete is off.
        let p = Pipeline::parse("table=0,priority=10,ip,nw_dst=10.0.0.1,actions=drop\ntable=0,priority=0,actions=output:2\n").unwrap();
        for complete in [true, false] {
            let cfg = GigaflowConfig { drops_complete: complete, scheme: Scheme::DisjointArtifact, ..GigaflowConfig::default() };
            let mut c = GigaflowCache::new(cfg).unwrap();
            let (drop, fwd) = (pkt(1, 0x0a00_0001, 80), pkt(1, 0x0a00_0002, 80));
            assert!(!run(&mut c, &p, &drop) && !run(&mut c, &p, &fwd));
            assert_eq!(run(&mut c, &p, &drop), complete, "drops_complete={complete}");
            assert!(run(&mut c, &p, &fwd), "an output traversal completes either way");
        }
    }

    #[test]
    fn artifact_keys_hold_the_rewritten_headers() {
        // One table matches the router MAC and rewrites dl_dst to the next hop: as one entry
        // (1 LTM table) gvs's key then holds the next hop's MAC under a mask that matches
        // dl_dst, so the flow's later packets never hit; ours keys by the incoming MAC.
        let p = Pipeline::parse("table=0,priority=10,ip,dl_dst=00:00:5e:00:01:01,actions=mod_dl_dst:02:00:00:00:00:09,output:2\ntable=0,priority=0,actions=drop\n").unwrap();
        let mut f = pkt(1, 0x0a00_0001, 80);
        f.set(Field::DlDst, 0x0000_5e00_0101);
        for after in [false, true] {
            let cfg = GigaflowConfig { key_after_writes: after, tables: 1, ..GigaflowConfig::default() };
            let mut c = GigaflowCache::new(cfg).unwrap();
            assert!(!run(&mut c, &p, &f));
            assert_eq!(run(&mut c, &p, &f), !after, "key_after_writes={after}");
        }
    }

    #[test]
    fn artifact_rewrites_only_the_matched_bits() {
        // Table 0 reads nw_dst under /8 and rewrites it to 10.9.9.9; table 1 outputs 10.9.9.9.
        // gvs's masked set action takes its mask from the entry's wildcards (/8), so the rewrite
        // keeps the packet's low 24 bits and table 1's entry never matches: the flow is never a
        // hit. Ours writes the whole address and hits from the second packet on.
        let p = Pipeline::parse(
            "table=0,priority=10,ip,nw_dst=10.0.0.0/8,actions=mod_nw_dst:10.9.9.9,goto_table:1\n\
             table=1,priority=10,ip,nw_dst=10.9.9.9,actions=output:2\n\
             table=1,priority=0,actions=output:3\n",
        )
        .unwrap();
        for masked in [false, true] {
            let cfg = GigaflowConfig { masked_commit: masked, repair: false, scheme: Scheme::OneToOne, tables: 2, ..GigaflowConfig::default() };
            let mut c = GigaflowCache::new(cfg).unwrap();
            let f = pkt(1, 0x0a01_0101, 80);
            assert!(!run(&mut c, &p, &f));
            assert_eq!(run(&mut c, &p, &f), !masked, "masked_commit={masked}");
            assert_eq!(run(&mut c, &p, &pkt(1, 0x0a02_0202, 80)), !masked, "masked_commit={masked}: another address");
        }
    }

    #[test]
    fn artifact_entries_of_untagged_packets_match_the_vlan() {
        // Nothing reads the VLAN: ours leaves it out of the entry, gvs matches an untagged
        // packet's entries on VID and CFI, so a tagged packet of the same flow misses them.
        let p = Pipeline::parse("table=0,priority=10,ip,nw_dst=10.0.0.1,actions=output:2\ntable=0,priority=0,actions=drop\n").unwrap();
        let untagged = pkt(1, 0x0a00_0001, 80);
        let mut tagged = untagged;
        tagged.set(Field::VlanTci, 0x1000 | 7);
        for vlan in [false, true] {
            let cfg = GigaflowConfig { vlan_always_matched: vlan, tables: 1, ..GigaflowConfig::default() };
            let mut c = GigaflowCache::new(cfg).unwrap();
            assert!(!run(&mut c, &p, &untagged));
            let id = c.tables[0].ids()[0];
            assert_eq!(c.tables[0].mask_of(id).get(Field::VlanTci), if vlan { 0x1fff } else { 0 });
            assert!(run(&mut c, &p, &untagged));
            assert_eq!(run(&mut c, &p, &tagged), !vlan, "vlan_always_matched={vlan}");
        }
    }

    #[test]
    fn artifact_entries_match_no_registers() {
        // Table 0 writes reg0 from dl_src, table 1 outputs by reg0 and nw_dst. 1-1 puts each on
        // its own LTM table. Matching registers (ours), the two sources need two table-1 entries;
        // the artifact clears register masks, so the second install is recycled and the second
        // source's packets then take the first one's port (the unsoundness it accepts).
        let p = Pipeline::parse(
            "table=0,priority=10,dl_src=00:00:00:00:00:01,actions=load:1->NXM_NX_REG0[],goto_table:1\n\
             table=0,priority=10,dl_src=00:00:00:00:00:02,actions=load:2->NXM_NX_REG0[],goto_table:1\n\
             table=0,priority=0,actions=drop\n\
             table=1,priority=10,reg0=1,ip,nw_dst=10.0.0.1,actions=output:3\n\
             table=1,priority=10,reg0=2,ip,nw_dst=10.0.0.1,actions=output:4\n\
             table=1,priority=0,actions=drop\n",
        )
        .unwrap();
        let with_src = |s: u64| {
            let mut f = pkt(1, 0x0a00_0001, 80);
            f.set(Field::DlSrc, s);
            f
        };
        for matched in [true, false] {
            let cfg = GigaflowConfig { match_metadata: matched, scheme: Scheme::OneToOne, tables: 2, ..GigaflowConfig::default() };
            let mut c = GigaflowCache::new(cfg).unwrap();
            let (mut out, mut outs) = (Flow::default(), Vec::new());
            for s in [1, 2] {
                assert!(!c.lookup(&with_src(s), 0, &mut out, &mut outs));
                c.install(&p.trace(&with_src(s)), 0);
            }
            assert_eq!((c.tables[1].len(), c.stats.table_recycled[1]), if matched { (2, 0) } else { (1, 1) });
            assert!(c.lookup(&with_src(2), 0, &mut out, &mut outs));
            assert_eq!(outs[0].0, if matched { 4 } else { 3 }, "matched={matched}");
        }
    }

    #[test]
    fn coverage_bookkeeping_changes_nothing_but_the_counts() {
        // The same packets through a cache that keeps Table 2's counts and one that does not:
        // identical hits, installs and recycles; only the counts differ (empty when off).
        let p = Pipeline::parse(ROUTER).unwrap();
        let mut on = GigaflowCache::new(GigaflowConfig::default()).unwrap();
        let mut off = GigaflowCache::new(GigaflowConfig { count_coverage: false, ..GigaflowConfig::default() }).unwrap();
        let packets: Vec<Flow> = (0..40u64)
            .map(|i| pkt(1 + i % 2, 0x0a01_0200 + (i as u32 % 7), [80, 443, 22][(i % 3) as usize]))
            .collect();
        for f in &packets {
            assert_eq!(run(&mut on, &p, f), run(&mut off, &p, f), "{f:?}");
        }
        assert_eq!(format!("{:?}", on.stats), format!("{:?}", off.stats));
        assert!(on.mappings.len() > 0);
        assert_eq!((off.mappings.len(), off.mappings_by_fields.len()), (0, 0));
    }

    #[test]
    fn written_fields_are_set_not_matched() {
        // Table 0 routes on nw_dst and rewrites both MACs and the destination address; table 1
        // admits by tp_dst. The routing entry must not match the incoming MACs (it writes them
        // absolutely), so packets from other hosts reuse it; of the rewritten nw_dst it matches
        // only the /8 the lookup read (as gvs with OpenFlow 1.3 flows, where `mod_nw_dst` is a
        // set_field), and every hit equals the slow path.
        let p = Pipeline::parse(
            "table=0,priority=10,ip,nw_dst=10.0.0.0/8,actions=mod_dl_src:00:00:5e:00:01:01,mod_dl_dst:02:00:00:00:00:09,mod_nw_dst:10.9.9.9,goto_table:1\n\
             table=1,priority=10,tcp,tp_dst=80,actions=output:2\n\
             table=1,priority=5,tcp,tp_src=7,actions=output:3\n",
        )
        .unwrap();
        let mut c = GigaflowCache::new(GigaflowConfig::default()).unwrap();
        let with_macs = |src: u64, dst: u64, port: u64| {
            let mut f = pkt(1, 0x0a01_0203, port);
            f.set(Field::DlSrc, src);
            f.set(Field::DlDst, dst);
            f
        };
        assert!(!run(&mut c, &p, &with_macs(0x0200_0000_0001, 0x0200_0000_0002, 80)));
        assert!(run(&mut c, &p, &with_macs(0x0200_0000_0003, 0x0200_0000_0004, 80)), "other MACs reuse the entries");
        let t = p.trace(&with_macs(5, 6, 80));
        assert_ne!(t.megaflow_mask.get(Field::DlSrc), 0, "the Megaflow still matches written MACs, as OVS's");
        assert_eq!(t.visits[0].window_wildcards.get(Field::DlSrc), 0);
        assert_eq!(t.visits[0].window_writes.get(Field::DlDst), 0xffff_ffff_ffff);
        assert_eq!(t.visits[0].window_wildcards.get(Field::NwDst), 0xff00_0000);
        assert_eq!(t.visits[0].window_writes.get(Field::NwDst), 0xffff_ffff);
        assert_ne!(t.megaflow_mask.get(Field::NwDst), 0xff00_0000, "the Megaflow matches the written address");
        assert!(!run(&mut c, &p, &with_macs(7, 8, 443)));
        assert!(run(&mut c, &p, &with_macs(9, 10, 443)));
    }

    #[test]
    fn ltm_prefers_the_longest_sub_traversal_and_tags_order_tables() {
        let p = Pipeline::parse(ROUTER).unwrap();
        let mut c = GigaflowCache::new(GigaflowConfig::default()).unwrap();
        run(&mut c, &p, &pkt(1, 0x0a01_0203, 80));
        let t = p.trace(&pkt(1, 0x0a01_0203, 80));
        let segs = c.partition(&t, &[0, 1, 2, 3]);
        assert!(segs.len() >= 2, "{segs:?}");
        // Priorities equal segment lengths; the first entry's tag is the start tag.
        let firsts: Vec<u16> = c.tables.iter().flat_map(|tb| tb.ids().into_iter().map(move |id| tb.get(id).tag)).collect();
        assert!(firsts.contains(&TAG_START));
        for tb in &c.tables {
            for id in tb.ids() {
                assert_eq!(tb.get(id).priority as u8, tb.get(id).payload.lookups);
            }
        }
    }

    #[test]
    fn capacity_and_mask_limits_hold() {
        let p = Pipeline::parse(ROUTER).unwrap();
        let cfg = GigaflowConfig { entries_per_table: 2, max_masks: 3, ..Default::default() };
        let mut c = GigaflowCache::new(cfg).unwrap();
        for i in 0..200u32 {
            run(&mut c, &p, &pkt(1 + (i as u64 % 3), 0x0a00_0000 | (i * 7919), 1 + (i as u64 * 31) % 600));
            for tb in &c.tables {
                assert!(tb.len() <= 2);
                assert!(tb.n_masks() < 3);
            }
        }
        assert!(c.stats.rejected_full + c.stats.rejected_masks > 0);
        assert!(GigaflowCache::new(GigaflowConfig { tables: 0, ..Default::default() }).is_err());
    }

    #[test]
    fn revalidation_removes_only_stale_sub_traversals() {
        let p = Pipeline::parse(ROUTER).unwrap();
        let mut c = GigaflowCache::new(GigaflowConfig::default()).unwrap();
        for (d, port) in [(0x0a01_0203, 80), (0xac10_0001, 443), (0x0a01_0210, 80)] {
            run(&mut c, &p, &pkt(1, d, port));
        }
        let before = c.len();
        assert_eq!(c.revalidate(&p).removed, 0);
        let changed = Pipeline::parse(&ROUTER.replace("tp_dst=80,actions=output:2", "tp_dst=80,actions=output:4")).unwrap();
        let r = c.revalidate(&changed);
        assert!(r.removed >= 1 && r.removed < before, "{r:?} of {before}");
        // After revalidation the cache agrees with the new pipeline.
        assert!(!run(&mut c, &changed, &pkt(1, 0x0a01_0203, 80)));
        assert!(run(&mut c, &changed, &pkt(1, 0x0a01_0203, 80)));
    }
}
