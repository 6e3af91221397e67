//! The traces SwitchV2P's experiments run, by name, as VM-level rows
//! (`src_vm,dst_vm,ts_ns,flow_id,size_bytes`), plus how each is carried (TCP or UDP packets).
//! A user trace file is read with the same row format, or, when its header says so, as Alibaba's
//! microservice call graph (`innet_workloads::alibaba_callgraph`); [`convert_callgraph`] writes
//! such a file out as rows and the artifact's placement file.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

use innet_registry::ExperimentError;
use innet_workloads::alibaba_callgraph::{self, CallGraphOptions, CallGraphTrace};
use innet_workloads::trace::TraceRow;
use innet_workloads::vm_traces::{self, AlibabaSpec, MicroburstSpec, UDP_PAYLOAD_BYTES};

use crate::run::{NetworkSpec, Transport};

/// What an experiment asks for.
#[derive(Debug, Clone)]
pub struct TraceRequest<'a> {
    pub name: &'a str,
    pub file: &'a str,
    pub file_transport: &'a str,
    /// A call-graph `file`: how much faster than simulated time its time runs.
    pub callgraph_speedup: f64,
    /// A call-graph `file`: the rpctypes that become flows.
    pub callgraph_rpctypes: &'a str,
    pub servers: u32,
    pub vms_per_server: u32,
    pub host_bps: u64,
    pub load: f64,
    pub duration_ns: u64,
    pub seed: u64,
}


/// Generated traces kept in this process: the runs of one sweep share one trace, also when
/// each run is a task of its own on a Dask worker (a few recent ones: a worker may take parts
/// of two entries in turn). Files are always read again (they may change).
static GENERATED: Mutex<Vec<(String, Arc<Vec<TraceRow>>, Transport)>> = Mutex::new(Vec::new());
const GENERATED_KEPT: usize = 3;

/// [`load`], with generated traces made once per process and shared.
pub fn load_shared(req: &TraceRequest<'_>) -> Result<(Arc<Vec<TraceRow>>, Transport), ExperimentError> {
    if !req.file.trim().is_empty() {
        return load(req).map(|(rows, t)| (Arc::new(rows), t));
    }
    let key = format!("{req:?}");
    let mut kept = GENERATED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = kept.iter().position(|(k, _, _)| *k == key) {
        let hit = kept.remove(i);
        let out = (hit.1.clone(), hit.2);
        kept.push(hit);
        return Ok(out);
    }
    let (rows, transport) = load(req)?;
    let rows = Arc::new(rows);
    if kept.len() >= GENERATED_KEPT {
        kept.remove(0);
    }
    kept.push((key, rows.clone(), transport));
    Ok((rows, transport))
}

/// Rows and transport for a request.
pub fn load(req: &TraceRequest<'_>) -> Result<(Vec<TraceRow>, Transport), ExperimentError> {
    if !req.file.trim().is_empty() {
        let path = req.file.trim();
        let vms = req.servers as u64 * req.vms_per_server as u64;
        let rows = if is_callgraph_file(Path::new(path))? {
            let opts = callgraph_options(req.duration_ns, req.callgraph_speedup, req.callgraph_rpctypes, vms, req.seed)?;
            alibaba_callgraph::read_file(Path::new(path), &opts).map_err(ExperimentError::Input)?.rows
        } else {
            innet_workloads::trace::read_file(Path::new(path)).map_err(ExperimentError::Input)?
        };
        if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.src_vm as u64 >= vms || r.dst_vm as u64 >= vms) {
            return Err(ExperimentError::Input(format!(
                "{path}: row {} (src_vm {}, dst_vm {}): the network has VMs 0..{} only",
                i + 1,
                r.src_vm,
                r.dst_vm,
                vms - 1
            )));
        }
        let transport = match req.file_transport {
            "tcp" => Transport::Tcp,
            "udp" => Transport::UdpPacket { payload_bytes: UDP_PAYLOAD_BYTES },
            other => return Err(ExperimentError::bad_param("trace_transport", other, "tcp or udp")),
        };
        return Ok((rows, transport));
    }
    if req.duration_ns == 0 {
        return Err(ExperimentError::param("duration_ms", "expected a positive trace duration"));
    }
    match req.name {
        "hadoop" | "websearch" => {
            let cdf = innet_workloads::cdf_by_name(req.name).map_err(|m| ExperimentError::param("trace", m))?;
            let rows = vm_traces::vm_flows(&cdf, req.servers, req.vms_per_server, req.host_bps, req.load, req.duration_ns, req.seed)
                .map_err(|m| ExperimentError::param("load", m))?;
            Ok((rows, Transport::Tcp))
        }
        "microbursts" | "microbursts_oneway" => {
            let spec = MicroburstSpec { replies: req.name == "microbursts", ..MicroburstSpec::default() };
            let rows = vm_traces::microbursts(&spec, req.servers * req.vms_per_server, req.duration_ns, req.seed).map_err(|m| ExperimentError::param("trace", m))?;
            Ok((rows, udp()))
        }
        "video" => {
            let rows = vm_traces::video(req.servers, req.vms_per_server, 64, req.duration_ns, req.seed).map_err(|m| ExperimentError::param("trace", m))?;
            Ok((rows, udp()))
        }
        "alibaba" => {
            let spec = AlibabaSpec::default();
            let rows = vm_traces::alibaba_like(&spec, req.servers * req.vms_per_server, req.duration_ns, req.seed).map_err(|m| ExperimentError::param("trace", m))?;
            Ok((rows, Transport::Tcp))
        }
        other => Err(ExperimentError::param("trace", format!("unknown trace '{other}'; expected hadoop, websearch, microbursts, microbursts_oneway, video or alibaba, or set trace_file"))),
    }
}

/// Whether `path`'s first line is a call-graph header (read from the first line only).
pub fn is_callgraph_file(path: &Path) -> Result<bool, ExperimentError> {
    let origin = path.display();
    let file = std::fs::File::open(path).map_err(|e| ExperimentError::Input(format!("{origin}: cannot read: {e}")))?;
    let mut first = Vec::new();
    BufReader::new(file).take(1 << 16).read_until(b'\n', &mut first).map_err(|e| ExperimentError::Input(format!("{origin}: cannot read: {e}")))?;
    Ok(alibaba_callgraph::is_callgraph_header(&String::from_utf8_lossy(&first)))
}

fn callgraph_options(duration_ns: u64, speedup: f64, rpctypes: &str, max_vms: u64, seed: u64) -> Result<CallGraphOptions, ExperimentError> {
    if duration_ns == 0 {
        return Err(ExperimentError::param("duration_ms", "expected a positive prefix of the call-graph trace"));
    }
    if !(speedup > 0.0 && speedup.is_finite()) {
        return Err(ExperimentError::bad_param("trace_speedup", speedup, "a positive factor"));
    }
    Ok(CallGraphOptions {
        duration_ns,
        speedup,
        rpctypes: CallGraphOptions::parse_rpctypes(rpctypes).map_err(|m| ExperimentError::param("trace_rpctypes", m))?,
        max_vms,
        median_call_bytes: AlibabaSpec::default().median_call_bytes,
        seed,
    })
}

/// What `innet switchv2p convert-alibaba` asks for.
#[derive(Debug, Clone)]
pub struct ConvertRequest<'a> {
    pub input: &'a Path,
    /// Where the `src_vm,dst_vm,ts_ns,flow_id,size_bytes` rows go (no header, as the artifact reads).
    pub output: &'a Path,
    /// The artifact's placement file, `{"p1": ["0", …], …}`, if wanted.
    pub placement: Option<&'a Path>,
    /// `vm,container` lines: the container (or microservice) behind each VM id, if wanted.
    pub names: Option<&'a Path>,
    pub topology: &'a str,
    pub duration_ms: f64,
    pub speedup: f64,
    pub rpctypes: &'a str,
    pub seed: u64,
}

/// Convert a call-graph file into the files a run (ours or the artifact's) takes; returns what
/// was kept and skipped, as JSON.
pub fn convert_callgraph(req: &ConvertRequest<'_>) -> Result<serde_json::Value, ExperimentError> {
    let net = NetworkSpec::by_name(req.topology).map_err(|m| ExperimentError::param("topology", m))?;
    if !(req.duration_ms > 0.0 && req.duration_ms.is_finite()) {
        return Err(ExperimentError::bad_param("duration_ms", req.duration_ms, "a positive prefix length"));
    }
    let origin = req.input.display();
    if !is_callgraph_file(req.input)? {
        return Err(ExperimentError::Input(format!(
            "{origin}:1: not a call-graph header; expected columns timestamp, traceid, rpcid (or rpc_id), um, rpctype, dm"
        )));
    }
    let opts = callgraph_options((req.duration_ms * 1e6) as u64, req.speedup, req.rpctypes, net.vm_count(), req.seed)?;
    let CallGraphTrace { rows, containers, by_instance, stats } = alibaba_callgraph::read_file(req.input, &opts).map_err(ExperimentError::Input)?;
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| ExperimentError::Input(format!("{}: cannot write: {e}", path.display())))
    };
    write(req.output, &innet_workloads::trace::to_csv(&rows))?;
    if let Some(p) = req.placement {
        write(p, &placement_json(net.topo.num_servers(), net.vms_per_server))?;
    }
    if let Some(p) = req.names {
        let mut text = String::from("vm,container\n");
        for (v, c) in containers.iter().enumerate() {
            text.push_str(&format!("{v},{c}\n"));
        }
        write(p, &text)?;
    }
    Ok(serde_json::json!({
        "input": req.input.display().to_string(),
        "topology": req.topology,
        "vms_are": if by_instance { "containers (uminstanceid/dminstanceid)" } else { "microservices (um/dm)" },
        "records": stats.records,
        "first_timestamp_ms": stats.first_timestamp_ms,
        "window_records": stats.window_records,
        "duplicate_records": stats.duplicate_records,
        "calls": stats.calls,
        "other_rpctype": stats.other_rpctype,
        "unknown_end": stats.unknown_end,
        "self_calls": stats.self_calls,
        "past_window": stats.past_window,
        "flows": stats.flows,
        "containers": stats.containers,
        "last_start_ns": rows.last().map(|r| r.ts_ns).unwrap_or(0),
    }))
}

/// The artifact's placement file (`TraceSimulation::ParsePlacement`) for `servers` servers with
/// `vms_per_server` VMs each, placed as innet places them (VM v on server v / vms_per_server):
/// `{"p1": ["0", …], "p2": […], …}`, one key per server in server order (the artifact takes the
/// servers in file order), VM ids as the names the trace rows use.
pub fn placement_json(servers: u32, vms_per_server: u32) -> String {
    let mut out = String::from("{");
    for s in 0..servers {
        if s > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("\"p{}\": [", s + 1));
        for k in 0..vms_per_server {
            if k > 0 {
                out.push_str(", ");
            }
            out.push_str(&format!("\"{}\"", s * vms_per_server + k));
        }
        out.push(']');
    }
    out.push_str("}\n");
    out
}

fn udp() -> Transport {
    Transport::UdpPacket { payload_bytes: UDP_PAYLOAD_BYTES }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../workloads/tests/data").join(name)
    }

    fn request(file: &str) -> TraceRequest<'_> {
        let net = NetworkSpec::ft16_400k();
        TraceRequest {
            name: "alibaba",
            file,
            file_transport: "tcp",
            callgraph_speedup: 1.0,
            callgraph_rpctypes: "rpc,http",
            servers: net.topo.num_servers(),
            vms_per_server: net.vms_per_server,
            host_bps: 100_000_000_000,
            load: 0.3,
            duration_ns: 10_000_000,
            seed: 1,
        }
    }

    /// `trace_file` takes a call graph (told by its header) as the reader converts it, and the
    /// 5-column form the converter writes reads back to the same rows.
    #[test]
    fn trace_file_takes_a_call_graph() {
        let path = fixture("mscallgraph_released.csv");
        let file = path.to_str().unwrap();
        let (rows, transport) = load(&request(file)).unwrap();
        assert!(matches!(transport, Transport::Tcp));
        let opts = callgraph_options(10_000_000, 1.0, "rpc,http", 409_600, 1).unwrap();
        assert_eq!(rows, alibaba_callgraph::read_file(&path, &opts).unwrap().rows);
        assert_eq!(rows.len(), 10);

        let dir = std::env::temp_dir().join(format!("innet-convert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (out, placement, names) = (dir.join("trace.csv"), dir.join("placement.json"), dir.join("names.csv"));
        let stats = convert_callgraph(&ConvertRequest {
            input: &path,
            output: &out,
            placement: Some(&placement),
            names: Some(&names),
            topology: "ft16_400k",
            duration_ms: 10.0,
            speedup: 1.0,
            rpctypes: "rpc,http",
            seed: 1,
        })
        .unwrap();
        assert_eq!((stats["flows"].as_u64(), stats["containers"].as_u64(), stats["unknown_end"].as_u64()), (Some(10), Some(4), Some(4)));
        assert_eq!(innet_workloads::trace::read_file(&out).unwrap(), rows);
        let p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&placement).unwrap()).unwrap();
        assert_eq!(p.as_object().unwrap().len(), 12_800);
        assert_eq!(p["p1"][0], "0");
        assert_eq!(p["p12800"][31], "409599");
        assert!(std::fs::read_to_string(&names).unwrap().starts_with("vm,container\n0,b65fdc9bfef6b497\n"));
        std::fs::remove_dir_all(&dir).unwrap();

        // The call graph's own errors and parameters are named.
        let mut r = request(file);
        r.callgraph_rpctypes = ",";
        assert!(matches!(load(&r), Err(ExperimentError::BadParam { field, .. }) if field == "trace_rpctypes"));
        r.callgraph_rpctypes = "rpc";
        r.callgraph_speedup = 0.0;
        assert!(matches!(load(&r), Err(ExperimentError::BadParam { field, .. }) if field == "trace_speedup"));
        let e = convert_callgraph(&ConvertRequest {
            input: &fixture("../../src/lib.rs"),
            output: &dir.join("x.csv"),
            placement: None,
            names: None,
            topology: "ft16_400k",
            duration_ms: 1.0,
            speedup: 1.0,
            rpctypes: "rpc",
            seed: 1,
        })
        .unwrap_err();
        assert!(e.to_string().contains("lib.rs:1: not a call-graph header"), "{e}");
    }

    /// The declared default of `trace_rpctypes` is the reader's.
    #[test]
    fn rpctypes_default_is_the_readers() {
        use innet_registry::Experiment;
        let info = crate::experiments::ALIBABA.info();
        let p = info.params.iter().find(|p| p.name == "trace_rpctypes").unwrap();
        assert_eq!(p.default, format!("\"{}\"", alibaba_callgraph::DEFAULT_RPCTYPES));
    }

    #[test]
    fn placement_lists_every_server_in_order() {
        assert_eq!(placement_json(2, 3), "{\"p1\": [\"0\", \"1\", \"2\"], \"p2\": [\"3\", \"4\", \"5\"]}\n");
    }
}
