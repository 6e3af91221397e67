//! The vSwitch slow path: runs a packet through the multi-table pipeline as OVS's `xlate` does,
//! recording the traversal (each table visited, the flow it saw, the rule it hit and the bits it
//! examined) and producing the final flow, the Megaflow (the packet under the accumulated
//! wildcards) and the outputs with the headers each one carries.

use crate::classifier::{Classifier, DualWildcards};
use crate::fields::{Field, Flow, IPPROTO_ICMP};
use crate::flows::{parse_flows, Action, FlowRule, ParseError, Prereq};
use std::collections::BTreeMap;

/// OVS's resubmit depth limit.
pub const MAX_RESUBMIT_DEPTH: usize = 64;
/// OVS's limit on resubmits per translation (`MAX_RESUBMITS` = depth limit squared): without
/// it, a rule resubmitting twice into a loop makes 2^64 lookups (found by the gigaflow_flows
/// fuzzer as an out-of-memory).
pub const MAX_RESUBMITS: usize = MAX_RESUBMIT_DEPTH * MAX_RESUBMIT_DEPTH;

/// A parsed pipeline: its rules and one classifier per table.
#[derive(Clone, Debug)]
pub struct Pipeline {
    pub rules: Vec<FlowRule>,
    tables: BTreeMap<u8, Classifier>,
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
        Pipeline { rules, tables }
    }

    /// Runs `packet` (headers, registers and metadata zero unless set) through the pipeline.
    pub fn trace(&self, packet: &Flow) -> Trace {
        let mut x = Xlate::new(self, packet, usize::MAX);
        // Fields OVS always considers examined.
        x.wc.set(Field::InPort, u64::MAX);
        x.wc.set(Field::DlType, u64::MAX);
        x.table(0, 0);
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
        Trace { visits: x.visits, initial_flow: *packet, final_flow: x.flow, megaflow_mask: wc, outputs: x.outputs, depth_limited: x.depth_limited, subtables_probed: x.probes, next_lookup: None }
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
        Trace { visits: x.visits, initial_flow: *flow, final_flow: x.flow, megaflow_mask: Flow::default(), outputs: x.outputs, depth_limited: x.depth_limited, subtables_probed: x.probes, next_lookup: x.halted }
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
}

impl<'a> Xlate<'a> {
    fn new(pipeline: &'a Pipeline, packet: &Flow, max_visits: usize) -> Self {
        Xlate { pipeline, flow: *packet, wc: Flow::default(), visits: Vec::with_capacity(8), outputs: Vec::with_capacity(2), frames: Vec::new(), depth_limited: false, max_visits, halted: None, probes: 0 }
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
            if self.halted.is_some() {
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
                // The output decision reads in_port (already examined by every lookup).
                // OVS never sends a packet back out of its input port with output:N.
                if port as u64 != self.flow.get(Field::InPort) {
                    let visit = self.visits.len() - 1;
                    let window_writes = self.visits[visit].window_writes;
                    self.outputs.push(Output { port, headers: self.flow, visit, window_writes });
                }
            }
            Action::Drop => {}
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
