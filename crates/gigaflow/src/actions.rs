//! What a cache entry does to a packet: the header rewrites and outputs of the (sub-)traversal
//! it was built from, as OVS's `commit_odp_actions` would write them — masked set-field ops
//! that take the packet from the flow at the start of the window to the flow at each output
//! and at the end — replayed on a hit without touching the slow path.

use innet_ofswitch::fields::{Field, Flow, N_FIELDS};
use innet_ofswitch::slowpath::Trace;

/// One datapath action of a cache entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CachedOp {
    /// Set the bits of `mask` in field `field` (a [`Field`] index) to `value`.
    Set { field: u8, value: u64, mask: u64 },
    /// Emit a copy of the packet as it is now.
    Output { port: u32 },
}

/// Appends the set-field ops that turn `from` into `to` (only bits that differ are written).
pub fn diff_ops(from: &Flow, to: &Flow, ops: &mut Vec<CachedOp>) {
    for i in 0..N_FIELDS {
        let changed = from.0[i] ^ to.0[i];
        if changed != 0 {
            ops.push(CachedOp::Set { field: i as u8, value: to.0[i] & changed, mask: changed });
        }
    }
}

/// The ops of the window that covers visits `start..=end` of `trace`: rewrites and outputs in
/// the order the slow path made them, ending at the flow the next lookup sees (or the final
/// flow). Every bit the window's actions wrote is set absolutely (to the value it has at that
/// point), so the ops are the same for every packet the window's wildcards match, although
/// those wildcards leave out bits that are only written ([`TableVisit::window_writes`]).
///
/// [`TableVisit::window_writes`]: innet_ofswitch::slowpath::TableVisit::window_writes
pub fn window_ops(trace: &Trace, start: usize, end: usize) -> Vec<CachedOp> {
    let mut ops = Vec::new();
    let mut cur = trace.visits[start].flow;
    // Bits written so far (before the current visit's window) and bits the ops have set.
    let mut written = Flow::default();
    let mut set = Flow::default();
    let mut v = start;
    let emit = |target: &Flow, w: &Flow, cur: &mut Flow, set: &mut Flow, ops: &mut Vec<CachedOp>| {
        for i in 0..N_FIELDS {
            let m = w.0[i] & ((cur.0[i] ^ target.0[i]) | !set.0[i]);
            if m != 0 {
                ops.push(CachedOp::Set { field: i as u8, value: target.0[i] & m, mask: m });
            }
            set.0[i] |= w.0[i];
            cur.0[i] = (cur.0[i] & !w.0[i]) | (target.0[i] & w.0[i]);
        }
    };
    for o in trace.outputs.iter().filter(|o| o.visit >= start && o.visit <= end) {
        while v < o.visit {
            written = written.union(&trace.visits[v].window_writes);
            v += 1;
        }
        emit(&o.headers, &written.union(&o.window_writes), &mut cur, &mut set, &mut ops);
        ops.push(CachedOp::Output { port: o.port });
    }
    while v <= end {
        written = written.union(&trace.visits[v].window_writes);
        v += 1;
    }
    let last = if end + 1 < trace.visits.len() { trace.visits[end + 1].flow } else { trace.final_flow };
    emit(&last, &written, &mut cur, &mut set, &mut ops);
    ops
}

/// Header fields a datapath set action can write (OVS `commit_odp_actions`: the Ethernet, IPv4
/// and transport-port key groups); registers and metadata never reach the datapath.
const COMMITTED: [Field; 8] = [Field::DlSrc, Field::DlDst, Field::NwSrc, Field::NwDst, Field::NwTos, Field::NwTtl, Field::TpSrc, Field::TpDst];

/// The ops the Gigaflow artifact composes for an entry (gvs mapper.c `compose_one_gigaflow`):
/// one `commit_odp_actions` from `start` (the flow entering the entry's sub-traversal) to `end`
/// (the flow leaving it) with the entry's `mask` as the wildcards, then `output` (the
/// traversal's last output port, on its last entry). OVS's masked set action takes its mask
/// from those wildcards (odp-util.c `commit`, `keycmp_mask`): a header field that differs
/// between the two flows is written in the bits the entry matches and no others, a field that
/// does not differ not at all. An OpenFlow 1.3 `set_field` un-wildcards only the traversal's
/// wildcard, not the per-table ones the entry's mask is made of, so a rewrite of a field the
/// sub-traversal read under a prefix keeps the packet's own low bits, and one of a field it did
/// not read is lost ([`window_ops`] writes every written bit absolutely).
pub fn artifact_commit_ops(start: &Flow, end: &Flow, mask: &Flow, output: Option<u32>) -> Vec<CachedOp> {
    let mut ops = Vec::new();
    for f in COMMITTED {
        let (i, m) = (f.index(), mask.get(f));
        if start.get(f) != end.get(f) && m != 0 {
            ops.push(CachedOp::Set { field: i as u8, value: end.get(f) & m, mask: m });
        }
    }
    ops.extend(output.map(|port| CachedOp::Output { port }));
    ops
}

/// The ops of a whole traversal (a Megaflow's actions): from the packet to each output and to
/// the final flow.
pub fn traversal_ops(trace: &Trace) -> Vec<CachedOp> {
    let mut ops = Vec::new();
    let mut cur = trace.initial_flow;
    for o in &trace.outputs {
        diff_ops(&cur, &o.headers, &mut ops);
        ops.push(CachedOp::Output { port: o.port });
        cur = o.headers;
    }
    diff_ops(&cur, &trace.final_flow, &mut ops);
    ops
}

/// Runs `ops` on `flow`, pushing `(port, headers)` for every output.
#[inline]
pub fn apply_ops(ops: &[CachedOp], flow: &mut Flow, outputs: &mut Vec<(u32, Flow)>) {
    for op in ops {
        match *op {
            CachedOp::Set { field, value, mask } => {
                let i = field as usize;
                flow.0[i] = (flow.0[i] & !mask) | (value & mask);
            }
            CachedOp::Output { port } => outputs.push((port, *flow)),
        }
    }
}

/// Number of set-field ops (for reports).
pub fn rewrites(ops: &[CachedOp]) -> usize {
    ops.iter().filter(|o| matches!(o, CachedOp::Set { .. })).count()
}

/// The field an op writes, if any.
pub fn written_field(op: &CachedOp) -> Option<Field> {
    match *op {
        CachedOp::Set { field, .. } => Some(Field::from_index(field as usize)),
        CachedOp::Output { .. } => None,
    }
}
