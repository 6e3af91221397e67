//! A small builder for DPFs in Rust (the paper's Python construction framework, on our side):
//! start from all-NOP stages and set only what the program uses.

use crate::control::{DpfSource, EuSource, Target};
use crate::isa::*;

pub fn nop_eu(lanes: u8, next: &str) -> EuSource {
    EuSource {
        sel: vec![SelectOp::Nop; 2 * lanes as usize],
        alu: vec![AluOp::Nop; lanes as usize],
        mem: vec![MemOp::Nop; lanes as usize],
        op: CtrlOp::Nop,
        op1: Operand::Imm(0),
        op2: Operand::Imm(0),
        taken: Target::Label(next.into()),
        not_taken: Target::Label(next.into()),
    }
}

/// A DPF of `eus` stages named "s" each, falling through to the epilog "out".
pub fn straight(name: &str, eus: u8, lanes: u8) -> DpfSource {
    let mut stages: Vec<Vec<(String, EuSource)>> = Vec::new();
    for e in 0..eus {
        let next = if e + 1 == eus { "out" } else { "s" };
        stages.push(vec![("s".into(), nop_eu(lanes, next))]);
    }
    DpfSource {
        name: name.into(),
        prolog_sel: vec![PrologOp::Nop; 2 * lanes as usize],
        prolog_next: Target::Label("s".into()),
        eus: stages,
        epilogs: vec![("out".into(), Epilog { push: vec![], steer: None, next_pc: None, drop_code: false })],
    }
}

/// The paper's private per-tenant counter (§3.1): POP the id into A0, B0 = 1, FA-ADD on lane 0 of
/// EU 0 (B0 gets the old count), PUSH the id and the new count.
pub fn counter(lanes: u8, eus: u8) -> DpfSource {
    let mut d = straight("counter", eus, lanes);
    d.prolog_sel[Reg::A(0).index(lanes)] = PrologOp::Pop;
    let e0 = &mut d.eus[0][0].1;
    e0.sel[Reg::B(0).index(lanes)] = SelectOp::LoadImm(1);
    e0.mem[0] = MemOp::FaAdd;
    // EU1: B0 = old + 1 via lane 0's ALU on a copy: A1 = B0 (old), B1 = 1, A1 += B1.
    let e1 = &mut d.eus[1][0].1;
    e1.sel[Reg::A(1).index(lanes)] = SelectOp::Mov(Reg::B(0));
    e1.sel[Reg::B(1).index(lanes)] = SelectOp::LoadImm(1);
    e1.alu[1] = AluOp::Add;
    d.epilogs[0].1.push = vec![Reg::A(0), Reg::A(1)];
    d
}
