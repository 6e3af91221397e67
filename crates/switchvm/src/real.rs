//! SwitchVM on real interfaces: `innet switch run --program switchvm` runs the same
//! [`SwitchVmSwitch`] program as the simulator on the AF_PACKET runtime. Tenants send Geneve
//! (UDP 6081) frames whose VNI is the tenant id and whose SwitchVM options carry the invocation,
//! the stack and, optionally, the code; frames without SwitchVM options (or not Geneve at all)
//! are routed untouched.
//!
//! The control plane is configured once from `--set` settings: which tenants are authorized,
//! how much memory each gets (one segment at virtual address 0 on every lane, so tenants share
//! virtual addresses and nothing else), which of the shipped DPFs are deployed in the switch's
//! code memory, and which one is the tenants' default. The deployed DPFs' init_pc values appear
//! in the stats line (`pc_<name>`), so a sender can name them.

use innet_dataplane::real::{FrameSwitch, ProgramSpec, RealConfig, RealSwitch, Settings};
use innet_dataplane::NoControl;

use crate::control::ControlPlane;
use crate::machine::{Machine, Permission, Unauthorized, VmConfig};
use crate::program::SwitchVmSwitch;

/// The DPF sources shipped with the project (crates/switchvm/dpfs), by name.
pub const SHIPPED_DPFS: &[(&str, &str)] = &[
    ("counter", include_str!("../dpfs/counter.dpf")),
    ("default_counter", include_str!("../dpfs/default_counter.dpf")),
    ("lb1_hash", include_str!("../dpfs/lb1_hash.dpf")),
    ("lb2_batch", include_str!("../dpfs/lb2_batch.dpf")),
    ("lb3_request", include_str!("../dpfs/lb3_request.dpf")),
    ("lb3_report", include_str!("../dpfs/lb3_report.dpf")),
    ("paxos_leader", include_str!("../dpfs/paxos_leader.dpf")),
    ("paxos_acceptor", include_str!("../dpfs/paxos_acceptor.dpf")),
];

/// The switch programs this crate adds to the real runtime's registry.
pub fn switch_programs() -> Vec<ProgramSpec> {
    vec![ProgramSpec {
        name: "switchvm",
        description: "SwitchVM: tenants' DPFs in Geneve (UDP 6081) options, VNI = tenant. Settings: \
                      tenants=1,2 (authorized VNIs), segment_cells=N (power of two, per tenant on every lane, \
                      at virtual address 0), deploy=counter,... (shipped DPFs to put in code memory; their \
                      init_pc is shown as pc_<name>), default_dpf=NAME (run when a packet names none), \
                      on_unauthorized=drop|pass (app-id mismatch), gas=N (initial gas).",
        build: build_switchvm,
    }]
}

/// A switch configured as the settings say (exposed for tests without interfaces).
pub fn configured(s: &mut Settings) -> Result<(SwitchVmSwitch, Vec<(String, u16)>), String> {
    let tenants_text = s.str("tenants", "1");
    let segment_cells = s.u64("segment_cells", 1024)?;
    let deploy_text = s.str("deploy", "counter");
    let default_dpf = s.str("default_dpf", "");
    let on_unauthorized = match s.str("on_unauthorized", "drop").as_str() {
        "drop" => Unauthorized::Drop,
        "pass" => Unauthorized::Pass,
        other => return Err(format!("--set on_unauthorized={other}: expected drop or pass")),
    };
    let gas = s.u64("gas", VmConfig::default().initial_gas as u64)?;
    if !(1..=255).contains(&gas) {
        return Err(format!("--set gas={gas}: expected 1..=255"));
    }
    let cfg = VmConfig { initial_gas: gas as u8, ..VmConfig::default() };
    if !segment_cells.is_power_of_two() || segment_cells > cfg.mem_entries as u64 {
        return Err(format!("--set segment_cells={segment_cells}: expected a power of two up to {}", cfg.mem_entries));
    }
    let mut tenants = Vec::new();
    for t in tenants_text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let v: u32 = t.parse().map_err(|_| format!("--set tenants={tenants_text}: `{t}` is not a VNI (a whole number)"))?;
        if v >= 1 << 24 {
            return Err(format!("--set tenants={tenants_text}: VNI {v} does not fit in 24 bits"));
        }
        tenants.push(v);
    }
    let (eus, lanes) = (cfg.eus, cfg.lanes);
    let mut m = Machine::new(cfg);
    let mut cp = ControlPlane::default();
    let mut pcs = Vec::new();
    for name in deploy_text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some((_, text)) = SHIPPED_DPFS.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = SHIPPED_DPFS.iter().map(|(n, _)| *n).collect();
            return Err(format!("--set deploy={deploy_text}: no shipped DPF `{name}` (known: {})", known.join(", ")));
        };
        let src = crate::asm::assemble(text, eus, lanes).map_err(|e| format!("DPF {name}: {e}"))?;
        let d = cp.deploy(&mut m, &src).map_err(|e| format!("deploying {name}: {e}"))?;
        pcs.push((name.to_string(), d.init_pc.to_u16()));
    }
    let default_pc = if default_dpf.is_empty() {
        None
    } else {
        let pc = pcs.iter().find(|(n, _)| *n == default_dpf).map(|(_, pc)| *pc);
        Some(pc.ok_or_else(|| format!("--set default_dpf={default_dpf}: not among the deployed DPFs ({deploy_text})"))?)
    };
    for &t in &tenants {
        let perm = Permission { on_unauthorized, default_pc: default_pc.map(crate::isa::Pc::from_u16), caps: 0, app_id: 0 };
        cp.authorize(&mut m, t, perm).map_err(|e| format!("authorizing tenant {t}: {e}"))?;
        for eu in 0..eus {
            for lane in 0..lanes {
                cp.alloc_segment(&mut m, t, eu, lane, 0, segment_cells as u32)
                    .map_err(|e| format!("memory for tenant {t} on eu{eu} lane {lane}: {e}"))?;
            }
        }
    }
    Ok((SwitchVmSwitch::new(m), pcs))
}

fn build_switchvm(s: &mut Settings, num_ports: u16) -> Result<Box<dyn FrameSwitch>, String> {
    let (program, pcs) = configured(s)?;
    let sw = RealSwitch::new(program, NoControl, RealConfig::ports(num_ports))?.with_report(move |p: &SwitchVmSwitch, _| {
        let c = &p.counters;
        let mut v = vec![
            ("executed".to_string(), c.executed.to_string()),
            ("not_invoked".to_string(), c.not_invoked.to_string()),
            ("violations".to_string(), c.violations.to_string()),
            ("malformed".to_string(), c.malformed.to_string()),
            ("steered_drop".to_string(), c.steered_drop.to_string()),
        ];
        v.extend(pcs.iter().map(|(n, pc)| (format!("pc_{n}"), format!("{pc:#06x}"))));
        v
    });
    Ok(Box::new(sw))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn settings(kv: &[(&str, &str)]) -> Settings {
        Settings::new(kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
    }

    #[test]
    fn every_shipped_dpf_deploys_and_tenants_get_memory() {
        let all: Vec<&str> = SHIPPED_DPFS.iter().map(|(n, _)| *n).collect();
        let mut s = settings(&[("tenants", "3,4"), ("deploy", &all.join(",")), ("default_dpf", "default_counter")]);
        let (sw, pcs) = configured(&mut s).unwrap();
        assert_eq!(pcs.len(), all.len());
        let distinct: std::collections::HashSet<u16> = pcs.iter().map(|(_, pc)| *pc).collect();
        assert_eq!(distinct.len(), all.len(), "each DPF has its own init_pc");
        assert_eq!(sw.machine.permissions.len(), 2);
    }

    #[test]
    fn bad_settings_name_the_setting() {
        for (kv, want) in [
            (vec![("deploy", "nope")], "no shipped DPF `nope`"),
            (vec![("tenants", "1,x")], "`x` is not a VNI"),
            (vec![("tenants", "16777216")], "24 bits"),
            (vec![("segment_cells", "1000")], "power of two"),
            (vec![("default_dpf", "lb1_hash")], "not among the deployed"),
            (vec![("on_unauthorized", "maybe")], "drop or pass"),
            (vec![("gas", "0")], "1..=255"),
        ] {
            let e = configured(&mut settings(&kv)).err().unwrap();
            assert!(e.contains(want), "{kv:?}: {e}");
        }
        let spec = &switch_programs()[0];
        let e = spec.instantiate([("tenant".to_string(), "1".to_string())].into(), 2).err().unwrap();
        assert!(e.contains("unknown setting(s) tenant"), "{e}");
    }
}
