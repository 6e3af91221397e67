//! The instruction set ↔ the in-packet bytes (crates/wire/src/switchvm.rs): opcode numbers,
//! selector bytes (op << 5 | argument), operand selectors. Decoding names what is wrong, so a
//! packet with bad code is an illegal instruction, not a crash.

use innet_wire::switchvm::{DpfHeader, RawEpilog, RawEu, RawProlog, SEL_IMM, SEL_NONE};

use crate::isa::*;
use crate::machine::{DpfPacket, PacketCode};

fn prolog_byte(op: PrologOp) -> u8 {
    match op {
        PrologOp::Nop => 0,
        PrologOp::Pop => 1 << 5,
        PrologOp::Peek => 2 << 5,
        PrologOp::LoadMd(md) => (3 << 5) | (md & 0x1F),
        PrologOp::Rand => 4 << 5,
    }
}

fn prolog_op(b: u8) -> Result<PrologOp, String> {
    Ok(match b >> 5 {
        0 => PrologOp::Nop,
        1 => PrologOp::Pop,
        2 => PrologOp::Peek,
        3 => PrologOp::LoadMd(b & 0x1F),
        4 => PrologOp::Rand,
        op => return Err(format!("prolog selector op {op} is not one of 0..=4")),
    })
}

const ALU: [AluOp; 11] = [AluOp::Nop, AluOp::Add, AluOp::Sub, AluOp::And, AluOp::Or, AluOp::Xor, AluOp::Lsh, AluOp::Rsh, AluOp::Neg, AluOp::Min, AluOp::Max];
const MEM: [MemOp; 8] = [MemOp::Nop, MemOp::Load, MemOp::Store, MemOp::FaAdd, MemOp::FaOr, MemOp::FaAnd, MemOp::FaMax, MemOp::FaMin];
const CTRL: [CtrlOp; 9] = [CtrlOp::Nop, CtrlOp::Halt, CtrlOp::Jmp, CtrlOp::Beq, CtrlOp::Bset, CtrlOp::Blt, CtrlOp::Bgt, CtrlOp::Blts, CtrlOp::Bgts];

pub fn alu_code(op: AluOp) -> u8 {
    ALU.iter().position(|&x| x == op).unwrap() as u8
}
pub fn mem_code(op: MemOp) -> u8 {
    MEM.iter().position(|&x| x == op).unwrap() as u8
}
pub fn ctrl_code(op: CtrlOp) -> u8 {
    CTRL.iter().position(|&x| x == op).unwrap() as u8
}

fn reg_of(b: u8, lanes: u8) -> Result<Reg, String> {
    if (b as usize) < 2 * lanes as usize {
        Ok(Reg::from_index(b as usize, lanes))
    } else {
        Err(format!("register index {b} (there are {} registers)", 2 * lanes))
    }
}

/// Encode a decoded DPF packet (its code, stack and invocation) as SwitchVM's option area.
pub fn encode(pkt: &DpfPacket, lanes: u8) -> Result<Vec<u8>, String> {
    let mut h = DpfHeader { lanes, gas: pkt.gas, init_pc: pkt.init_pc.map(Pc::to_u16), app_id: pkt.app_id, stack: pkt.stack.clone(), ..Default::default() };
    if let Some(code) = &pkt.code {
        for (i, p) in code.prologs.iter().enumerate() {
            h.prologs.push(RawProlog { index: i as u8, next: p.next.to_u16(), sel: p.sel.iter().map(|&o| prolog_byte(o)).collect() });
        }
        for (s, alts) in code.eus.iter().enumerate() {
            for (i, e) in alts.iter().enumerate() {
                check_eu(e, lanes)?;
                let mut imm = vec![None; lanes as usize];
                let sel = e
                    .sel
                    .iter()
                    .enumerate()
                    .map(|(j, o)| match *o {
                        SelectOp::Nop => 0,
                        SelectOp::Mov(r) => (1 << 5) | r.index(lanes) as u8,
                        SelectOp::LoadImm(v) => {
                            imm[j - lanes as usize] = Some(v);
                            2 << 5
                        }
                        SelectOp::LoadConst(c) => {
                            imm[j - lanes as usize] = Some(c as u32);
                            3 << 5
                        }
                        SelectOp::Hash => 4 << 5,
                    })
                    .collect();
                let opnd = |o: Operand| match o {
                    Operand::Reg(r) => (r.index(lanes) as u8, None),
                    Operand::Imm(v) => (SEL_IMM, Some(v)),
                };
                let (op1, imm1) = opnd(e.branch.op1);
                let (op2, imm2) = opnd(e.branch.op2);
                h.eus.push(RawEu {
                    stage: s as u8,
                    index: i as u8,
                    ctrl: ctrl_code(e.branch.op),
                    op1,
                    op2,
                    sel,
                    alu: e.alu.iter().map(|&o| alu_code(o)).collect(),
                    mem: e.mem.iter().map(|&o| mem_code(o)).collect(),
                    taken: e.branch.taken.to_u16(),
                    not_taken: e.branch.not_taken.to_u16(),
                    imm,
                    imm1,
                    imm2,
                });
            }
        }
        for (i, e) in code.epilogs.iter().enumerate() {
            check_epilog(e, lanes)?;
            let opnd = |o: Option<Operand>| match o {
                None => (SEL_NONE, 0),
                Some(Operand::Reg(r)) => (r.index(lanes) as u8, 0),
                Some(Operand::Imm(v)) => (SEL_IMM, v),
            };
            let (steer, steer_imm) = opnd(e.steer);
            let (next, next_imm) = opnd(e.next_pc);
            h.epilogs.push(RawEpilog {
                index: i as u8,
                push: e.push.iter().map(|r| r.index(lanes) as u8).collect(),
                steer,
                steer_imm,
                next,
                next_imm,
                drop_code: e.drop_code,
            });
        }
    }
    h.emit().map_err(|e| e.to_string())
}

/// Decode SwitchVM's option area into the packet the machine runs (tenant and source come from
/// the encapsulation, not from here).
pub fn decode(area: &[u8], lanes: u8) -> Result<DpfPacket, String> {
    let h = DpfHeader::parse(area).map_err(|e| e.to_string())?;
    if h.lanes != lanes {
        return Err(format!("the code is for {} lanes, this machine has {lanes}", h.lanes));
    }
    let l = lanes as usize;
    let mut code = PacketCode::default();
    let dense = |idx: &[u8], what: &str| -> Result<(), String> {
        for (i, &x) in idx.iter().enumerate() {
            if x as usize != i {
                return Err(format!("{what} {x} is out of order (expected index {i})"));
            }
        }
        Ok(())
    };
    dense(&h.prologs.iter().map(|p| p.index).collect::<Vec<_>>(), "prolog")?;
    for p in &h.prologs {
        code.prologs.push(Prolog { sel: p.sel.iter().map(|&b| prolog_op(b)).collect::<Result<_, _>>()?, next: Pc::from_u16(p.next) });
    }
    let stages = h.eus.iter().map(|e| e.stage as usize + 1).max().unwrap_or(0);
    code.eus = vec![Vec::new(); stages];
    for e in &h.eus {
        let alts = &mut code.eus[e.stage as usize];
        if e.index as usize != alts.len() {
            return Err(format!("EU {} instruction {} is out of order", e.stage, e.index));
        }
        let mut sel = Vec::with_capacity(2 * l);
        for (j, &b) in e.sel.iter().enumerate() {
            let imm = if j >= l { e.imm[j - l] } else { None };
            sel.push(match b >> 5 {
                0 => SelectOp::Nop,
                1 => SelectOp::Mov(reg_of(b & 0x1F, lanes)?),
                2 => SelectOp::LoadImm(imm.ok_or_else(|| format!("EU {} selector {j}: LOAD_IMM needs a B register with an immediate", e.stage))?),
                3 => SelectOp::LoadConst(imm.ok_or_else(|| format!("EU {} selector {j}: LOAD_CONST needs a B register with an index", e.stage))? as u16),
                4 => SelectOp::Hash,
                op => return Err(format!("EU {} selector op {op} is not one of 0..=4", e.stage)),
            });
        }
        let alu = e.alu.iter().map(|&c| ALU.get(c as usize).copied().ok_or_else(|| format!("ALU op {c} is not one of 0..=10"))).collect::<Result<_, _>>()?;
        let mem = e.mem.iter().map(|&c| MEM.get(c as usize).copied().ok_or_else(|| format!("memory op {c} is not one of 0..=7"))).collect::<Result<_, _>>()?;
        let op = CTRL.get(e.ctrl as usize).copied().ok_or_else(|| format!("branch op {} is not one of 0..=8", e.ctrl))?;
        let opnd = |s: u8, imm: Option<u32>| -> Result<Operand, String> {
            if s == SEL_IMM {
                Ok(Operand::Imm(imm.ok_or("an immediate operand without its value")?))
            } else {
                Ok(Operand::Reg(reg_of(s, lanes)?))
            }
        };
        let ins = EuInstr {
            sel,
            alu,
            mem,
            branch: Branch { op, op1: opnd(e.op1, e.imm1)?, op2: opnd(e.op2, e.imm2)?, taken: Pc::from_u16(e.taken), not_taken: Pc::from_u16(e.not_taken) },
        };
        check_eu(&ins, lanes)?;
        alts.push(ins);
    }
    dense(&h.epilogs.iter().map(|p| p.index).collect::<Vec<_>>(), "epilog")?;
    for e in &h.epilogs {
        let opnd = |s: u8, imm: u32| -> Result<Option<Operand>, String> {
            Ok(match s {
                SEL_NONE => None,
                SEL_IMM => Some(Operand::Imm(imm)),
                r => Some(Operand::Reg(reg_of(r, lanes)?)),
            })
        };
        code.epilogs.push(Epilog {
            push: e.push.iter().map(|&b| reg_of(b, lanes)).collect::<Result<_, _>>()?,
            steer: opnd(e.steer, e.steer_imm)?,
            next_pc: opnd(e.next, e.next_imm)?,
            drop_code: e.drop_code,
        });
    }
    let has_code = !(code.prologs.is_empty() && code.eus.is_empty() && code.epilogs.is_empty());
    Ok(DpfPacket { app_id: h.app_id, init_pc: h.init_pc.map(Pc::from_u16), code: has_code.then_some(code), stack: h.stack, gas: h.gas, ..Default::default() })
}
