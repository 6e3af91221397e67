//! The SwitchVM data plane: permissions → prolog → EUs → epilog → steering, executed once per
//! packet with RMT semantics (per-packet atomic; each EU's memory accessed at most once per lane;
//! a fault stops the DPF where it happened, as hardware cannot undo earlier stages' writes).
//! Every violation — unauthorized invocation, bad code pointer, register-group misuse in
//! in-packet code, unmapped memory, stack under/overflow, a steering index the tenant has no rule
//! for, a privileged action from an unprivileged tenant, no gas left — is counted per kind and
//! queued as a report for the control plane.

use std::collections::HashMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::isa::*;
use crate::memory::LaneMemory;

/// Sizes of the machine (defaults: Tofino-1 as in the paper's prototype).
#[derive(Debug, Clone, PartialEq)]
pub struct VmConfig {
    pub eus: u8,
    pub lanes: u8,
    /// 32-bit cells per lane memory.
    pub mem_entries: usize,
    /// Segment mappings (TCAM ranges) per lane.
    pub segments_per_lane: usize,
    /// Direct mappings on the first lane of each EU.
    pub direct_per_eu: usize,
    /// In-switch instructions per kind (prolog, each EU, epilog).
    pub code_slots: usize,
    pub max_stack: usize,
    /// Permission and steering table sizes.
    pub permission_entries: usize,
    pub steering_entries: usize,
    pub const_entries: usize,
    /// Executions a packet may make (recirculations and chained DPFs) before it is dropped.
    pub initial_gas: u8,
}

impl Default for VmConfig {
    fn default() -> Self {
        VmConfig {
            eus: 4,
            lanes: 4,
            mem_entries: 45_000,
            segments_per_lane: 1_500,
            direct_per_eu: 45_000,
            code_slots: 4_096,
            max_stack: 16,
            permission_entries: 32_768,
            steering_entries: 32_768,
            const_entries: 256,
            initial_gas: 8,
        }
    }
}

/// Tenant capabilities (the permission entry's bit vector).
pub mod caps {
    /// LOAD_MD may read switch metadata.
    pub const METADATA: u32 = 1;
    /// set_port and recirculate steering actions.
    pub const PRIVILEGED: u32 = 2;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unauthorized {
    Drop,
    Pass,
}

/// One row of the permissions table (keyed by the trusted tenant id from the VNI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    pub on_unauthorized: Unauthorized,
    /// The DPF every packet of the tenant runs when it names none.
    pub default_pc: Option<Pc>,
    pub caps: u32,
    /// Must equal the packet's app_id for its DPF to run (0 in the entry = any).
    pub app_id: u32,
}

/// What a steering rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteerAction {
    Pass,
    Drop,
    ReturnToSender,
    /// Send to this (physical) address; installed by the control plane only.
    Forward(u32),
    Multicast(u16),
    /// Privileged.
    SetPort(u16),
    /// Privileged.
    Recirculate,
}

impl SteerAction {
    pub fn privileged(self) -> bool {
        matches!(self, SteerAction::SetPort(_) | SteerAction::Recirculate)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Violation {
    Unauthorized,
    BadPc,
    IllegalInstruction,
    MemoryFault,
    StackUnderflow,
    StackOverflow,
    NoSteeringRule,
    PrivilegedAction,
    MetadataDenied,
    OutOfGas,
    BadConst,
}

impl Violation {
    pub const ALL: [Violation; 11] = [
        Violation::Unauthorized,
        Violation::BadPc,
        Violation::IllegalInstruction,
        Violation::MemoryFault,
        Violation::StackUnderflow,
        Violation::StackOverflow,
        Violation::NoSteeringRule,
        Violation::PrivilegedAction,
        Violation::MetadataDenied,
        Violation::OutOfGas,
        Violation::BadConst,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Violation::Unauthorized => "unauthorized",
            Violation::BadPc => "bad_pc",
            Violation::IllegalInstruction => "illegal_instruction",
            Violation::MemoryFault => "memory_fault",
            Violation::StackUnderflow => "stack_underflow",
            Violation::StackOverflow => "stack_overflow",
            Violation::NoSteeringRule => "no_steering_rule",
            Violation::PrivilegedAction => "privileged_action",
            Violation::MetadataDenied => "metadata_denied",
            Violation::OutOfGas => "out_of_gas",
            Violation::BadConst => "bad_const",
        }
    }
}

/// In-packet DPF code: instructions per stage, addressed by `Pc::Packet(index)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketCode {
    pub prologs: Vec<Prolog>,
    pub eus: Vec<Vec<EuInstr>>,
    pub epilogs: Vec<Epilog>,
}

/// What SwitchVM sees of a packet: the trusted tenant (VNI), the SwitchVM header fields, the
/// in-packet code and the data stack (top = last element).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DpfPacket {
    pub tenant: u32,
    pub app_id: u32,
    /// Which prolog to run (None: the tenant's default, if any).
    pub init_pc: Option<Pc>,
    pub code: Option<PacketCode>,
    pub stack: Vec<u32>,
    pub gas: u8,
    /// Source address (return-to-sender).
    pub src: u32,
}

/// Switch metadata visible to LOAD_MD.
#[derive(Debug, Clone, Copy, Default)]
pub struct SwitchMeta {
    pub ingress_port: u32,
    pub timestamp_us: u32,
    pub switch_id: u32,
    pub queue_depth: u32,
}

/// The result of one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No DPF ran (no header and no default): forward normally.
    NotInvoked,
    /// The DPF ran; steer the packet this way.
    Steer(SteerAction),
    /// Dropped because of a violation.
    Violated(Violation),
}

/// In-switch code memory: per stage kind, `code_slots` instructions.
#[derive(Debug, Clone, Default)]
pub struct CodeMemory {
    pub prologs: Vec<Option<Prolog>>,
    pub eus: Vec<Vec<Option<EuInstr>>>,
    pub epilogs: Vec<Option<Epilog>>,
}

pub struct Machine {
    pub cfg: VmConfig,
    /// mem[eu][lane]
    pub mem: Vec<Vec<LaneMemory>>,
    pub code: CodeMemory,
    pub permissions: HashMap<u32, Permission>,
    pub steering: HashMap<(u32, u32), SteerAction>,
    pub consts: Vec<u32>,
    pub violations: HashMap<Violation, u64>,
    /// (tenant, violation) reports waiting for the control plane (bounded).
    pub reports: Vec<(u32, Violation)>,
    pub executed: u64,
    hash: Vec<crc::Crc<u32>>,
    regs: Vec<u32>,
    scratch: Vec<u32>,
}

/// The hash polynomials of lanes 0, 1, 2, 3, … (cycled).
const HASHES: [crc::Algorithm<u32>; 4] = [crc::CRC_32_ISO_HDLC, crc::CRC_32_ISCSI, crc::CRC_32_BZIP2, crc::CRC_32_MPEG_2];
const MAX_REPORTS: usize = 4096;

impl Machine {
    pub fn new(cfg: VmConfig) -> Self {
        let mem = (0..cfg.eus)
            .map(|_| (0..cfg.lanes).map(|l| LaneMemory::new(cfg.mem_entries, cfg.segments_per_lane, if l == 0 { cfg.direct_per_eu } else { 0 })).collect())
            .collect();
        let code = CodeMemory {
            prologs: vec![None; cfg.code_slots],
            eus: (0..cfg.eus).map(|_| vec![None; cfg.code_slots]).collect(),
            epilogs: vec![None; cfg.code_slots],
        };
        let regs = vec![0; 2 * cfg.lanes as usize];
        Machine {
            hash: (0..cfg.lanes as usize).map(|i| crc::Crc::<u32>::new(&HASHES[i % 4])).collect(),
            scratch: regs.clone(),
            regs,
            consts: vec![0; cfg.const_entries],
            mem,
            code,
            permissions: HashMap::new(),
            steering: HashMap::new(),
            violations: HashMap::new(),
            reports: Vec::new(),
            executed: 0,
            cfg,
        }
    }

    fn violate(&mut self, tenant: u32, v: Violation) -> Outcome {
        *self.violations.entry(v).or_insert(0) += 1;
        if self.reports.len() < MAX_REPORTS {
            self.reports.push((tenant, v));
        }
        Outcome::Violated(v)
    }

    pub fn violations_total(&self) -> u64 {
        self.violations.values().sum()
    }

    /// Run the packet through permissions, the DPF and steering.
    pub fn execute(&mut self, pkt: &mut DpfPacket, md: &SwitchMeta, rng: &mut ChaCha8Rng) -> Outcome {
        let tenant = pkt.tenant;
        // ---- permissions ----
        let Some(perm) = self.permissions.get(&tenant).cloned() else {
            if pkt.init_pc.is_none() && pkt.code.is_none() {
                return Outcome::NotInvoked;
            }
            return self.violate(tenant, Violation::Unauthorized);
        };
        let named = pkt.init_pc;
        let pc = match named.or(perm.default_pc) {
            Some(pc) => pc,
            None => return Outcome::NotInvoked,
        };
        if named.is_some() && perm.app_id != 0 && perm.app_id != pkt.app_id {
            return match perm.on_unauthorized {
                Unauthorized::Pass => {
                    *self.violations.entry(Violation::Unauthorized).or_insert(0) += 1;
                    Outcome::Steer(SteerAction::Pass)
                }
                Unauthorized::Drop => self.violate(tenant, Violation::Unauthorized),
            };
        }
        if pkt.gas == 0 {
            return self.violate(tenant, Violation::OutOfGas);
        }
        pkt.gas -= 1;
        self.executed += 1;
        // Run on borrowed code (no per-packet copies): the code memories and the packet's code
        // are set aside while the registers, memories and stack change, then put back.
        let code = std::mem::take(&mut self.code);
        let pcode = pkt.code.take();
        let (out, drop_code) = self.run_dpf(&code, pcode.as_ref(), pkt, pc, perm.caps, md, rng);
        self.code = code;
        if !drop_code {
            pkt.code = pcode;
        }
        out
    }

    /// Prolog, EUs and epilog of one invocation; returns the outcome and whether HDR_MOD asked
    /// for the code to be dropped.
    #[allow(clippy::too_many_arguments)]
    fn run_dpf(
        &mut self,
        code: &CodeMemory,
        pcode: Option<&PacketCode>,
        pkt: &mut DpfPacket,
        pc: Pc,
        perm_caps: u32,
        md: &SwitchMeta,
        rng: &mut ChaCha8Rng,
    ) -> (Outcome, bool) {
        let tenant = pkt.tenant;
        let lanes = self.cfg.lanes;
        macro_rules! violate {
            ($v:expr) => {
                return (self.violate(tenant, $v), false)
            };
        }

        // ---- prolog ----
        let Some(prolog) = fetch_prolog(code, pcode, pc) else { violate!(Violation::BadPc) };
        if check_prolog(prolog, lanes).is_err() {
            violate!(Violation::IllegalInstruction);
        }
        self.regs.iter_mut().for_each(|r| *r = 0);
        for (j, op) in prolog.sel.iter().enumerate() {
            let v = match *op {
                PrologOp::Nop => continue,
                PrologOp::Pop => match pkt.stack.pop() {
                    Some(v) => v,
                    None => violate!(Violation::StackUnderflow),
                },
                PrologOp::Peek => match pkt.stack.last() {
                    Some(&v) => v,
                    None => violate!(Violation::StackUnderflow),
                },
                PrologOp::LoadMd(i) => {
                    if perm_caps & caps::METADATA == 0 {
                        violate!(Violation::MetadataDenied);
                    }
                    match i {
                        MD_INGRESS_PORT => md.ingress_port,
                        MD_TIMESTAMP_US => md.timestamp_us,
                        MD_SWITCH_ID => md.switch_id,
                        MD_QUEUE_DEPTH => md.queue_depth,
                        _ => violate!(Violation::IllegalInstruction),
                    }
                }
                PrologOp::Rand => rng.gen(),
            };
            self.regs[j] = v;
        }
        let mut next = prolog.next;

        // ---- execution units ----
        for eu in 0..self.cfg.eus as usize {
            let Some(ins) = fetch_eu(code, pcode, eu, next) else { violate!(Violation::BadPc) };
            if check_eu(ins, lanes).is_err() {
                violate!(Violation::IllegalInstruction);
            }
            // Stage 1: selectors read the register file in parallel.
            self.scratch.copy_from_slice(&self.regs);
            for (j, s) in ins.sel.iter().enumerate() {
                match *s {
                    SelectOp::Nop => {}
                    SelectOp::Mov(src) => self.scratch[j] = self.regs[src.index(lanes)],
                    SelectOp::LoadImm(v) => self.scratch[j] = v,
                    SelectOp::LoadConst(i) => match self.consts.get(i as usize) {
                        Some(&v) => self.scratch[j] = v,
                        None => violate!(Violation::BadConst),
                    },
                    SelectOp::Hash => self.scratch[j] = self.hash[j % lanes as usize].checksum(&self.regs[j].to_be_bytes()),
                }
            }
            // Stage 2: the branch compares stage-1 values; ALU and memory run per lane.
            let val = |o: Operand, s: &[u32]| match o {
                Operand::Reg(r) => s[r.index(lanes)],
                Operand::Imm(v) => v,
            };
            let b = &ins.branch;
            let taken = b.op.taken(val(b.op1, &self.scratch), val(b.op2, &self.scratch));
            for lane in 0..lanes as usize {
                let (a, bv) = (self.scratch[lane], self.scratch[lanes as usize + lane]);
                let mem_op = ins.mem[lane];
                let mut new_b = bv;
                if mem_op != MemOp::Nop {
                    let lm = &mut self.mem[eu][lane];
                    let Some(p) = lm.translate(tenant, a) else { violate!(Violation::MemoryFault) };
                    let cell = &mut lm.cells[p as usize];
                    let (m, nb) = mem_op.apply(*cell, bv);
                    *cell = m;
                    new_b = nb;
                }
                self.regs[lane] = ins.alu[lane].apply(a, bv);
                self.regs[lanes as usize + lane] = new_b;
            }
            next = if taken { b.taken } else { b.not_taken };
            if b.op == CtrlOp::Halt {
                break;
            }
        }

        // ---- epilog ----
        let Some(ep) = fetch_epilog(code, pcode, next) else { violate!(Violation::BadPc) };
        if check_epilog(ep, lanes).is_err() {
            violate!(Violation::IllegalInstruction);
        }
        if pkt.stack.len() + ep.push.len() > self.cfg.max_stack {
            violate!(Violation::StackOverflow);
        }
        let value = |o: Operand, regs: &[u32]| match o {
            Operand::Reg(r) => regs[r.index(lanes)],
            Operand::Imm(v) => v,
        };
        let action = match ep.steer {
            None => SteerAction::Pass,
            Some(o) => match self.steering.get(&(tenant, value(o, &self.regs))) {
                Some(&a) => a,
                None => violate!(Violation::NoSteeringRule),
            },
        };
        if action.privileged() && perm_caps & caps::PRIVILEGED == 0 {
            violate!(Violation::PrivilegedAction);
        }
        for r in &ep.push {
            pkt.stack.push(self.regs[r.index(lanes)]);
        }
        pkt.init_pc = ep.next_pc.map(|o| Pc::from_u16(value(o, &self.regs) as u16));
        (Outcome::Steer(action), ep.drop_code)
    }
}

fn fetch_prolog<'a>(code: &'a CodeMemory, pcode: Option<&'a PacketCode>, pc: Pc) -> Option<&'a Prolog> {
    match pc {
        Pc::Packet(i) => pcode?.prologs.get(i as usize),
        Pc::Switch(i) => code.prologs.get(i as usize)?.as_ref(),
    }
}

fn fetch_eu<'a>(code: &'a CodeMemory, pcode: Option<&'a PacketCode>, eu: usize, pc: Pc) -> Option<&'a EuInstr> {
    match pc {
        Pc::Packet(i) => pcode?.eus.get(eu)?.get(i as usize),
        Pc::Switch(i) => code.eus.get(eu)?.get(i as usize)?.as_ref(),
    }
}

fn fetch_epilog<'a>(code: &'a CodeMemory, pcode: Option<&'a PacketCode>, pc: Pc) -> Option<&'a Epilog> {
    match pc {
        Pc::Packet(i) => pcode?.epilogs.get(i as usize),
        Pc::Switch(i) => code.epilogs.get(i as usize)?.as_ref(),
    }
}
