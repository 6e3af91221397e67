//! Every experiment of every crate, in one list (system crates add theirs here).

use innet_sim::experiment::Experiment;

pub fn all() -> Vec<Box<dyn Experiment>> {
    let mut v = innet_basic::experiments();
    v.extend(innet_switchv2p::experiments());
    v.extend(innet_orbitcache::experiments());
    v.extend(innet_switchvm::experiments());
    v.extend(innet_gigaflow::experiments::experiments());
    v.sort_by_key(|e| e.info().name);
    v
}

pub fn find(name: &str) -> Option<Box<dyn Experiment>> {
    all().into_iter().find(|e| e.info().name == name)
}

/// Every program the real-packet switch can run (`innet switch run --program NAME`): the
/// runtime's own, then the system crates' (add yours here).
#[allow(clippy::let_and_return, unused_mut)]
pub fn switch_programs() -> Vec<innet_dataplane::real::ProgramSpec> {
    let mut v = innet_dataplane::real::builtin_programs();
    v.extend(innet_switchvm::real::switch_programs());
    v.extend(innet_appswitch::switch_programs());
    v
}
