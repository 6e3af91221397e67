//! `program_resources`: what a data-plane program declares through `Program::resources()`, set
//! against Tofino-1's limits, for the papers' resource tables (SwitchV2P's Table 6, OrbitCache's
//! §4 prototype figures). The program
//! is built the way its experiment builds it; nothing here estimates what the model lacks.

use std::collections::{BTreeMap, HashMap};

use innet_dataplane::state::{ResourceReport, SwitchLimits};
use innet_dataplane::Program;
use innet_orbitcache::orbit_switch::{OrbitSwitch, OrbitSwitchConfig};
use innet_switchv2p::run::{resource_model, NetworkSpec};
use pyo3::prelude::*;
use serde_json::json;

use crate::UserInputError;

fn setting<'a>(settings: &'a BTreeMap<String, String>, key: &str, default: &'a str) -> &'a str {
    settings.get(key).map(String::as_str).unwrap_or(default)
}

/// The SwitchV2P program (a gateway ToR of FT8-10K, or of FT16-400K with `topology`) at
/// `cache_fraction` of the address space split over every switch, as `switchv2p.cachesize`
/// builds it; `cache_slots` sets the slots per switch instead (the P4 prototype has 8,192).
fn switchv2p(settings: &BTreeMap<String, String>) -> PyResult<(ResourceReport, Vec<(&'static str, u32)>, serde_json::Value)> {
    let raw = setting(settings, "cache_fraction", "0.5");
    let fraction: f64 = raw
        .parse()
        .ok()
        .filter(|f: &f64| f.is_finite() && *f >= 0.0)
        .ok_or_else(|| {
            UserInputError::new_err(format!(
                "cache_fraction: expected a non-negative number, got '{raw}'"
            ))
        })?;
    let slots_override = match settings.get("cache_slots") {
        None => None,
        Some(raw) => Some(raw.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
            UserInputError::new_err(format!("cache_slots: expected a positive whole number, got '{raw}'"))
        })?),
    };
    let topology = setting(settings, "topology", "ft8_10k");
    let ns = match topology {
        "ft8_10k" => NetworkSpec::ft8_10k(),
        "ft16_400k" => NetworkSpec::ft16_400k(),
        other => {
            return Err(UserInputError::new_err(format!(
                "topology: expected ft8_10k or ft16_400k, got '{other}'"
            )))
        }
    };
    let (sw, slots, caching) = resource_model(&ns, fraction, slots_override)
        .map_err(|e| UserInputError::new_err(e.to_string()))?;
    let facts = json!({"topology": topology, "cache_fraction": fraction, "cache_slots_per_switch": slots, "caching_switches": caching});
    Ok((sw.resources(), sw.hash_units(), facts))
}

/// Tofino-1's hash-output bits per stage (8 hash groups × 52 bits, the figure P4 Studio's
/// resource summary counts "hash bits" against).
const TOFINO1_HASH_BITS_PER_STAGE: u64 = 416;

/// OrbitCache's switch as `innet run orbitcache.*` builds it: `table_entries` lookup entries and
/// per-index arrays (8,192, the artifact's `MAX_CACHE_SIZE`), `queue_slots` request-table slots
/// per key (8).
fn orbitcache(settings: &BTreeMap<String, String>) -> PyResult<(ResourceReport, Vec<(&'static str, u32)>, serde_json::Value)> {
    let count = |key: &str, default: &str, max: usize| -> PyResult<usize> {
        let raw = setting(settings, key, default);
        raw.parse::<usize>().ok().filter(|&n| (1..=max).contains(&n)).ok_or_else(|| {
            UserInputError::new_err(format!("{key}: expected a whole number in 1..={max}, got '{raw}'"))
        })
    };
    let table_entries = count("table_entries", "8192", 1 << 20)?;
    let queue_slots = count("queue_slots", "8", 64)?;
    let sw = OrbitSwitch::new(OrbitSwitchConfig {
        table_entries,
        queue_slots,
        switch_ip: 0,
        host_groups: HashMap::new(),
        skip_invalidation: false,
        insert_valid: true,
    });
    let facts = json!({"table_entries": table_entries, "queue_slots": queue_slots});
    // No hash unit of its own: the client hashes the key (`hkey`), the lookup table's way
    // hashing and the registers' index bits are counted from the report's blocks.
    Ok((sw.resources(), Vec::new(), facts))
}

/// `{program, facts, blocks: [...], totals, tofino1: {..._fraction}}` as JSON text. Fractions
/// are of the whole pipe (12 stages), i.e. the average per stage, as the papers' tables give them.
#[pyfunction]
pub fn program_resources(program: &str, settings: BTreeMap<String, String>) -> PyResult<String> {
    let (report, hash_units, facts) = match program {
        "switchv2p" => switchv2p(&settings)?,
        "orbitcache" => orbitcache(&settings)?,
        other => {
            return Err(UserInputError::new_err(format!(
                "program_resources: no resource report for '{other}'; known: switchv2p, orbitcache"
            )))
        }
    };
    let lim = SwitchLimits::tofino1();
    let stages = lim.stages as f64;
    // Whole blocks, as the compiler allocates them (80 SRAM and 24 TCAM blocks per stage).
    let (sram_blocks, tcam_blocks) = innet_switchvm::resources::blocks(&report);
    let blocks: Vec<serde_json::Value> = report
        .entries()
        .iter()
        .map(|e| json!({"name": e.name, "kind": e.kind.as_str(), "entries": e.entries, "key_bits": e.key_bits,
                        "value_bits": e.value_bits, "total_bits": e.total_bits, "hash_bits": e.hash_bits()}))
        .collect();
    // The blocks' own hash bits (exact-match ways, register addresses) plus the program's units.
    let hash_bits: u64 = report.hash_bits() + hash_units.iter().map(|&(_, b)| b as u64).sum::<u64>();
    let hashes: Vec<serde_json::Value> = hash_units.iter().map(|&(n, b)| json!({"name": n, "bits": b})).collect();
    let out = json!({
        "program": report.program,
        "facts": facts,
        "blocks": blocks,
        "hash_units": hashes,
        "totals": {"sram_bits": report.sram_bits(), "tcam_bits": report.tcam_bits(), "register_arrays": report.register_arrays(), "hash_bits": hash_bits},
        "limits": {"name": "tofino1", "stages": lim.stages, "sram_bits": lim.sram_bits_per_stage as f64 * stages,
                   "tcam_bits": lim.tcam_bits_per_stage as f64 * stages, "stateful_alus": lim.register_arrays_per_stage as f64 * stages,
                   "hash_bits": TOFINO1_HASH_BITS_PER_STAGE as f64 * stages},
        "tofino1": {
            "sram_fraction": report.sram_bits() as f64 / (lim.sram_bits_per_stage as f64 * stages),
            "tcam_fraction": report.tcam_bits() as f64 / (lim.tcam_bits_per_stage as f64 * stages),
            "stateful_alu_fraction": report.register_arrays() as f64 / (lim.register_arrays_per_stage as f64 * stages),
            "sram_block_fraction": sram_blocks as f64 / (80.0 * stages),
            "tcam_block_fraction": tcam_blocks as f64 / (24.0 * stages),
            "hash_bits_fraction": hash_bits as f64 / (TOFINO1_HASH_BITS_PER_STAGE as f64 * stages),
            "fits": report.check(&lim).is_ok(),
        },
        "not_modelled": ["match crossbar", "gateways", "VLIW instructions", "hash bits the compiler spends beyond ways and register addresses", "PHV containers", "logical tables", "allocation in whole SRAM/TCAM blocks"],
    });
    Ok(out.to_string())
}
