//! `innet switch run` and `innet bench switch`: the real-packet switch behind thin wrappers.
//! The runtime itself runs in Rust with the GIL released; it handles SIGINT/SIGTERM itself.

use std::collections::BTreeMap;
use std::time::Duration;

use innet_dataplane::real::{self, RouteTable, RunOptions};
use pyo3::prelude::*;

use crate::{registry, UserInputError};

fn find(name: &str) -> PyResult<real::ProgramSpec> {
    let all = registry::switch_programs();
    let names: Vec<&str> = all.iter().map(|p| p.name).collect();
    all.iter().copied().find(|p| p.name == name).ok_or_else(|| {
        UserInputError::new_err(format!(
            "no switch program '{name}'; known: {}",
            names.join(", ")
        ))
    })
}

/// `[(name, description)]` of the programs the real switch can run.
#[pyfunction]
pub fn switch_programs() -> Vec<(String, String)> {
    registry::switch_programs()
        .iter()
        .map(|p| (p.name.to_string(), p.description.to_string()))
        .collect()
}

/// Run a program on interfaces until SIGINT/SIGTERM (or `duration_s`). Returns
/// `(summary_text, summary_json)`. Errors (unknown program or setting, missing interface, no
/// permission) raise UserInputError before any frame is touched.
#[pyfunction]
#[pyo3(signature = (program, ports, settings, pcap = None, routes = Vec::new(), duration_s = None, stats = true, batch = 64, loss = 0.0, reorder = 0.0, impair_seed = 1, duplicate = 0.0))]
#[allow(clippy::too_many_arguments)]
pub fn switch_run(
    py: Python<'_>,
    program: &str,
    ports: Vec<String>,
    settings: BTreeMap<String, String>,
    pcap: Option<String>,
    routes: Vec<String>,
    duration_s: Option<f64>,
    stats: bool,
    batch: usize,
    loss: f64,
    reorder: f64,
    impair_seed: u64,
    duplicate: f64,
) -> PyResult<(String, String)> {
    let spec = find(program)?;
    if ports.len() < 2 {
        return Err(UserInputError::new_err(format!(
            "a switch needs at least two --port, got {}",
            ports.len()
        )));
    }
    let n = ports.len() as u16;
    let routes = RouteTable::parse(&routes, n).map_err(UserInputError::new_err)?;
    let mut opts = RunOptions::new(ports);
    opts.pcap = pcap;
    opts.batch = batch;
    opts.impair = real::Impairment {
        loss,
        reorder,
        duplicate,
        seed: impair_seed,
    };
    opts.impair.validate().map_err(UserInputError::new_err)?;
    opts.stats_interval = stats.then(|| Duration::from_secs(1));
    if let Some(d) = duration_s {
        if !(d.is_finite() && d > 0.0) {
            return Err(UserInputError::new_err(format!(
                "--duration-s must be positive, got {d}"
            )));
        }
        opts.duration = Some(Duration::from_secs_f64(d));
    }
    // The switch is built on the runtime's side of the GIL (programs need not be Send).
    let summary = py
        .detach(move || {
            let mut sw = spec.instantiate(settings, n)?;
            sw.set_routes(routes);
            real::run(sw, &opts)
        })
        .map_err(UserInputError::new_err)?;
    Ok((summary.text(), summary.json().to_string()))
}

/// Replay a pcap through a program in memory; returns the report as JSON text.
#[pyfunction]
#[pyo3(signature = (pcap, program, settings, repeat = 10))]
pub fn bench_switch(
    py: Python<'_>,
    pcap: &str,
    program: &str,
    settings: BTreeMap<String, String>,
    repeat: u32,
) -> PyResult<String> {
    let spec = find(program)?;
    let bytes = std::fs::read(pcap).map_err(|e| UserInputError::new_err(format!("{pcap}: {e}")))?;
    let (_, records) = innet_wire::pcap::parse(&bytes)
        .map_err(|e| UserInputError::new_err(format!("{pcap}: {e}")))?;
    if records.is_empty() {
        return Err(UserInputError::new_err(format!(
            "{pcap}: the capture has no frames"
        )));
    }
    let frames: Vec<Vec<u8>> = records.into_iter().map(|r| r.data).collect();
    let rep = py
        .detach(move || {
            let mut sw = spec.instantiate(settings, 2)?;
            Ok::<_, String>(real::bench::replay(sw.as_mut(), &frames, repeat.max(1)))
        })
        .map_err(UserInputError::new_err)?;
    let mut j = rep.json();
    j["program"] = serde_json::Value::String(program.to_string());
    j["pcap"] = serde_json::Value::String(pcap.to_string());
    Ok(j.to_string())
}
