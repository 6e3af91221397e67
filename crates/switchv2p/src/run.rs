//! One simulation of the virtual network under one scheme: build the fat-tree with gateways,
//! place VMs, attach the trace, run, check the invariants, and collect the metrics every
//! SwitchV2P experiment reports.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use innet_dataplane::fabric::{build_fabric, SwitchSite};
use innet_dataplane::{L3Forward, SimSwitch};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_sim::engine::Node;
use innet_registry::ExperimentError;
use innet_sim::host::{Host, HostConfig};
use innet_sim::metrics::{Conservation, DropReason};
use innet_sim::report::thread_cpu_s;
use innet_sim::routing::{EcmpHash, Ns3FlowHash, Routing};
use innet_sim::tcp::TcpConfig;
use innet_sim::time::{ps_to_us, PS_PER_MS, PS_PER_US};
use innet_sim::topology::{base_rtt_ps, Role, Topology, TopologySpec};
use innet_sim::vswitch::TunnelKind;
use innet_workloads::trace::TraceRow;
use rand::{Rng, SeedableRng};

use crate::bluebird::{BluebirdControl, BluebirdSettings, BluebirdTor};
use crate::cache::ArtifactIds;
use crate::controller::{ControllerSwitch, HighsCli, PlacementProblem, SolveStats};
use crate::directory::{Directory, Migration};
use crate::hosts::{FlowGateways, GatewayVswitch, HostSettings, V2pHostVswitch};
use crate::scheme::Scheme;
use crate::stats::V2pStats;
use crate::switch::{FabricFacts, V2pRole, V2pSwitch, V2pSwitchSettings};

/// The physical network and where gateways and VMs are.
#[derive(Debug, Clone)]
pub struct NetworkSpec {
    pub topo: TopologySpec,
    /// ToR indices that host gateways, and how many gateways each.
    pub gateway_tors: Vec<u32>,
    pub gateways_per_tor: u32,
    /// VMs are placed sequentially: VM v on server v / vms_per_server.
    pub vms_per_server: u32,
}

impl NetworkSpec {
    /// FT8-10K: 8 pods × 4 ToRs × 4 servers, 16 cores, 40 gateways on ToRs 0, 10, 20, 31
    /// (pods 0, 2, 5, 7), 80 VMs per server.
    pub fn ft8_10k() -> Self {
        NetworkSpec { topo: TopologySpec::ft8(), gateway_tors: vec![0, 10, 20, 31], gateways_per_tor: 10, vms_per_server: 80 }
    }

    /// FT16-400K: 50 pods × 8 ToRs × 32 servers, 16 cores, 250 gateways on ToRs 8x+7 for even x.
    pub fn ft16_400k() -> Self {
        NetworkSpec {
            topo: TopologySpec::ft16_400k(),
            gateway_tors: (0..50).step_by(2).map(|x| x * 8 + 7).collect(),
            gateways_per_tor: 10,
            vms_per_server: 32,
        }
    }

    /// The network a `topology` parameter names: ft8_10k or ft16_400k.
    pub fn by_name(name: &str) -> Result<Self, String> {
        match name {
            "ft8_10k" => Ok(NetworkSpec::ft8_10k()),
            "ft16_400k" => Ok(NetworkSpec::ft16_400k()),
            other => Err(format!("expected ft8_10k or ft16_400k, got '{other}'")),
        }
    }

    pub fn vm_count(&self) -> u64 {
        self.topo.num_servers() as u64 * self.vms_per_server as u64
    }
}

/// What each trace row is on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transport {
    /// One TCP connection per row, sending `size_bytes`.
    Tcp,
    /// One UDP packet per row with this payload (the artifact's UDP mode: the size column is
    /// ignored); rows with the same flow id form one flow for FCT.
    UdpPacket { payload_bytes: u32 },
}

/// Everything one run needs besides the scheme.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub net: NetworkSpec,
    pub rows: Arc<Vec<TraceRow>>,
    pub transport: Transport,
    pub tcp: TcpConfig,
    /// Total cache (all caching switches together) as a fraction of the VM address space.
    pub cache_fraction: f64,
    /// (VM, time, destination server index).
    pub migrations: Vec<(u32, u64, u32)>,
    pub p_learn: f64,
    pub gateway_processing_ps: u64,
    pub misdelivery_delay_ps: u64,
    /// OnDemand: VMs every host holds a mapping for at the start.
    pub ondemand_preinstalled: Vec<u32>,
    pub ondemand_update_delay_ps: u64,
    /// Timestamp vector: minimum time between two invalidations to one switch; `None` is the
    /// base RTT (the paper's text), `u64::MAX` never resets (the artifact's bit array).
    pub invalidation_spacing_ps: Option<u64>,
    pub promote_requires_access_bit: bool,
    pub bluebird: BluebirdSettings,
    /// Entries written into switch caches before the run: (switch index, VM, server index).
    /// For warm-cache studies, and for tests that plant a wrong mapping on purpose.
    pub preload: Vec<(u32, u32, u32)>,
    /// Wall-clock limit of one Controller solve (HiGHS keeps its best solution when it hits it).
    pub controller_time_limit_s: f64,
    /// The tunnel hosts push: the artifact's IP-in-IP with zero-byte tags (default, as the
    /// paper's simulations), or Geneve with SwitchV2P's options on the wire.
    pub tunnel: TunnelKind,
    /// How switches hash flows onto equal-cost paths ([`Ecmp`]). The ILP controller's path walk
    /// does not see this.
    pub ecmp: Ecmp,
    /// What the direct-mapped caches' index hashes ([`CacheIndex`]).
    pub cache_index: CacheIndex,
    pub stop_ps: u64,
    pub seed: u64,
}

/// What the direct-mapped caches (SwitchV2P's, LocalLearning's, GwCache's) hash to find a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheIndex {
    /// The VIP (innet's default): CRC-32 of its four bytes, after the switch's salt if it has one.
    Vip,
    /// The ns-3 artifact's `P4Cache::GetIndex`: CRC-32 of the VM's number in the artifact's own
    /// numbering ([`artifact_vm_ids`]) and the salt, two little-endian words; GwCache's salt is
    /// then 0 on every gateway ToR, as the artifact's (`RandomHashFunction=false`).
    Artifact,
}

/// The ns-3 artifact's number of every VM (`SimulationBase::AssignIds`, which its VIPs are):
/// ToR by ToR, the VMs of the ToR's servers in server order, then one number for each gateway on
/// that ToR. `server_tor[s]` is server `s`'s ToR; VM `v` lives on server `v / vms_per_server`.
pub fn artifact_vm_ids(server_tor: &[u32], vms_per_server: u32, gateways_on_tor: impl Fn(u32) -> u32) -> Vec<u32> {
    let mut servers: Vec<u32> = (0..server_tor.len() as u32).collect();
    servers.sort_by_key(|&s| (server_tor[s as usize], s));
    let mut ids = vec![0u32; server_tor.len() * vms_per_server as usize];
    let mut next = 0u32;
    for rack in servers.chunk_by(|&a, &b| server_tor[a as usize] == server_tor[b as usize]) {
        for v in rack.iter().flat_map(|&s| s * vms_per_server..(s + 1) * vms_per_server) {
            ids[v as usize] = next;
            next += 1;
        }
        next += gateways_on_tor(server_tor[rack[0] as usize]);
    }
    ids
}

/// How switches hash flows onto equal-cost paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecmp {
    /// Each switch hashes with its own seed (a ToR's spine choice and the spine's core choice
    /// are independent): innet's default.
    Independent,
    /// Every switch hashes with the same seed, so a ToR's spine choice and the spine's core
    /// choice are the same function of the flow: the artifact's correlation (only cores 0, 5, 10
    /// and 15 carry inter-pod traffic on FT8-10K), on innet's hash.
    Correlated,
    /// The artifact's own function: ns-3's per-flow hash of the artifact's addresses
    /// ([`artifact_flow_hash`]), so every flow takes the path it takes in the ns-3 program.
    Artifact,
}

/// ns-3's per-flow ECMP hash over the addresses the SwitchV2P artifact gives each node
/// (`ip-utils.cc`): a host in pod p under ToR offset r at slot i (servers first, then the
/// gateways, as the artifact appends them) is (p+1).r.i.1, a ToR (P+p+1).0.r.2, a spine
/// (2P+p+1).s.0.1 and core c 255.c.0.1, with P pods. Encapsulated packets hash as the artifact's
/// UDP 667 → 667 tunnel. Packets switches send (learning, invalidations) carry a switch's address,
/// which in ns-3 is the one of the interface a packet leaves by; here the switch's one address
/// above stands for it: those few packets may take other paths than in the artifact.
pub fn artifact_flow_hash(topo: &Topology) -> Ns3FlowHash {
    let spec = &topo.spec;
    let (pods, tpp, spp) = (spec.pods.max(1), spec.tors_per_pod.max(1), spec.spines_per_pod.max(1));
    let mut names = std::collections::HashMap::new();
    let mut spines_seen = 0u32;
    for n in &topo.nodes {
        let name = match n.role {
            Role::Host => {
                let tor = n.tor.unwrap_or(0);
                format!("{}.{}.{}.1", tor / tpp + 1, tor % tpp, (n.ip & 0xFF).saturating_sub(1))
            }
            Role::Tor => {
                let tor = n.tor.unwrap_or(0);
                format!("{}.0.{}.2", pods + tor / tpp + 1, tor % tpp)
            }
            Role::Spine => {
                let s = spines_seen % spp;
                spines_seen += 1;
                format!("{}.{}.0.1", 2 * pods + n.pod + 1, s)
            }
            Role::Core => format!("255.{}.0.1", n.switch_index.unwrap_or(0)),
        };
        names.insert(n.ip, name);
    }
    Ns3FlowHash::new(names, (17, 667, 667))
}

impl RunSpec {
    pub fn new(net: NetworkSpec, rows: impl Into<Arc<Vec<TraceRow>>>, transport: Transport, tcp: TcpConfig) -> Self {
        RunSpec {
            net,
            rows: rows.into(),
            transport,
            tcp,
            cache_fraction: 0.5,
            migrations: Vec::new(),
            p_learn: 0.005,
            gateway_processing_ps: 40 * PS_PER_US,
            misdelivery_delay_ps: 10 * PS_PER_US,
            ondemand_preinstalled: Vec::new(),
            ondemand_update_delay_ps: PS_PER_MS,
            invalidation_spacing_ps: None,
            promote_requires_access_bit: false,
            bluebird: BluebirdSettings::default(),
            controller_time_limit_s: 60.0,
            preload: Vec::new(),
            tunnel: TunnelKind::IpInIpTagged,
            ecmp: Ecmp::Independent,
            cache_index: CacheIndex::Vip,
            stop_ps: 2_000 * PS_PER_MS,
            seed: 1,
        }
    }
}

/// The results of one run. Serialisable without loss (floats as their bits), so a sweep's runs
/// can be simulated as separate tasks and merged into exactly the output of one process
/// ([`crate::experiments::split`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SchemeResult {
    pub scheme: Scheme,
    pub stats: V2pStats,
    /// Per trace flow (rows grouped by flow id): FCT and first-packet latency, µs.
    pub flows: u64,
    pub completed_flows: u64,
    #[serde(with = "innet_registry::exact_f64")]
    pub fct_mean_us: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub fct_p99_us: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub fpl_mean_us: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub fpl_p99_us: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub avg_packet_latency_us: f64,
    #[serde(with = "innet_registry::exact_f64")]
    pub avg_packet_hops: f64,
    /// Per switch (switch index order): name, pod, role, layer, bytes and packets processed.
    pub switches: Vec<SwitchRecord>,
    #[serde(with = "ConservationDef")]
    pub conservation: Conservation,
    pub drops: Vec<(String, u64)>,
    pub cache_slots_per_switch: u32,
    pub caching_switches: u32,
    pub events: u64,
    #[serde(with = "innet_registry::exact_f64")]
    pub simulated_us: f64,
    /// The Controller's solver statistics.
    pub solver: Option<SolveStats>,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(remote = "Conservation")]
struct ConservationDef {
    created: u64,
    delivered: u64,
    dropped: u64,
    live: u64,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SwitchRecord {
    pub name: String,
    pub pod: u32,
    pub role: V2pRole,
    pub bytes: u64,
    pub packets: u64,
    pub hits: u64,
    pub first_hits: u64,
}

impl SchemeResult {
    pub fn hits_by_layer(&self, first: bool) -> [(&'static str, u64); 3] {
        let mut out = [("core", 0u64), ("spine", 0), ("tor", 0)];
        for s in &self.switches {
            let n = if first { s.first_hits } else { s.hits };
            let i = match s.role.layer() {
                "core" => 0,
                "spine" => 1,
                _ => 2,
            };
            out[i].1 += n;
        }
        out
    }

    pub fn total_switch_bytes(&self) -> u64 {
        self.switches.iter().map(|s| s.bytes).sum()
    }
}

/// Cache slots per caching switch for a scheme: the total (fraction × address space) split
/// equally over the switches that cache; at least one slot when the total is positive.
pub fn cache_slots(scheme: Scheme, total_entries: f64, topo: &Topology, gateway_tors: usize) -> (u32, u32) {
    let caching = match scheme.protocol() {
        Scheme::GwCache => gateway_tors as u32,
        Scheme::Bluebird => topo.tors.len() as u32,
        s if s.controller_interval_ps().is_some() => topo.switches.len() as u32,
        s if s.uses_switch_cache() => topo.switches.len() as u32,
        _ => 0,
    };
    if caching == 0 || total_entries <= 0.0 {
        return (0, caching);
    }
    let per = (total_entries / caching as f64).floor().clamp(1.0, u32::MAX as f64) as u32;
    (per, caching)
}

/// The SwitchV2P program as `run_scheme` builds it on a gateway ToR of `ns` (the role whose
/// tables are largest; the P4 program is one for every role) at `cache_fraction` of the address
/// space, or `slots_override` slots per switch: what the resource report (Table 6) describes.
/// Returns the program, its slots per switch and the number of caching switches.
pub fn resource_model(ns: &NetworkSpec, cache_fraction: f64, slots_override: Option<u32>) -> Result<(V2pSwitch, u32, u32), ExperimentError> {
    let extra: Vec<(u32, u32)> = ns.gateway_tors.iter().map(|&t| (t, ns.gateways_per_tor)).collect();
    let topo = Topology::build(&ns.topo, &extra)?;
    let (slots, caching) = cache_slots(Scheme::SwitchV2P, cache_fraction * ns.vm_count() as f64, &topo, ns.gateway_tors.len());
    let slots = slots_override.unwrap_or(slots);
    let mut facts = FabricFacts::default();
    for (i, &h) in topo.hosts.iter().enumerate() {
        let node = &topo.nodes[h as usize];
        if (i as u32) < topo.num_servers {
            let tor = topo.nodes[topo.tors[node.tor.expect("hosts hang off a ToR") as usize] as usize].ip;
            facts.tor_ip_of_server.insert(node.ip, tor);
        } else {
            facts.gateways.insert(node.ip);
        }
    }
    let num_switches = topo.switches.len();
    let cfg = V2pSwitchSettings {
        scheme: Scheme::SwitchV2P,
        role: V2pRole::GatewayTor,
        switch_id: 0,
        switch_ip: 0,
        cache_slots: slots,
        hash_salt: 0,
        artifact_ids: None,
        p_learn: 0.005,
        promote_requires_access_bit: false,
        invalidation_spacing_ps: base_rtt_ps(&ns.topo),
        num_switches,
    };
    // A gateway ToR's ports: its servers, its gateways and one uplink per spine of the pod.
    let ports = (ns.topo.servers_per_tor + ns.gateways_per_tor + ns.topo.spines_per_pod) as usize;
    let host_ports = (0..ports).map(|p| (p < ns.topo.servers_per_tor as usize).then_some(p as u32)).collect();
    let sw = V2pSwitch::new(cfg, Arc::new(facts), V2pStats::shared(num_switches), host_ports);
    Ok((sw, slots, caching))
}

fn roles(topo: &Topology, gateway_tors: &HashSet<u32>) -> Vec<V2pRole> {
    let gw_pods: HashSet<u32> = gateway_tors.iter().map(|&t| topo.nodes[topo.tors[t as usize] as usize].pod).collect();
    topo.switches
        .iter()
        .map(|&n| {
            let node = &topo.nodes[n as usize];
            match node.role {
                Role::Tor if gateway_tors.contains(&node.tor.expect("ToRs have an index")) => V2pRole::GatewayTor,
                Role::Tor => V2pRole::Tor,
                Role::Spine if gw_pods.contains(&node.pod) => V2pRole::GatewaySpine,
                Role::Spine => V2pRole::Spine,
                _ => V2pRole::Core,
            }
        })
        .collect()
}

/// What one run cost the process: where its time went and how much simulation it did
/// (`v2p_bench` reports it; the summary stays as it is). Nothing in it changes an answer.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RunCost {
    /// Wall seconds from the start of [`run_scheme`] to the start of the event loop: topology,
    /// routing, trace rows to flows, switches and hosts.
    pub build_s: f64,
    /// Wall seconds in the event loop (`run_until`), the Controller's rounds excluded.
    pub loop_s: f64,
    /// CPU seconds of this thread in the event loop (the loop's time per core).
    pub loop_cpu_s: f64,
    /// Wall seconds in the Controller's rounds (reading the switches, the solver, installing).
    pub controller_s: f64,
    /// Of `controller_s`, the solver's own wall time (HiGHS, a child process).
    pub solver_s: f64,
    pub events: u64,
    /// Switch hops of every delivered packet, summed (the engine's `Metrics::hops_sum`: the
    /// packet-hops of `innet bench sim`).
    pub packet_hops: u64,
    pub delivered_packets: u64,
}

/// Run `spec` under `scheme` (a built-in scheme or a [`crate::scheme::CacheScheme`]).
pub fn run_scheme(spec: &RunSpec, scheme: Scheme, progress: &mut dyn FnMut(f64)) -> Result<SchemeResult, ExperimentError> {
    run_scheme_costed(spec, scheme, progress).map(|(r, _)| r)
}

/// [`run_scheme`], and what the run cost.
pub fn run_scheme_costed(spec: &RunSpec, scheme: Scheme, progress: &mut dyn FnMut(f64)) -> Result<(SchemeResult, RunCost), ExperimentError> {
    if let Scheme::Custom(c) = scheme {
        if !c.protocol.uses_switch_cache() {
            return Err(ExperimentError::Input(format!(
                "scheme '{}': its protocol {} keeps no switch cache; expected locallearning, gwcache or a switchv2p protocol",
                c.name, c.protocol
            )));
        }
    }
    let t_start = std::time::Instant::now();
    let mut cost = RunCost::default();
    let ns = &spec.net;
    if ns.gateway_tors.is_empty() || ns.gateways_per_tor == 0 {
        return Err(ExperimentError::param("gateways", "at least one gateway is needed"));
    }
    let num_tors = ns.topo.num_tors();
    if let Some(&t) = ns.gateway_tors.iter().find(|&&t| t >= num_tors) {
        return Err(ExperimentError::param("gateway_tors", format!("ToR {t} does not exist (the topology has {num_tors} ToRs)")));
    }
    if ns.vms_per_server == 0 {
        return Err(ExperimentError::param("vms_per_server", "expected at least 1"));
    }
    let extra: Vec<(u32, u32)> = ns.gateway_tors.iter().map(|&t| (t, ns.gateways_per_tor)).collect();
    let topo = Topology::build(&ns.topo, &extra)?;
    let servers = topo.num_servers;
    let vm_count = servers as u64 * ns.vms_per_server as u64;
    let server_pips: Vec<u32> = (0..servers).map(|s| topo.nodes[topo.hosts[s as usize] as usize].ip).collect();
    let server_ip = |s: u32| server_pips[s as usize];
    let initial: Vec<u32> = (0..vm_count as u32).map(|vm| server_ip(vm / ns.vms_per_server)).collect();
    let mut migrations = Vec::new();
    for &(vm, at_ps, to_server) in &spec.migrations {
        if to_server >= servers {
            return Err(ExperimentError::param("migrate_to_server", format!("server {to_server} does not exist ({servers} servers)")));
        }
        migrations.push(Migration { vm, at_ps, to_pip: server_ip(to_server) });
    }
    let dir = Arc::new(Directory::new(initial, migrations).map_err(|m| ExperimentError::param("migrate_vm", m))?);
    let gateways: Vec<u32> = topo.hosts[servers as usize..].iter().map(|&h| topo.nodes[h as usize].ip).collect();
    let gateways = Arc::new(gateways);

    // Trace rows → flows (sorted by start so flow index = row index, as the driver numbers them).
    let mut rows: Vec<TraceRow> = spec.rows.as_ref().clone();
    rows.sort_by_key(|r| r.ts_ns);
    for (i, r) in rows.iter().enumerate() {
        for (what, vm) in [("src_vm", r.src_vm), ("dst_vm", r.dst_vm)] {
            if vm as u64 >= vm_count {
                return Err(ExperimentError::Input(format!(
                    "trace row {}: {what} {vm} does not exist (the network has {vm_count} VMs)",
                    i + 1
                )));
            }
        }
    }
    let mut first_start: HashMap<u64, u64> = HashMap::new();
    for r in &rows {
        first_start.entry(r.flow_id).or_insert(r.ts_ns * 1000);
    }
    let flows: Vec<FlowSpec> = rows
        .iter()
        .map(|r| {
            let (kind, size) = match spec.transport {
                Transport::Tcp => (FlowKind::Tcp, r.size_bytes.max(1)),
                Transport::UdpPacket { payload_bytes } => {
                    (FlowKind::Udp { payload_bytes, interval_ps: 0 }, payload_bytes as u64)
                }
            };
            FlowSpec {
                src_host: r.src_vm / ns.vms_per_server,
                dst_host: r.dst_vm / ns.vms_per_server,
                src_ip: Directory::vip(r.src_vm),
                dst_ip: Directory::vip(r.dst_vm),
                start_ps: r.ts_ns * 1000,
                size_bytes: size,
                kind,
            }
        })
        .collect();
    let last_start_ps = flows.last().map(|f| f.start_ps).unwrap_or(0);

    let gateway_tor_set: HashSet<u32> = ns.gateway_tors.iter().copied().collect();
    let roles = roles(&topo, &gateway_tor_set);
    let mut facts = FabricFacts {
        gateways: gateways.iter().copied().collect(),
        tor_ip_of_server: Default::default(),
        flow_start_ps: rows.iter().map(|r| first_start[&r.flow_id]).collect(),
        flow_src_vip: rows.iter().map(|r| Directory::vip(r.src_vm)).collect(),
        directory: Some(dir.clone()),
    };
    for s in 0..servers {
        let h = &topo.nodes[topo.hosts[s as usize] as usize];
        let tor = topo.nodes[topo.tors[h.tor.expect("hosts hang off a ToR") as usize] as usize].ip;
        facts.tor_ip_of_server.insert(h.ip, tor);
    }
    let facts = Arc::new(facts);
    let stats = V2pStats::shared(topo.switches.len());
    let total_entries = spec.cache_fraction * vm_count as f64;
    let (slots, caching) = cache_slots(scheme, total_entries, &topo, ns.gateway_tors.len());
    let invalidation_spacing_ps = spec.invalidation_spacing_ps.unwrap_or_else(|| base_rtt_ps(&ns.topo));
    let server_ips: HashSet<u32> = (0..servers).map(server_ip).collect();
    let mut salt_rng = rand_chacha::ChaCha8Rng::seed_from_u64(spec.seed ^ 0x5a17);
    let salts: Vec<u32> = (0..topo.switches.len()).map(|_| salt_rng.gen()).collect();
    let artifact_ids = (spec.cache_index == CacheIndex::Artifact).then(|| {
        let server_tor: Vec<u32> = (0..servers).map(|s| topo.nodes[topo.hosts[s as usize] as usize].tor.expect("hosts hang off a ToR")).collect();
        let on_tor = |t: u32| if gateway_tor_set.contains(&t) { ns.gateways_per_tor } else { 0 };
        ArtifactIds::new(crate::directory::VIP_BASE, artifact_vm_ids(&server_tor, ns.vms_per_server, on_tor))
    });
    // The artifact's LocalLearning salts every switch (`RandomHashFunction=true`); its SwitchV2P
    // and GwCache do not.
    let salted = match scheme.protocol() {
        Scheme::LocalLearning => true,
        Scheme::GwCache => artifact_ids.is_none(),
        _ => !scheme.is_switchv2p(),
    };
    let topo_nodes = topo.nodes.clone();
    let num_switches = topo.switches.len();

    let correlated: std::cell::OnceCell<Arc<Routing>> = std::cell::OnceCell::new();
    let artifact_hash = (spec.ecmp == Ecmp::Artifact).then(|| Arc::new(artifact_flow_hash(&topo)));
    let make_switch = |site: SwitchSite<'_>| -> Box<dyn Node> {
        let idx = site.switch_index as usize;
        let role = roles[idx];
        // Local ports facing servers (not gateways): a ToR tags packets a server sends back.
        let num_ports = site.net.nodes[site.node as usize].num_ports;
        let host_ports: Vec<Option<u32>> = (0..num_ports)
            .map(|local| {
                let pid = site.net.port_id(site.node, local);
                let peer = site.net.ports[pid as usize].peer;
                let peer_node = site.net.ports[peer as usize].node as usize;
                let n = &topo_nodes[peer_node];
                (n.role == Role::Host && server_ips.contains(&n.ip)).then_some(n.ip)
            })
            .collect();
        let routing = match spec.ecmp {
            Ecmp::Independent => site.routing.clone(),
            Ecmp::Correlated | Ecmp::Artifact => correlated
                .get_or_init(|| {
                    let mut r = Routing::clone(site.routing);
                    for fib in &mut r.fibs {
                        fib.ecmp_seed = spec.seed;
                    }
                    if let Some(h) = &artifact_hash {
                        r.ecmp_hash = EcmpHash::Ns3(h.clone());
                    }
                    Arc::new(r)
                })
                .clone(),
        };
        let this_slots = match scheme.protocol() {
            Scheme::GwCache if role != V2pRole::GatewayTor => 0,
            _ => slots,
        };
        match scheme.protocol() {
            Scheme::Bluebird if role.is_tor() => {
                let prog = BluebirdTor::new(site.switch_index, slots as usize, facts.clone(), stats.clone(), host_ports);
                let ctl = BluebirdControl::new(spec.bluebird.clone(), dir.clone(), stats.clone());
                let mut sw = SimSwitch::with_control(prog, ctl, site.switch_index, routing, site.net, site.node);
                sw.cpu_port = Some(spec.bluebird.cpu_port());
                Box::new(sw)
            }
            s if s.controller_interval_ps().is_some() => {
                let prog = ControllerSwitch::new(site.switch_index, slots as usize, facts.clone(), stats.clone(), host_ports);
                Box::new(SimSwitch::new(prog, site.switch_index, routing, site.net, site.node))
            }
            s if s.uses_switch_cache() && this_slots > 0 => {
                let cfg = V2pSwitchSettings {
                    scheme,
                    role,
                    switch_id: site.switch_index,
                    switch_ip: site.topo_node.ip,
                    cache_slots: this_slots,
                    hash_salt: if salted { salts[idx] } else { 0 },
                    artifact_ids: artifact_ids.clone(),
                    p_learn: spec.p_learn,
                    promote_requires_access_bit: spec.promote_requires_access_bit,
                    invalidation_spacing_ps,
                    num_switches,
                };
                Box::new(SimSwitch::new(V2pSwitch::new(cfg, facts.clone(), stats.clone(), host_ports), site.switch_index, routing, site.net, site.node))
            }
            _ => Box::new(SimSwitch::new(L3Forward::default(), site.switch_index, routing, site.net, site.node)),
        }
    };
    // Per-flow gateway balancing: the artifact's hash of its trace flow ids with its paths
    // (`ecmp=artifact`), else innet's of the flow index.
    let flow_gateways = Arc::new(match spec.ecmp {
        Ecmp::Artifact => FlowGateways::by_trace_id(gateways.clone(), rows.iter().map(|r| r.flow_id)),
        _ => FlowGateways::by_index(gateways.clone(), rows.len()),
    });
    let host_cfg = HostConfig { tcp: spec.tcp.clone(), listen_all: true };
    let mut fabric = build_fabric(topo, spec.seed, host_cfg, flows, make_switch);

    let host_settings = HostSettings {
        mode: scheme.host_mode(),
        tunnel: spec.tunnel.clone(),
        misdelivery_delay_ps: spec.misdelivery_delay_ps,
        bounce_hits_via_gateway: scheme.is_switchv2p(),
        ondemand_preinstalled: spec.ondemand_preinstalled.clone(),
        ondemand_update_delay_ps: spec.ondemand_update_delay_ps,
    };
    for (i, &h) in fabric.topo.hosts.clone().iter().enumerate() {
        let host = fabric.sim.node_mut::<Host>(h).expect("hosts are Host nodes");
        if (i as u32) < servers {
            host.vswitch = Some(Box::new(V2pHostVswitch::new(host_settings.clone(), dir.clone(), flow_gateways.clone(), stats.clone())));
        } else {
            host.vswitch = Some(Box::new(GatewayVswitch::new(dir.clone(), stats.clone(), spec.gateway_processing_ps)));
        }
    }

    for &(sw, vm, server) in &spec.preload {
        let node = *fabric.topo.switches.get(sw as usize).ok_or_else(|| ExperimentError::param("preload", format!("switch {sw} does not exist")))?;
        if vm as u64 >= vm_count || server >= servers {
            return Err(ExperimentError::param("preload", format!("VM {vm} or server {server} does not exist")));
        }
        let pip = server_ip(server);
        if let Some(s) = fabric.sim.node_mut::<SimSwitch<V2pSwitch>>(node) {
            let _ = s.program.cache.put(Directory::vip(vm), pip);
        }
    }
    let horizon = last_start_ps.max(1) as f64 * 1.3;
    let mut solver_stats = None;
    cost.build_s = t_start.elapsed().as_secs_f64();
    if let Some(interval_ps) = scheme.controller_interval_ps() {
        let mut highs = HighsCli::locate(spec.controller_time_limit_s).map_err(ExperimentError::Input)?;
        let mut paths: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
        let mut t = 0u64;
        while t < spec.stop_ps && fabric.sim.net.pending_events() > 0 {
            t = (t + interval_ps).min(spec.stop_ps);
            let (t_loop, cpu) = (std::time::Instant::now(), thread_cpu_s());
            fabric.sim.run_until(t, &mut |now| progress((now as f64 / horizon).min(0.99)));
            let t_ctl = std::time::Instant::now();
            cost.loop_s += (t_ctl - t_loop).as_secs_f64();
            cost.loop_cpu_s += thread_cpu_s().zip(cpu).map_or(0.0, |(b, a)| b - a);
            controller_step(&mut fabric, &mut highs, &mut paths, slots, &dir).map_err(ExperimentError::Input)?;
            cost.controller_s += t_ctl.elapsed().as_secs_f64();
        }
        cost.solver_s = highs.stats.wall_seconds;
        solver_stats = Some(highs.stats.clone());
    } else {
        let (t_loop, cpu) = (std::time::Instant::now(), thread_cpu_s());
        fabric.sim.run_until(spec.stop_ps, &mut |now| progress((now as f64 / horizon).min(0.99)));
        cost.loop_s = t_loop.elapsed().as_secs_f64();
        cost.loop_cpu_s = thread_cpu_s().zip(cpu).map_or(0.0, |(b, a)| b - a);
    }
    cost.events = fabric.sim.net.events_processed();
    cost.packet_hops = fabric.sim.net.metrics.hops_sum;
    cost.delivered_packets = fabric.sim.net.metrics.delivered_packets;
    let cons = fabric.sim.finish();
    if !cons.ok() {
        return Err(ExperimentError::Invariant(format!("packet conservation failed under {scheme}: {cons:?}")));
    }
    let st = stats.borrow().clone();
    if st.resolved_to_foreign_pip > 0 {
        return Err(ExperimentError::Invariant(format!(
            "{} tenant packets under {scheme} were resolved to a server that never held their VM",
            st.resolved_to_foreign_pip
        )));
    }
    let not_for_host = fabric.sim.net.metrics.dropped_by(DropReason::NotForThisHost);
    if st.tenant_packets_lost > 0 || not_for_host > 0 {
        return Err(ExperimentError::Invariant(format!(
            "under {scheme}, {} tenant packets were lost by a vswitch or gateway and {not_for_host} reached a host that does not own them",
            st.tenant_packets_lost
        )));
    }

    // Per trace flow: FCT = last completion − first start; FPL = first arrival − first start.
    let records = &fabric.sim.net.metrics.flows;
    // Ordered by flow id: the means below sum in this order, and a hash map's per-process order
    // made their last bit (and so summary.json) differ between runs of the same seed.
    let mut per_flow: BTreeMap<u64, (u64, Option<u64>, Option<u64>, bool)> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let rec = &records[i];
        let e = per_flow.entry(r.flow_id).or_insert((first_start[&r.flow_id], None, None, true));
        e.1 = match (e.1, rec.first_arrival_ps) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match rec.complete_ps {
            Some(c) => e.2 = Some(e.2.map_or(c, |x: u64| x.max(c))),
            None => e.3 = false,
        }
    }
    let mut fct = Vec::new();
    let mut fpl = Vec::new();
    for (start, first, done, complete) in per_flow.values() {
        if let Some(f) = first {
            fpl.push(ps_to_us(f - start));
        }
        if let (true, Some(d)) = (complete, done) {
            fct.push(ps_to_us(d - start));
        }
    }
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let p99 = |v: &mut Vec<f64>| {
        if v.is_empty() {
            return 0.0;
        }
        v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        v[((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1]
    };
    let switches: Vec<SwitchRecord> = fabric
        .topo
        .switches
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let node = &fabric.topo.nodes[n as usize];
            let c = fabric.sim.net.metrics.nodes[n as usize];
            SwitchRecord {
                name: node.name.clone(),
                pod: node.pod,
                role: roles[i],
                bytes: c.rx_bytes,
                packets: c.rx_packets,
                hits: st.hits[i],
                first_hits: st.first_hits[i],
            }
        })
        .collect();
    let drops = DropReason::ALL
        .iter()
        .map(|&r| (r.name().to_string(), fabric.sim.net.metrics.dropped_by(r)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let delivered = st.tenant_packets_delivered.max(1) as f64;
    progress(1.0);
    let result = SchemeResult {
        scheme,
        flows: per_flow.len() as u64,
        completed_flows: fct.len() as u64,
        fct_mean_us: mean(&fct),
        fct_p99_us: p99(&mut fct),
        fpl_mean_us: mean(&fpl),
        fpl_p99_us: p99(&mut fpl),
        avg_packet_latency_us: ps_to_us(st.tenant_latency_total_ps) / delivered,
        avg_packet_hops: st.tenant_hops_total as f64 / delivered,
        stats: st,
        switches,
        conservation: cons,
        drops,
        cache_slots_per_switch: slots,
        caching_switches: caching,
        events: fabric.sim.net.events_processed(),
        simulated_us: ps_to_us(fabric.sim.net.now_ps()),
        solver: solver_stats,
    };
    Ok((result, cost))
}

/// One controller round: read and reset every ToR's traffic matrix, solve the placement for the
/// interval's traffic, install the chosen mappings (their current PIPs) into the switches.
fn controller_step(
    fabric: &mut innet_dataplane::fabric::Fabric,
    highs: &mut HighsCli,
    paths: &mut HashMap<(u32, u32), Vec<u32>>,
    capacity: u32,
    dir: &Directory,
) -> Result<(), String> {
    let mut traffic: HashMap<(u32, u32, u32), u64> = HashMap::new();
    for &n in &fabric.topo.tors {
        if let Some(sw) = fabric.sim.node_mut::<SimSwitch<ControllerSwitch>>(n) {
            for (k, v) in sw.program.traffic.drain() {
                *traffic.entry(k).or_insert(0) += v;
            }
        }
    }
    if traffic.is_empty() {
        return Ok(());
    }
    let mut groups: Vec<(Vec<u32>, u32, u64)> = Vec::with_capacity(traffic.len());
    let mut keys: Vec<_> = traffic.into_iter().collect();
    keys.sort_unstable();
    for ((src, gw, vdst), count) in keys {
        let path = paths.entry((src, gw)).or_insert_with(|| switch_path(fabric, src, gw)).clone();
        groups.push((path, vdst, count));
    }
    let problem = PlacementProblem { groups, capacity };
    let chosen = highs.solve(&problem)?;
    let now = fabric.sim.net.now_ps();
    for (s, vip) in chosen {
        let node = fabric.topo.switches[s as usize];
        if let (Some(pip), Some(sw)) = (dir.pip_at(vip, now), fabric.sim.node_mut::<SimSwitch<ControllerSwitch>>(node)) {
            sw.program.cache.put(vip, pip);
        }
    }
    Ok(())
}

/// The switches (by index) a tunnelled packet from `src` to `dst` crosses, following the
/// routing tables and their ECMP choices.
pub fn switch_path(fabric: &innet_dataplane::fabric::Fabric, src: u32, dst: u32) -> Vec<u32> {
    use innet_sim::packet::{Ipv4, Packet, Tunnel, L4, IP_PROTO_IPIP};
    use innet_sim::routing::NextHop;
    let mut pkt = Packet::new(Ipv4::new(0, 0, 17), L4::Udp { src_port: 0, dst_port: 0 }, 0);
    pkt.tunnel = Some(Tunnel { outer: Ipv4::new(src, dst, IP_PROTO_IPIP), encap: innet_sim::packet::Encap::IpInIp });
    let topo = &fabric.topo;
    let net = &fabric.sim.net;
    let Some(host) = topo.host_by_ip(src) else { return Vec::new() };
    let host_node = topo.hosts[host as usize];
    let mut port = net.ports[net.port_id(host_node, 0) as usize].peer;
    let mut path = Vec::new();
    for _ in 0..16 {
        let node = net.ports[port as usize].node;
        let Some(sw) = topo.nodes[node as usize].switch_index else { break };
        path.push(sw);
        match fabric.routing.fibs[sw as usize].next_hop(&fabric.routing, &pkt) {
            NextHop::Port(p) => port = net.ports[net.port_id(node, p) as usize].peer,
            _ => break,
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper (§5, "In-switch memory size"): the cache size is the aggregate over the caching
    /// switches, relative to the address space, split equally. The artifact's `run.py` computes
    /// `int(p × 10240) // switches` with 80 switches for SwitchV2P and LocalLearning, the 4
    /// gateway ToRs for GwCache and the 32 ToRs for Bluebird; footnote 6: 1 % is one entry per
    /// switch. Differential check over the artifact's whole sweep.
    #[test]
    fn cache_size_is_the_artifacts_split_of_the_address_space() {
        let ns = NetworkSpec::ft8_10k();
        let extra: Vec<(u32, u32)> = ns.gateway_tors.iter().map(|&t| (t, ns.gateways_per_tor)).collect();
        let topo = Topology::build(&ns.topo, &extra).unwrap();
        assert_eq!(ns.vm_count(), 10_240);
        let sweep = [0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 50.0, 100.0, 500.0, 1000.0, 1500.0];
        for (scheme, switches) in [(Scheme::SwitchV2P, 80u64), (Scheme::LocalLearning, 80), (Scheme::GwCache, 4), (Scheme::Bluebird, 32)] {
            for p in sweep {
                let artifact = ((p * 10_240.0_f64).floor() as u64 / switches).max(1);
                let (slots, caching) = cache_slots(scheme, p * ns.vm_count() as f64, &topo, ns.gateway_tors.len());
                assert_eq!((slots as u64, caching as u64), (artifact, switches), "{scheme:?} at {p}");
            }
        }
        // The setting of Figs. 9, 10 and Tables 5-6: 50 % is 64 slots on every switch.
        assert_eq!(cache_slots(Scheme::SwitchV2P, 0.5 * 10_240.0, &topo, 4), (64, 80));
        assert_eq!(cache_slots(Scheme::SwitchV2P, 0.01 * 10_240.0, &topo, 4), (1, 80));
    }

    /// The artifact numbers VMs leaf by leaf, each leaf's gateways after its servers
    /// (`TraceSimulation::ParsePlacement` appends them, `SimulationBase::AssignIds` counts them),
    /// on FT8-10K's placement (`placement_n128_v80.json`: server s holds VMs 80s..80s+79) with
    /// `--gwLeaves` 0, 10, 20, 31 ten times each.
    #[test]
    fn artifact_vm_ids_count_the_gateways_before_each_leaf() {
        let server_tor: Vec<u32> = (0..128).map(|s| s / 4).collect();
        let on_tor = |t: u32| if [0, 10, 20, 31].contains(&t) { 10 } else { 0 };
        let ids = artifact_vm_ids(&server_tor, 80, on_tor);
        assert_eq!(ids.len(), 10_240);
        for (vm, id) in [(0, 0), (319, 319), (320, 330), (3199, 3209), (3200, 3210), (4409, 4429), (6400, 6420), (6720, 6750), (10_239, 10_269)] {
            assert_eq!(ids[vm], id, "VM {vm}");
        }
        // One number per VM and gateway, none skipped but the gateways'.
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 10_240);
        // Servers listed out of ToR order are numbered by ToR all the same.
        let shuffled: Vec<u32> = vec![1, 0, 1, 0];
        assert_eq!(artifact_vm_ids(&shuffled, 2, |t| if t == 0 { 3 } else { 0 }), vec![7, 8, 0, 1, 9, 10, 2, 3]);
    }
}
