//! Writes the captures the application switch's throughput benchmark replays (the paper's §5.8:
//! "inputting packets from a dump file"), as a live connection through the switch looks at its
//! ports: one CQL v4 connection whose reads all hit the cache (one key) or all miss (every key
//! new, more keys than the cache holds), and the same for Redis. The shapes are
//! `innet_appswitch::bench_capture`'s (docs/appswitch.md, "Throughput captures").
//!
//!   cargo run --release -p innet-appswitch --example bench_captures -- DIR [EXCHANGES]
//!   innet bench switch --pcap DIR/cql-hit.pcap --program appswitch --set protocol=cql --set server_port=9042

use std::path::PathBuf;

use innet_appswitch::bench_capture::{capture, pcap_bytes, Case};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "/tmp".into()));
    let exchanges: u32 = args
        .next()
        .map(|n| n.parse().expect("EXCHANGES: expected a positive integer"))
        .unwrap_or(10_000);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    for case in Case::ALL {
        let cap = capture(case, exchanges);
        let path = dir.join(format!("{}.pcap", case.name()));
        std::fs::write(&path, pcap_bytes(&cap))
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!(
            "{}: {} frames, {} answered by the switch",
            path.display(),
            cap.frames.len(),
            cap.hits.len()
        );
    }
}
