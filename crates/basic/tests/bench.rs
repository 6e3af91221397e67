//! `innet bench sim` on small inputs: every UDP packet of the list is delivered, htsim files
//! are read, and mismatches between a list and the topology are clear errors.

use innet_basic::{bench_sim, BenchOptions};

#[test]
fn generated_udp_list_is_delivered_in_full() {
    let r = bench_sim(&BenchOptions { k: 4, flows: 20, ..Default::default() }).unwrap();
    let f = &r.fields;
    assert_eq!(f["conservation_ok"], true);
    assert_eq!(f["dropped_packets"], 0);
    assert_eq!(f["flows"], 20);
    // 20 flows of 0.5-1.5 MB in 1000 B packets.
    let delivered = f["delivered_packets"].as_u64().unwrap();
    assert!((10_000..=30_000).contains(&delivered), "{delivered}");
    assert!(f["packet_hops"].as_u64().unwrap() >= delivered);
}

#[test]
fn reads_htsim_flow_lists_and_checks_them_against_the_topology() {
    let dir = std::env::temp_dir().join(format!("innet-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = dir.join("ok.htsim");
    std::fs::write(&ok, "Nodes 16\nConnections 2\n0->15 id 1 start 0 size 3000\n3->4 id 2 start 1000 size 1000\n").unwrap();
    let r = bench_sim(&BenchOptions { k: 4, flows_path: Some(ok), transport: "tcp".into(), ..Default::default() }).unwrap();
    assert_eq!(r.fields["flows"], 2);
    assert_eq!(r.fields["conservation_ok"], true);
    let big = dir.join("big.htsim");
    std::fs::write(&big, "Nodes 128\n0->127 id 1 start 0 size 3000\n").unwrap();
    let e = bench_sim(&BenchOptions { k: 4, flows_path: Some(big), ..Default::default() }).unwrap_err().to_string();
    assert!(e.contains("128 nodes") && e.contains("16 servers"), "{e}");
    let bad = dir.join("bad.htsim");
    std::fs::write(&bad, "Nodes 16\n0->1 id 1 start soon size 3000\n").unwrap();
    let e = bench_sim(&BenchOptions { k: 4, flows_path: Some(bad.clone()), ..Default::default() }).unwrap_err().to_string();
    assert!(e.contains(&format!("{}:2:", bad.display())), "{e}");
    let e = bench_sim(&BenchOptions { k: 5, ..Default::default() }).unwrap_err().to_string();
    assert!(e.contains("'k'"), "{e}");
}

#[test]
fn a_named_scenario_runs_reduced_with_fewer_flows() {
    // The reduced form keeps the scenario's generator: 12 flows of 0.5-1.5 MB at k=4.
    let o = BenchOptions { scenario: Some("ft4-udp".into()), scenario_flows: Some(12), ..Default::default() };
    let r = bench_sim(&o).unwrap();
    assert_eq!(r.fields["flows"], 12);
    assert_eq!(r.fields["k"], 4);
    assert_eq!(r.fields["conservation_ok"], true);
    let full = bench_sim(&BenchOptions { scenario: Some("ft4-udp".into()), flows: 12, ..Default::default() }).unwrap();
    assert_eq!(full.fields["delivered_packets"], r.fields["delivered_packets"], "same list as flows=12");
}
