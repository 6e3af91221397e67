//! `basic.fattree` through the experiment contract: the summary keys the issue names, the
//! conservation law, byte-identical summaries for a seed, and clear errors for bad parameters.

use std::collections::BTreeMap;

use innet_basic::experiments;
use innet_registry::{Experiment, ExperimentError};

fn fattree() -> Box<dyn Experiment> {
    experiments().into_iter().find(|e| e.info().name == "basic.fattree").expect("registered")
}

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn quick_run_has_the_contract_keys_and_conserves_packets() {
    let out = fattree().run(&set(&[("flows", "300")]), true, &mut |_| {}).unwrap();
    let s = &out.summary;
    for k in [
        "flows",
        "fct_mean_us",
        "fct_p99_us",
        "first_packet_latency_mean_us",
        "delivered_packets",
        "dropped_packets",
        "conservation_ok",
        "seed",
    ] {
        assert!(s.contains_key(k), "missing {k}");
    }
    assert_eq!(s["conservation_ok"], true);
    assert_eq!(s["flows"], 300);
    assert_eq!(s["completed_flows"], 300);
    let fct = s["fct_mean_us"].as_f64().unwrap();
    let fpl = s["first_packet_latency_mean_us"].as_f64().unwrap();
    // A first packet crosses at most 5 switches (6 links of 1 µs); flows take longer than that.
    assert!(fpl > 2.0 && fpl < 50.0, "fpl {fpl}");
    assert!(fct > fpl, "fct {fct} fpl {fpl}");
    assert_eq!(out.tables.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["flows", "switches", "ports"]);
    assert_eq!(out.tables[0].rows(), 300);
    assert_eq!(out.tables[1].rows(), 80);
}

#[test]
fn same_seed_gives_a_byte_identical_summary() {
    let a = fattree().run(&set(&[("flows", "200"), ("seed", "7")]), true, &mut |_| {}).unwrap();
    let b = fattree().run(&set(&[("flows", "200"), ("seed", "7")]), true, &mut |_| {}).unwrap();
    let c = fattree().run(&set(&[("flows", "200"), ("seed", "8")]), true, &mut |_| {}).unwrap();
    assert_eq!(a.summary_json(), b.summary_json());
    assert_ne!(a.summary_json(), c.summary_json());
}

#[test]
fn udp_and_websearch_variants_run() {
    let out = fattree()
        .run(&set(&[("flows", "100"), ("transport", "udp"), ("trace", "websearch")]), true, &mut |_| {})
        .unwrap();
    assert_eq!(out.summary["conservation_ok"], true);
}

#[test]
fn bad_parameters_name_the_field() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("load", "1.5")], "'load'"),
        (&[("trace", "tpc")], "'trace'"),
        (&[("transport", "quic")], "'transport'"),
        (&[("cores", "10")], "topology.cores"),
        (&[("congestion_control", "bbr")], "'congestion_control'"),
        (&[("flws", "10")], "'flws'"),
        (&[("flows", "ten")], "'flows'"),
    ];
    for (over, want) in cases {
        let e = fattree().run(&set(over), true, &mut |_| {}).unwrap_err();
        assert!(matches!(e, ExperimentError::BadParam { .. }), "{e:?}");
        assert!(e.to_string().contains(want), "{e} should mention {want}");
    }
}

#[test]
fn captures_chosen_nodes_to_pcap() {
    let path = std::env::temp_dir().join(format!("innet-fattree-{}.pcap", std::process::id()));
    let p = path.to_str().unwrap().to_string();
    let out = fattree()
        .run(&set(&[("flows", "50"), ("pcap_nodes", "host0,tor0.0"), ("pcap_file", &p)]), true, &mut |_| {})
        .unwrap();
    assert!(out.summary["pcap"].as_str().unwrap().contains("frames written"));
    let (_, recs) = innet_wire::pcap::parse(&std::fs::read(&path).unwrap()).unwrap();
    assert!(!recs.is_empty());
    assert!(recs.iter().all(|r| r.data.len() <= 128 && r.orig_len >= r.data.len() as u32));
    let e = fattree().run(&set(&[("flows", "5"), ("pcap_nodes", "host9999")]), true, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("'pcap_nodes'") && e.to_string().contains("host9999"), "{e}");
}
