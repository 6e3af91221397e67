//! `cargo run --release -p innet-gigaflow --example slowpath_cost -- (pb|pbt):PSC [PACKETS]`: only the
//! Gigaflow slow path of `bench_gigaflow` (the same packets, cache and config: every miss
//! traversed, partitioned with DP onto 4 tables and installed into an unbounded cache), so it can
//! run under callgrind, where instruction counts are a load-independent measure of the cost per
//! miss:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='innet_gigaflow::nic::Offload::process' \
//!     target/release/examples/slowpath_cost pb:PSC 2000
//! callgrind_annotate --inclusive=yes callgrind.out.* | grep -E 'Pipeline::trace|GigaflowCache::(partition|install)'
//! ```
//! Divide by the misses it prints. `pb:NAME` renders a Pipebench pipeline with 10K ACL rules and
//! draws random packets near its rules (as the bench does); `pbt:NAME` uses the first packets of
//! PACKETS Pipebench flows instead (low locality, seed 1); a path reads a flow file.
use innet_gigaflow::ltm::GigaflowConfig;
use innet_gigaflow::nic::{NicModel, Offload};
use innet_pipebench::{Locality, Profile, TrafficConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(which) = args.next() else {
        eprintln!("usage: slowpath_cost (pb:NAME | FLOWS) [PACKETS]");
        std::process::exit(2)
    };
    let packets: usize = match args.next().map(|n| n.parse()) {
        None => 10_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("PACKETS: {e}");
            std::process::exit(2)
        }
    };
    let name = which.strip_prefix("pbt:").or(which.strip_prefix("pb:"));
    let ruleset = name.map(|n| innet_pipebench::render_pipeline(n, Profile::Acl, 10_000, 1));
    let text = match &ruleset {
        Some(r) => r.as_ref().map(|r| r.text.clone()).map_err(|e| e.clone()),
        None => std::fs::read_to_string(&which).map_err(|e| e.to_string()),
    };
    let p = match text.and_then(|t| innet_ofswitch::slowpath::Pipeline::parse(&t).map_err(|e| e.to_string())) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{which}: {e}");
            std::process::exit(2)
        }
    };
    let pk = match (&ruleset, which.starts_with("pbt:")) {
        (Some(Ok(rs)), true) => {
            let cfg = TrafficConfig { n_flows: packets, locality: Locality::Low, seed: 1, ..TrafficConfig::default() };
            match innet_pipebench::generate_traffic(rs, &cfg) {
                Ok(t) => t.flows.iter().map(|f| f.headers).collect(),
                Err(e) => {
                    eprintln!("{which}: {e}");
                    std::process::exit(2)
                }
            }
        }
        _ => innet_ofswitch::packetgen::random_packets(&p, packets, 8, 1),
    };
    let big = GigaflowConfig { entries_per_table: 1 << 20, max_masks: 1 << 20, count_coverage: false, ..Default::default() };
    let mut gf = Offload::gigaflow(&p, big, NicModel::default()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    for (i, f) in pk.iter().enumerate() {
        gf.process(f, i as u64);
    }
    let s = gf.stats;
    let per = |ns: u64| ns as f64 / s.misses.max(1) as f64 / 1e3;
    println!(
        "{which}: packets {} misses {} lookups/miss {:.2} subtables/miss {:.1} | wall us/miss: traversal {:.2} partition {:.2} rulegen {:.2}",
        s.packets,
        s.misses,
        s.upcall_lookups as f64 / s.misses.max(1) as f64,
        s.upcall_subtables as f64 / s.misses.max(1) as f64,
        per(s.clock.traversal_ns),
        per(s.clock.partition_ns),
        per(s.clock.rulegen_ns)
    );
}
