//! The instruction set of Table 1, as the machine executes it: prolog selectors, the two stages
//! of an execution unit (selectors; then ALU, memory and the branch per EU in parallel) and the
//! epilog. Register-group restrictions are part of the types' validation: only A registers
//! address memory and hash, only B registers take immediates and constants, an ALU works on its
//! own lane's A and B.

use std::fmt;

/// A virtual register: `A(i)` or `B(i)` of lane i.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reg {
    A(u8),
    B(u8),
}

impl Reg {
    pub fn lane(self) -> u8 {
        match self {
            Reg::A(i) | Reg::B(i) => i,
        }
    }
    pub fn is_a(self) -> bool {
        matches!(self, Reg::A(_))
    }
    /// Index in the register file: A0..A(L-1), then B0..B(L-1).
    pub fn index(self, lanes: u8) -> usize {
        match self {
            Reg::A(i) => i as usize,
            Reg::B(i) => (lanes + i) as usize,
        }
    }
    pub fn from_index(i: usize, lanes: u8) -> Reg {
        if i < lanes as usize {
            Reg::A(i as u8)
        } else {
            Reg::B((i - lanes as usize) as u8)
        }
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reg::A(i) => write!(f, "A{i}"),
            Reg::B(i) => write!(f, "B{i}"),
        }
    }
}

/// A register or an immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    Reg(Reg),
    Imm(u32),
}

/// Where the next stage's instruction is: in the packet's code (an index into that stage's
/// in-packet instructions) or in the switch's code memory of that stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pc {
    Packet(u16),
    Switch(u16),
}

impl Pc {
    /// The 16-bit wire form: bit 15 set = in the packet.
    pub fn to_u16(self) -> u16 {
        match self {
            Pc::Packet(i) => 0x8000 | (i & 0x7FFF),
            Pc::Switch(i) => i & 0x7FFF,
        }
    }
    pub fn from_u16(v: u16) -> Pc {
        if v & 0x8000 != 0 {
            Pc::Packet(v & 0x7FFF)
        } else {
            Pc::Switch(v)
        }
    }
}

/// How the prolog initialises one register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrologOp {
    #[default]
    Nop,
    /// R = stack.pop()
    Pop,
    /// R = stack.peek()
    Peek,
    /// R = switch metadata[md] (needs the metadata capability)
    LoadMd(u8),
    /// R = random
    Rand,
}

/// Switch metadata a DPF may read with LOAD_MD.
pub const MD_INGRESS_PORT: u8 = 0;
pub const MD_TIMESTAMP_US: u8 = 1;
pub const MD_SWITCH_ID: u8 = 2;
pub const MD_QUEUE_DEPTH: u8 = 3;

/// The first stage of an EU, per register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SelectOp {
    #[default]
    Nop,
    /// R = src
    Mov(Reg),
    /// B = imm (B registers only)
    LoadImm(u32),
    /// B = const_tbl[idx] (B registers only)
    LoadConst(u16),
    /// A = hash(A) with this lane's polynomial (A registers only)
    Hash,
}

/// Lane ALU: A[i] = A[i] op B[i] (shifts by B[i] mod 32; NEG is A = −A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AluOp {
    #[default]
    Nop,
    Add,
    Sub,
    And,
    Or,
    Xor,
    Lsh,
    Rsh,
    Neg,
    Min,
    Max,
}

/// Lane memory access at virtual address A[i]: LOAD B = mem; STORE mem = B; FA-op: t = mem,
/// mem = op(t, B), B = t.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemOp {
    #[default]
    Nop,
    Load,
    Store,
    FaAdd,
    FaOr,
    FaAnd,
    FaMax,
    FaMin,
}

/// The branch of an EU (one per EU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CtrlOp {
    /// Fall through to `not_taken`.
    #[default]
    Nop,
    /// Skip the remaining EUs: the epilog at `taken` runs next.
    Halt,
    Jmp,
    Beq,
    /// Taken when op1 & op2 ≠ 0.
    Bset,
    Blt,
    Bgt,
    Blts,
    Bgts,
}

impl AluOp {
    #[inline]
    pub fn apply(self, a: u32, b: u32) -> u32 {
        match self {
            AluOp::Nop => a,
            AluOp::Add => a.wrapping_add(b),
            AluOp::Sub => a.wrapping_sub(b),
            AluOp::And => a & b,
            AluOp::Or => a | b,
            AluOp::Xor => a ^ b,
            AluOp::Lsh => a.wrapping_shl(b & 31),
            AluOp::Rsh => a.wrapping_shr(b & 31),
            AluOp::Neg => a.wrapping_neg(),
            AluOp::Min => a.min(b),
            AluOp::Max => a.max(b),
        }
    }
}

impl MemOp {
    /// (new memory value, new B) for memory value `m` and B `b`.
    #[inline]
    pub fn apply(self, m: u32, b: u32) -> (u32, u32) {
        match self {
            MemOp::Nop => (m, b),
            MemOp::Load => (m, m),
            MemOp::Store => (b, b),
            MemOp::FaAdd => (m.wrapping_add(b), m),
            MemOp::FaOr => (m | b, m),
            MemOp::FaAnd => (m & b, m),
            MemOp::FaMax => (m.max(b), m),
            MemOp::FaMin => (m.min(b), m),
        }
    }
}

impl CtrlOp {
    /// Whether the branch is taken for operands x, y.
    #[inline]
    pub fn taken(self, x: u32, y: u32) -> bool {
        match self {
            CtrlOp::Nop => false,
            CtrlOp::Halt | CtrlOp::Jmp => true,
            CtrlOp::Beq => x == y,
            CtrlOp::Bset => x & y != 0,
            CtrlOp::Blt => x < y,
            CtrlOp::Bgt => x > y,
            CtrlOp::Blts => (x as i32) < (y as i32),
            CtrlOp::Bgts => (x as i32) > (y as i32),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prolog {
    /// One op per register (A0..A(L-1), B0..B(L-1)); applied in that order.
    pub sel: Vec<PrologOp>,
    /// The first EU's instruction.
    pub next: Pc,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    pub op: CtrlOp,
    pub op1: Operand,
    pub op2: Operand,
    pub taken: Pc,
    pub not_taken: Pc,
}

/// One execution stage: runs on one EU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EuInstr {
    pub sel: Vec<SelectOp>,
    pub alu: Vec<AluOp>,
    pub mem: Vec<MemOp>,
    pub branch: Branch,
}

/// Steering value: an index into the tenant's steering table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Epilog {
    /// Registers pushed onto the in-packet stack, in order (at most 2L).
    pub push: Vec<Reg>,
    /// Steering-table index (None = the default action, pass).
    pub steer: Option<Operand>,
    /// New init_pc for the next switch or pipe (chaining).
    pub next_pc: Option<Operand>,
    /// HDR_MOD: drop the code header from the packet after execution.
    pub drop_code: bool,
}

/// What is wrong with an instruction for a machine of `lanes` lanes (register groups, lanes).
pub fn check_eu(i: &EuInstr, lanes: u8) -> Result<(), String> {
    let regs = 2 * lanes as usize;
    if i.sel.len() != regs || i.alu.len() != lanes as usize || i.mem.len() != lanes as usize {
        return Err(format!("an EU instruction has {regs} selectors, {lanes} ALU ops and {lanes} memory ops"));
    }
    for (j, s) in i.sel.iter().enumerate() {
        let dst = Reg::from_index(j, lanes);
        match *s {
            SelectOp::LoadImm(_) | SelectOp::LoadConst(_) if dst.is_a() => {
                return Err(format!("{dst}: only B registers take immediates and constants"))
            }
            SelectOp::Hash if !dst.is_a() => return Err(format!("{dst}: only A registers hash")),
            SelectOp::Mov(src) if src.lane() >= lanes => return Err(format!("{src}: there are {lanes} lanes")),
            _ => {}
        }
    }
    for op in [i.branch.op1, i.branch.op2] {
        if let Operand::Reg(r) = op {
            if r.lane() >= lanes {
                return Err(format!("{r}: there are {lanes} lanes"));
            }
        }
    }
    Ok(())
}

pub fn check_prolog(p: &Prolog, lanes: u8) -> Result<(), String> {
    if p.sel.len() != 2 * lanes as usize {
        return Err(format!("a prolog has {} selectors (one per register)", 2 * lanes));
    }
    Ok(())
}

pub fn check_epilog(e: &Epilog, lanes: u8) -> Result<(), String> {
    if e.push.len() > 2 * lanes as usize {
        return Err(format!("an epilog pushes at most {} registers", 2 * lanes));
    }
    for r in e.push.iter().copied().chain([e.steer, e.next_pc].into_iter().flatten().filter_map(|o| match o {
        Operand::Reg(r) => Some(r),
        Operand::Imm(_) => None,
    })) {
        if r.lane() >= lanes {
            return Err(format!("{r}: there are {lanes} lanes"));
        }
    }
    Ok(())
}
