//! The traces SwitchV2P's experiments run, by name, as VM-level rows
//! (`src_vm,dst_vm,ts_ns,flow_id,size_bytes`), plus how each is carried (TCP or UDP packets).
//! A user trace file is read with the same row format.

use innet_registry::ExperimentError;
use innet_workloads::trace::TraceRow;
use innet_workloads::vm_traces::{self, AlibabaSpec, MicroburstSpec, UDP_PAYLOAD_BYTES};

use crate::run::Transport;

/// What an experiment asks for.
#[derive(Debug, Clone)]
pub struct TraceRequest<'a> {
    pub name: &'a str,
    pub file: &'a str,
    pub file_transport: &'a str,
    pub servers: u32,
    pub vms_per_server: u32,
    pub host_bps: u64,
    pub load: f64,
    pub duration_ns: u64,
    pub seed: u64,
}

fn bad(field: &str, message: impl Into<String>) -> ExperimentError {
    ExperimentError::BadParam { field: field.into(), message: message.into() }
}

/// Rows and transport for a request.
pub fn load(req: &TraceRequest<'_>) -> Result<(Vec<TraceRow>, Transport), ExperimentError> {
    if !req.file.trim().is_empty() {
        let path = req.file.trim();
        let rows = innet_workloads::trace::read_file(std::path::Path::new(path)).map_err(ExperimentError::Input)?;
        let vms = req.servers as u64 * req.vms_per_server as u64;
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
            other => return Err(bad("trace_transport", format!("expected tcp or udp, got '{other}'"))),
        };
        return Ok((rows, transport));
    }
    if req.duration_ns == 0 {
        return Err(bad("duration_ms", "expected a positive trace duration"));
    }
    match req.name {
        "hadoop" | "websearch" => {
            let cdf = innet_workloads::cdf_by_name(req.name).map_err(|m| bad("trace", m))?;
            let rows = vm_traces::vm_flows(&cdf, req.servers, req.vms_per_server, req.host_bps, req.load, req.duration_ns, req.seed)
                .map_err(|m| bad("load", m))?;
            Ok((rows, Transport::Tcp))
        }
        "microbursts" | "microbursts_oneway" => {
            let spec = MicroburstSpec { replies: req.name == "microbursts", ..MicroburstSpec::default() };
            let rows = vm_traces::microbursts(&spec, req.servers * req.vms_per_server, req.duration_ns, req.seed).map_err(|m| bad("trace", m))?;
            Ok((rows, udp()))
        }
        "video" => {
            let rows = vm_traces::video(req.servers, req.vms_per_server, 64, req.duration_ns, req.seed).map_err(|m| bad("trace", m))?;
            Ok((rows, udp()))
        }
        "alibaba" => {
            let spec = AlibabaSpec::default();
            let rows = vm_traces::alibaba_like(&spec, req.servers * req.vms_per_server, req.duration_ns, req.seed).map_err(|m| bad("trace", m))?;
            Ok((rows, Transport::Tcp))
        }
        other => Err(bad(
            "trace",
            format!("unknown trace '{other}'; expected hadoop, websearch, microbursts, microbursts_oneway, video or alibaba, or set trace_file"),
        )),
    }
}

fn udp() -> Transport {
    Transport::UdpPacket { payload_bytes: UDP_PAYLOAD_BYTES }
}
