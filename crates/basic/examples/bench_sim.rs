//! The simulator benchmark without the Python front: `cargo run --release -p innet-basic
//! --example bench_sim -- [FLOWS.htsim] [k] [udp|tcp]` or `-- --scenario NAME [FLOWS]` (FLOWS:
//! the scenario's reduced form with that many flows); prints one JSON line.

use innet_basic::{bench_sim, BenchOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = BenchOptions::default();
    if args.first().map(String::as_str) == Some("--scenario") {
        o.scenario = args.get(1).cloned();
        if let Some(n) = args.get(2) {
            o.scenario_flows = Some(n.parse().unwrap_or_else(|_| {
                eprintln!("bench_sim: FLOWS must be a whole number of flows, got '{n}'");
                std::process::exit(2)
            }));
        }
        run(&o);
        return;
    }
    if let Some(p) = args.first().filter(|p| p.as_str() != "-") {
        o.flows_path = Some(p.into());
    }
    if let Some(k) = args.get(1) {
        o.k = k.parse().unwrap_or_else(|_| {
            eprintln!("bench_sim: k must be an even integer, got '{k}'");
            std::process::exit(2)
        });
    }
    if let Some(t) = args.get(2) {
        o.transport = t.clone();
    }
    run(&o);
}

fn run(o: &BenchOptions) {
    match bench_sim(o) {
        Ok(r) => println!("{}", serde_json::Value::Object(r.fields)),
        Err(e) => {
            eprintln!("bench_sim: {e}");
            std::process::exit(2)
        }
    }
}
