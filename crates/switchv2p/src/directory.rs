//! The ground truth of the virtual network: which physical address (server) each VM's virtual
//! address lives on, over time. Gateways resolve from it, `Direct` hosts are programmed from it,
//! migrations change it, and the correctness checks ask it whether a PIP ever held a VIP.
//!
//! Virtual IPs are `100.64.0.0 + vm` (the shared address space of RFC 6598, 4M addresses), so
//! they never collide with the fabric's 10.x server and 11.x switch addresses.

/// First virtual IP (VM 0).
pub const VIP_BASE: u32 = 0x6440_0000;
/// Largest number of VMs the VIP range holds (100.64.0.0/10).
pub const MAX_VMS: u32 = 1 << 22;

/// A VM that moves to another server at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    pub vm: u32,
    pub at_ps: u64,
    pub to_pip: u32,
}

#[derive(Debug, Clone)]
pub struct Directory {
    /// PIP of each VM at time 0.
    initial: Vec<u32>,
    /// Migrations by time.
    migrations: Vec<Migration>,
}

impl Directory {
    pub fn new(initial: Vec<u32>, mut migrations: Vec<Migration>) -> Result<Self, String> {
        if initial.len() as u64 > MAX_VMS as u64 {
            return Err(format!("{} VMs exceed the {} virtual addresses of 100.64.0.0/10", initial.len(), MAX_VMS));
        }
        for m in &migrations {
            if m.vm as usize >= initial.len() {
                return Err(format!("migration of VM {} but there are only {} VMs", m.vm, initial.len()));
            }
        }
        migrations.sort_by_key(|m| m.at_ps);
        Ok(Directory { initial, migrations })
    }

    pub fn vm_count(&self) -> u32 {
        self.initial.len() as u32
    }

    #[inline]
    pub fn vip(vm: u32) -> u32 {
        VIP_BASE + vm
    }

    #[inline]
    pub fn vm_of(&self, vip: u32) -> Option<u32> {
        let vm = vip.wrapping_sub(VIP_BASE);
        ((vm as usize) < self.initial.len() && vip >= VIP_BASE).then_some(vm)
    }

    pub fn migrations(&self) -> &[Migration] {
        &self.migrations
    }

    /// Where `vip` lives at `now_ps` (None for an unknown address).
    #[inline]
    pub fn pip_at(&self, vip: u32, now_ps: u64) -> Option<u32> {
        let vm = self.vm_of(vip)?;
        let mut pip = self.initial[vm as usize];
        for m in &self.migrations {
            if m.at_ps > now_ps {
                break;
            }
            if m.vm == vm {
                pip = m.to_pip;
            }
        }
        Some(pip)
    }

    /// Whether `pip` held `vip` at some time (the "never resolved to a PIP that never held the
    /// VIP" invariant).
    pub fn ever_held(&self, vip: u32, pip: u32) -> bool {
        let Some(vm) = self.vm_of(vip) else { return false };
        self.initial[vm as usize] == pip || self.migrations.iter().any(|m| m.vm == vm && m.to_pip == pip)
    }

    /// VIPs that live on `pip` at time 0.
    pub fn initial_vips_on(&self, pip: u32) -> Vec<u32> {
        (0..self.initial.len() as u32).filter(|&vm| self.initial[vm as usize] == pip).map(Self::vip).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_take_effect_at_their_time() {
        let d = Directory::new(vec![10, 20], vec![Migration { vm: 1, at_ps: 500, to_pip: 30 }]).unwrap();
        let v = Directory::vip(1);
        assert_eq!(d.pip_at(v, 499), Some(20));
        assert_eq!(d.pip_at(v, 500), Some(30));
        assert!(d.ever_held(v, 20) && d.ever_held(v, 30) && !d.ever_held(v, 10));
        assert_eq!(d.pip_at(VIP_BASE + 2, 0), None);
        assert_eq!(d.pip_at(1, 0), None);
        assert!(Directory::new(vec![1], vec![Migration { vm: 3, at_ps: 0, to_pip: 1 }]).is_err());
    }
}
