//! A run is a function of its parameters: the same run twice in one process gives the same
//! summary, byte for byte, with the controller's fetch retries in play (their order once came
//! from a `HashMap`'s iteration, which differs per map instance and per process).

use std::collections::BTreeMap;

fn dynamic_summary() -> String {
    let exp = innet_orbitcache::experiments().into_iter().find(|e| e.info().name == "orbitcache.dynamic").expect("registered");
    // Fig. 19's run (hot-in, the controller inserting and fetching) shortened, with a fetch
    // timeout short enough that fetches time out and are retried, several at once.
    let overrides: BTreeMap<String, String> = [
        ("duration_us", "50000.0"),
        ("hot_in_period_us", "20000.0"),
        ("controller_period_us", "2000.0"),
        ("fetch_timeout_us", "200.0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    exp.run(&overrides, false, &mut |_| {}).expect("runs").summary_json()
}

#[test]
fn the_dynamic_run_with_fetch_retries_is_the_same_twice() {
    let (a, b) = (dynamic_summary(), dynamic_summary());
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    let retries = v.pointer("/schemes/orbitcache/counters/fetch_retries").and_then(|r| r.as_u64()).expect("fetch_retries counted");
    assert!(retries > 10, "the run must retry fetches to test their order ({retries})");
    assert_eq!(a, b, "two runs of the same parameters differ");
}
