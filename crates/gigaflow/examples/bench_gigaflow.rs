//! `cargo run --release -p innet-gigaflow --example bench_gigaflow [FLOWS...]`: the same
//! benchmark as `innet bench gigaflow`, one JSON line per pipeline.
fn main() {
    let pipelines: Vec<(String, String)> = std::env::args()
        .skip(1)
        .map(|p| match std::fs::read_to_string(&p) {
            Ok(t) => (p, t),
            Err(e) => {
                eprintln!("{p}: {e}");
                std::process::exit(2)
            }
        })
        .collect();
    let opts = innet_gigaflow::bench::BenchOptions { pipelines, packets: 10_000, traffic: None, seed: 1 };
    match innet_gigaflow::bench::bench_gigaflow(&opts) {
        Ok(v) => v.iter().for_each(|r| println!("{r}")),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    }
}
