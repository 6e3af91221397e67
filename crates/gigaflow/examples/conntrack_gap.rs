//! GF − MF with and without conntrack (issue 22): for each pipeline given, the e2e run
//! (high locality, or low with `INNET_LOCALITY=low`; MF vs GF 4×N, DP, no mask limit, no eviction) on the pipeline as built —
//! OLS and ANT recirculate through `ct(table=N)`, ANT decrements the TTL — and on the same
//! pipeline with conntrack and dec_ttl removed (`pipelines::without_conntrack`, the form before
//! conntrack was modelled), same rules and traffic. Deterministic counts.
//!
//! `cargo run --release -p innet-gigaflow --example conntrack_gap -- RULES FLOWS MF_ENTRIES GF_ENTRIES NAME...`
//! (the reduced size of docs/results/gigaflow.md: 10000 30000 9600 2400 OLS ANT).

use innet_gigaflow::experiments::{run_cache, CacheSpec};
use innet_gigaflow::ltm::GigaflowConfig;
use innet_gigaflow::megaflow::Eviction;
use innet_gigaflow::nic::NicModel;
use innet_pipebench::{pipelines, ruleset, Locality, Profile, TrafficConfig};
use innet_ofswitch::Pipeline;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 5 {
        eprintln!("usage: conntrack_gap RULES FLOWS MF_ENTRIES GF_ENTRIES NAME...");
        std::process::exit(2);
    }
    let num = |i: usize| a[i].parse::<usize>().unwrap_or_else(|_| panic!("argument {} must be a number, got {}", i + 1, a[i]));
    let (rules, flows, mf, gf) = (num(0), num(1), num(2), num(3));
    let locality = Locality::parse(&std::env::var("INNET_LOCALITY").unwrap_or_else(|_| "high".into())).unwrap_or_else(|e| panic!("INNET_LOCALITY: {e}"));
    println!("| pipeline | form | packets (passes) | arrivals | MF hit rate | GF hit rate | GF − MF (points) | MF misses | GF misses | MF per-arrival | GF per-arrival |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for name in &a[4..] {
        for stateful in [true, false] {
            let spec = pipelines::pipeline(name).unwrap_or_else(|e| panic!("{e}"));
            let spec = if stateful { spec } else { pipelines::without_conntrack(spec) };
            let rs = ruleset::generate(&spec, Profile::Acl, rules, 1).unwrap();
            let p = Pipeline::parse(&rs.text).unwrap();
            let t = innet_pipebench::generate_traffic(&rs, &TrafficConfig { n_flows: flows, locality, seed: 1, ..TrafficConfig::default() }).unwrap();
            let specs = [
                CacheSpec::Megaflow { entries: mf, eviction: Eviction::None, max_masks: usize::MAX },
                CacheSpec::Gigaflow(GigaflowConfig { entries_per_table: gf, seed: 1, ..GigaflowConfig::default() }),
            ];
            let r: Vec<_> = specs.iter().map(|s| run_cache(&p, &t, s, NicModel::default()).unwrap()).collect();
            let per_arrival = |x: &innet_gigaflow::experiments::RunResult| x.arrivals_hit as f64 / x.arrivals.max(1) as f64;
            println!(
                "| {name} | {} | {} | {} | {:.3} | {:.3} | {:+.1} | {} | {} | {:.3} | {:.3} |",
                if stateful { "conntrack (as built)" } else { "without conntrack" },
                r[0].packets,
                r[0].arrivals,
                r[0].hit_rate(),
                r[1].hit_rate(),
                100.0 * (r[1].hit_rate() - r[0].hit_rate()),
                r[0].misses,
                r[1].misses,
                per_arrival(&r[0]),
                per_arrival(&r[1]),
            );
        }
    }
}
