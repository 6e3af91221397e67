//! The example's claims on a small fixed-seed run (the hadoop trace's first 0.3 ms on FT8-10K,
//! 5 % cache; seconds in a debug build). Every run also checks SwitchV2P's invariants itself
//! (conservation; every tenant packet delivered to its VM's current server; none resolved to a
//! server that never held the VM) and fails if one breaks.

use std::collections::BTreeMap;
use std::sync::Arc;

use innet_registry::find;
use innet_switchv2p::cache::{DirectMapped, MappingCache};
use innet_switchv2p::experiments::Params;
use innet_switchv2p::run::{run_scheme, RunSpec, SchemeResult, Transport};
use innet_switchv2p::scheme::{CacheScheme, CacheSite, Scheme};
use innet_workloads::vm_traces;
use v2p_twoway::experiment::DECLARATION;
use v2p_twoway::SWITCHV2P_2WAY;

fn overrides(sets: &[(&str, &str)]) -> BTreeMap<String, String> {
    sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The experiment's own trace and network, shortened.
fn small_spec() -> RunSpec {
    let p: Params = DECLARATION.resolve(&overrides(&[("duration_ms", "0.3"), ("stop_ms", "100.0")]), true).unwrap();
    let mut spec = p.spec(p.net()).unwrap();
    spec.cache_fraction = 0.05;
    spec
}

fn run(spec: &RunSpec, scheme: Scheme) -> SchemeResult {
    run_scheme(spec, scheme, &mut |_| {}).unwrap_or_else(|e| panic!("{scheme}: {e}"))
}

/// SwitchV2P's own cache, brought in through the extension point.
static SWITCHV2P_AGAIN: CacheScheme = CacheScheme { name: "switchv2p_again", protocol: Scheme::SwitchV2P, cache: direct_mapped };

fn direct_mapped(site: &CacheSite) -> Box<dyn MappingCache> {
    Box::new(DirectMapped::new(site.slots, site.salt))
}

#[test]
fn through_the_extension_point_switchv2p_is_itself_and_two_ways_keep_packets_off_the_gateways() {
    let spec = small_spec();
    let one = run(&spec, Scheme::SwitchV2P);
    let mut again = run(&spec, Scheme::Custom(&SWITCHV2P_AGAIN));
    again.scheme = Scheme::SwitchV2P;
    assert_eq!(serde_json::to_string(&again).unwrap(), serde_json::to_string(&one).unwrap(), "the same cache through CacheScheme is the same run");

    let two = run(&spec, Scheme::Custom(&SWITCHV2P_2WAY));
    assert_eq!((two.cache_slots_per_switch, two.caching_switches), (one.cache_slots_per_switch, one.caching_switches), "the same memory");
    for r in [&one, &two] {
        // Each tenant packet is resolved once: by a hit in one switch or by a gateway.
        let hits: u64 = r.hits_by_layer(false).iter().map(|(_, n)| n).sum();
        assert_eq!(hits + r.stats.gateway_packets, r.stats.tenant_packets_sent, "{}: {:?}", r.scheme, r.stats);
        assert_eq!(r.completed_flows, r.flows, "{}", r.scheme);
    }
    // The documented direction (docs/extending.md): fewer conflict misses, fewer packets through
    // the gateways, at the same number of slots.
    let (g1, g2) = (one.stats.gateway_packets as f64, two.stats.gateway_packets as f64);
    assert!(g2 < 0.9 * g1, "two-way: {g2} gateway packets, direct-mapped: {g1}");
}

/// Table 4's scenario, shortened: 64 senders each send 300 UDP packets 1 µs apart to VM 5200,
/// which moves to server 68 (another pod) 150 µs in. Cached mappings go stale; SwitchV2P must
/// find and invalidate them in both ways, and every packet still reaches the VM.
#[test]
fn the_two_way_cache_keeps_switchv2p_correct_across_a_migration() {
    let mut spec = small_spec();
    spec.rows = Arc::new(vm_traces::incast(64, spec.net.vms_per_server, 5200, 300, 1000));
    spec.transport = Transport::UdpPacket { payload_bytes: vm_traces::UDP_PAYLOAD_BYTES };
    spec.migrations = vec![(5200, 150_000_000, 68)];
    let r = run(&spec, Scheme::Custom(&SWITCHV2P_2WAY));
    assert!(r.stats.misdelivered_packets > 0 && r.stats.invalidation_packets > 0 && r.stats.invalidated_entries > 0, "the migration went unnoticed: {:?}", r.stats);
    assert!(r.stats.last_misdelivered_ps < 250_000_000, "stale entries outlived the invalidations: {:?}", r.stats);
    assert_eq!(r.completed_flows, 64);
}

/// A cache for a protocol that keeps none.
static NOCACHE_WITH_CACHE: CacheScheme = CacheScheme { name: "nocache_with_cache", protocol: Scheme::NoCache, cache: direct_mapped };

#[test]
fn the_experiment_names_its_scheme_and_rejects_bad_input() {
    let e = run_scheme(&small_spec(), Scheme::Custom(&NOCACHE_WITH_CACHE), &mut |_| {}).err().expect("refused").to_string();
    assert!(e.starts_with("scheme 'nocache_with_cache': its protocol nocache keeps no switch cache"), "{e}");

    let e = find(v2p_twoway::experiments(), "example.v2p_twoway").unwrap();
    let err = |sets: &[(&str, &str)]| e.run(&overrides(sets), true, &mut |_| {}).err().expect("an error").to_string();
    let msg = err(&[("schemes", "switchv2p,switchv2p_3way")]);
    assert!(msg.starts_with("parameter 'schemes': expected each item to be one of nocache") && msg.contains("switchv2p_2way") && msg.ends_with("got 'switchv2p_3way'"), "{msg}");
    assert_eq!(err(&[("cache_fractions", "0.5,0")]), "parameter 'cache_fractions': expected positive fractions, got '0'");

    let out = e.run(&overrides(&[("schemes", "switchv2p_2way"), ("cache_fractions", "0.05"), ("duration_ms", "0.2")]), true, &mut |_| {}).unwrap();
    let s = &out.summary;
    assert_eq!(s["experiment"], "example.v2p_twoway");
    assert_eq!(s["schemes"]["nocache"]["0"]["hit_rate"], 0.0, "NoCache runs as the baseline");
    assert!(s["schemes"]["switchv2p_2way"]["0.05"]["fct_improvement"].as_f64().unwrap() > 1.0, "{s:?}");
    assert_eq!(out.tables[0].rows(), 2);
}
