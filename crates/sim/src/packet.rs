//! The simulated packet's home in a run: the pool that owns every live packet. The packet
//! itself (a parsed header stack plus a virtual payload length) is `innet_wire::phv`, shared
//! with the real-packet switch; it is re-exported here for the simulator's code.

pub use innet_wire::phv::*;

/// Index of a live packet in the [`PacketPool`].
pub type PacketId = u32;

/// Owner of every live packet. Slots are reused, so steady-state runs allocate nothing per packet.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Slot>,
    free: Vec<PacketId>,
    live: usize,
    next_uid: u64,
    created: u64,
}

/// A packet's place in the pool, on cache-line boundaries: a switch hop reads the first two
/// lines of a packet (see [`Packet`]'s layout), which an unaligned 144-byte slot spread over
/// three.
#[derive(Default)]
#[repr(align(64))]
struct Slot(Option<Packet>);

impl PacketPool {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take ownership of a new packet; it gets a fresh uid and counts as created.
    pub fn insert(&mut self, mut pkt: Packet) -> PacketId {
        pkt.uid = self.next_uid;
        self.next_uid += 1;
        self.created += 1;
        self.live += 1;
        if let Some(id) = self.free.pop() {
            // Into the slot's `Option` itself: building a whole `Slot` first cost a second
            // 192-byte copy per packet.
            self.slots[id as usize].0 = Some(pkt);
            id
        } else {
            self.slots.push(Slot(Some(pkt)));
            (self.slots.len() - 1) as PacketId
        }
    }

    /// Remove a packet that has ended (delivered or dropped).
    pub fn remove(&mut self, id: PacketId) -> Packet {
        let pkt = self.slots[id as usize].0.take().expect("packet id is live");
        self.free.push(id);
        self.live -= 1;
        pkt
    }

    /// End a packet in its slot, without moving it out (what `remove` returns is a copy).
    pub fn free(&mut self, id: PacketId) {
        let slot = &mut self.slots[id as usize].0;
        assert!(slot.is_some(), "packet id is live");
        *slot = None;
        self.free.push(id);
        self.live -= 1;
    }

    /// Hint the CPU to start loading the two lines of a packet's slot a switch hop reads (no
    /// effect on results).
    #[inline]
    pub fn prefetch(&self, id: PacketId) {
        crate::prefetch::prefetch_two_lines(self.slots.get(id as usize));
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        self.slots[id as usize].0.as_ref().expect("packet id is live")
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        self.slots[id as usize].0.as_mut().expect("packet id is live")
    }

    pub fn live(&self) -> usize {
        self.live
    }

    pub fn created(&self) -> u64 {
        self.created
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_reuses_slots_and_counts() {
        let mut pool = PacketPool::new();
        let p = Packet::new(Ipv4::new(1, 2, IP_PROTO_UDP), L4::Other, 0);
        let a = pool.insert(p.clone());
        let b = pool.insert(p.clone());
        assert_eq!(pool.live(), 2);
        pool.remove(a);
        let c = pool.insert(p);
        assert_eq!(c, a);
        assert_ne!(pool.get(c).uid, pool.get(b).uid);
        assert_eq!(pool.created(), 3);
        assert_eq!(pool.live(), 2);
        pool.free(b);
        assert_eq!(pool.live(), 1);
        let d = pool.insert(Packet::new(Ipv4::new(3, 4, IP_PROTO_UDP), L4::Other, 7));
        assert_eq!(d, b, "a freed slot is reused");
        assert_eq!((pool.get(d).ip.src, pool.get(d).payload_len), (3, 7));
        assert_eq!(pool.get(c).ip.src, 1);
    }
}
