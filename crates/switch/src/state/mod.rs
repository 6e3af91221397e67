//! Stateful building blocks of the RMT-style switch: register arrays, exact/ternary/LPM
//! match-action tables, CRC hash units and the resource accounting that sums them per program.
//! Everything here is deterministic and allocation-free on the lookup/update path.

pub mod hash;
pub mod register;
pub mod resources;
pub mod table;

use std::sync::Arc;

pub use hash::{HashAlgorithm, HashUnit};
pub use register::{RegisterArray, RegisterPairArray};
pub use resources::{ResourceEntry, ResourceKind, ResourceReport, Resources, SwitchLimits};
pub use table::{
    EntryHandle, ExactTable, Key, KeyField, KeyLayout, LpmTable, TableCounters, TernaryTable,
};

/// Errors from the stateful blocks. Each names the block (register or table) it came from;
/// names are shared `Arc<str>` so building an error on the data path never allocates.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("register array `{name}`: index {index} out of range (size {size})")]
    IndexOutOfRange {
        name: Arc<str>,
        index: u64,
        size: u64,
    },
    #[error("`{name}`: width_bits {width_bits} not supported (expected 1..={max})")]
    BadWidth {
        name: Arc<str>,
        width_bits: u32,
        max: u32,
    },
    #[error("`{name}`: size/capacity must be at least 1")]
    ZeroSize { name: Arc<str> },
    #[error("table `{name}`: full (capacity {capacity} entries)")]
    TableFull { name: Arc<str>, capacity: usize },
    #[error("table `{name}`: an entry with this key already exists (use modify)")]
    DuplicateEntry { name: Arc<str> },
    #[error("table `{name}`: no such entry")]
    EntryNotFound { name: Arc<str> },
    #[error("table `{name}`: key {key:#x} does not fit the {layout_bits}-bit key layout")]
    KeyTooWide {
        name: Arc<str>,
        key: u128,
        layout_bits: u32,
    },
    #[error("key field `{field}`: value {value:#x} does not fit in {bits} bits")]
    FieldValueTooWide {
        field: Arc<str>,
        value: u128,
        bits: u32,
    },
    #[error("key layout: expected {expected} field values, got {got}")]
    FieldCountMismatch { expected: usize, got: usize },
    #[error("key layout: fields total {bits} bits, more than the {max}-bit Key")]
    LayoutTooWide { bits: u32, max: u32 },
    #[error("key field `{field}`: width 0 (expected 1..=128 bits)")]
    ZeroWidthField { field: Arc<str> },
    #[error("LPM table `{name}`: prefix length {prefix_len} longer than the {key_bits}-bit field")]
    BadPrefixLength {
        name: Arc<str>,
        prefix_len: u32,
        key_bits: u32,
    },
    #[error("LPM table `{name}`: key layout must have exactly one field, got {fields}")]
    LpmNeedsOneField { name: Arc<str>, fields: usize },
    #[error("hash input: {bytes} bytes, more than the {max}-byte hash input buffer")]
    HashInputTooLong { bytes: usize, max: usize },
    #[error("hash field of {bits} bits: expected 1..=64")]
    BadHashFieldWidth { bits: u32 },
    #[error("hash index: table size must be at least 1")]
    ZeroHashRange,
    #[error(
        "resources: `{name}` overflows {resource}: needs {needed} in total, switch has {limit}"
    )]
    ResourceOverflow {
        name: String,
        resource: &'static str,
        needed: u64,
        limit: u64,
    },
}
