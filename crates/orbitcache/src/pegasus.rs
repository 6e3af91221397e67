//! Pegasus (OSDI'20) on the ToR: selective replication of up to 64 hot keys across the storage
//! partitions with version-based coherence. Reads to a replicated key go round-robin over its
//! replica set; a write gets the next version from the switch and goes round-robin over all
//! partitions; a write reply with a newer version than the last completed one resets the replica
//! set to the replying partition, one with the same version adds it.

use innet_dataplane::state::{ResourceEntry, ResourceKind, ResourceReport};
use innet_dataplane::{Ctx, Metadata, Program, Verdict};
use innet_sim::packet::Packet;
use innet_wire::orbitcache::{Op, Stamp, FLAG_PEGASUS};

use crate::kv;
use crate::orbit_switch::FoldMap;
use crate::rack::Addressing;
use std::rc::Rc;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PegasusCounters {
    pub replicated_reads: u64,
    pub replicated_writes: u64,
    pub replica_set_resets: u64,
    pub replica_adds: u64,
}

pub struct PegasusSwitch {
    addressing: Rc<Addressing>,
    key_len: usize,
    pub rkeys: FoldMap<u128, u32>,
    /// Per replicated key: replica set (bit p = partition p), next and completed versions, and
    /// the round-robin pointers for reads and writes.
    pub rset: Vec<u64>,
    pub ver_next: Vec<u32>,
    pub ver_completed: Vec<u32>,
    rr_read: Vec<u32>,
    rr_write: Vec<u32>,
    partitions: u32,
    pub counters: PegasusCounters,
}

impl PegasusSwitch {
    /// Replicate `keys` (hottest first), each initially on every partition (the artifact's
    /// RSET_ALL: every server can answer the initial version).
    pub fn new(addressing: Rc<Addressing>, keys: &[u64]) -> Self {
        let partitions = addressing.partitions().min(64);
        let all = if partitions == 64 { u64::MAX } else { (1u64 << partitions) - 1 };
        let mut rkeys = FoldMap::default();
        for (i, &k) in keys.iter().enumerate() {
            rkeys.insert(addressing.key(k).1, i as u32);
        }
        let n = keys.len();
        PegasusSwitch {
            key_len: addressing.key_len,
            addressing,
            rkeys,
            rset: vec![all; n],
            ver_next: vec![0; n],
            ver_completed: vec![0; n],
            rr_read: vec![0; n],
            rr_write: vec![0; n],
            partitions,
            counters: PegasusCounters::default(),
        }
    }

    fn next_in_set(&self, set: u64, from: u32) -> u32 {
        for step in 0..self.partitions {
            let p = (from + step) % self.partitions;
            if set & (1 << p) != 0 {
                return p;
            }
        }
        from % self.partitions
    }
}

impl Program for PegasusSwitch {
    fn name(&self) -> &str {
        "pegasus"
    }

    fn ingress(&mut self, pkt: &mut Packet, _meta: &mut Metadata, _ctx: &mut Ctx<'_>) -> Verdict {
        if !kv::is_kv(pkt) {
            return Verdict::Route;
        }
        let Some(mut h) = kv::header(pkt) else { return Verdict::Route };
        let Some(&i) = self.rkeys.get(&h.hkey) else { return Verdict::Route };
        let i = i as usize;
        match h.op {
            Op::Read => {
                let p = self.next_in_set(self.rset[i], self.rr_read[i]);
                self.rr_read[i] = (p + 1) % self.partitions;
                let (ip, port) = self.addressing.partition_addr(p);
                kv::set_dst(pkt, ip, port);
                self.counters.replicated_reads += 1;
                Verdict::Route
            }
            Op::Write => {
                self.ver_next[i] += 1;
                let p = self.rr_write[i] % self.partitions;
                self.rr_write[i] = (p + 1) % self.partitions;
                let len = kv::value(pkt, self.key_len).map(|(_, l)| l).unwrap_or(0);
                let key_id = kv::key(pkt, self.key_len).and_then(crate::keys::key_id).unwrap_or(0);
                kv::set_value(pkt, self.key_len, Some((Stamp { key_id, version: self.ver_next[i] }, len)));
                h.flag = FLAG_PEGASUS;
                h.ver = self.ver_next[i] as u8;
                kv::set_header(pkt, &h);
                let (ip, port) = self.addressing.partition_addr(p);
                kv::set_dst(pkt, ip, port);
                self.counters.replicated_writes += 1;
                Verdict::Route
            }
            Op::WriteReply if h.flag == FLAG_PEGASUS => {
                let (src_ip, src_port, _, _) = kv::endpoints(pkt);
                if let (Some(p), Some((stamp, _))) = (self.addressing.partition_of(src_ip, src_port), kv::value(pkt, self.key_len)) {
                    if stamp.version > self.ver_completed[i] {
                        self.ver_completed[i] = stamp.version;
                        self.rset[i] = 1 << p;
                        self.counters.replica_set_resets += 1;
                    } else if stamp.version == self.ver_completed[i] {
                        self.rset[i] |= 1 << p;
                        self.counters.replica_adds += 1;
                    }
                }
                Verdict::Route
            }
            _ => Verdict::Route,
        }
    }

    fn resources(&self) -> ResourceReport {
        let n = self.rset.len() as u64;
        let mut r = ResourceReport::new(self.name());
        r.push(ResourceEntry::new("replicated_keys", ResourceKind::Exact, n, 128, 32));
        for (name, w) in [("rset", 64), ("ver_next", 32), ("ver_completed", 32), ("rr_read", 8), ("rr_write", 8)] {
            r.push(ResourceEntry::new(name, ResourceKind::Register, n, w, 0));
        }
        r
    }
}
