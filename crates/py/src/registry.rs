//! The one table of every system crate's experiments and real-switch programs. A system crate
//! exports `experiments()` (and, if it has programs for the real switch, `switch_programs()`)
//! at its root and is added here once.

use innet_dataplane::real::ProgramSpec;
use std::collections::BTreeMap;

use innet_registry::{Experiment, ExperimentError, Progress, RunOutput};

type Experiments = fn() -> Vec<Box<dyn Experiment>>;
type Programs = fn() -> Vec<ProgramSpec>;

const EXPERIMENTS: &[Experiments] = &[
    innet_basic::experiments,
    innet_switchv2p::experiments,
    innet_orbitcache::experiments,
    innet_gigaflow::experiments,
    innet_switchvm::experiments,
    innet_appswitch::experiments,
];

type Overrides = BTreeMap<String, String>;
/// A system crate's sweeps that split into parts (independent runs): each function answers
/// None for an experiment that is not its own or does not split. See
/// `innet_switchv2p::experiments::{parts, run_part, merge_parts}`.
pub struct Splitter {
    pub parts: fn(&str, &Overrides, bool) -> Option<Result<Vec<String>, ExperimentError>>,
    pub run_part: fn(&str, &Overrides, bool, usize, Progress<'_>) -> Option<Result<String, ExperimentError>>,
    pub merge_parts: fn(&str, &Overrides, bool, &[String]) -> Option<Result<RunOutput, ExperimentError>>,
}

const SPLITTERS: &[Splitter] = &[
    Splitter {
        parts: innet_switchv2p::experiments::parts,
        run_part: innet_switchv2p::experiments::run_part,
        merge_parts: innet_switchv2p::experiments::merge_parts,
    },
    Splitter {
        parts: innet_gigaflow::experiments::parts,
        run_part: innet_gigaflow::experiments::run_part,
        merge_parts: innet_gigaflow::experiments::merge_parts,
    },
];

/// The splitter of `name` (None: it runs whole).
pub fn splitter(name: &str, overrides: &Overrides, quick: bool) -> Option<(&'static Splitter, Result<Vec<String>, ExperimentError>)> {
    SPLITTERS.iter().find_map(|s| (s.parts)(name, overrides, quick).map(|parts| (s, parts)))
}

/// The real runtime's own programs first, then the system crates'.
const SWITCH_PROGRAMS: &[Programs] = &[
    innet_dataplane::real::builtin_programs,
    innet_switchv2p::switch_programs,
    innet_orbitcache::switch_programs,
    innet_switchvm::switch_programs,
    innet_appswitch::switch_programs,
];

/// Every experiment, sorted by name.
pub fn all() -> Vec<Box<dyn Experiment>> {
    let mut v: Vec<Box<dyn Experiment>> = EXPERIMENTS.iter().flat_map(|f| f()).collect();
    v.sort_by_key(|e| e.info().name);
    v
}

pub fn find(name: &str) -> Result<Box<dyn Experiment>, ExperimentError> {
    innet_registry::find(all(), name)
}

/// Every program the real-packet switch can run (`innet switch run --program NAME`).
pub fn switch_programs() -> Vec<ProgramSpec> {
    SWITCH_PROGRAMS.iter().flat_map(|f| f()).collect()
}
