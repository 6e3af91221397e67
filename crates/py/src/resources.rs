//! `program_resources`: what a data-plane program declares through `Program::resources()`, set
//! against Tofino-1's limits, for the papers' resource tables (SwitchV2P's Table 6). The program
//! is built the way its experiment builds it; nothing here estimates what the model lacks.

use std::collections::BTreeMap;

use innet_dataplane::state::{ResourceReport, SwitchLimits};
use innet_dataplane::Program;
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

/// `{program, facts, blocks: [...], totals, tofino1: {..._fraction}}` as JSON text. Fractions
/// are of the whole pipe (12 stages), i.e. the average per stage, as the papers' tables give them.
#[pyfunction]
pub fn program_resources(program: &str, settings: BTreeMap<String, String>) -> PyResult<String> {
    let (report, hash_units, facts) = match program {
        "switchv2p" => switchv2p(&settings)?,
        other => {
            return Err(UserInputError::new_err(format!(
                "program_resources: no resource report for '{other}'; known: switchv2p"
            )))
        }
    };
    let lim = SwitchLimits::tofino1();
    let stages = lim.stages as f64;
    let blocks: Vec<serde_json::Value> = report
        .entries()
        .iter()
        .map(|e| json!({"name": e.name, "kind": e.kind.as_str(), "entries": e.entries, "key_bits": e.key_bits,
                        "value_bits": e.value_bits, "total_bits": e.total_bits}))
        .collect();
    let hash_bits: u64 = hash_units.iter().map(|&(_, b)| b as u64).sum();
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
            "hash_bits_fraction": hash_bits as f64 / (TOFINO1_HASH_BITS_PER_STAGE as f64 * stages),
            "fits": report.check(&lim).is_ok(),
        },
        "not_modelled": ["match crossbar", "gateways", "VLIW instructions", "hash bits of exact-match tables", "PHV containers", "logical tables", "allocation in whole SRAM/TCAM blocks"],
    });
    Ok(out.to_string())
}
