//! Conntrack, recirculation and dec_ttl against real Open vSwitch: for random packets and
//! random conntrack states per recirculated pass (`ofproto/trace ... --ct-next STATE`), every
//! datapath pass must agree with OVS — the number of passes, the Megaflow of each pass (with
//! recirc_id and the ct fields in the mask, field by field and as text), its outputs with their
//! headers, and its ct actions (commit, zone, recirculation). A guard runs a changed pipeline
//! on our side to show the comparison can fail. Needs openvswitch-switch and root.

use innet_ofswitch::fields::{Field, Flow, CT_EST, CT_NEW, CT_TRK};
use innet_ofswitch::flows::parse_ct_state;
use innet_ofswitch::oracle::{megaflow_equal, ovs_available, parse_ct_actions, parse_datapath_actions, parse_megaflow, same_outputs, trace_flow_string, Ovs};
use innet_ofswitch::packetgen::random_packets;
use innet_ofswitch::report::format_megaflow;
use innet_ofswitch::Pipeline;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;

const N_PORTS: u32 = 4;
/// The states `--ct-next` takes (OVS's syntax), drawn per recirculated pass.
const STATES: [&str; 6] = ["trk,new", "trk,est", "trk,est,rpl", "trk,inv", "trk,rel", "trk,rel,rpl"];

fn path() -> PathBuf {
    pipeline("conntrack.flows")
}

fn pipeline(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pipelines").join(name)
}

/// OVS's recirc ids are its own numbers: compare the text with every non-zero id blanked.
fn blank_recirc_id(megaflow: &str) -> String {
    match megaflow.split_once(',') {
        Some((first, rest)) if first.starts_with("recirc_id=") && first != "recirc_id=0" => format!("recirc_id=N,{rest}"),
        _ => megaflow.to_string(),
    }
}

#[derive(Default, Debug)]
struct Score {
    packets: usize,
    passes: usize,
    same_pass_count: usize,
    megaflow: usize,
    megaflow_text: usize,
    outputs: usize,
    ct_actions: usize,
    recirculated: usize,
    examples: Vec<String>,
}

fn compare(ovs: &mut Ovs, ours: &Pipeline, n: usize, seed: u64) -> Score {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut s = Score::default();
    for mut p in random_packets(ours, n, N_PORTS, seed) {
        let ttl = [0, 1, 2, 63, 64, 65, 255][rng.gen_range(0..7)];
        p.set(Field::NwTtl, ttl);
        let states: Vec<&str> = (0..3).map(|_| STATES[rng.gen_range(0..STATES.len())]).collect();
        let flow = trace_flow_string(&p);
        let theirs = ovs.trace_ct(&flow, &states).unwrap_or_else(|e| panic!("trace {flow}: {e}"));
        let mut next = states.iter();
        // OVS's default once the list is used up (pipelines that fork take more than three).
        let passes = ours.trace_passes(&p, |_, _| parse_ct_state(&next.next().unwrap_or(&"trk,new").replace(',', "|"), false).unwrap().0);
        s.packets += 1;
        s.recirculated += (theirs.passes.len() > 1) as usize;
        if passes.len() != theirs.passes.len() {
            s.examples.push(format!("{flow} {states:?}: {} passes here, {} in OVS\n{}", passes.len(), theirs.passes.len(), theirs.text));
            continue;
        }
        s.same_pass_count += 1;
        for (t, (mf_line, act_line)) in passes.iter().zip(&theirs.passes) {
            s.passes += 1;
            let (v, m, unknown) = parse_megaflow(mf_line).unwrap_or_else(|e| panic!("{mf_line}: {e}"));
            let mf_ok = unknown.is_empty() && megaflow_equal(&t.initial_flow, &t.megaflow_mask, &v, &m);
            let text_ok = blank_recirc_id(&format_megaflow(t)) == blank_recirc_id(mf_line);
            let outs = parse_datapath_actions(act_line, &t.initial_flow, ovs.dp_to_of()).unwrap_or_else(|e| panic!("{act_line}: {e}"));
            let out_ok = same_outputs(&t.outputs, &outs);
            let cts = parse_ct_actions(act_line).unwrap();
            let ct_ok = cts.len() == t.ct.len()
                && cts.iter().zip(&t.ct).all(|(a, b)| a.commit == b.commit && a.zone == b.zone && a.recirc.is_some() == b.recirc.is_some() && a.mark == b.mark && a.label == b.label);
            s.megaflow += mf_ok as usize;
            s.megaflow_text += text_ok as usize;
            s.outputs += out_ok as usize;
            s.ct_actions += ct_ok as usize;
            if !(mf_ok && text_ok && out_ok && ct_ok) && s.examples.len() < 5 {
                s.examples.push(format!("{flow} {states:?}\n ours:   {} | {:?} {:?}\n theirs: {mf_line} | {act_line}", format_megaflow(t), t.outputs.iter().map(|o| o.port).collect::<Vec<_>>(), t.ct));
            }
        }
    }
    s
}

#[test]
fn conntrack_passes_agree_with_real_ovs() {
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    ovs.load_flows(&path()).unwrap();
    let ours = Pipeline::parse(&std::fs::read_to_string(path()).unwrap()).unwrap();
    let s = compare(&mut ovs, &ours, 1500, 11);
    eprintln!("{s:#?}");
    assert!(s.recirculated > 500, "too few packets recirculate to test recirculation: {}", s.recirculated);
    assert!(s.passes > s.packets + 1000, "too few multi-pass packets: {} passes for {} packets", s.passes, s.packets);
    assert_eq!(s.same_pass_count, s.packets, "pass counts differ: {:?}", s.examples);
    for (what, n) in [("Megaflows", s.megaflow), ("Megaflow texts", s.megaflow_text), ("outputs", s.outputs), ("ct actions", s.ct_actions)] {
        assert_eq!(n, s.passes, "{what} differ from OVS: {:?}", s.examples);
    }
}

#[test]
fn the_conntrack_comparison_notices_a_changed_pipeline() {
    // OVS runs conntrack.flows; our side a copy whose state check reads +est where OVS reads
    // +rpl (changes which passes' Megaflows examine which ct_state bits and some outputs) and
    // whose second ct zone differs (changes the ct actions).
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    ovs.load_flows(&path()).unwrap();
    let text = std::fs::read_to_string(path()).unwrap().replace("ct_state=+rpl+trk", "ct_state=+est+rpl+trk").replace("zone=6", "zone=7");
    let ours = Pipeline::parse(&text).unwrap();
    let s = compare(&mut ovs, &ours, 400, 12);
    eprintln!("changed pipeline: {s:#?}");
    assert!(s.megaflow < s.passes, "a changed ct_state match went unnoticed in the Megaflows");
    assert!(s.outputs < s.passes, "a changed ct_state match went unnoticed in the outputs");
    assert!(s.ct_actions < s.passes, "a changed ct zone went unnoticed in the ct actions");
}

#[test]
fn registers_survive_recirculation_and_ttl_exceptions_stop_the_pass() {
    // Without OVS: the recirculated pass resumes in table 30 with reg0 restored.
    let ours = Pipeline::parse(&std::fs::read_to_string(path()).unwrap()).unwrap();
    let mut p = Flow::default();
    for (f, v) in [(Field::InPort, 1), (Field::DlType, 0x0800), (Field::NwProto, 6), (Field::NwSrc, 0x0a01_0001), (Field::NwDst, 0x0a02_0001), (Field::NwTtl, 64), (Field::TpDst, 80)] {
        p.set(f, v);
    }
    let passes = ours.trace_passes(&p, |_, _| 0x22); // trk|est
    assert_eq!(passes.len(), 2);
    assert_eq!(passes[1].visits.iter().map(|v| v.table).collect::<Vec<_>>(), vec![30, 35]);
    assert_eq!(passes[1].outputs.iter().map(|o| (o.port, o.headers.get(Field::NwTtl))).collect::<Vec<_>>(), vec![(3, 63)]);
    assert_eq!(passes[0].megaflow_mask.get(Field::NwTtl), 0xff);
    p.set(Field::NwTtl, 1);
    let t = ours.trace(&p);
    assert!(t.ttl_exception && t.outputs.is_empty() && t.ct.is_empty());
}

/// Traces `packet` with `states` through both and checks every pass as [`compare`] does; returns
/// OVS's text for further checks.
fn same_passes(ovs: &mut Ovs, ours: &Pipeline, packet: &str, states: &[&str]) -> String {
    let theirs = ovs.trace_ct(packet, states).unwrap_or_else(|e| panic!("trace {packet}: {e}"));
    let p = innet_ofswitch::report::parse_packet(packet).unwrap();
    let mut next = states.iter();
    let passes = ours.trace_passes(&p, |_, _| parse_ct_state(&next.next().unwrap_or(&"trk,new").replace(',', "|"), false).unwrap().0);
    assert_eq!(passes.len(), theirs.passes.len(), "{packet} {states:?}: pass count\n{}", theirs.text);
    for (i, (t, (mf, act))) in passes.iter().zip(&theirs.passes).enumerate() {
        assert_eq!(blank_recirc_id(&format_megaflow(t)), blank_recirc_id(mf), "{packet} {states:?}: pass {i} Megaflow\n{}", theirs.text);
        let outs = parse_datapath_actions(act, &t.initial_flow, ovs.dp_to_of()).unwrap();
        assert!(same_outputs(&t.outputs, &outs), "{packet} {states:?}: pass {i} outputs {:?}\n{}", t.outputs, theirs.text);
        let cts = parse_ct_actions(act).unwrap();
        let ours_ct: Vec<_> = t.ct.iter().map(|c| (c.commit, c.zone, c.recirc.is_some(), c.mark, c.label)).collect();
        let their_ct: Vec<_> = cts.iter().map(|c| (c.commit, c.zone, c.recirc.is_some(), c.mark, c.label)).collect();
        assert_eq!(ours_ct, their_ct, "{packet} {states:?}: pass {i} ct actions\n{}", theirs.text);
    }
    theirs.text
}

#[test]
fn the_four_stateful_firewall_cases_agree_with_real_ovs() {
    // Issue 32 item 5: the cases where a Neutron-style pipeline first differed from OVS 3.1.
    assert!(ovs_available(), "openvswitch-switch is not installed: run scripts/setup.sh");
    let path = pipeline("stateful_cases.flows");
    let mut ovs = Ovs::start(N_PORTS).expect("start ovs");
    ovs.load_flows(&path).unwrap();
    let ours = Pipeline::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();

    // (a) dec_ttl at TTL <= 1 two tables deep: OVS reports the exception, skips the rest of
    // table 11's actions, and runs the callers' outputs (table 10's output:3, table 0's
    // mod_dl_src and output:2).
    let text = same_passes(&mut ovs, &ours, "in_port=1,tcp,nw_ttl=1", &[]);
    assert!(text.contains(">> IPv4 decrement TTL exception") && text.contains("Datapath actions: userspace("), "{text}");
    let p = innet_ofswitch::report::parse_packet("in_port=1,tcp,nw_ttl=1").unwrap();
    let t = ours.trace(&p);
    assert!(t.ttl_exception);
    assert_eq!(t.outputs.iter().map(|o| o.port).collect::<Vec<_>>(), vec![3, 2]);
    same_passes(&mut ovs, &ours, "in_port=1,tcp,nw_ttl=0", &[]);
    same_passes(&mut ovs, &ours, "in_port=1,tcp,nw_ttl=2", &[]);
    // At the top level (in_port=3: dec_ttl first): the rest of table 0's actions, the ct
    // included, are skipped.
    same_passes(&mut ovs, &ours, "in_port=3,udp,nw_ttl=1", &[]);
    // After a ct(table=N): the exception in the resubmit still lets table 0's output:1 run.
    same_passes(&mut ovs, &ours, "in_port=4,tcp,nw_ttl=1", &["trk,est"]);

    // (b) two ct(table=N) in one pass: both clones recirculate and are traced in OVS's order
    // (a queue), the second with the dl_dst written between the two; table 20's new-connection
    // rule forks two more (a commit with a mark, and table 31).
    for states in [&["trk,new", "trk,est"][..], &["trk,est", "trk,rpl,est"], &["trk,new", "trk,new", "trk,est", "trk,new"], &[]] {
        let text = same_passes(&mut ovs, &ours, "in_port=2,tcp,nw_ttl=64", states);
        assert!(text.matches("recirc(0x").count() >= 2, "{text}");
    }
    let p = innet_ofswitch::report::parse_packet("in_port=2,tcp,nw_ttl=64").unwrap();
    let passes = ours.trace_passes(&p, |_, _| CT_TRK | CT_NEW);
    assert_eq!(passes.len(), 5, "first pass, its two clones, and table 20's two");
    assert_eq!(passes[2].initial_flow.get(Field::DlDst), 0x00005e000202, "the second clone carries the header written before its ct");

    // (c) ct(commit,exec(...)) marks, matched in the recirculated pass: full and masked
    // set_field, load and move into ct_mark/ct_label; a commit-only ct before a ct(table=N).
    for (packet, states) in [
        ("in_port=2,udp,nw_ttl=64", &["trk,new"][..]),
        ("in_port=3,udp,nw_ttl=64", &["trk,est"]),
        ("in_port=4,tcp,nw_ttl=64", &["trk,new"]),
    ] {
        let text = same_passes(&mut ovs, &ours, packet, states);
        assert!(text.contains("exec("), "{text}");
    }
    let text = same_passes(&mut ovs, &ours, "in_port=2,udp,nw_ttl=64", &[]);
    assert!(text.contains("ct(commit,zone=3,mark=0x5/0xffffffff,label=0x3/0x3),recirc(") && text.contains("ct_mark=0x5,ct_label=0x3/0x3"), "{text}");

    // Random packets and states through the whole file, as for conntrack.flows.
    let s = compare(&mut ovs, &ours, 600, 21);
    eprintln!("stateful_cases.flows: {s:#?}");
    assert!(s.passes > s.packets + 300, "too few recirculations: {s:?}");
    assert_eq!(s.same_pass_count, s.packets, "pass counts differ: {:?}", s.examples);
    for (what, n) in [("Megaflows", s.megaflow), ("Megaflow texts", s.megaflow_text), ("outputs", s.outputs), ("ct actions", s.ct_actions)] {
        assert_eq!(n, s.passes, "{what} differ from OVS: {:?}", s.examples);
    }

    // (d) --ct-next states OVS refuses: refused here too, with OVS's messages.
    for bad in ["new,rpl,trk", "trk,new,est", "trk,inv,est", "new", "trk,inv,new,est,rpl", "trk,inv,rel", "est,inv", "trk,bogus"] {
        let theirs = ovs.trace_ct("in_port=2,udp,nw_ttl=64", &[bad]).expect_err(bad);
        let text = std::fs::read_to_string(&path).unwrap();
        let ours_err = innet_ofswitch::report::trace_command(&text, "in_port=2,udp,nw_ttl=64", &[bad.to_string()]).expect_err(bad);
        let their_lines: Vec<&str> = theirs.trim_start_matches("ofproto/trace: ").trim_end().lines().collect();
        let our_lines: Vec<&str> = ours_err.strip_prefix(&format!("--ct-next {bad}: ")).unwrap_or(&ours_err).split("; ").collect();
        assert_eq!(our_lines, their_lines, "--ct-next {bad}");
    }
    // ... and those it takes are taken.
    for good in ["trk,new,dnat", "trk,rel,new", "trk,inv", ""] {
        ovs.trace_ct("in_port=2,udp,nw_ttl=64", &[good]).expect(good);
        innet_ofswitch::report::trace_command(&std::fs::read_to_string(&path).unwrap(), "in_port=2,udp,nw_ttl=64", &[good.to_string()]).expect(good);
    }
}

#[test]
fn committed_marks_reach_the_same_connections_later_packets() {
    // Without OVS: with a connection table (the datapath's view), a mark committed by one
    // packet's ct(commit,exec(...)) is what the same connection's later packets resume with;
    // OVS's trace (trace_passes) only knows the marks of the ct that recirculates.
    let ours = Pipeline::parse(
        "table=0,priority=10,ip,in_port=1,actions=ct(table=1,zone=7)\n\
         table=1,priority=20,ct_mark=0x9,ip,actions=output:3\n\
         table=1,priority=10,ct_state=+new+trk,ip,actions=ct(commit,zone=7,exec(set_field:0x9->ct_mark)),output:2\n\
         table=1,priority=0,actions=drop\n",
    )
    .unwrap();
    let p = innet_ofswitch::report::parse_packet("in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=80,nw_ttl=64").unwrap();
    let mut ct = innet_ofswitch::conntrack::Conntrack::default();
    let first = ours.trace_passes_conntrack(&p, &mut ct);
    assert_eq!(first[1].outputs.iter().map(|o| o.port).collect::<Vec<_>>(), vec![2]);
    assert_eq!(first[1].ct[0].mark, Some((9, 0xffff_ffff)));
    let second = ours.trace_passes_conntrack(&p, &mut ct);
    assert_eq!(second[1].initial_flow.get(Field::CtMark), 9);
    assert_eq!(second[1].initial_flow.get(Field::CtState), CT_TRK | CT_EST);
    assert_eq!(second[1].outputs.iter().map(|o| o.port).collect::<Vec<_>>(), vec![3]);
    // The trace's view: every packet's clone resumes with the marks its own ct wrote (none).
    let traced = ours.trace_passes(&p, |_, _| CT_TRK | CT_EST);
    assert_eq!(traced[1].initial_flow.get(Field::CtMark), 0);
}
