//! Match-action tables with a declared key layout: exact (hash map), ternary (value/mask/
//! priority, first match in priority order) and LPM (longest prefix on one field, per-length
//! hash maps). What they share — name, layout, capacity, default action, hit/miss counters,
//! errors and resource accounting — is one [`TableCore`] each kind derefs to.
//!
//! Keys are `u128`: wide enough for a 5-tuple (104 bits), an IPv6 address, or a 128-bit
//! hashed object key, while staying `Copy`, one compare and one cheap hash, so lookups never
//! allocate. Wider match keys (e.g. OrbitCache's 16-byte key plus flags) are hashed or split
//! first, which is what the hardware does too.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::resources::{ResourceEntry, ResourceKind, ResourceReport, Resources};
use super::StateError;

/// A packed match key; the first declared field is the most significant.
pub type Key = u128;

/// Widest key layout.
pub const MAX_KEY_BITS: u32 = 128;

fn low_mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

/// One named field of a key layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyField {
    pub name: Arc<str>,
    pub bits: u32,
}

/// The fields of a table key, in order, packed most-significant-first into a `Key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    fields: Vec<KeyField>,
    total_bits: u32,
}

impl KeyLayout {
    /// `fields` as `(name, width_bits)`; widths 1..=128, at most 128 bits in total.
    pub fn new(fields: &[(&str, u32)]) -> Result<Self, StateError> {
        let mut total_bits = 0u32;
        let mut out = Vec::with_capacity(fields.len());
        for &(name, bits) in fields {
            if bits == 0 || bits > MAX_KEY_BITS {
                return Err(StateError::ZeroWidthField { field: name.into() });
            }
            total_bits = total_bits.saturating_add(bits);
            out.push(KeyField {
                name: name.into(),
                bits,
            });
        }
        if total_bits > MAX_KEY_BITS {
            return Err(StateError::LayoutTooWide {
                bits: total_bits,
                max: MAX_KEY_BITS,
            });
        }
        Ok(Self {
            fields: out,
            total_bits,
        })
    }

    pub fn fields(&self) -> &[KeyField] {
        &self.fields
    }
    pub fn total_bits(&self) -> u32 {
        self.total_bits
    }

    /// Whether `key` has no bits above the layout's width.
    pub fn fits(&self, key: Key) -> bool {
        key & !low_mask(self.total_bits) == 0
    }

    /// Packs one value per field; a value wider than its field is an error naming the field.
    pub fn pack(&self, values: &[u128]) -> Result<Key, StateError> {
        if values.len() != self.fields.len() {
            return Err(StateError::FieldCountMismatch {
                expected: self.fields.len(),
                got: values.len(),
            });
        }
        let mut key: Key = 0;
        for (field, &value) in self.fields.iter().zip(values) {
            if value & !low_mask(field.bits) != 0 {
                return Err(StateError::FieldValueTooWide {
                    field: field.name.clone(),
                    value,
                    bits: field.bits,
                });
            }
            // Shifting a u128 by 128 overflows; a 128-bit field is the whole key.
            key = if field.bits >= 128 {
                value
            } else {
                (key << field.bits) | value
            };
        }
        Ok(key)
    }

    /// The value of field `index` inside `key` (None if there is no such field).
    pub fn field(&self, key: Key, index: usize) -> Option<u128> {
        let field = self.fields.get(index)?;
        let below: u32 = self.fields[index + 1..].iter().map(|f| f.bits).sum();
        Some((key >> below) & low_mask(field.bits))
    }
}

/// Deterministic, fast hasher for `Key`s (std's default is randomly seeded and slower); the
/// multiply-xorshift mix spreads both halves into the low and high bits hashbrown uses.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u64(&mut self, v: u64) {
        let mut h = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 32;
        h = h.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        h ^= h >> 29;
        self.0 = h;
    }
    fn write_u128(&mut self, v: u128) {
        self.write_u64(
            v as u64
                ^ ((v >> 64) as u64)
                    .rotate_left(31)
                    .wrapping_mul(0xA24B_AED4_963E_E407),
        );
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type KeyMap<A> = HashMap<Key, A, BuildHasherDefault<KeyHasher>>;

fn key_map<A>(capacity: usize) -> KeyMap<A> {
    KeyMap::with_capacity_and_hasher(capacity, Default::default())
}

/// Hit and miss counts of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableCounters {
    pub hits: u64,
    pub misses: u64,
}

#[derive(Debug, Clone, Default)]
struct Counters {
    hits: Cell<u64>,
    misses: Cell<u64>,
}

impl Counters {
    fn count<T>(&self, result: Option<T>) -> Option<T> {
        let cell = if result.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        cell.set(cell.get() + 1);
        result
    }
    fn get(&self) -> TableCounters {
        TableCounters {
            hits: self.hits.get(),
            misses: self.misses.get(),
        }
    }
    fn reset(&self) {
        self.hits.set(0);
        self.misses.set(0);
    }
}

/// What every table kind shares: name, key layout, capacity, default action, declared
/// action-data width, hit/miss counters, and the errors and resource entry built from them.
/// Each kind (exact, ternary, LPM) holds one and derefs to it, so these accessors exist once;
/// the kinds add only how they store and match entries.
#[derive(Debug, Clone)]
pub struct TableCore<A> {
    name: Arc<str>,
    layout: KeyLayout,
    capacity: usize,
    default_action: A,
    action_bits: u32,
    counters: Counters,
    kind: ResourceKind,
}

impl<A> TableCore<A> {
    fn new(
        name: &str,
        layout: KeyLayout,
        capacity: usize,
        default_action: A,
        kind: ResourceKind,
    ) -> Result<Self, StateError> {
        let name: Arc<str> = name.into();
        if capacity == 0 {
            return Err(StateError::ZeroSize { name });
        }
        Ok(TableCore {
            name,
            layout,
            capacity,
            default_action,
            action_bits: (std::mem::size_of::<A>() * 8) as u32,
            counters: Counters::default(),
            kind,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    pub fn counters(&self) -> TableCounters {
        self.counters.get()
    }
    pub fn reset_counters(&self) {
        self.counters.reset()
    }
    pub fn default_action(&self) -> &A {
        &self.default_action
    }
    pub fn set_default_action(&mut self, action: A) {
        self.default_action = action;
    }

    /// A data-plane result: counted as a hit or miss.
    #[inline]
    fn count<'a>(&self, hit: Option<&'a A>) -> Option<&'a A> {
        self.counters.count(hit)
    }
    /// A data-plane apply: the hit's action or the default action.
    #[inline]
    fn or_default<'a>(&'a self, hit: Option<&'a A>) -> &'a A {
        hit.unwrap_or(&self.default_action)
    }

    fn check_key(&self, key: Key) -> Result<(), StateError> {
        if self.layout.fits(key) {
            Ok(())
        } else {
            Err(StateError::KeyTooWide {
                name: self.name.clone(),
                key,
                layout_bits: self.layout.total_bits,
            })
        }
    }
    /// `TableFull` when `len` entries already fill the table.
    fn check_room(&self, len: usize) -> Result<(), StateError> {
        if len >= self.capacity {
            Err(StateError::TableFull {
                name: self.name.clone(),
                capacity: self.capacity,
            })
        } else {
            Ok(())
        }
    }
    fn duplicate(&self) -> StateError {
        StateError::DuplicateEntry {
            name: self.name.clone(),
        }
    }
    fn not_found(&self) -> StateError {
        StateError::EntryNotFound {
            name: self.name.clone(),
        }
    }

    fn resources(&self) -> ResourceReport {
        let mut report = ResourceReport::new(&self.name);
        report.push(ResourceEntry::new(
            &self.name,
            self.kind,
            self.capacity as u64,
            self.layout.total_bits,
            self.action_bits,
        ));
        report
    }
}

/// `Deref` to the [`TableCore`], `Resources`, and `with_action_bits` for a table kind.
macro_rules! table_kind {
    ($table:ident) => {
        impl<A> std::ops::Deref for $table<A> {
            type Target = TableCore<A>;
            fn deref(&self) -> &TableCore<A> {
                &self.core
            }
        }
        impl<A> std::ops::DerefMut for $table<A> {
            fn deref_mut(&mut self) -> &mut TableCore<A> {
                &mut self.core
            }
        }
        impl<A> Resources for $table<A> {
            fn resources(&self) -> ResourceReport {
                self.core.resources()
            }
        }
        impl<A> $table<A> {
            /// Declares the action-data width for resource accounting (default:
            /// `size_of::<A>()` bits, an overestimate when `A` carries padding or an enum tag).
            pub fn with_action_bits(mut self, bits: u32) -> Self {
                self.core.action_bits = bits;
                self
            }
        }
    };
}

table_kind!(ExactTable);
table_kind!(TernaryTable);
table_kind!(LpmTable);

// ---------------------------------------------------------------------------------------------

/// Exact-match table of at most `capacity` entries.
#[derive(Debug, Clone)]
pub struct ExactTable<A> {
    core: TableCore<A>,
    entries: KeyMap<A>,
}

impl<A: Copy> ExactTable<A> {
    /// Memory for all `capacity` entries is reserved here, so inserts up to capacity never
    /// rehash.
    pub fn new(
        name: &str,
        layout: KeyLayout,
        capacity: usize,
        default_action: A,
    ) -> Result<Self, StateError> {
        Ok(Self {
            core: TableCore::new(name, layout, capacity, default_action, ResourceKind::Exact)?,
            entries: key_map(capacity),
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds an entry; an existing key is `DuplicateEntry`, a full table `TableFull`.
    pub fn insert(&mut self, key: Key, action: A) -> Result<(), StateError> {
        self.core.check_key(key)?;
        if self.entries.contains_key(&key) {
            return Err(self.core.duplicate());
        }
        self.core.check_room(self.entries.len())?;
        self.entries.insert(key, action);
        Ok(())
    }

    /// Replaces an existing entry's action, returning the old one.
    pub fn modify(&mut self, key: Key, action: A) -> Result<A, StateError> {
        match self.entries.get_mut(&key) {
            Some(slot) => Ok(std::mem::replace(slot, action)),
            None => Err(self.core.not_found()),
        }
    }

    pub fn delete(&mut self, key: Key) -> Result<A, StateError> {
        self.entries.remove(&key).ok_or_else(|| self.core.not_found())
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Data-plane lookup: the entry's action, counted as a hit or miss.
    pub fn lookup(&self, key: Key) -> Option<&A> {
        self.core.count(self.entries.get(&key))
    }

    /// Data-plane apply: the entry's action or, on a miss, the default action.
    pub fn apply(&self, key: Key) -> &A {
        self.core.or_default(self.lookup(key))
    }

    /// Control-plane read; not counted.
    pub fn get(&self, key: Key) -> Option<&A> {
        self.entries.get(&key)
    }

    /// All entries sorted by key, for deterministic dumps.
    pub fn entries_sorted(&self) -> Vec<(Key, A)> {
        let mut all: Vec<(Key, A)> = self.entries.iter().map(|(k, a)| (*k, *a)).collect();
        all.sort_unstable_by_key(|(k, _)| *k);
        all
    }
}

// ---------------------------------------------------------------------------------------------

/// Identifies a ternary entry for modify/delete; handles grow with insertion order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryHandle(pub u64);

/// Entries sharing one mask: masked value -> entries with that value, best first.
#[derive(Debug, Clone)]
struct MaskGroup<A> {
    mask: Key,
    max_priority: u32,
    by_value: KeyMap<Vec<TernarySlot<A>>>,
}

#[derive(Debug, Clone, Copy)]
struct TernarySlot<A> {
    priority: u32,
    handle: EntryHandle,
    action: A,
}

#[derive(Debug, Clone)]
struct TernaryEntry<A> {
    value: Key,
    mask: Key,
    priority: u32,
    handle: EntryHandle,
    action: A,
}

/// Ternary table. A key matches an entry when `key & mask == value & mask`. Among matching
/// entries the one with the **highest `priority` number** wins (P4Runtime's convention);
/// among equal priorities the **earliest inserted** wins (a modify keeps an entry's place).
/// Lookups use tuple-space search: one hash map per distinct mask, probed in order of the
/// group's best priority and stopped once no remaining group can beat the match found, so the
/// cost grows with the number of distinct masks, not entries.
#[derive(Debug, Clone)]
pub struct TernaryTable<A> {
    core: TableCore<A>,
    entries: Vec<TernaryEntry<A>>,
    /// Mask groups sorted by `max_priority`, highest first.
    groups: Vec<MaskGroup<A>>,
    next_handle: u64,
}

impl<A: Copy> TernaryTable<A> {
    pub fn new(
        name: &str,
        layout: KeyLayout,
        capacity: usize,
        default_action: A,
    ) -> Result<Self, StateError> {
        Ok(Self {
            core: TableCore::new(name, layout, capacity, default_action, ResourceKind::Ternary)?,
            entries: Vec::with_capacity(capacity),
            groups: Vec::new(),
            next_handle: 0,
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds an entry (`value` is stored masked). The same (value, mask, priority) twice is
    /// `DuplicateEntry`; a full table is `TableFull`.
    pub fn insert(
        &mut self,
        value: Key,
        mask: Key,
        priority: u32,
        action: A,
    ) -> Result<EntryHandle, StateError> {
        self.core.check_key(value)?;
        self.core.check_key(mask)?;
        let value = value & mask;
        if self.find(value, mask, priority).is_some() {
            return Err(self.core.duplicate());
        }
        self.core.check_room(self.entries.len())?;
        let handle = EntryHandle(self.next_handle);
        self.next_handle += 1;
        // After every entry of priority >= ours: the newest handle goes last among its ties.
        let at = self.entries.partition_point(|e| e.priority >= priority);
        self.entries.insert(
            at,
            TernaryEntry {
                value,
                mask,
                priority,
                handle,
                action,
            },
        );
        let group = match self.groups.iter().position(|g| g.mask == mask) {
            Some(g) => g,
            None => {
                self.groups.push(MaskGroup {
                    mask,
                    max_priority: priority,
                    by_value: key_map(0),
                });
                self.groups.len() - 1
            }
        };
        let g = &mut self.groups[group];
        g.max_priority = g.max_priority.max(priority);
        let slots = g.by_value.entry(value).or_default();
        let at = slots.partition_point(|s| s.priority >= priority);
        slots.insert(
            at,
            TernarySlot {
                priority,
                handle,
                action,
            },
        );
        self.sort_groups();
        Ok(handle)
    }

    fn sort_groups(&mut self) {
        // Stable, so equal-priority groups keep a deterministic order.
        self.groups
            .sort_by_key(|g| std::cmp::Reverse(g.max_priority));
    }

    fn group_slot(&mut self, mask: Key, value: Key) -> Option<(usize, &mut Vec<TernarySlot<A>>)> {
        let g = self.groups.iter().position(|g| g.mask == mask)?;
        Some((g, self.groups[g].by_value.get_mut(&value)?))
    }

    /// The handle of the entry with exactly this value (masked), mask and priority.
    pub fn find(&self, value: Key, mask: Key, priority: u32) -> Option<EntryHandle> {
        let value = value & mask;
        self.entries
            .iter()
            .find(|e| e.value == value && e.mask == mask && e.priority == priority)
            .map(|e| e.handle)
    }

    fn position(&self, handle: EntryHandle) -> Result<usize, StateError> {
        self.entries
            .iter()
            .position(|e| e.handle == handle)
            .ok_or_else(|| self.core.not_found())
    }

    pub fn modify(&mut self, handle: EntryHandle, action: A) -> Result<A, StateError> {
        let at = self.position(handle)?;
        let (mask, value) = (self.entries[at].mask, self.entries[at].value);
        if let Some((_, slots)) = self.group_slot(mask, value) {
            for slot in slots.iter_mut().filter(|s| s.handle == handle) {
                slot.action = action;
            }
        }
        Ok(std::mem::replace(&mut self.entries[at].action, action))
    }

    pub fn delete(&mut self, handle: EntryHandle) -> Result<A, StateError> {
        let at = self.position(handle)?;
        let entry = self.entries.remove(at);
        if let Some((g, slots)) = self.group_slot(entry.mask, entry.value) {
            slots.retain(|s| s.handle != handle);
            let group = &mut self.groups[g];
            if group
                .by_value
                .get(&entry.value)
                .is_some_and(|s| s.is_empty())
            {
                group.by_value.remove(&entry.value);
            }
            if group.by_value.is_empty() {
                self.groups.remove(g);
            } else {
                group.max_priority = group
                    .by_value
                    .values()
                    .map(|s| s[0].priority)
                    .max()
                    .unwrap_or(0);
                self.sort_groups();
            }
        }
        Ok(entry.action)
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.groups.clear();
    }

    /// The winning slot for `key`, not counted.
    fn best(&self, key: Key) -> Option<&TernarySlot<A>> {
        let mut best: Option<&TernarySlot<A>> = None;
        for g in &self.groups {
            if best.is_some_and(|b| g.max_priority < b.priority) {
                break;
            }
            if let Some(slot) = g.by_value.get(&(key & g.mask)).and_then(|s| s.first()) {
                let better = match best {
                    None => true,
                    Some(b) => {
                        (slot.priority, std::cmp::Reverse(slot.handle))
                            > (b.priority, std::cmp::Reverse(b.handle))
                    }
                };
                if better {
                    best = Some(slot);
                }
            }
        }
        best
    }

    /// Data-plane lookup: the winning entry's action, counted.
    pub fn lookup(&self, key: Key) -> Option<&A> {
        let hit = if self.core.layout.fits(key) {
            self.best(key).map(|s| &s.action)
        } else {
            None
        };
        self.core.count(hit)
    }

    pub fn apply(&self, key: Key) -> &A {
        self.core.or_default(self.lookup(key))
    }

    /// Entries in match order: (value, mask, priority, handle, action).
    pub fn entries(&self) -> impl Iterator<Item = (Key, Key, u32, EntryHandle, &A)> {
        self.entries
            .iter()
            .map(|e| (e.value, e.mask, e.priority, e.handle, &e.action))
    }
}

// ---------------------------------------------------------------------------------------------

/// Prefix lengths from this many bits up get a presence bitmap of 2^FILTER_BITS bits (8 KiB).
const FILTER_BITS: u32 = 16;
const FILTER_WORDS: usize = (1 << FILTER_BITS) / 64;

/// Longest-prefix-match table on one field of up to 128 bits. One hash map per prefix length,
/// probed from the longest non-empty length down, so a lookup costs at most one probe per
/// distinct length in use (≤ 33 for IPv4) whatever the number of routes; a bitmap over the
/// top 16 address bits per length (lengths ≥ 16) skips most lengths without a probe.
#[derive(Debug, Clone)]
pub struct LpmTable<A> {
    core: TableCore<A>,
    key_bits: u32,
    len: usize,
    by_length: Vec<KeyMap<A>>,
    /// Non-empty prefix lengths, longest first.
    lengths_in_use: Vec<u32>,
    /// Per length >= FILTER_BITS: a bitmap over the top FILTER_BITS bits of its prefixes, so
    /// most lengths are skipped with one bit test instead of a hash probe. Deletes leave
    /// bits set (a stale bit only costs a probe) until they outnumber the routes, then the
    /// bitmap is rebuilt.
    filters: Vec<Vec<u64>>,
    stale_deletes: Vec<usize>,
}

impl<A: Copy> LpmTable<A> {
    /// `layout` must have exactly one field (the one matched by prefix).
    pub fn new(
        name: &str,
        layout: KeyLayout,
        capacity: usize,
        default_action: A,
    ) -> Result<Self, StateError> {
        let core = TableCore::new(name, layout, capacity, default_action, ResourceKind::Lpm)?;
        if core.layout.fields.len() != 1 {
            return Err(StateError::LpmNeedsOneField {
                name: core.name,
                fields: core.layout.fields.len(),
            });
        }
        let key_bits = core.layout.total_bits;
        Ok(Self {
            core,
            key_bits,
            len: 0,
            by_length: (0..=key_bits).map(|_| key_map(0)).collect(),
            lengths_in_use: Vec::new(),
            filters: vec![Vec::new(); key_bits as usize + 1],
            stale_deletes: vec![0; key_bits as usize + 1],
        })
    }

    pub fn key_bits(&self) -> u32 {
        self.key_bits
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn filtered(&self, prefix_len: u32) -> bool {
        prefix_len >= FILTER_BITS
    }

    /// Index of `key`'s top FILTER_BITS bits (0 for fields narrower than that).
    fn filter_bit(&self, key: Key) -> usize {
        if self.key_bits < FILTER_BITS {
            0
        } else {
            ((key >> (self.key_bits - FILTER_BITS)) as usize) & ((1 << FILTER_BITS) - 1)
        }
    }

    /// Mask of the top `prefix_len` bits of the field.
    fn prefix_mask(&self, prefix_len: u32) -> Key {
        if prefix_len == 0 {
            0
        } else {
            low_mask(self.key_bits) & !low_mask(self.key_bits - prefix_len)
        }
    }

    fn check_prefix(&self, prefix: Key, prefix_len: u32) -> Result<(), StateError> {
        if prefix_len > self.key_bits {
            return Err(StateError::BadPrefixLength {
                name: self.name.clone(),
                prefix_len,
                key_bits: self.key_bits,
            });
        }
        // Bits past the prefix length are rejected rather than dropped, as `ip route` does:
        // 10.0.0.1/8 is almost always a typo for 10.0.0.0/8 or 10.0.0.1/32.
        if prefix & !self.prefix_mask(prefix_len) != 0 {
            return Err(StateError::FieldValueTooWide {
                field: self.layout.fields[0].name.clone(),
                value: prefix,
                bits: prefix_len,
            });
        }
        Ok(())
    }

    /// Adds a route `prefix/prefix_len`; the same prefix twice is `DuplicateEntry`.
    pub fn insert(&mut self, prefix: Key, prefix_len: u32, action: A) -> Result<(), StateError> {
        self.check_prefix(prefix, prefix_len)?;
        let map = &self.by_length[prefix_len as usize];
        if map.contains_key(&prefix) {
            return Err(self.core.duplicate());
        }
        self.core.check_room(self.len)?;
        let map = &mut self.by_length[prefix_len as usize];
        let was_empty = map.is_empty();
        map.insert(prefix, action);
        self.len += 1;
        if self.filtered(prefix_len) {
            let bit = self.filter_bit(prefix);
            let filter = &mut self.filters[prefix_len as usize];
            if filter.is_empty() {
                *filter = vec![0; FILTER_WORDS];
            }
            filter[bit / 64] |= 1 << (bit % 64);
        }
        if was_empty {
            let at = self.lengths_in_use.partition_point(|&l| l > prefix_len);
            self.lengths_in_use.insert(at, prefix_len);
        }
        Ok(())
    }

    pub fn modify(&mut self, prefix: Key, prefix_len: u32, action: A) -> Result<A, StateError> {
        self.check_prefix(prefix, prefix_len)?;
        match self.by_length[prefix_len as usize].get_mut(&prefix) {
            Some(slot) => Ok(std::mem::replace(slot, action)),
            None => Err(self.core.not_found()),
        }
    }

    pub fn delete(&mut self, prefix: Key, prefix_len: u32) -> Result<A, StateError> {
        self.check_prefix(prefix, prefix_len)?;
        let map = &mut self.by_length[prefix_len as usize];
        let Some(action) = map.remove(&prefix) else {
            return Err(self.core.not_found());
        };
        self.len -= 1;
        let l = prefix_len as usize;
        if map.is_empty() {
            self.lengths_in_use.retain(|&l| l != prefix_len);
            self.filters[l] = Vec::new();
            self.stale_deletes[l] = 0;
        } else if self.filtered(prefix_len) {
            self.stale_deletes[l] += 1;
            if self.stale_deletes[l] > self.by_length[l].len() {
                self.stale_deletes[l] = 0;
                let mut filter = std::mem::take(&mut self.filters[l]);
                filter.fill(0);
                for &p in self.by_length[l].keys() {
                    let bit = self.filter_bit(p);
                    filter[bit / 64] |= 1 << (bit % 64);
                }
                self.filters[l] = filter;
            }
        }
        Ok(action)
    }

    pub fn clear(&mut self) {
        for map in &mut self.by_length {
            map.clear();
        }
        self.lengths_in_use.clear();
        self.filters.iter_mut().for_each(|f| *f = Vec::new());
        self.stale_deletes.fill(0);
        self.len = 0;
    }

    /// Control-plane read of one exact route; not counted.
    pub fn get(&self, prefix: Key, prefix_len: u32) -> Option<&A> {
        self.by_length.get(prefix_len as usize)?.get(&prefix)
    }

    /// The action and prefix length of the longest matching prefix, not counted.
    pub fn longest_match(&self, addr: Key) -> Option<(u32, &A)> {
        if !self.layout.fits(addr) {
            return None;
        }
        let bit = self.filter_bit(addr);
        for &len in &self.lengths_in_use {
            if self.filtered(len) && self.filters[len as usize][bit / 64] & (1 << (bit % 64)) == 0 {
                continue;
            }
            if let Some(action) = self.by_length[len as usize].get(&(addr & self.prefix_mask(len)))
            {
                return Some((len, action));
            }
        }
        None
    }

    /// Data-plane lookup: the longest matching prefix's action, counted.
    pub fn lookup(&self, addr: Key) -> Option<&A> {
        self.core.count(self.longest_match(addr).map(|(_, a)| a))
    }

    pub fn apply(&self, addr: Key) -> &A {
        self.core.or_default(self.lookup(addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ipv4(a: u8, b: u8, c: u8, d: u8) -> Key {
        u32::from_be_bytes([a, b, c, d]) as Key
    }

    fn five_tuple() -> KeyLayout {
        KeyLayout::new(&[
            ("src", 32),
            ("dst", 32),
            ("sport", 16),
            ("dport", 16),
            ("proto", 8),
        ])
        .unwrap()
    }

    #[test]
    fn key_layout_packs_msb_first_and_checks_widths() {
        let l = KeyLayout::new(&[("a", 8), ("b", 4), ("c", 16)]).unwrap();
        assert_eq!(l.total_bits(), 28);
        let k = l.pack(&[0xab, 0xc, 0x1234]).unwrap();
        assert_eq!(k, 0xabc1234);
        assert_eq!(l.field(k, 0), Some(0xab));
        assert_eq!(l.field(k, 1), Some(0xc));
        assert_eq!(l.field(k, 2), Some(0x1234));
        assert_eq!(l.field(k, 3), None);
        let err = l.pack(&[0xab, 0x10, 0]).unwrap_err();
        assert!(err.to_string().contains("`b`"), "{err}");
        assert!(matches!(
            l.pack(&[1, 2]),
            Err(StateError::FieldCountMismatch { .. })
        ));
        assert!(matches!(
            KeyLayout::new(&[("x", 100), ("y", 29)]),
            Err(StateError::LayoutTooWide { bits: 129, .. })
        ));
        assert!(KeyLayout::new(&[("z", 0)]).is_err());
        let full = KeyLayout::new(&[("v6", 128)]).unwrap();
        assert_eq!(full.pack(&[u128::MAX]).unwrap(), u128::MAX);
        assert_eq!(five_tuple().total_bits(), 104);
    }

    /// What the three kinds share through `TableCore` behaves the same in each: zero capacity
    /// refused, a full table refused with its name, the default action on a miss (and a new one
    /// once set), hit/miss counts, a resource entry of the kind's type and declared widths.
    #[test]
    fn every_kind_shares_the_core() {
        use crate::state::resources::ResourceKind;
        let one = || KeyLayout::new(&[("dst", 32)]).unwrap();
        assert!(matches!(ExactTable::new("e", one(), 0, 0u16), Err(StateError::ZeroSize { .. })));
        assert!(matches!(TernaryTable::new("t", one(), 0, 0u16), Err(StateError::ZeroSize { .. })));
        assert!(matches!(LpmTable::new("l", one(), 0, 0u16), Err(StateError::ZeroSize { .. })));
        let mut e = ExactTable::new("e", one(), 1, 7u16).unwrap().with_action_bits(5);
        let mut t = TernaryTable::new("t", one(), 1, 7u16).unwrap().with_action_bits(5);
        let mut l = LpmTable::new("l", one(), 1, 7u16).unwrap().with_action_bits(5);
        e.insert(1, 1).unwrap();
        t.insert(1, u32::MAX as Key, 0, 1).unwrap();
        l.insert(1, 32, 1).unwrap();
        let full = |r: Result<(), StateError>, name: &str| match r {
            Err(StateError::TableFull { name: n, capacity: 1 }) => assert_eq!(&*n, name),
            other => panic!("{name}: {other:?}"),
        };
        full(e.insert(2, 2), "e");
        full(t.insert(2, u32::MAX as Key, 0, 2).map(|_| ()), "t");
        full(l.insert(2, 32, 2), "l");
        e.set_default_action(9);
        t.set_default_action(9);
        l.set_default_action(9);
        for (name, hit, miss, counters, report) in [
            ("e", *e.apply(1), *e.apply(3), e.counters(), e.resources()),
            ("t", *t.apply(1), *t.apply(3), t.counters(), t.resources()),
            ("l", *l.apply(1), *l.apply(3), l.counters(), l.resources()),
        ] {
            assert_eq!((hit, miss), (1, 9), "{name}");
            assert_eq!(counters, TableCounters { hits: 1, misses: 1 }, "{name}");
            let r = &report.entries()[0];
            assert_eq!((r.name.as_str(), r.entries, r.key_bits, r.value_bits), (name, 1, 32, 5));
        }
        assert_eq!(e.resources().entries()[0].kind, ResourceKind::Exact);
        assert_eq!(t.resources().entries()[0].kind, ResourceKind::Ternary);
        assert_eq!(l.resources().entries()[0].kind, ResourceKind::Lpm);
        e.reset_counters();
        assert_eq!(e.counters(), TableCounters::default());
    }

    #[test]
    fn exact_insert_modify_delete_and_counters() {
        let l = five_tuple();
        let mut t = ExactTable::new("flows", l.clone(), 2, 0u16).unwrap();
        let k1 = l
            .pack(&[ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2), 1000, 80, 6])
            .unwrap();
        let k2 = l
            .pack(&[ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2), 1001, 80, 6])
            .unwrap();
        let k3 = l
            .pack(&[ipv4(10, 0, 0, 3), ipv4(10, 0, 0, 2), 1000, 80, 6])
            .unwrap();
        t.insert(k1, 7).unwrap();
        assert!(matches!(
            t.insert(k1, 8),
            Err(StateError::DuplicateEntry { .. })
        ));
        t.insert(k2, 9).unwrap();
        assert!(matches!(
            t.insert(k3, 1),
            Err(StateError::TableFull { capacity: 2, .. })
        ));
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup(k1), Some(&7));
        assert_eq!(t.lookup(k3), None);
        assert_eq!(*t.apply(k3), 0);
        t.set_default_action(5);
        assert_eq!(*t.apply(k3), 5);
        assert_eq!(t.counters(), TableCounters { hits: 1, misses: 3 });
        assert_eq!(t.get(k1), Some(&7));
        assert_eq!(t.counters().hits, 1, "get is not counted");
        assert_eq!(t.modify(k1, 70).unwrap(), 7);
        assert_eq!(t.lookup(k1), Some(&70));
        assert!(matches!(
            t.modify(k3, 1),
            Err(StateError::EntryNotFound { .. })
        ));
        assert_eq!(t.delete(k2).unwrap(), 9);
        assert!(t.delete(k2).is_err());
        t.insert(k3, 3).unwrap();
        assert_eq!(t.entries_sorted(), vec![(k1, 70), (k3, 3)]);
        assert!(matches!(
            t.insert(1u128 << 104, 1),
            Err(StateError::KeyTooWide { .. })
        ));
        t.reset_counters();
        assert_eq!(t.counters(), TableCounters::default());
        let r = t.resources();
        assert_eq!(r.entries()[0].key_bits, 104);
        assert_eq!(r.entries()[0].total_bits, 2 * (104 + 16));
    }

    #[test]
    fn ternary_highest_priority_wins_then_earliest() {
        let l = KeyLayout::new(&[("dst", 32)]).unwrap();
        let mut t = TernaryTable::new("acl", l, 8, 'd').unwrap();
        let any = t.insert(0, 0, 1, 'a').unwrap();
        let net10 = t.insert(ipv4(10, 0, 0, 0), 0xff00_0000, 10, 'b').unwrap();
        let _first_tie = t.insert(ipv4(10, 1, 0, 0), 0xffff_0000, 5, 'c').unwrap();
        let _second_tie = t.insert(ipv4(10, 1, 2, 0), 0xffff_ff00, 5, 'e').unwrap();
        // 10.1.2.3 matches any (1), net10 (10), and both ties (5): priority 10 wins.
        assert_eq!(t.lookup(ipv4(10, 1, 2, 3)), Some(&'b'));
        t.delete(net10).unwrap();
        // Now the two priority-5 entries tie: the one inserted first wins, even though the
        // second is more specific.
        assert_eq!(t.lookup(ipv4(10, 1, 2, 3)), Some(&'c'));
        assert_eq!(t.lookup(ipv4(10, 2, 0, 0)), Some(&'a'));
        t.delete(any).unwrap();
        assert_eq!(t.lookup(ipv4(11, 0, 0, 0)), None);
        assert_eq!(*t.apply(ipv4(11, 0, 0, 0)), 'd');
        assert_eq!(t.counters(), TableCounters { hits: 3, misses: 2 });
        // Value bits outside the mask are ignored; same (value, mask, prio) is a duplicate.
        assert!(matches!(
            t.insert(ipv4(10, 1, 9, 9), 0xffff_0000, 5, 'x'),
            Err(StateError::DuplicateEntry { .. })
        ));
        let h = t.find(ipv4(10, 1, 0, 0), 0xffff_0000, 5).unwrap();
        assert_eq!(t.modify(h, 'm').unwrap(), 'c');
        assert_eq!(
            t.lookup(ipv4(10, 1, 2, 3)),
            Some(&'m'),
            "modify keeps the entry's place"
        );
        assert!(t.delete(EntryHandle(999)).is_err());
    }

    #[test]
    fn ternary_capacity_and_key_width() {
        let l = KeyLayout::new(&[("k", 8)]).unwrap();
        let mut t = TernaryTable::new("t", l, 1, 0u8).unwrap();
        t.insert(1, 0xff, 0, 1).unwrap();
        assert!(matches!(
            t.insert(2, 0xff, 0, 1),
            Err(StateError::TableFull { .. })
        ));
        assert!(matches!(
            t.insert(0, 0x100, 0, 1),
            Err(StateError::KeyTooWide { .. })
        ));
        // A key wider than the layout never matches, even an all-wildcard entry.
        let mut w = TernaryTable::new("w", KeyLayout::new(&[("k", 8)]).unwrap(), 2, 0u8).unwrap();
        w.insert(0, 0, 0, 9).unwrap();
        assert_eq!(w.lookup(0x1ff), None);
        assert_eq!(w.lookup(0xff), Some(&9));
    }

    #[test]
    fn lpm_longest_prefix_wins() {
        let l = KeyLayout::new(&[("dst", 32)]).unwrap();
        let mut t = LpmTable::new("routes", l, 16, 0u32).unwrap();
        t.insert(0, 0, 1).unwrap();
        t.insert(ipv4(10, 0, 0, 0), 8, 2).unwrap();
        t.insert(ipv4(10, 1, 0, 0), 16, 3).unwrap();
        t.insert(ipv4(10, 1, 2, 3), 32, 4).unwrap();
        assert_eq!(t.lookup(ipv4(10, 1, 2, 3)), Some(&4));
        assert_eq!(t.lookup(ipv4(10, 1, 2, 4)), Some(&3));
        assert_eq!(t.lookup(ipv4(10, 2, 0, 0)), Some(&2));
        assert_eq!(t.lookup(ipv4(11, 0, 0, 0)), Some(&1));
        assert_eq!(t.longest_match(ipv4(10, 1, 9, 9)), Some((16, &3)));
        t.delete(ipv4(10, 1, 0, 0), 16).unwrap();
        assert_eq!(t.lookup(ipv4(10, 1, 2, 4)), Some(&2));
        t.delete(0, 0).unwrap();
        assert_eq!(t.lookup(ipv4(11, 0, 0, 0)), None);
        assert_eq!(*t.apply(ipv4(11, 0, 0, 0)), 0);
        assert_eq!(t.counters(), TableCounters { hits: 5, misses: 2 });
        assert_eq!(t.len(), 2);
        assert_eq!(t.modify(ipv4(10, 0, 0, 0), 8, 20).unwrap(), 2);
        assert_eq!(t.get(ipv4(10, 0, 0, 0), 8), Some(&20));
        assert!(matches!(
            t.insert(ipv4(10, 0, 0, 0), 8, 1),
            Err(StateError::DuplicateEntry { .. })
        ));
        assert!(matches!(
            t.insert(ipv4(10, 0, 0, 1), 8, 1),
            Err(StateError::FieldValueTooWide { .. })
        ));
        assert!(matches!(
            t.insert(0, 33, 1),
            Err(StateError::BadPrefixLength { .. })
        ));
        assert!(matches!(
            t.delete(ipv4(12, 0, 0, 0), 8),
            Err(StateError::EntryNotFound { .. })
        ));
        // Addresses wider than the field miss.
        assert_eq!(t.longest_match(1u128 << 32), None);
    }

    #[test]
    fn lpm_capacity_and_layout() {
        let mut t = LpmTable::new("r", KeyLayout::new(&[("dst", 32)]).unwrap(), 1, ()).unwrap();
        t.insert(0, 0, ()).unwrap();
        assert!(matches!(
            t.insert(ipv4(1, 0, 0, 0), 8, ()),
            Err(StateError::TableFull { .. })
        ));
        assert!(matches!(
            LpmTable::new("two", KeyLayout::new(&[("a", 8), ("b", 8)]).unwrap(), 1, ()),
            Err(StateError::LpmNeedsOneField { fields: 2, .. })
        ));
        // IPv6-width field: prefix masks at 128 bits.
        let mut v6 = LpmTable::new("v6", KeyLayout::new(&[("dst", 128)]).unwrap(), 4, 0u8).unwrap();
        v6.insert(0x2001_0db8u128 << 96, 32, 1).unwrap();
        v6.insert(u128::MAX, 128, 2).unwrap();
        assert_eq!(v6.lookup((0x2001_0db8u128 << 96) | 5), Some(&1));
        assert_eq!(v6.lookup(u128::MAX), Some(&2));
        assert_eq!(v6.lookup(u128::MAX - 1), None);
    }

    // --- property tests against brute-force models ---

    fn brute_lpm(routes: &[(u32, u32, u16)], addr: u32) -> Option<u16> {
        routes
            .iter()
            .filter(|(p, len, _)| {
                let mask = if *len == 0 { 0 } else { u32::MAX << (32 - len) };
                addr & mask == *p
            })
            .max_by_key(|(_, len, _)| *len)
            .map(|(_, _, a)| *a)
    }

    proptest! {
        #[test]
        fn lpm_matches_brute_force(
            raw in proptest::collection::vec((any::<u32>(), 0u32..=32, any::<u16>()), 0..200),
            addrs in proptest::collection::vec(any::<u32>(), 1..100),
            delete_per_3 in 0u32..=3,
        ) {
            let mut t = LpmTable::new("p", KeyLayout::new(&[("dst", 32)]).unwrap(), 1000, 0u16).unwrap();
            let mut routes: Vec<(u32, u32, u16)> = Vec::new();
            for (p, len, a) in raw {
                let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                let p = p & mask;
                if routes.iter().any(|r| r.0 == p && r.1 == len) {
                    prop_assert!(t.insert(p as Key, len, a).is_err());
                } else {
                    t.insert(p as Key, len, a).unwrap();
                    routes.push((p, len, a));
                }
            }
            // Delete `delete_per_3` of every three routes (stale filter bits, rebuilds), then compare.
            let mut kept = Vec::new();
            for (i, r) in routes.iter().enumerate() {
                if ((i % 3) as u32) < delete_per_3 {
                    t.delete(r.0 as Key, r.1).unwrap();
                } else {
                    kept.push(*r);
                }
            }
            prop_assert_eq!(t.len(), kept.len());
            // Probe the random addresses and each route's own prefix (+1) so hits are common.
            let probes = addrs.iter().copied().chain(kept.iter().map(|r| r.0 | 1));
            for addr in probes {
                prop_assert_eq!(t.lookup(addr as Key).copied(), brute_lpm(&kept, addr));
            }
        }

        #[test]
        fn ternary_matches_brute_force(
            ops in proptest::collection::vec(
                (0u8..5, 0usize..5, any::<u16>(), 0u32..6, any::<u8>()), 0..300),
        ) {
            const MASKS: [u16; 5] = [0, 0xff00, 0xf0f0, 0xffff, 0x0f0f];
            let mut t = TernaryTable::new("p", KeyLayout::new(&[("k", 16)]).unwrap(), 1000, 0u8).unwrap();
            // Model: (value, mask, priority, handle, action); handles grow with insertion order.
            let mut model: Vec<(u16, u16, u32, EntryHandle, u8)> = Vec::new();
            for (op, mi, v, prio, a) in ops {
                // Few masks and a small value domain so entries overlap and ties happen.
                let m = MASKS[mi];
                let v = v & m & 0x3333;
                match op {
                    0 | 1 => {
                        let r = t.insert(v as Key, m as Key, prio, a);
                        if model.iter().any(|e| e.0 == v && e.1 == m && e.2 == prio) {
                            prop_assert!(r.is_err());
                        } else {
                            model.push((v, m, prio, r.unwrap(), a));
                        }
                    }
                    2 if !model.is_empty() => {
                        let e = model.remove(v as usize % model.len());
                        prop_assert_eq!(t.delete(e.3).unwrap(), e.4);
                    }
                    3 if !model.is_empty() => {
                        let i = v as usize % model.len();
                        prop_assert_eq!(t.modify(model[i].3, a).unwrap(), model[i].4);
                        model[i].4 = a;
                    }
                    _ => {
                        // Probe a random key and one built to hit an entry.
                        let near = model.get(v as usize % model.len().max(1)).map(|e| e.0 | (!e.1 & v));
                        for k in std::iter::once(v ^ prio as u16).chain(near) {
                            let want = model
                                .iter()
                                .filter(|e| k & e.1 == e.0)
                                .min_by_key(|e| (std::cmp::Reverse(e.2), e.3))
                                .map(|e| e.4);
                            prop_assert_eq!(t.lookup(k as Key).copied(), want);
                        }
                    }
                }
                prop_assert_eq!(t.len(), model.len());
            }
        }

        #[test]
        fn exact_matches_hashmap_model(
            ops in proptest::collection::vec((0u8..3, 0u64..64, any::<u32>()), 0..400),
        ) {
            let cap = 32;
            let mut t = ExactTable::new("p", KeyLayout::new(&[("k", 64)]).unwrap(), cap, 0u32).unwrap();
            let mut model: std::collections::HashMap<u64, u32> = Default::default();
            let (mut hits, mut misses) = (0, 0);
            for (op, k, a) in ops {
                match op {
                    0 => {
                        let r = t.insert(k as Key, a);
                        if model.contains_key(&k) {
                            prop_assert!(matches!(r, Err(StateError::DuplicateEntry { .. })), "{:?}", r);
                        } else if model.len() >= cap {
                            prop_assert!(matches!(r, Err(StateError::TableFull { .. })), "{:?}", r);
                        } else {
                            prop_assert!(r.is_ok());
                            model.insert(k, a);
                        }
                    }
                    1 => {
                        prop_assert_eq!(t.delete(k as Key).ok(), model.remove(&k));
                    }
                    _ => {
                        let want = model.get(&k).copied();
                        if want.is_some() { hits += 1 } else { misses += 1 }
                        prop_assert_eq!(t.lookup(k as Key).copied(), want);
                    }
                }
                prop_assert_eq!(t.len(), model.len());
            }
            prop_assert_eq!(t.counters(), TableCounters { hits, misses });
        }
    }
}
