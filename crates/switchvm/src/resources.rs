//! What SwitchVM's machine declares on an RMT switch — its register arrays and tables, sized by
//! `VmConfig` — and the hardware stages its pipeline occupies (§5.1: permissions, prolog, epilog
//! and steering one stage each, every EU two). The paper's Tofino-1 figures (Table 3, §5.1,
//! Table 4) are in the reproduce manifest (python/innet/papers/switchvm.toml), set beside these.

use innet_dataplane::state::{ResourceEntry, ResourceKind, ResourceReport, SwitchLimits};

use crate::machine::VmConfig;

/// Hardware stages of the machine's pipeline: one each for permissions, prolog, epilog and
/// steering, two per EU (selectors and branch compare; then ALU, memory and branch resolution).
pub fn pipeline_stages(cfg: &VmConfig) -> u32 {
    4 + 2 * cfg.eus as u32
}

/// Bits of one in-switch instruction's action data (the fields of the paper's Fig. 5 at fixed
/// width): an 8-bit selector per register (op and source), 4-bit ALU and memory opcodes per
/// lane, a 32-bit immediate per B register, the branch's opcode, two operand selectors, two
/// 32-bit immediates and two 16-bit pointers.
fn eu_instr_bits(lanes: u32) -> u32 {
    16 * lanes + 8 * lanes + 32 * lanes + (4 + 2 * 8 + 2 * 32 + 2 * 16)
}
fn prolog_bits(lanes: u32) -> u32 {
    16 * lanes + 16
}
/// Push list (4-bit register index per entry, up to 2L, and a count), steering and NEXT_PC
/// operands (selector + 32-bit immediate), HDR_MOD.
fn epilog_bits(lanes: u32) -> u32 {
    8 * lanes + 4 + 2 * (8 + 32) + 1
}

/// Every block the machine declares, in pipeline order.
pub fn report(cfg: &VmConfig) -> ResourceReport {
    let l = cfg.lanes as u32;
    let slots = cfg.code_slots as u64;
    let mut r = ResourceReport::new("switchvm");
    // Permissions: tenant → unauthorized action, default init_pc, capabilities, app id.
    r.push(ResourceEntry::new("permissions", ResourceKind::Exact, cfg.permission_entries as u64, 32, 1 + 17 + 32 + 32));
    r.push(ResourceEntry::new("prolog_code", ResourceKind::Exact, slots, 16, prolog_bits(l)));
    for eu in 0..cfg.eus {
        r.push(ResourceEntry::new(&format!("eu{eu}_code"), ResourceKind::Exact, slots, 16, eu_instr_bits(l)));
        // Branch resolution: the first-match TCAM of Appendix D (about 20 rows over the opcode,
        // AND, XOR, saturated difference and the operands' signs).
        r.push(ResourceEntry::new(&format!("eu{eu}_branch"), ResourceKind::Ternary, 24, 4 + 3 * 32 + 2, 2));
        for lane in 0..cfg.lanes {
            // Segment translation: (tenant, virtual address) range → offset.
            r.push(ResourceEntry::new(&format!("eu{eu}_lane{lane}_segments"), ResourceKind::Ternary, cfg.segments_per_lane as u64, 64, 32));
            if lane == 0 {
                r.push(ResourceEntry::new(&format!("eu{eu}_direct"), ResourceKind::Exact, cfg.direct_per_eu as u64, 64, 32));
            }
            r.push(ResourceEntry::new(&format!("eu{eu}_lane{lane}_memory"), ResourceKind::Register, cfg.mem_entries as u64, 32, 0));
        }
    }
    r.push(ResourceEntry::new("constants", ResourceKind::Exact, cfg.const_entries as u64, 16, 32));
    r.push(ResourceEntry::new("epilog_code", ResourceKind::Exact, slots, 16, epilog_bits(l)));
    // Steering: (tenant, index) → action and its argument.
    r.push(ResourceEntry::new("steering", ResourceKind::Exact, cfg.steering_entries as u64, 64, 3 + 32));
    r
}

/// Tofino-1's memory blocks: SRAM 1,024 × 128 bits, TCAM 512 × 44 bits; 80 and 24 per stage.
const SRAM_BLOCK_BITS: u64 = 1024 * 128;
const TCAM_BLOCK_ROWS: u64 = 512;
const TCAM_BLOCK_WIDTH: u64 = 44;

/// Memory blocks a report takes when every block is allocated whole, as the compiler does: a
/// TCAM key wider than 44 bits spans several blocks side by side; a register array takes one
/// more SRAM block for its stateful ALU's spare; each table's SRAM rounds up to whole blocks.
pub fn blocks(r: &ResourceReport) -> (u64, u64) {
    let (mut sram, mut tcam) = (0, 0);
    for e in r.entries() {
        sram += e.sram_bits().div_ceil(SRAM_BLOCK_BITS) + u64::from(e.kind == ResourceKind::Register);
        if e.tcam_bits() > 0 {
            tcam += e.entries.div_ceil(TCAM_BLOCK_ROWS) * (e.key_bits as u64).div_ceil(TCAM_BLOCK_WIDTH);
        }
    }
    (sram, tcam)
}

/// Flat metrics: stages, SRAM/TCAM bits and their fraction of a Tofino-1 pipe, stateful ALUs
/// (one per register array), and Table 4's per-EU budgets.
pub fn summary(cfg: &VmConfig) -> Vec<(&'static str, f64)> {
    let r = report(cfg);
    let t = SwitchLimits::tofino1();
    let sram_total = (t.stages as u64 * t.sram_bits_per_stage) as f64;
    let tcam_total = (t.stages as u64 * t.tcam_bits_per_stage) as f64;
    let alus_total = (t.stages * t.register_arrays_per_stage) as f64;
    let eus = cfg.eus as f64;
    let (sram_blocks, tcam_blocks) = blocks(&r);
    let stages = t.stages as f64;
    vec![
        ("stages", pipeline_stages(cfg) as f64),
        ("sram_bits", r.sram_bits() as f64),
        ("sram_fraction", r.sram_bits() as f64 / sram_total),
        ("sram_block_fraction", sram_blocks as f64 / (80.0 * stages)),
        ("tcam_bits", r.tcam_bits() as f64),
        ("tcam_fraction", r.tcam_bits() as f64 / tcam_total),
        ("tcam_block_fraction", tcam_blocks as f64 / (24.0 * stages)),
        ("stateful_alus", r.register_arrays() as f64),
        ("stateful_alu_fraction", r.register_arrays() as f64 / alus_total),
        ("direct_mappings_per_eu", cfg.direct_per_eu as f64),
        ("segment_mappings_per_eu", (cfg.segments_per_lane * cfg.lanes as usize) as f64),
        ("memory_cells_per_eu", (cfg.mem_entries * cfg.lanes as usize) as f64),
        ("steering_rules", cfg.steering_entries as f64),
        ("eus", eus),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_machine_fills_tofino1_stages_and_fits_its_memories() {
        let cfg = VmConfig::default();
        assert_eq!(pipeline_stages(&cfg), 12, "4 EUs take all 12 stages of Tofino-1 (§5.1)");
        let r = report(&cfg);
        r.check(&SwitchLimits::tofino1()).expect("the default machine fits one Tofino-1 pipe");
        // One register array per (EU, lane) memory: 16 stateful ALUs.
        assert_eq!(r.register_arrays(), 16);
        // The memories alone: 16 lanes × 45K cells × 32 bits.
        let mem: u64 = r.entries().iter().filter(|e| e.kind == ResourceKind::Register).map(|e| e.total_bits).sum();
        assert_eq!(mem, 16 * 45_000 * 32);
        // Segment translation is the TCAM user: 16 lanes × 1,500 ranges × 64-bit keys, plus branches.
        assert!(r.tcam_bits() >= 16 * 1_500 * 64 && r.tcam_bits() < 16 * 1_500 * 64 + 4 * 24 * 200);
        // Whole blocks: a 64-bit range key spans two 44-bit TCAM blocks, 1,500 rows three deep.
        let (_, tcam_blocks) = blocks(&r);
        assert_eq!(tcam_blocks, 16 * 3 * 2 + 4 * 3);
    }

    #[test]
    fn sizes_follow_the_config() {
        let small = VmConfig { eus: 2, lanes: 2, ..VmConfig::default() };
        assert_eq!(pipeline_stages(&small), 8);
        assert!(report(&small).sram_bits() < report(&VmConfig::default()).sram_bits());
        let all = summary(&VmConfig::default());
        eprintln!("{all:?}");
        // The defaults are the paper's Table 4 budgets: 45K direct mappings, 6K segment
        // mappings and 180K memory cells per EU.
        let budget = |name: &str| all.iter().find(|m| m.0 == name).map(|m| m.1);
        assert_eq!(budget("direct_mappings_per_eu"), Some(45_000.0));
        assert_eq!(budget("segment_mappings_per_eu"), Some(6_000.0));
        assert_eq!(budget("memory_cells_per_eu"), Some(180_000.0));
    }
}
