//! Differential test of the Pipebench pipelines against real Open vSwitch: every generated
//! pipeline loads with `ovs-ofctl add-flows`, and for ~500 Pipebench packets per pipeline our
//! slow path's final actions and Megaflow equal what `ofproto/trace` reports, in every datapath
//! pass (OLS and ANT recirculate through conntrack; `--ct-next` sets the state each pass resumes
//! with).
//! Needs Debian's openvswitch-switch (scripts/setup.sh installs it) and root.

use innet_ofswitch::fields::{CT_EST, CT_NEW, CT_TRK};
use innet_ofswitch::report::format_megaflow;
use innet_ofswitch::oracle::{megaflow_equal, ovs_available, parse_datapath_actions, parse_megaflow, same_outputs, trace_flow_string, Ovs};
use innet_pipebench::{pipelines, model::N_PORTS, Locality, Profile, TrafficConfig};
use innet_ofswitch::packetgen::random_packets;
use innet_ofswitch::Pipeline;

const PACKETS_PER_PIPELINE: usize = 500;

#[test]
fn pipebench_pipelines_agree_with_real_ovs() {
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    let dir = std::env::temp_dir().join(format!("innet-pipebench-ovs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let profiles = [Profile::Acl, Profile::Fw, Profile::Ipc];
    // Paper-scale run on demand: INNET_PIPEBENCH_OVS_RULES=10000 (default 400).
    let n_rules: usize = std::env::var("INNET_PIPEBENCH_OVS_RULES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    for (i, name) in pipelines::NAMES.iter().enumerate() {
        if pipelines::pipeline(name).unwrap().tables.is_empty() {
            continue;
        }
        let profile = profiles[i % 3];
        let rs = innet_pipebench::render_pipeline(name, profile, n_rules, 11 + i as u64).unwrap();
        let path = dir.join(format!("{name}.flows"));
        std::fs::write(&path, &rs.text).unwrap();
        let pipeline = Pipeline::parse(&rs.text).unwrap_or_else(|e| panic!("{name}: {e}"));
        ovs.load_flows(&path).unwrap_or_else(|e| panic!("ovs-ofctl add-flows {name}: {e}"));
        let (mut actions_equal, mut megaflows_equal, mut n, mut recirculated) = (0, 0, 0, 0);
        let mut examples = Vec::new();
        // Pipebench traffic of both localities, plus packets drawn near the rules' values
        // (bits flipped, random elsewhere) that probe the misses and the prefix tries.
        let mut packets = Vec::new();
        for locality in [Locality::High, Locality::Low] {
            let cfg = TrafficConfig { n_flows: PACKETS_PER_PIPELINE * 2 / 5, locality, seed: 5, single_in_port: false, ..TrafficConfig::default() };
            packets.extend(innet_pipebench::generate_traffic(&rs, &cfg).unwrap().flows.into_iter().map(|f| f.headers));
        }
        packets.extend(random_packets(&pipeline, PACKETS_PER_PIPELINE / 5, N_PORTS, 3 + i as u64));
        {
            for (k, p) in packets.iter().enumerate() {
                // Every datapath pass (OLS and ANT recirculate through conntrack): alternate
                // packets resume as a new and as an established connection.
                let state = if k % 2 == 0 { "trk,new" } else { "trk,est" };
                let ct = if k % 2 == 0 { CT_TRK | CT_NEW } else { CT_TRK | CT_EST };
                let flow = trace_flow_string(p);
                let theirs = ovs.trace_ct(&flow, &[state; 3]).unwrap_or_else(|e| panic!("{name}: trace {flow}: {e}"));
                let passes = pipeline.trace_passes(p, |_, _| ct);
                recirculated += (passes.len() > 1) as usize;
                for (i, ours) in passes.iter().enumerate() {
                    let (their_mf, their_actions) = theirs.passes.get(i).cloned().unwrap_or_default();
                    let outs = parse_datapath_actions(&their_actions, &ours.initial_flow, ovs.dp_to_of()).unwrap_or_else(|e| panic!("{name}: {e}"));
                    let (v, m, unknown) = parse_megaflow(&their_mf).unwrap_or_else(|e| panic!("{name}: {e}"));
                    let a_ok = same_outputs(&ours.outputs, &outs) && passes.len() == theirs.passes.len();
                    let m_ok = unknown.is_empty() && megaflow_equal(&ours.initial_flow, &ours.megaflow_mask, &v, &m);
                    n += 1;
                    actions_equal += a_ok as usize;
                    megaflows_equal += m_ok as usize;
                    if (!a_ok || !m_ok) && examples.len() < 3 {
                        examples.push(format!("{flow} pass {i}\n  OVS: {their_mf}\n  our: {}\n  OVS actions: {their_actions}\n  our outputs: {:?}", format_megaflow(ours), ours.outputs.iter().map(|o| o.port).collect::<Vec<_>>()));
                    }
                }
            }
        }
        eprintln!(
            "{name} ({} rules, {profile:?}): {} packets ({recirculated} recirculated), {n} datapath passes, actions equal {actions_equal}, megaflow equal {megaflows_equal}",
            rs.text.lines().filter(|l| !l.starts_with('#')).count(),
            packets.len()
        );
        for e in &examples {
            eprintln!("{e}");
        }
        if actions_equal != n || megaflows_equal != n {
            failures.push(format!("{name}: actions {actions_equal}/{n}, megaflows {megaflows_equal}/{n}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "differences from OVS: {failures:?}");
}

#[test]
fn the_pipebench_comparison_notices_a_different_ruleset() {
    // OVS runs one PSC ruleset, our side the same pipeline from another seed: the comparison
    // must see differences (it is not vacuous).
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    let theirs_rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 300, 1).unwrap();
    let ours_rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 300, 2).unwrap();
    let path = std::env::temp_dir().join(format!("innet-pipebench-guard-{}.flows", std::process::id()));
    std::fs::write(&path, &theirs_rs.text).unwrap();
    ovs.load_flows(&path).unwrap();
    let ours = Pipeline::parse(&ours_rs.text).unwrap();
    let cfg = TrafficConfig { n_flows: 200, locality: Locality::Low, seed: 1, ..TrafficConfig::default() };
    let (mut megaflow_diff, mut action_diff) = (0, 0);
    for f in innet_pipebench::generate_traffic(&theirs_rs, &cfg).unwrap().flows {
        let p = &f.headers;
        let theirs = ovs.trace(&trace_flow_string(p)).unwrap();
        let t = ours.trace(p);
        let (v, m, _) = parse_megaflow(&theirs.megaflow_line).unwrap();
        megaflow_diff += !megaflow_equal(p, &t.megaflow_mask, &v, &m) as usize;
        action_diff += !same_outputs(&t.outputs, &parse_datapath_actions(&theirs.actions_line, p, ovs.dp_to_of()).unwrap()) as usize;
    }
    let _ = std::fs::remove_file(&path);
    eprintln!("other ruleset: {megaflow_diff}/200 Megaflows and {action_diff}/200 actions differ");
    assert!(megaflow_diff > 0 && action_diff > 0);
}
