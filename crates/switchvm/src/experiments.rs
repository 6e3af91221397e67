//! SwitchVM's microbenchmarks on the simulator: `switchvm.overhead` (Fig. 10: encapsulation
//! bytes and goodput vs packet size for plain forwarding, the tenant's default DPF, an in-switch
//! DPF named by the packet, and the DPF carried in the packet) and `switchvm.latency` (Fig. 8:
//! latency vs load against plain L3 forwarding). Every packet really runs the private counter
//! on the machine; the run checks that the counter equals the executions and that each packet
//! carries the count it was given. Plain packets cross an L3 forwarding program instead. A
//! pass costs a fixed part (parser, traffic manager, deparser) plus `stage_ns` per hardware
//! stage the program occupies: 12 for SwitchVM (§5.1), `L3_FORWARD_STAGES` for L3 forwarding.

use std::collections::BTreeMap;

use innet_dataplane::fabric::{HostSite, Rack, SwitchSite};
use innet_dataplane::{L3Forward, SimSwitch};
use innet_sim::engine::{Node, Simulator};
use innet_registry::{ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, List, ListItem, ParamSpec, Progress, RunOutput, Sweep, Table};
use innet_sim::metrics::percentile;
use innet_sim::report::round6;
use innet_sim::topology::TopologySpec;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::control::ControlPlane;
use crate::isa::Pc;
use crate::machine::{DpfPacket, Machine, Permission, Unauthorized, VmConfig};
use crate::program::SwitchVmSwitch;
use crate::traffic::{Sender, SenderConfig, Sink, Wrap};

const TENANT: u32 = 1;
const COUNTER_ID: u32 = 5;

/// How packets invoke the DPF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Default,
    InSwitch,
    InPacket,
}

impl ListItem for Mode {
    fn parse_item(s: &str) -> Result<Mode, String> {
        Ok(match s {
            "plain" => Mode::Plain,
            "default" => Mode::Default,
            "in_switch" => Mode::InSwitch,
            "in_packet" => Mode::InPacket,
            _ => return Err("one of plain, default, in_switch or in_packet".into()),
        })
    }
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Default => "default",
            Mode::InSwitch => "in_switch",
            Mode::InPacket => "in_packet",
        }
    }
}

#[derive(Debug, Clone)]
pub struct BenchSpec {
    pub mode: Mode,
    pub frame_bytes: u32,
    pub load: f64,
    pub poisson: bool,
    pub duration_us: f64,
    pub link_gbps: f64,
    /// The pass's fixed latency: parser, traffic manager, deparser (ns).
    pub pipeline_fixed_ns: u64,
    /// Latency of one hardware stage of the program (ns).
    pub stage_ns: u64,
    pub seed: u64,
}

/// Stages of a P4 L3 forwarding program: the LPM route (egress port, next hop), then the
/// next hop's MAC rewrite, which depends on it.
pub const L3_FORWARD_STAGES: u32 = 2;

impl BenchSpec {
    /// The program's hardware stages: SwitchVM's whole machine for every invocation mode (on
    /// an RMT pipeline latency belongs to the compiled program, not to the tables a packet
    /// hits), L3 forwarding for plain packets.
    pub fn stages(&self) -> u32 {
        match self.mode {
            Mode::Plain => L3_FORWARD_STAGES,
            _ => crate::resources::pipeline_stages(&VmConfig::default()),
        }
    }

    /// One pass through the switch (ns).
    pub fn pipeline_ns(&self) -> u64 {
        self.pipeline_fixed_ns + self.stage_ns * self.stages() as u64
    }
}

#[derive(Debug, Clone)]
pub struct BenchResult {
    pub sent: u64,
    pub received: u64,
    pub wire_bytes: u32,
    pub overhead_bytes: u32,
    pub goodput_gbps: f64,
    pub goodput_fraction: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    /// One pass through the switch for this mode's program (ns).
    pub pipeline_ns: u64,
    pub executed: u64,
    pub violations: u64,
}

const COUNTER: &str = include_str!("../dpfs/counter.dpf");
const DEFAULT_COUNTER: &str = include_str!("../dpfs/default_counter.dpf");

pub fn bench(spec: &BenchSpec) -> Result<BenchResult, ExperimentError> {
    if !(64..=1518).contains(&spec.frame_bytes) {
        return Err(ExperimentError::bad_param("sizes", spec.frame_bytes, "frame sizes in 64..=1518"));
    }
    if !(spec.load > 0.0 && spec.load <= 1.0) {
        return Err(ExperimentError::bad_param("loads", spec.load, "loads in (0, 1]"));
    }
    let topo_spec = TopologySpec {
        host_link_gbps: spec.link_gbps,
        switch_pipeline_latency_ns: spec.pipeline_ns(),
        host_buffer_bytes: 1 << 30,
        ..TopologySpec::rack(2)
    };
    let mut rack = Rack::build(&topo_spec, spec.seed)?;
    let (src_ip, dst_ip) = (rack.ip(0), rack.ip(1));

    // The switch: the counter deployed, the tenant authorized with a default DPF and memory.
    let cfg = VmConfig::default();
    let lanes = cfg.lanes;
    let mut m = Machine::new(cfg);
    let mut cp = ControlPlane::default();
    let internal = |e: String| ExperimentError::Invariant(e);
    let counter = crate::asm::assemble(COUNTER, 4, lanes).map_err(|e| internal(e.to_string()))?;
    let d = cp.deploy(&mut m, &counter).map_err(|e| internal(e.to_string()))?;
    let dflt = cp.deploy(&mut m, &crate::asm::assemble(DEFAULT_COUNTER, 4, lanes).map_err(|e| internal(e.to_string()))?).map_err(|e| internal(e.to_string()))?;
    cp.authorize(&mut m, TENANT, Permission { on_unauthorized: Unauthorized::Drop, default_pc: Some(dflt.init_pc), caps: 0, app_id: 0 })
        .map_err(|e| internal(e.to_string()))?;
    cp.alloc_segment(&mut m, TENANT, 0, 0, 0, 64).map_err(|e| internal(e.to_string()))?;
    cp.alloc_segment(&mut m, TENANT, 1, 0, 0, 64).map_err(|e| internal(e.to_string()))?;
    let wrap = match spec.mode {
        Mode::Plain => Wrap::Plain,
        Mode::Default => Wrap::Geneve { vni: TENANT, options: Vec::new() },
        Mode::InSwitch | Mode::InPacket => {
            let code = (spec.mode == Mode::InPacket).then(|| crate::asm::link_in_packet(&counter)).transpose().map_err(internal)?;
            let pkt = DpfPacket {
                init_pc: Some(if code.is_some() { Pc::Packet(0) } else { d.init_pc }),
                code,
                stack: vec![COUNTER_ID],
                gas: 8,
                ..Default::default()
            };
            Wrap::Geneve { vni: TENANT, options: crate::encoding::encode(&pkt, lanes).map_err(internal)? }
        }
    };
    let stop_ps = (spec.duration_us * 1e6) as u64;
    let mut machine = Some(m);
    let mut sender_wire = 0;
    let mut plain_wire = 0;
    let host = |h: HostSite<'_>| -> Box<dyn Node> {
        if h.host_index != 0 {
            return Box::new(Sink { ip: h.ip, lanes, ..Default::default() });
        }
        let sc = SenderConfig {
            src_ip,
            dst_ip,
            wrap: wrap.clone(),
            frame_bytes: spec.frame_bytes,
            load: spec.load,
            poisson: spec.poisson,
            link_bps: (spec.link_gbps * 1e9) as u64,
            stop_ps,
        };
        plain_wire = Sender::new(SenderConfig { wrap: Wrap::Plain, ..sc.clone() }, h.nic, innet_sim::rng::rng_for(spec.seed, "x")).wire_bytes();
        let mut s = Sender::new(sc, h.nic, innet_sim::rng::rng_for(spec.seed, "sender"));
        sender_wire = s.wire_bytes();
        s.start(h.net, h.node);
        Box::new(s)
    };
    let switch = |site: SwitchSite<'_>| -> Box<dyn Node> {
        let m = machine.take().expect("a rack has one switch");
        if spec.mode == Mode::Plain {
            Box::new(SimSwitch::new(L3Forward::default(), site.switch_index, site.routing.clone(), site.net, site.node))
        } else {
            Box::new(SimSwitch::new(SwitchVmSwitch::new(m), site.switch_index, site.routing.clone(), site.net, site.node))
        }
    };
    let nodes = rack.nodes(host, switch);
    let (sw_id, sink_id, sender_id) = (rack.switch_node, rack.host_node(1), rack.host_node(0));
    let mut sim = Simulator::new(rack.net, nodes);
    sim.run_until(stop_ps + 1_000_000_000, &mut |_| {});
    let sent = sim.node::<Sender>(sender_id).unwrap().sent;
    let (executed, violations, counted) = match sim.node::<SimSwitch<SwitchVmSwitch>>(sw_id) {
        Some(sw) => {
            // The counters in switch memory (EU0 for the named DPF, EU1 for the default one).
            let count_of = |eu: usize| -> u32 {
                let lm = &sw.program.machine.mem[eu][0];
                lm.translate(TENANT, COUNTER_ID).map(|p| lm.cells[p as usize]).unwrap_or(0)
            };
            (sw.program.counters.executed, sw.program.machine.violations_total(), count_of(0) as u64 + count_of(1) as u64)
        }
        None => (0, 0, 0), // plain packets cross the L3 forwarding program
    };
    let sink = sim.node::<Sink>(sink_id).unwrap();
    let received = sink.received;
    let mut lat = sink.latency_us.clone();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let tops_ok = sink.stack_tops.windows(2).all(|w| w[1] == w[0] + 1);
    let tops_len = sink.stack_tops.len() as u64;
    let window_s = match (sink.first_ps, sink.last_ps) {
        (Some(f), l) if l > f => (l - f) as f64 / 1e12,
        _ => spec.duration_us / 1e6,
    };
    let cons = sim.finish();
    if !cons.ok() {
        return Err(ExperimentError::Invariant(format!("packet conservation: {cons}")));
    }
    if spec.mode != Mode::Plain && counted != executed {
        return Err(ExperimentError::Invariant(format!("the counter says {counted} but the machine ran {executed} times")));
    }
    if matches!(spec.mode, Mode::InSwitch | Mode::InPacket) && (!tops_ok || tops_len != received) {
        return Err(ExperimentError::Invariant("packets did not carry consecutive counts".into()));
    }
    let goodput_gbps = received as f64 * spec.frame_bytes as f64 * 8.0 / window_s / 1e9;
    Ok(BenchResult {
        sent,
        received,
        wire_bytes: sender_wire,
        overhead_bytes: sender_wire - plain_wire,
        goodput_gbps,
        goodput_fraction: goodput_gbps / spec.link_gbps,
        latency_p50_us: percentile(&lat, 50.0),
        latency_p99_us: percentile(&lat, 99.0),
        pipeline_ns: spec.pipeline_ns(),
        executed,
        violations,
    })
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    modes: List<Mode>,
    sizes: List<u32>,
    loads: List<f64>,
    poisson: bool,
    duration_us: f64,
    link_gbps: f64,
    pipeline_fixed_ns: u64,
    stage_ns: u64,
    seed: u64,
}


/// A benchmark's parameters after its own `modes`, `sizes`, `loads` and `poisson`.
const BENCH_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("duration_us", "200.0", "sending time (µs)"),
    ParamSpec::new("link_gbps", "100.0", "link bandwidth"),
    ParamSpec::new("pipeline_fixed_ns", "360", "fixed part of a pass: parser, traffic manager, deparser (ns)"),
    ParamSpec::new("stage_ns", "20", "latency of one hardware stage (ns): a pass costs pipeline_fixed_ns + stage_ns × the program's stages (SwitchVM 12, L3 forwarding 2)"),
    ParamSpec::new("seed", "1", "run seed"),
];

/// A benchmark's own parameters: what it sweeps by default.
const fn bench_axes(modes: &'static str, sizes: &'static str, loads: &'static str, poisson: &'static str) -> [ParamSpec; 4] {
    [
        ParamSpec::new("modes", modes, "plain (no encapsulation), default (the tenant's default DPF), in_switch (the packet names an in-switch DPF), in_packet (the DPF rides in the packet)"),
        ParamSpec::new("sizes", sizes, "un-encapsulated frame sizes in bytes"),
        ParamSpec::new("loads", loads, "offered load as a fraction of the link"),
        ParamSpec::new("poisson", poisson, "Poisson arrivals (else evenly spaced)"),
    ]
}

/// `switchvm.overhead` and `switchvm.latency`: modes × frame sizes × loads, one run each.
#[derive(Clone, Copy)]
struct Bench(Declaration);

impl Experiment for Bench {
    fn info(&self) -> ExperimentInfo {
        self.0.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: Params = self.0.resolve(overrides, quick)?;
        let sweep = Sweep::over(p.modes.non_empty("modes")?).by(&p.sizes.non_empty("sizes")?).by(&p.loads.non_empty("loads")?);
        let results = sweep.run(progress, |&((mode, frame_bytes), load), _| {
            bench(&BenchSpec { mode, frame_bytes, load, poisson: p.poisson, duration_us: p.duration_us, link_gbps: p.link_gbps, pipeline_fixed_ns: p.pipeline_fixed_ns, stage_ns: p.stage_ns, seed: p.seed })
        })?;
        let rows: Vec<(Mode, u32, f64, BenchResult)> = sweep.points.into_iter().zip(results).map(|(((m, s), l), r)| (m, s, l, r)).collect();
        let mut by_mode = Map::new();
        for (mode, size, load, r) in &rows {
            let e = by_mode.entry(mode.name().to_string()).or_insert_with(|| json!({}));
            e.as_object_mut().unwrap().insert(
                format!("{size}B@{load}"),
                json!({
                    "overhead_bytes": r.overhead_bytes,
                    "goodput_gbps": round6(r.goodput_gbps),
                    "goodput_fraction": round6(r.goodput_fraction),
                    "latency_p50_us": round6(r.latency_p50_us),
                    "latency_p99_us": round6(r.latency_p99_us),
                    "pipeline_ns": r.pipeline_ns,
                    "executed": r.executed,
                    "violations": r.violations,
                }),
            );
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!(self.0.name));
        summary.insert("seed".into(), json!(p.seed));
        summary.insert("modes".into(), Value::Object(by_mode));
        let f = |g: &dyn Fn(&BenchResult) -> f64| ColumnData::F64(rows.iter().map(|r| round6(g(&r.3))).collect());
        let table = Table::new("points")
            .with("mode", ColumnData::Str(rows.iter().map(|r| r.0.name().to_string()).collect()))
            .with("frame_bytes", ColumnData::U64(rows.iter().map(|r| r.1 as u64).collect()))
            .with("load", ColumnData::F64(rows.iter().map(|r| r.2).collect()))
            .with("wire_bytes", ColumnData::U64(rows.iter().map(|r| r.3.wire_bytes as u64).collect()))
            .with("overhead_bytes", ColumnData::U64(rows.iter().map(|r| r.3.overhead_bytes as u64).collect()))
            .with("goodput_gbps", f(&|r| r.goodput_gbps))
            .with("goodput_fraction", f(&|r| r.goodput_fraction))
            .with("latency_p50_us", f(&|r| r.latency_p50_us))
            .with("latency_p99_us", f(&|r| r.latency_p99_us))
            .with("pipeline_ns", ColumnData::U64(rows.iter().map(|r| r.3.pipeline_ns).collect()))
            .with("sent", ColumnData::U64(rows.iter().map(|r| r.3.sent).collect()))
            .with("received", ColumnData::U64(rows.iter().map(|r| r.3.received).collect()))
            .with("executed", ColumnData::U64(rows.iter().map(|r| r.3.executed).collect()));
        Ok(RunOutput { summary, tables: vec![table] })
    }
}

const OVERHEAD: Bench = Bench(
    Declaration::new(
        "switchvm.overhead",
        "Fig. 10: encapsulation bytes and goodput vs packet size (plain, default DPF, in-switch DPF, in-packet DPF)",
        &[&bench_axes("\"plain,default,in_switch,in_packet\"", "\"64,128,256,512,1024,1500\"", "\"1.0\"", "false"), BENCH_PARAMS],
    )
    .quick(&[("duration_us", "20.0"), ("sizes", "\"64,1500\"")]),
);

const LATENCY: Bench = Bench(
    Declaration::new(
        "switchvm.latency",
        "Fig. 8: latency vs offered load, SwitchVM's in-switch counter DPF against plain L3 forwarding",
        &[&bench_axes("\"plain,in_switch\"", "\"1500\"", "\"0.1,0.3,0.5,0.7,0.9,0.95\"", "true"), BENCH_PARAMS],
    )
    .quick(&[("duration_us", "50.0"), ("loads", "\"0.3,0.9\"")]),
);

pub fn experiments() -> Vec<Box<dyn Experiment>> {
    vec![
        Box::new(OVERHEAD),
        Box::new(LATENCY),
        Box::new(ResourcesExperiment),
        Box::new(crate::lb::LbExperiment),
        Box::new(crate::kvs::KvsExperiment),
        Box::new(crate::tenants::IsolationExperiment),
        Box::new(crate::tenants::TenantsExperiment),
    ]
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceParams {
    eus: u8,
    lanes: u8,
    mem_entries: u64,
    segments_per_lane: u64,
    direct_per_eu: u64,
    code_slots: u64,
    steering_entries: u64,
}

/// `switchvm.resources` (§5.1, Tables 3 and 4): the machine's declared blocks from
/// `Program::resources()`, summed into stages, SRAM, TCAM and stateful ALUs of a Tofino-1 pipe
/// (the paper's figures are in the reproduce manifest).
struct ResourcesExperiment;

const RESOURCES: Declaration = Declaration::new(
    "switchvm.resources",
    "§5.1, Tables 3-4: SwitchVM's stages, SRAM, TCAM and stateful ALUs on Tofino-1, from Program::resources()",
    &[&[
        ParamSpec::new("eus", "4", "execution units"),
        ParamSpec::new("lanes", "4", "lanes per EU"),
        ParamSpec::new("mem_entries", "45000", "32-bit cells per lane memory"),
        ParamSpec::new("segments_per_lane", "1500", "segment mappings (TCAM ranges) per lane"),
        ParamSpec::new("direct_per_eu", "45000", "direct mappings on lane 0 of each EU"),
        ParamSpec::new("code_slots", "4096", "in-switch instructions per stage kind"),
        ParamSpec::new("steering_entries", "32768", "steering rules"),
    ]],
);

impl Experiment for ResourcesExperiment {
    fn info(&self) -> ExperimentInfo {
        RESOURCES.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: ResourceParams = RESOURCES.resolve(overrides, quick)?;
        if !(1..=16).contains(&p.eus) {
            return Err(ExperimentError::bad_param("eus", p.eus, "1..=16 EUs"));
        }
        if !(1..=8).contains(&p.lanes) {
            return Err(ExperimentError::bad_param("lanes", p.lanes, "1..=8 lanes"));
        }
        let cfg = VmConfig {
            eus: p.eus,
            lanes: p.lanes,
            mem_entries: p.mem_entries as usize,
            segments_per_lane: p.segments_per_lane as usize,
            direct_per_eu: p.direct_per_eu as usize,
            code_slots: p.code_slots as usize,
            steering_entries: p.steering_entries as usize,
            ..VmConfig::default()
        };
        let prog = SwitchVmSwitch::new(Machine::new(cfg.clone()));
        let report = innet_dataplane::Program::resources(&prog);
        let fits = report.check(&innet_dataplane::state::SwitchLimits::tofino1());
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("switchvm.resources"));
        for (name, ours) in crate::resources::summary(&cfg) {
            summary.insert(name.into(), json!(round6(ours)));
        }
        summary.insert("fits_tofino1".into(), json!(fits.is_ok()));
        if let Err(e) = fits {
            summary.insert("fits_tofino1_error".into(), json!(e.to_string()));
        }
        let e = report.entries();
        let table = Table::new("blocks")
            .with("block", ColumnData::Str(e.iter().map(|b| b.name.clone()).collect()))
            .with("kind", ColumnData::Str(e.iter().map(|b| b.kind.as_str().to_string()).collect()))
            .with("entries", ColumnData::U64(e.iter().map(|b| b.entries).collect()))
            .with("key_bits", ColumnData::U64(e.iter().map(|b| b.key_bits as u64).collect()))
            .with("value_bits", ColumnData::U64(e.iter().map(|b| b.value_bits as u64).collect()))
            .with("sram_bits", ColumnData::U64(e.iter().map(|b| b.sram_bits()).collect()))
            .with("tcam_bits", ColumnData::U64(e.iter().map(|b| b.tcam_bits()).collect()));
        progress(1.0);
        Ok(RunOutput { summary, tables: vec![table] })
    }
}
