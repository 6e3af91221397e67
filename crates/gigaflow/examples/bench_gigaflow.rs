//! `cargo run --release -p innet-gigaflow --example bench_gigaflow [FLOWS | pb:NAME | pbt:NAME ...]`:
//! the same benchmark as `innet bench gigaflow`, one JSON line per pipeline. `pb:OLS` renders a
//! Pipebench pipeline with 10K ACL rules and runs 10,000 random packets drawn near its rules (as
//! for a flow file); `pbt:OLS` runs the first packets of 10,000 Pipebench flows instead (low
//! locality, seed 1: every flow takes one of the pipeline's full traversals).
use innet_pipebench::{Locality, Profile, TrafficConfig};

fn main() {
    // ((name, flow-file text), packets to run instead of random ones)
    type Run = ((String, String), Option<Vec<innet_ofswitch::fields::Flow>>);
    let mut runs: Vec<Run> = Vec::new();
    for p in std::env::args().skip(1) {
        let run = if let Some(name) = p.strip_prefix("pbt:") {
            innet_pipebench::render_pipeline(name, Profile::Acl, 10_000, 1).and_then(|rs| {
                let cfg = TrafficConfig { n_flows: 10_000, locality: Locality::Low, seed: 1, ..TrafficConfig::default() };
                let t = innet_pipebench::generate_traffic(&rs, &cfg)?;
                Ok(((p.clone(), rs.text), Some(t.flows.iter().map(|f| f.headers).collect())))
            })
        } else if let Some(name) = p.strip_prefix("pb:") {
            innet_pipebench::render_pipeline(name, Profile::Acl, 10_000, 1).map(|rs| ((p.clone(), rs.text), None))
        } else {
            std::fs::read_to_string(&p).map(|t| ((p.clone(), t), None)).map_err(|e| e.to_string())
        };
        match run {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("{p}: {e}");
                std::process::exit(2)
            }
        }
    }
    // No arguments: the shipped examples and the 30-table chain.
    if runs.is_empty() {
        runs.push(((String::new(), String::new()), None));
    }
    for (pipeline, traffic) in runs {
        let pipelines = if pipeline.0.is_empty() { Vec::new() } else { vec![pipeline] };
        let opts = innet_gigaflow::bench::BenchOptions { pipelines, packets: 10_000, traffic, seed: 1 };
        match innet_gigaflow::bench::bench_gigaflow(&opts) {
            Ok(v) => v.iter().for_each(|r| println!("{r}")),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2)
            }
        }
    }
}
