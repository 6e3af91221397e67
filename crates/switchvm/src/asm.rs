//! The SwitchVM assembler and disassembler. A DPF is written stage by stage:
//!
//! ```text
//! dpf counter                 ; a name (comments start with ; or #)
//! prolog:
//!     A0 = pop                ; pop | peek | rand | md N
//!     -> s                    ; the first EU instruction (default: EU 0's first)
//! eu0 s:                      ; an instruction of EU 0, labelled s
//!     B0 = imm 1              ; mov REG | imm N | const N (B only) | hash (A only)
//!     mem0 faadd              ; load store faadd faor faand famax famin
//!     alu1 add                ; add sub and or xor lsh rsh neg min max
//!     beq A0, 5 -> hit else miss   ; beq bset blt bgt blts bgts; jmp -> L; halt -> EPILOG
//!     -> s                    ; or fall through to a label of the next stage
//! epilog out:
//!     push A0, B0
//!     fwd 1                   ; steering-table index: a number or a register
//!     next_pc 0x8001          ; chain: the next DPF's init_pc
//!     drop_code               ; HDR_MOD
//! ```
//!
//! Stages a DPF leaves out are filled with a NOP that falls through to the next stage's first
//! instruction. Errors name the line and what is wrong. Labels resolve at deployment
//! (`control::deploy`) or, for in-packet code, by [`link_in_packet`].

use std::collections::HashMap;

use crate::control::{DpfSource, EuSource, Target};
use crate::isa::*;
use crate::machine::PacketCode;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct AsmError {
    pub line: usize,
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> AsmError {
    AsmError { line, message: message.into() }
}

fn parse_num(s: &str, line: usize) -> Result<u32, AsmError> {
    let t = s.trim();
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else if let Some(n) = t.strip_prefix('-') {
        n.parse::<u32>().map(|v| v.wrapping_neg())
    } else {
        t.parse::<u32>()
    };
    r.map_err(|_| err(line, format!("expected a number, got `{t}`")))
}

/// A label names a stage's instruction or an epilog: letters, digits and `_` (so a
/// disassembly, which prints labels as they are, assembles back to the same program).
fn parse_label(s: &str, line: usize) -> Result<String, AsmError> {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(s.to_string())
    } else {
        Err(err(line, format!("a label is letters, digits and `_`, got `{s}`")))
    }
}

fn parse_reg(s: &str, lanes: u8, line: usize) -> Result<Reg, AsmError> {
    let t = s.trim();
    // The group letter, split on a character boundary (the text may be any UTF-8).
    let (g, n) = t.split_at(t.chars().next().map_or(0, char::len_utf8));
    let lane: u8 = n.parse().map_err(|_| err(line, format!("expected a register like A0 or B3, got `{t}`")))?;
    if lane >= lanes {
        return Err(err(line, format!("register {t}: this machine has {lanes} lanes (A0..A{l}, B0..B{l})", l = lanes - 1)));
    }
    match g {
        "A" | "a" => Ok(Reg::A(lane)),
        "B" | "b" => Ok(Reg::B(lane)),
        _ => Err(err(line, format!("expected a register like A0 or B3, got `{t}`"))),
    }
}

fn parse_operand(s: &str, lanes: u8, line: usize) -> Result<Operand, AsmError> {
    let t = s.trim();
    let looks_like_reg = t.len() >= 2 && t.starts_with(['A', 'a', 'B', 'b']) && t[1..].chars().all(|c| c.is_ascii_digit());
    if looks_like_reg {
        Ok(Operand::Reg(parse_reg(t, lanes, line)?))
    } else {
        Ok(Operand::Imm(parse_num(t, line)?))
    }
}

fn lane_of(word: &str, prefix: &str, lanes: u8, line: usize) -> Result<usize, AsmError> {
    let n: u8 = word[prefix.len()..].parse().map_err(|_| err(line, format!("expected {prefix}N, got `{word}`")))?;
    if n >= lanes {
        return Err(err(line, format!("{word}: this machine has {lanes} lanes")));
    }
    Ok(n as usize)
}

enum Section {
    None,
    Prolog,
    Eu(usize, usize),
    Epilog(usize),
}

/// Assemble `text` for a machine of `eus` × `lanes`.
pub fn assemble(text: &str, eus: u8, lanes: u8) -> Result<DpfSource, AsmError> {
    let l = lanes as usize;
    let mut name = String::from("dpf");
    let mut prolog_sel = vec![PrologOp::Nop; 2 * l];
    let mut prolog_next: Option<Target> = None;
    let mut stages: Vec<Vec<(String, EuSource)>> = vec![Vec::new(); eus as usize];
    let mut epilogs: Vec<(String, Epilog)> = Vec::new();
    let mut section = Section::None;
    let mut label_lines: HashMap<String, usize> = HashMap::new();
    let mut has_prolog = false;
    let blank_eu = || EuSource {
        sel: vec![SelectOp::Nop; 2 * l],
        alu: vec![AluOp::Nop; l],
        mem: vec![MemOp::Nop; l],
        op: CtrlOp::Nop,
        op1: Operand::Imm(0),
        op2: Operand::Imm(0),
        taken: Target::Label(String::new()),
        not_taken: Target::Label(String::new()),
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let code = raw.split([';', '#']).next().unwrap_or("").trim();
        if code.is_empty() {
            continue;
        }
        // Section headers.
        if let Some(rest) = code.strip_suffix(':') {
            let mut w = rest.split_whitespace();
            let head = w.next().unwrap_or("");
            let label = w.next().map(|l| parse_label(l, line)).transpose()?;
            if w.next().is_some() {
                return Err(err(line, format!("a section header is `prolog:`, `euN LABEL:` or `epilog LABEL:`, got `{code}`")));
            }
            section = if head == "prolog" {
                if has_prolog {
                    return Err(err(line, "a DPF has one prolog"));
                }
                has_prolog = true;
                Section::Prolog
            } else if head == "epilog" {
                let label = label.ok_or_else(|| err(line, "an epilog needs a label: `epilog out:`"))?;
                if epilogs.iter().any(|(n, _)| *n == label) {
                    return Err(err(line, format!("epilog label `{label}` is defined twice")));
                }
                epilogs.push((label, Epilog { push: vec![], steer: None, next_pc: None, drop_code: false }));
                Section::Epilog(epilogs.len() - 1)
            } else if let Some(n) = head.strip_prefix("eu") {
                let e: usize = n.parse().map_err(|_| err(line, format!("expected euN, got `{head}`")))?;
                if e >= eus as usize {
                    return Err(err(line, format!("eu{e}: this machine has {eus} EUs (eu0..eu{})", eus - 1)));
                }
                let label = label.ok_or_else(|| err(line, format!("an EU instruction needs a label: `eu{e} s:`")))?;
                if stages[e].iter().any(|(n, _)| *n == label) {
                    return Err(err(line, format!("label `{label}` is defined twice in eu{e}")));
                }
                label_lines.insert(format!("{e}/{label}"), line);
                stages[e].push((label, blank_eu()));
                Section::Eu(e, stages[e].len() - 1)
            } else {
                return Err(err(line, format!("unknown section `{head}` (expected prolog, euN or epilog)")));
            };
            continue;
        }
        if let Some(n) = code.strip_prefix("dpf ") {
            name = n.trim().to_string();
            continue;
        }
        match section {
            Section::None => return Err(err(line, "an instruction outside a section (start with `prolog:`, `euN LABEL:` or `epilog LABEL:`)")),
            Section::Prolog => {
                if let Some(t) = code.strip_prefix("->") {
                    prolog_next = Some(Target::Label(t.trim().to_string()));
                    continue;
                }
                let (lhs, rhs) = code.split_once('=').ok_or_else(|| err(line, format!("a prolog line is `REG = pop|peek|rand|md N` or `-> LABEL`, got `{code}`")))?;
                let r = parse_reg(lhs, lanes, line)?;
                let mut w = rhs.split_whitespace();
                let op = match (w.next(), w.next()) {
                    (Some("pop"), None) => PrologOp::Pop,
                    (Some("peek"), None) => PrologOp::Peek,
                    (Some("rand"), None) => PrologOp::Rand,
                    (Some("md"), Some(n)) => PrologOp::LoadMd(parse_num(n, line)? as u8),
                    _ => return Err(err(line, format!("the prolog initialises registers with pop, peek, rand or md N, got `{}`", rhs.trim()))),
                };
                prolog_sel[r.index(lanes)] = op;
            }
            Section::Eu(e, k) => {
                let ins = &mut stages[e][k].1;
                let words: Vec<&str> = code.split_whitespace().collect();
                if let Some(t) = code.strip_prefix("->") {
                    ins.taken = Target::Label(t.trim().to_string());
                    ins.not_taken = Target::Label(t.trim().to_string());
                } else if code.contains('=') {
                    let (lhs, rhs) = code.split_once('=').unwrap();
                    let r = parse_reg(lhs, lanes, line)?;
                    let mut w = rhs.split_whitespace();
                    let op = match (w.next(), w.next()) {
                        (Some("mov"), Some(src)) => SelectOp::Mov(parse_reg(src, lanes, line)?),
                        (Some("imm"), Some(n)) => SelectOp::LoadImm(parse_num(n, line)?),
                        (Some("const"), Some(n)) => SelectOp::LoadConst(parse_num(n, line)? as u16),
                        (Some("hash"), None) => SelectOp::Hash,
                        _ => return Err(err(line, format!("a selector is `REG = mov REG | imm N | const N | hash`, got `{}`", rhs.trim()))),
                    };
                    match op {
                        SelectOp::LoadImm(_) | SelectOp::LoadConst(_) if r.is_a() => {
                            return Err(err(line, format!("{r}: only B registers take immediates and constants")))
                        }
                        SelectOp::Hash if !r.is_a() => return Err(err(line, format!("{r}: only A registers hash"))),
                        _ => {}
                    }
                    ins.sel[r.index(lanes)] = op;
                } else if words[0].starts_with("alu") {
                    let lane = lane_of(words[0], "alu", lanes, line)?;
                    let op = match words.get(1).copied() {
                        Some("add") => AluOp::Add,
                        Some("sub") => AluOp::Sub,
                        Some("and") => AluOp::And,
                        Some("or") => AluOp::Or,
                        Some("xor") => AluOp::Xor,
                        Some("lsh") => AluOp::Lsh,
                        Some("rsh") => AluOp::Rsh,
                        Some("neg") => AluOp::Neg,
                        Some("min") => AluOp::Min,
                        Some("max") => AluOp::Max,
                        other => return Err(err(line, format!("unknown ALU op `{}` (add sub and or xor lsh rsh neg min max)", other.unwrap_or("")))),
                    };
                    ins.alu[lane] = op;
                } else if words[0].starts_with("mem") {
                    let lane = lane_of(words[0], "mem", lanes, line)?;
                    let op = match words.get(1).copied() {
                        Some("load") => MemOp::Load,
                        Some("store") => MemOp::Store,
                        Some("faadd") => MemOp::FaAdd,
                        Some("faor") => MemOp::FaOr,
                        Some("faand") => MemOp::FaAnd,
                        Some("famax") => MemOp::FaMax,
                        Some("famin") => MemOp::FaMin,
                        other => return Err(err(line, format!("unknown memory op `{}` (load store faadd faor faand famax famin)", other.unwrap_or("")))),
                    };
                    ins.mem[lane] = op;
                } else {
                    // Branches: OP X, Y -> T else N | jmp -> T | halt -> EPILOG
                    let (head, targets) = code.split_once("->").ok_or_else(|| err(line, format!("unknown instruction `{code}`")))?;
                    let opname = head.split_whitespace().next().unwrap_or("");
                    let op = match opname {
                        "jmp" => CtrlOp::Jmp,
                        "halt" => CtrlOp::Halt,
                        "beq" => CtrlOp::Beq,
                        "bset" => CtrlOp::Bset,
                        "blt" => CtrlOp::Blt,
                        "bgt" => CtrlOp::Bgt,
                        "blts" => CtrlOp::Blts,
                        "bgts" => CtrlOp::Bgts,
                        other => return Err(err(line, format!("unknown instruction `{other}`"))),
                    };
                    let (t, n) = match targets.split_once(" else ") {
                        Some((t, n)) => (t.trim().to_string(), Some(n.trim().to_string())),
                        None => (targets.trim().to_string(), None),
                    };
                    if matches!(op, CtrlOp::Jmp | CtrlOp::Halt) {
                        ins.op = op;
                        ins.taken = Target::Label(t.clone());
                        ins.not_taken = Target::Label(t);
                    } else {
                        let rest = head.trim_start()[opname.len()..].trim();
                        let (x, y) = rest.split_once(',').ok_or_else(|| err(line, format!("{opname} takes two operands: `{opname} A0, 5 -> T else N`")))?;
                        let n = n.ok_or_else(|| err(line, format!("{opname} needs both targets: `-> TAKEN else NOT_TAKEN`")))?;
                        ins.op = op;
                        ins.op1 = parse_operand(x, lanes, line)?;
                        ins.op2 = parse_operand(y, lanes, line)?;
                        ins.taken = Target::Label(t);
                        ins.not_taken = Target::Label(n);
                    }
                }
            }
            Section::Epilog(k) => {
                let ep = &mut epilogs[k].1;
                let (word, rest) = code.split_once(char::is_whitespace).map(|(a, b)| (a, b.trim())).unwrap_or((code, ""));
                match word {
                    "push" => {
                        for r in rest.split(',') {
                            ep.push.push(parse_reg(r, lanes, line)?);
                        }
                        if ep.push.len() > 2 * l {
                            return Err(err(line, format!("an epilog pushes at most {} registers", 2 * l)));
                        }
                    }
                    "fwd" => ep.steer = Some(parse_operand(rest, lanes, line)?),
                    "next_pc" => ep.next_pc = Some(parse_operand(rest, lanes, line)?),
                    "drop_code" => ep.drop_code = true,
                    other => return Err(err(line, format!("unknown epilog instruction `{other}` (push, fwd, next_pc, drop_code)"))),
                }
            }
        }
    }
    if epilogs.is_empty() {
        return Err(err(text.lines().count().max(1), "a DPF needs at least one epilog (`epilog out:`)"));
    }
    // Fill missing stages with a fall-through NOP, and default empty targets.
    for e in (0..eus as usize).rev() {
        let next_first = if e + 1 < eus as usize { stages[e + 1][0].0.clone() } else { epilogs[0].0.clone() };
        if stages[e].is_empty() {
            let mut n = blank_eu();
            n.taken = Target::Label(next_first.clone());
            n.not_taken = Target::Label(next_first.clone());
            stages[e].push((format!("_eu{e}"), n));
        }
        for (_, ins) in stages[e].iter_mut() {
            for t in [&mut ins.taken, &mut ins.not_taken] {
                if *t == Target::Label(String::new()) {
                    *t = Target::Label(next_first.clone());
                }
            }
        }
    }
    // Check every label now, so errors point at the source line.
    for e in 0..eus as usize {
        for (label, ins) in &stages[e] {
            let line = label_lines.get(&format!("{e}/{label}")).copied().unwrap_or(0);
            let halt = ins.op == CtrlOp::Halt;
            for (t, is_halt) in [(&ins.taken, halt), (&ins.not_taken, halt)] {
                let Target::Label(l) = t else { continue };
                let ok = if is_halt || e + 1 == eus as usize {
                    epilogs.iter().any(|(n, _)| n == l)
                } else {
                    stages[e + 1].iter().any(|(n, _)| n == l)
                };
                if !ok {
                    let where_ = if is_halt || e + 1 == eus as usize { "the epilogs".to_string() } else { format!("eu{}", e + 1) };
                    return Err(err(line, format!("label `{l}` is not in {where_} (a branch of eu{e} goes to the next stage)")));
                }
            }
        }
    }
    let prolog_next = prolog_next.unwrap_or_else(|| Target::Label(stages[0][0].0.clone()));
    if let Target::Label(l) = &prolog_next {
        if !stages[0].iter().any(|(n, _)| n == l) {
            return Err(err(1, format!("the prolog's target `{l}` is not in eu0")));
        }
    }
    Ok(DpfSource { name, prolog_sel, prolog_next, eus: stages, epilogs })
}

/// Resolve labels to in-packet pointers (instruction i of a stage → `Pc::Packet(i)`).
pub fn link_in_packet(src: &DpfSource) -> Result<PacketCode, String> {
    let idx = |t: &Target, stage: usize| -> Result<Pc, String> {
        match t {
            Target::Abs(pc) => Ok(*pc),
            Target::Label(l) => {
                let pos = if stage < src.eus.len() {
                    src.eus[stage].iter().position(|(n, _)| n == l)
                } else {
                    src.epilogs.iter().position(|(n, _)| n == l)
                };
                pos.map(|i| Pc::Packet(i as u16)).ok_or_else(|| format!("label `{l}` not found"))
            }
        }
    };
    let mut code = PacketCode { prologs: vec![Prolog { sel: src.prolog_sel.clone(), next: idx(&src.prolog_next, 0)? }], ..Default::default() };
    for (e, alts) in src.eus.iter().enumerate() {
        let mut v = Vec::new();
        for (_, s) in alts {
            let next_stage = if s.op == CtrlOp::Halt { src.eus.len() } else { e + 1 };
            v.push(EuInstr {
                sel: s.sel.clone(),
                alu: s.alu.clone(),
                mem: s.mem.clone(),
                branch: Branch { op: s.op, op1: s.op1, op2: s.op2, taken: idx(&s.taken, next_stage)?, not_taken: idx(&s.not_taken, next_stage)? },
            });
        }
        code.eus.push(v);
    }
    code.epilogs = src.epilogs.iter().map(|(_, e)| e.clone()).collect();
    Ok(code)
}

fn opnd_s(o: Operand) -> String {
    match o {
        Operand::Reg(r) => r.to_string(),
        Operand::Imm(v) => v.to_string(),
    }
}
fn target_s(t: &Target) -> String {
    match t {
        Target::Label(l) => l.clone(),
        Target::Abs(pc) => format!("{:#06x}", pc.to_u16()),
    }
}

/// Text that assembles back to `src` (labels kept).
pub fn disassemble(src: &DpfSource, lanes: u8) -> String {
    let mut out = format!("dpf {}\nprolog:\n", src.name);
    for (j, op) in src.prolog_sel.iter().enumerate() {
        let r = Reg::from_index(j, lanes);
        match op {
            PrologOp::Nop => {}
            PrologOp::Pop => out += &format!("    {r} = pop\n"),
            PrologOp::Peek => out += &format!("    {r} = peek\n"),
            PrologOp::Rand => out += &format!("    {r} = rand\n"),
            PrologOp::LoadMd(m) => out += &format!("    {r} = md {m}\n"),
        }
    }
    out += &format!("    -> {}\n", target_s(&src.prolog_next));
    let alu_names = ["", "add", "sub", "and", "or", "xor", "lsh", "rsh", "neg", "min", "max"];
    let mem_names = ["", "load", "store", "faadd", "faor", "faand", "famax", "famin"];
    for (e, alts) in src.eus.iter().enumerate() {
        for (label, s) in alts {
            out += &format!("eu{e} {label}:\n");
            for (j, op) in s.sel.iter().enumerate() {
                let r = Reg::from_index(j, lanes);
                match op {
                    SelectOp::Nop => {}
                    SelectOp::Mov(src) => out += &format!("    {r} = mov {src}\n"),
                    SelectOp::LoadImm(v) => out += &format!("    {r} = imm {v}\n"),
                    SelectOp::LoadConst(c) => out += &format!("    {r} = const {c}\n"),
                    SelectOp::Hash => out += &format!("    {r} = hash\n"),
                }
            }
            for (i, op) in s.alu.iter().enumerate() {
                if *op != AluOp::Nop {
                    out += &format!("    alu{i} {}\n", alu_names[crate::encoding::alu_code(*op) as usize]);
                }
            }
            for (i, op) in s.mem.iter().enumerate() {
                if *op != MemOp::Nop {
                    out += &format!("    mem{i} {}\n", mem_names[crate::encoding::mem_code(*op) as usize]);
                }
            }
            let name = match s.op {
                CtrlOp::Nop => None,
                CtrlOp::Halt => Some("halt"),
                CtrlOp::Jmp => Some("jmp"),
                CtrlOp::Beq => Some("beq"),
                CtrlOp::Bset => Some("bset"),
                CtrlOp::Blt => Some("blt"),
                CtrlOp::Bgt => Some("bgt"),
                CtrlOp::Blts => Some("blts"),
                CtrlOp::Bgts => Some("bgts"),
            };
            match (s.op, name) {
                (CtrlOp::Nop, _) => out += &format!("    -> {}\n", target_s(&s.taken)),
                (CtrlOp::Halt | CtrlOp::Jmp, Some(n)) => out += &format!("    {n} -> {}\n", target_s(&s.taken)),
                (_, Some(n)) => out += &format!("    {n} {}, {} -> {} else {}\n", opnd_s(s.op1), opnd_s(s.op2), target_s(&s.taken), target_s(&s.not_taken)),
                _ => {}
            }
        }
    }
    for (label, ep) in &src.epilogs {
        out += &format!("epilog {label}:\n");
        if !ep.push.is_empty() {
            out += &format!("    push {}\n", ep.push.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", "));
        }
        if let Some(o) = ep.steer {
            out += &format!("    fwd {}\n", opnd_s(o));
        }
        if let Some(o) = ep.next_pc {
            out += &format!("    next_pc {}\n", opnd_s(o));
        }
        if ep.drop_code {
            out += "    drop_code\n";
        }
    }
    out
}

/// The source form of in-packet code (labels `iN` per stage, epilogs `eN`; in-switch pointers
/// stay absolute), for the disassembler.
pub fn from_packet_code(code: &PacketCode, eus: u8, lanes: u8) -> DpfSource {
    let target = |pc: Pc, epilog: bool| match pc {
        Pc::Packet(i) => Target::Label(if epilog { format!("e{i}") } else { format!("i{i}") }),
        Pc::Switch(_) => Target::Abs(pc),
    };
    let l = lanes as usize;
    let prolog = code.prologs.first().cloned().unwrap_or(Prolog { sel: vec![PrologOp::Nop; 2 * l], next: Pc::Packet(0) });
    let stages = (0..eus as usize)
        .map(|e| {
            let last = e + 1 == eus as usize;
            code.eus
                .get(e)
                .map(|alts| {
                    alts.iter()
                        .enumerate()
                        .map(|(i, ins)| {
                            let halt = ins.branch.op == CtrlOp::Halt;
                            (
                                format!("i{i}"),
                                EuSource {
                                    sel: ins.sel.clone(),
                                    alu: ins.alu.clone(),
                                    mem: ins.mem.clone(),
                                    op: ins.branch.op,
                                    op1: ins.branch.op1,
                                    op2: ins.branch.op2,
                                    taken: target(ins.branch.taken, last || halt),
                                    not_taken: target(ins.branch.not_taken, last || halt),
                                },
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    DpfSource {
        name: "in_packet".into(),
        prolog_sel: prolog.sel,
        prolog_next: target(prolog.next, false),
        eus: stages,
        epilogs: code.epilogs.iter().enumerate().map(|(i, e)| (format!("e{i}"), e.clone())).collect(),
    }
}
