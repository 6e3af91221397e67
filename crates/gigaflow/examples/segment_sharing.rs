//! How much a pipeline's traffic can share sub-traversals, independent of cache capacity (a
//! command, not a test):
//! `cargo run --release -p innet-gigaflow --example segment_sharing -- NAME LOCALITY RULES FLOWS [K] [noct] [macps] [own_l2] [fresh_ports] [one_port] [low_sampled]`
//!
//! Runs Pipebench traffic (ACL profile, seed 1) through the slow path — every datapath pass of
//! each flow's first packet (conntrack state `+trk+new`), as the caches see it; `noct` runs the
//! pipeline without conntrack (`pipelines::without_conntrack`), `macps` with MAC-only port
//! security (`pipelines::mac_only_port_security`), `own_l2` takes each flow's L2
//! part from its own chain (`recombine_l2: false`), `fresh_ports` gives high-locality flows
//! fresh ephemeral source ports, `one_port` sends every packet in on port 1
//! (`single_in_port: true`, the artifact's one link; without it ports 1–4, the experiments' default), `low_sampled`
//! gives low-locality flows fresh headers inside their rules (`low_anchors: false`) — and the DP partitioner over K
//! (default 4) unlimited LTM tables, and prints: the upcalls Megaflow and Gigaflow would need
//! with no capacity limit (a pass needs one when its Megaflow, or one of its sub-traversal
//! entries, is new), per LTM table the distinct entries, the flows that install into it and,
//! per field in its entries' masks, the distinct entries left when that field is ignored and
//! the vSwitch tables whose lookups examine it there (which field makes a table per flow), and
//! the most common segment shapes (`T<table>:[vSwitch tables]{matched fields}`) with one
//! traversal's per-lookup field sets.
use innet_ofswitch::conntrack::Conntrack;
use innet_ofswitch::fields::Flow;
use innet_gigaflow::ltm::sub_traversal_mask;
use innet_gigaflow::partition::{field_set, Partitioner, PARTITION_FIELDS};
use innet_pipebench::{pipelines, ruleset, Locality, Profile, TrafficConfig};
use innet_ofswitch::{Field, Pipeline};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

fn fields(mask: &Flow) -> String {
    Field::all().filter(|&f| mask.get(f) != 0).map(|f| f.name()).collect::<Vec<_>>().join(",")
}

fn set_names(set: u8) -> String {
    PARTITION_FIELDS.iter().enumerate().filter(|(i, _)| set >> i & 1 == 1).map(|(_, f)| f.name()).collect::<Vec<_>>().join("+")
}

type Entry = (Vec<u8>, Flow, Flow);

fn main() -> Result<(), String> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 5 {
        return Err("usage: segment_sharing NAME LOCALITY RULES FLOWS [K] [noct] [macps] [own_l2] [fresh_ports] [one_port] [low_sampled]".into());
    }
    let num = |s: &str| s.parse::<usize>().map_err(|e| format!("`{s}`: {e}"));
    let k = if a.len() > 5 { num(&a[5])? } else { 4 };
    let flag = |f: &str| a.iter().skip(6).any(|s| s == f);
    let noct = flag("noct");
    let spec = pipelines::pipeline(&a[1])?;
    let spec = if noct { pipelines::without_conntrack(spec) } else { spec };
    let spec = if flag("macps") { pipelines::mac_only_port_security(spec) } else { spec };
    let rs = ruleset::generate(&spec, Profile::parse("acl")?, num(&a[3])?, 1)?;
    let p = Pipeline::parse(&rs.text).map_err(|e| e.to_string())?;
    let cfg = TrafficConfig { n_flows: num(&a[4])?, locality: Locality::parse(&a[2])?, seed: 1, recombine_l2: !flag("own_l2"), fresh_source_ports: flag("fresh_ports"), single_in_port: flag("one_port"), low_anchors: !flag("low_sampled"), ..TrafficConfig::default() };
    let traffic = innet_pipebench::generate_traffic(&rs, &cfg)?;
    let tables: Vec<usize> = (0..k).collect();
    let mut part = Partitioner::default();
    let mut ct = Conntrack::default();
    let mut megaflows: HashSet<(Flow, Flow)> = HashSet::new();
    let mut entries: Vec<HashSet<Entry>> = vec![HashSet::new(); k];
    let mut flows_into: Vec<usize> = vec![0; k];
    // Per LTM table and field: the vSwitch tables whose lookups examine it in an entry.
    let mut examiners: Vec<BTreeMap<Field, BTreeSet<u8>>> = vec![BTreeMap::new(); k];
    let mut shapes: HashMap<String, (usize, String)> = HashMap::new();
    let (mut mf_upcalls, mut gf_upcalls, mut passes) = (0, 0, 0);
    for f in &traffic.flows {
        let mut touched = vec![false; k];
        for tr in p.trace_passes(&f.headers, |flow, zone| ct.state(flow, zone)) {
            if tr.visits.is_empty() {
                continue;
            }
            passes += 1;
            if megaflows.insert((tr.megaflow_mask, tr.initial_flow.masked(&tr.megaflow_mask))) {
                mf_upcalls += 1;
            }
            let sets: Vec<u8> = tr.visits.iter().map(|v| field_set(&v.window_wildcards)).collect();
            let mut new_entry = false;
            let mut shape = String::new();
            for s in part.disjoint(&sets, &tables) {
                let seg = &tr.visits[s.start..=s.end];
                let mask = sub_traversal_mask(seg);
                let path: Vec<u8> = seg.iter().map(|v| v.table).collect();
                shape += &format!("T{}:{:?}{{{}}} ", s.table, path, fields(&mask));
                for v in seg {
                    for fld in Field::all().filter(|&x| v.window_wildcards.get(x) != 0) {
                        examiners[s.table].entry(fld).or_default().insert(v.table);
                    }
                }
                touched[s.table] = true;
                new_entry |= entries[s.table].insert((path, mask, seg[0].flow.masked(&mask)));
            }
            gf_upcalls += new_entry as usize;
            let lookups = || tr.visits.iter().map(|v| format!("{}:{}", v.table, set_names(field_set(&v.window_wildcards)))).collect::<Vec<_>>().join(" ");
            shapes.entry(shape).or_insert_with(|| (0, lookups())).0 += 1;
        }
        for (t, hit) in touched.iter().enumerate() {
            flows_into[t] += *hit as usize;
        }
    }
    println!(
        "{} {} {} {} flows {}, passes {passes}: upcalls with unlimited tables MF {mf_upcalls}, GF (K={k}) {gf_upcalls}",
        a[1],
        a.iter().skip(6).cloned().collect::<Vec<_>>().join(" "),
        if noct { "without conntrack" } else { "as built" },
        a[2],
        traffic.flows.len()
    );
    for (i, e) in entries.iter().enumerate() {
        println!("  LTM table {i}: {} entries from {} flows", e.len(), flows_into[i]);
        for (fld, by) in &examiners[i] {
            let without: HashSet<_> = e
                .iter()
                .map(|(path, mask, key)| {
                    let (mut m, mut v) = (*mask, *key);
                    m.set(*fld, 0);
                    v.set(*fld, 0);
                    (path.clone(), m, v)
                })
                .collect();
            println!("    without {:<10} {:>7} entries   examined by tables {:?}", fld.name(), without.len(), by);
        }
    }
    let mut shapes: Vec<_> = shapes.into_iter().collect();
    shapes.sort_by(|x, y| y.1 .0.cmp(&x.1 .0).then(x.0.cmp(&y.0)));
    for (shape, (n, lookups)) in shapes.iter().take(8) {
        println!("{n:7} {shape}\n          lookups {lookups}");
    }
    Ok(())
}
