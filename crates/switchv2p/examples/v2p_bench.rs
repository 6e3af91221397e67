//! One part (one scheme at one point) of a SwitchV2P sweep, timed: prints one JSON object with
//! what it cost (`innet_switchv2p::run::RunCost`) and its packet-hops per second per core.
//!
//! `cargo run --release -p innet-switchv2p --example v2p_bench -- EXPERIMENT [--part LABEL] [k=v ...]`
//!
//! LABEL is a part's label as `innet_switchv2p::experiments::parts` gives it (e.g.
//! `"switchv2p cache_fraction=0.5"`); without `--part` the parts are listed. `bench/hop_rate.py`
//! runs it beside the k=8 UDP benchmark, interleaved.
use std::collections::BTreeMap;
use std::time::Instant;

use innet_sim::report::thread_cpu_s;
use innet_switchv2p::experiments::{part_cost, parts};
use serde_json::json;

fn fail(msg: String) -> ! {
    eprintln!("v2p_bench: {msg}");
    std::process::exit(2);
}

fn main() {
    let t0 = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        fail("usage: v2p_bench EXPERIMENT [--part LABEL] [key=value ...]".into());
    };
    let mut overrides = BTreeMap::new();
    let mut part = None;
    let mut rest = args[1..].iter();
    while let Some(a) = rest.next() {
        if a == "--part" {
            part = Some(rest.next().unwrap_or_else(|| fail("--part needs a label".into())).clone());
        } else if let Some((k, v)) = a.split_once('=') {
            overrides.insert(k.to_string(), v.to_string());
        } else {
            fail(format!("expected key=value or --part LABEL, got '{a}'"));
        }
    }
    let labels = match parts(name, &overrides, false) {
        None => fail(format!("{name} is not a SwitchV2P sweep that splits into parts")),
        Some(Err(e)) => fail(e.to_string()),
        Some(Ok(l)) => l,
    };
    let Some(part) = part else {
        for l in &labels {
            println!("{l}");
        }
        return;
    };
    let Some(index) = labels.iter().position(|l| *l == part) else {
        fail(format!("{name} has no part '{part}'; its parts: {}", labels.join("; ")));
    };
    let (label, cost) = match part_cost(name, &overrides, false, index).expect("a sweep (checked above)") {
        Ok(x) => x,
        Err(e) => fail(e.to_string()),
    };
    let cpu = thread_cpu_s().unwrap_or(0.0);
    let mut out = serde_json::to_value(&cost).expect("plain data");
    let m = out.as_object_mut().expect("a struct");
    m.insert("experiment".into(), json!(name));
    m.insert("part".into(), json!(label));
    m.insert("process_wall_s".into(), json!(t0.elapsed().as_secs_f64()));
    m.insert("process_cpu_s".into(), json!(cpu));
    let rate = |s: f64| if s > 0.0 { cost.packet_hops as f64 / s } else { 0.0 };
    m.insert("packet_hops_per_loop_s".into(), json!(rate(cost.loop_s)));
    m.insert("packet_hops_per_loop_cpu_s".into(), json!(rate(cost.loop_cpu_s)));
    m.insert("packet_hops_per_process_cpu_s".into(), json!(rate(cpu)));
    println!("{}", serde_json::to_string(&out).expect("plain data"));
}
