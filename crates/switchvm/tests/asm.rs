//! The assembler: shipped DPF sources assemble and behave like their builder twins; text
//! round-trips through the disassembler; errors name the line and the problem.

use innet_switchvm::asm::{assemble, disassemble, link_in_packet};
use innet_switchvm::build;
use innet_switchvm::control::ControlPlane;
use innet_switchvm::isa::*;
use innet_switchvm::machine::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const L: u8 = 4;

fn counter_src() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/dpfs/counter.dpf")).unwrap()
}

#[test]
fn the_shipped_counter_runs_in_switch_and_in_packet_like_the_builder() {
    let src = assemble(&counter_src(), 4, L).unwrap();
    let mut m = Machine::new(VmConfig::default());
    let mut cp = ControlPlane::default();
    let d = cp.deploy(&mut m, &src).unwrap();
    let b = cp.deploy(&mut m, &build::counter(L, 4)).unwrap();
    cp.authorize(&mut m, 1, Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps: 0, app_id: 0 }).unwrap();
    cp.alloc_segment(&mut m, 1, 0, 0, 0, 16).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let code = link_in_packet(&src).unwrap();
    for i in 0..30u32 {
        let id = i % 5;
        let mut via_asm = DpfPacket { tenant: 1, init_pc: Some(if i % 2 == 0 { d.init_pc } else { b.init_pc }), stack: vec![id], gas: 1, ..Default::default() };
        assert_eq!(m.execute(&mut via_asm, &SwitchMeta::default(), &mut rng), Outcome::Steer(SteerAction::Pass));
        assert_eq!(via_asm.stack, vec![id, i / 5 * 2 + 1], "{i}");
        // The same program carried in the packet, through the wire encoding.
        let pkt = DpfPacket { tenant: 1, init_pc: Some(Pc::Packet(0)), code: Some(code.clone()), stack: vec![id], gas: 1, ..Default::default() };
        let area = innet_switchvm::encoding::encode(&pkt, L).unwrap();
        let mut inpkt = innet_switchvm::encoding::decode(&area, L).unwrap();
        inpkt.tenant = 1;
        assert_eq!(m.execute(&mut inpkt, &SwitchMeta::default(), &mut rng), Outcome::Steer(SteerAction::Pass));
        assert_eq!(inpkt.stack[0], id);
        assert_eq!(inpkt.stack[1], via_asm.stack[1] + 1, "in-packet run counts on the same counter");
    }
}

#[test]
fn text_round_trips_through_the_disassembler() {
    let branchy = "dpf lb
prolog:
    A0 = rand
    A1 = rand
    B2 = peek
eu0 s:
    B0 = imm 7
    B1 = imm 7
    alu0 and
    alu1 and
eu1 s:
    mem0 load
    mem1 load
    bgt B0, B1 -> right else left
eu2 left:
    B0 = mov A0
    -> s
eu2 right:
    B0 = mov A1
    halt -> out
eu3 s:
    A3 = hash
    B3 = const 2
    alu3 xor
    blts A3, -1 -> out else other
epilog out:
    push B0, A3
    fwd B0
    next_pc 0x8001
    drop_code
epilog other:
    fwd 2
";
    let a = assemble(branchy, 4, L).unwrap();
    let text = disassemble(&a, L);
    let b = assemble(&text, 4, L).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(a, b);
    assert_eq!(a.eus[2].len(), 2);
    let counter = assemble(&counter_src(), 4, L).unwrap();
    assert_eq!(assemble(&disassemble(&counter, L), 4, L).unwrap(), counter);
}

#[test]
fn errors_name_the_line_and_the_problem() {
    let cases = [
        ("prolog:\n A0 = pop\neu0 s:\n A1 = imm 3\nepilog out:\n", "line 4", "only B registers take immediates"),
        ("prolog:\neu0 s:\n B1 = hash\nepilog out:\n", "line 3", "only A registers hash"),
        ("prolog:\neu0 s:\n A7 = mov B0\nepilog out:\n", "line 3", "4 lanes"),
        ("prolog:\neu0 s:\n -> nowhere\nepilog out:\n", "line 2", "`nowhere` is not in eu1"),
        ("prolog:\neu0 s:\n beq A0, 1 -> s\nepilog out:\n", "line 3", "both targets"),
        ("prolog:\neu5 s:\nepilog out:\n", "line 2", "4 EUs"),
        ("prolog:\n A0 = pop\n", "line 2", "at least one epilog"),
        ("eu0 s:\n mem0 fetch\nepilog out:\n", "line 2", "unknown memory op `fetch`"),
        ("prolog:\nepilog out:\n fwd banana\n", "line 3", "expected a number"),
        ("A0 = pop\n", "line 1", "outside a section"),
    ];
    for (text, line, what) in cases {
        let e = assemble(text, 4, L).unwrap_err().to_string();
        assert!(e.starts_with(line) && e.contains(what), "{text:?}: {e}");
    }
}

#[test]
fn the_overhead_bench_counts_every_packet_in_every_mode() {
    use innet_switchvm::experiments::{bench, BenchSpec, Mode};
    let mut plain_goodput = 0.0;
    for mode in [Mode::Plain, Mode::Default, Mode::InSwitch, Mode::InPacket] {
        let r = bench(&BenchSpec { mode, frame_bytes: 256, load: 1.0, poisson: false, duration_us: 10.0, link_gbps: 100.0, pipeline_fixed_ns: 360, stage_ns: 20, seed: 1 }).unwrap();
        eprintln!("{mode:?}: overhead {} B goodput {:.2} Gb/s executed {} received {}", r.overhead_bytes, r.goodput_gbps, r.executed, r.received);
        assert!(r.received > 0 && r.violations == 0);
        match mode {
            Mode::Plain => {
                assert_eq!(r.overhead_bytes, 0);
                assert_eq!(r.executed, 0);
                plain_goodput = r.goodput_gbps;
                assert!(plain_goodput > 90.0, "{plain_goodput}");
            }
            _ => {
                assert_eq!(r.executed, r.received, "the DPF ran once per packet");
                assert!(r.overhead_bytes >= 50 && r.goodput_gbps < plain_goodput);
            }
        }
    }
}

#[test]
fn dpfs_cost_the_machine_s_pipeline_stages_and_l3_forwarding_costs_its_own() {
    // Fig. 8: L3 forwarding has lower latency than every way of invoking a DPF, and the three
    // DPF ways are equal. The difference is the stages: SwitchVM occupies 12, L3 forwarding 2,
    // at stage_ns each; serialization of the extra header bytes is a few ns.
    use innet_switchvm::experiments::{bench, BenchSpec, Mode};
    let p50 = |mode| {
        bench(&BenchSpec { mode, frame_bytes: 1500, load: 0.1, poisson: false, duration_us: 20.0, link_gbps: 100.0, pipeline_fixed_ns: 360, stage_ns: 20, seed: 1 })
            .unwrap()
            .latency_p50_us
    };
    let (plain, dflt, in_switch, in_packet) = (p50(Mode::Plain), p50(Mode::Default), p50(Mode::InSwitch), p50(Mode::InPacket));
    eprintln!("p50 µs: plain {plain} default {dflt} in_switch {in_switch} in_packet {in_packet}");
    // 10 stages × 20 ns = 200 ns more for the DPF path, less only what the header bytes add.
    assert!(dflt - plain > 0.19 && in_switch - plain > 0.19, "DPFs pay SwitchVM's stages");
    assert!((in_switch - dflt).abs() < 0.05 && (in_packet - in_switch) < 0.06, "the DPF ways differ only by header bytes");
}

#[test]
fn non_ascii_text_is_an_error_not_a_panic() {
    // Found by the switchvm_asm fuzzer: a register position holding a multi-byte character.
    let e = assemble("dpf x\nprolog:\n    − = pop\n", 4, 4).unwrap_err();
    assert!(e.to_string().contains("line 3"), "{e}");
    let e = assemble("dpf x\nprolog:\neu0 s:\n    B0 = mov é1\n", 4, 4).unwrap_err();
    assert!(e.to_string().contains("line 4"), "{e}");
}

#[test]
fn labels_are_identifiers() {
    // Found by the switchvm_asm fuzzer: `eu2 s::` made a label `s:` whose disassembly did not
    // assemble back.
    let e = assemble("dpf x\nprolog:\neu0 s::\n    -> o\nepilog o:\n    pass\n", 4, 4).unwrap_err();
    assert!(e.to_string().contains("line 3") && e.to_string().contains("a label is"), "{e}");
    let e = assemble("dpf x\nprolog:\neu0 s\n:\n", 4, 4);
    assert!(e.is_err());
    let e = assemble("dpf x\nprolog:\nepilog o-ut:\n    pass\n", 4, 4).unwrap_err();
    assert!(e.to_string().contains("line 3"), "{e}");
}
