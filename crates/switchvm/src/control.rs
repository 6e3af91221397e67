//! The SwitchVM control plane (§3.8): authorize and deauthorize tenants, allocate memory at
//! tenant-chosen virtual addresses (first fit in physical memory; segments must be powers of two
//! aligned to their size; direct mappings on the first lane of an EU), deploy in-switch DPFs with
//! link-time resolution of their labels, install steering rules (the tenant names a virtual
//! destination, the operator's translation gives the physical one), and replace a deployed DPF
//! atomically in place (every stage is written before the prolog pointer moves). Every capacity
//! of the paper is enforced with an error that names the limit.

use std::collections::HashMap;

use crate::isa::*;
use crate::machine::{Machine, Permission, SteerAction};
use crate::memory::Segment;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    #[error("tenant {0} is not authorized")]
    NotAuthorized(u32),
    #[error("the permissions table is full ({0} entries)")]
    PermissionsFull(usize),
    #[error("EU {eu} lane {lane} does not exist (the machine has {eus} EUs × {lanes} lanes)")]
    NoSuchLane { eu: u8, lane: u8, eus: u8, lanes: u8 },
    #[error("segment size {0} is not a power of two")]
    SegmentSize(u32),
    #[error("virtual address {vaddr:#x} is not aligned to the segment size {size}")]
    Unaligned { vaddr: u32, size: u32 },
    #[error("tenant {tenant} already maps part of [{vaddr:#x}, +{size}) on EU {eu} lane {lane}")]
    Overlap { tenant: u32, vaddr: u32, size: u32, eu: u8, lane: u8 },
    #[error("EU {eu} lane {lane} has no room for {len} more cells ({entries} per lane)")]
    OutOfMemory { eu: u8, lane: u8, len: u32, entries: usize },
    #[error("EU {eu} lane {lane} has no free segment mapping (at most {max} per lane)")]
    OutOfSegments { eu: u8, lane: u8, max: usize },
    #[error("direct mappings live on lane 0 only (asked for lane {0})")]
    DirectLane(u8),
    #[error("EU {eu} has no free direct mapping (at most {max})")]
    OutOfDirect { eu: u8, max: usize },
    #[error("{stage} code memory is full ({slots} instructions)")]
    CodeFull { stage: String, slots: usize },
    #[error("the {0} instruction is illegal: {1}")]
    Illegal(String, String),
    #[error("label `{0}` is not defined in {1}")]
    UnknownLabel(String, String),
    #[error("the DPF has {given} EU stages, the machine {eus}")]
    Stages { given: usize, eus: u8 },
    #[error("steering action {0:?} is reserved for privileged tenants")]
    Privileged(SteerAction),
    #[error("the steering table is full ({0} entries)")]
    SteeringFull(usize),
    #[error("tenant {tenant} has no direct mapping for {vaddr:#x} on EU {eu}")]
    NotMapped { tenant: u32, vaddr: u32, eu: u8 },
    #[error("no deployed DPF with id {0}")]
    NoSuchDpf(u32),
    #[error("a constant-table index {0} is out of range ({1} entries)")]
    ConstRange(u16, usize),
}

/// A branch target before linking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An instruction of the next stage of this DPF.
    Label(String),
    /// Already-deployed code (code reuse).
    Abs(Pc),
}

/// A DPF before linking: one prolog; per EU, labelled alternatives (the first is the entry
/// reached from the prolog's `next` when that names it); labelled epilogs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpfSource {
    pub name: String,
    pub prolog_sel: Vec<PrologOp>,
    pub prolog_next: Target,
    pub eus: Vec<Vec<(String, EuSource)>>,
    pub epilogs: Vec<(String, Epilog)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EuSource {
    pub sel: Vec<SelectOp>,
    pub alu: Vec<AluOp>,
    pub mem: Vec<MemOp>,
    pub op: CtrlOp,
    pub op1: Operand,
    pub op2: Operand,
    pub taken: Target,
    pub not_taken: Target,
}

/// Where a deployed DPF's code sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployed {
    pub id: u32,
    pub init_pc: Pc,
    prolog: u16,
    eus: Vec<Vec<u16>>,
    epilogs: Vec<u16>,
}

#[derive(Default)]
pub struct ControlPlane {
    deployed: HashMap<u32, Deployed>,
    next_id: u32,
}

impl ControlPlane {
    pub fn authorize(&mut self, m: &mut Machine, tenant: u32, perm: Permission) -> Result<(), ControlError> {
        if !m.permissions.contains_key(&tenant) && m.permissions.len() >= m.cfg.permission_entries {
            return Err(ControlError::PermissionsFull(m.cfg.permission_entries));
        }
        m.permissions.insert(tenant, perm);
        Ok(())
    }

    /// Remove a tenant: its permission, steering rules and memory go.
    pub fn deauthorize(&mut self, m: &mut Machine, tenant: u32) {
        m.permissions.remove(&tenant);
        m.steering.retain(|(t, _), _| *t != tenant);
        for eu in &mut m.mem {
            for lane in eu {
                lane.release_tenant(tenant);
            }
        }
    }

    fn lane_ok(m: &Machine, eu: u8, lane: u8) -> Result<(), ControlError> {
        if eu >= m.cfg.eus || lane >= m.cfg.lanes {
            return Err(ControlError::NoSuchLane { eu, lane, eus: m.cfg.eus, lanes: m.cfg.lanes });
        }
        Ok(())
    }

    /// Map `size` cells (a power of two) at virtual `vaddr` (aligned to `size`) for `tenant` on
    /// one lane; returns the physical base.
    pub fn alloc_segment(&mut self, m: &mut Machine, tenant: u32, eu: u8, lane: u8, vaddr: u32, size: u32) -> Result<u32, ControlError> {
        Self::lane_ok(m, eu, lane)?;
        if !m.permissions.contains_key(&tenant) {
            return Err(ControlError::NotAuthorized(tenant));
        }
        if size == 0 || !size.is_power_of_two() {
            return Err(ControlError::SegmentSize(size));
        }
        if vaddr & (size - 1) != 0 {
            return Err(ControlError::Unaligned { vaddr, size });
        }
        let entries = m.cfg.mem_entries;
        let lm = &mut m.mem[eu as usize][lane as usize];
        if lm.tcam_entries() >= lm.max_segments {
            return Err(ControlError::OutOfSegments { eu, lane, max: lm.max_segments });
        }
        if lm.segment_overlaps(tenant, vaddr, size) {
            return Err(ControlError::Overlap { tenant, vaddr, size, eu, lane });
        }
        let p = lm.first_fit(size).ok_or(ControlError::OutOfMemory { eu, lane, len: size, entries })?;
        lm.claim(p, size, tenant);
        lm.segments.push(Segment { tenant, vbase: vaddr, size, pbase: p });
        Ok(p)
    }

    /// Map one virtual address one-to-one on lane 0 of `eu`; returns the physical cell.
    pub fn map_direct(&mut self, m: &mut Machine, tenant: u32, eu: u8, lane: u8, vaddr: u32) -> Result<u32, ControlError> {
        Self::lane_ok(m, eu, lane)?;
        if lane != 0 {
            return Err(ControlError::DirectLane(lane));
        }
        if !m.permissions.contains_key(&tenant) {
            return Err(ControlError::NotAuthorized(tenant));
        }
        let entries = m.cfg.mem_entries;
        let lm = &mut m.mem[eu as usize][0];
        if lm.direct.len() >= lm.max_direct {
            return Err(ControlError::OutOfDirect { eu, max: lm.max_direct });
        }
        if lm.direct.contains_key(&(tenant, vaddr)) {
            return Err(ControlError::Overlap { tenant, vaddr, size: 1, eu, lane });
        }
        let p = lm.first_fit(1).ok_or(ControlError::OutOfMemory { eu, lane, len: 1, entries })?;
        lm.claim(p, 1, tenant);
        lm.direct.insert((tenant, vaddr), p);
        Ok(p)
    }

    /// Map every address of the tenant that nothing else maps on this lane to one fresh cell (a
    /// "null segment"); returns the cell.
    pub fn alloc_null_segment(&mut self, m: &mut Machine, tenant: u32, eu: u8, lane: u8) -> Result<u32, ControlError> {
        Self::lane_ok(m, eu, lane)?;
        if !m.permissions.contains_key(&tenant) {
            return Err(ControlError::NotAuthorized(tenant));
        }
        let entries = m.cfg.mem_entries;
        let lm = &mut m.mem[eu as usize][lane as usize];
        if lm.null.contains_key(&tenant) {
            return Err(ControlError::Overlap { tenant, vaddr: 0, size: 0, eu, lane });
        }
        if lm.tcam_entries() >= lm.max_segments {
            return Err(ControlError::OutOfSegments { eu, lane, max: lm.max_segments });
        }
        let p = lm.first_fit(1).ok_or(ControlError::OutOfMemory { eu, lane, len: 1, entries })?;
        lm.claim(p, 1, tenant);
        lm.null.insert(tenant, p);
        Ok(p)
    }

    /// Remove a direct mapping and free its cell.
    pub fn unmap_direct(&mut self, m: &mut Machine, tenant: u32, eu: u8, vaddr: u32) -> Result<(), ControlError> {
        Self::lane_ok(m, eu, 0)?;
        let lm = &mut m.mem[eu as usize][0];
        let p = lm.direct.remove(&(tenant, vaddr)).ok_or(ControlError::NotMapped { tenant, vaddr, eu })?;
        lm.extents.retain(|e| !(e.start == p && e.len == 1 && e.tenant == tenant));
        Ok(())
    }

    /// Install steering rule `index` for a tenant. Privileged actions need the capability.
    pub fn install_steering(&mut self, m: &mut Machine, tenant: u32, index: u32, action: SteerAction) -> Result<(), ControlError> {
        let perm = m.permissions.get(&tenant).ok_or(ControlError::NotAuthorized(tenant))?;
        if action.privileged() && perm.caps & crate::machine::caps::PRIVILEGED == 0 {
            return Err(ControlError::Privileged(action));
        }
        if !m.steering.contains_key(&(tenant, index)) && m.steering.len() >= m.cfg.steering_entries {
            return Err(ControlError::SteeringFull(m.cfg.steering_entries));
        }
        m.steering.insert((tenant, index), action);
        Ok(())
    }

    fn free_slots(slots: &[Option<impl Clone>], n: usize, stage: &str) -> Result<Vec<u16>, ControlError> {
        let v: Vec<u16> = slots.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| i as u16).take(n).collect();
        if v.len() < n {
            return Err(ControlError::CodeFull { stage: stage.into(), slots: slots.len() });
        }
        Ok(v)
    }

    /// Place and link a DPF; its prolog goes in last, so a packet never sees half a DPF.
    pub fn deploy(&mut self, m: &mut Machine, src: &DpfSource) -> Result<Deployed, ControlError> {
        let lanes = m.cfg.lanes;
        if src.eus.len() != m.cfg.eus as usize {
            return Err(ControlError::Stages { given: src.eus.len(), eus: m.cfg.eus });
        }
        let eu_slots: Vec<Vec<u16>> =
            src.eus.iter().enumerate().map(|(e, alts)| Self::free_slots(&m.code.eus[e], alts.len(), &format!("EU{e}"))).collect::<Result<_, _>>()?;
        let ep_slots = Self::free_slots(&m.code.epilogs, src.epilogs.len(), "epilog")?;
        let prolog_slot = Self::free_slots(&m.code.prologs, 1, "prolog")?[0];
        let resolve = |t: &Target, stage: usize| -> Result<Pc, ControlError> {
            match t {
                Target::Abs(pc) => Ok(*pc),
                Target::Label(l) => {
                    if stage < src.eus.len() {
                        src.eus[stage]
                            .iter()
                            .position(|(n, _)| n == l)
                            .map(|i| Pc::Switch(eu_slots[stage][i]))
                            .ok_or_else(|| ControlError::UnknownLabel(l.clone(), format!("EU{stage} of {}", src.name)))
                    } else {
                        src.epilogs
                            .iter()
                            .position(|(n, _)| n == l)
                            .map(|i| Pc::Switch(ep_slots[i]))
                            .ok_or_else(|| ControlError::UnknownLabel(l.clone(), format!("the epilogs of {}", src.name)))
                    }
                }
            }
        };
        let mut linked_eus = Vec::new();
        for (e, alts) in src.eus.iter().enumerate() {
            let mut v = Vec::new();
            for (name, s) in alts {
                // HALT jumps straight to an epilog.
                let next_stage = if s.op == CtrlOp::Halt { src.eus.len() } else { e + 1 };
                let ins = EuInstr {
                    sel: s.sel.clone(),
                    alu: s.alu.clone(),
                    mem: s.mem.clone(),
                    branch: Branch { op: s.op, op1: s.op1, op2: s.op2, taken: resolve(&s.taken, next_stage)?, not_taken: resolve(&s.not_taken, next_stage)? },
                };
                check_eu(&ins, lanes).map_err(|msg| ControlError::Illegal(format!("EU{e} `{name}`"), msg))?;
                for sel in &ins.sel {
                    if let SelectOp::LoadConst(i) = sel {
                        if *i as usize >= m.consts.len() {
                            return Err(ControlError::ConstRange(*i, m.consts.len()));
                        }
                    }
                }
                v.push(ins);
            }
            linked_eus.push(v);
        }
        let prolog = Prolog { sel: src.prolog_sel.clone(), next: resolve(&src.prolog_next, 0)? };
        check_prolog(&prolog, lanes).map_err(|msg| ControlError::Illegal("prolog".into(), msg))?;
        for (name, ep) in &src.epilogs {
            check_epilog(ep, lanes).map_err(|msg| ControlError::Illegal(format!("epilog `{name}`"), msg))?;
        }
        // Write every stage, then the prolog.
        for (e, v) in linked_eus.into_iter().enumerate() {
            for (i, ins) in v.into_iter().enumerate() {
                m.code.eus[e][eu_slots[e][i] as usize] = Some(ins);
            }
        }
        for (i, (_, ep)) in src.epilogs.iter().enumerate() {
            m.code.epilogs[ep_slots[i] as usize] = Some(ep.clone());
        }
        m.code.prologs[prolog_slot as usize] = Some(prolog);
        self.next_id += 1;
        let d = Deployed { id: self.next_id, init_pc: Pc::Switch(prolog_slot), prolog: prolog_slot, eus: eu_slots, epilogs: ep_slots };
        self.deployed.insert(d.id, d.clone());
        Ok(d)
    }

    /// Replace DPF `id` in place: the new stages are written to free slots, then the prolog at
    /// the same address is overwritten in one step (packets see the old or the new DPF, never a
    /// mix), then the old stages are freed.
    pub fn replace(&mut self, m: &mut Machine, id: u32, src: &DpfSource) -> Result<Deployed, ControlError> {
        let old = self.deployed.get(&id).cloned().ok_or(ControlError::NoSuchDpf(id))?;
        let fresh = self.deploy(m, src)?;
        let new_prolog = m.code.prologs[fresh.prolog as usize].take();
        m.code.prologs[old.prolog as usize] = new_prolog;
        for (e, slots) in old.eus.iter().enumerate() {
            for &s in slots {
                m.code.eus[e][s as usize] = None;
            }
        }
        for &s in &old.epilogs {
            m.code.epilogs[s as usize] = None;
        }
        self.deployed.remove(&fresh.id);
        let d = Deployed { id, init_pc: old.init_pc, prolog: old.prolog, eus: fresh.eus, epilogs: fresh.epilogs };
        self.deployed.insert(id, d.clone());
        Ok(d)
    }

    pub fn deployed_count(&self) -> usize {
        self.deployed.len()
    }
}
