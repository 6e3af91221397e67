//! The vSwitch slow path: runs a packet through the multi-table pipeline as OVS's `xlate` does,
//! recording the traversal (each table visited, the flow it saw, the rule it hit and the bits it
//! examined) and producing the final flow, the Megaflow (the packet under the accumulated
//! wildcards) and the outputs with the headers each one carries.
//!
//! Recirculation: a `ct(table=N)` freezes the pipeline state (resume table, registers,
//! metadata, conntrack zone) under a recirculation id, as OVS's `recirc_id` pool does; one
//! [`Pipeline::trace`] is one datapath pass, ending with `final_flow`'s `recirc_id` set to the
//! id to resume; [`Pipeline::thaw`] builds the next pass's packet once conntrack has set
//! `ct_state`, and [`Pipeline::trace_passes`] runs every pass.

use crate::classifier::{Classifier, DualWildcards};
use crate::fields::{Field, Flow, IPPROTO_ICMP};
use crate::flows::{parse_flows, Action, FlowRule, ParseError, Prereq};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// OVS's resubmit depth limit.
pub const MAX_RESUBMIT_DEPTH: usize = 64;
/// OVS's limit on resubmits per translation (`MAX_RESUBMITS` = depth limit squared): without
/// it, a rule resubmitting twice into a loop makes 2^64 lookups (found by the gigaflow_flows
/// fuzzer as an out-of-memory).
pub const MAX_RESUBMITS: usize = MAX_RESUBMIT_DEPTH * MAX_RESUBMIT_DEPTH;
/// Most datapath passes of one recirculation chain [`Pipeline::trace_passes`] runs (OVS's
/// datapath: `MAX_RECIRC_DEPTH`, 6).
pub const MAX_PASSES: usize = 6;
/// Most passes [`Pipeline::trace_passes`] traces in all (pipelines that fork two clones per
/// pass grow as 2^depth; OVS's trace has no bound).
pub const MAX_TRACED_PASSES: usize = 256;

/// A parsed pipeline: its rules and one classifier per table.
#[derive(Clone, Debug)]
pub struct Pipeline {
    pub rules: Vec<FlowRule>,
    tables: BTreeMap<u8, Classifier>,
    /// Frozen states by recirculation id (shared by clones, as OVS's id pool is per datapath).
    recirc: Arc<Mutex<RecircIds>>,
}

/// The pipeline state a `ct(table=N)` freezes: where the recirculated pass resumes and the
/// pipeline fields it resumes with (OVS's `frozen_state`: table, registers, metadata).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Frozen {
    table: u8,
    zone: u16,
    /// `ct_mark` and `ct_label` of the packet at the `ct` (after its `exec`).
    mark: u64,
    label: u64,
    /// Metadata and registers ([`Field::Metadata`], [`Field::Reg`]) at the freeze.
    state: [u64; 17],
}

/// Recirculation ids: `(index + 1) << 8 | resume table`, so a cache can tell the table a
/// recirculated packet resumes in from the packet alone (OVS's ids are opaque numbers; only
/// their identity matters).
#[derive(Debug, Default)]
struct RecircIds {
    ids: HashMap<Frozen, u32>,
    states: Vec<Frozen>,
}

impl RecircIds {
    fn id(&mut self, f: Frozen) -> Option<u32> {
        if let Some(&id) = self.ids.get(&f) {
            return Some(id);
        }
        if self.states.len() >= (1 << 23) {
            return None;
        }
        let id = ((self.states.len() as u32 + 1) << 8) | f.table as u32;
        self.states.push(f.clone());
        self.ids.insert(f, id);
        Some(id)
    }
}

/// The table a packet's pass starts in: 0, or the resume table its recirc_id names.
pub fn resume_table(packet: &Flow) -> u8 {
    (packet.get(Field::RecircId) & 0xff) as u8
}

/// A `ct` datapath action of a pass, in order (OVS prints `ct(commit,zone=Z)`, then
/// `recirc(ID)` when the packet recirculates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtAction {
    pub commit: bool,
    pub zone: u16,
    /// The recirculation id, for `ct(table=N)`.
    pub recirc: Option<u32>,
    /// `ct_mark` bits its `exec(...)` wrote: (value, mask), as OVS's datapath action carries
    /// them (`ct(commit,zone=1,mark=0x5/0xffffffff)`); `None` when it wrote none.
    pub mark: Option<(u64, u64)>,
    /// `ct_label` bits its `exec(...)` wrote (low 64 bits of OVS's 128), as `mark`.
    pub label: Option<(u64, u64)>,
    /// The packet at the action, after its `exec(...)`: the headers, registers and conntrack
    /// fields a recirculated clone resumes with (OVS freezes `ctx->xin->flow` here).
    pub flow: Flow,
}

/// A pending resubmit frame: (rule index, next action index, depth the rule ran at).
pub type Frame = (u32, u16, u8);

/// One table lookup of a traversal.
#[derive(Clone, Debug)]
pub struct TableVisit {
    pub table: u8,
    /// Index into `Pipeline::rules`, or `None` on a table miss (the packet is dropped).
    pub rule: Option<usize>,
    /// The flow as the table saw it.
    pub flow: Flow,
    /// Bits this lookup examined (its own contribution to the Megaflow).
    pub wildcards: Flow,
    /// Every bit the traversal depended on from this lookup until the next one starts (or the
    /// traversal ends): the lookup's bits even where an earlier table had examined them, plus
    /// the bits the actions run in that window read, plus in_port and dl_type (OVS's
    /// always-examined fields). Registers and metadata included. Bits the actions only *write*
    /// are not here (a Gigaflow entry writes them absolutely, see [`TableVisit::window_writes`]).
    /// A Gigaflow entry's mask is the OR of these over its sub-traversal, and
    /// the partitioner's field sets are taken from them.
    pub window_wildcards: Flow,
    /// Bits the actions run in this lookup's window write (set_field, load, move destinations).
    pub window_writes: Flow,
    /// Actions still pending when this lookup starts (rule index, next action index), innermost
    /// last: the `resubmit`s this lookup will return to. Tail calls (a resubmit or goto that is
    /// a rule's last action) leave nothing pending, so for most pipelines this is empty and a
    /// table id alone says what happens next.
    pub continuation: Vec<Frame>,
    /// Resubmit depth of the lookup.
    pub depth: u8,
}

/// An output action with the packet's headers at that moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub port: u32,
    pub headers: Flow,
    /// Index of the visit in whose window (see [`TableVisit::window_wildcards`]) it was emitted.
    pub visit: usize,
    /// Bits written in that window before the output (see [`TableVisit::window_writes`]).
    pub window_writes: Flow,
}

/// The result of one slow-path traversal.
#[derive(Clone, Debug)]
pub struct Trace {
    pub visits: Vec<TableVisit>,
    pub initial_flow: Flow,
    pub final_flow: Flow,
    /// Megaflow mask: 1 bits are matched exactly (packet fields only, as OVS installs them).
    pub megaflow_mask: Flow,
    pub outputs: Vec<Output>,
    /// The traversal hit OVS's resubmit depth or resubmit count limit (a lookup was skipped),
    /// or two clones recirculate from it: either way the caches do not cache it.
    pub depth_limited: bool,
    /// Only the limits: the resubmit depth or count, or the recirculation id pool.
    pub translation_limited: bool,
    /// Classifier subtables searched over the whole traversal (its tuple-space-search cost).
    pub subtables_probed: u64,
    /// For [`Pipeline::trace_segment`]: the lookup (table, pending frames, depth) that would
    /// have come next when the segment stopped; `None` when the traversal ended.
    pub next_lookup: Option<(u8, Vec<Frame>, u8)>,
    /// The conntrack actions of the pass; the last one with a `recirc` id is the pass the
    /// packet continues with (`final_flow`'s recirc_id is that id).
    pub ct: Vec<CtAction>,
    /// `dec_ttl` met a TTL of 0 or 1 (OVS: a controller action, reason invalid_ttl): that
    /// table's remaining actions were skipped; the actions pending in the tables that resubmitted
    /// to it still ran.
    pub ttl_exception: bool,
    /// `output` actions executed, those to the input port (which OVS skips) included: the
    /// Gigaflow artifact ends a traversal with its OUTPUT tag after any of them, with DROP after none.
    pub output_actions: u32,
}

impl Trace {
    /// The Megaflow match: `(field, value, mask)` for every field with a non-zero mask.
    pub fn megaflow(&self) -> Vec<(Field, u64, u64)> {
        Field::all()
            .filter(|&f| self.megaflow_mask.get(f) != 0)
            .map(|f| (f, self.initial_flow.get(f) & self.megaflow_mask.get(f), self.megaflow_mask.get(f)))
            .collect()
    }
}

impl Pipeline {
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        Ok(Self::new(parse_flows(text)?))
    }

    pub fn new(rules: Vec<FlowRule>) -> Self {
        let mut by_table: BTreeMap<u8, Vec<(usize, &FlowRule)>> = BTreeMap::new();
        for (i, r) in rules.iter().enumerate() {
            by_table.entry(r.table).or_default().push((i, r));
        }
        let tables = by_table.iter().map(|(t, rs)| (*t, Classifier::new(rs))).collect();
        Pipeline { rules, tables, recirc: Arc::default() }
    }

    /// Runs `packet` (headers, registers and metadata zero unless set) through the pipeline:
    /// one datapath pass, from table 0, or for a recirculated packet ([`Pipeline::thaw`]) from
    /// the table its recirc_id resumes in.
    pub fn trace(&self, packet: &Flow) -> Trace {
        self.trace_with(packet, LookupWildcards::Traversal)
    }

    /// [`Pipeline::trace`] with the given wildcards steering each lookup's shortcuts.
    pub fn trace_with(&self, packet: &Flow, lookup_wildcards: LookupWildcards) -> Trace {
        let mut x = Xlate::new(self, packet, usize::MAX);
        x.read_lookup = lookup_wildcards == LookupWildcards::PerLookup;
        // Fields OVS always considers examined.
        x.wc.set(Field::InPort, u64::MAX);
        x.wc.set(Field::DlType, u64::MAX);
        x.wc.set(Field::RecircId, u64::MAX);
        x.table(resume_table(packet), 0);
        if let Some(id) = x.ct.iter().rev().find_map(|c| c.recirc) {
            // The pass ends by recirculating: the last lookup's window writes the id.
            x.written(Field::RecircId, u64::MAX);
            x.flow.set(Field::RecircId, id as u64);
        }
        let translation_limited = x.depth_limited;
        if x.ct.iter().filter(|c| c.recirc.is_some()).count() > 1 {
            // Two clones recirculate from one pass (trace_passes traces both); the caches model
            // one continuation, so such a pass is not cached.
            x.depth_limited = true;
        }
        let mut wc = x.wc;
        for f in Field::all() {
            if !f.is_packet_field() {
                wc.set(f, 0);
            }
        }
        if x.flow.is_ip() && x.flow.get(Field::NwProto) == IPPROTO_ICMP {
            wc.0[Field::TpSrc.index()] &= 0xff;
            wc.0[Field::TpDst.index()] &= 0xff;
        }
        if wc.get(Field::VlanTci) != 0 {
            wc.or(Field::VlanTci, 0x1000);
        }
        // OVS clears masks of headers the original packet does not have (no VLAN tag here).
        if packet.get(Field::VlanTci) & 0x1000 == 0 {
            wc.set(Field::VlanTci, 0);
        }
        Trace { visits: x.visits, initial_flow: *packet, final_flow: x.flow, megaflow_mask: wc, outputs: x.outputs, depth_limited: x.depth_limited, subtables_probed: x.probes, next_lookup: None, ct: x.ct, ttl_exception: x.ttl_exception, translation_limited, output_actions: x.output_actions }
    }

    /// The packet of the pass after `after` (a pass's final flow, or a cache hit's flow, whose
    /// recirc_id names the frozen state): its headers, the frozen registers, metadata and zone,
    /// and `ct_state` as conntrack set it. `None` when `after` does not recirculate.
    pub fn thaw(&self, after: &Flow, ct_state: u64) -> Option<Flow> {
        let id = after.get(Field::RecircId) as u32;
        let index = (id >> 8).checked_sub(1)? as usize;
        let ids = self.recirc.lock().unwrap_or_else(|e| e.into_inner());
        let frozen = ids.states.get(index)?;
        let mut f = *after;
        f.0[1..18].copy_from_slice(&frozen.state);
        f.set(Field::CtState, ct_state);
        f.set(Field::CtZone, frozen.zone as u64);
        f.set(Field::CtMark, frozen.mark);
        f.set(Field::CtLabel, frozen.label);
        Some(f)
    }

    /// The conntrack zone a recirculation id's pass runs in.
    pub fn recirc_zone(&self, id: u32) -> Option<u16> {
        let index = (id >> 8).checked_sub(1)? as usize;
        self.recirc.lock().unwrap_or_else(|e| e.into_inner()).states.get(index).map(|f| f.zone)
    }

    /// The tables `packet` visits over all its passes, each recirculation resuming as a new
    /// connection's first packet would (`+trk+new`): its traversal in the paper's sense.
    pub fn traversal_tables(&self, packet: &Flow) -> Vec<u8> {
        let new = crate::fields::CT_TRK | crate::fields::CT_NEW;
        self.trace_passes(packet, |_, _| new).iter().flat_map(|t| t.visits.iter().map(|v| v.table)).collect()
    }

    /// Every datapath pass of `packet`: the first, then one per recirculation, in the order
    /// OVS's `ofproto/trace` traces them (a queue: every `ct(table=N)` of a pass adds a clone,
    /// in action order, after those already waiting), each thawed with the `ct_state` that
    /// `conntrack(packet at the ct action, zone)` returns, called in that order. A clone resumes
    /// with the headers, registers, metadata, `ct_mark` and `ct_label` the packet had at its
    /// `ct` (after the action's `exec`), as OVS's trace does. A chain is at most [`MAX_PASSES`]
    /// long, the whole at most [`MAX_TRACED_PASSES`].
    pub fn trace_passes(&self, packet: &Flow, mut conntrack: impl FnMut(&Flow, u16) -> u64) -> Vec<Trace> {
        // Only a recirculating ct takes a state (the --ct-next list is consumed by those alone).
        self.passes_by(packet, |at, action, zone| (if action.recirc.is_some() { conntrack(at, zone) } else { 0 }, None))
    }

    /// [`Pipeline::trace_passes`] with a connection table instead of given states, as the
    /// datapath runs it: each `ct` of a pass, in action order, looks the packet up in `ct`
    /// (its `ct_state`, and the `ct_mark`/`ct_label` the connection was committed with, which a
    /// recirculated clone resumes with), and a `ct(commit,...)` stores the marks its `exec`
    /// wrote with the connection, so the same connection's later packets (and later `ct`s of
    /// this one) see them. (OVS's `ofproto/trace` has no connection table: a clone there resumes
    /// with the marks its own `ct` action wrote, as in [`Pipeline::trace_passes`].)
    pub fn trace_passes_conntrack(&self, packet: &Flow, ct: &mut crate::conntrack::Conntrack) -> Vec<Trace> {
        self.passes_by(packet, |at, action, zone| {
            let state = if action.recirc.is_some() { ct.state(at, zone) } else { 0 };
            if action.commit {
                ct.commit(at, zone, action.mark, action.label);
            }
            (state, Some(ct.marks(at, zone)))
        })
    }

    /// The queue of passes: `conntrack(packet at the ct, the ct action, zone)` gives each
    /// `ct` of a pass, in action order, the `ct_state` a clone would resume with and, when it
    /// knows them, the `ct_mark`/`ct_label` (otherwise the packet's at the action).
    fn passes_by(&self, packet: &Flow, mut conntrack: impl FnMut(&Flow, &CtAction, u16) -> (u64, Option<(u64, u64)>)) -> Vec<Trace> {
        let mut passes = vec![self.trace(packet)];
        let mut chain = vec![1usize];
        let mut i = 0;
        while i < passes.len() {
            if passes[i].translation_limited || chain[i] >= MAX_PASSES {
                i += 1;
                continue;
            }
            let mut clones = Vec::new();
            for action in &passes[i].ct {
                let zone = action.zone;
                let Some(id) = action.recirc else {
                    // A ct without table: only a commit matters to a connection table.
                    if action.commit {
                        conntrack(&action.flow, action, zone);
                    }
                    continue;
                };
                let mut at = action.flow;
                at.set(Field::RecircId, id as u64);
                let (state, marks) = conntrack(&at, action, zone);
                if let Some(mut next) = self.thaw(&at, state) {
                    if let Some((mark, label)) = marks {
                        next.set(Field::CtMark, mark);
                        next.set(Field::CtLabel, label);
                    }
                    clones.push(next);
                }
            }
            for next in clones {
                if passes.len() >= MAX_TRACED_PASSES {
                    return passes;
                }
                passes.push(self.trace(&next));
                chain.push(chain[i] + 1);
            }
            i += 1;
        }
        passes
    }

    /// Runs at most `max_lookups` lookups starting in `table` at resubmit depth `depth` with
    /// `continuation` pending (as recorded in a [`TableVisit`]), stopping just before the next
    /// lookup would start: what a Gigaflow entry's sub-traversal did. Revalidation re-runs
    /// cached sub-traversals with it. The Megaflow mask of the result is left empty.
    pub fn trace_segment(&self, flow: &Flow, table: u8, continuation: &[Frame], depth: u8, max_lookups: usize) -> Trace {
        let mut x = Xlate::new(self, flow, max_lookups);
        x.frames = continuation.to_vec();
        x.table(table, depth as usize);
        for i in (0..continuation.len()).rev() {
            if x.halted.is_some() {
                break;
            }
            x.frames.truncate(i);
            let (rule, next, d) = continuation[i];
            x.run_actions(rule as usize, next as usize, d as usize);
        }
        Trace { visits: x.visits, initial_flow: *flow, final_flow: x.flow, megaflow_mask: Flow::default(), outputs: x.outputs, depth_limited: x.depth_limited, subtables_probed: x.probes, next_lookup: x.halted, ct: x.ct, ttl_exception: x.ttl_exception, translation_limited: x.depth_limited, output_actions: x.output_actions }
    }
}

/// Which wildcards steer a table lookup's shortcuts — OVS's prefix tries skip a field whose
/// bits are already un-wildcarded — and so which bits a lookup un-wildcards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LookupWildcards {
    /// The traversal's (OVS's `ctx->wc`): the Megaflow is exactly OVS's.
    #[default]
    Traversal,
    /// A fresh one per lookup, OR-ed into the traversal's after it: the Gigaflow artifact's gvs
    /// passes `individual_wcs[k]` to `rule_dpif_lookup_from_table` (ofproto-dpif-xlate.c), so a
    /// trie is consulted again in every table, however much of the field earlier tables examined.
    PerLookup,
}

struct Xlate<'a> {
    pipeline: &'a Pipeline,
    flow: Flow,
    wc: Flow,
    /// The lookups' shortcuts read the per-lookup wildcards ([`LookupWildcards::PerLookup`]).
    read_lookup: bool,
    visits: Vec<TableVisit>,
    outputs: Vec<Output>,
    /// Pending (rule, next action) frames of enclosing resubmits.
    frames: Vec<Frame>,
    depth_limited: bool,
    max_visits: usize,
    halted: Option<(u8, Vec<Frame>, u8)>,
    probes: u64,
    ct: Vec<CtAction>,
    /// A `dec_ttl` exception happened (it ended one table's actions).
    ttl_exception: bool,
    output_actions: u32,
}

impl<'a> Xlate<'a> {
    fn new(pipeline: &'a Pipeline, packet: &Flow, max_visits: usize) -> Self {
        Xlate { pipeline, flow: *packet, wc: Flow::default(), read_lookup: false, visits: Vec::with_capacity(8), outputs: Vec::with_capacity(2), frames: Vec::new(), depth_limited: false, max_visits, halted: None, probes: 0, ct: Vec::new(), ttl_exception: false, output_actions: 0 }
    }

    fn table(&mut self, table: u8, depth: usize) {
        if self.halted.is_some() {
            return;
        }
        if self.visits.len() >= self.max_visits {
            self.halted = Some((table, self.frames.clone(), depth as u8));
            return;
        }
        // The first lookup plus at most MAX_RESUBMITS resubmits.
        if depth >= MAX_RESUBMIT_DEPTH || self.visits.len() > MAX_RESUBMITS {
            self.depth_limited = true;
            return;
        }
        let before = self.wc;
        let mut window = Flow::default();
        window.set(Field::InPort, u64::MAX);
        window.set(Field::DlType, u64::MAX);
        window.set(Field::RecircId, u64::MAX);
        let rule = match self.pipeline.tables.get(&table) {
            Some(cls) => cls.lookup_counted(&self.flow, &mut DualWildcards { global: &mut self.wc, lookup: &mut window, read_lookup: self.read_lookup }, &mut self.probes),
            None => None,
        };
        let mut own = self.wc;
        for i in 0..own.0.len() {
            own.0[i] &= !before.0[i];
        }
        let continuation = self.frames.clone();
        self.visits.push(TableVisit { table, rule, flow: self.flow, wildcards: own, window_wildcards: window, window_writes: Flow::default(), continuation, depth: depth as u8 });
        let Some(rule) = rule else { return };
        self.run_actions(rule, 0, depth);
    }

    /// Runs `rule`'s actions from index `from` (the rule was hit at `depth`).
    fn run_actions(&mut self, rule: usize, from: usize, depth: usize) {
        let actions = &self.pipeline.rules[rule].actions;
        for (i, a) in actions.iter().enumerate().skip(from) {
            if self.halted.is_some() {
                return;
            }
            let calls = matches!(a, Action::Resubmit { .. } | Action::GotoTable { .. });
            let pending = calls && i + 1 < actions.len();
            if pending {
                self.frames.push((rule as u32, (i + 1) as u16, depth as u8));
            }
            let exception = self.action(a, depth);
            if pending {
                self.frames.pop();
            }
            if exception {
                // OVS (compose_dec_ttl): "Stop processing for current table": the rest of this
                // rule's actions are skipped; a resubmit that led here returns and its caller's
                // remaining actions run.
                return;
            }
        }
    }

    /// Marks bits as examined, for the Megaflow and for the current lookup's window.
    fn unwildcard(&mut self, f: Field, mask: u64) {
        self.wc.or(f, mask);
        if let Some(v) = self.visits.last_mut() {
            v.window_wildcards.or(f, mask);
        }
    }

    /// Marks bits as written. OVS's Megaflow matches every written field (its datapath set
    /// actions are computed against the packet's original value); a Gigaflow entry writes them
    /// absolutely and needs to match only what it reads. (gvs un-wildcards IPv4 addresses and
    /// L4 ports in the per-table wildcard only for the OpenFlow 1.0 `mod_nw_*`/`mod_tp_*`
    /// actions, OFPACT_SET_IPV4_*/SET_L4_*_PORT; flows added as OpenFlow 1.3, as its
    /// orchestrator does, carry them as `set_field`, which it does not: neither do we.)
    fn written(&mut self, f: Field, mask: u64) {
        self.wc.or(f, mask);
        if let Some(v) = self.visits.last_mut() {
            v.window_writes.or(f, mask);
        }
    }

    /// OVS `mf_are_prereqs_ok`, un-wildcarding what it checks.
    fn prereqs_ok(&mut self, p: Prereq) -> bool {
        match p {
            Prereq::None => true,
            // Observed with OVS 3.1: writing an IPv4 header field also examines nw_proto.
            Prereq::Ip => {
                if self.flow.is_ip() {
                    self.unwildcard(Field::NwProto, u64::MAX);
                }
                self.flow.is_ip()
            }
            Prereq::Proto(proto) => {
                if !self.flow.is_ip() {
                    return false;
                }
                self.unwildcard(Field::NwProto, u64::MAX);
                self.flow.get(Field::NwProto) == proto as u64
            }
        }
    }

    /// Runs one action; true when it was a `dec_ttl` exception (the table's actions end).
    fn action(&mut self, a: &Action, depth: usize) -> bool {
        match *a {
            Action::SetField { field, prereq, value, mask } => {
                if self.prereqs_ok(prereq) {
                    self.written(field, mask);
                    self.flow.set_masked(field, value, mask);
                }
            }
            Action::Move { src, dst } => {
                // OVS mf_subfield_copy: the prerequisites, then only the two subfields' bits
                // (a whole-field move, e.g. NXM_OF_TCP_DST[], examines the whole field; seen as
                // the mark=0x700/0xff00 of move:...->NXM_NX_CT_MARK[8..15]).
                if self.prereqs_ok(dst.prereq) && self.prereqs_ok(src.prereq) {
                    self.unwildcard(src.field, src.mask());
                    self.written(dst.field, dst.mask());
                    let bits = (self.flow.get(src.field) & src.mask()) >> src.offset_bits;
                    self.flow.set_masked(dst.field, bits << dst.offset_bits, dst.mask());
                }
            }
            Action::Resubmit { table } | Action::GotoTable { table } => self.table(table, depth + 1),
            Action::Output { port } => {
                self.output_actions += 1;
                // The output decision reads in_port (already examined by every lookup).
                // OVS never sends a packet back out of its input port with output:N.
                if port as u64 != self.flow.get(Field::InPort) {
                    let visit = self.visits.len() - 1;
                    let window_writes = self.visits[visit].window_writes;
                    self.outputs.push(Output { port, headers: self.flow, visit, window_writes });
                }
            }
            Action::Drop => {}
            Action::DecTtl => {
                // Observed with OVS 3.1: dec_ttl examines nw_ttl and (as an IPv4 write) nw_proto.
                if self.prereqs_ok(Prereq::Ip) {
                    self.unwildcard(Field::NwTtl, u64::MAX);
                    let ttl = self.flow.get(Field::NwTtl);
                    if ttl > 1 {
                        self.written(Field::NwTtl, u64::MAX);
                        self.flow.set(Field::NwTtl, ttl - 1);
                    } else {
                        self.ttl_exception = true;
                        return true;
                    }
                }
            }
            Action::Ct { commit, zone, table, ref exec } => {
                // OVS compose_conntrack_action: the nested actions run with the ct_mark/ct_label
                // wildcards saved and cleared; the bits they then un-wildcard are the masks of the
                // datapath action's mark=/label=, and the saved wildcards come back (a write
                // inside exec does not reach the Megaflow).
                let saved = (self.wc.get(Field::CtMark), self.wc.get(Field::CtLabel));
                self.wc.set(Field::CtMark, 0);
                self.wc.set(Field::CtLabel, 0);
                for a in exec {
                    self.action(a, depth);
                }
                let written = |f: Field, x: &Self| (x.wc.get(f) != 0).then(|| (x.flow.get(f) & x.wc.get(f), x.wc.get(f)));
                let (mark, label) = (written(Field::CtMark, self), written(Field::CtLabel, self));
                self.wc.set(Field::CtMark, saved.0);
                self.wc.set(Field::CtLabel, saved.1);
                let recirc = match table {
                    Some(t) => {
                        let mut state = [0u64; 17];
                        state.copy_from_slice(&self.flow.0[1..18]);
                        let frozen = Frozen { table: t, zone, mark: self.flow.get(Field::CtMark), label: self.flow.get(Field::CtLabel), state };
                        let id = self.pipeline.recirc.lock().unwrap_or_else(|e| e.into_inner()).id(frozen);
                        if id.is_none() {
                            self.depth_limited = true;
                        }
                        id
                    }
                    None => None,
                };
                self.ct.push(CtAction { commit, zone, recirc, mark, label, flow: self.flow });
                self.clear_conntrack();
            }
            Action::CtClear => self.clear_conntrack(),
        }
        false
    }

    /// After `ct` and `ct_clear` the packet is untracked: the conntrack fields are zero for the
    /// rest of the pass. Not a datapath write (the Megaflow does not match them for it), but a
    /// write of the window, so a Gigaflow entry leaves the next one the same fields.
    fn clear_conntrack(&mut self) {
        for f in [Field::CtState, Field::CtZone, Field::CtMark, Field::CtLabel] {
            self.flow.set(f, 0);
            if let Some(v) = self.visits.last_mut() {
                v.window_writes.or(f, u64::MAX);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doubling_resubmit_loop_stops_at_ovs_resubmit_limit() {
        // Found by the gigaflow_flows fuzzer: every lookup resubmits twice into the other table,
        // 2^64 lookups without OVS's resubmit count limit.
        let p = Pipeline::parse(
            "table=0,priority=10,actions=resubmit(,1),resubmit(,1)\n\
             table=1,priority=10,actions=resubmit(,0),resubmit(,0)\n",
        )
        .unwrap();
        let t = p.trace(&Flow::default());
        assert!(t.depth_limited);
        assert_eq!(t.visits.len(), MAX_RESUBMITS + 1);
    }

    fn tcp(in_port: u64, ttl: u64) -> Flow {
        let mut f = Flow::default();
        for (field, v) in [(Field::InPort, in_port), (Field::DlType, 0x0800), (Field::NwProto, 6), (Field::NwTtl, ttl)] {
            f.set(field, v);
        }
        f
    }

    #[test]
    fn a_ttl_exception_ends_only_its_own_tables_actions() {
        // OVS 3.1 (docs/gigaflow.md): datapath actions userspace(...),5,3 — table 2's output:4
        // and table 0's output:2 still run after table 1's exception.
        let p = Pipeline::parse(
            "table=0,priority=10,ip,actions=resubmit(,2),output:2\n\
             table=2,priority=10,ip,actions=resubmit(,1),output:4\n\
             table=1,priority=10,ip,actions=dec_ttl,output:3\n",
        )
        .unwrap();
        let t = p.trace(&tcp(1, 1));
        assert!(t.ttl_exception);
        assert_eq!(t.outputs.iter().map(|o| o.port).collect::<Vec<_>>(), vec![4, 2]);
        let t = p.trace(&tcp(1, 9));
        assert!(!t.ttl_exception);
        assert_eq!(t.outputs.iter().map(|o| (o.port, o.headers.get(Field::NwTtl))).collect::<Vec<_>>(), vec![(3, 8), (4, 8), (2, 8)]);
    }

    #[test]
    fn every_clone_of_a_forking_pass_is_traced_in_queue_order() {
        let p = Pipeline::parse(
            "table=0,priority=10,ip,actions=load:0x7->NXM_NX_REG0[],ct(table=10,zone=1),load:0x9->NXM_NX_REG0[],ct(table=20,zone=2),output:4\n\
             table=10,priority=10,ip,actions=ct(table=30,zone=4),ct(table=40)\n\
             table=20,priority=10,ip,actions=output:3\n\
             table=30,priority=10,ip,actions=output:2\n\
             table=40,priority=10,ip,actions=output:3\n",
        )
        .unwrap();
        let mut states = vec![0x21u64, 0x22, 0x21, 0x22].into_iter();
        let passes = p.trace_passes(&tcp(1, 64), |_, _| states.next().unwrap());
        assert!(passes[0].depth_limited && !passes[0].translation_limited, "a fork is not cached but traced");
        let shape: Vec<(u8, u64, u64, u64)> = passes
            .iter()
            .map(|t| (t.visits[0].table, t.initial_flow.get(Field::CtState), t.initial_flow.get(Field::CtZone), t.initial_flow.get(Field::Reg(0))))
            .collect();
        assert_eq!(shape, vec![(0, 0, 0, 0), (10, 0x21, 1, 7), (20, 0x22, 2, 9), (30, 0x21, 4, 7), (40, 0x22, 0, 7)]);
        assert_eq!(passes.iter().map(|t| t.outputs.iter().map(|o| o.port).collect::<Vec<_>>()).collect::<Vec<_>>(), vec![vec![4], vec![], vec![3], vec![2], vec![3]]);
    }
}
