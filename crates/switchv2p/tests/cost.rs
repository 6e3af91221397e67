//! `part_cost` (what `examples/v2p_bench.rs` prints) counts the run it times: the events and
//! delivered packets of the part's own result, packet-hops that include every tenant packet's
//! hops, and the Controller's rounds and solver apart from the loop.

use std::collections::BTreeMap;

use innet_switchv2p::experiments::{part_cost, parts, run_part};

fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn check(scheme: &str) {
    let name = "switchv2p.cachesize";
    let o = overrides(&[("schemes", scheme), ("cache_fractions", "0.5")]);
    let labels = parts(name, &o, true).expect("a sweep").expect("valid parameters");
    let want = format!("{scheme} cache_fraction=0.5");
    let i = labels.iter().position(|l| *l == want).unwrap_or_else(|| panic!("no part '{want}' in {labels:?}"));
    let (label, cost) = part_cost(name, &o, true, i).expect("a sweep").expect("the part runs");
    let text = run_part(name, &o, true, i, &mut |_| {}).expect("a sweep").expect("the part runs");
    let part: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let r = &part["result"];
    assert_eq!(label, want);
    assert_eq!(cost.events, r["events"].as_u64().unwrap());
    assert_eq!(cost.delivered_packets, r["conservation"]["delivered"].as_u64().unwrap());
    let tenant_hops = r["stats"]["tenant_hops_total"].as_u64().unwrap();
    assert!(tenant_hops > 0 && cost.packet_hops >= tenant_hops, "{} packet-hops, {tenant_hops} of tenant packets", cost.packet_hops);
    assert!(cost.packet_hops >= cost.delivered_packets, "every delivered packet crossed a switch");
    assert!(cost.loop_s > 0.0 && cost.build_s > 0.0 && cost.loop_cpu_s >= 0.0, "{cost:?}");
    if scheme.starts_with("controller") {
        assert!(cost.solver_s > 0.0 && cost.controller_s >= cost.solver_s, "{cost:?}");
    } else {
        assert_eq!((cost.solver_s, cost.controller_s), (0.0, 0.0));
    }
}

#[test]
fn a_parts_cost_counts_the_run_it_times() {
    check("switchv2p");
}

#[test]
fn the_controllers_rounds_and_solver_are_timed_apart_from_the_loop() {
    check("controller150");
}
