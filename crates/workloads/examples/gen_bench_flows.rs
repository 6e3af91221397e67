//! Writes the simulator benchmark's flow lists (htsim connection matrices) into bench/flows/:
//! 1,000 flows, sizes uniform in 0.5–1.5 MB, Poisson arrivals at 50% of the total host
//! bandwidth (100 Gbps hosts), uniformly random src ≠ dst, seed 1 — for k = 4 and k = 8.
//!
//! `cargo run -p innet-workloads --example gen_bench_flows [OUT_DIR]`

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "bench/flows".into());
    std::fs::create_dir_all(&out).expect("create output directory");
    for k in [4u32, 8] {
        let hosts = k * k * k / 4;
        let flows = innet_workloads::uniform_size_flows(hosts, 100_000_000_000, 0.5, 1000, 500_000, 1_500_000, 1)
            .expect("valid parameters");
        let path = format!("{out}/ft{k}_udp.htsim");
        std::fs::write(&path, innet_workloads::htsim::write(hosts, &flows)).expect("write flow list");
        let packets: u64 = flows.iter().map(|f| f.size_bytes.div_ceil(1000)).sum();
        println!("{path}: {} flows, {packets} packets of 1000 B", flows.len());
    }
}
