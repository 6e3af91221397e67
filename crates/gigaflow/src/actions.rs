//! What a cache entry does to a packet: the header rewrites and outputs of the (sub-)traversal
//! it was built from, as OVS's `commit_odp_actions` would write them — masked set-field ops
//! that take the packet from the flow at the start of the window to the flow at each output
//! and at the end — replayed on a hit without touching the slow path.

use crate::fields::{Field, Flow, N_FIELDS};
use crate::slowpath::Trace;

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
/// flow). Every bit these ops write was examined inside the window, so the ops are the same for
/// every packet the window's wildcards match.
pub fn window_ops(trace: &Trace, start: usize, end: usize) -> Vec<CachedOp> {
    let mut ops = Vec::new();
    let mut cur = trace.visits[start].flow;
    for o in trace.outputs.iter().filter(|o| o.visit >= start && o.visit <= end) {
        diff_ops(&cur, &o.headers, &mut ops);
        ops.push(CachedOp::Output { port: o.port });
        cur = o.headers;
    }
    let last = if end + 1 < trace.visits.len() { trace.visits[end + 1].flow } else { trace.final_flow };
    diff_ops(&cur, &last, &mut ops);
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
