//! The SwitchV2P program's declared resources (the paper's Table 6 is computed from them): every
//! register, table and hash unit it uses, sized for the network it runs in.

use innet_dataplane::state::{ResourceKind, SwitchLimits};
use innet_dataplane::Program;
use innet_switchv2p::run::{resource_model, NetworkSpec};

fn blocks(r: &innet_dataplane::state::ResourceReport) -> Vec<(String, ResourceKind, u64, u32, u32)> {
    r.entries().iter().map(|e| (e.name.clone(), e.kind, e.entries, e.key_bits, e.value_bits)).collect()
}

#[test]
fn ft8_at_half_cache_declares_the_cache_vector_and_tables() {
    let (sw, slots, caching) = resource_model(&NetworkSpec::ft8_10k(), 0.5, None).unwrap();
    // 50 % of 10,240 addresses over 80 switches.
    assert_eq!((slots, caching), (64, 80));
    let r = sw.resources();
    use ResourceKind::*;
    let s = |n: &str| n.to_string();
    assert_eq!(
        blocks(&r),
        vec![
            (s("v2p_keys"), Register, 64, 0, 64),
            (s("v2p_values"), Register, 64, 0, 32),
            (s("ts_vector"), Register, 80, 0, 32),
            (s("switch_config"), Exact, 1, 0, 3 + 7),
            (s("match_gw"), Exact, 40, 32, 1),
            // a gateway ToR: 4 servers, 10 gateways, 4 spines
            (s("server_of_port"), Exact, 18, 9, 32),
            (s("sender_tor"), Exact, 128, 32, 32),
            (s("l3_forward"), Exact, 128 + 40 + 80, 32, 9),
        ]
    );
    // Three register arrays, as the P4 prototype (keys with access bit, values, vector).
    assert_eq!(r.register_arrays(), 3);
    assert_eq!(r.tcam_bits(), 0);
    let sram = 64 * 64 + 64 * 32 + 80 * 32 + 10 + 40 * 33 + 18 * 41 + 128 * 64 + 248 * 41;
    assert_eq!(r.sram_bits(), sram);
    assert!(r.check(&SwitchLimits::tofino1()).is_ok());
    assert_eq!(sw.hash_units(), vec![("dst_index_hash", 6), ("src_index_hash", 6), ("p_learn_random", 10)]);
}

#[test]
fn the_p4_prototypes_8192_slots_take_13_index_bits() {
    let (sw, slots, _) = resource_model(&NetworkSpec::ft8_10k(), 0.5, Some(8192)).unwrap();
    assert_eq!(slots, 8192);
    let r = sw.resources();
    let keys = &r.entries()[0];
    assert_eq!((keys.name.as_str(), keys.entries, keys.total_bits), ("v2p_keys", 8192, 8192 * 64));
    assert_eq!(sw.hash_units()[0], ("dst_index_hash", 13));
    assert!(r.check(&SwitchLimits::tofino1()).is_ok());
}

#[test]
fn ft16_tables_follow_the_network() {
    let (sw, slots, caching) = resource_model(&NetworkSpec::ft16_400k(), 0.5, None).unwrap();
    // 50 % of 409,600 addresses over 816 switches.
    assert_eq!((slots, caching), (250, 816));
    let r = sw.resources();
    let get = |n: &str| r.entries().iter().find(|e| e.name == n).unwrap_or_else(|| panic!("{n} missing")).entries;
    assert_eq!(get("ts_vector"), 816);
    assert_eq!(get("match_gw"), 250);
    assert_eq!(get("sender_tor"), 12_800);
    assert_eq!(get("l3_forward"), 12_800 + 250 + 816);
    assert_eq!(sw.hash_units()[0], ("dst_index_hash", 8));
}
