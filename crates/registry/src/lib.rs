//! The experiment registry's contract: what every system crate declares and the front end runs.
//!
//! An experiment has a name, documented parameters with defaults ([`ParamSpec`]) and a runner:
//! the simulator in this process ([`Experiment::run`] turns a parameter set into a JSON summary
//! plus columnar tables) or a Python module for runs that orchestrate real processes
//! ([`PythonExperiment`]). Each system crate exports `experiments()` at its root; `innet list`,
//! `innet run`, sweeps and `innet reproduce` see every experiment only through this crate.
//!
//! The kit an experiment is written with (docs/architecture.md, "The experiment registry"):
//! parameters as `const` tables of [`ParamSpec::new`], an experiment's name, tables, changed
//! defaults and quick form as one [`Declaration`], comma-list parameters typed as [`List`]
//! (parsed once, when the parameters resolve), bad input reported with
//! [`ExperimentError::bad_param`], and a sweep as a [`Sweep`] value: its points (the product of
//! its axes) and one run per point.

mod kit;
mod output;
mod params;

use std::collections::BTreeMap;
use std::fmt::Display;

pub use kit::{parse_list, Declaration, List, ListItem, Sweep};
pub use output::{ColumnData, RunOutput, Table};
pub use params::{resolve_params, resolve_table};

/// One documented parameter of an experiment (`--set name=value`).
#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: &'static str,
    /// The default, written as a TOML literal (`0.3`, `"hadoop"`, `true`).
    pub default: &'static str,
    pub doc: &'static str,
}

impl ParamSpec {
    /// A parameter, in a `const` table: `const P: &[ParamSpec] = &[ParamSpec::new("load", "0.3", "…")];`.
    pub const fn new(name: &'static str, default: &'static str, doc: &'static str) -> ParamSpec {
        ParamSpec { name, default, doc }
    }
}

/// Static description of an experiment, shown by `innet list`.
#[derive(Debug, Clone)]
pub struct ExperimentInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub params: Vec<ParamSpec>,
}

/// A user-facing error in an experiment's input: names the place and what was expected.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown experiment '{0}' (see `innet list`)")]
    UnknownExperiment(String),
    #[error("parameter '{field}': {message}")]
    BadParam { field: String, message: String },
    #[error("{0}")]
    Input(String),
    /// The simulation itself broke an invariant (e.g. packet conservation). Not a user error.
    #[error("internal invariant violated: {0}")]
    Invariant(String),
}

impl ExperimentError {
    /// A parameter's value is not what was expected: `parameter 'load': expected a fraction in
    /// (0, 1], got '1.5'`. The one form for a bad value (the registry's own checks and list items
    /// use it too).
    pub fn bad_param(name: &str, value: impl Display, expected: impl Display) -> ExperimentError {
        ExperimentError::BadParam { field: name.to_string(), message: format!("expected {expected}, got '{value}'") }
    }

    /// A parameter, or a combination of parameters, that cannot be run, in words (`"12 does not
    /// spread evenly over the 4 gateway ToRs"`): for a constraint that is not one value against
    /// an expectation. Prefer [`ExperimentError::bad_param`].
    pub fn param(name: &str, message: impl Into<String>) -> ExperimentError {
        ExperimentError::BadParam { field: name.to_string(), message: message.into() }
    }
}

/// Progress reporting: called with a fraction in [0, 1] from time to time.
pub type Progress<'a> = &'a mut dyn FnMut(f64);

/// Where an experiment's run happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// [`Experiment::run`], in this process (simulations and in-memory benchmarks).
    Simulator,
    /// `run(name, params, progress)` of a Python module, given the parameters resolved here
    /// (defaults, then the `quick` values, then the user's): runs that start namespaces,
    /// servers and switches as processes.
    Python { module: &'static str, quick: &'static [(&'static str, &'static str)] },
}

/// An experiment that can be listed and run.
pub trait Experiment: Send + Sync {
    fn info(&self) -> ExperimentInfo;
    /// Run with `overrides` (from `--set k=v`, values as TOML literals or bare strings).
    fn run(
        &self,
        overrides: &BTreeMap<String, String>,
        quick: bool,
        progress: Progress<'_>,
    ) -> Result<RunOutput, ExperimentError>;
    /// Who runs it; the simulator unless the experiment says otherwise.
    fn runner(&self) -> Runner {
        Runner::Simulator
    }
}

/// An experiment declared here (name, parameters, quick form) and run by a Python module.
#[derive(Debug, Clone)]
pub struct PythonExperiment {
    pub declaration: Declaration,
    /// The Python function that runs it, `module:function`, called as `function(name, params,
    /// progress)`, e.g. `innet.appswitch.experiments:turnaround`.
    pub module: &'static str,
}

impl Experiment for PythonExperiment {
    fn info(&self) -> ExperimentInfo {
        self.declaration.info()
    }
    fn run(
        &self,
        _overrides: &BTreeMap<String, String>,
        _quick: bool,
        _progress: Progress<'_>,
    ) -> Result<RunOutput, ExperimentError> {
        let name = self.declaration.name;
        Err(ExperimentError::Input(format!(
            "{name} runs in Python ({}): use `innet run {name}` or innet.run()",
            self.module
        )))
    }
    fn runner(&self) -> Runner {
        Runner::Python { module: self.module, quick: self.declaration.quick }
    }
}

/// The experiment called `name` in `all`, or an error naming it.
pub fn find(all: Vec<Box<dyn Experiment>>, name: &str) -> Result<Box<dyn Experiment>, ExperimentError> {
    all.into_iter()
        .find(|e| e.info().name == name)
        .ok_or_else(|| ExperimentError::UnknownExperiment(name.to_string()))
}

#[cfg(test)]
mod tests {

    #[test]
    fn exact_f64_gives_back_the_same_bits() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct S {
            #[serde(with = "crate::exact_f64")]
            x: f64,
            #[serde(with = "crate::exact_f64::list")]
            v: Vec<f64>,
            #[serde(with = "crate::exact_f64::list")]
            a: [f64; 2],
        }
        // 0.1 + 0.2 and 1/3 print as decimals that do not all read back to the same double
        // through a float parser without round-trip mode; their bits do.
        let s = S { x: 0.1 + 0.2, v: vec![1.0 / 3.0, f64::MIN_POSITIVE, -0.0], a: [2.0f64.sqrt(), 1e-310] };
        let text = serde_json::to_string(&s).unwrap();
        let back: S = serde_json::from_str(&text).unwrap();
        assert_eq!(back.x.to_bits(), s.x.to_bits());
        assert_eq!(back.v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), s.v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        assert_eq!(back.a.map(f64::to_bits), s.a.map(f64::to_bits));
        let e = serde_json::from_str::<S>(r#"{"x": 0, "v": [], "a": [1]}"#).err().unwrap().to_string();
        assert!(e.contains("1 floats"), "{e}");
    }

    use super::*;

    const PARAMS: &[ParamSpec] = &[ParamSpec::new("queries", "100", "queries")];

    fn python_experiment() -> PythonExperiment {
        PythonExperiment {
            declaration: Declaration::new("x.real", "a real-packet run", &[PARAMS]).quick(&[("queries", "10")]),
            module: "innet.x_runner",
        }
    }

    #[test]
    fn a_python_experiment_names_its_runner_and_is_not_run_here() {
        let e = python_experiment();
        assert_eq!(e.runner(), Runner::Python { module: "innet.x_runner", quick: &[("queries", "10")] });
        assert_eq!(e.info().params.len(), 1);
        let mut noop = |_: f64| {};
        let err = e.run(&BTreeMap::new(), false, &mut noop).unwrap_err().to_string();
        assert!(err.contains("x.real") && err.contains("innet.x_runner"), "{err}");
        let t = resolve_table(&e.info(), e.declaration.quick, true, &BTreeMap::new()).unwrap();
        assert_eq!(t["queries"].as_integer(), Some(10));
    }

    #[test]
    fn bad_param_names_the_parameter_the_value_and_what_was_expected() {
        let e = ExperimentError::bad_param("load", 1.5, "a fraction in (0, 1]");
        assert_eq!(e.to_string(), "parameter 'load': expected a fraction in (0, 1], got '1.5'");
    }

    #[test]
    fn find_names_the_unknown_experiment() {
        let all: Vec<Box<dyn Experiment>> = vec![Box::new(python_experiment())];
        assert!(find(all, "x.real").is_ok());
        let all: Vec<Box<dyn Experiment>> = vec![Box::new(python_experiment())];
        let err = find(all, "x.unreal").err().unwrap().to_string();
        assert!(err.contains("'x.unreal'"), "{err}");
    }
}

/// A float as its IEEE bits (`#[serde(with = "innet_registry::exact_f64")]`): JSON text read
/// back gives the same number, not one a ULP away, so a sweep's runs can be simulated as separate
/// tasks and merged into exactly the output of one process.
pub mod exact_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(x.to_bits())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        u64::deserialize(d).map(f64::from_bits)
    }

    /// The same for a list of floats (`#[serde(with = "innet_registry::exact_f64::list")]`; a
    /// `Vec<f64>` or a `[f64; N]` field).
    pub mod list {
        use serde::{de::Error, Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer, T: AsRef<[f64]>>(x: &T, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(x.as_ref().iter().map(|v| v.to_bits()))
        }
        pub fn deserialize<'de, D: Deserializer<'de>, T: TryFrom<Vec<f64>>>(d: D) -> Result<T, D::Error> {
            let v: Vec<f64> = Vec::<u64>::deserialize(d)?.into_iter().map(f64::from_bits).collect();
            let n = v.len();
            T::try_from(v).map_err(|_| D::Error::custom(format!("{n} floats: not the length expected")))
        }
    }
}
