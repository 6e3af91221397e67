//! Pipebench: every pipeline has the paper's Table 1 number of tables and distinct traversals,
//! both as enumerated from its spec and as counted by running generated traffic through the
//! slow path; flow files parse; generation is deterministic.

use innet_gigaflow::pipebench::{self, pipelines, Locality, Profile, TrafficConfig};
use innet_gigaflow::Pipeline;
use std::collections::{BTreeMap, BTreeSet};

fn built() -> Vec<&'static str> {
    pipelines::NAMES.iter().copied().filter(|n| !pipelines::pipeline(n).unwrap().tables.is_empty()).collect()
}

#[test]
fn specs_have_table_1_counts() {
    for name in built() {
        let spec = pipelines::pipeline(name).unwrap();
        let trav = spec.traversals().unwrap();
        eprintln!("{name}: {} tables, {} traversals", spec.tables.len(), trav.len());
        for t in &trav {
            eprintln!("  {t:?}");
        }
        assert_eq!(spec.tables.len(), spec.paper_tables, "{name} tables");
        assert_eq!(trav.len(), spec.paper_traversals, "{name} traversals");
    }
}

/// Distinct table sequences the slow path takes over the traffic.
fn traffic_traversals(name: &str, profile: Profile, locality: Locality, n_rules: usize, n_flows: usize) -> BTreeMap<Vec<u8>, usize> {
    let rs = pipebench::render_pipeline(name, profile, n_rules, 7).unwrap();
    let p = Pipeline::parse(&rs.text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let cfg = TrafficConfig { n_flows, locality, seed: 3, ..TrafficConfig::default() };
    let traffic = pipebench::generate_traffic(&rs, &cfg).unwrap();
    let mut seen = BTreeMap::new();
    for f in &traffic.flows {
        let t = p.trace(&f.headers);
        *seen.entry(t.visits.iter().map(|v| v.table).collect::<Vec<u8>>()).or_insert(0) += 1;
    }
    seen
}

#[test]
fn traffic_realises_exactly_the_table_1_traversals() {
    for name in built() {
        let spec = pipelines::pipeline(name).unwrap();
        let expected = spec.traversals().unwrap();
        let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
        for (profile, locality) in [(Profile::Acl, Locality::Low), (Profile::Fw, Locality::High), (Profile::Ipc, Locality::Low)] {
            let s = traffic_traversals(name, profile, locality, 1000, 5000);
            eprintln!("{name} {profile:?} {locality:?}: {} traversals {:?}", s.len(), s.values().collect::<Vec<_>>());
            for t in s.keys() {
                assert!(expected.contains(t), "{name}: traversal {t:?} is not one the spec allows");
            }
            seen.extend(s.into_keys());
        }
        let missing: Vec<_> = expected.difference(&seen).collect();
        assert!(missing.is_empty(), "{name}: traversals never taken: {missing:?}");
        assert_eq!(seen.len(), spec.paper_traversals, "{name}");
    }
}

#[test]
fn generation_is_deterministic_and_seeded() {
    let a = pipebench::render_pipeline("PSC", Profile::Acl, 300, 1).unwrap();
    let b = pipebench::render_pipeline("psc", Profile::Acl, 300, 1).unwrap();
    let c = pipebench::render_pipeline("PSC", Profile::Acl, 300, 2).unwrap();
    assert_eq!(a.text, b.text);
    assert_ne!(a.text, c.text);
    let cfg = TrafficConfig { n_flows: 2000, ..TrafficConfig::default() };
    let ta = pipebench::generate_traffic(&a, &cfg).unwrap();
    let tb = pipebench::generate_traffic(&b, &cfg).unwrap();
    assert_eq!(ta.packets, tb.packets);
    assert!(ta.flows.iter().zip(&tb.flows).all(|(x, y)| x.headers == y.headers));
}

#[test]
fn bad_names_and_sizes_are_errors() {
    assert!(pipebench::render_pipeline("XYZ", Profile::Acl, 10, 1).unwrap_err().contains("OFD"));
    assert!(pipebench::render_pipeline("PSC", Profile::Acl, 0, 1).is_err());
    assert!(Profile::parse("ipsec").is_err());
}
