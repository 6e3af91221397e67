//! How much a pipeline's traffic can share sub-traversals, independent of cache capacity (a
//! command, not a test):
//! `cargo run --release -p innet-gigaflow --example segment_sharing -- NAME LOCALITY RULES FLOWS [K]`
//!
//! Runs Pipebench traffic (ACL profile, seed 1) through the slow path and the DP partitioner over
//! K (default 4) unlimited LTM tables, and prints: the upcalls Megaflow and Gigaflow would need
//! with no capacity limit (a flow needs one when its Megaflow, or one of its sub-traversal
//! entries, is new), the distinct entries per LTM table, and the most common segment shapes
//! (`T<table>:[vSwitch tables]{matched fields}`) with one traversal's per-lookup field sets.
use innet_gigaflow::fields::Flow;
use innet_gigaflow::ltm::sub_traversal_mask;
use innet_gigaflow::partition::{field_set, Partitioner, PARTITION_FIELDS};
use innet_gigaflow::pipebench::{self, Locality, Profile, TrafficConfig};
use innet_gigaflow::{Field, Pipeline};
use std::collections::{HashMap, HashSet};

fn fields(mask: &Flow) -> String {
    Field::all().filter(|&f| mask.get(f) != 0).map(|f| f.name()).collect::<Vec<_>>().join(",")
}

fn set_names(set: u8) -> String {
    PARTITION_FIELDS.iter().enumerate().filter(|(i, _)| set >> i & 1 == 1).map(|(_, f)| f.name()).collect::<Vec<_>>().join("+")
}

fn main() -> Result<(), String> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 5 {
        return Err("usage: segment_sharing NAME LOCALITY RULES FLOWS [K]".into());
    }
    let num = |s: &str| s.parse::<usize>().map_err(|e| format!("`{s}`: {e}"));
    let k = if a.len() > 5 { num(&a[5])? } else { 4 };
    let rs = pipebench::render_pipeline(&a[1], Profile::parse("acl")?, num(&a[3])?, 1)?;
    let p = Pipeline::parse(&rs.text).map_err(|e| e.to_string())?;
    let cfg = TrafficConfig { n_flows: num(&a[4])?, locality: Locality::parse(&a[2])?, seed: 1, ..TrafficConfig::default() };
    let traffic = pipebench::generate_traffic(&rs, &cfg)?;
    let tables: Vec<usize> = (0..k).collect();
    let mut part = Partitioner::default();
    let mut megaflows: HashSet<(Flow, Flow)> = HashSet::new();
    let mut entries: Vec<HashSet<(Vec<u8>, Flow, Flow)>> = vec![HashSet::new(); k];
    let mut shapes: HashMap<String, (usize, String)> = HashMap::new();
    let (mut mf_upcalls, mut gf_upcalls) = (0, 0);
    for f in &traffic.flows {
        let tr = p.trace(&f.headers);
        if tr.visits.is_empty() {
            continue;
        }
        if megaflows.insert((tr.megaflow_mask, tr.initial_flow.masked(&tr.megaflow_mask))) {
            mf_upcalls += 1;
        }
        let sets: Vec<u8> = tr.visits.iter().map(|v| field_set(&v.window_wildcards)).collect();
        let mut new_entry = false;
        let mut shape = String::new();
        for s in part.disjoint(&sets, &tables) {
            let mask = sub_traversal_mask(&tr.visits[s.start..=s.end]);
            let path: Vec<u8> = tr.visits[s.start..=s.end].iter().map(|v| v.table).collect();
            shape += &format!("T{}:{:?}{{{}}} ", s.table, path, fields(&mask));
            new_entry |= entries[s.table].insert((path, mask, tr.visits[s.start].flow.masked(&mask)));
        }
        gf_upcalls += new_entry as usize;
        let lookups = || tr.visits.iter().map(|v| format!("{}:{}", v.table, set_names(field_set(&v.window_wildcards)))).collect::<Vec<_>>().join(" ");
        shapes.entry(shape).or_insert_with(|| (0, lookups())).0 += 1;
    }
    println!("{} {} flows {}: upcalls with unlimited tables MF {mf_upcalls}, GF (K={k}) {gf_upcalls}", a[1], a[2], traffic.flows.len());
    for (i, e) in entries.iter().enumerate() {
        println!("  LTM table {i}: {} entries", e.len());
    }
    let mut shapes: Vec<_> = shapes.into_iter().collect();
    shapes.sort_by(|x, y| y.1 .0.cmp(&x.1 .0).then(x.0.cmp(&y.0)));
    for (shape, (n, lookups)) in shapes.iter().take(8) {
        println!("{n:7} {shape}\n          lookups {lookups}");
    }
    Ok(())
}
