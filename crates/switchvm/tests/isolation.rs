//! SwitchVM's guarantees as tests: the private counter against a plain-Rust reference; random
//! and adversarial in-packet DPFs from an untrusted tenant never touch another tenant's memory,
//! never steer outside their rules, never run without gas and never crash; capacities are
//! enforced with errors; in-place replacement is atomic.

use std::collections::HashMap;

use innet_switchvm::build;
use innet_switchvm::control::{ControlError, ControlPlane};
use innet_switchvm::isa::*;
use innet_switchvm::machine::*;
use innet_switchvm::sandbox::{Arena, ATTACKER};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const L: u8 = 4;

fn perm(caps: u32) -> Permission {
    Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps, app_id: 0 }
}

#[test]
fn private_counters_match_a_reference_and_stay_per_tenant() {
    let mut m = Machine::new(VmConfig::default());
    let mut cp = ControlPlane::default();
    let d = cp.deploy(&mut m, &build::counter(L, 4)).unwrap();
    for t in [7, 9] {
        cp.authorize(&mut m, t, perm(0)).unwrap();
        // The same virtual range for both tenants, on EU 0 lane 0.
        cp.alloc_segment(&mut m, t, 0, 0, 0, 64).unwrap();
    }
    let mut reference: HashMap<(u32, u32), u32> = HashMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut gen = ChaCha8Rng::seed_from_u64(4);
    for _ in 0..5_000 {
        let tenant = if gen.gen_bool(0.5) { 7 } else { 9 };
        let id = gen.gen_range(0..64u32);
        let mut p = DpfPacket { tenant, init_pc: Some(d.init_pc), stack: vec![id], gas: 4, ..Default::default() };
        let out = m.execute(&mut p, &SwitchMeta::default(), &mut rng);
        assert_eq!(out, Outcome::Steer(SteerAction::Pass));
        let c = reference.entry((tenant, id)).or_insert(0);
        *c += 1;
        assert_eq!(p.stack, vec![id, *c], "tenant {tenant} id {id}");
    }
    // An id outside the tenant's segment faults instead of reaching anyone's memory.
    let mut p = DpfPacket { tenant: 7, init_pc: Some(d.init_pc), stack: vec![64], gas: 4, ..Default::default() };
    assert_eq!(m.execute(&mut p, &SwitchMeta::default(), &mut rng), Outcome::Violated(Violation::MemoryFault));
}

use rand::Rng;

/// Mostly real registers, sometimes one of a lane that does not exist.
fn arb_reg() -> impl Strategy<Value = Reg> {
    prop_oneof![40 => (0..L).prop_map(Reg::A), 40 => (0..L).prop_map(Reg::B), 1 => Just(Reg::A(L)), 1 => Just(Reg::B(L))]
}

/// Mostly the right number of slots, sometimes not.
fn slots<T: std::fmt::Debug>(s: impl Strategy<Value = T> + Clone, n: usize) -> impl Strategy<Value = Vec<T>> {
    prop_oneof![60 => prop::collection::vec(s.clone(), n), 1 => prop::collection::vec(s, n - 1..n + 2)]
}
fn arb_operand() -> impl Strategy<Value = Operand> {
    prop_oneof![2 => arb_reg().prop_map(Operand::Reg), 1 => any::<u32>().prop_map(Operand::Imm), 4 => (0u32..4).prop_map(Operand::Imm)]
}
/// Mostly well-formed pointers (so adversarial code reaches every unit), sometimes wild ones.
fn arb_pc() -> impl Strategy<Value = Pc> {
    prop_oneof![40 => Just(Pc::Packet(0)), 2 => (0u16..3).prop_map(Pc::Packet), 2 => (0u16..4).prop_map(Pc::Switch), 1 => any::<u16>().prop_map(Pc::from_u16)]
}
fn arb_prolog() -> impl Strategy<Value = Prolog> {
    let op = prop_oneof![4 => Just(PrologOp::Nop), 2 => Just(PrologOp::Pop), 2 => Just(PrologOp::Peek), 1 => (0u8..6).prop_map(PrologOp::LoadMd), 2 => Just(PrologOp::Rand)];
    let op = prop_oneof![30 => op.clone().prop_filter("no metadata", |o| !matches!(o, PrologOp::LoadMd(_))), 1 => op];
    (prop_oneof![30 => prop::collection::vec(op.clone(), 8), 1 => prop::collection::vec(op, 7..10)], arb_pc()).prop_map(|(sel, next)| Prolog { sel, next })
}
fn arb_eu() -> impl Strategy<Value = EuInstr> {
    let any_sel = prop_oneof![
        1 => arb_reg().prop_map(SelectOp::Mov),
        1 => prop_oneof![any::<u32>(), 0u32..300, Just(0x8000_0000u32)].prop_map(SelectOp::LoadImm),
        1 => (0u16..260).prop_map(SelectOp::LoadConst),
        1 => Just(SelectOp::Hash)
    ];
    // Selectors that respect the register groups, with the occasional one that does not.
    let a_sel = prop_oneof![150 => Just(SelectOp::Nop), 8 => arb_reg().prop_map(SelectOp::Mov), 8 => Just(SelectOp::Hash), 1 => any_sel.clone().prop_filter("rarely", |_| true)];
    let b_sel = prop_oneof![
        40 => Just(SelectOp::Nop),
        10 => arb_reg().prop_map(SelectOp::Mov),
        15 => prop_oneof![0u32..300, any::<u32>(), Just(0x8000_0000u32)].prop_map(SelectOp::LoadImm),
        5 => (0u16..258).prop_map(SelectOp::LoadConst),
        1 => any_sel
    ];
    let sel = (prop::collection::vec(a_sel, L as usize), prop::collection::vec(b_sel, L as usize)).prop_map(|(mut a, b)| {
        a.extend(b);
        a
    });
    let sel = prop_oneof![20 => sel, 1 => prop::collection::vec(Just(SelectOp::Nop), 7..10)];
    let alu = prop_oneof![Just(AluOp::Nop), Just(AluOp::Add), Just(AluOp::Sub), Just(AluOp::Xor), Just(AluOp::Lsh), Just(AluOp::Neg), Just(AluOp::Max)];
    let mem = prop_oneof![60 => Just(MemOp::Nop), 1 => Just(MemOp::Load), 1 => Just(MemOp::Store), 1 => Just(MemOp::FaAdd), 1 => Just(MemOp::FaMax), 1 => Just(MemOp::FaAnd)];
    let ctrl = prop_oneof![Just(CtrlOp::Nop), Just(CtrlOp::Halt), Just(CtrlOp::Jmp), Just(CtrlOp::Beq), Just(CtrlOp::Bset), Just(CtrlOp::Blts)];
    (sel, slots(alu, 4), slots(mem, 4), ctrl, arb_operand(), arb_operand(), arb_pc(), arb_pc())
        .prop_map(|(sel, alu, mem, op, op1, op2, taken, not_taken)| EuInstr { sel, alu, mem, branch: Branch { op, op1, op2, taken, not_taken } })
}
fn arb_epilog() -> impl Strategy<Value = Epilog> {
    (prop::collection::vec(arb_reg(), 0..6), prop::option::of(arb_operand()), prop::option::of(arb_operand()), any::<bool>())
        .prop_map(|(push, steer, next_pc, drop_code)| Epilog { push, steer, next_pc, drop_code })
}
fn arb_code() -> impl Strategy<Value = PacketCode> {
    (
        prop::collection::vec(arb_prolog(), 1..3),
        prop::collection::vec(prop::collection::vec(arb_eu(), 1..3), 4),
        prop::collection::vec(arb_epilog(), 1..3),
    )
        .prop_map(|(prologs, eus, epilogs)| PacketCode { prologs, eus, epilogs })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn untrusted_dpfs_stay_in_their_sandbox(
        runs in prop::collection::vec((arb_code(), prop::option::of(arb_pc()), prop::collection::vec(prop_oneof![2 => 256u32..272, 2 => 0u32..300, 1 => any::<u32>()], 0..18), 0u8..4), 1..12),
    ) {
        let mut arena = Arena::new();
        for (code, init_pc, stack, gas) in runs {
            let p = DpfPacket { tenant: ATTACKER, init_pc: init_pc.or(Some(Pc::Packet(0))), code: Some(code), stack, gas, ..Default::default() };
            if let Err(e) = arena.run_untrusted(p) {
                prop_assert!(false, "{}", e);
            }
        }
        if let Err(e) = arena.victim_intact() {
            prop_assert!(false, "{}", e);
        }
    }
}

#[test]
fn capacities_are_enforced_with_errors_that_name_the_limit() {
    let cfg = VmConfig { mem_entries: 64, segments_per_lane: 2, direct_per_eu: 2, code_slots: 4, ..Default::default() };
    let mut m = Machine::new(cfg);
    let mut cp = ControlPlane::default();
    cp.authorize(&mut m, 1, perm(0)).unwrap();
    assert_eq!(cp.alloc_segment(&mut m, 1, 0, 0, 3, 4), Err(ControlError::Unaligned { vaddr: 3, size: 4 }));
    assert_eq!(cp.alloc_segment(&mut m, 1, 0, 0, 0, 6), Err(ControlError::SegmentSize(6)));
    cp.alloc_segment(&mut m, 1, 0, 0, 0, 32).unwrap();
    assert!(matches!(cp.alloc_segment(&mut m, 1, 0, 0, 16, 16), Err(ControlError::Overlap { .. })));
    assert!(matches!(cp.alloc_segment(&mut m, 1, 0, 0, 64, 64), Err(ControlError::OutOfMemory { .. })));
    cp.alloc_segment(&mut m, 1, 0, 0, 64, 16).unwrap();
    let e = cp.alloc_segment(&mut m, 1, 0, 0, 128, 4).unwrap_err();
    assert!(e.to_string().contains("at most 2 per lane"), "{e}");
    assert_eq!(cp.map_direct(&mut m, 1, 0, 1, 9), Err(ControlError::DirectLane(1)));
    cp.map_direct(&mut m, 1, 1, 0, 9).unwrap();
    cp.map_direct(&mut m, 1, 1, 0, 10).unwrap();
    assert!(matches!(cp.map_direct(&mut m, 1, 1, 0, 11), Err(ControlError::OutOfDirect { .. })));
    assert_eq!(cp.alloc_segment(&mut m, 5, 0, 1, 0, 4), Err(ControlError::NotAuthorized(5)));
    // Code memory: 4 slots per stage → 4 straight DPFs, the fifth does not fit.
    for i in 0..4 {
        cp.deploy(&mut m, &build::straight(&format!("d{i}"), 4, L)).unwrap();
    }
    let e = cp.deploy(&mut m, &build::straight("d4", 4, L)).unwrap_err();
    assert!(e.to_string().contains("code memory is full"), "{e}");
    // The paper's default machine holds 2K distinct DPFs with one two-way branch each.
    let mut m = Machine::new(VmConfig::default());
    let mut two_way = build::straight("b", 4, L);
    two_way.eus[1].push(("t".into(), build::nop_eu(L, "s")));
    two_way.eus[0][0].1.op = CtrlOp::Beq;
    two_way.eus[0][0].1.taken = innet_switchvm::control::Target::Label("t".into());
    for _ in 0..2048 {
        cp.deploy(&mut m, &two_way).unwrap();
    }
    assert!(cp.deploy(&mut m, &two_way).is_err());
}

#[test]
fn unknown_labels_and_group_misuse_are_named() {
    let mut m = Machine::new(VmConfig::default());
    let mut cp = ControlPlane::default();
    let mut d = build::straight("x", 4, L);
    d.eus[2][0].1.taken = innet_switchvm::control::Target::Label("nowhere".into());
    let e = cp.deploy(&mut m, &d).unwrap_err();
    assert!(e.to_string().contains("`nowhere`") && e.to_string().contains("EU3"), "{e}");
    let mut d = build::straight("y", 4, L);
    d.eus[0][0].1.sel[Reg::A(2).index(L)] = SelectOp::LoadImm(5);
    let e = cp.deploy(&mut m, &d).unwrap_err();
    assert!(e.to_string().contains("only B registers take immediates"), "{e}");
}

#[test]
fn in_place_replacement_switches_atomically_and_keeps_the_pointer() {
    let mut m = Machine::new(VmConfig::default());
    let mut cp = ControlPlane::default();
    cp.authorize(&mut m, 1, perm(0)).unwrap();
    cp.install_steering(&mut m, 1, 1, SteerAction::Forward(0x0a00_0001)).unwrap();
    cp.install_steering(&mut m, 1, 2, SteerAction::Forward(0x0a00_0002)).unwrap();
    let mut a = build::straight("a", 4, L);
    a.epilogs[0].1.steer = Some(Operand::Imm(1));
    let mut b = build::straight("b", 4, L);
    b.epilogs[0].1.steer = Some(Operand::Imm(2));
    let d = cp.deploy(&mut m, &a).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut run = |m: &mut Machine| {
        let mut p = DpfPacket { tenant: 1, init_pc: Some(d.init_pc), gas: 1, ..Default::default() };
        m.execute(&mut p, &SwitchMeta::default(), &mut rng)
    };
    assert_eq!(run(&mut m), Outcome::Steer(SteerAction::Forward(0x0a00_0001)));
    let r = cp.replace(&mut m, d.id, &b).unwrap();
    assert_eq!(r.init_pc, d.init_pc);
    assert_eq!(run(&mut m), Outcome::Steer(SteerAction::Forward(0x0a00_0002)));
    assert_eq!(cp.deployed_count(), 1);
    // The old stages were freed: deploying again reuses them.
    let used: usize = m.code.eus[0].iter().filter(|s| s.is_some()).count();
    assert_eq!(used, 1);
}

#[test]
fn permissions_app_ids_and_default_dpfs() {
    let mut m = Machine::new(VmConfig::default());
    let mut cp = ControlPlane::default();
    let d = cp.deploy(&mut m, &build::straight("noop", 4, L)).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    // Unknown tenant naming a DPF: unauthorized, counted and reported.
    let mut p = DpfPacket { tenant: 3, init_pc: Some(d.init_pc), gas: 2, ..Default::default() };
    assert_eq!(m.execute(&mut p, &SwitchMeta::default(), &mut rng), Outcome::Violated(Violation::Unauthorized));
    assert_eq!(m.reports.last(), Some(&(3, Violation::Unauthorized)));
    // Wrong app id: the tenant's own policy (pass) applies, and nothing runs.
    cp.authorize(&mut m, 3, Permission { on_unauthorized: Unauthorized::Pass, default_pc: Some(d.init_pc), caps: 0, app_id: 77 }).unwrap();
    let mut p = DpfPacket { tenant: 3, app_id: 5, init_pc: Some(d.init_pc), gas: 2, ..Default::default() };
    assert_eq!(m.execute(&mut p, &SwitchMeta::default(), &mut rng), Outcome::Steer(SteerAction::Pass));
    assert_eq!(p.gas, 2, "the DPF did not run");
    // No header: the default DPF runs on every packet of the tenant.
    let mut p = DpfPacket { tenant: 3, gas: 2, ..Default::default() };
    assert_eq!(m.execute(&mut p, &SwitchMeta::default(), &mut rng), Outcome::Steer(SteerAction::Pass));
    assert_eq!(p.gas, 1);
    // Metadata needs the capability.
    let mut md = build::straight("md", 4, L);
    md.prolog_sel[0] = PrologOp::LoadMd(MD_SWITCH_ID);
    let dm = cp.deploy(&mut m, &md).unwrap();
    let mut p = DpfPacket { tenant: 3, app_id: 77, init_pc: Some(dm.init_pc), gas: 2, ..Default::default() };
    assert_eq!(m.execute(&mut p, &SwitchMeta::default(), &mut rng), Outcome::Violated(Violation::MetadataDenied));
    // Deauthorizing removes everything.
    cp.deauthorize(&mut m, 3);
    let mut p = DpfPacket { tenant: 3, gas: 2, ..Default::default() };
    assert_eq!(m.execute(&mut p, &SwitchMeta::default(), &mut rng), Outcome::NotInvoked);
}


/// In-packet code that encodes decodes to the same program; most small programs fit.
#[test]
fn in_packet_code_round_trips_through_the_wire() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let small = (
        prop::collection::vec(arb_prolog(), 1..2),
        prop::collection::vec(prop::collection::vec(arb_eu(), 1..2), 4),
        prop::collection::vec(arb_epilog(), 1..2),
    )
        .prop_map(|(prologs, eus, epilogs)| PacketCode { prologs, eus, epilogs });
    let (mut ok, mut total) = (0, 0);
    for _ in 0..1000 {
        let code = small.new_tree(&mut runner).unwrap().current();
        let stack = vec![1, 2, 3];
        let pkt = DpfPacket { init_pc: Some(Pc::Packet(0)), code: Some(code), stack, gas: 3, app_id: 9, ..Default::default() };
        total += 1;
        if let Ok(area) = innet_switchvm::encoding::encode(&pkt, L) {
            ok += 1;
            let back = innet_switchvm::encoding::decode(&area, L).expect("what encodes decodes");
            assert_eq!(back, pkt);
        }
    }
    assert!(ok * 2 > total, "only {ok} of {total} programs encoded");
}
