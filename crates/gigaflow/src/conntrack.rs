//! The connection state a packet meets at a `ct(...)` in the NIC model: a table of connections
//! by (zone, 5-tuple). A packet of a connection not seen before is `+trk+new` and records it
//! (committed at first sight); later packets of it are `+trk+est`, and packets of the reverse
//! direction `+trk+est+rpl` — what a real conntrack reports for connections the pipeline
//! commits on their first packet, as OVN's and Antrea's stateful stages commit every allowed
//! new connection. (A connection the pipeline drops is never committed in a real conntrack,
//! so its later packets stay `+new`; here they are `+est`. docs/gigaflow.md says why.)

use crate::fields::{Field, Flow, CT_EST, CT_NEW, CT_RPL, CT_TRK};
use std::collections::HashSet;

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
