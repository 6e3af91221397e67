//! The in-switch mapping caches.
//!
//! [`MappingCache`] is what the switch protocols ask of a cache; a scheme defined outside this
//! crate brings its own ([`crate::scheme::CacheScheme`], docs/extending.md).
//! [`DirectMapped`] is SwitchV2P's cache (and LocalLearning's and GwCache's): one slot per CRC-32
//! index of the virtual IP, each slot a (VIP, PIP) pair plus an access bit. The index hashes the
//! VIP (innet's, as a P4 hash unit would), or, with `cache_index=artifact`, what the ns-3
//! artifact's `P4Cache::GetIndex` hashes: the VM's number in the artifact's own numbering and the
//! salt as two little-endian words ([`ArtifactIds`]). The function is the same on every switch
//! (SwitchV2P), so two VMs that collide collide everywhere: which VMs those are decides where
//! hot mappings can live, and so moves hit rates at small caches (docs/switchv2p.md).
//! The paper: the bit turns on upon a hit and off when a lookup lands on the slot but misses.
//! Operations follow the authors' artifact (docs/switchv2p.md): `get` sets/clears the bit, `put`
//! overwrites and clears the bit, `put_if_free` inserts only into an empty slot or over the same
//! key.
//!
//! Large caches (the paper sweeps up to 1,500× the address space) would need gigabytes as dense
//! arrays on FT16-400K, so above [`DENSE_LIMIT_SLOTS`] slots the same direct-mapped semantics are
//! stored sparsely (only occupied slots take memory). Both layouts are checked equal by a
//! property test.
//!
//! [`Lru`] is Bluebird's ToR route cache: a true LRU of fixed capacity.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use innet_dataplane::state::{HashAlgorithm, HashUnit, ResourceEntry, ResourceKind};

/// Above this many slots a cache is stored sparsely.
pub const DENSE_LIMIT_SLOTS: u64 = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    key: u32,
    val: u32,
    bit: bool,
}

/// Slot indexes are CRC outputs already: a multiplicative mix is hashing enough.
#[derive(Default, Clone, Copy)]
struct SlotHasher(u64);

impl std::hash::Hasher for SlotHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type SlotMap = HashMap<u32, Slot, std::hash::BuildHasherDefault<SlotHasher>>;

#[derive(Debug, Clone)]
enum Store {
    Dense(Vec<Option<Slot>>),
    Sparse(SlotMap),
}

/// The ns-3 artifact's number of each VM (`SimulationBase::AssignIds`): leaf by leaf, the VMs of
/// the leaf's servers in order, then the leaf's gateways, which take numbers too. The artifact's
/// VIP *is* this number, and its caches hash it.
#[derive(Debug, Clone)]
pub struct ArtifactIds {
    vip_base: u32,
    ids: Arc<[u32]>,
}

impl ArtifactIds {
    /// `ids[vm]` is VM `vm`'s number; VM `vm`'s VIP is `vip_base + vm`.
    pub fn new(vip_base: u32, ids: Vec<u32>) -> Self {
        ArtifactIds { vip_base, ids: ids.into() }
    }

    /// The artifact's number of the VM behind `vip` (a key that is no VM's hashes as itself).
    #[inline]
    pub fn id(&self, vip: u32) -> u32 {
        self.ids.get(vip.wrapping_sub(self.vip_base) as usize).copied().unwrap_or(vip)
    }
}

/// What a direct-mapped cache's index hashes.
#[derive(Debug, Clone)]
enum Index {
    /// The VIP's four bytes, big-endian, after the hash unit's salt (the P4 hash unit's input).
    Vip(HashUnit),
    /// The artifact's `P4Cache::GetIndex`: CRC-32 of {VM number, salt}, two little-endian words.
    Artifact { salt: u32, ids: ArtifactIds },
}

impl Index {
    #[inline]
    fn slot(&self, capacity: u32, key: u32) -> u32 {
        let h = match self {
            Index::Vip(hash) => hash.hash(&key.to_be_bytes()),
            Index::Artifact { salt, ids } => {
                let mut words = [0u8; 8];
                words[..4].copy_from_slice(&ids.id(key).to_le_bytes());
                words[4..].copy_from_slice(&salt.to_le_bytes());
                HashUnit::new(HashAlgorithm::Crc32, 0).hash(&words)
            }
        };
        h % capacity.max(1)
    }
}

/// A direct-mapped (VIP → PIP, access bit) cache.
#[derive(Debug, Clone)]
pub struct DirectMapped {
    capacity: u32,
    index: Index,
    store: Store,
    occupied: u32,
    /// The last key indexed and its slot. A packet's visit asks for the same key several
    /// times (SwitchV2P's `find`, `slot_bit`, `get`, `put` of the destination), and each
    /// index is a CRC-32; the slot of a key never changes.
    last: Cell<(u32, u32)>,
}

/// What `put` displaced.
pub type Evicted = Option<(u32, u32)>;

impl DirectMapped {
    /// A cache of `capacity` slots (0 = no cache: every lookup misses, every insert is refused),
    /// indexed by CRC-32 salted with `salt` (0 for SwitchV2P's network-wide function).
    pub fn new(capacity: u32, salt: u32) -> Self {
        DirectMapped::with_hash(capacity, HashUnit::new(HashAlgorithm::Crc32, salt))
    }

    /// The same cache indexed by another hash (a cache built of several direct-mapped parts
    /// gives each its own function).
    pub fn with_hash(capacity: u32, hash: HashUnit) -> Self {
        Self::with_index(capacity, Index::Vip(hash))
    }

    /// The same cache indexed as the ns-3 artifact's (`cache_index=artifact`): CRC-32 of the
    /// VM's number in `ids` and `salt`.
    pub fn artifact(capacity: u32, salt: u32, ids: ArtifactIds) -> Self {
        Self::with_index(capacity, Index::Artifact { salt, ids })
    }

    fn with_index(capacity: u32, index: Index) -> Self {
        let store = if capacity as u64 > DENSE_LIMIT_SLOTS {
            Store::Sparse(SlotMap::default())
        } else {
            Store::Dense(vec![None; capacity as usize])
        };
        Self::with_store(capacity, index, store)
    }

    fn with_store(capacity: u32, index: Index, store: Store) -> Self {
        let last = Cell::new((0, index.slot(capacity, 0)));
        DirectMapped { capacity, index, store, occupied: 0, last }
    }

    /// The same cache with the sparse layout whatever its size (for tests).
    pub fn new_sparse(capacity: u32, salt: u32) -> Self {
        Self::with_store(capacity, Index::Vip(HashUnit::new(HashAlgorithm::Crc32, salt)), Store::Sparse(SlotMap::default()))
    }

    /// Occupied slots.
    pub fn len(&self) -> u32 {
        self.occupied
    }

    pub fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// The slot of `key`.
    #[inline]
    pub fn index(&self, key: u32) -> u32 {
        let (k, i) = self.last.get();
        if k == key {
            return i;
        }
        let i = self.index.slot(self.capacity, key);
        self.last.set((key, i));
        i
    }

    #[inline]
    fn slot(&self, i: u32) -> Option<Slot> {
        match &self.store {
            Store::Dense(v) => v[i as usize],
            Store::Sparse(m) => m.get(&i).copied(),
        }
    }

    #[inline]
    fn set(&mut self, i: u32, s: Option<Slot>) {
        let was = match &mut self.store {
            Store::Dense(v) => std::mem::replace(&mut v[i as usize], s),
            Store::Sparse(m) => match s {
                Some(s) => m.insert(i, s),
                None => m.remove(&i),
            },
        };
        match (was.is_some(), s.is_some()) {
            (false, true) => self.occupied += 1,
            (true, false) => self.occupied -= 1,
            _ => {}
        }
    }

    #[inline]
    fn set_bit(&mut self, i: u32, bit: bool) {
        match &mut self.store {
            Store::Dense(v) => {
                if let Some(s) = v[i as usize].as_mut() {
                    s.bit = bit;
                }
            }
            Store::Sparse(m) => {
                if let Some(s) = m.get_mut(&i) {
                    s.bit = bit;
                }
            }
        }
    }

    /// What `key`'s slot holds, as (key, val, bit), whatever key that is; None when it is
    /// empty or the cache has no slots.
    pub fn occupant(&self, key: u32) -> Option<(u32, u32, bool)> {
        if self.capacity == 0 {
            return None;
        }
        self.slot(self.index(key)).map(|s| (s.key, s.val, s.bit))
    }

    /// Every cached (key, val, bit), in slot order.
    pub fn entries(&self) -> Vec<(u32, u32, bool)> {
        let mut v: Vec<(u32, Slot)> = match &self.store {
            Store::Dense(d) => d.iter().enumerate().filter_map(|(i, s)| s.map(|s| (i as u32, s))).collect(),
            Store::Sparse(m) => m.iter().map(|(&i, &s)| (i, s)).collect(),
        };
        v.sort_by_key(|(i, _)| *i);
        v.into_iter().map(|(_, s)| (s.key, s.val, s.bit)).collect()
    }

}

/// A switch's VIP → PIP cache as the switch protocols use it ([`crate::switch`]): SwitchV2P's
/// [`DirectMapped`] cache, or a cache of a scheme defined elsewhere ([`crate::scheme::CacheScheme`]).
///
/// The protocols' admission rules speak of "the slot" a key goes to and its access bit; a cache
/// with several places per key answers for the place an insertion of the key would take
/// ([`MappingCache::slot_bit`]). A hit never returns a value put for another key.
pub trait MappingCache {
    /// Slots (0 = no cache: every lookup misses, every insert is refused).
    fn capacity(&self) -> u32;
    /// Lookup: on a hit set the access bit and return the PIP; on a miss clear the bit of the
    /// slot(s) the lookup landed on.
    fn get(&mut self, key: u32) -> Option<u32>;
    /// The PIP cached for `key`, without touching any access bit.
    fn find(&self, key: u32) -> Option<u32>;
    /// The access bit of the slot an insertion of `key` would take: `key`'s own if cached, else
    /// the one it would displace (false when that slot is empty).
    fn slot_bit(&self, key: u32) -> bool;
    /// Insert (key, val), bit cleared, displacing what [`MappingCache::slot_bit`] describes;
    /// returns the other key it displaced. Refused (`Err`) only when the cache has no slots.
    fn put(&mut self, key: u32, val: u32) -> Result<Evicted, ()>;
    /// Insert only into an empty slot or over the same key (bit kept for the same key).
    /// Returns whether the mapping is now cached.
    fn put_if_free(&mut self, key: u32, val: u32) -> bool;
    /// Remove `key` if it is cached (with any value).
    fn remove(&mut self, key: u32) -> bool;
    /// Remove `key` only if it maps to `val` (an invalidation of a known-stale entry).
    fn remove_if(&mut self, key: u32, val: u32) -> bool {
        if self.find(key) == Some(val) {
            self.remove(key)
        } else {
            false
        }
    }
    /// Output bits of the index hash(es): enough to address every slot.
    fn index_bits(&self) -> u32;
    /// The registers the cache takes, for the resource report, named `{prefix}_…`.
    fn resource_entries(&self, prefix: &str) -> Vec<ResourceEntry>;
}

/// SwitchV2P's cache, as the paper and the artifact describe it (module doc).
impl MappingCache for DirectMapped {
    fn capacity(&self) -> u32 {
        self.capacity
    }

    #[inline]
    fn get(&mut self, key: u32) -> Option<u32> {
        if self.capacity == 0 {
            return None;
        }
        let i = self.index(key);
        match self.slot(i) {
            Some(s) if s.key == key => {
                if !s.bit {
                    self.set_bit(i, true);
                }
                Some(s.val)
            }
            Some(s) => {
                if s.bit {
                    self.set_bit(i, false);
                }
                None
            }
            None => None,
        }
    }

    fn find(&self, key: u32) -> Option<u32> {
        if self.capacity == 0 {
            return None;
        }
        self.slot(self.index(key)).filter(|s| s.key == key).map(|s| s.val)
    }

    fn slot_bit(&self, key: u32) -> bool {
        if self.capacity == 0 {
            return false;
        }
        self.slot(self.index(key)).is_some_and(|s| s.bit)
    }

    #[inline]
    fn put(&mut self, key: u32, val: u32) -> Result<Evicted, ()> {
        if self.capacity == 0 {
            return Err(());
        }
        let i = self.index(key);
        let old = self.slot(i);
        self.set(i, Some(Slot { key, val, bit: false }));
        Ok(old.filter(|s| s.key != key).map(|s| (s.key, s.val)))
    }

    #[inline]
    fn put_if_free(&mut self, key: u32, val: u32) -> bool {
        if self.capacity == 0 {
            return false;
        }
        let i = self.index(key);
        match self.slot(i) {
            None => {
                self.set(i, Some(Slot { key, val, bit: false }));
                true
            }
            Some(s) if s.key == key => {
                if s.val != val {
                    self.set(i, Some(Slot { key, val, bit: s.bit }));
                }
                true
            }
            Some(_) => false,
        }
    }

    fn remove(&mut self, key: u32) -> bool {
        if self.capacity == 0 {
            return false;
        }
        let i = self.index(key);
        if self.slot(i).is_some_and(|s| s.key == key) {
            self.set(i, None);
            true
        } else {
            false
        }
    }

    /// Declared registers for the resource report, laid out as the artifact's P4 prototype
    /// (`switchv2p_cache.p4`): `{prefix}_keys` holds each slot's VIP and access bit as one
    /// register pair (a Tofino pair has two equal halves, so the bit takes a 32-bit half), and
    /// `{prefix}_values` the PIP. Two arrays, two stateful ALUs.
    fn resource_entries(&self, prefix: &str) -> Vec<ResourceEntry> {
        let slots = self.capacity as u64;
        vec![
            ResourceEntry::new(&format!("{prefix}_keys"), ResourceKind::Register, slots, 0, 64),
            ResourceEntry::new(&format!("{prefix}_values"), ResourceKind::Register, slots, 0, 32),
        ]
    }

    /// Output bits of the index hash: enough to address every slot (the P4's 13-bit CRC-32 for
    /// its 8,192 slots).
    fn index_bits(&self) -> u32 {
        bits_to_address(self.capacity as u64)
    }
}

/// Bits needed to address `n` distinct items (at least 1).
pub fn bits_to_address(n: u64) -> u32 {
    (64 - n.saturating_sub(1).leading_zeros()).max(1)
}

/// A least-recently-used cache (Bluebird's ToR route cache).
#[derive(Debug, Clone)]
pub struct Lru {
    capacity: usize,
    map: innet_sim::rng::FastMap<u32, (u32, u64)>,
    /// Recency order: stamp → key (stamps only grow).
    order: std::collections::BTreeMap<u64, u32>,
    clock: u64,
}

impl Lru {
    pub fn new(capacity: usize) -> Self {
        Lru { capacity, map: Default::default(), order: Default::default(), clock: 0 }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn touch(&mut self, key: u32) {
        if let Some(e) = self.map.get_mut(&key) {
            self.order.remove(&e.1);
            self.clock += 1;
            e.1 = self.clock;
            self.order.insert(self.clock, key);
        }
    }

    /// Lookup, making `key` the most recently used on a hit.
    pub fn get(&mut self, key: u32) -> Option<u32> {
        let v = self.map.get(&key).map(|e| e.0)?;
        self.touch(key);
        Some(v)
    }

    pub fn find(&self, key: u32) -> Option<u32> {
        self.map.get(&key).map(|e| e.0)
    }

    /// Insert or update; evicts (and returns) the least recently used entry when full.
    pub fn put(&mut self, key: u32, val: u32) -> Option<(u32, u32)> {
        if self.capacity == 0 {
            return None;
        }
        if let Some(e) = self.map.get_mut(&key) {
            e.0 = val;
            self.touch(key);
            return None;
        }
        let mut evicted = None;
        if self.map.len() >= self.capacity {
            if let Some((&stamp, &victim)) = self.order.iter().next() {
                self.order.remove(&stamp);
                let (v, _) = self.map.remove(&victim).expect("order and map agree");
                evicted = Some((victim, v));
            }
        }
        self.clock += 1;
        self.map.insert(key, (val, self.clock));
        self.order.insert(self.clock, key);
        evicted
    }

    pub fn remove(&mut self, key: u32) -> bool {
        match self.map.remove(&key) {
            Some((_, stamp)) => {
                self.order.remove(&stamp);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    /// `cache_index=artifact` is the artifact's `P4Cache::GetIndex`: CRC-32 of {VM number, salt}
    /// as two little-endian words, modulo the slots. Expected slots from ns-3.36.1's own
    /// `CRC32Calculate` (a 10-line program linked to the artifact's libns3.36.1-network).
    #[test]
    fn artifact_index_is_the_artifacts_p4cache_index() {
        let base = crate::directory::VIP_BASE;
        // VMs 0, 319, 4409, 10239 of FT8-10K are the artifact's numbers 0, 319, 4429, 10269
        // (the 10 gateways of each gateway ToR before them take numbers too).
        let mut ids = vec![0u32; 10_240];
        for (vm, id) in [(0, 0), (319, 319), (320, 330), (4409, 4429), (10_239, 10_269)] {
            ids[vm] = id;
        }
        let ids = ArtifactIds::new(base, ids);
        let cache = DirectMapped::artifact(64, 0, ids.clone());
        for (vm, crc) in [(0u32, 1_696_784_233u32), (319, 2_679_674_124), (320, 2_064_124_664), (4409, 370_384_687), (10_239, 2_127_465_576)] {
            assert_eq!(cache.index(base + vm), crc % 64, "VM {vm}");
        }
        let salted = DirectMapped::artifact(6, 0xdead_beef, ids.clone());
        assert_eq!(salted.index(base + 4409), 755_834_924 % 6);
        assert_eq!(salted.index(base + 319), 2_762_353_167 % 6);
        // A key that is no VM's hashes as itself; the VIP index is another function.
        assert_eq!(DirectMapped::artifact(64, 0, ids).index(123_456), 333_216_031 % 64);
        assert_ne!(DirectMapped::new(64, 0).index(base + 4409), 370_384_687 % 64);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Get(u32),
        Put(u32, u32),
        PutIfFree(u32, u32),
        Remove(u32),
        RemoveIf(u32, u32),
    }

    fn op(keys: u32) -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..keys).prop_map(Op::Get),
            (0..keys, 0..4u32).prop_map(|(k, v)| Op::Put(k, v)),
            (0..keys, 0..4u32).prop_map(|(k, v)| Op::PutIfFree(k, v)),
            (0..keys).prop_map(Op::Remove),
            (0..keys, 0..4u32).prop_map(|(k, v)| Op::RemoveIf(k, v)),
        ]
    }

    /// The specification, written the slow way: slots as a map from index to (key, val, bit).
    #[derive(Default)]
    struct Model {
        slots: HashMap<u32, (u32, u32, bool)>,
    }

    proptest! {
        /// Dense, sparse and the slow model agree on every result and on the final contents;
        /// a hit always returns the last value put for that key, never another key's.
        #[test]
        fn direct_mapped_matches_the_model(cap in 1u32..8, salt in any::<u32>(), ops in proptest::collection::vec(op(24), 1..200)) {
            let mut dense = DirectMapped::new(cap, salt);
            let mut sparse = DirectMapped::new_sparse(cap, salt);
            let mut model = Model::default();
            let mut truth: HashMap<u32, u32> = HashMap::new();
            for o in ops {
                let idx = dense.index(match o { Op::Get(k) | Op::Put(k, _) | Op::PutIfFree(k, _) | Op::Remove(k) | Op::RemoveIf(k, _) => k });
                match o {
                    Op::Get(k) => {
                        let want = match model.slots.get_mut(&idx) {
                            Some(s) if s.0 == k => { s.2 = true; Some(s.1) }
                            Some(s) => { s.2 = false; None }
                            None => None,
                        };
                        let (a, b) = (dense.get(k), sparse.get(k));
                        prop_assert_eq!(a, want);
                        prop_assert_eq!(b, want);
                        if let Some(v) = a { prop_assert_eq!(truth.get(&k), Some(&v)); }
                    }
                    Op::Put(k, v) => {
                        let old = model.slots.insert(idx, (k, v, false));
                        let want = old.filter(|s| s.0 != k).map(|s| (s.0, s.1));
                        prop_assert_eq!(dense.put(k, v), Ok(want));
                        prop_assert_eq!(sparse.put(k, v), Ok(want));
                        truth.insert(k, v);
                    }
                    Op::PutIfFree(k, v) => {
                        let want = match model.slots.get_mut(&idx) {
                            None => { model.slots.insert(idx, (k, v, false)); true }
                            Some(s) if s.0 == k => { s.1 = v; true }
                            Some(_) => false,
                        };
                        prop_assert_eq!(dense.put_if_free(k, v), want);
                        prop_assert_eq!(sparse.put_if_free(k, v), want);
                        if want { truth.insert(k, v); }
                    }
                    Op::Remove(k) => {
                        let want = model.slots.get(&idx).is_some_and(|s| s.0 == k);
                        if want { model.slots.remove(&idx); }
                        prop_assert_eq!(dense.remove(k), want);
                        prop_assert_eq!(sparse.remove(k), want);
                    }
                    Op::RemoveIf(k, v) => {
                        let want = model.slots.get(&idx).is_some_and(|s| s.0 == k && s.1 == v);
                        if want { model.slots.remove(&idx); }
                        prop_assert_eq!(dense.remove_if(k, v), want);
                        prop_assert_eq!(sparse.remove_if(k, v), want);
                    }
                }
                prop_assert_eq!(dense.len() as usize, model.slots.len());
                prop_assert_eq!(sparse.len() as usize, model.slots.len());
            }
            let mut want: Vec<(u32, (u32, u32, bool))> = model.slots.into_iter().collect();
            want.sort_by_key(|e| e.0);
            let want: Vec<(u32, u32, bool)> = want.into_iter().map(|(_, s)| s).collect();
            prop_assert_eq!(dense.entries(), want.clone());
            prop_assert_eq!(sparse.entries(), want);
        }

        /// LRU against a plain recency list.
        #[test]
        fn lru_matches_a_recency_list(cap in 1usize..6, ops in proptest::collection::vec((any::<bool>(), 0u32..12, 0u32..4), 1..200)) {
            let mut lru = Lru::new(cap);
            let mut list: VecDeque<(u32, u32)> = VecDeque::new(); // front = most recent
            for (is_put, k, v) in ops {
                if is_put {
                    let want = if let Some(p) = list.iter().position(|e| e.0 == k) {
                        list.remove(p);
                        None
                    } else if list.len() >= cap { list.pop_back() } else { None };
                    list.push_front((k, v));
                    prop_assert_eq!(lru.put(k, v), want);
                } else {
                    let want = list.iter().position(|e| e.0 == k).map(|p| { let e = list.remove(p).unwrap(); list.push_front(e); e.1 });
                    prop_assert_eq!(lru.get(k), want);
                }
                prop_assert_eq!(lru.len(), list.len());
            }
        }
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let mut c = DirectMapped::new(0, 0);
        assert_eq!(c.put(1, 2), Err(()));
        assert!(!c.put_if_free(1, 2));
        assert_eq!(c.get(1), None);
        assert_eq!(Lru::new(0).put(1, 2), None);
    }

    #[test]
    fn access_bit_follows_the_paper() {
        let mut c = DirectMapped::new(1, 0);
        c.put(10, 100).unwrap();
        assert!(!c.slot_bit(10));
        assert_eq!(c.get(10), Some(100));
        assert!(c.slot_bit(10), "a hit sets the bit");
        assert_eq!(c.get(11), None);
        assert!(!c.slot_bit(10), "a lookup of another key landing on the slot clears it");
    }
}
