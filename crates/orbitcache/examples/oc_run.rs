//! Run one rack configuration and print what it measured:
//! `cargo run --release -p innet-orbitcache --example oc_run -- SCHEME OFFERED_RPS [key=value ...]`
//! (keys: alpha, writes, duration_us, cache_size, hkey_bits, period_us, window_us, service_ns,
//! placement, size_seed, pipeline_ns, recirc_gbps, max_loss, search=1).

use innet_orbitcache::run::{run, search, RunSpec, Scheme};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut spec = RunSpec { scheme: Scheme::parse(args.first().map(String::as_str).unwrap_or("orbitcache")).unwrap(), ..Default::default() };
    spec.offered_rps = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2e6);
    let mut do_search = false;
    let mut max_loss = 0.001;
    for kv in args.iter().skip(2) {
        let (k, v) = kv.split_once('=').expect("key=value");
        match k {
            "alpha" => spec.workload.zipf_alpha = v.parse().unwrap(),
            "writes" => spec.workload.write_ratio = v.parse().unwrap(),
            "duration_us" => spec.duration_us = v.parse().unwrap(),
            "cache_size" => spec.cache_size = v.parse().unwrap(),
            "hkey_bits" => spec.hkey_bits = v.parse().unwrap(),
            "period_us" => spec.controller_period_us = v.parse().unwrap(),
            "window_us" => spec.server_rate_window_us = v.parse().unwrap(),
            "service_ns" => spec.server_service_ns = v.parse().unwrap(),
            "placement" => spec.workload.large_placement = v.to_string(),
            "size_seed" => spec.workload.size_seed = v.parse().unwrap(),
            "pipeline_ns" => spec.switch_pipeline_ns = v.parse().unwrap(),
            "recirc_gbps" => spec.recirculation_gbps = v.parse().unwrap(),
            "max_loss" => max_loss = v.parse().unwrap(),
            "search" => do_search = v == "1",
            _ => panic!("unknown key {k}"),
        }
    }
    let t = std::time::Instant::now();
    let r = if do_search {
        let s = search(&spec, spec.offered_rps, max_loss, 5, &mut |_| {}).unwrap();
        println!("probes {:?}", s.probes);
        s.best
    } else {
        run(&spec, &mut |_| {}).unwrap()
    };
    let wall = t.elapsed().as_secs_f64();
    println!(
        "{} offered {:.0} tput {:.0} (server {:.0} switch {:.0}) loss {:.4} p50 {:.1} p99 {:.1} sw p50 {:.1} p99 {:.1} overflow {:.4} balance {:.3} events {} wall {:.2}s",
        r.scheme.name(), r.offered_rps, r.throughput_rps, r.server_throughput_rps, r.switch_throughput_rps, r.loss,
        r.latency_p50_us, r.latency_p99_us, r.switch_latency_p50_us, r.switch_latency_p99_us, r.overflow_ratio,
        r.balancing_efficiency, r.events, wall
    );
    println!("{}", serde_json::Value::Object(r.counters.clone()));
    let mut ps = r.per_server_rps.clone();
    ps.sort_by(|a, b| b.partial_cmp(a).unwrap());
    println!("per-server top/bottom: {:.0} {:.0} .. {:.0}", ps[0], ps[1], ps[ps.len() - 1]);
}
