//! Pipebench bindings (`innet gigaflow pipeline|traffic|traversals`): thin wrappers over
//! `innet_pipebench::commands`.

use pyo3::prelude::*;

use crate::UserInputError;

/// Pipebench: a pipeline's flow file (OFD, PSC, OLS, ANT, OTL; acl, fw, ipc).
#[pyfunction]
pub fn gigaflow_pipeline(name: &str, profile: &str, rules: usize, seed: u64) -> PyResult<String> {
    innet_pipebench::commands::pipeline_command(name, profile, rules, seed).map_err(UserInputError::new_err)
}

/// Pipebench: the traffic of a pipeline as CSV, one packet a line.
#[pyfunction]
#[pyo3(signature = (name, profile, rules, seed, locality, flows, traffic_seed, timing = "window", flow_sizes = "mean:30"))]
#[allow(clippy::too_many_arguments)]
pub fn gigaflow_traffic(name: &str, profile: &str, rules: usize, seed: u64, locality: &str, flows: usize, traffic_seed: u64, timing: &str, flow_sizes: &str) -> PyResult<String> {
    let args = innet_pipebench::commands::TrafficArgs { locality, flows, seed: traffic_seed, timing, flow_sizes };
    innet_pipebench::commands::traffic_command(name, profile, rules, seed, &args).map_err(UserInputError::new_err)
}

/// Pipebench: Table 1's traversal counts against the spec's and the traffic's (JSON).
#[pyfunction]
pub fn gigaflow_traversals(name: &str, profile: &str, rules: usize, seed: u64, locality: &str, flows: usize) -> PyResult<String> {
    innet_pipebench::commands::traversals_command(name, profile, rules, seed, locality, flows).map_err(UserInputError::new_err)
}

/// Registers the functions above in the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gigaflow_pipeline, m)?)?;
    m.add_function(wrap_pyfunction!(gigaflow_traffic, m)?)?;
    m.add_function(wrap_pyfunction!(gigaflow_traversals, m)?)?;
    Ok(())
}
