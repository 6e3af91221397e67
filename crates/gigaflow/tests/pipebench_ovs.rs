//! Differential test of the Pipebench pipelines against real Open vSwitch: every generated
//! pipeline loads with `ovs-ofctl add-flows`, and for ~500 Pipebench packets per pipeline our
//! slow path's final actions and Megaflow equal what `ofproto/trace` reports.
//! Needs Debian's openvswitch-switch (scripts/setup.sh installs it) and root.

use innet_gigaflow::oracle::{megaflow_equal, ovs_available, parse_datapath_actions, parse_megaflow, same_outputs, trace_flow_string, Ovs};
use innet_gigaflow::pipebench::{self, pipelines, ruleset::N_PORTS, Locality, Profile, TrafficConfig};
use innet_gigaflow::Pipeline;

const PACKETS_PER_PIPELINE: usize = 500;

#[test]
fn pipebench_pipelines_agree_with_real_ovs() {
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    let dir = std::env::temp_dir().join(format!("innet-pipebench-ovs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let profiles = [Profile::Acl, Profile::Fw, Profile::Ipc];
    for (i, name) in pipelines::NAMES.iter().enumerate() {
        if pipelines::pipeline(name).unwrap().tables.is_empty() {
            continue;
        }
        let profile = profiles[i % 3];
        let rs = pipebench::render_pipeline(name, profile, 400, 11 + i as u64).unwrap();
        let path = dir.join(format!("{name}.flows"));
        std::fs::write(&path, &rs.text).unwrap();
        let pipeline = Pipeline::parse(&rs.text).unwrap_or_else(|e| panic!("{name}: {e}"));
        ovs.load_flows(&path).unwrap_or_else(|e| panic!("ovs-ofctl add-flows {name}: {e}"));
        let (mut actions_equal, mut megaflows_equal, mut n) = (0, 0, 0);
        let mut examples = Vec::new();
        for locality in [Locality::High, Locality::Low] {
            let cfg = TrafficConfig { n_flows: PACKETS_PER_PIPELINE / 2, locality, seed: 5, ..TrafficConfig::default() };
            let traffic = pipebench::generate_traffic(&rs, &cfg).unwrap();
            for f in &traffic.flows {
                let p = &f.headers;
                let flow = trace_flow_string(p);
                let theirs = ovs.trace(&flow).unwrap_or_else(|e| panic!("{name}: trace {flow}: {e}"));
                let ours = pipeline.trace(p);
                let outs = parse_datapath_actions(&theirs.actions_line, p, ovs.dp_to_of()).unwrap_or_else(|e| panic!("{name}: {e}"));
                let (v, m, unknown) = parse_megaflow(&theirs.megaflow_line).unwrap_or_else(|e| panic!("{name}: {e}"));
                let a_ok = same_outputs(&ours.outputs, &outs);
                let m_ok = unknown.is_empty() && megaflow_equal(p, &ours.megaflow_mask, &v, &m);
                n += 1;
                actions_equal += a_ok as usize;
                megaflows_equal += m_ok as usize;
                if (!a_ok || !m_ok) && examples.len() < 3 {
                    let mine: Vec<String> = ours.megaflow().iter().map(|(f, v, m)| format!("{}={}", f.name(), f.format(*v, *m))).collect();
                    examples.push(format!("{flow}\n  OVS: {}\n  our: {}\n  OVS actions: {}\n  our outputs: {:?}", theirs.megaflow_line, mine.join(","), theirs.actions_line, ours.outputs.iter().map(|o| o.port).collect::<Vec<_>>()));
                }
            }
        }
        eprintln!(
            "{name} ({} rules, {profile:?}): {n} packets, actions equal {actions_equal}, megaflow equal {megaflows_equal}",
            rs.text.lines().filter(|l| !l.starts_with('#')).count()
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
