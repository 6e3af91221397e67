//! Replays the captures of `bench_captures` through the application switch in memory (the
//! function behind `innet bench switch`, without Python) and prints one JSON report per
//! capture: frames per second on one core, ns per frame, and the program's counters.
//!
//!   cargo run --release -p innet-appswitch --example bench_captures -- DIR
//!   cargo run --release -p innet-appswitch --example bench_replay -- DIR [REPEAT] [CASE ...]
//!
//! CASE is one of cql-hit, cql-miss, redis-hit, redis-miss (all four by default), or
//! `forward:CASE` to replay that capture through the `forward` program (the runtime alone).

use std::path::PathBuf;

use innet_appswitch::build_appswitch;
use innet_switch::real::bench::replay;
use innet_switch::real::Settings;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "/tmp".into()));
    let repeat: u32 = args
        .next()
        .map(|r| r.parse().expect("REPEAT: expected a positive integer"))
        .unwrap_or(20);
    let mut cases: Vec<String> = args.collect();
    if cases.is_empty() {
        cases = ["cql-hit", "cql-miss", "redis-hit", "redis-miss"]
            .map(String::from)
            .to_vec();
    }
    for case in cases {
        let (forward, file) = match case.strip_prefix("forward:") {
            Some(f) => (true, f.to_string()),
            None => (false, case.clone()),
        };
        let path = dir.join(format!("{file}.pcap"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (_, records) =
            innet_wire::pcap::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let frames: Vec<Vec<u8>> = records.into_iter().map(|r| r.data).collect();
        let (protocol, port) = if file.starts_with("cql") {
            ("cql", "9042")
        } else {
            ("redis", "6379")
        };
        let mut s = Settings::new(
            [("protocol", protocol), ("server_port", port)]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into_iter()
                .collect(),
        );
        let mut sw = if forward {
            innet_switch::real::builtin_programs()
                .into_iter()
                .find(|p| p.name == "forward")
                .expect("the forward program is built in")
                .instantiate(Default::default(), 2)
                .expect("forward builds")
        } else {
            build_appswitch(&mut s, 2).expect("appswitch builds")
        };
        let rep = replay(sw.as_mut(), &frames, repeat);
        println!(
            "{{\"case\":\"{case}\",\"frames_per_s\":{:.0},\"ns_per_frame\":{:.1},\"report\":{}}}",
            rep.frames_per_s,
            rep.ns_per_frame,
            rep.json()
        );
    }
}
