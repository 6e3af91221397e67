//! SwitchVM's in-packet header (the paper's §5 and Fig. 5): the DPF invocation (app id, init_pc,
//! gas), optional in-packet code — prologs, EU instructions, epilogs — and the data stack, as
//! Geneve options of class [`OPTION_CLASS`] (one TLV per part, so each stays within Geneve's
//! 124-byte option limit and the whole within its 252-byte option area).
//!
//! This module knows the bytes, not the meaning: opcodes are raw numbers that `innet-switchvm`
//! maps to its instruction set. Operand selectors are register indices (A0..A(L−1) then
//! B0..B(L−1)), [`SEL_IMM`] for "the immediate", or [`SEL_NONE`].
//!
//! | type | part | body |
//! |------|------|------|
//! | 0x01 | header | version 1, lanes, gas, flags (bit 0: init_pc present), init_pc (2), 0 (2), app_id (4) |
//! | 0x02 | prolog | index, 0, next pc (2), 2L selector bytes (op << 5 \| argument), padding |
//! | 0x03 | EU instruction | stage, index, ctrl op, 0, immediate mask (2), op1 sel, op2 sel, 2L selector bytes, ⌈L/2⌉ ALU bytes and ⌈L/2⌉ memory bytes (lane 0 in the high nibble), taken pc (2), not-taken pc (2), the present immediates (4 each: B0..B(L−1) by mask bits 0..L−1, then op1's by bit 14, op2's by bit 15), padding |
//! | 0x04 | epilog | index, push count, steer sel, next-pc sel, flags (bit 0: drop the code), 0, 0, 0, push selectors, padding, steer immediate (4, if SEL_IMM), next-pc immediate (4, if SEL_IMM) |
//! | 0x05 | stack | entries, 4 bytes each, bottom first |

use crate::geneve::iter_options;
use crate::{be32, Error, Result};

pub const OPTION_CLASS: u16 = 0xFF57;
pub const T_HEADER: u8 = 0x01;
pub const T_PROLOG: u8 = 0x02;
pub const T_EU: u8 = 0x03;
pub const T_EPILOG: u8 = 0x04;
pub const T_STACK: u8 = 0x05;
pub const SEL_IMM: u8 = 0xFE;
pub const SEL_NONE: u8 = 0xFF;
pub const MAX_LANES: u8 = 8;
pub const MAX_STACK: usize = 16;
/// Geneve's limits: one option's data, and the whole option area.
pub const MAX_OPTION_DATA: usize = 124;
pub const MAX_OPTION_AREA: usize = 252;

const H: &str = "switchvm";

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawProlog {
    pub index: u8,
    pub next: u16,
    pub sel: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawEu {
    pub stage: u8,
    pub index: u8,
    pub ctrl: u8,
    pub op1: u8,
    pub op2: u8,
    pub sel: Vec<u8>,
    pub alu: Vec<u8>,
    pub mem: Vec<u8>,
    pub taken: u16,
    pub not_taken: u16,
    /// Per B register, its immediate (LOAD_IMM value or LOAD_CONST index), if any.
    pub imm: Vec<Option<u32>>,
    pub imm1: Option<u32>,
    pub imm2: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawEpilog {
    pub index: u8,
    pub push: Vec<u8>,
    pub steer: u8,
    pub steer_imm: u32,
    pub next: u8,
    pub next_imm: u32,
    pub drop_code: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DpfHeader {
    pub lanes: u8,
    pub gas: u8,
    pub init_pc: Option<u16>,
    pub app_id: u32,
    pub prologs: Vec<RawProlog>,
    pub eus: Vec<RawEu>,
    pub epilogs: Vec<RawEpilog>,
    pub stack: Vec<u32>,
}

fn pad4(v: &mut Vec<u8>) {
    while v.len() % 4 != 0 {
        v.push(0);
    }
}

fn put16v(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_be_bytes());
}
fn put32v(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_be_bytes());
}

/// Two 4-bit opcodes per byte, high nibble first.
fn push_nibbles(v: &mut Vec<u8>, ops: &[u8]) {
    v.extend(ops.chunks(2).map(|c| (c[0] << 4) | c.get(1).map(|x| x & 0x0F).unwrap_or(0)));
}

impl DpfHeader {
    /// The option area (a sequence of Geneve TLVs). Errors when a part or the whole exceeds
    /// Geneve's limits, or a field does not match the lane count.
    pub fn emit(&self) -> Result<Vec<u8>> {
        let l = self.lanes as usize;
        if self.lanes == 0 || self.lanes > MAX_LANES {
            return Err(Error::new(H, format!("lanes {} is not in 1..={MAX_LANES}", self.lanes)));
        }
        if self.stack.len() > MAX_STACK {
            return Err(Error::new(H, format!("a stack of {} entries exceeds {MAX_STACK}", self.stack.len())));
        }
        // Each part is written straight into the area: its TLV header first (length patched when
        // the part is done), so emitting allocates once.
        let mut area = Vec::with_capacity(256);
        let begin = |area: &mut Vec<u8>, kind: u8| -> usize {
            area.extend_from_slice(&OPTION_CLASS.to_be_bytes());
            area.push(kind);
            area.push(0);
            area.len()
        };
        let finish = |area: &mut Vec<u8>, start: usize, kind: u8| -> Result<()> {
            pad4(area);
            let n = area.len() - start;
            if n > MAX_OPTION_DATA {
                return Err(Error::new(H, format!("part type {kind:#04x} has {n} bytes, a Geneve option holds {MAX_OPTION_DATA}")));
            }
            area[start - 1] = (n / 4) as u8;
            Ok(())
        };
        let at = begin(&mut area, T_HEADER);
        area.extend_from_slice(&[1, self.lanes, self.gas, self.init_pc.is_some() as u8]);
        put16v(&mut area, self.init_pc.unwrap_or(0));
        put16v(&mut area, 0);
        put32v(&mut area, self.app_id);
        finish(&mut area, at, T_HEADER)?;
        for p in &self.prologs {
            if p.sel.len() != 2 * l {
                return Err(Error::new(H, format!("prolog {} has {} selectors, expected {}", p.index, p.sel.len(), 2 * l)));
            }
            let at = begin(&mut area, T_PROLOG);
            area.extend_from_slice(&[p.index, 0]);
            put16v(&mut area, p.next);
            area.extend_from_slice(&p.sel);
            finish(&mut area, at, T_PROLOG)?;
        }
        for e in &self.eus {
            if e.sel.len() != 2 * l || e.alu.len() != l || e.mem.len() != l || e.imm.len() != l {
                return Err(Error::new(H, format!("EU {} instruction {}: field counts do not match {l} lanes", e.stage, e.index)));
            }
            if e.alu.iter().chain(&e.mem).any(|&x| x > 0x0F) {
                return Err(Error::new(H, format!("EU {} instruction {}: ALU and memory opcodes are 4 bits", e.stage, e.index)));
            }
            let mut mask: u16 = 0;
            for (i, x) in e.imm.iter().enumerate() {
                if x.is_some() {
                    mask |= 1 << i;
                }
            }
            if e.imm1.is_some() {
                mask |= 1 << 14;
            }
            if e.imm2.is_some() {
                mask |= 1 << 15;
            }
            let at = begin(&mut area, T_EU);
            area.extend_from_slice(&[e.stage, e.index, e.ctrl, 0]);
            put16v(&mut area, mask);
            area.push(e.op1);
            area.push(e.op2);
            area.extend_from_slice(&e.sel);
            push_nibbles(&mut area, &e.alu);
            push_nibbles(&mut area, &e.mem);
            put16v(&mut area, e.taken);
            put16v(&mut area, e.not_taken);
            for x in e.imm.iter().flatten().chain(e.imm1.iter()).chain(e.imm2.iter()) {
                put32v(&mut area, *x);
            }
            finish(&mut area, at, T_EU)?;
        }
        for e in &self.epilogs {
            let at = begin(&mut area, T_EPILOG);
            area.extend_from_slice(&[e.index, e.push.len() as u8, e.steer, e.next, e.drop_code as u8, 0, 0, 0]);
            area.extend_from_slice(&e.push);
            pad4(&mut area);
            if e.steer == SEL_IMM {
                put32v(&mut area, e.steer_imm);
            }
            if e.next == SEL_IMM {
                put32v(&mut area, e.next_imm);
            }
            finish(&mut area, at, T_EPILOG)?;
        }
        if !self.stack.is_empty() {
            let at = begin(&mut area, T_STACK);
            for x in &self.stack {
                put32v(&mut area, *x);
            }
            finish(&mut area, at, T_STACK)?;
        }
        if area.len() > MAX_OPTION_AREA {
            return Err(Error::new(
                H,
                format!("the DPF takes {} bytes of options, Geneve carries {MAX_OPTION_AREA}: deploy it in the switch instead", area.len()),
            ));
        }
        Ok(area)
    }

    /// Parse SwitchVM's options out of a Geneve option area (other classes are skipped).
    pub fn parse(area: &[u8]) -> Result<DpfHeader> {
        let mut h: Option<DpfHeader> = None;
        for opt in iter_options(area) {
            let (class, kind, d) = opt?;
            if class != OPTION_CLASS {
                continue;
            }
            let need = |n: usize, what: &str| -> Result<()> {
                if d.len() < n {
                    return Err(Error::new(H, format!("{what} needs {n} bytes, has {}", d.len())));
                }
                Ok(())
            };
            if kind == T_HEADER {
                need(12, "the header")?;
                if d[0] != 1 {
                    return Err(Error::new(H, format!("version {} (expected 1)", d[0])));
                }
                if d[1] == 0 || d[1] > MAX_LANES {
                    return Err(Error::new(H, format!("lanes {} is not in 1..={MAX_LANES}", d[1])));
                }
                if h.is_some() {
                    return Err(Error::new(H, "two headers"));
                }
                h = Some(DpfHeader {
                    lanes: d[1],
                    gas: d[2],
                    init_pc: (d[3] & 1 != 0).then(|| u16::from_be_bytes([d[4], d[5]])),
                    app_id: be32(d, 8),
                    ..Default::default()
                });
                continue;
            }
            let Some(hd) = h.as_mut() else {
                return Err(Error::new(H, format!("part type {kind:#04x} before the header")));
            };
            let l = hd.lanes as usize;
            match kind {
                T_PROLOG => {
                    need(4 + 2 * l, "a prolog")?;
                    hd.prologs.push(RawProlog { index: d[0], next: u16::from_be_bytes([d[2], d[3]]), sel: d[4..4 + 2 * l].to_vec() });
                }
                T_EU => {
                    let half = l.div_ceil(2);
                    let fixed = 8 + 2 * l + 2 * half + 4;
                    need(fixed, "an EU instruction")?;
                    let mask = u16::from_be_bytes([d[4], d[5]]);
                    let mut at = 8;
                    let sel = d[at..at + 2 * l].to_vec();
                    at += 2 * l;
                    let unpack = |bytes: &[u8]| -> Vec<u8> { (0..l).map(|i| if i % 2 == 0 { bytes[i / 2] >> 4 } else { bytes[i / 2] & 0x0F }).collect() };
                    let alu = unpack(&d[at..at + half]);
                    at += half;
                    let mem = unpack(&d[at..at + half]);
                    at += half;
                    let taken = u16::from_be_bytes([d[at], d[at + 1]]);
                    let not_taken = u16::from_be_bytes([d[at + 2], d[at + 3]]);
                    at += 4;
                    if mask & !(((1u16 << l) - 1) | 0xC000) != 0 {
                        return Err(Error::new(H, format!("immediate mask {mask:#06x} names lanes beyond {l}")));
                    }
                    let count = mask.count_ones() as usize;
                    need(at + 4 * count, "an EU instruction with its immediates")?;
                    let mut next = || {
                        let v = be32(d, at);
                        at += 4;
                        v
                    };
                    let imm: Vec<Option<u32>> = (0..l).map(|i| (mask & (1 << i) != 0).then(&mut next)).collect();
                    let imm1 = (mask & (1 << 14) != 0).then(&mut next);
                    let imm2 = (mask & (1 << 15) != 0).then(&mut next);
                    hd.eus.push(RawEu { stage: d[0], index: d[1], ctrl: d[2], op1: d[6], op2: d[7], sel, alu, mem, taken, not_taken, imm, imm1, imm2 });
                }
                T_EPILOG => {
                    need(8, "an epilog")?;
                    let n = d[1] as usize;
                    if n > 2 * l {
                        return Err(Error::new(H, format!("an epilog pushes {n} registers, at most {}", 2 * l)));
                    }
                    need(8 + n, "an epilog's pushes")?;
                    let mut at = (8 + n).div_ceil(4) * 4;
                    let mut imm = |sel: u8| -> Result<u32> {
                        if sel != SEL_IMM {
                            return Ok(0);
                        }
                        need(at + 4, "an epilog immediate")?;
                        let v = be32(d, at);
                        at += 4;
                        Ok(v)
                    };
                    let steer_imm = imm(d[2])?;
                    let next_imm = imm(d[3])?;
                    hd.epilogs.push(RawEpilog {
                        index: d[0],
                        push: d[8..8 + n].to_vec(),
                        steer: d[2],
                        steer_imm,
                        next: d[3],
                        next_imm,
                        drop_code: d[4] & 1 != 0,
                    });
                }
                T_STACK => {
                    if d.len() / 4 > MAX_STACK {
                        return Err(Error::new(H, format!("a stack of {} entries exceeds {MAX_STACK}", d.len() / 4)));
                    }
                    hd.stack = d.chunks_exact(4).map(|c| be32(c, 0)).collect();
                }
                other => return Err(Error::new(H, format!("unknown part type {other:#04x}"))),
            }
        }
        h.ok_or_else(|| Error::new(H, "no SwitchVM header option"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DpfHeader {
        DpfHeader {
            lanes: 4,
            gas: 3,
            init_pc: Some(0x8000),
            app_id: 42,
            prologs: vec![RawProlog { index: 0, next: 0x8000, sel: vec![1 << 5, 0, 0, 0, 0, 0, 0, 4 << 5] }],
            eus: (0..4)
                .map(|s| RawEu {
                    stage: s,
                    index: 0,
                    ctrl: 3,
                    op1: 0,
                    op2: SEL_IMM,
                    sel: vec![0, 0, 0, 0, 2 << 5, 0, 0, 0],
                    alu: vec![1, 0, 0, 0],
                    mem: vec![3, 0, 0, 0],
                    taken: 0x8000,
                    not_taken: 0x8000,
                    imm: vec![Some(1), None, None, None],
                    imm1: None,
                    imm2: Some(7),
                })
                .collect(),
            epilogs: vec![RawEpilog { index: 0, push: vec![0, 4], steer: SEL_IMM, steer_imm: 1, next: SEL_NONE, next_imm: 0, drop_code: true }],
            stack: vec![5, 6],
        }
    }

    #[test]
    fn a_whole_dpf_round_trips_within_geneve_limits() {
        let h = sample();
        let area = h.emit().unwrap();
        assert!(area.len() <= MAX_OPTION_AREA && area.len() % 4 == 0);
        assert_eq!(DpfHeader::parse(&area).unwrap(), h);
        // Options of other classes around it are skipped.
        let mut with_foreign = vec![0x01, 0x02, 0x05, 0x01, 9, 9, 9, 9];
        with_foreign.extend_from_slice(&area);
        assert_eq!(DpfHeader::parse(&with_foreign).unwrap(), h);
    }

    #[test]
    fn limits_and_bad_parts_are_named() {
        let mut h = sample();
        h.stack = vec![0; 17];
        assert!(h.emit().unwrap_err().to_string().contains("exceeds 16"));
        let mut h = sample();
        h.lanes = 8;
        assert!(h.emit().unwrap_err().to_string().contains("do not match 8 lanes") || h.emit().unwrap_err().to_string().contains("selectors"));
        let area = sample().emit().unwrap();
        assert!(DpfHeader::parse(&area[16..]).unwrap_err().to_string().contains("before the header"));
        assert!(DpfHeader::parse(&[]).unwrap_err().to_string().contains("no SwitchVM header"));
    }
}
