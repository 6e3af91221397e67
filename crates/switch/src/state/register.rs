//! Register arrays: per-index stateful memory of a declared width, read, written and updated
//! atomically per packet like Tofino RegisterActions. Out-of-range indexes are errors that are
//! also counted, because a data-plane program must keep going after one.

use std::cell::Cell;
use std::sync::Arc;

use super::resources::{ResourceEntry, ResourceKind, ResourceReport, Resources};
use super::StateError;

/// Widest register cell supported (Tofino's widest single register is 32 bits, pairs 2x32;
/// 64 lets simulated programs keep timestamps and counters without splitting them).
pub const MAX_REGISTER_WIDTH_BITS: u32 = 64;

fn width_mask(width_bits: u32) -> u64 {
    if width_bits >= 64 {
        u64::MAX
    } else {
        (1u64 << width_bits) - 1
    }
}

fn check_decl(name: &Arc<str>, size: usize, width_bits: u32) -> Result<(), StateError> {
    if size == 0 {
        return Err(StateError::ZeroSize { name: name.clone() });
    }
    if width_bits == 0 || width_bits > MAX_REGISTER_WIDTH_BITS {
        return Err(StateError::BadWidth {
            name: name.clone(),
            width_bits,
            max: MAX_REGISTER_WIDTH_BITS,
        });
    }
    Ok(())
}

/// An array of `size` cells of `width_bits` each. Every value stored is masked to the width,
/// so a program sees the wrap-around a real register of that width would give.
#[derive(Debug, Clone)]
pub struct RegisterArray {
    name: Arc<str>,
    width_bits: u32,
    mask: u64,
    cells: Vec<u64>,
    out_of_range: Cell<u64>,
}

impl RegisterArray {
    /// Declares an array; all cells start at zero.
    pub fn new(name: &str, size: usize, width_bits: u32) -> Result<Self, StateError> {
        let name: Arc<str> = Arc::from(name);
        check_decl(&name, size, width_bits)?;
        Ok(Self {
            name,
            width_bits,
            mask: width_mask(width_bits),
            cells: vec![0; size],
            out_of_range: Cell::new(0),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn size(&self) -> usize {
        self.cells.len()
    }
    pub fn width_bits(&self) -> u32 {
        self.width_bits
    }
    /// How many accesses used an index outside `0..size`.
    pub fn out_of_range_count(&self) -> u64 {
        self.out_of_range.get()
    }

    fn slot(&self, index: u64) -> Result<usize, StateError> {
        if index < self.cells.len() as u64 {
            Ok(index as usize)
        } else {
            self.out_of_range.set(self.out_of_range.get() + 1);
            Err(StateError::IndexOutOfRange {
                name: self.name.clone(),
                index,
                size: self.cells.len() as u64,
            })
        }
    }

    pub fn read(&self, index: u64) -> Result<u64, StateError> {
        Ok(self.cells[self.slot(index)?])
    }

    /// Stores `value` masked to the register width.
    pub fn write(&mut self, index: u64, value: u64) -> Result<(), StateError> {
        let slot = self.slot(index)?;
        self.cells[slot] = value & self.mask;
        Ok(())
    }

    /// Read-modify-write of one cell in one step, as a RegisterAction does: `f` gets the old
    /// value and returns the new value (masked to the width) and the result handed back to
    /// the program (e.g. the old value, or a "was hit" flag).
    pub fn update<R>(
        &mut self,
        index: u64,
        f: impl FnOnce(u64) -> (u64, R),
    ) -> Result<R, StateError> {
        let slot = self.slot(index)?;
        let (new, result) = f(self.cells[slot]);
        self.cells[slot] = new & self.mask;
        Ok(result)
    }

    /// Adds `delta` with wrap-around at the width and returns the new value (a counter).
    pub fn add(&mut self, index: u64, delta: u64) -> Result<u64, StateError> {
        let mask = self.mask;
        self.update(index, |old| {
            let new = old.wrapping_add(delta) & mask;
            (new, new)
        })
    }

    /// Sets every cell to zero (control-plane reset); the out-of-range counter is kept.
    pub fn clear(&mut self) {
        self.cells.fill(0);
    }

    /// All cells, for control-plane reads and dumps.
    pub fn cells(&self) -> &[u64] {
        &self.cells
    }
}

impl Resources for RegisterArray {
    fn resources(&self) -> ResourceReport {
        let mut report = ResourceReport::new(&self.name);
        report.push(ResourceEntry::new(
            &self.name,
            ResourceKind::Register,
            self.cells.len() as u64,
            0,
            self.width_bits,
        ));
        report
    }
}

/// Two registers of the same width under one index, updated together (Tofino's paired
/// registers): e.g. a cached key and its version, or a counter and a timestamp.
#[derive(Debug, Clone)]
pub struct RegisterPairArray {
    name: Arc<str>,
    width_bits: u32,
    mask: u64,
    cells: Vec<(u64, u64)>,
    out_of_range: Cell<u64>,
}

impl RegisterPairArray {
    pub fn new(name: &str, size: usize, width_bits: u32) -> Result<Self, StateError> {
        let name: Arc<str> = Arc::from(name);
        check_decl(&name, size, width_bits)?;
        Ok(Self {
            name,
            width_bits,
            mask: width_mask(width_bits),
            cells: vec![(0, 0); size],
            out_of_range: Cell::new(0),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn size(&self) -> usize {
        self.cells.len()
    }
    pub fn width_bits(&self) -> u32 {
        self.width_bits
    }
    pub fn out_of_range_count(&self) -> u64 {
        self.out_of_range.get()
    }

    fn slot(&self, index: u64) -> Result<usize, StateError> {
        if index < self.cells.len() as u64 {
            Ok(index as usize)
        } else {
            self.out_of_range.set(self.out_of_range.get() + 1);
            Err(StateError::IndexOutOfRange {
                name: self.name.clone(),
                index,
                size: self.cells.len() as u64,
            })
        }
    }

    pub fn read(&self, index: u64) -> Result<(u64, u64), StateError> {
        Ok(self.cells[self.slot(index)?])
    }

    pub fn write(&mut self, index: u64, value: (u64, u64)) -> Result<(), StateError> {
        let slot = self.slot(index)?;
        self.cells[slot] = (value.0 & self.mask, value.1 & self.mask);
        Ok(())
    }

    /// Atomic read-modify-write of both halves; both new halves are masked to the width.
    pub fn update<R>(
        &mut self,
        index: u64,
        f: impl FnOnce((u64, u64)) -> ((u64, u64), R),
    ) -> Result<R, StateError> {
        let slot = self.slot(index)?;
        let (new, result) = f(self.cells[slot]);
        self.cells[slot] = (new.0 & self.mask, new.1 & self.mask);
        Ok(result)
    }

    pub fn clear(&mut self) {
        self.cells.fill((0, 0));
    }
}

impl Resources for RegisterPairArray {
    fn resources(&self) -> ResourceReport {
        let mut report = ResourceReport::new(&self.name);
        report.push(ResourceEntry::new(
            &self.name,
            ResourceKind::Register,
            self.cells.len() as u64,
            0,
            2 * self.width_bits,
        ));
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_masked_to_the_width() {
        let mut r = RegisterArray::new("r", 4, 8).unwrap();
        r.write(0, 0x1ff).unwrap();
        assert_eq!(r.read(0).unwrap(), 0xff);
        let mut w = RegisterArray::new("w", 1, 64).unwrap();
        w.write(0, u64::MAX).unwrap();
        assert_eq!(w.read(0).unwrap(), u64::MAX);
        let mut one = RegisterArray::new("bit", 2, 1).unwrap();
        one.write(1, 2).unwrap();
        assert_eq!(one.read(1).unwrap(), 0);
        one.write(1, 3).unwrap();
        assert_eq!(one.read(1).unwrap(), 1);
    }

    #[test]
    fn counter_wraps_at_width() {
        let mut r = RegisterArray::new("c", 1, 16).unwrap();
        r.write(0, 0xfffe).unwrap();
        assert_eq!(r.add(0, 1).unwrap(), 0xffff);
        assert_eq!(r.add(0, 1).unwrap(), 0);
        assert_eq!(r.add(0, 5).unwrap(), 5);
    }

    #[test]
    fn update_is_read_modify_write_and_returns_result() {
        let mut r = RegisterArray::new("rmw", 8, 32).unwrap();
        r.write(3, 10).unwrap();
        // Return old value, store old+1 (a fetch-and-add).
        let old = r.update(3, |v| (v + 1, v)).unwrap();
        assert_eq!(old, 10);
        assert_eq!(r.read(3).unwrap(), 11);
        // Conditional update: only store if larger (a max register).
        let changed = r
            .update(3, |v| if 5 > v { (5, true) } else { (v, false) })
            .unwrap();
        assert!(!changed);
        assert_eq!(r.read(3).unwrap(), 11);
        // New value is masked.
        r.update(3, |_| (u64::MAX, ())).unwrap();
        assert_eq!(r.read(3).unwrap(), 0xffff_ffff);
        // Other cells untouched.
        assert_eq!(r.read(2).unwrap(), 0);
        assert_eq!(r.read(4).unwrap(), 0);
    }

    #[test]
    fn out_of_range_is_an_error_and_counted() {
        let mut r = RegisterArray::new("oor", 4, 32).unwrap();
        assert!(matches!(
            r.read(4),
            Err(StateError::IndexOutOfRange {
                index: 4,
                size: 4,
                ..
            })
        ));
        assert!(r.write(u64::MAX, 1).is_err());
        let mut called = false;
        assert!(r
            .update(100, |v| {
                called = true;
                (v, ())
            })
            .is_err());
        assert!(!called, "closure must not run for a bad index");
        assert_eq!(r.out_of_range_count(), 3);
        assert!(r.read(3).is_ok());
        assert_eq!(r.out_of_range_count(), 3);
        let msg = r.read(9).unwrap_err().to_string();
        assert!(msg.contains("oor") && msg.contains('9'), "{msg}");
    }

    #[test]
    fn bad_declarations_are_rejected() {
        assert!(matches!(
            RegisterArray::new("a", 0, 8),
            Err(StateError::ZeroSize { .. })
        ));
        assert!(matches!(
            RegisterArray::new("a", 1, 0),
            Err(StateError::BadWidth { .. })
        ));
        assert!(matches!(
            RegisterArray::new("a", 1, 65),
            Err(StateError::BadWidth { .. })
        ));
        assert!(RegisterPairArray::new("p", 1, 65).is_err());
    }

    #[test]
    fn pair_updates_both_halves() {
        let mut p = RegisterPairArray::new("pair", 2, 16).unwrap();
        p.write(1, (0x1_0001, 7)).unwrap();
        assert_eq!(p.read(1).unwrap(), (1, 7));
        let r = p.update(1, |(a, b)| ((a + b, b * 2), a)).unwrap();
        assert_eq!(r, 1);
        assert_eq!(p.read(1).unwrap(), (8, 14));
        assert!(p.read(2).is_err());
        assert_eq!(p.out_of_range_count(), 1);
    }

    #[test]
    fn resources_are_size_times_width() {
        let r = RegisterArray::new("r", 1000, 24).unwrap();
        let rep = r.resources();
        assert_eq!(rep.entries()[0].total_bits, 24_000);
        let p = RegisterPairArray::new("p", 10, 32).unwrap();
        assert_eq!(p.resources().total_bits(), 640);
    }
}
