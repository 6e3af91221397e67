//! Packets per traversal for one pipeline (a command, not a test):
//! `cargo run --release -p innet-gigaflow --example pipebench_dist -- NAME PROFILE LOCALITY RULES FLOWS`
use innet_pipebench::{Locality, Profile, TrafficConfig};
use innet_ofswitch::Pipeline;
use std::collections::BTreeMap;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rs = innet_pipebench::render_pipeline(&a[1], Profile::parse(&a[2]).unwrap(), a[4].parse().unwrap(), 1).unwrap();
    let p = Pipeline::parse(&rs.text).unwrap();
    let cfg = TrafficConfig { n_flows: a[5].parse().unwrap(), locality: Locality::parse(&a[3]).unwrap(), seed: 1, ..TrafficConfig::default() };
    let t = innet_pipebench::generate_traffic(&rs, &cfg).unwrap();
    let mut seen: BTreeMap<Vec<u8>, (usize, usize)> = BTreeMap::new();
    for f in &t.flows {
        let tr = p.trace(&f.headers);
        let e = seen.entry(p.traversal_tables(&f.headers)).or_default();
        e.0 += 1;
        if let Some(v) = tr.visits.last() {
            if let Some(r) = v.rule {
                if e.1 == 0 { e.1 = r; }
            }
        }
    }
    for (k, (n, r)) in &seen {
        println!("{n:6} {k:?}  e.g. {}", p.rules[*r].text);
    }
}
