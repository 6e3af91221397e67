//! Resource accounting: every register array and table reports what it declares (entries, key
//! and value widths, bits), a program sums its parts into one `ResourceReport`, and
//! `SwitchLimits` checks the sum against a switch's SRAM/TCAM/stateful-ALU budget.

use std::fmt;

use super::StateError;

/// Which memory a block lives in on an RMT switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceKind {
    /// Register array: SRAM, one stateful ALU each.
    Register,
    /// Exact-match table: SRAM (key and action data).
    Exact,
    /// Ternary table: key (value+mask) in TCAM, action data in SRAM.
    Ternary,
    /// LPM table: counted like ternary (TCAM), the usual Tofino placement; algorithmic
    /// (SRAM) LPM is not modelled.
    Lpm,
}

impl ResourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceKind::Register => "register",
            ResourceKind::Exact => "exact",
            ResourceKind::Ternary => "ternary",
            ResourceKind::Lpm => "lpm",
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One block's declared size. `entries` is the declared size/capacity, not the current fill,
/// because hardware reserves memory for the declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceEntry {
    pub name: String,
    pub kind: ResourceKind,
    pub entries: u64,
    pub key_bits: u32,
    pub value_bits: u32,
    pub total_bits: u64,
}

impl ResourceEntry {
    pub fn new(
        name: &str,
        kind: ResourceKind,
        entries: u64,
        key_bits: u32,
        value_bits: u32,
    ) -> Self {
        Self {
            name: name.to_string(),
            kind,
            entries,
            key_bits,
            value_bits,
            total_bits: entries * (key_bits as u64 + value_bits as u64),
        }
    }

    /// Bits this block takes from SRAM.
    pub fn sram_bits(&self) -> u64 {
        match self.kind {
            ResourceKind::Register | ResourceKind::Exact => self.total_bits,
            ResourceKind::Ternary | ResourceKind::Lpm => self.entries * self.value_bits as u64,
        }
    }

    /// Bits this block takes from TCAM.
    pub fn tcam_bits(&self) -> u64 {
        match self.kind {
            ResourceKind::Register | ResourceKind::Exact => 0,
            ResourceKind::Ternary | ResourceKind::Lpm => self.entries * self.key_bits as u64,
        }
    }

    /// Hash-output bits this block takes on an RMT (Tofino) stage. An exact-match table hashes
    /// its key to a row in each of its ways: one way per 1,024-row SRAM block up to
    /// `EXACT_MAX_WAYS`, each way taking the bits that address its rows (at least the block's
    /// 10). A register array's address reaches its stateful ALU through the stage's hash
    /// distribution, so it takes its index width. Keyless tables, one-entry registers and
    /// TCAM blocks take none.
    pub fn hash_bits(&self) -> u64 {
        match self.kind {
            ResourceKind::Exact if self.key_bits > 0 && self.entries > 0 => {
                let ways = self.entries.div_ceil(SRAM_ROWS).min(EXACT_MAX_WAYS);
                let per_way = self.entries.div_ceil(ways).max(SRAM_ROWS);
                ways * ceil_log2(per_way)
            }
            ResourceKind::Register if self.entries > 1 => ceil_log2(self.entries),
            _ => 0,
        }
    }
}

/// Rows of one SRAM block (Tofino: 1,024 rows of 128 bits).
const SRAM_ROWS: u64 = 1024;
/// Ways of a cuckoo exact-match table: the Tofino compiler's usual choice for large tables.
const EXACT_MAX_WAYS: u64 = 4;

/// Bits needed to address `n` items (0 for n <= 1).
fn ceil_log2(n: u64) -> u64 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros() as u64
    }
}

/// A program's blocks, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceReport {
    pub program: String,
    entries: Vec<ResourceEntry>,
}

impl ResourceReport {
    pub fn new(program: &str) -> Self {
        Self {
            program: program.to_string(),
            entries: Vec::new(),
        }
    }

    /// Sums the reports of a program's parts under the program's name.
    pub fn of_parts(program: &str, parts: &[&dyn Resources]) -> Self {
        let mut report = Self::new(program);
        for part in parts {
            report.merge(part.resources());
        }
        report
    }

    pub fn push(&mut self, entry: ResourceEntry) {
        self.entries.push(entry);
    }

    /// Appends another report's blocks (its program name is dropped).
    pub fn merge(&mut self, other: ResourceReport) {
        self.entries.extend(other.entries);
    }

    pub fn entries(&self) -> &[ResourceEntry] {
        &self.entries
    }

    pub fn total_bits(&self) -> u64 {
        self.entries.iter().map(|e| e.total_bits).sum()
    }
    pub fn sram_bits(&self) -> u64 {
        self.entries.iter().map(|e| e.sram_bits()).sum()
    }
    pub fn tcam_bits(&self) -> u64 {
        self.entries.iter().map(|e| e.tcam_bits()).sum()
    }
    /// Hash-output bits of the tables and registers (`ResourceEntry::hash_bits`); hash units a
    /// program computes itself (an index CRC, a random number) are declared by the program.
    pub fn hash_bits(&self) -> u64 {
        self.entries.iter().map(|e| e.hash_bits()).sum()
    }
    pub fn register_arrays(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| e.kind == ResourceKind::Register)
            .count() as u64
    }

    /// Checks the sum against `limits`. Blocks are charged in declaration order and the error
    /// names the first block whose addition exceeds a budget.
    pub fn check(&self, limits: &SwitchLimits) -> Result<(), StateError> {
        let (mut sram, mut tcam, mut alus) = (0u64, 0u64, 0u64);
        let sram_limit = limits.stages as u64 * limits.sram_bits_per_stage;
        let tcam_limit = limits.stages as u64 * limits.tcam_bits_per_stage;
        let alu_limit = limits.stages as u64 * limits.register_arrays_per_stage as u64;
        for e in &self.entries {
            sram += e.sram_bits();
            tcam += e.tcam_bits();
            if e.kind == ResourceKind::Register {
                alus += 1;
            }
            let overflow = |resource: &'static str, needed: u64, limit: u64| {
                Err(StateError::ResourceOverflow {
                    name: format!("{}/{}", self.program, e.name),
                    resource,
                    needed,
                    limit,
                })
            };
            if sram > sram_limit {
                return overflow("SRAM bits", sram, sram_limit);
            }
            if tcam > tcam_limit {
                return overflow("TCAM bits", tcam, tcam_limit);
            }
            if alus > alu_limit {
                return overflow("stateful ALUs (register arrays)", alus, alu_limit);
            }
        }
        Ok(())
    }
}

impl fmt::Display for ResourceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name_w = self
            .entries
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(0)
            .max(5);
        writeln!(f, "resources of `{}`", self.program)?;
        writeln!(
            f,
            "{:<name_w$}  {:<8}  {:>10}  {:>8}  {:>10}  {:>14}",
            "block", "kind", "entries", "key_bits", "value_bits", "total_bits"
        )?;
        for e in &self.entries {
            writeln!(
                f,
                "{:<name_w$}  {:<8}  {:>10}  {:>8}  {:>10}  {:>14}",
                e.name,
                e.kind.as_str(),
                e.entries,
                e.key_bits,
                e.value_bits,
                e.total_bits
            )?;
        }
        write!(
            f,
            "total {} bits (SRAM {} bits, TCAM {} bits, {} register arrays)",
            self.total_bits(),
            self.sram_bits(),
            self.tcam_bits(),
            self.register_arrays()
        )
    }
}

/// Anything that declares switch memory.
pub trait Resources {
    fn resources(&self) -> ResourceReport;
}

/// A switch's budget, summed over its pipeline stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchLimits {
    pub stages: u32,
    pub sram_bits_per_stage: u64,
    pub tcam_bits_per_stage: u64,
    /// Stateful ALUs per stage; each register array takes one.
    pub register_arrays_per_stage: u32,
}

impl SwitchLimits {
    /// Publicly cited Tofino-1 figures per pipe: 12 stages, each with 80 SRAM blocks of
    /// 1024x128 bits, 24 TCAM blocks of 512x44 bits and 4 stateful ALUs.
    pub fn tofino1() -> Self {
        Self {
            stages: 12,
            sram_bits_per_stage: 80 * 1024 * 128,
            tcam_bits_per_stage: 24 * 512 * 44,
            register_arrays_per_stage: 4,
        }
    }

    /// No limits (a software switch).
    pub fn unlimited() -> Self {
        Self {
            stages: u32::MAX,
            sram_bits_per_stage: u64::MAX / u32::MAX as u64,
            tcam_bits_per_stage: u64::MAX / u32::MAX as u64,
            register_arrays_per_stage: u32::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_split_sram_and_tcam() {
        let mut r = ResourceReport::new("p");
        r.push(ResourceEntry::new(
            "reg",
            ResourceKind::Register,
            100,
            0,
            32,
        ));
        r.push(ResourceEntry::new("ex", ResourceKind::Exact, 10, 48, 16));
        r.push(ResourceEntry::new("tern", ResourceKind::Ternary, 4, 104, 8));
        r.push(ResourceEntry::new("lpm", ResourceKind::Lpm, 2, 32, 16));
        assert_eq!(r.total_bits(), 3200 + 640 + 448 + 96);
        assert_eq!(r.sram_bits(), 3200 + 640 + 32 + 32);
        assert_eq!(r.tcam_bits(), 416 + 64);
        assert_eq!(r.register_arrays(), 1);
        let shown = r.to_string();
        for needle in ["reg", "register", "tern", "ternary", "lpm", "4384"] {
            assert!(shown.contains(needle), "{needle} missing in\n{shown}");
        }
    }

    #[test]
    fn hash_bits_count_exact_ways_and_register_indices() {
        let bits = |kind, entries, key_bits| ResourceEntry::new("b", kind, entries, key_bits, 32).hash_bits();
        // A small exact table still addresses a whole 1,024-row block in its one way.
        assert_eq!(bits(ResourceKind::Exact, 64, 32), 10);
        // 8,192 entries: four ways of 2,048 rows, 11 bits each.
        assert_eq!(bits(ResourceKind::Exact, 8192, 128), 44);
        assert_eq!(bits(ResourceKind::Exact, 3000, 32), 3 * 10);
        // Keyless (a default-action table) and TCAM tables take no hash bits.
        assert_eq!(bits(ResourceKind::Exact, 1, 0), 0);
        assert_eq!(bits(ResourceKind::Ternary, 4096, 32), 0);
        // A register's index width: 65,536 slots take 16 bits, 80 take 7, one takes none.
        assert_eq!(bits(ResourceKind::Register, 65536, 0), 16);
        assert_eq!(bits(ResourceKind::Register, 80, 0), 7);
        assert_eq!(bits(ResourceKind::Register, 1, 0), 0);
        let mut r = ResourceReport::new("p");
        r.push(ResourceEntry::new("t", ResourceKind::Exact, 8192, 128, 32));
        r.push(ResourceEntry::new("r", ResourceKind::Register, 8192, 0, 8));
        assert_eq!(r.hash_bits(), 44 + 13);
    }

    #[test]
    fn check_names_the_block_that_overflows() {
        let limits = SwitchLimits {
            stages: 2,
            sram_bits_per_stage: 1000,
            tcam_bits_per_stage: 100,
            register_arrays_per_stage: 1,
        };
        let mut r = ResourceReport::new("prog");
        r.push(ResourceEntry::new(
            "small",
            ResourceKind::Register,
            10,
            0,
            32,
        ));
        assert!(r.check(&limits).is_ok());
        r.push(ResourceEntry::new("big", ResourceKind::Exact, 100, 16, 16));
        let err = r.check(&limits).unwrap_err();
        match &err {
            StateError::ResourceOverflow {
                name,
                resource,
                needed,
                limit,
            } => {
                assert_eq!(name, "prog/big");
                assert_eq!(*resource, "SRAM bits");
                assert_eq!(*needed, 320 + 3200);
                assert_eq!(*limit, 2000);
            }
            other => panic!("unexpected {other:?}"),
        }
        let mut t = ResourceReport::new("prog");
        t.push(ResourceEntry::new("acl", ResourceKind::Ternary, 10, 32, 0));
        assert!(t.check(&limits).unwrap_err().to_string().contains("acl"));
        let mut a = ResourceReport::new("prog");
        for i in 0..3 {
            a.push(ResourceEntry::new(
                &format!("r{i}"),
                ResourceKind::Register,
                1,
                0,
                1,
            ));
        }
        let msg = a.check(&limits).unwrap_err().to_string();
        assert!(msg.contains("r2") && msg.contains("stateful ALUs"), "{msg}");
        assert!(a.check(&SwitchLimits::tofino1()).is_ok());
        assert!(a.check(&SwitchLimits::unlimited()).is_ok());
    }
}
