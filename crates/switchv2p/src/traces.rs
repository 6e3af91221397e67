//! The traces SwitchV2P's experiments run, by name, as VM-level rows
//! (`src_vm,dst_vm,ts_ns,flow_id,size_bytes`), plus how each is carried (TCP or UDP packets).
//! A user trace file is read with the same row format.

use innet_sim::experiment::ExperimentError;
use innet_workloads::trace::TraceRow;
use rand::{Rng, SeedableRng};

use crate::run::Transport;

/// Payload of one UDP packet in the UDP traces (the artifact's UDP mode).
pub const UDP_PAYLOAD_BYTES: u32 = 64;

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
        let rows = innet_workloads::trace::read_file(std::path::Path::new(req.file.trim())).map_err(ExperimentError::Input)?;
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
            Ok((vm_flows(&cdf, req)?, Transport::Tcp))
        }
        other => Err(bad(
            "trace",
            format!("unknown trace '{other}'; expected hadoop, websearch, microbursts, video or alibaba, or set trace_file"),
        )),
    }
}

/// Poisson flows at `load` with CDF sizes between uniformly random VMs on different servers.
pub fn vm_flows(cdf: &innet_workloads::FlowSizeCdf, req: &TraceRequest<'_>) -> Result<Vec<TraceRow>, ExperimentError> {
    let flows = innet_workloads::poisson_flows_until(
        cdf,
        req.servers,
        req.host_bps,
        req.load,
        innet_workloads::Until::DurationPs(req.duration_ns * 1000),
        req.seed,
    )
    .map_err(|m| bad("load", m))?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(req.seed ^ 0x766d);
    Ok(flows
        .iter()
        .map(|f| TraceRow {
            src_vm: f.src * req.vms_per_server + rng.gen_range(0..req.vms_per_server),
            dst_vm: f.dst * req.vms_per_server + rng.gen_range(0..req.vms_per_server),
            ts_ns: f.start_ps / 1000,
            flow_id: f.id,
            size_bytes: f.size_bytes,
        })
        .collect())
}

/// The migration test's incast: `senders` VMs (the first VM of each of as many servers) each
/// send `packets` UDP packets `gap_ns` apart to `dst_vm`, one flow per sender.
pub fn incast(senders: u32, vms_per_server: u32, dst_vm: u32, packets: u32, gap_ns: u64) -> Vec<TraceRow> {
    let mut rows = Vec::with_capacity((senders * packets) as usize);
    for s in 0..senders {
        for k in 0..packets {
            rows.push(TraceRow {
                src_vm: s * vms_per_server,
                dst_vm,
                ts_ns: k as u64 * gap_ns,
                flow_id: s as u64 + 1,
                size_bytes: UDP_PAYLOAD_BYTES as u64,
            });
        }
    }
    rows.sort_by_key(|r| r.ts_ns);
    rows
}
