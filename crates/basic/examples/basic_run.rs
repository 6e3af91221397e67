//! Run `basic.fattree` from the command line and print its summary (profiling without Python):
//! `cargo run --release -p innet-basic --example basic_run -- [--quick] [key=value ...]`.
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let mut overrides = BTreeMap::new();
    for a in &args {
        if let Some((k, v)) = a.split_once('=') {
            overrides.insert(k.to_string(), v.to_string());
        } else if a != "--quick" {
            eprintln!("basic_run: expected --quick or key=value, got '{a}'");
            std::process::exit(2);
        }
    }
    let t = std::time::Instant::now();
    match innet_registry::Experiment::run(&innet_basic::fattree::BasicFattree, &overrides, quick, &mut |_| {}) {
        Ok(out) => {
            println!("{}", out.summary_json());
            eprintln!("wall time: {:.2} s", t.elapsed().as_secs_f64());
        }
        Err(e) => {
            eprintln!("basic_run: {e}");
            std::process::exit(1);
        }
    }
}
