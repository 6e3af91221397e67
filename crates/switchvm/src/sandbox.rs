//! An adversarial arena for SwitchVM's isolation guarantees, shared by the property test and the
//! coverage-guided fuzzer: a privileged victim tenant owns memory on every lane (filled with a
//! pattern), direct mappings and steering rules; an unprivileged attacker has a little memory and
//! two rules. `run_untrusted` runs an attacker's packet — and every invocation it chains to
//! while its gas lasts — and says which guarantee broke, if one did.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::control::ControlPlane;
use crate::machine::{caps, DpfPacket, Machine, Outcome, Permission, SteerAction, SwitchMeta, Unauthorized, VmConfig, Violation};

pub const VICTIM: u32 = 1;
pub const ATTACKER: u32 = 2;
const LANES: u8 = 4;

pub struct Arena {
    pub m: Machine,
    /// (eu, lane, physical cell) of every victim cell.
    pub victim: Vec<(usize, usize, u32)>,
    before: Vec<u32>,
    rng: ChaCha8Rng,
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

impl Arena {
    pub fn new() -> Arena {
        let cfg = VmConfig { mem_entries: 512, segments_per_lane: 8, direct_per_eu: 16, code_slots: 8, ..Default::default() };
        let mut m = Machine::new(cfg);
        let mut cp = ControlPlane::default();
        let perm = |c| Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps: c, app_id: 0 };
        let setup = |m: &mut Machine, cp: &mut ControlPlane| -> Result<(), crate::control::ControlError> {
            cp.authorize(m, VICTIM, perm(caps::PRIVILEGED | caps::METADATA))?;
            cp.authorize(m, ATTACKER, perm(0))?;
            for eu in 0..4u8 {
                for lane in 0..LANES {
                    cp.alloc_segment(m, VICTIM, eu, lane, 0, 128)?;
                    cp.alloc_segment(m, ATTACKER, eu, lane, 256, 16)?;
                }
                cp.map_direct(m, VICTIM, eu, 0, 5)?;
                cp.map_direct(m, ATTACKER, eu, 0, 6)?;
            }
            cp.install_steering(m, VICTIM, 0, SteerAction::Recirculate)?;
            cp.install_steering(m, VICTIM, 1, SteerAction::SetPort(3))?;
            cp.install_steering(m, VICTIM, 3, SteerAction::Forward(0x0a00_00ff))?;
            cp.install_steering(m, ATTACKER, 1, SteerAction::ReturnToSender)?;
            cp.install_steering(m, ATTACKER, 2, SteerAction::Drop)?;
            // The counter in-switch, so in-switch pointers land on real code too.
            cp.deploy(m, &crate::build::counter(LANES, 4))?;
            Ok(())
        };
        setup(&mut m, &mut cp).expect("the arena fits its machine");
        let mut victim = Vec::new();
        for eu in 0..4 {
            for lane in 0..LANES as usize {
                let lm = &mut m.mem[eu][lane];
                for p in 0..lm.cells.len() as u32 {
                    if lm.owner(p) == Some(VICTIM) {
                        lm.cells[p as usize] = 0xA5A5_0000 ^ p;
                        victim.push((eu, lane, p));
                    }
                }
            }
        }
        let before = victim.iter().map(|&(e, l, p)| m.mem[e][l].cells[p as usize]).collect();
        Arena { m, victim, before, rng: ChaCha8Rng::seed_from_u64(9) }
    }

    /// Run an attacker's packet and its chain; Err names the guarantee that broke.
    pub fn run_untrusted(&mut self, mut pkt: DpfPacket) -> Result<Outcome, String> {
        pkt.tenant = ATTACKER;
        let max_stack = self.m.cfg.max_stack;
        let mut last = Outcome::NotInvoked;
        // Each execution costs gas, so a chain has at most `gas` links; one more pass must stop.
        for _ in 0..=pkt.gas as usize + 1 {
            let gas = pkt.gas;
            let stack_len = pkt.stack.len();
            let out = self.m.execute(&mut pkt, &SwitchMeta::default(), &mut self.rng);
            match out {
                Outcome::Steer(a) => {
                    if !matches!(a, SteerAction::Pass | SteerAction::ReturnToSender | SteerAction::Drop) {
                        return Err(format!("steered outside its rules: {a:?}"));
                    }
                    if gas == 0 || pkt.gas != gas - 1 {
                        return Err(format!("ran with gas {gas}, left {}", pkt.gas));
                    }
                    if pkt.stack.len() > max_stack.max(stack_len) {
                        return Err(format!("the stack grew to {} entries", pkt.stack.len()));
                    }
                }
                Outcome::Violated(Violation::OutOfGas) if gas != 0 => return Err(format!("out of gas with {gas} left")),
                Outcome::Violated(_) | Outcome::NotInvoked => return Ok(out),
            }
            last = out;
            if pkt.init_pc.is_none() {
                return Ok(last);
            }
        }
        Err(format!("a chain ran past its gas (last outcome {last:?})"))
    }

    /// Whether every victim cell still holds its pattern.
    pub fn victim_intact(&self) -> Result<(), String> {
        for (i, &(e, l, p)) in self.victim.iter().enumerate() {
            let now = self.m.mem[e][l].cells[p as usize];
            if now != self.before[i] {
                return Err(format!("the attacker changed the victim's cell EU{e} lane {l} #{p}: {:#x} → {now:#x}", self.before[i]));
            }
        }
        Ok(())
    }
}
