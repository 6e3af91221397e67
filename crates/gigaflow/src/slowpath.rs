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
/// Most datapath passes [`Pipeline::trace_passes`] runs (OVS: `MAX_RECIRC_DEPTH`, 6).
pub const MAX_PASSES: usize = 6;

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
    /// are not here (a Gigaflow entry writes them absolutely, see [`TableVisit::window_writes`]),
    /// except IPv4 addresses and L4 ports, which the artifact's per-table wildcard un-wildcards
    /// when they are set. A Gigaflow entry's mask is the OR of these over its sub-traversal, and
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
    /// The traversal hit OVS's resubmit depth or resubmit count limit (a lookup was skipped).
    pub depth_limited: bool,
    /// Classifier subtables searched over the whole traversal (its tuple-space-search cost).
    pub subtables_probed: u64,
    /// For [`Pipeline::trace_segment`]: the lookup (table, pending frames, depth) that would
    /// have come next when the segment stopped; `None` when the traversal ended.
    pub next_lookup: Option<(u8, Vec<Frame>, u8)>,
    /// The conntrack actions of the pass; the last one with a `recirc` id is the pass the
    /// packet continues with (`final_flow`'s recirc_id is that id).
    pub ct: Vec<CtAction>,
    /// `dec_ttl` met a TTL of 0 or 1 and ended the translation (OVS: to the controller).
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
        let mut x = Xlate::new(self, packet, usize::MAX);
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
        if x.ct.iter().filter(|c| c.recirc.is_some()).count() > 1 {
            // Two clones recirculate from one pass; the caches model one continuation.
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
        Trace { visits: x.visits, initial_flow: *packet, final_flow: x.flow, megaflow_mask: wc, outputs: x.outputs, depth_limited: x.depth_limited, subtables_probed: x.probes, next_lookup: None, ct: x.ct, ttl_exception: x.stopped, output_actions: x.output_actions }
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
        f.set(Field::CtMark, 0);
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

    /// Every datapath pass of `packet`: the first, then one per recirculation, each thawed with
    /// the `ct_state` that `conntrack(packet before the pass, zone)` returns (at most
    /// [`MAX_PASSES`]).
    pub fn trace_passes(&self, packet: &Flow, mut conntrack: impl FnMut(&Flow, u16) -> u64) -> Vec<Trace> {
        let mut passes = vec![self.trace(packet)];
        while passes.len() < MAX_PASSES {
            let last = &passes[passes.len() - 1];
            if last.depth_limited || !last.ct.iter().any(|c| c.recirc.is_some()) {
                break;
            }
            let after = last.final_flow;
            let id = after.get(Field::RecircId) as u32;
            let Some(zone) = self.recirc_zone(id) else { break };
            let Some(next) = self.thaw(&after, conntrack(&after, zone)) else { break };
            passes.push(self.trace(&next));
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
        Trace { visits: x.visits, initial_flow: *flow, final_flow: x.flow, megaflow_mask: Flow::default(), outputs: x.outputs, depth_limited: x.depth_limited, subtables_probed: x.probes, next_lookup: x.halted, ct: x.ct, ttl_exception: x.stopped, output_actions: x.output_actions }
    }
}

struct Xlate<'a> {
    pipeline: &'a Pipeline,
    flow: Flow,
    wc: Flow,
    visits: Vec<TableVisit>,
    outputs: Vec<Output>,
    /// Pending (rule, next action) frames of enclosing resubmits.
    frames: Vec<Frame>,
    depth_limited: bool,
    max_visits: usize,
    halted: Option<(u8, Vec<Frame>, u8)>,
    probes: u64,
    ct: Vec<CtAction>,
    /// A `dec_ttl` exception ended the translation.
    stopped: bool,
    output_actions: u32,
}

impl<'a> Xlate<'a> {
    fn new(pipeline: &'a Pipeline, packet: &Flow, max_visits: usize) -> Self {
        Xlate { pipeline, flow: *packet, wc: Flow::default(), visits: Vec::with_capacity(8), outputs: Vec::with_capacity(2), frames: Vec::new(), depth_limited: false, max_visits, halted: None, probes: 0, ct: Vec::new(), stopped: false, output_actions: 0 }
    }

    fn table(&mut self, table: u8, depth: usize) {
        if self.halted.is_some() || self.stopped {
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
            Some(cls) => cls.lookup_counted(&self.flow, &mut DualWildcards { global: &mut self.wc, lookup: &mut window }, &mut self.probes),
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
            if self.halted.is_some() || self.stopped {
                return;
            }
            let calls = matches!(a, Action::Resubmit { .. } | Action::GotoTable { .. });
            let pending = calls && i + 1 < actions.len();
            if pending {
                self.frames.push((rule as u32, (i + 1) as u16, depth as u8));
            }
            self.action(a, depth);
            if pending {
                self.frames.pop();
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
    /// absolutely and needs to match only what it reads, except IPv4 addresses and L4 ports,
    /// which the artifact un-wildcards in the per-table wildcard of the table that sets them.
    fn written(&mut self, f: Field, mask: u64) {
        self.wc.or(f, mask);
        if let Some(v) = self.visits.last_mut() {
            v.window_writes.or(f, mask);
            if matches!(f, Field::NwSrc | Field::NwDst | Field::TpSrc | Field::TpDst) {
                v.window_wildcards.or(f, mask);
            }
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

    fn action(&mut self, a: &Action, depth: usize) {
        match *a {
            Action::SetField { field, prereq, value, mask } => {
                if self.prereqs_ok(prereq) {
                    self.written(field, mask);
                    self.flow.set_masked(field, value, mask);
                }
            }
            Action::Move { src, dst } => {
                self.unwildcard(src.field, u64::MAX);
                self.written(dst.field, u64::MAX);
                for p in [src.prereq, dst.prereq] {
                    if let Prereq::Proto(_) = p {
                        self.unwildcard(Field::NwProto, u64::MAX);
                    }
                }
                if self.prereqs_ok(dst.prereq) && self.prereqs_ok(src.prereq) {
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
                        self.stopped = true;
                    }
                }
            }
            Action::Ct { commit, zone, table } => {
                let recirc = match table {
                    Some(t) => {
                        let mut state = [0u64; 17];
                        state.copy_from_slice(&self.flow.0[1..18]);
                        let id = self.pipeline.recirc.lock().unwrap_or_else(|e| e.into_inner()).id(Frozen { table: t, zone, state });
                        if id.is_none() {
                            self.depth_limited = true;
                        }
                        id
                    }
                    None => None,
                };
                self.ct.push(CtAction { commit, zone, recirc });
                self.clear_conntrack();
            }
            Action::CtClear => self.clear_conntrack(),
        }
    }

    /// After `ct` and `ct_clear` the packet is untracked: the conntrack fields are zero for the
    /// rest of the pass. Not a datapath write (the Megaflow does not match them for it), but a
    /// write of the window, so a Gigaflow entry leaves the next one the same fields.
    fn clear_conntrack(&mut self) {
        for f in [Field::CtState, Field::CtZone, Field::CtMark] {
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
}
