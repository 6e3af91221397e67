//! Pipebench: every pipeline has the paper's Table 1 number of tables and distinct traversals,
//! both as enumerated from its spec and as counted by running generated traffic through the
//! slow path; flow files parse; generation is deterministic.

use innet_pipebench::{pipelines, Locality, Profile, TrafficConfig};
use innet_ofswitch::Pipeline;
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
        assert_eq!(trav.len(), spec.traversals_built, "{name} traversals");
        if name != "OLS" {
            assert_eq!(spec.traversals_built, spec.paper_traversals, "{name}: Table 1");
        }
    }
}

/// Distinct table sequences the slow path takes over the traffic.
fn traffic_traversals(name: &str, profile: Profile, locality: Locality, n_rules: usize, n_flows: usize) -> BTreeMap<Vec<u8>, usize> {
    let rs = innet_pipebench::render_pipeline(name, profile, n_rules, 7).unwrap();
    let p = Pipeline::parse(&rs.text).unwrap_or_else(|e| panic!("{name}: {e}"));
    // Every port: Table 1 counts traversals that only traffic from ports 2-4 takes.
    let cfg = TrafficConfig { n_flows, locality, seed: 3, single_in_port: false, ..TrafficConfig::default() };
    let traffic = innet_pipebench::generate_traffic(&rs, &cfg).unwrap();
    let mut seen = BTreeMap::new();
    for f in &traffic.flows {
        *seen.entry(p.traversal_tables(&f.headers)).or_insert(0) += 1;
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
        assert_eq!(seen.len(), spec.traversals_built, "{name}");
    }
}

#[test]
fn generation_is_deterministic_and_seeded() {
    let a = innet_pipebench::render_pipeline("PSC", Profile::Acl, 300, 1).unwrap();
    let b = innet_pipebench::render_pipeline("psc", Profile::Acl, 300, 1).unwrap();
    let c = innet_pipebench::render_pipeline("PSC", Profile::Acl, 300, 2).unwrap();
    assert_eq!(a.text, b.text);
    assert_ne!(a.text, c.text);
    let cfg = TrafficConfig { n_flows: 2000, ..TrafficConfig::default() };
    let ta = innet_pipebench::generate_traffic(&a, &cfg).unwrap();
    let tb = innet_pipebench::generate_traffic(&b, &cfg).unwrap();
    assert_eq!(ta.packets, tb.packets);
    assert!(ta.flows.iter().zip(&tb.flows).all(|(x, y)| x.headers == y.headers));
}

#[test]
fn bad_names_and_sizes_are_errors() {
    assert!(innet_pipebench::render_pipeline("XYZ", Profile::Acl, 10, 1).unwrap_err().contains("OFD"));
    assert!(innet_pipebench::render_pipeline("PSC", Profile::Acl, 0, 1).is_err());
    assert!(Profile::parse("ipsec").is_err());
}

/// docs/gigaflow.md carries each pipeline's table-by-table description as generated from the
/// specs; regenerate with `INNET_WRITE_PIPEBENCH_DOCS=1 cargo test -p innet-gigaflow --test pipebench`.
#[test]
fn docs_describe_the_pipelines_as_built() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/gigaflow.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- pipebench-tables:begin -->\n", "<!-- pipebench-tables:end -->");
    let md = innet_pipebench::commands::all_markdown();
    let (Some(a), Some(b)) = (doc.find(begin), doc.find(end)) else { panic!("docs/gigaflow.md lacks the pipebench-tables markers") };
    let current = &doc[a + begin.len()..b];
    if std::env::var("INNET_WRITE_PIPEBENCH_DOCS").is_ok() {
        let new = format!("{}{}{}{}", &doc[..a + begin.len()], md, "", &doc[b..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert_eq!(current, md, "docs/gigaflow.md's pipeline tables are stale: rerun with INNET_WRITE_PIPEBENCH_DOCS=1");
}

#[test]
fn traversals_command_reports_table_1() {
    let js = innet_pipebench::commands::traversals_command("PSC", "acl", 500, 1, "low", 3000).unwrap();
    let v: serde_json::Value = serde_json::from_str(&js).unwrap();
    assert_eq!(v["traffic_traversals"], 2);
    assert_eq!(v["spec_traversals"], v["paper_traversals"]);
    use innet_pipebench::commands::{traffic_command, TrafficArgs};
    let args = |locality, timing| TrafficArgs { locality, flows: 300, seed: 2, timing, flow_sizes: "mean:30" };
    let csv = traffic_command("OTL", "fw", 200, 1, &args("high", "window")).unwrap();
    assert!(csv.lines().count() > 300 * 10, "the artifact's volume: ~30 packets per flow");
    let old = traffic_command("OTL", "fw", 200, 1, &TrafficArgs { flow_sizes: "pareto:1.2", ..args("high", "window") }).unwrap();
    assert!(old.lines().count() < csv.lines().count() / 3, "pareto:1.2: ~5 packets per flow");
    assert!(traffic_command("OTL", "fw", 200, 1, &TrafficArgs { flow_sizes: "zipf:1", ..args("high", "window") }).unwrap_err().contains("mean:PACKETS_PER_FLOW"));
    assert_ne!(csv, traffic_command("OTL", "fw", 200, 1, &args("high", "arrivals")).unwrap());
    assert!(traffic_command("OTL", "fw", 200, 1, &args("medium", "window")).unwrap_err().contains("high or low"));
    assert!(traffic_command("OTL", "fw", 200, 1, &args("high", "poisson")).unwrap_err().contains("window or arrivals"));
}

/// The default timing replays a trace slice: flows are numbered by their first packet, each
/// flow's packets spread over the whole window at the replay rate, and the flows seen first are
/// the heavy ones (a no-eviction cache filled by them keeps hitting). Arrival timing keeps the
/// Poisson-start form, with the same flows and sizes drawn.
#[test]
fn window_timing_numbers_flows_by_first_packet_and_spreads_them() {
    use innet_pipebench::Timing;
    let rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 1000, 1).unwrap();
    let cfg = TrafficConfig { n_flows: 10_000, seed: 4, ..TrafficConfig::default() };
    assert_eq!(cfg.timing, Timing::Window { packet_rate_pps: 10_000.0 });
    let t = innet_pipebench::generate_traffic(&rs, &cfg).unwrap();
    let mut next = 0u32;
    for p in &t.packets {
        assert!(p.flow <= next, "flow {} appears before flow {next}", p.flow);
        if p.flow == next {
            assert_eq!(t.flows[p.flow as usize].start_ns, p.time_ns, "start_ns is the first packet");
            next += 1;
        }
    }
    assert_eq!(next, 10_000);
    let window_ns = t.packets.last().unwrap().time_ns as f64;
    let expected_ns = t.packets.len() as f64 / 10_000.0 * 1e9;
    assert!((window_ns / expected_ns - 1.0).abs() < 0.01, "replayed at 10 kpps: {window_ns} vs {expected_ns}");
    let mean = |r: std::ops::Range<usize>| t.flows[r.clone()].iter().map(|f| f.n_packets as f64).sum::<f64>() / r.len() as f64;
    let (first, last) = (mean(0..1000), mean(9000..10_000));
    assert!(first > 3.0 * last, "heavy flows show up first: {first} vs {last} packets per flow");
    // An elephant is active over the whole window, not a burst.
    let big = t.flows.iter().enumerate().max_by_key(|(_, f)| f.n_packets).unwrap().0 as u32;
    let times: Vec<u64> = t.packets.iter().filter(|p| p.flow == big).map(|p| p.time_ns).collect();
    let (first_s, last_s) = (times[0] as f64, *times.last().unwrap() as f64);
    assert!(first_s < 0.05 * window_ns && last_s > 0.95 * window_ns, "{first_s} .. {last_s} of {window_ns}");
    let a = innet_pipebench::generate_traffic(&rs, &TrafficConfig { timing: Timing::parse("arrivals").unwrap(), ..cfg.clone() }).unwrap();
    let sizes = |t: &innet_pipebench::Traffic| {
        let mut v: Vec<u32> = t.flows.iter().map(|f| f.n_packets).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(sizes(&a), sizes(&t), "the timings draw the same flow sizes");
    let heads = |t: &innet_pipebench::Traffic| t.flows.iter().map(|f| f.headers).collect::<Vec<_>>();
    assert_eq!(heads(&a), heads(&t), "the k-th flow to appear gets the k-th header drawn");
    assert!(Timing::parse("burst").unwrap_err().contains("window or arrivals"));
}

/// Fresh ephemeral source ports: high-locality flows repeat a (L2, L3) pair with new client
/// ports instead of needing a new pair each, and only ports from the ephemeral range are drawn.
/// Sampled headers: addresses vary inside the rules drawn.
#[test]
fn fresh_source_ports_and_sampled_headers_vary_what_anchors_fix() {
    use innet_ofswitch::fields::Field;
    use std::collections::HashSet;
    let rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 1000, 1).unwrap();
    let base = TrafficConfig { n_flows: 5_000, seed: 2, ..TrafficConfig::default() };
    let pairs = |t: &innet_pipebench::Traffic| {
        let mut f: Vec<_> = t.flows.iter().map(|f| f.headers).collect();
        for h in &mut f {
            h.set(Field::TpSrc, 0);
        }
        f.into_iter().collect::<HashSet<_>>().len()
    };
    let anchored = innet_pipebench::generate_traffic(&rs, &base).unwrap();
    let fresh = innet_pipebench::generate_traffic(&rs, &TrafficConfig { fresh_source_ports: true, ..base.clone() }).unwrap();
    assert_eq!(fresh.flows.len(), 5_000);
    let (a, b) = (pairs(&anchored), pairs(&fresh));
    assert!(b * 2 < a, "flows share everything but the client port: {b} distinct tuples vs {a} anchored");
    let anchor_ports: HashSet<u64> = anchored.flows.iter().map(|f| f.headers.get(Field::TpSrc)).collect();
    let new_ports = fresh.flows.iter().map(|f| f.headers.get(Field::TpSrc)).filter(|p| !anchor_ports.contains(p));
    assert!(new_ports.clone().count() > 1_000 && new_ports.into_iter().all(|p| (49152..=65535).contains(&p)));
    // Sampled headers: the rule choice stays local, but addresses vary inside the rules.
    let sampled = innet_pipebench::generate_traffic(&rs, &TrafficConfig { sampled_headers: true, ..base.clone() }).unwrap();
    let dsts = |t: &innet_pipebench::Traffic| t.flows.iter().map(|f| f.headers.get(Field::NwDst)).collect::<HashSet<_>>().len();
    let chains = |t: &innet_pipebench::Traffic| t.flows.iter().map(|f| f.chain).collect::<HashSet<_>>().len();
    assert!(dsts(&sampled) > 2 * dsts(&anchored), "{} vs {}", dsts(&sampled), dsts(&anchored));
    assert!(chains(&sampled) < 2 * chains(&anchored), "rules are still drawn by recurrence");
    // Low locality with anchors: chains are still drawn uniformly, but a chain's flows carry
    // one L3 part (one destination address per chain), as high-locality flows do.
    let low = TrafficConfig { locality: Locality::Low, ..base.clone() };
    let (sampled_low, anchored_low) = (innet_pipebench::generate_traffic(&rs, &TrafficConfig { low_anchors: false, ..low.clone() }).unwrap(), innet_pipebench::generate_traffic(&rs, &low).unwrap());
    assert_eq!(anchored_low.flows.len(), 5_000);
    assert!(dsts(&anchored_low) <= chains(&anchored_low), "{} destinations for {} chains", dsts(&anchored_low), chains(&anchored_low));
    assert!(dsts(&sampled_low) > 2 * dsts(&anchored_low), "{} vs {}", dsts(&sampled_low), dsts(&anchored_low));
    let busiest = |t: &innet_pipebench::Traffic| {
        let mut n = std::collections::HashMap::new();
        t.flows.iter().for_each(|f| *n.entry(f.chain).or_insert(0) += 1);
        n.into_values().max().unwrap()
    };
    assert!(2 * busiest(&anchored_low) < busiest(&anchored), "chains stay uniform: busiest chain {} flows vs high's {}", busiest(&anchored_low), busiest(&anchored));
}

#[test]
fn traffic_is_heavy_tailed_timed_and_local_when_asked() {
    use std::collections::HashSet;
    use innet_ofswitch::fields::Field;
    // PSC: no table binds a MAC to an address, so L2 and L3 parts recombine freely.
    let rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 2000, 1).unwrap();
    let mut share = Vec::new();
    // Low locality with sampled headers (`low_anchors: false`), the form whose L3 tuples are
    // fresh per flow; anchored low-locality flows share their chains' L3 part
    // (fresh_source_ports_and_sampled_headers_vary_what_anchors_fix).
    for locality in [Locality::High, Locality::Low] {
        let cfg = TrafficConfig { n_flows: 20_000, locality, seed: 9, low_anchors: false, ..TrafficConfig::default() };
        let t = innet_pipebench::generate_traffic(&rs, &cfg).unwrap();
        assert_eq!(t.flows.len(), 20_000);
        let unique: HashSet<_> = t.flows.iter().map(|f| f.headers).collect();
        assert_eq!(unique.len(), 20_000, "flows are unique header tuples");
        assert_eq!(t.packets.len(), t.flows.iter().map(|f| f.n_packets as usize).sum::<usize>());
        assert!(t.packets.windows(2).all(|w| w[0].time_ns <= w[1].time_ns), "packets in time order");
        // The artifact's volume (~30 packets per flow), heavy-tailed: most flows are mice, a few
        // are elephants.
        let mice = t.flows.iter().filter(|f| f.n_packets <= 2).count();
        let biggest = t.flows.iter().map(|f| f.n_packets).max().unwrap();
        let per_flow = t.packets.len() as f64 / t.flows.len() as f64;
        assert!(mice > 10_000 && biggest > 5_000 && (20.0..40.0).contains(&per_flow), "mice {mice}, biggest {biggest}, {per_flow} packets per flow");
        // Header sharing, per part the pipeline's tables examine separately: flows per distinct
        // L3/L4 tuple (dst address, dst port) and per distinct L2 tuple (in_port, dl_src, dl_dst).
        let h = |f: &innet_pipebench::traffic::TraceFlow, k: Field| f.headers.get(k);
        let l3: HashSet<_> = t.flows.iter().map(|f| (h(f, Field::NwDst), h(f, Field::TpDst))).collect();
        let l2: HashSet<_> = t.flows.iter().map(|f| (h(f, Field::InPort), h(f, Field::DlSrc), h(f, Field::DlDst))).collect();
        // Recombination: flows whose L2 part and L3 part each occurred in earlier flows, but
        // never together (the cross product sub-traversal caching serves without a miss).
        let (mut seen_l2, mut seen_l3, mut seen_pair) = (HashSet::new(), HashSet::new(), HashSet::new());
        let mut recombined = 0usize;
        for f in &t.flows {
            let a = (h(f, Field::InPort), h(f, Field::DlSrc), h(f, Field::DlDst));
            let b = (h(f, Field::NwSrc), h(f, Field::NwDst), h(f, Field::NwProto), h(f, Field::TpDst));
            if seen_l2.contains(&a) && seen_l3.contains(&b) && !seen_pair.contains(&(a, b)) {
                recombined += 1;
            }
            seen_l2.insert(a);
            seen_l3.insert(b);
            seen_pair.insert((a, b));
        }
        share.push((20_000.0 / l3.len() as f64, 20_000.0 / l2.len() as f64, recombined));
    }
    eprintln!("flows per L3 tuple, per L2 tuple, recombined flows: high {:?}, low {:?}", share[0], share[1]);
    assert!(share[0].0 > 4.0 * share[1].0, "high locality shares L3 tuples far more: {share:?}");
    // L2 parts are few in both (a MAC/port per source prefix: many hosts behind one gateway).
    assert!(share[0].1 > 5.0 && share[0].1 >= share[1].1, "L2 parts are shared: {share:?}");
    assert!(share[0].2 > 5_000 && share[0].2 > share[1].2, "high-locality flows recombine cached L2 and L3 parts: {share:?}");
}

/// OLS and ANT bind a source's port and MAC to its address (port security, SpoofGuard): the
/// traffic keeps those bindings, so recombination does not turn flows into spoofed ones that the
/// binding table drops (37 % of OLS's high-locality flows were, when the L2 part was taken from
/// another chain regardless).
#[test]
fn recombined_traffic_keeps_port_security_bindings() {
    for (name, spoof_drop) in [("OLS", vec![0u8, 1]), ("ANT", vec![0u8, 10])] {
        let rs = innet_pipebench::render_pipeline(name, Profile::Acl, 2000, 1).unwrap();
        let p = Pipeline::parse(&rs.text).unwrap();
        for locality in [Locality::High, Locality::Low] {
            // Every port: with one input port the hosts bound to ports 2-4 are spoofed by
            // construction (single_in_port_changes_only_the_port).
            let cfg = TrafficConfig { n_flows: 5_000, locality, seed: 3, single_in_port: false, ..TrafficConfig::default() };
            let t = innet_pipebench::generate_traffic(&rs, &cfg).unwrap();
            let dropped = t.flows.iter().filter(|f| p.traversal_tables(&f.headers) == spoof_drop).count();
            eprintln!("{name} {locality:?}: {dropped} of 5000 flows dropped by the source binding");
            assert!(dropped < 250, "{name} {locality:?}: {dropped} of 5000 flows dropped by the source binding");
        }
    }
}

/// Over many seeds and all profiles: every generated flow file parses, and no packet (Pipebench
/// traffic or packets drawn near the rules' values) takes a traversal the spec does not allow.
#[test]
fn any_seed_stays_inside_the_spec() {
    use innet_ofswitch::packetgen::random_packets;
    for seed in 0..6u64 {
        for (i, name) in pipelines::NAMES.iter().enumerate() {
            let profile = [Profile::Acl, Profile::Fw, Profile::Ipc][(seed as usize + i) % 3];
            let rs = innet_pipebench::render_pipeline(name, profile, 150 + 50 * seed as usize, seed).unwrap();
            let p = Pipeline::parse(&rs.text).unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            let allowed = rs.spec.traversals().unwrap();
            let locality = if seed % 2 == 0 { Locality::High } else { Locality::Low };
            let cfg = TrafficConfig { n_flows: 300, locality, seed, ..TrafficConfig::default() };
            let mut packets: Vec<_> = innet_pipebench::generate_traffic(&rs, &cfg).unwrap().flows.into_iter().map(|f| f.headers).collect();
            packets.extend(random_packets(&p, 200, 4, seed));
            for pkt in &packets {
                let t: Vec<u8> = p.traversal_tables(pkt);
                assert!(allowed.contains(&t), "{name} seed {seed}: traversal {t:?} outside the spec");
            }
        }
    }
}

/// MAC-only port security (issue 22's experiment): OLS's and ANT's MAC↔IPv4 binding tables
/// keep no rule that matches an end's MAC and address together, and a flow they dropped as
/// spoofed (its dl_dst not owning its nw_dst) now reaches the tables after them.
#[test]
fn mac_only_port_security_removes_the_mac_address_bindings() {
    let binding = |line: &str| (line.contains("dl_src=") && line.contains("nw_src=")) || (line.contains("dl_dst=") && line.contains("nw_dst="));
    for (name, tables) in [("OLS", ["table=1,", "table=49,"]), ("ANT", ["table=10,", "table=10,"])] {
        let spec = pipelines::pipeline(name).unwrap();
        let built = innet_pipebench::ruleset::generate(&spec, Profile::Acl, 2000, 1).unwrap();
        let mac_only = innet_pipebench::ruleset::generate(&pipelines::mac_only_port_security(spec), Profile::Acl, 2000, 1).unwrap();
        let bound = |text: &str| text.lines().filter(|l| tables.iter().any(|t| l.starts_with(t)) && binding(l)).count();
        assert!(bound(&built.text) > 0, "{name}: the pipeline as built binds MACs to addresses");
        assert_eq!(bound(&mac_only.text), 0, "{name}: a binding rule is left");
        // Traffic recombines L2 parts freely now: no flow ends in a binding table.
        let p = Pipeline::parse(&mac_only.text).unwrap();
        let t = innet_pipebench::generate_traffic(&mac_only, &TrafficConfig { n_flows: 3_000, seed: 3, ..TrafficConfig::default() }).unwrap();
        let ids: Vec<u8> = tables.iter().map(|t| t[6..t.len() - 1].parse().unwrap()).collect();
        let ended_there = t.flows.iter().filter(|f| p.traversal_tables(&f.headers).last().is_some_and(|x| ids.contains(x))).count();
        assert_eq!(ended_there, 0, "{name}: {ended_there} flows dropped by a binding table");
    }
}

/// `recombine_l2: false` takes a flow's L2 part from its own chain: at high locality flows
/// then differ only in their L3 part (or a fresh source port), so with fresh ports every
/// (dl_src, dl_dst) pair of a flow is one its L3 chain's anchor carries.
#[test]
fn own_l2_parts_stay_with_their_chain() {
    let rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 1000, 1).unwrap();
    let l2_of = |recombine_l2: bool| {
        let cfg = TrafficConfig { n_flows: 3_000, seed: 3, fresh_source_ports: true, recombine_l2, ..TrafficConfig::default() };
        let t = innet_pipebench::generate_traffic(&rs, &cfg).unwrap();
        let mut by_chain: BTreeMap<u32, BTreeSet<(u64, u64, u64)>> = BTreeMap::new();
        for f in &t.flows {
            let h = &f.headers;
            by_chain.entry(f.chain).or_default().insert((h.get(innet_ofswitch::Field::InPort), h.get(innet_ofswitch::Field::DlSrc), h.get(innet_ofswitch::Field::DlDst)));
        }
        by_chain.values().map(|s| s.len()).max().unwrap()
    };
    assert_eq!(l2_of(false), 1, "one L2 part per chain");
    assert!(l2_of(true) > 1, "recombined L2 parts vary within a chain");
}

/// `single_in_port: true` sends every packet in on port 1 (the artifact's one
/// tgen link), and only in_port changes: the rest of every flow's headers are those of the
/// every-port form. What that takes away: OTL's trunk ports (2, 4 skip MAC learning, table 2)
/// are never used, and OLS's port security drops the hosts it binds to ports 2-4 at its first
/// table.
#[test]
fn single_in_port_changes_only_the_port() {
    assert!(!TrafficConfig::default().single_in_port, "every port is the default (one port drops OLS/ANT flows)");
    for (name, lost) in [("OTL", [0u8, 1, 3, 5].as_slice()), ("OLS", [0u8].as_slice())] {
        let rs = innet_pipebench::render_pipeline(name, Profile::Acl, 1000, 1).unwrap();
        let p = Pipeline::parse(&rs.text).unwrap();
        let count = |single_in_port: bool| {
            let t = innet_pipebench::generate_traffic(&rs, &TrafficConfig { n_flows: 3_000, seed: 3, single_in_port, ..TrafficConfig::default() }).unwrap();
            t.flows.iter().filter(|f| p.traversal_tables(&f.headers).starts_with(lost) && (name != "OLS" || p.traversal_tables(&f.headers) == lost)).count()
        };
        let (every, one) = (count(false), count(true));
        eprintln!("{name}: {every} flows -> {one} flows on {lost:?}");
        if name == "OTL" {
            assert!(every > 0 && one == 0, "OTL: trunk traversals ({every} flows on every port) vanish with one port ({one})");
        } else {
            assert!(one > every + 300, "OLS: port security drops the hosts of ports 2-4 with one port ({every} -> {one})");
        }
    }
    let rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 1000, 1).unwrap();
    let gen = |single_in_port: bool| innet_pipebench::generate_traffic(&rs, &TrafficConfig { n_flows: 3_000, seed: 3, single_in_port, ..TrafficConfig::default() }).unwrap();
    let (spread, one) = (gen(false), gen(true));
    let ports = |t: &innet_pipebench::Traffic| t.flows.iter().map(|f| f.headers.get(innet_ofswitch::Field::InPort)).collect::<BTreeSet<_>>();
    assert!(ports(&spread).len() > 1, "default traffic uses several ports");
    assert_eq!(ports(&one), BTreeSet::from([1]), "every packet on port 1");
    assert_eq!(spread.flows.len(), one.flows.len());
    for (a, b) in spread.flows.iter().zip(&one.flows) {
        let mut h = a.headers;
        h.set(innet_ofswitch::Field::InPort, 1);
        assert_eq!(h, b.headers, "only in_port differs");
    }
}

/// OLS's DHCP stage as ovn-northd writes it: per port with DHCP options, the discovery
/// (0.0.0.0 → 255.255.255.255, udp 68 → 67) and the two renewal forms (from the port's address
/// to broadcast and to the server) in `ls_in_dhcp_options`, and the discovery's exemption in
/// `ls_in_port_sec_ip`; the DHCP traversal's packets are discoveries, and no other packet is
/// answered by the DHCP responder.
#[test]
fn ols_dhcp_stage_is_ovn_northds() {
    use innet_ofswitch::fields::Field;
    let rs = innet_pipebench::render_pipeline("OLS", Profile::Acl, 2000, 1).unwrap();
    let discovery = "udp,nw_src=0.0.0.0,nw_dst=255.255.255.255,tp_src=68,tp_dst=67";
    let port_mac = |l: &str| l.split(',').filter(|f| f.starts_with("in_port=") || f.starts_with("dl_src=")).collect::<Vec<_>>().join(",");
    let mut options: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut exempt: BTreeSet<String> = BTreeSet::new();
    for l in rs.text.lines() {
        if l.starts_with("table=13,") && l.contains("load:1->NXM_NX_REG4[]") {
            assert!(l.contains(",udp,") && l.contains("tp_src=68,tp_dst=67"), "not a DHCP request match: {l}");
            options.entry(port_mac(l)).or_default().push(l.to_string());
        }
        if l.starts_with("table=1,") && l.contains("tp_dst=67") {
            assert!(l.contains(discovery), "port security exempts more than the discovery: {l}");
            exempt.insert(port_mac(l));
        }
    }
    assert!(!options.is_empty());
    for (port, lines) in &options {
        assert_eq!(lines.len(), 3, "{port}: discovery and two renewal forms, got {lines:?}");
        assert!(lines.iter().any(|l| l.contains(discovery)), "{port}: no discovery flow");
        assert_eq!(lines.iter().filter(|l| l.contains("nw_dst=255.255.255.255")).count(), 2, "{port}: {lines:?}");
        assert!(exempt.contains(port), "{port}: DHCP options without the port-security exemption");
    }
    let p = Pipeline::parse(&rs.text).unwrap();
    for locality in [Locality::High, Locality::Low] {
        let t = innet_pipebench::generate_traffic(&rs, &TrafficConfig { n_flows: 5_000, locality, seed: 3, ..TrafficConfig::default() }).unwrap();
        let mut answered = 0;
        for f in &t.flows {
            let tr = p.traversal_tables(&f.headers);
            let is_discovery = f.headers.get(Field::NwSrc) == 0 && f.headers.get(Field::NwDst) == 0xffff_ffff && f.headers.get(Field::TpSrc) == 68 && f.headers.get(Field::TpDst) == 67;
            let dhcp_answer = tr.windows(2).any(|w| w == [14, 40]);
            assert!(!dhcp_answer || is_discovery, "{locality:?}: a non-discovery answered by DHCP: {:?}", f.headers);
            answered += dhcp_answer as usize;
        }
        eprintln!("OLS {locality:?}: {answered} of 5000 flows answered by the DHCP stage");
        assert!(answered > 0, "{locality:?}: no flow takes the DHCP traversal");
    }
}
