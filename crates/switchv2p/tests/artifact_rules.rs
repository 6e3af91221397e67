//! Rules taken from the authors' ns-3 artifact, checked on whole runs: gateway ToRs send
//! learning packets for spilled entries as well as their own, and `cache_index=artifact` moves
//! which mappings collide without touching what a run delivers.

use std::collections::BTreeMap;

use innet_switchv2p::experiments::{parts, run_part};

fn part(pairs: &[(&str, &str)]) -> serde_json::Value {
    let name = "switchv2p.cachesize";
    let o: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let labels = parts(name, &o, true).expect("a sweep").expect("valid parameters");
    let i = labels.iter().position(|l| l.starts_with("switchv2p ")).expect("a SwitchV2P part");
    let text = run_part(name, &o, true, i, &mut |_| {}).expect("a sweep").expect("the part runs");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    v["result"].clone()
}

/// The artifact's gateway ToR draws P_learn for every entry it learns, the spill option's too
/// (`learn` holds the option's entry when there is one), and sends that entry to the sender's
/// ToR. With P_learn = 1 every learned entry whose sender is elsewhere goes out.
#[test]
fn gateway_tors_send_learning_packets_for_spilled_entries_too() {
    let r = part(&[("schemes", "switchv2p"), ("cache_fractions", "0.1"), ("p_learn", "1.0")]);
    let s = &r["stats"];
    let (all, spilled) = (s["learning_packets"].as_u64().unwrap(), s["learning_packets_spilled"].as_u64().unwrap());
    assert!(spilled > 0 && spilled < all, "{spilled} of {all} learning packets carried a spilled entry");
    assert!(s["inserts_learning"].as_u64().unwrap() > 0);
}

/// Indexing as the artifact changes which VMs share a slot (so the counts), never what is
/// delivered: every packet sent arrives, before and after.
#[test]
fn the_artifacts_cache_index_moves_collisions_not_deliveries() {
    let base = [("schemes", "switchv2p"), ("cache_fractions", "0.05"), ("ecmp", "artifact")];
    let vip = part(&base);
    let art = part(&[base.as_slice(), &[("cache_index", "artifact")]].concat());
    for r in [&vip, &art] {
        let c = &r["conservation"];
        assert_eq!((c["dropped"].as_u64(), c["live"].as_u64()), (Some(0), Some(0)), "{c}");
        assert_eq!(c["created"], c["delivered"], "{c}");
        assert_eq!(r["completed_flows"], r["flows"]);
    }
    assert_ne!(vip["stats"]["gateway_packets"], art["stats"]["gateway_packets"], "the index changed nothing");
}
