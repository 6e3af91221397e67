//! `switchvm.isolation` (Fig. 9a) and `switchvm.tenants` (Fig. 9b): SwitchVM's performance
//! isolation between tenants and its tenant scalability.
//!
//! Isolation: four tenants, each with its own DPF (the private counter in-switch, the same
//! counter carried in the packet, the count-min sketch, LB1's hash steering), and a base flow
//! that invokes none, each at line rate on its own ports; the flows start one after another and
//! each flow's goodput is measured per time bin. An optional attacker tenant sends in-packet DPFs
//! that touch unmapped memory. Every tenant's memory must hold exactly what its own packets did.
//!
//! Tenants: a generator sends at line rate, `tenant_share` of it spread round robin over
//! `max_tenants` tenants each running the in-packet private counter, the rest base packets. The
//! control plane authorizes `batch` tenants per second (each with a private counter cell, a
//! direct mapping) up to `max_tenants`, then removes them at the same rate; packets of tenants
//! not (or no longer) authorized are dropped. The receiver measures goodput per bin, and checks
//! that every tenant's counts arrive as 1, 2, 3, …: no tenant ever saw another's counter.

use std::collections::BTreeMap;

use innet_dataplane::fabric::{HostSite, SwitchSite};
use innet_dataplane::{ControlPlane as SwitchControl, Ctx, SimSwitch};
use innet_sim::engine::{Node, Simulator};
use innet_registry::{ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, ParamSpec, Progress, RunOutput, Table};
use innet_sim::metrics::DropReason;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::{Encap, Ipv4, Packet, PacketId, Tunnel, IP_PROTO_UDP, L4};
use innet_sim::report::round6;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::control::ControlPlane;
use crate::isa::Pc;
use crate::machine::{DpfPacket, Machine, Permission, SteerAction, Unauthorized, VmConfig};
use crate::program::SwitchVmSwitch;
use crate::testbed::{internal, stack_of, tenant_packet, rack};

const COUNTER_ID: u32 = 5;
const UDP_HEADERS_BYTES: u32 = 14 + 20 + 8 + 4;

/// One flow of a generator: a template packet and, for counters, the id the stack carries.
#[derive(Clone)]
struct FlowTemplate {
    packet: Packet,
}

/// A line-rate generator cycling through its templates between `start_ps` and `stop_ps`.
struct Generator {
    nic: PortId,
    templates: Vec<FlowTemplate>,
    /// Send template i with weight: the sequence to cycle through (indexes into templates).
    pattern: Vec<u32>,
    /// For tenant templates: the tenant of pattern slot k rotates over this many tenants.
    rotate_tenants: u32,
    first_tenant: u32,
    next_tenant: u32,
    link_bps: f64,
    start_ps: u64,
    stop_ps: u64,
    k: usize,
    sent: u64,
}

impl Generator {
    fn next_packet(&mut self) -> Packet {
        let t = self.pattern[self.k % self.pattern.len()] as usize;
        self.k += 1;
        let mut p = self.templates[t].packet.clone();
        if self.rotate_tenants > 0 {
            if let Some(Tunnel { encap: Encap::Geneve { vni, .. }, .. }) = p.tunnel.as_mut() {
                if *vni != 0 {
                    *vni = self.first_tenant + self.next_tenant;
                    self.next_tenant = (self.next_tenant + 1) % self.rotate_tenants;
                }
            }
        }
        p
    }
}

impl Node for Generator {
    fn receive(&mut self, net: &mut Network, _me: NodeId, _in_port: PortId, id: PacketId) {
        net.drop_packet(id, DropReason::NoListener);
    }
    fn timer(&mut self, net: &mut Network, me: NodeId, _token: u64) {
        let p = self.next_packet();
        let gap_ps = (p.wire_bytes() as f64 * 8.0 / self.link_bps * 1e12).ceil() as u64;
        let id = net.create_packet(p);
        net.transmit(self.nic, id);
        self.sent += 1;
        let next = net.now_ps() + gap_ps;
        if next < self.stop_ps {
            net.schedule_timer(me, next.max(self.start_ps), 0);
        }
    }
}

/// Counts goodput (original frame bytes) per time bin, per class (VNI 0 = base), and checks the
/// counters tenants' packets carry.
struct Receiver {
    lanes: u8,
    bin_ps: u64,
    /// class → bytes per bin.
    bytes: BTreeMap<u32, Vec<u64>>,
    /// Tenant → last count its packets carried.
    last_count: std::collections::HashMap<u32, u32>,
    count_gaps: u64,
    received: u64,
    classify: fn(u32) -> u32,
}

impl Node for Receiver {
    fn receive(&mut self, net: &mut Network, _me: NodeId, _in_port: PortId, id: PacketId) {
        let now = net.now_ps();
        let p = net.deliver(id);
        self.received += 1;
        let vni = match &p.tunnel {
            Some(Tunnel { encap: Encap::Geneve { vni, .. }, .. }) => *vni,
            _ => 0,
        };
        let class = (self.classify)(vni);
        let bin = (now / self.bin_ps) as usize;
        let v = self.bytes.entry(class).or_default();
        if v.len() <= bin {
            v.resize(bin + 1, 0);
        }
        v[bin] += (p.payload_len + UDP_HEADERS_BYTES) as u64;
        let stack = stack_of(&p, self.lanes);
        if vni != 0 && stack.len() == 2 && stack[0] == COUNTER_ID {
            let last = self.last_count.entry(vni).or_insert(0);
            if stack[1] != *last + 1 {
                self.count_gaps += 1;
            }
            *last = stack[1];
        }
    }
}

fn counter_packet(src: u32, dst: u32, vni: u32, init_pc: Pc, in_packet: Option<&crate::machine::PacketCode>, frame_bytes: u32, lanes: u8) -> Result<Packet, ExperimentError> {
    let dpf = DpfPacket { init_pc: Some(init_pc), code: in_packet.cloned(), stack: vec![COUNTER_ID], gas: 2, ..Default::default() };
    tenant_packet(src, dst, (7000, 7001), frame_bytes - UDP_HEADERS_BYTES, vni, Some(&dpf), lanes)
}

fn plain_packet(src: u32, dst: u32, frame_bytes: u32) -> Packet {
    let mut p = Packet::new(Ipv4::new(src, dst, IP_PROTO_UDP), L4::Udp { src_port: 7000, dst_port: 7001 }, frame_bytes - UDP_HEADERS_BYTES);
    p.is_data = true;
    p
}

// ================================================================ isolation (Fig. 9a)

#[derive(Debug, Clone)]
pub struct IsolationSpec {
    pub stage_us: f64,
    pub frame_bytes: u32,
    pub link_gbps: f64,
    pub bin_us: f64,
    pub attacker: bool,
    pub pipeline_ns: u64,
    pub seed: u64,
}

pub const ISOLATION_FLOWS: [&str; 5] = ["counter_in_switch", "counter_in_packet", "countmin", "lb1_hash", "base"];

#[derive(Debug, Clone, Default)]
pub struct IsolationResult {
    /// flow → Gb/s per bin.
    pub gbps: BTreeMap<String, Vec<f64>>,
    pub bins_s: Vec<f64>,
    /// flow → (Gb/s alone, Gb/s with all five running).
    pub alone_vs_all: BTreeMap<String, (f64, f64)>,
    pub sent: Vec<u64>,
    pub attacker_violations: u64,
    pub attacker_delivered: u64,
}

pub fn isolation(spec: &IsolationSpec) -> Result<IsolationResult, ExperimentError> {
    if !(64 + 120..=1518).contains(&spec.frame_bytes) {
        return Err(ExperimentError::param("frame_bytes", format!("{} is not in 184..=1518 (in-packet code must fit)", spec.frame_bytes)));
    }
    let flows = ISOLATION_FLOWS.len() + usize::from(spec.attacker);
    let mut rack = rack(2 * flows as u32, spec.link_gbps, spec.pipeline_ns, spec.seed)?;
    let cfg = VmConfig::default();
    let lanes = cfg.lanes;
    let mut m = Machine::new(cfg);
    let mut cp = ControlPlane::default();
    let perm = Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps: 0, app_id: 0 };
    let asm = |name: &str, text: &str| crate::asm::assemble(text, 4, lanes).map_err(|e| internal(format!("{name}: {e}")));
    let counter = asm("counter", include_str!("../dpfs/counter.dpf"))?;
    let countmin = asm("countmin", include_str!("../dpfs/countmin.dpf"))?;
    let lb1 = asm("lb1_hash", include_str!("../dpfs/lb1_hash.dpf"))?;
    let d_counter = cp.deploy(&mut m, &counter).map_err(internal)?;
    let d_cm = cp.deploy(&mut m, &countmin).map_err(internal)?;
    let d_lb1 = cp.deploy(&mut m, &lb1).map_err(internal)?;
    let in_packet_counter = crate::asm::link_in_packet(&counter).map_err(internal)?;
    // Tenants 1–4 (and the attacker, 66).
    for t in 1..=4u32 {
        cp.authorize(&mut m, t, perm.clone()).map_err(internal)?;
    }
    cp.alloc_segment(&mut m, 1, 0, 0, 0, 64).map_err(internal)?;
    cp.alloc_segment(&mut m, 2, 0, 0, 0, 64).map_err(internal)?;
    for lane in 0..3 {
        cp.alloc_segment(&mut m, 3, 1, lane, 0, 1024).map_err(internal)?;
    }
    let recv_ips: Vec<u32> = (0..flows).map(|f| rack.ip(flows + f)).collect();
    let recv_ip = |f: usize| recv_ips[f];
    for i in 0..8 {
        cp.install_steering(&mut m, 4, i, SteerAction::Forward(recv_ip(3))).map_err(internal)?;
    }
    const ATTACKER: u32 = 66;
    let attack_code = if spec.attacker {
        cp.authorize(&mut m, ATTACKER, perm.clone()).map_err(internal)?;
        cp.alloc_segment(&mut m, ATTACKER, 0, 0, 0, 4).map_err(internal)?;
        // Writes far outside its 4-cell segment (where tenants 1 and 2 keep their counters).
        let text = "dpf attack\nprolog:\n    A0 = pop\neu0 s:\n    B0 = imm 1\n    mem0 faadd\nepilog out:\n    push A0\n";
        Some(crate::asm::link_in_packet(&crate::asm::assemble(text, 4, lanes).map_err(internal)?).map_err(internal)?)
    } else {
        None
    };
    let stage_ps = (spec.stage_us * 1e6) as u64;
    let stop_ps = stage_ps * ISOLATION_FLOWS.len() as u64 * 2;
    let mut machine = Some(m);
    let link_bps = spec.link_gbps * 1e9;
    // Host h < flows sends flow h; the packets first (building one can fail).
    let packets = (0..flows)
        .map(|h| {
            let (src, dst) = (rack.ip(h), recv_ip(h));
            Ok(match h {
                0 => counter_packet(src, dst, 1, d_counter.init_pc, None, spec.frame_bytes, lanes)?,
                1 => counter_packet(src, dst, 2, Pc::Packet(0), Some(&in_packet_counter), spec.frame_bytes, lanes)?,
                2 => {
                    let dpf = DpfPacket { init_pc: Some(d_cm.init_pc), stack: vec![0xfeed], gas: 2, ..Default::default() };
                    tenant_packet(src, dst, (7000, 7001), spec.frame_bytes - UDP_HEADERS_BYTES, 3, Some(&dpf), lanes)?
                }
                3 => {
                    let dpf = DpfPacket { init_pc: Some(d_lb1.init_pc), stack: vec![0xbeef], gas: 2, ..Default::default() };
                    tenant_packet(src, recv_ip(0), (7000, 7001), spec.frame_bytes - UDP_HEADERS_BYTES, 4, Some(&dpf), lanes)?
                }
                4 => plain_packet(src, dst, spec.frame_bytes),
                _ => {
                    let dpf = DpfPacket { init_pc: Some(Pc::Packet(0)), code: attack_code.clone(), stack: vec![1000], gas: 2, ..Default::default() };
                    tenant_packet(src, dst, (7000, 7001), spec.frame_bytes - UDP_HEADERS_BYTES, ATTACKER, Some(&dpf), lanes)?
                }
            })
        })
        .collect::<Result<Vec<Packet>, ExperimentError>>()?;
    let host = |site: HostSite<'_>| -> Box<dyn Node> {
        let h = site.host_index as usize;
        if h < flows {
            // Flow h starts at stage h (the attacker with the last flow) and all stop together.
            let start = stage_ps * (h.min(ISOLATION_FLOWS.len() - 1) as u64);
            site.net.schedule_timer(site.node, start, 0);
            let packet = packets[h].clone();
            Box::new(Generator { nic: site.nic, templates: vec![FlowTemplate { packet }], pattern: vec![0], rotate_tenants: 0, first_tenant: 0, next_tenant: 0, link_bps, start_ps: start, stop_ps, k: 0, sent: 0 })
        } else {
            Box::new(Receiver {
                lanes,
                bin_ps: (spec.bin_us * 1e6) as u64,
                bytes: BTreeMap::new(),
                last_count: Default::default(),
                count_gaps: 0,
                received: 0,
                classify: |_| 0,
            })
        }
    };
    let switch = |site: SwitchSite<'_>| -> Box<dyn Node> {
        Box::new(SimSwitch::new(SwitchVmSwitch::new(machine.take().expect("a rack has one switch")), site.switch_index, site.routing.clone(), site.net, site.node))
    };
    let nodes = rack.nodes(host, switch);
    let hosts = rack.topo.hosts.clone();
    let switch_node = rack.switch_node;
    let mut sim = Simulator::new(rack.net, nodes);
    sim.run_until(stop_ps + 1_000_000_000, &mut |_| {});
    let bins = (stop_ps as f64 / (spec.bin_us * 1e6)).ceil() as usize;
    let mut r = IsolationResult { bins_s: (0..bins).map(|b| b as f64 * spec.bin_us / 1e6).collect(), ..Default::default() };
    for f in 0..flows {
        let rx = sim.node::<Receiver>(hosts[flows + f]).unwrap();
        if rx.count_gaps != 0 {
            return Err(internal(format!("flow {f}: a tenant's counter skipped or repeated {} times", rx.count_gaps)));
        }
        let mut v: Vec<f64> = rx.bytes.get(&0).cloned().unwrap_or_default().iter().map(|&b| b as f64 * 8.0 / (spec.bin_us * 1e-6) / 1e9).collect();
        v.resize(bins, 0.0);
        let name = if f < ISOLATION_FLOWS.len() { ISOLATION_FLOWS[f].to_string() } else { "attacker".into() };
        if f < ISOLATION_FLOWS.len() {
            // At start: the middle of the stage the flow started in; all: the middle of the last
            // stage, when all five run.
            // Mean over the bins inside a stage, its first and last bins left out (the flow's
            // start and queue transients).
            let stage_mean = |stage: u64| {
                let bin_ps = spec.bin_us * 1e6;
                let first = ((stage_ps * stage) as f64 / bin_ps).ceil() as usize + 1;
                let last = ((stage_ps * (stage + 1)) as f64 / bin_ps).floor() as usize;
                let xs: Vec<f64> = (first..last.saturating_sub(1)).filter_map(|b| v.get(b).copied()).collect();
                xs.iter().sum::<f64>() / xs.len().max(1) as f64
            };
            let alone = stage_mean(f as u64);
            let all = stage_mean(ISOLATION_FLOWS.len() as u64 - 1);
            r.alone_vs_all.insert(name.clone(), (alone, all));
        } else {
            r.attacker_delivered = rx.received;
        }
        r.gbps.insert(name, v);
        r.sent.push(sim.node::<Generator>(hosts[f]).unwrap().sent);
    }
    let sw = sim.node::<SimSwitch<SwitchVmSwitch>>(switch_node).unwrap();
    let m = &sw.program.machine;
    r.attacker_violations = m.violations_total();
    // Every tenant's memory holds exactly what its own packets did.
    let cell = |t: u32, eu: usize, lane: usize, v: u32| m.mem[eu][lane].translate(t, v).map(|p| m.mem[eu][lane].cells[p as usize]);
    if cell(1, 0, 0, COUNTER_ID) != Some(r.sent[0] as u32) || cell(2, 0, 0, COUNTER_ID) != Some(r.sent[1] as u32) {
        return Err(internal(format!("counters {:?}/{:?} for {}/{} packets", cell(1, 0, 0, COUNTER_ID), cell(2, 0, 0, COUNTER_ID), r.sent[0], r.sent[1])));
    }
    let sketch_total: u64 = (0..1024).map(|v| cell(3, 1, 0, v).unwrap_or(0) as u64).sum();
    if sketch_total != r.sent[2] {
        return Err(internal(format!("the sketch row counts {sketch_total} for {} packets", r.sent[2])));
    }
    if spec.attacker && (r.attacker_delivered != 0 || r.attacker_violations != r.sent[5]) {
        return Err(internal(format!("attacker: {} delivered, {} violations for {} packets", r.attacker_delivered, r.attacker_violations, r.sent[5])));
    }
    let cons = sim.finish();
    if !cons.ok() {
        return Err(internal(format!("packet conservation: {cons}")));
    }
    Ok(r)
}

// ================================================================ tenants (Fig. 9b)

#[derive(Debug, Clone)]
pub struct TenantsSpec {
    pub max_tenants: u32,
    pub batch: u32,
    pub tenant_share: f64,
    pub frame_bytes: u32,
    pub link_gbps: f64,
    pub bin_s: f64,
    pub pipeline_ns: u64,
    pub seed: u64,
}

#[derive(Debug, Clone, Default)]
pub struct TenantsResult {
    pub bins_s: Vec<f64>,
    pub base_gbps: Vec<f64>,
    pub tenant_gbps: Vec<f64>,
    /// Tenants authorized at the end of each bin.
    pub authorized: Vec<u32>,
    pub peak_tenants: u32,
    pub unauthorized_drops: u64,
    pub count_gaps: u64,
    pub max_direct_in_use: usize,
}

const FIRST_TENANT: u32 = 1000;

/// Authorizes a batch per second up to the maximum, then removes them at the same rate.
struct TenantControl {
    cp: ControlPlane,
    max_tenants: u32,
    batch: u32,
    authorized: u32,
    removed: u32,
    period_ps: u64,
    history: Vec<(u64, u32)>,
    max_direct: usize,
    error: Option<String>,
}

impl SwitchControl<SwitchVmSwitch> for TenantControl {
    fn timer(&mut self, program: &mut SwitchVmSwitch, _token: u64, ctx: &mut Ctx<'_>) {
        let m = &mut program.machine;
        let perm = Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps: 0, app_id: 0 };
        if self.authorized < self.max_tenants {
            let upto = (self.authorized + self.batch).min(self.max_tenants);
            for t in self.authorized..upto {
                let tenant = FIRST_TENANT + t;
                let r = self.cp.authorize(m, tenant, perm.clone()).and_then(|_| self.cp.map_direct(m, tenant, 0, 0, COUNTER_ID));
                if let Err(e) = r {
                    self.error.get_or_insert(format!("tenant {tenant}: {e}"));
                }
            }
            self.authorized = upto;
        } else if self.removed < self.max_tenants {
            let upto = (self.removed + self.batch).min(self.max_tenants);
            for t in self.removed..upto {
                self.cp.deauthorize(m, FIRST_TENANT + t);
            }
            self.removed = upto;
        }
        self.max_direct = self.max_direct.max(m.mem[0][0].direct.len());
        self.history.push((ctx.now_ps, self.authorized - self.removed));
        if self.removed < self.max_tenants {
            ctx.set_control_timer(ctx.now_ps + self.period_ps, 0);
        }
    }
}

pub fn tenants(spec: &TenantsSpec) -> Result<TenantsResult, ExperimentError> {
    if spec.batch == 0 || spec.max_tenants == 0 {
        return Err(ExperimentError::param("batch", "batch and max_tenants must be at least 1"));
    }
    if !(0.0..=1.0).contains(&spec.tenant_share) {
        return Err(ExperimentError::param("tenant_share", format!("{} is not in [0, 1]", spec.tenant_share)));
    }
    if !(184..=1518).contains(&spec.frame_bytes) {
        return Err(ExperimentError::param("frame_bytes", format!("{} is not in 184..=1518 (in-packet code must fit)", spec.frame_bytes)));
    }
    let cfg = VmConfig::default();
    if spec.max_tenants as usize > cfg.direct_per_eu.min(cfg.permission_entries) {
        return Err(ExperimentError::param("max_tenants", format!("{} tenants exceed the switch's {} permission entries / {} direct mappings per EU", spec.max_tenants, cfg.permission_entries, cfg.direct_per_eu)));
    }
    let mut rack = rack(2, spec.link_gbps, spec.pipeline_ns, spec.seed)?;
    let lanes = cfg.lanes;
    let m = Machine::new(cfg);
    let counter = crate::asm::assemble(include_str!("../dpfs/counter.dpf"), 4, lanes).map_err(internal)?;
    let code = crate::asm::link_in_packet(&counter).map_err(internal)?;
    let (src, dst) = (rack.ip(0), rack.ip(1));
    let tenant_pkt = counter_packet(src, dst, FIRST_TENANT, Pc::Packet(0), Some(&code), spec.frame_bytes, lanes)?;
    let base_pkt = plain_packet(src, dst, spec.frame_bytes);
    // The pattern: out of every 20 packets, round(20 × share) are tenant packets.
    let tenant_slots = (spec.tenant_share * 20.0).round() as u32;
    let pattern: Vec<u32> = (0..20).map(|i| u32::from(i >= tenant_slots)).collect();
    let period_ps = 1_000_000_000_000u64;
    let phases = 2 * spec.max_tenants.div_ceil(spec.batch) as u64;
    let stop_ps = period_ps * (phases + 2);
    let mut machine = Some(m);
    let host = |site: HostSite<'_>| -> Box<dyn Node> {
        if site.host_index == 0 {
            site.net.schedule_timer(site.node, 0, 0);
            Box::new(Generator {
                nic: site.nic,
                templates: vec![FlowTemplate { packet: tenant_pkt.clone() }, FlowTemplate { packet: base_pkt.clone() }],
                pattern: pattern.clone(),
                rotate_tenants: spec.max_tenants,
                first_tenant: FIRST_TENANT,
                next_tenant: 0,
                link_bps: spec.link_gbps * 1e9,
                start_ps: 0,
                stop_ps,
                k: 0,
                sent: 0,
            })
        } else {
            Box::new(Receiver {
                lanes,
                bin_ps: (spec.bin_s * 1e12) as u64,
                bytes: BTreeMap::new(),
                last_count: Default::default(),
                count_gaps: 0,
                received: 0,
                classify: |vni| u32::from(vni != 0),
            })
        }
    };
    let switch = |site: SwitchSite<'_>| -> Box<dyn Node> {
        let ctl = TenantControl { cp: ControlPlane::default(), max_tenants: spec.max_tenants, batch: spec.batch, authorized: 0, removed: 0, period_ps, history: Vec::new(), max_direct: 0, error: None };
        let mut sw = SimSwitch::with_control(SwitchVmSwitch::new(machine.take().expect("a rack has one switch")), ctl, site.switch_index, site.routing.clone(), site.net, site.node);
        sw.start_control_timer(site.net, site.node, period_ps, 0);
        Box::new(sw)
    };
    let nodes = rack.nodes(host, switch);
    let (rx_node, sw_node) = (rack.host_node(1), rack.switch_node);
    let mut sim = Simulator::new(rack.net, nodes);
    sim.run_until(stop_ps + 1_000_000_000, &mut |_| {});
    let bins = (stop_ps as f64 / (spec.bin_s * 1e12)).ceil() as usize;
    let rx = sim.node::<Receiver>(rx_node).unwrap();
    let gbps = |class: u32| -> Vec<f64> {
        let mut v: Vec<f64> = rx.bytes.get(&class).cloned().unwrap_or_default().iter().map(|&b| b as f64 * 8.0 / spec.bin_s / 1e9).collect();
        v.resize(bins, 0.0);
        v
    };
    let sw = sim.node::<SimSwitch<SwitchVmSwitch, TenantControl>>(sw_node).unwrap();
    if let Some(e) = &sw.control.error {
        return Err(internal(format!("tenant control failed: {e}")));
    }
    let hist = &sw.control.history;
    let authorized: Vec<u32> = (0..bins)
        .map(|b| {
            let end = ((b + 1) as f64 * spec.bin_s * 1e12) as u64;
            hist.iter().take_while(|h| h.0 <= end).last().map(|h| h.1).unwrap_or(0)
        })
        .collect();
    let r = TenantsResult {
        bins_s: (0..bins).map(|b| b as f64 * spec.bin_s).collect(),
        base_gbps: gbps(0),
        tenant_gbps: gbps(1),
        peak_tenants: hist.iter().map(|h| h.1).max().unwrap_or(0),
        authorized,
        unauthorized_drops: sw.program.machine.violations.get(&crate::machine::Violation::Unauthorized).copied().unwrap_or(0),
        count_gaps: rx.count_gaps,
        max_direct_in_use: sw.control.max_direct,
    };
    if sw.program.machine.violations_total() != r.unauthorized_drops {
        return Err(internal(format!("violations other than unauthorized invocations: {:?}", sw.program.machine.violations)));
    }
    if r.count_gaps != 0 {
        return Err(internal(format!("{} tenant counts skipped or repeated: a tenant saw another's state", r.count_gaps)));
    }
    let cons = sim.finish();
    if !cons.ok() {
        return Err(internal(format!("packet conservation: {cons}")));
    }
    Ok(r)
}

// ================================================================ experiments


#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct IsolationParams {
    stage_us: f64,
    frame_bytes: u32,
    link_gbps: f64,
    bin_us: f64,
    attacker: bool,
    pipeline_ns: u64,
    seed: u64,
}

pub struct IsolationExperiment;

const ISOLATION: Declaration = Declaration::new(
    "switchvm.isolation",
    "Fig. 9a: four DPF flows and a base flow at line rate, started one by one: per-flow goodput, no interference",
    &[&[
        ParamSpec::new("stage_us", "400.0", "a new flow starts every stage (µs); the run lasts ten stages"),
        ParamSpec::new("frame_bytes", "1500", "frame size of every flow before encapsulation"),
        ParamSpec::new("link_gbps", "100.0", "link bandwidth"),
        ParamSpec::new("bin_us", "20.0", "goodput time bin (µs)"),
        ParamSpec::new("attacker", "false", "add a tenant whose in-packet DPF writes outside its memory (every packet must be dropped)"),
        ParamSpec::new("pipeline_ns", "600", "switch pipeline latency per pass (ns)"),
        ParamSpec::new("seed", "1", "run seed"),
    ]],
)
.quick(&[("stage_us", "100.0"), ("bin_us", "10.0")]);

impl Experiment for IsolationExperiment {
    fn info(&self) -> ExperimentInfo {
        ISOLATION.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: IsolationParams = ISOLATION.resolve(overrides, quick)?;
        if !(p.bin_us > 0.0 && p.stage_us >= 4.0 * p.bin_us) {
            return Err(ExperimentError::param("bin_us", "must be positive and at most a quarter of a stage"));
        }
        let r = isolation(&IsolationSpec { stage_us: p.stage_us, frame_bytes: p.frame_bytes, link_gbps: p.link_gbps, bin_us: p.bin_us, attacker: p.attacker, pipeline_ns: p.pipeline_ns, seed: p.seed })?;
        progress(1.0);
        let mut flows = Map::new();
        let mut worst: f64 = 0.0;
        for (name, (alone, all)) in &r.alone_vs_all {
            worst = worst.max((alone - all).abs() / alone.max(1e-9));
            flows.insert(name.clone(), json!({"at_start_gbps": round6(*alone), "all_five_gbps": round6(*all)}));
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("switchvm.isolation"));
        summary.insert("seed".into(), json!(p.seed));
        summary.insert("flows".into(), Value::Object(flows));
        summary.insert("max_interference_fraction".into(), json!(round6(worst)));
        if p.attacker {
            summary.insert("attacker".into(), json!({"delivered": r.attacker_delivered, "violations": r.attacker_violations}));
        }
        let mut t = Table::new("timeline").with("t_s", ColumnData::F64(r.bins_s.iter().map(|&x| round6(x)).collect()));
        for (name, v) in &r.gbps {
            t = t.with(&format!("{name}_gbps"), ColumnData::F64(v.iter().map(|&x| round6(x)).collect()));
        }
        Ok(RunOutput { summary, tables: vec![t] })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantsParams {
    max_tenants: u32,
    batch: u32,
    tenant_share: f64,
    frame_bytes: u32,
    link_gbps: f64,
    bin_s: f64,
    pipeline_ns: u64,
    seed: u64,
}

pub struct TenantsExperiment;

const TENANTS: Declaration = Declaration::new(
    "switchvm.tenants",
    "Fig. 9b: tenants added 350/s up to 30K then removed; unauthorized packets dropped; aggregate goodput follows",
    &[&[
        ParamSpec::new("max_tenants", "30000", "tenants added (each with its in-packet private counter and a direct-mapped cell)"),
        ParamSpec::new("batch", "350", "tenants authorized (then removed) per second"),
        ParamSpec::new("tenant_share", "0.8", "share of the generator's line rate spread over the tenants (the rest invokes no DPF)"),
        ParamSpec::new("frame_bytes", "1500", "frame size before encapsulation"),
        ParamSpec::new("link_gbps", "1.0", "link bandwidth (scaled down from 100 Gb/s: the shape depends only on the authorized share)"),
        ParamSpec::new("bin_s", "1.0", "goodput time bin (s)"),
        ParamSpec::new("pipeline_ns", "600", "switch pipeline latency per pass (ns)"),
        ParamSpec::new("seed", "1", "run seed"),
    ]],
)
.quick(&[("max_tenants", "1050"), ("link_gbps", "0.2")]);

impl Experiment for TenantsExperiment {
    fn info(&self) -> ExperimentInfo {
        TENANTS.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: TenantsParams = TENANTS.resolve(overrides, quick)?;
        if !(p.bin_s > 0.0) {
            return Err(ExperimentError::param("bin_s", "must be positive"));
        }
        let r = tenants(&TenantsSpec { max_tenants: p.max_tenants, batch: p.batch, tenant_share: p.tenant_share, frame_bytes: p.frame_bytes, link_gbps: p.link_gbps, bin_s: p.bin_s, pipeline_ns: p.pipeline_ns, seed: p.seed })?;
        progress(1.0);
        let peak_bin = r.authorized.iter().enumerate().max_by_key(|(_, a)| **a).map(|(i, _)| i).unwrap_or(0);
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("switchvm.tenants"));
        summary.insert("seed".into(), json!(p.seed));
        summary.insert(
            "tenants".into(),
            json!({
                "peak": r.peak_tenants,
                "direct_mappings_in_use_peak": r.max_direct_in_use,
                "unauthorized_drops": r.unauthorized_drops,
                "count_gaps": r.count_gaps,
                "tenant_gbps_at_peak": round6(r.tenant_gbps[peak_bin]),
                "base_gbps_mean": round6(r.base_gbps.iter().sum::<f64>() / r.base_gbps.len().max(1) as f64),
            }),
        );
        let t = Table::new("timeline")
            .with("t_s", ColumnData::F64(r.bins_s.iter().map(|&x| round6(x)).collect()))
            .with("tenants", ColumnData::U64(r.authorized.iter().map(|&x| x as u64).collect()))
            .with("tenant_gbps", ColumnData::F64(r.tenant_gbps.iter().map(|&x| round6(x)).collect()))
            .with("base_gbps", ColumnData::F64(r.base_gbps.iter().map(|&x| round6(x)).collect()));
        Ok(RunOutput { summary, tables: vec![t] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_do_not_interfere_and_the_attacker_is_contained() {
        let r = isolation(&IsolationSpec { stage_us: 100.0, frame_bytes: 1500, link_gbps: 100.0, bin_us: 10.0, attacker: true, pipeline_ns: 600, seed: 1 }).unwrap();
        for (name, (alone, all)) in &r.alone_vs_all {
            assert!(*alone > 80.0, "{name}: {alone} Gb/s alone");
            assert!((alone - all).abs() / alone < 0.02, "{name}: {alone} alone vs {all} with all");
        }
        assert_eq!(r.attacker_delivered, 0);
        assert!(r.attacker_violations > 100);
    }

    #[test]
    fn goodput_follows_the_authorized_tenants() {
        let r = tenants(&TenantsSpec { max_tenants: 700, batch: 350, tenant_share: 0.8, frame_bytes: 1500, link_gbps: 0.05, bin_s: 1.0, pipeline_ns: 600, seed: 1 }).unwrap();
        assert_eq!(r.peak_tenants, 700);
        assert!(r.unauthorized_drops > 0);
        // Before any authorization only base traffic passes; at the peak all of it.
        assert!(r.tenant_gbps[0] == 0.0 && r.base_gbps[0] > 0.0);
        let peak = r.authorized.iter().position(|&a| a == 700).unwrap();
        let line = 0.05 * 0.8;
        assert!(r.tenant_gbps[peak + 1] > 0.9 * line * 1500.0 / 1600.0, "{:?}", r.tenant_gbps);
        // Half the tenants → about half the tenant goodput.
        let half = r.authorized.iter().position(|&a| a == 350).unwrap();
        let ratio = r.tenant_gbps[half + 1] / r.tenant_gbps[peak + 1];
        assert!((ratio - 0.5).abs() < 0.1, "{ratio}: {:?}", r.tenant_gbps);
        assert_eq!(r.count_gaps, 0);
        assert_eq!(*r.tenant_gbps.last().unwrap(), 0.0);
    }
}
