//! `cargo run --release -p innet-gigaflow --example bench_gigaflow [FLOWS | pb:NAME ...]`: the
//! same benchmark as `innet bench gigaflow`, one JSON line per pipeline; `pb:OLS` renders a
//! Pipebench pipeline with 10K ACL rules.
fn main() {
    let pipelines: Vec<(String, String)> = std::env::args()
        .skip(1)
        .map(|p| {
            let text = match p.strip_prefix("pb:") {
                Some(name) => innet_gigaflow::pipebench::render_pipeline(name, innet_gigaflow::pipebench::Profile::Acl, 10_000, 1).map(|r| r.text),
                None => std::fs::read_to_string(&p).map_err(|e| e.to_string()),
            };
            match text {
                Ok(t) => (p, t),
                Err(e) => {
                    eprintln!("{p}: {e}");
                    std::process::exit(2)
                }
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
