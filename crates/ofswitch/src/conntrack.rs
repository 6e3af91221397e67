//! The connection state a packet meets at a `ct(...)` in the NIC model: a table of connections
//! by (zone, 5-tuple). A packet of a connection not seen before is `+trk+new` and records it
//! (committed at first sight); later packets of it are `+trk+est`, and packets of the reverse
//! direction `+trk+est+rpl` — what a real conntrack reports for connections the pipeline
//! commits on their first packet, as OVN's and Antrea's stateful stages commit every allowed
//! new connection. (A connection the pipeline drops is never committed in a real conntrack,
//! so its later packets stay `+new`; here they are `+est`. docs/gigaflow.md says why.)

use crate::fields::{Field, Flow, CT_EST, CT_NEW, CT_RPL, CT_TRK};
use std::collections::{HashMap, HashSet};

type Key = (u16, u64, u64, u64, u64, u64);

fn key(flow: &Flow, zone: u16, reverse: bool) -> Key {
    let (src, dst, sp, dp) = (flow.get(Field::NwSrc), flow.get(Field::NwDst), flow.get(Field::TpSrc), flow.get(Field::TpDst));
    if reverse {
        (zone, dst, src, flow.get(Field::NwProto), dp, sp)
    } else {
        (zone, src, dst, flow.get(Field::NwProto), sp, dp)
    }
}

/// Connections seen so far.
#[derive(Default)]
pub struct Conntrack {
    seen: HashSet<Key>,
    /// `ct_mark` and `ct_label` committed with a connection (by its original direction's key).
    marks: HashMap<Key, (u64, u64)>,
}

impl Conntrack {
    /// The `ct_state` of `flow` (the packet as it reaches `ct` in `zone`), recording a new
    /// connection.
    pub fn state(&mut self, flow: &Flow, zone: u16) -> u64 {
        if self.seen.contains(&key(flow, zone, true)) && !self.seen.contains(&key(flow, zone, false)) {
            return CT_TRK | CT_EST | CT_RPL;
        }
        if self.seen.insert(key(flow, zone, false)) {
            CT_TRK | CT_NEW
        } else {
            CT_TRK | CT_EST
        }
    }

    /// `ct(commit,exec(...))`: records the connection of `flow` in `zone` and stores the bits of
    /// `ct_mark`/`ct_label` the exec wrote ((value, mask); other bits keep their value), as
    /// the datapath's conntrack keeps them with the connection.
    pub fn commit(&mut self, flow: &Flow, zone: u16, mark: Option<(u64, u64)>, label: Option<(u64, u64)>) {
        let k = self.connection(flow, zone);
        self.seen.insert(k);
        let e = self.marks.entry(k).or_default();
        if let Some((v, m)) = mark {
            e.0 = (e.0 & !m) | (v & m);
        }
        if let Some((v, m)) = label {
            e.1 = (e.1 & !m) | (v & m);
        }
    }

    /// The `ct_mark` and `ct_label` of `flow`'s connection in `zone` (either direction): what
    /// conntrack sets on the packet; 0 for a connection never committed with them.
    pub fn marks(&self, flow: &Flow, zone: u16) -> (u64, u64) {
        self.marks.get(&self.connection(flow, zone)).copied().unwrap_or_default()
    }

    /// The key of `flow`'s connection: its reverse direction's when that one was seen first.
    fn connection(&self, flow: &Flow, zone: u16) -> Key {
        let reverse = key(flow, zone, true);
        if self.seen.contains(&reverse) && !self.seen.contains(&key(flow, zone, false)) {
            reverse
        } else {
            key(flow, zone, false)
        }
    }

    /// Connections recorded.
    pub fn len(&self) -> usize {
        self.seen.len()
    }
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_packet_is_new_later_ones_established_replies_marked() {
        let mut ct = Conntrack::default();
        let mut f = Flow::default();
        for (field, v) in [(Field::NwSrc, 1), (Field::NwDst, 2), (Field::NwProto, 6), (Field::TpSrc, 1000), (Field::TpDst, 80)] {
            f.set(field, v);
        }
        assert_eq!(ct.state(&f, 5), CT_TRK | CT_NEW);
        assert_eq!(ct.state(&f, 5), CT_TRK | CT_EST);
        assert_eq!(ct.state(&f, 6), CT_TRK | CT_NEW, "zones are separate");
        let mut r = f;
        r.set(Field::NwSrc, 2);
        r.set(Field::NwDst, 1);
        r.set(Field::TpSrc, 80);
        r.set(Field::TpDst, 1000);
        assert_eq!(ct.state(&r, 5), CT_TRK | CT_EST | CT_RPL);
        assert_eq!(ct.len(), 2);
    }
}
