//! Run one SwitchV2P experiment from the command line and print its summary:
//! `cargo run --release -p innet-switchv2p --example v2p_run -- switchv2p.cachesize [--quick] [k=v ...]`.
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: v2p_run EXPERIMENT [--quick] [key=value ...]");
        std::process::exit(2);
    };
    let quick = args.iter().any(|a| a == "--quick");
    let mut overrides = BTreeMap::new();
    for a in args.iter().skip(1).filter(|a| a.contains('=')) {
        let (k, v) = a.split_once('=').expect("checked");
        overrides.insert(k.to_string(), v.to_string());
    }
    let Some(exp) = innet_switchv2p::experiments().into_iter().find(|e| e.info().name == name) else {
        eprintln!("unknown experiment {name}");
        std::process::exit(2);
    };
    let t = std::time::Instant::now();
    match exp.run(&overrides, quick, &mut |_| {}) {
        Ok(out) => {
            println!("{}", out.summary_json());
            eprintln!("wall time: {:.2} s", t.elapsed().as_secs_f64());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
