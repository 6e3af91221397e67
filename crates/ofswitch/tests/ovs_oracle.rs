//! Differential test against real Open vSwitch: for every pipeline under pipelines/ and
//! thousands of random packets, our slow path's outputs (ports and headers) must equal the
//! datapath actions OVS's `ofproto/trace` prints, and our Megaflow must equal OVS's.
//! Needs Debian's openvswitch-switch (scripts/setup.sh installs it) and root.

use innet_ofswitch::fields::{Field, Flow};
use innet_ofswitch::oracle::{megaflow_equal, ovs_available, parse_datapath_actions, parse_megaflow, same_outputs, trace_flow_string, Ovs};
use innet_ofswitch::packetgen::random_packets;
use innet_ofswitch::Pipeline;
use std::path::PathBuf;

const N_PORTS: u32 = 4;
const PACKETS_PER_PIPELINE: usize = 2000;

fn pipeline_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pipelines").join(name)
}

struct Score {
    packets: usize,
    /// Our Megaflow printed (report::format_megaflow) is the very text OVS printed.
    megaflow_text_equal: usize,
    actions_equal: usize,
    megaflow_equal: usize,
    examples: Vec<String>,
}

fn check_pipeline(ovs: &mut Ovs, name: &str, seed: u64) -> Score {
    let path = pipeline_path(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let pipeline = Pipeline::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    ovs.load_flows(&path).unwrap_or_else(|e| panic!("ovs-ofctl add-flows {name}: {e}"));
    let packets = random_packets(&pipeline, PACKETS_PER_PIPELINE, N_PORTS, seed);
    let mut score = Score { packets: packets.len(), megaflow_text_equal: 0, actions_equal: 0, megaflow_equal: 0, examples: Vec::new() };
    for p in &packets {
        let flow = trace_flow_string(p);
        let theirs = ovs.trace(&flow).unwrap_or_else(|e| panic!("{name}: trace {flow}: {e}"));
        let ours = pipeline.trace(p);
        let their_outputs = parse_datapath_actions(&theirs.actions_line, p, ovs.dp_to_of()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let actions_ok = same_outputs(&ours.outputs, &their_outputs);
        let (mf_value, mf_mask, unknown) = parse_megaflow(&theirs.megaflow_line).unwrap_or_else(|e| panic!("{name}: {e}: {}", theirs.megaflow_line));
        let megaflow_ok = unknown.is_empty() && megaflow_equal(p, &ours.megaflow_mask, &mf_value, &mf_mask);
        score.actions_equal += actions_ok as usize;
        let text_ok = innet_ofswitch::report::format_megaflow(&ours) == theirs.megaflow_line;
        score.megaflow_text_equal += text_ok as usize;
        if !text_ok && megaflow_ok && score.examples.len() < 5 {
            score.examples.push(format!("text differs: OVS {}\n               our {}", theirs.megaflow_line, innet_ofswitch::report::format_megaflow(&ours)));
        }
        score.megaflow_equal += megaflow_ok as usize;
        if (!actions_ok || !megaflow_ok) && score.examples.len() < 5 {
            let mine: Vec<String> = ours.megaflow().iter().map(|(f, v, m)| format!("{}={}", f.name(), f.format(*v, *m))).collect();
            score.examples.push(format!(
                "packet {flow}\n  OVS megaflow: {}\n  our megaflow: {}\n  OVS actions:  {}\n  our outputs:  {:?}\n{}",
                theirs.megaflow_line,
                mine.join(","),
                theirs.actions_line,
                ours.outputs.iter().map(|o| o.port).collect::<Vec<_>>(),
                theirs.text
            ));
        }
    }
    score
}

#[test]
fn slow_path_agrees_with_real_ovs() {
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    let mut failures = Vec::new();
    for (i, name) in ["l3_router.flows", "acl_regs.flows", "l2_rewrite.flows"].iter().enumerate() {
        let s = check_pipeline(&mut ovs, name, 1000 + i as u64);
        let pct = |n: usize| 100.0 * n as f64 / s.packets as f64;
        eprintln!(
            "{name}: {} packets, actions equal {:.2}%, megaflow equal {:.2}% (same text {:.2}%)",
            s.packets,
            pct(s.actions_equal),
            pct(s.megaflow_equal),
            pct(s.megaflow_text_equal)
        );
        for e in &s.examples {
            eprintln!("{e}");
        }
        if s.actions_equal != s.packets || s.megaflow_equal != s.packets || s.megaflow_text_equal != s.packets {
            failures.push(format!(
                "{name}: actions {}/{}, megaflow {}/{}, megaflow text {}/{}",
                s.actions_equal, s.packets, s.megaflow_equal, s.packets, s.megaflow_text_equal, s.packets
            ));
        }
    }
    assert!(failures.is_empty(), "differences from OVS: {failures:?}");
}

#[test]
fn reference_trace_from_ovs_as_oracle_md() {
    // A packet and the answer real OVS 3.1 gave for it (ofproto/trace on this pipeline, recorded
    // when the oracle harness was first set up), checked on our side.
    let p = Pipeline::parse(&std::fs::read_to_string(pipeline_path("l3_router.flows")).unwrap()).unwrap();
    let mut pkt = Flow::default();
    pkt.set(Field::InPort, 1);
    pkt.set(Field::DlType, 0x0800);
    pkt.set(Field::NwProto, 6);
    pkt.set(Field::NwSrc, 0xc0a80001);
    pkt.set(Field::NwDst, 0x0a010204);
    pkt.set(Field::TpDst, 80);
    let t = p.trace(&pkt);
    assert_eq!(t.visits.iter().map(|v| v.table).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(t.megaflow_mask.get(Field::NwDst), 0xffff_fffc);
    assert_eq!(t.megaflow_mask.get(Field::TpDst), 0xffff);
    assert_eq!(t.megaflow_mask.get(Field::DlDst), 0xffff_ffff_ffff);
    assert_eq!(t.megaflow_mask.get(Field::NwSrc), 0);
    assert_eq!(t.outputs.len(), 1);
    assert_eq!(t.outputs[0].port, 2);
}

#[test]
fn random_pipelines_agree_with_real_ovs() {
    let (packets, actions_equal, megaflows_equal) = random_pipelines_vs_ovs(false);
    assert_eq!(actions_equal, packets, "final actions differ from OVS");
    assert_eq!(megaflows_equal, packets, "Megaflows differ from OVS");
}

/// Equal priorities: OpenFlow leaves the choice among overlapping rules undefined, and the
/// Megaflow depends on the order OVS keeps its equal-priority subtables in; we reproduce both.
#[test]
fn random_pipelines_with_priority_ties_agree_with_real_ovs() {
    let (packets, actions_equal, megaflows_equal) = random_pipelines_vs_ovs(true);
    assert_eq!(actions_equal, packets, "final actions differ from OVS");
    assert_eq!(megaflows_equal, packets, "Megaflows differ from OVS");
}

fn random_pipelines_vs_ovs(priority_ties: bool) -> (usize, usize, usize) {
    use innet_ofswitch::packetgen::random_pipeline_with;
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    let dir = std::env::temp_dir().join(format!("innet-gigaflow-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut packets, mut actions_equal, mut megaflows_equal, mut texts_equal) = (0, 0, 0, 0);
    let mut examples = Vec::new();
    // Bigger runs on demand: INNET_OVS_RANDOM_PIPELINES (default 12), INNET_OVS_RULES_PER_TABLE (10).
    let n_pipelines: u64 = std::env::var("INNET_OVS_RANDOM_PIPELINES").ok().and_then(|v| v.parse().ok()).unwrap_or(12);
    let rules_per_table: usize = std::env::var("INNET_OVS_RULES_PER_TABLE").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    for seed in 0..n_pipelines {
        let text = random_pipeline_with(seed, 4, rules_per_table, N_PORTS, priority_ties);
        let path = dir.join(format!("random_{seed}.flows"));
        std::fs::write(&path, &text).unwrap();
        let pipeline = Pipeline::parse(&text).unwrap_or_else(|e| panic!("random pipeline {seed}: {e}\n{text}"));
        ovs.load_flows(&path).unwrap_or_else(|e| panic!("random pipeline {seed}: {e}\n{text}"));
        for p in random_packets(&pipeline, 250, N_PORTS, seed) {
            let flow = trace_flow_string(&p);
            let theirs = ovs.trace(&flow).unwrap();
            let ours = pipeline.trace(&p);
            let their_outputs = parse_datapath_actions(&theirs.actions_line, &p, ovs.dp_to_of()).unwrap();
            let (v, m, unknown) = parse_megaflow(&theirs.megaflow_line).unwrap();
            let a_ok = same_outputs(&ours.outputs, &their_outputs);
            let m_ok = unknown.is_empty() && megaflow_equal(&p, &ours.megaflow_mask, &v, &m);
            texts_equal += (innet_ofswitch::report::format_megaflow(&ours) == theirs.megaflow_line) as usize;
            packets += 1;
            actions_equal += a_ok as usize;
            megaflows_equal += m_ok as usize;
            if (!a_ok || !m_ok) && examples.len() < 4 {
                let mine: Vec<String> = ours.megaflow().iter().map(|(f, v, m)| format!("{}={}", f.name(), f.format(*v, *m))).collect();
                examples.push(format!("seed {seed}: {flow}\n  OVS: {}\n  our: {}\n  OVS actions: {}\n{}", theirs.megaflow_line, mine.join(","), theirs.actions_line, theirs.text));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "random pipelines (priority ties: {priority_ties}): {packets} packets, actions equal {:.2}%, megaflow equal {:.2}% (same text {:.2}%)",
        100.0 * actions_equal as f64 / packets as f64,
        100.0 * megaflows_equal as f64 / packets as f64,
        100.0 * texts_equal as f64 / packets as f64
    );
    for e in &examples {
        eprintln!("{e}");
    }
    (packets, actions_equal, megaflows_equal)
}

#[test]
fn the_comparison_notices_a_different_pipeline() {
    // Guard against a harness that always agrees: OVS runs l3_router.flows while our side runs a
    // copy with one prefix widened (/24 -> /23, changes actions for 10.1.3.x) and the /32 route
    // removed (changes the prefix-trie masks near 10.1.2.3); both differences must be seen.
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    let path = pipeline_path("l3_router.flows");
    ovs.load_flows(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap().replace("nw_dst=10.1.2.0/24", "nw_dst=10.1.2.0/23")
        .replace("table=1,priority=132,ip,nw_dst=10.1.2.3,", "#");
    let ours = Pipeline::parse(&text).unwrap();
    let (mut megaflow_diff, mut action_diff) = (0, 0);
    let packets = random_packets(&ours, 500, N_PORTS, 7);
    for p in packets {
        let theirs = ovs.trace(&trace_flow_string(&p)).unwrap();
        let t = ours.trace(&p);
        let (v, m, _) = parse_megaflow(&theirs.megaflow_line).unwrap();
        megaflow_diff += !megaflow_equal(&p, &t.megaflow_mask, &v, &m) as usize;
        let outs = parse_datapath_actions(&theirs.actions_line, &p, ovs.dp_to_of()).unwrap();
        action_diff += !same_outputs(&t.outputs, &outs) as usize;
    }
    eprintln!("changed pipeline: {megaflow_diff}/500 Megaflows and {action_diff}/500 actions differ");
    assert!(megaflow_diff > 0, "a changed pipeline went unnoticed in the Megaflows");
    assert!(action_diff > 0, "a changed pipeline went unnoticed in the actions");
}

#[test]
fn packet_descriptions_ovs_accepts_trace_the_same_here() {
    // `innet vswitch trace` takes the packet text `ofproto/trace` takes: each description goes
    // to both, and the Megaflow text and outputs must agree; the `Flow:` line OVS prints for
    // it must parse back to the same packet.
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    let path = pipeline_path("l3_router.flows");
    ovs.load_flows(&path).unwrap();
    let pipeline = Pipeline::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let packets = [
        "in_port=1,icmp,nw_src=192.168.0.1,nw_dst=10.1.2.3,icmp_type=8,icmp_code=0",
        "in_port=1,icmp,nw_src=192.168.0.1,nw_dst=10.1.2.9,icmp_type=0,icmp_code=0",
        "in_port=2,icmp,nw_dst=10.1.9.9,icmp_type=3,icmp_code=1",
        "in_port=3,icmp,nw_src=192.168.4.4,nw_dst=172.16.0.1,icmp_type=8,icmp_code=0,nw_ttl=64",
        "in_port=1,tcp,nw_dst=10.1.2.4,tp_src=1234,tp_dst=80,tcp_flags=0x002",
        "in_port=2,udp,nw_dst=10.200.0.1,udp_src=53,udp_dst=53,nw_ecn=1,nw_frag=no",
        "in_port=1,ip,nw_proto=47,nw_dst=10.1.2.4,nw_tos=32",
    ];
    for text in packets {
        let theirs = ovs.trace(text).unwrap_or_else(|e| panic!("OVS refused {text}: {e}"));
        let p = innet_ofswitch::report::parse_packet(text).unwrap_or_else(|e| panic!("we refused {text}: {e}"));
        let ours = pipeline.trace(&p);
        assert_eq!(innet_ofswitch::report::format_megaflow(&ours), theirs.megaflow_line, "{text}\n{}", theirs.text);
        let outs = parse_datapath_actions(&theirs.actions_line, &p, ovs.dp_to_of()).unwrap();
        assert!(same_outputs(&ours.outputs, &outs), "{text}: ours {:?}\n{}", ours.outputs, theirs.text);
        let flow_line = theirs.text.lines().find_map(|l| l.strip_prefix("Flow: ")).expect("a Flow: line");
        let back = innet_ofswitch::report::parse_packet(flow_line).unwrap_or_else(|e| panic!("OVS's Flow line {flow_line}: {e}"));
        assert_eq!(back, p, "{flow_line}");
    }
}
