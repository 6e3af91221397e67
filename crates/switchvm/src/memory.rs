//! Per-EU, per-lane memories and their address translation. Each lane has `entries` 32-bit cells;
//! tenants see only virtual addresses, translated through segment mappings (a power-of-two
//! range at an aligned virtual base, physical = virtual + offset; at most `segments` per lane,
//! the TCAM) and, on the first lane of each EU, direct one-to-one mappings (at most `direct` per
//! lane). Direct takes priority. Every mapping is keyed by the tenant, so an address a tenant has
//! not mapped does not translate — it faults, and never reaches another tenant's cells.

use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub tenant: u32,
    pub vbase: u32,
    pub size: u32,
    pub pbase: u32,
}

/// Who owns each physical cell range (for first-fit allocation and for the isolation checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub start: u32,
    pub len: u32,
    pub tenant: u32,
}

#[derive(Debug, Clone)]
pub struct LaneMemory {
    pub cells: Vec<u32>,
    pub segments: Vec<Segment>,
    pub direct: HashMap<(u32, u32), u32>,
    /// Per tenant, a catch-all cell every otherwise-unmapped address of the tenant reaches (the
    /// KVS cache's "null segment": one TCAM entry matching the tenant with every address bit
    /// wildcarded, whose action yields one fixed cell).
    pub null: HashMap<u32, u32>,
    pub max_segments: usize,
    pub max_direct: usize,
    /// Allocated physical extents, sorted by start.
    pub extents: Vec<Extent>,
}

impl LaneMemory {
    pub fn new(entries: usize, max_segments: usize, max_direct: usize) -> Self {
        LaneMemory { cells: vec![0; entries], segments: Vec::new(), direct: HashMap::new(), null: HashMap::new(), max_segments, max_direct, extents: Vec::new() }
    }

    /// Translate a tenant's virtual address (direct first, then segments).
    #[inline]
    pub fn translate(&self, tenant: u32, vaddr: u32) -> Option<u32> {
        if !self.direct.is_empty() {
            if let Some(&p) = self.direct.get(&(tenant, vaddr)) {
                return Some(p);
            }
        }
        self.segments
            .iter()
            .find(|s| s.tenant == tenant && vaddr & !(s.size - 1) == s.vbase)
            .map(|s| s.pbase + (vaddr - s.vbase))
            .or_else(|| if self.null.is_empty() { None } else { self.null.get(&tenant).copied() })
    }

    /// TCAM entries in use (segments and null mappings share the lane's budget).
    pub fn tcam_entries(&self) -> usize {
        self.segments.len() + self.null.len()
    }

    /// First-fit: the lowest physical start with `len` free cells.
    pub fn first_fit(&self, len: u32) -> Option<u32> {
        let mut at = 0u32;
        for e in &self.extents {
            if e.start >= at && e.start - at >= len {
                return Some(at);
            }
            at = at.max(e.start + e.len);
        }
        ((self.cells.len() as u64).saturating_sub(at as u64) >= len as u64).then_some(at)
    }

    pub fn claim(&mut self, start: u32, len: u32, tenant: u32) {
        let pos = self.extents.partition_point(|e| e.start < start);
        self.extents.insert(pos, Extent { start, len, tenant });
        for c in &mut self.cells[start as usize..(start + len) as usize] {
            *c = 0;
        }
    }

    pub fn release_tenant(&mut self, tenant: u32) {
        self.extents.retain(|e| e.tenant != tenant);
        self.segments.retain(|s| s.tenant != tenant);
        self.direct.retain(|(t, _), _| *t != tenant);
        self.null.remove(&tenant);
    }

    /// The owner of a physical cell.
    pub fn owner(&self, paddr: u32) -> Option<u32> {
        self.extents.iter().find(|e| paddr >= e.start && paddr < e.start + e.len).map(|e| e.tenant)
    }

    /// Whether one of the tenant's segments already covers part of [vbase, vbase + size). Direct
    /// mappings may sit inside a segment on purpose (they take priority: the KVS cache's "null
    /// segment" catches every address without a direct mapping).
    pub fn segment_overlaps(&self, tenant: u32, vbase: u32, size: u32) -> bool {
        let end = vbase as u64 + size as u64;
        self.segments.iter().any(|s| s.tenant == tenant && (s.vbase as u64) < end && (vbase as u64) < s.vbase as u64 + s.size as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_translate_with_an_offset_and_direct_wins() {
        let mut m = LaneMemory::new(64, 4, 8);
        // The paper's example: virtual 0x4..0x7 at physical 0x2.
        m.segments.push(Segment { tenant: 1, vbase: 4, size: 4, pbase: 2 });
        assert_eq!(m.translate(1, 6), Some(4));
        assert_eq!(m.translate(1, 8), None);
        assert_eq!(m.translate(2, 6), None, "another tenant's mapping never translates");
        m.direct.insert((1, 6), 40);
        assert_eq!(m.translate(1, 6), Some(40));
    }

    #[test]
    fn first_fit_takes_the_lowest_hole() {
        let mut m = LaneMemory::new(16, 4, 0);
        m.claim(0, 4, 1);
        m.claim(8, 4, 2);
        assert_eq!(m.first_fit(4), Some(4));
        assert_eq!(m.first_fit(5), None);
        m.claim(4, 4, 3);
        assert_eq!(m.first_fit(4), Some(12));
        m.release_tenant(2);
        assert_eq!(m.first_fit(8), Some(8));
    }
}
