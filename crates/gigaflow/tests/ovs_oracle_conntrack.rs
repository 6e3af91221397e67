//! Conntrack, recirculation and dec_ttl against real Open vSwitch: for random packets and
//! random conntrack states per recirculated pass (`ofproto/trace ... --ct-next STATE`), every
//! datapath pass must agree with OVS — the number of passes, the Megaflow of each pass (with
//! recirc_id and the ct fields in the mask, field by field and as text), its outputs with their
//! headers, and its ct actions (commit, zone, recirculation). A guard runs a changed pipeline
//! on our side to show the comparison can fail. Needs openvswitch-switch and root.

use innet_gigaflow::fields::{parse_ct_state, Field, Flow};
use innet_gigaflow::oracle::{megaflow_equal, ovs_available, parse_ct_actions, parse_datapath_actions, parse_megaflow, same_outputs, trace_flow_string, Ovs};
use innet_gigaflow::packetgen::random_packets;
use innet_gigaflow::report::format_megaflow;
use innet_gigaflow::Pipeline;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;

const N_PORTS: u32 = 4;
/// The states `--ct-next` takes (OVS's syntax), drawn per recirculated pass.
const STATES: [&str; 6] = ["trk,new", "trk,est", "trk,est,rpl", "trk,inv", "trk,rel", "trk,rel,rpl"];

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pipelines/conntrack.flows")
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
        let passes = ours.trace_passes(&p, |_, _| parse_ct_state(&next.next().unwrap().replace(',', "|"), false).unwrap().0);
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
            let ct_ok = cts.len() == t.ct.len() && cts.iter().zip(&t.ct).all(|(a, b)| a.commit == b.commit && a.zone == b.zone && a.recirc.is_some() == b.recirc.is_some());
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
