//! Replays SwitchVM tenant captures through the `switchvm` real-switch program in memory (the
//! function behind `innet bench switch`, without Python) and prints one JSON line per capture;
//! under `valgrind --tool=callgrind` it gives load-independent instructions per frame.
//!
//!   python3 bench/switch/switchvm_captures.py DIR
//!   cargo run --release -p innet-switchvm --example bench_replay -- DIR [REPEAT] [CASE ...]
//!
//! CASE is in_packet, in_switch or plain (all three by default); the switch authorizes tenants
//! 7 and 8 with the counter as their default DPF, as the captures expect.

use std::path::PathBuf;

use innet_dataplane::real::bench::replay;
use innet_dataplane::real::Settings;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "/tmp".into()));
    let repeat: u32 = match args.next().map(|r| r.parse()) {
        None => 20,
        Some(Ok(r)) if r > 0 => r,
        Some(_) => {
            eprintln!("bench_replay: REPEAT must be a positive whole number");
            std::process::exit(2);
        }
    };
    let mut cases: Vec<String> = args.collect();
    if cases.is_empty() {
        cases = ["in_packet", "in_switch", "plain"].map(String::from).to_vec();
    }
    let spec = innet_switchvm::real::switch_programs().remove(0);
    for case in cases {
        let path = dir.join(format!("{case}.pcap"));
        let frames: Vec<Vec<u8>> = match std::fs::read(&path).map_err(|e| e.to_string()).and_then(|b| innet_wire::pcap::parse(&b).map_err(|e| e.to_string())) {
            Ok((_, records)) => records.into_iter().map(|r| r.data).collect(),
            Err(e) => {
                eprintln!("bench_replay: {}: {e}", path.display());
                std::process::exit(2);
            }
        };
        let settings = [("tenants", "7,8"), ("default_dpf", "counter")].map(|(k, v)| (k.to_string(), v.to_string())).into_iter().collect();
        let mut s = Settings::new(settings);
        let mut sw = (spec.build)(&mut s, 2).expect("the switchvm program builds");
        let rep = replay(sw.as_mut(), &frames, repeat);
        println!("{{\"case\":\"{case}\",\"frames_per_s\":{:.0},\"ns_per_frame\":{:.1},\"report\":{}}}", rep.frames_per_s, rep.ns_per_frame, rep.json());
    }
}
