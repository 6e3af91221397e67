//! `innet._native`: the Python front's door into the Rust simulator. Thin on purpose: it lists
//! and runs experiments, converts results to Python objects, and maps errors to exceptions.

mod frames;
mod registry;
mod resources;
mod switch;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use innet_registry::{ColumnData, ExperimentError, RunOutput, Runner};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

mod pipebench;

create_exception!(_native, InnetError, PyException, "Any error innet reports.");
create_exception!(_native, UserInputError, InnetError, "Bad input: a parameter, a file, a name.");
create_exception!(_native, InvariantError, InnetError, "The simulation broke an invariant.");

fn to_py_err(e: ExperimentError) -> PyErr {
    match e {
        ExperimentError::Invariant(_) => InvariantError::new_err(e.to_string()),
        _ => UserInputError::new_err(e.to_string()),
    }
}

/// `[{name, description, params: [{name, default, doc}], runner, module}]`, sorted by name;
/// `runner` is "simulator" (run by `run_experiment`) or "python" (run by `module`'s `run`).
#[pyfunction]
fn list_experiments(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for e in registry::all() {
        let info = e.info();
        let d = PyDict::new(py);
        d.set_item("name", info.name)?;
        d.set_item("description", info.description)?;
        let params = PyList::empty(py);
        for p in info.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("default", p.default)?;
            pd.set_item("doc", p.doc)?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        match e.runner() {
            Runner::Simulator => d.set_item("runner", "simulator")?,
            Runner::Python { module, .. } => {
                d.set_item("runner", "python")?;
                d.set_item("module", module)?;
            }
        }
        out.append(d)?;
    }
    Ok(out)
}

/// The Python module that runs `name`, or None when the simulator runs it (`run_experiment`).
#[pyfunction]
fn experiment_runner(name: &str) -> PyResult<Option<&'static str>> {
    Ok(match registry::find(name).map_err(to_py_err)?.runner() {
        Runner::Simulator => None,
        Runner::Python { module, .. } => Some(module),
    })
}

/// The parameters a Python-run experiment gets: its defaults, then its quick values (with
/// `quick`), then `overrides`, checked against its declared parameters; a JSON object in
/// declaration order.
#[pyfunction]
#[pyo3(signature = (name, overrides, quick = false))]
fn resolve_params(name: &str, overrides: BTreeMap<String, String>, quick: bool) -> PyResult<String> {
    let exp = registry::find(name).map_err(to_py_err)?;
    let info = exp.info();
    let quick_values: &[(&str, &str)] = match exp.runner() {
        Runner::Python { quick, .. } => quick,
        Runner::Simulator => {
            return Err(UserInputError::new_err(format!(
                "{name} is run by the simulator, which resolves its own parameters"
            )))
        }
    };
    let mut table = innet_registry::resolve_table(&info, quick_values, quick, &overrides).map_err(to_py_err)?;
    let mut out = serde_json::Map::new();
    for p in &info.params {
        if let Some(v) = table.remove(p.name) {
            out.insert(p.name.to_string(), serde_json::to_value(v).map_err(|e| InnetError::new_err(e.to_string()))?);
        }
    }
    Ok(serde_json::Value::Object(out).to_string())
}

/// The items of `text`, the comma list a Python-run experiment's parameter `name` resolved to,
/// parsed by the registry's rule (`innet_registry::parse_list`, the one a Rust experiment's
/// `List` follows): trimmed, empty ones skipped, each a number (a whole number with `whole`);
/// a bad item is a UserInputError naming the parameter.
#[pyfunction]
#[pyo3(signature = (name, text, whole = false))]
fn parse_list<'py>(py: Python<'py>, name: &str, text: &str, whole: bool) -> PyResult<Bound<'py, PyAny>> {
    Ok(if whole {
        innet_registry::parse_list::<u64>(name, text).map_err(to_py_err)?.into_pyobject(py)?.into_any()
    } else {
        innet_registry::parse_list::<f64>(name, text).map_err(to_py_err)?.into_pyobject(py)?.into_any()
    })
}

fn column_to_py<'py>(py: Python<'py>, c: &ColumnData) -> PyResult<Bound<'py, PyAny>> {
    Ok(match c {
        ColumnData::U64(v) => v.clone().into_pyobject(py)?.into_any(),
        ColumnData::I64(v) => v.clone().into_pyobject(py)?.into_any(),
        ColumnData::F64(v) => v.clone().into_pyobject(py)?.into_any(),
        ColumnData::Str(v) => v.clone().into_pyobject(py)?.into_any(),
        ColumnData::Bool(v) => v.clone().into_pyobject(py)?.into_any(),
    })
}

/// Run an experiment. Returns `(summary_json, [(table_name, {column: list})])`. The progress
/// callback, if given, is called with a fraction at most about ten times a second.
#[pyfunction]
#[pyo3(signature = (name, overrides, quick = false, progress = None))]
fn run_experiment<'py>(
    py: Python<'py>,
    name: &str,
    overrides: BTreeMap<String, String>,
    quick: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, Bound<'py, PyList>)> {
    let exp = registry::find(name).map_err(to_py_err)?;
    let result: Result<RunOutput, ExperimentError> = py.detach(|| {
        let mut last = Instant::now();
        let mut report = |f: f64| {
            if let Some(cb) = &progress {
                if last.elapsed() >= Duration::from_millis(100) || f >= 1.0 {
                    last = Instant::now();
                    Python::attach(|py| {
                        // A failing progress callback must not abort the run.
                        let _ = cb.call1(py, (f,));
                    });
                }
            }
        };
        exp.run(&overrides, quick, &mut report)
    });
    output_to_py(py, result.map_err(to_py_err)?)
}

fn output_to_py(py: Python<'_>, out: RunOutput) -> PyResult<(String, Bound<'_, PyList>)> {
    let tables = PyList::empty(py);
    for t in &out.tables {
        let cols = PyDict::new(py);
        for (cname, data) in &t.columns {
            cols.set_item(cname, column_to_py(py, data)?)?;
        }
        tables.append((t.name.clone(), cols))?;
    }
    Ok((out.summary_json(), tables))
}

/// The labels of the independent runs ("parts") `name` with these parameters splits into, each
/// a task of its own for `innet reproduce`; None when the experiment runs whole.
#[pyfunction]
#[pyo3(signature = (name, overrides, quick = false))]
fn experiment_parts(name: &str, overrides: BTreeMap<String, String>, quick: bool) -> PyResult<Option<Vec<String>>> {
    match registry::splitter(name, &overrides, quick) {
        None => Ok(None),
        Some((_, parts)) => parts.map(Some).map_err(to_py_err),
    }
}

/// Run part `index` of `experiment_parts(name, ...)`; its result as text for `merge_experiment_parts`.
#[pyfunction]
#[pyo3(signature = (name, overrides, quick, index))]
fn run_experiment_part(py: Python<'_>, name: &str, overrides: BTreeMap<String, String>, quick: bool, index: usize) -> PyResult<String> {
    let (split, _) = registry::splitter(name, &overrides, quick)
        .ok_or_else(|| UserInputError::new_err(format!("{name} does not split into parts")))?;
    let result = py.detach(|| {
        (split.run_part)(name, &overrides, quick, index, &mut |_: f64| {}).expect("the splitter that listed the parts runs them")
    });
    result.map_err(to_py_err)
}

/// `run_experiment`'s result, from every part's `run_experiment_part` text in order.
#[pyfunction]
#[pyo3(signature = (name, overrides, quick, parts))]
fn merge_experiment_parts<'py>(
    py: Python<'py>,
    name: &str,
    overrides: BTreeMap<String, String>,
    quick: bool,
    parts: Vec<String>,
) -> PyResult<(String, Bound<'py, PyList>)> {
    let (split, _) = registry::splitter(name, &overrides, quick)
        .ok_or_else(|| UserInputError::new_err(format!("{name} does not split into parts")))?;
    let out = (split.merge_parts)(name, &overrides, quick, &parts).expect("the splitter that listed the parts merges them");
    output_to_py(py, out.map_err(to_py_err)?)
}

/// Run the simulator benchmark; returns its report as JSON text.
#[pyfunction]
#[pyo3(signature = (flows_path = None, topology = "fattree".to_string(), k = 8, transport = "udp".to_string(), scenario = None, flows = 1000, seed = 1))]
fn bench_sim(
    py: Python<'_>,
    flows_path: Option<String>,
    topology: String,
    k: u32,
    transport: String,
    scenario: Option<String>,
    flows: usize,
    seed: u64,
) -> PyResult<String> {
    let opts = innet_basic::BenchOptions {
        flows_path: flows_path.map(Into::into),
        topology,
        k,
        transport,
        scenario,
        scenario_flows: None,
        flows,
        seed,
    };
    let r = py.detach(|| innet_basic::bench_sim(&opts)).map_err(to_py_err)?;
    Ok(serde_json::Value::Object(r.fields).to_string())
}

/// Assemble a DPF source: (normalized listing, in-packet option bytes or None, why not, summary
/// JSON). Errors name the line.
#[pyfunction]
#[pyo3(signature = (text, eus = 4, lanes = 4))]
fn switchvm_asm(text: &str, eus: u8, lanes: u8) -> PyResult<(String, Option<Vec<u8>>, String, String)> {
    if eus == 0 || eus > 8 || lanes == 0 || lanes > 8 {
        return Err(UserInputError::new_err("eus and lanes must be 1..=8"));
    }
    let src = innet_switchvm::asm::assemble(text, eus, lanes).map_err(|e| UserInputError::new_err(e.to_string()))?;
    let listing = innet_switchvm::asm::disassemble(&src, lanes);
    let (bytes, why) = match innet_switchvm::asm::link_in_packet(&src) {
        Ok(code) => {
            let pkt = innet_switchvm::machine::DpfPacket {
                init_pc: Some(innet_switchvm::isa::Pc::Packet(0)),
                code: Some(code),
                gas: 8,
                ..Default::default()
            };
            match innet_switchvm::encoding::encode(&pkt, lanes) {
                Ok(b) => (Some(b), String::new()),
                Err(e) => (None, e),
            }
        }
        Err(e) => (None, e),
    };
    let instructions: usize = src.eus.iter().map(|s| s.len()).sum();
    let summary = serde_json::json!({
        "name": src.name,
        "eus": eus,
        "lanes": lanes,
        "eu_instructions": instructions,
        "epilogs": src.epilogs.len(),
        "in_packet_bytes": bytes.as_ref().map(|b| b.len()),
    });
    Ok((listing, bytes, why, summary.to_string()))
}

/// Disassemble SwitchVM option bytes (in-packet code, stack and invocation) to source text.
#[pyfunction]
#[pyo3(signature = (data, eus = 4, lanes = 4))]
fn switchvm_disasm(data: Vec<u8>, eus: u8, lanes: u8) -> PyResult<String> {
    let pkt = innet_switchvm::encoding::decode(&data, lanes).map_err(UserInputError::new_err)?;
    let mut out = format!(
        "; app_id {} gas {} init_pc {} stack {:?}\n",
        pkt.app_id,
        pkt.gas,
        pkt.init_pc.map(|p| format!("{:#06x}", p.to_u16())).unwrap_or_else(|| "-".into()),
        pkt.stack
    );
    if let Some(code) = &pkt.code {
        out += &innet_switchvm::asm::disassemble(&innet_switchvm::asm::from_packet_code(code, eus, lanes), lanes);
    }
    Ok(out)
}

/// SwitchVM option bytes for a packet: the in-packet code of `code_text` (assembled, or none),
/// the invocation (`init_pc`, 16-bit wire form; with code and no init_pc, the code's first
/// prolog), the stack, gas and app id.
#[pyfunction]
#[pyo3(signature = (code_text = None, init_pc = None, stack = Vec::new(), gas = 8, app_id = 0, eus = 4, lanes = 4))]
fn switchvm_options(code_text: Option<&str>, init_pc: Option<u16>, stack: Vec<u32>, gas: u8, app_id: u32, eus: u8, lanes: u8) -> PyResult<Vec<u8>> {
    if eus == 0 || eus > 8 || lanes == 0 || lanes > 8 {
        return Err(UserInputError::new_err("eus and lanes must be 1..=8"));
    }
    let code = match code_text {
        Some(text) => {
            let src = innet_switchvm::asm::assemble(text, eus, lanes).map_err(|e| UserInputError::new_err(e.to_string()))?;
            Some(innet_switchvm::asm::link_in_packet(&src).map_err(UserInputError::new_err)?)
        }
        None => None,
    };
    let init_pc = init_pc.map(innet_switchvm::isa::Pc::from_u16).or(code.as_ref().map(|_| innet_switchvm::isa::Pc::Packet(0)));
    let pkt = innet_switchvm::machine::DpfPacket { init_pc, code, stack, gas, app_id, ..Default::default() };
    innet_switchvm::encoding::encode(&pkt, lanes).map_err(UserInputError::new_err)
}

/// The stack SwitchVM option bytes carry (after a switch ran the DPF, its pushed results).
#[pyfunction]
#[pyo3(signature = (data, lanes = 4))]
fn switchvm_stack(data: Vec<u8>, lanes: u8) -> PyResult<Vec<u32>> {
    Ok(innet_switchvm::encoding::decode(&data, lanes).map_err(UserInputError::new_err)?.stack)
}

/// Trace a packet through a pipeline in ovs-ofctl syntax, every datapath pass (`ct_next`: the
/// conntrack state of each recirculated pass): (OVS-style text, JSON). Errors name the flow-file
/// line and column or the packet column.
#[pyfunction]
#[pyo3(signature = (flows_text, packet, ct_next = Vec::new()))]
fn gigaflow_trace(flows_text: &str, packet: &str, ct_next: Vec<String>) -> PyResult<(String, String)> {
    innet_ofswitch::report::trace_command(flows_text, packet, &ct_next).map_err(UserInputError::new_err)
}

/// Gigaflow benchmark: slow-path cost per miss (traversal, partitioning, rule generation) and
/// cache lookups per second; returns one JSON object per pipeline, as a JSON list.
#[pyfunction]
#[pyo3(signature = (flows = Vec::new(), packets = 20000, seed = 1))]
fn bench_gigaflow(py: Python<'_>, flows: Vec<(String, String)>, packets: usize, seed: u64) -> PyResult<String> {
    let opts = innet_gigaflow::bench::BenchOptions { pipelines: flows, packets, traffic: None, seed };
    let r = py.detach(|| innet_gigaflow::bench::bench_gigaflow(&opts)).map_err(UserInputError::new_err)?;
    Ok(serde_json::Value::Array(r).to_string())
}

/// A Pipebench pipeline's flow file (`ovs-ofctl add-flows` text) with `rules` ACL rules.
#[pyfunction]
#[pyo3(signature = (name, rules = 10000, seed = 1))]
fn gigaflow_pipebench_flows(name: &str, rules: usize, seed: u64) -> PyResult<String> {
    let rs = innet_pipebench::render_pipeline(name, innet_pipebench::Profile::Acl, rules, seed).map_err(UserInputError::new_err)?;
    Ok(rs.text)
}

/// Convert an Alibaba microservice call-graph CSV (MSCallGraph_*.csv) into SwitchV2P trace rows
/// at `output` (and, if asked, the artifact's placement file and a vm,container list); returns
/// what was kept and skipped, as JSON.
#[pyfunction]
#[pyo3(signature = (input, output, placement = None, names = None, topology = "ft16_400k", duration_ms = 5.0, speedup = 1.0, rpctypes = "rpc,http", seed = 1))]
#[allow(clippy::too_many_arguments)]
fn switchv2p_convert_alibaba(
    py: Python<'_>,
    input: &str,
    output: &str,
    placement: Option<&str>,
    names: Option<&str>,
    topology: &str,
    duration_ms: f64,
    speedup: f64,
    rpctypes: &str,
    seed: u64,
) -> PyResult<String> {
    use std::path::Path;
    let req = innet_switchv2p::traces::ConvertRequest {
        input: Path::new(input),
        output: Path::new(output),
        placement: placement.map(Path::new),
        names: names.map(Path::new),
        topology,
        duration_ms,
        speedup,
        rpctypes,
        seed,
    };
    let stats = py.detach(|| innet_switchv2p::traces::convert_callgraph(&req)).map_err(to_py_err)?;
    Ok(stats.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InnetError", m.py().get_type::<InnetError>())?;
    m.add("UserInputError", m.py().get_type::<UserInputError>())?;
    m.add("InvariantError", m.py().get_type::<InvariantError>())?;
    pipebench::register(m)?;
    frames::register(m)?;
    m.add_function(wrap_pyfunction!(list_experiments, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_runner, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_params, m)?)?;
    m.add_function(wrap_pyfunction!(parse_list, m)?)?;
    m.add_function(wrap_pyfunction!(run_experiment, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_parts, m)?)?;
    m.add_function(wrap_pyfunction!(run_experiment_part, m)?)?;
    m.add_function(wrap_pyfunction!(merge_experiment_parts, m)?)?;
    m.add_function(wrap_pyfunction!(bench_sim, m)?)?;
    m.add_function(wrap_pyfunction!(switchvm_asm, m)?)?;
    m.add_function(wrap_pyfunction!(switchvm_disasm, m)?)?;
    m.add_function(wrap_pyfunction!(switchvm_options, m)?)?;
    m.add_function(wrap_pyfunction!(switchvm_stack, m)?)?;
    m.add_function(wrap_pyfunction!(gigaflow_trace, m)?)?;
    m.add_function(wrap_pyfunction!(bench_gigaflow, m)?)?;
    m.add_function(wrap_pyfunction!(gigaflow_pipebench_flows, m)?)?;
    m.add_function(wrap_pyfunction!(switchv2p_convert_alibaba, m)?)?;
    m.add_function(wrap_pyfunction!(resources::program_resources, m)?)?;
    m.add_function(wrap_pyfunction!(switch::switch_programs, m)?)?;
    m.add_function(wrap_pyfunction!(switch::switch_run, m)?)?;
    m.add_function(wrap_pyfunction!(switch::bench_switch, m)?)?;
    Ok(())
}
