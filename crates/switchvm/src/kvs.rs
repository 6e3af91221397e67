//! `switchvm.kvs` (the paper's Fig. 7): a NetCache-like key-value cache built from DPFs on a
//! two-pipe switch. GETs run `kvs_get` in pipe 0; a hit returns to the client with the 12-byte
//! value on its stack, a miss chains (NEXT_PC) to the count-min DPF in pipe 1 and reaches the
//! server with the key's estimated count. The server reports the keys it sees with their counts;
//! every `collect_s` the control plane keeps the `cache_size` most frequent keys (cached keys
//! ranked by their hit counters, new ones by their sketch estimates): it unmaps the evicted keys'
//! tuples, maps the new keys' tuples (invalid until filled) and the server installs their values
//! with `kvs_update` packets through the switch. Hit counters and the sketch are cleared every
//! `clear_s`. The client sends GETs at a constant rate over a hot set of 128 keys that changes
//! every `change_s` (hot-in), and checks every value it gets.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use innet_dataplane::fabric::{HostSite, SwitchSite};
use innet_dataplane::{ControlPlane as SwitchControl, Ctx, SimSwitch};
use innet_sim::engine::{Node, Simulator};
use innet_registry::{ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, ParamSpec, Progress, RunOutput, Table};
use innet_sim::metrics::percentile;
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::PacketId;
use innet_sim::report::round6;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use serde_json::{json, Map};

use crate::control::ControlPlane;
use crate::isa::Pc;
use crate::machine::{DpfPacket, Machine, Permission, SteerAction, Unauthorized, VmConfig};
use crate::program::SwitchVmSwitch;
use crate::testbed::{internal, sorted, stack_of, tenant_packet, timeline, rack};

const TENANT: u32 = 9;
const GET_PORT: u16 = 11211;
const UPDATE_PORT: u16 = 11212;
const TOKEN_COLLECT: u64 = 1;
const TOKEN_CLEAR: u64 = 2;
const SKETCH_COLUMNS: u32 = 1024;

/// The value the server holds for a key (12 bytes), which the client checks.
pub fn value_of(key: u32) -> [u32; 3] {
    let mut x = key as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let mut out = [0u32; 3];
    for o in &mut out {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        *o = (z ^ (z >> 31)) as u32;
    }
    out
}

#[derive(Debug, Clone)]
pub struct KvsSpec {
    pub rate_rps: f64,
    pub duration_s: f64,
    pub hot_keys: u32,
    pub change_s: f64,
    pub cache_size: u32,
    pub collect_s: f64,
    pub clear_s: f64,
    pub server_us: f64,
    pub link_gbps: f64,
    pub pipeline_ns: u64,
    pub seed: u64,
}

/// What the server and the switch's control plane share (the tenant's control channel).
#[derive(Default)]
struct Mailbox {
    /// Keys the server saw on the miss path, with the largest sketch estimate seen.
    candidates: HashMap<u32, u32>,
    /// (key, index) the control plane mapped and the server must fill.
    to_install: Vec<(u32, u32)>,
}

// ---------------------------------------------------------------- client

struct KvsClient {
    nic: PortId,
    ip: u32,
    server: u32,
    get_pc: Pc,
    lanes: u8,
    gap_ps: u64,
    stop_ps: u64,
    hot_keys: u32,
    change_ps: u64,
    rng: ChaCha8Rng,
    sent_ps: Vec<u64>,
    keys: Vec<u32>,
    /// (latency µs, hit) per request; NaN = unanswered.
    latency_us: Vec<f64>,
    hit: Vec<bool>,
    wrong_values: u64,
    duplicates: u64,
}

impl Node for KvsClient {
    fn receive(&mut self, net: &mut Network, _me: NodeId, _in_port: PortId, id: PacketId) {
        let now = net.now_ps();
        let p = net.deliver(id);
        let Some(b) = p.payload_bytes.as_ref().filter(|b| b.len() >= 8) else { return };
        let req = u64::from_le_bytes(b[0..8].try_into().unwrap()) as usize;
        if req >= self.sent_ps.len() {
            return;
        }
        let key = self.keys[req];
        // A hit carries [key, v0, v1, v2] on its stack; the server's reply carries them in its payload.
        let stack = stack_of(&p, self.lanes);
        let (hit, got) = if stack.len() == 4 {
            (true, [stack[0], stack[1], stack[2], stack[3]])
        } else if b.len() >= 24 {
            let w = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
            (false, [w(8), w(12), w(16), w(20)])
        } else {
            self.wrong_values += 1;
            return;
        };
        let v = value_of(key);
        if got != [key, v[0], v[1], v[2]] {
            self.wrong_values += 1;
        }
        if self.latency_us[req].is_nan() {
            self.latency_us[req] = (now - self.sent_ps[req]) as f64 / 1e6;
            self.hit[req] = hit;
        } else {
            self.duplicates += 1;
        }
    }
    fn timer(&mut self, net: &mut Network, me: NodeId, _token: u64) {
        let now = net.now_ps();
        let req = self.sent_ps.len() as u64;
        let phase = (now / self.change_ps) as u32;
        let key = phase * self.hot_keys + 1 + self.rng.gen_range(0..self.hot_keys);
        let dpf = DpfPacket { init_pc: Some(self.get_pc), stack: vec![key], gas: 2, ..Default::default() };
        let mut p = tenant_packet(self.ip, self.server, (20_000 + (req % 20_000) as u16, GET_PORT), 16, TENANT, Some(&dpf), self.lanes).expect("a GET fits");
        p.payload_bytes = Some(Box::new(req.to_le_bytes().to_vec()));
        p.flow_id = req;
        let id = net.create_packet(p);
        net.transmit(self.nic, id);
        self.sent_ps.push(now);
        self.keys.push(key);
        self.latency_us.push(f64::NAN);
        self.hit.push(false);
        if now + self.gap_ps < self.stop_ps {
            net.schedule_timer(me, now + self.gap_ps, 0);
        }
    }
}

// ---------------------------------------------------------------- server

struct KvsServer {
    nic: PortId,
    ip: u32,
    lanes: u8,
    update_pc: Pc,
    service_ps: u64,
    busy_until_ps: u64,
    mailbox: Rc<RefCell<Mailbox>>,
    poll_ps: u64,
    stop_ps: u64,
    /// Replies waiting for their service to finish: token → (client, request payload, key).
    pending: HashMap<u64, (u32, Vec<u8>, u32)>,
    next_token: u64,
    served: u64,
    updates_sent: u64,
    updates_acked: u64,
}

impl Node for KvsServer {
    fn receive(&mut self, net: &mut Network, me: NodeId, _in_port: PortId, id: PacketId) {
        let p = net.deliver(id);
        let (_, dst_port) = p.l4.ports();
        let stack = stack_of(&p, self.lanes);
        if p.l4.ports().0 == UPDATE_PORT || dst_port == UPDATE_PORT {
            // kvs_update returned the packet as the ACK.
            self.updates_acked += 1;
            return;
        }
        // A GET that missed: [key, estimate] from the sketch in pipe 1.
        let (Some(&key), Some(&est)) = (stack.first(), stack.get(1)) else { return };
        // Keep the largest estimate seen (+1 for this request).
        {
            let mut mb = self.mailbox.borrow_mut();
            let c = mb.candidates.entry(key).or_insert(0);
            *c = (*c).max(est + 1);
        }
        let client = p.tunnel.as_ref().map(|t| t.outer.src).unwrap_or(p.ip.src);
        let payload = p.payload_bytes.as_ref().map(|b| b.to_vec()).unwrap_or_default();
        let start = net.now_ps().max(self.busy_until_ps);
        self.busy_until_ps = start + self.service_ps;
        self.next_token += 1;
        self.pending.insert(self.next_token, (client, payload, key));
        net.schedule_timer(me, self.busy_until_ps, self.next_token);
    }
    fn timer(&mut self, net: &mut Network, me: NodeId, token: u64) {
        if token == 0 {
            // Poll the control channel: fill the entries the control plane mapped.
            let work: Vec<(u32, u32)> = std::mem::take(&mut self.mailbox.borrow_mut().to_install);
            for (key, index) in work {
                let v = value_of(key);
                let dpf = DpfPacket { init_pc: Some(self.update_pc), stack: vec![v[2], v[1], v[0], 0x8000_0000 | index, index, key], gas: 1, ..Default::default() };
                // Addressed to ourselves: kvs_update returns it to the sender as the ACK.
                let p = tenant_packet(self.ip, self.ip, (UPDATE_PORT, UPDATE_PORT), 0, TENANT, Some(&dpf), self.lanes).expect("an update fits");
                let id = net.create_packet(p);
                net.transmit(self.nic, id);
                self.updates_sent += 1;
            }
            if net.now_ps() + self.poll_ps < self.stop_ps {
                net.schedule_timer(me, net.now_ps() + self.poll_ps, 0);
            }
            return;
        }
        let Some((client, req_payload, key)) = self.pending.remove(&token) else { return };
        self.served += 1;
        let v = value_of(key);
        let mut payload = req_payload;
        payload.resize(8, 0);
        for w in [key, v[0], v[1], v[2]] {
            payload.extend_from_slice(&w.to_le_bytes());
        }
        let mut p = tenant_packet(self.ip, client, (GET_PORT, 20_000), 24, TENANT, None, self.lanes).expect("a reply fits");
        p.payload_bytes = Some(Box::new(payload));
        let id = net.create_packet(p);
        net.transmit(self.nic, id);
    }
}

// ---------------------------------------------------------------- control plane

struct KvsControl {
    cp0: ControlPlane,
    cp1: ControlPlane,
    mailbox: Rc<RefCell<Mailbox>>,
    cache_size: u32,
    collect_ps: u64,
    clear_ps: u64,
    stop_ps: u64,
    /// key → index of the cached keys; free indexes.
    cached: HashMap<u32, u32>,
    free: Vec<u32>,
    installs: u64,
    evictions: u64,
    error: Option<String>,
}

impl KvsControl {
    fn collect(&mut self, sw: &mut SwitchVmSwitch) -> Result<(), String> {
        let m = &mut sw.machine;
        let hits_lm = &m.mem[3][0];
        let mut ranked: Vec<(u32, u32, bool)> = self
            .cached
            .iter()
            .map(|(&k, &i)| (hits_lm.translate(TENANT, i).map(|p| hits_lm.cells[p as usize]).unwrap_or(0), k, true))
            .collect();
        let cands = std::mem::take(&mut self.mailbox.borrow_mut().candidates);
        ranked.extend(cands.iter().filter(|(k, _)| !self.cached.contains_key(k)).map(|(&k, &c)| (c, k, false)));
        // Most frequent first; ties: cached keys stay, then the smaller key (determinism).
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(b.2.cmp(&a.2)).then(a.1.cmp(&b.1)));
        let keep: std::collections::HashSet<u32> = ranked.iter().take(self.cache_size as usize).map(|r| r.1).collect();
        // In key order: the freed indices go to the new keys, and a map's own order differs per
        // process (so would the update packets and, if one arrived late, a stale hit counter).
        let mut evict: Vec<u32> = self.cached.keys().copied().filter(|k| !keep.contains(k)).collect();
        evict.sort_unstable();
        for k in evict {
            let i = self.cached.remove(&k).unwrap();
            self.cp0.unmap_direct(m, TENANT, 0, k).map_err(|e| e.to_string())?;
            self.free.push(i);
            self.evictions += 1;
        }
        let mut new: Vec<u32> = keep.into_iter().filter(|k| !self.cached.contains_key(k)).collect();
        new.sort_unstable();
        let mut mb = self.mailbox.borrow_mut();
        for k in new {
            let Some(i) = self.free.pop() else { break };
            self.cp0.map_direct(m, TENANT, 0, 0, k).map_err(|e| e.to_string())?;
            self.cached.insert(k, i);
            mb.to_install.push((k, i));
            self.installs += 1;
        }
        let _ = &self.cp1;
        Ok(())
    }

    /// Hit counters (pipe 0, EU 3) and the sketch (pipe 1, EU 1 lanes 0–2) back to zero.
    fn clear(&mut self, sw: &mut SwitchVmSwitch) {
        let zero = |m: &mut Machine, eu: usize, lane: usize, n: u32| {
            let lm = &mut m.mem[eu][lane];
            for v in 0..n {
                if let Some(p) = lm.translate(TENANT, v) {
                    lm.cells[p as usize] = 0;
                }
            }
        };
        zero(&mut sw.machine, 3, 0, self.cache_size);
        for lane in 0..3 {
            zero(&mut sw.next_pipes[0], 1, lane, SKETCH_COLUMNS);
        }
        self.mailbox.borrow_mut().candidates.clear();
    }
}

impl SwitchControl<SwitchVmSwitch> for KvsControl {
    fn timer(&mut self, program: &mut SwitchVmSwitch, token: u64, ctx: &mut Ctx<'_>) {
        match token {
            TOKEN_COLLECT => {
                if let Err(e) = self.collect(program) {
                    self.error.get_or_insert(e);
                }
                if ctx.now_ps + self.collect_ps < self.stop_ps {
                    ctx.set_control_timer(ctx.now_ps + self.collect_ps, TOKEN_COLLECT);
                }
            }
            TOKEN_CLEAR => {
                self.clear(program);
                if ctx.now_ps + self.clear_ps < self.stop_ps {
                    ctx.set_control_timer(ctx.now_ps + self.clear_ps, TOKEN_CLEAR);
                }
            }
            _ => {}
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct KvsResult {
    pub sent: u64,
    pub answered: u64,
    pub hits: u64,
    pub wrong_values: u64,
    pub samples: Vec<(u64, f64, bool)>,
    pub installs: u64,
    pub evictions: u64,
    pub updates_acked: u64,
    pub handoffs: u64,
    pub violations: u64,
}

pub fn run(spec: &KvsSpec) -> Result<KvsResult, ExperimentError> {
    if !spec.cache_size.is_power_of_two() || spec.cache_size > 32_768 {
        return Err(ExperimentError::param("cache_size", format!("{} is not a power of two up to 32768 (the value arrays are segments)", spec.cache_size)));
    }
    if spec.hot_keys == 0 {
        return Err(ExperimentError::param("hot_keys", "must be at least 1"));
    }
    for (f, v) in [("rate", spec.rate_rps), ("change_s", spec.change_s), ("collect_s", spec.collect_s), ("clear_s", spec.clear_s), ("duration_s", spec.duration_s)] {
        if !(v > 0.0) {
            return Err(ExperimentError::param(f, format!("{v} must be positive")));
        }
    }
    let mut rack = rack(2, spec.link_gbps, spec.pipeline_ns, spec.seed)?;
    let (client_ip, server_ip) = (rack.ip(0), rack.ip(1));
    let cfg = VmConfig::default();
    let lanes = cfg.lanes;
    let perm = Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps: 0, app_id: 0 };
    // Pipe 1: the count-min sketch.
    let mut m1 = Machine::new(cfg.clone());
    let mut cp1 = ControlPlane::default();
    cp1.authorize(&mut m1, TENANT, perm.clone()).map_err(internal)?;
    for lane in 0..3 {
        cp1.alloc_segment(&mut m1, TENANT, 1, lane, 0, SKETCH_COLUMNS).map_err(internal)?;
    }
    let cm = cp1.deploy(&mut m1, &crate::asm::assemble(include_str!("../dpfs/countmin.dpf"), 4, lanes).map_err(internal)?).map_err(internal)?;
    // Pipe 0: the cache.
    let mut m0 = Machine::new(cfg);
    let mut cp0 = ControlPlane::default();
    cp0.authorize(&mut m0, TENANT, perm).map_err(internal)?;
    cp0.install_steering(&mut m0, TENANT, 0, SteerAction::ReturnToSender).map_err(internal)?;
    cp0.alloc_null_segment(&mut m0, TENANT, 0, 0).map_err(internal)?;
    for lane in 0..3 {
        cp0.alloc_segment(&mut m0, TENANT, 2, lane, 0, spec.cache_size).map_err(internal)?;
    }
    cp0.alloc_segment(&mut m0, TENANT, 3, 0, 0, spec.cache_size).map_err(internal)?;
    let get_text = include_str!("../dpfs/kvs_get.dpf").replace("next_pc 0x0002", &format!("next_pc {}", cm.init_pc.to_u16()));
    let get = cp0.deploy(&mut m0, &crate::asm::assemble(&get_text, 4, lanes).map_err(internal)?).map_err(internal)?;
    let upd = cp0.deploy(&mut m0, &crate::asm::assemble(include_str!("../dpfs/kvs_update.dpf"), 4, lanes).map_err(internal)?).map_err(internal)?;
    // kvs_put ships with the cache; this experiment's workload only reads.
    cp0.deploy(&mut m0, &crate::asm::assemble(include_str!("../dpfs/kvs_put.dpf"), 4, lanes).map_err(internal)?).map_err(internal)?;

    let stop_ps = (spec.duration_s * 1e12) as u64;
    let mailbox = Rc::new(RefCell::new(Mailbox::default()));
    let mut pipes = Some((m0, m1, cp0, cp1));
    let host = |h: HostSite<'_>| -> Box<dyn Node> {
        h.net.schedule_timer(h.node, 0, 0);
        if h.host_index == 0 {
            Box::new(KvsClient {
                nic: h.nic,
                ip: client_ip,
                server: server_ip,
                get_pc: get.init_pc,
                lanes,
                gap_ps: (1e12 / spec.rate_rps) as u64,
                stop_ps,
                hot_keys: spec.hot_keys,
                change_ps: (spec.change_s * 1e12) as u64,
                rng: innet_sim::rng::rng_for(spec.seed, "kvs-client"),
                sent_ps: Vec::new(),
                keys: Vec::new(),
                latency_us: Vec::new(),
                hit: Vec::new(),
                wrong_values: 0,
                duplicates: 0,
            })
        } else {
            Box::new(KvsServer {
                nic: h.nic,
                ip: server_ip,
                lanes,
                update_pc: upd.init_pc,
                service_ps: (spec.server_us * 1e6) as u64,
                busy_until_ps: 0,
                mailbox: mailbox.clone(),
                poll_ps: 1_000_000_000, // 1 ms: the control channel's latency
                stop_ps,
                pending: HashMap::new(),
                next_token: 0,
                served: 0,
                updates_sent: 0,
                updates_acked: 0,
            })
        }
    };
    let switch = |site: SwitchSite<'_>| -> Box<dyn Node> {
        let (m0, m1, cp0, cp1) = pipes.take().expect("a rack has one switch");
        let ctl = KvsControl {
            cp0,
            cp1,
            mailbox: mailbox.clone(),
            cache_size: spec.cache_size,
            collect_ps: (spec.collect_s * 1e12) as u64,
            clear_ps: (spec.clear_s * 1e12) as u64,
            stop_ps,
            cached: HashMap::new(),
            free: (0..spec.cache_size).rev().collect(),
            installs: 0,
            evictions: 0,
            error: None,
        };
        let mut sw = SimSwitch::with_control(SwitchVmSwitch::with_pipes(m0, vec![m1]), ctl, site.switch_index, site.routing.clone(), site.net, site.node);
        sw.start_control_timer(site.net, site.node, (spec.collect_s * 1e12) as u64, TOKEN_COLLECT);
        sw.start_control_timer(site.net, site.node, (spec.clear_s * 1e12) as u64, TOKEN_CLEAR);
        Box::new(sw)
    };
    let nodes = rack.nodes(host, switch);
    let (client_node, server_node, switch_node) = (rack.host_node(0), rack.host_node(1), rack.switch_node);
    let mut sim = Simulator::new(rack.net, nodes);
    sim.run_until(stop_ps + 100_000_000_000, &mut |_| {});
    let c = sim.node::<KvsClient>(client_node).unwrap();
    let samples: Vec<(u64, f64, bool)> = c.sent_ps.iter().zip(&c.latency_us).zip(&c.hit).filter(|((_, l), _)| !l.is_nan()).map(|((&t, &l), &h)| (t, l, h)).collect();
    let mut r = KvsResult {
        sent: c.sent_ps.len() as u64,
        answered: samples.len() as u64,
        hits: samples.iter().filter(|s| s.2).count() as u64,
        wrong_values: c.wrong_values,
        samples,
        ..Default::default()
    };
    let duplicates = c.duplicates;
    let srv = sim.node::<KvsServer>(server_node).unwrap();
    r.updates_acked = srv.updates_acked;
    let updates_sent = srv.updates_sent;
    let sw = sim.node::<SimSwitch<SwitchVmSwitch, KvsControl>>(switch_node).unwrap();
    if let Some(e) = &sw.control.error {
        return Err(internal(format!("cache control failed: {e}")));
    }
    r.installs = sw.control.installs;
    r.evictions = sw.control.evictions;
    r.handoffs = sw.program.pipe_handoffs;
    r.violations = sw.program.machine.violations_total() + sw.program.next_pipes[0].violations_total();
    let cons = sim.finish();
    if !cons.ok() {
        return Err(internal(format!("packet conservation: {cons}")));
    }
    if r.wrong_values != 0 {
        return Err(internal(format!("{} GETs returned a value the server does not hold", r.wrong_values)));
    }
    if r.answered != r.sent || duplicates != 0 {
        return Err(internal(format!("{} GETs sent, {} answered, {duplicates} duplicates", r.sent, r.answered)));
    }
    if r.violations != 0 {
        return Err(internal(format!("{} SwitchVM violations in a well-formed run", r.violations)));
    }
    if r.updates_acked != updates_sent {
        return Err(internal(format!("{updates_sent} cache updates sent, {} acknowledged", r.updates_acked)));
    }
    Ok(r)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    rate: f64,
    duration_s: f64,
    hot_keys: u32,
    change_s: f64,
    cache_size: u32,
    collect_s: f64,
    clear_s: f64,
    server_us: f64,
    bin_s: f64,
    link_gbps: f64,
    pipeline_ns: u64,
    seed: u64,
}


pub struct KvsExperiment;

const KVS: Declaration = Declaration::new(
    "switchvm.kvs",
    "Fig. 7: DPF key-value cache (get/put/update + count-min on the miss path in a second pipe) under hot-in: latency timeline",
    &[&[
        ParamSpec::new("rate", "10000.0", "GETs per second, evenly spaced (the paper's 10 Kpps)"),
        ParamSpec::new("duration_s", "40.0", "run length (s)"),
        ParamSpec::new("hot_keys", "128", "keys of each hot set (uniform within the set)"),
        ParamSpec::new("change_s", "10.0", "the hot set changes this often (s)"),
        ParamSpec::new("cache_size", "128", "cache entries (a power of two)"),
        ParamSpec::new("collect_s", "1.0", "the control plane re-ranks the keys this often (s)"),
        ParamSpec::new("clear_s", "5.0", "hit counters and the sketch are cleared this often (s)"),
        ParamSpec::new("server_us", "10.0", "the server's time per GET (µs)"),
        ParamSpec::new("bin_s", "0.25", "time bin of the latency timeline (s)"),
        ParamSpec::new("link_gbps", "100.0", "link bandwidth"),
        ParamSpec::new("pipeline_ns", "600", "switch pipeline latency per pass (ns)"),
        ParamSpec::new("seed", "1", "run seed"),
    ]],
)
.quick(&[("duration_s", "1.2"), ("change_s", "0.4"), ("collect_s", "0.05"), ("clear_s", "0.2"), ("bin_s", "0.02")]);

impl Experiment for KvsExperiment {
    fn info(&self) -> ExperimentInfo {
        KVS.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: Params = KVS.resolve(overrides, quick)?;
        if !(p.bin_s > 0.0) {
            return Err(ExperimentError::param("bin_s", "must be positive"));
        }
        let spec = KvsSpec {
            rate_rps: p.rate,
            duration_s: p.duration_s,
            hot_keys: p.hot_keys,
            change_s: p.change_s,
            cache_size: p.cache_size,
            collect_s: p.collect_s,
            clear_s: p.clear_s,
            server_us: p.server_us,
            link_gbps: p.link_gbps,
            pipeline_ns: p.pipeline_ns,
            seed: p.seed,
        };
        let r = run(&spec)?;
        progress(1.0);
        let lat: Vec<(u64, f64)> = r.samples.iter().map(|s| (s.0, s.1)).collect();
        let tl = timeline(&lat, p.bin_s, p.duration_s);
        let bins = tl.len();
        let mut hits_per = vec![0u64; bins];
        for s in &r.samples {
            let b = ((s.0 as f64 / 1e12) / p.bin_s) as usize;
            if b < bins && s.2 {
                hits_per[b] += 1;
            }
        }
        let hit_lat = sorted(r.samples.iter().filter(|s| s.2).map(|s| s.1).collect());
        let miss_lat = sorted(r.samples.iter().filter(|s| !s.2).map(|s| s.1).collect());
        let all = sorted(lat.iter().map(|s| s.1).collect());
        // After each change of the hot set: how long until a bin is ≥ 90 % hits again.
        let mut recovery = Vec::new();
        let mut t = p.change_s;
        while t < p.duration_s {
            let first = (t / p.bin_s).round() as usize;
            let back = (first..bins).find(|&b| tl[b].1 > 0 && hits_per[b] as f64 >= 0.9 * tl[b].1 as f64);
            recovery.push(back.map(|b| round6((b + 1) as f64 * p.bin_s - t)));
            t += p.change_s;
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("switchvm.kvs"));
        summary.insert("seed".into(), json!(p.seed));
        summary.insert(
            "cache".into(),
            json!({
                "requests": r.sent,
                "hit_ratio": round6(r.hits as f64 / r.answered.max(1) as f64),
                "p50_us": round6(percentile(&all, 50.0)),
                "p99_us": round6(percentile(&all, 99.0)),
                "hit_p50_us": round6(percentile(&hit_lat, 50.0)),
                "miss_p50_us": round6(percentile(&miss_lat, 50.0)),
                "installs": r.installs,
                "evictions": r.evictions,
                "updates_acked": r.updates_acked,
                "miss_chain_handoffs": r.handoffs,
                "wrong_values": r.wrong_values,
                "recovery_s": recovery,
            }),
        );
        let table = Table::new("timeline")
            .with("t_s", ColumnData::F64(tl.iter().map(|b| round6(b.0)).collect()))
            .with("requests", ColumnData::U64(tl.iter().map(|b| b.1).collect()))
            .with("hits", ColumnData::U64(hits_per.clone()))
            .with("p50_us", ColumnData::F64(tl.iter().map(|b| round6(b.2)).collect()))
            .with("p99_us", ColumnData::F64(tl.iter().map(|b| round6(b.3)).collect()));
        Ok(RunOutput { summary, tables: vec![table] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> KvsSpec {
        KvsSpec { rate_rps: 10_000.0, duration_s: 0.9, hot_keys: 128, change_s: 0.3, cache_size: 128, collect_s: 0.05, clear_s: 0.15, server_us: 10.0, link_gbps: 100.0, pipeline_ns: 600, seed: 5 }
    }

    #[test]
    fn hot_sets_get_cached_and_hits_are_faster_and_correct() {
        let r = run(&spec()).unwrap();
        assert_eq!(r.wrong_values, 0);
        assert!(r.hits as f64 > 0.6 * r.sent as f64, "{} hits of {}", r.hits, r.sent);
        // Every change of the hot set installs a new set and evicts the old one.
        assert!(r.installs >= 3 * 128, "{} installs", r.installs);
        assert!(r.evictions >= 2 * 128, "{} evictions", r.evictions);
        assert!(r.handoffs > 0, "misses chain to the sketch in pipe 1");
        let hit = sorted(r.samples.iter().filter(|s| s.2).map(|s| s.1).collect());
        let miss = sorted(r.samples.iter().filter(|s| !s.2).map(|s| s.1).collect());
        assert!(percentile(&hit, 50.0) * 2.0 < percentile(&miss, 50.0), "hit {} miss {}", percentile(&hit, 50.0), percentile(&miss, 50.0));
    }

    #[test]
    fn a_cache_smaller_than_the_hot_set_hits_proportionally_less() {
        let full = run(&spec()).unwrap();
        let small = run(&KvsSpec { cache_size: 32, ..spec() }).unwrap();
        assert!((small.hits as f64) < 0.5 * full.hits as f64, "{} vs {}", small.hits, full.hits);
    }
}
