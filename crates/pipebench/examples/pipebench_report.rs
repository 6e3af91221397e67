//! Pipebench report (a command, not a test): for every pipeline, profile and locality, the flow
//! file's size, generation times, and the distinct traversals the slow path takes over the
//! traffic against Table 1.
//! `cargo run --release -p innet-gigaflow --example pipebench_report -- [RULES] [FLOWS]`

use innet_pipebench::{pipelines, Locality, Profile, TrafficConfig};
use innet_ofswitch::Pipeline;
use std::collections::BTreeSet;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n_rules: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let n_flows: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    println!("| pipeline | profile | locality | flow-file rules | render ms | flows | packets | traffic ms | trace µs/flow | flows on their chain's traversal | traversals (traffic / spec / Table 1) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for name in pipelines::NAMES {
        for profile in [Profile::Acl, Profile::Fw, Profile::Ipc] {
            let t0 = Instant::now();
            let rs = innet_pipebench::render_pipeline(name, profile, n_rules, 1).expect("render");
            let render_ms = t0.elapsed().as_secs_f64() * 1e3;
            let p = Pipeline::parse(&rs.text).expect("parse");
            let spec_n = rs.spec.traversals().expect("traversals").len();
            for locality in [Locality::High, Locality::Low] {
                let cfg = TrafficConfig { n_flows, locality, seed: 1, ..TrafficConfig::default() };
                let t1 = Instant::now();
                let traffic = innet_pipebench::generate_traffic(&rs, &cfg).expect("traffic");
                let traffic_ms = t1.elapsed().as_secs_f64() * 1e3;
                let t2 = Instant::now();
                let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
                let mut on_chain = 0usize;
                for f in &traffic.flows {
                    let tables: Vec<u8> = p.traversal_tables(&f.headers);
                    let chain = rs.chains[f.chain as usize];
                    let planned: Vec<u8> = rs.paths[chain.path as usize].iter().map(|s| s.table()).collect();
                    on_chain += (tables == planned) as usize;
                    seen.insert(tables);
                }
                let trace_us = t2.elapsed().as_secs_f64() * 1e6 / traffic.flows.len() as f64;
                println!(
                    "| {name} | {} | {locality:?} | {} | {render_ms:.0} | {} | {} | {traffic_ms:.0} | {trace_us:.1} | {:.0}% | {} / {spec_n} / {} |",
                    profile.name(),
                    rs.rules_per_table.values().sum::<usize>(),
                    traffic.flows.len(),
                    traffic.packets.len(),
                    100.0 * on_chain as f64 / traffic.flows.len() as f64,
                    seen.len(),
                    rs.spec.paper_traversals
                );
            }
        }
    }
}
