//! Rules taken from the authors' ns-3 artifact, checked on whole runs: gateway ToRs send
//! learning packets for spilled entries as well as their own, and to the ToR of the packet's
//! original sender even when the old server sent it back, and `cache_index=artifact` moves which
//! mappings collide without touching what a run delivers.

use std::collections::BTreeMap;

use innet_registry::Experiment;
use innet_switchv2p::experiments::{parts, run_part, MigrationExp};

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

/// After the migration, a misdelivered packet goes back through its gateway from the old server
/// (its outer source), and the gateway ToR's learning packet must still reach the ToR of the
/// packet's original sender, which holds the stale entry (the artifact's `SourceTag`). With
/// P_learn = 1 the stale senders' ToRs are then corrected by the first packet each sends back,
/// and misdeliveries fall below half of P_learn = 0.5 %'s; sent to the old server's ToR instead,
/// the learning packets correct no one and misdeliveries rise (28,690 against 9,602).
#[test]
fn learning_packets_for_packets_sent_back_reach_the_original_senders_tor() {
    let misdelivered = |p_learn: &str| {
        let o: BTreeMap<String, String> =
            [("schemes", "switchv2p_noinval"), ("p_learn", p_learn)].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let s = MigrationExp.run(&o, true, &mut |_| {}).expect("the migration runs").summary;
        s["schemes"]["switchv2p_noinval"]["misdelivered_packets"].as_f64().expect("a count")
    };
    let (every, default) = (misdelivered("1.0"), misdelivered("0.005"));
    assert!(2.0 * every < default, "misdelivered with P_learn = 1: {every}, with 0.5 %: {default}");
}
