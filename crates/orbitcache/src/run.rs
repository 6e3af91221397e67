//! One rack run: build the ToR (with the scheme's program and controller), the clients and the
//! storage hosts, run the open-loop load for warm-up + measurement + drain, check the
//! invariants, and measure throughput, latency, overflow and per-server load. `search` finds
//! the highest offered load whose loss stays under the threshold.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use innet_dataplane::fabric::{HostSite, Rack, SwitchSite};
use innet_dataplane::{CpuPort, L3Forward, SimSwitch};
use innet_sim::engine::{Node, Simulator};
use innet_registry::ExperimentError;
use innet_sim::metrics::{percentile, DropReason};
use innet_sim::network::NodeId;
use innet_sim::topology::{Role, TopologySpec};
use innet_wire::orbitcache::{Stamp, HEADER_BYTES};
use serde::Deserialize;

use crate::client::{Client, ClientConfig, ClientStats};
use crate::controller::{OrbitControl, OrbitControlConfig, Tick, TOKEN_PRELOAD};
use crate::netcache::{in_netcache_key_file, NetCacheConfig, NetCacheControl, NetCacheSwitch, NC_TOKEN_START};
use crate::orbit_switch::{OrbitSwitch, OrbitSwitchConfig};
use crate::pegasus::PegasusSwitch;
use crate::rack::Addressing;
use crate::server::{PartitionStats, ServerConfig, StorageHost};
use crate::workload::WorkloadSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    NoCache,
    NetCache,
    FarReach,
    Pegasus,
    OrbitCache,
}

impl Scheme {
    pub fn parse(s: &str) -> Result<Scheme, String> {
        Ok(match s.trim() {
            "nocache" => Scheme::NoCache,
            "netcache" => Scheme::NetCache,
            "farreach" => Scheme::FarReach,
            "pegasus" => Scheme::Pegasus,
            "orbitcache" => Scheme::OrbitCache,
            other => return Err(format!("unknown scheme \"{other}\"; expected nocache, netcache, farreach, pegasus or orbitcache")),
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Scheme::NoCache => "nocache",
            Scheme::NetCache => "netcache",
            Scheme::FarReach => "farreach",
            Scheme::Pegasus => "pegasus",
            Scheme::OrbitCache => "orbitcache",
        }
    }
}

/// Everything one run needs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub scheme: Scheme,
    pub seed: u64,
    pub workload: WorkloadSpec,
    pub clients: u32,
    pub servers: u32,
    pub partitions_per_server: u32,
    pub server_rate_rps: f64,
    pub server_queue_requests: usize,
    pub server_ns_per_key_byte: f64,
    /// How the servers' rate is enforced: 0 paces every request at 1/`server_rate_rps`; a
    /// positive window counts requests in fixed windows of this length (the artifact's 1-s
    /// receive counter, shortened to fit the run) and serves each in `server_service_ns`.
    pub server_rate_window_us: f64,
    pub server_service_ns: f64,
    /// Total offered load of all clients.
    pub offered_rps: f64,
    pub warmup_us: f64,
    pub duration_us: f64,
    pub drain_us: f64,
    pub link_gbps: f64,
    pub link_delay_ns: u64,
    pub switch_pipeline_ns: u64,
    pub recirculation_gbps: f64,
    pub recirculation_latency_ns: u64,
    /// OrbitCache
    pub cache_size: usize,
    pub queue_slots: usize,
    pub table_entries: usize,
    pub hkey_bits: u32,
    pub controller_period_us: f64,
    pub fetch_timeout_us: f64,
    pub fetch_tries: u32,
    pub auto_size: bool,
    /// New cache entries are valid at once (requests park while the value is fetched, as the
    /// artifact); false forwards their requests to the server until the fetch reply.
    pub insert_valid: bool,
    pub overflow_target: f64,
    pub report_min_count: u32,
    /// NetCache / FarReach
    pub netcache_entries: usize,
    /// The NetCache key file of Fig. 13 (§5.2: "the cacheable item ratio is controlled by
    /// choosing keys with a uniform distribution independent of the portion of 64-B values"):
    /// `Some(f)` caches a uniform draw of `f` of the `netcache_entries` hottest ranks
    /// (`netcache_key_seed`), whatever their value size, holding a dummy value of at most the
    /// stages' bytes as the artifact's NetCache does; `None` caches the hottest items whose value
    /// fits (the cacheable ratio is then the portion of small values).
    pub netcache_key_fraction: Option<f64>,
    pub netcache_key_seed: u64,
    pub netcache_stages: u32,
    pub netcache_bytes_per_stage: u32,
    pub snapshot_period_us: f64,
    /// Pegasus
    pub pegasus_keys: usize,
    /// Width of the throughput-over-time bins.
    pub timeline_bin_us: f64,
    /// Fault injection for tests of the checkers: "none", or "skip_invalidation" (OrbitCache
    /// forgets to invalidate on writes, so stale cache packets keep serving).
    pub fault: String,
}

impl<'de> Deserialize<'de> for Scheme {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Scheme::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            scheme: Scheme::OrbitCache,
            seed: 1,
            workload: WorkloadSpec::default(),
            clients: 4,
            servers: 4,
            partitions_per_server: 8,
            server_rate_rps: 100_000.0,
            server_queue_requests: 128,
            server_ns_per_key_byte: 0.0,
            server_rate_window_us: 5_000.0,
            server_service_ns: 1_000.0,
            offered_rps: 2_000_000.0,
            warmup_us: 500.0,
            duration_us: 20_000.0,
            drain_us: 3_000.0,
            link_gbps: 100.0,
            link_delay_ns: 500,
            switch_pipeline_ns: 500,
            recirculation_gbps: 100.0,
            recirculation_latency_ns: 0,
            cache_size: 128,
            queue_slots: 8,
            table_entries: 8192,
            hkey_bits: 128,
            controller_period_us: 0.0,
            fetch_timeout_us: 1_000_000.0,
            fetch_tries: 5,
            auto_size: false,
            insert_valid: true,
            overflow_target: 0.05,
            report_min_count: 100,
            netcache_entries: 10_000,
            netcache_key_fraction: None,
            netcache_key_seed: 0,
            netcache_stages: 8,
            netcache_bytes_per_stage: 16,
            snapshot_period_us: 10_000_000.0,
            pegasus_keys: 64,
            timeline_bin_us: 1000.0,
            fault: "none".into(),
        }
    }
}


fn us_ps(us: f64) -> u64 {
    (us * 1e6).round() as u64
}

impl RunSpec {
    pub fn validate(&self) -> Result<(), ExperimentError> {
        let max_value = 1500 - 40 - HEADER_BYTES as u32 - self.workload.key_bytes as u32;
        self.workload.validate(max_value)?;
        if self.clients == 0 || self.servers == 0 || self.partitions_per_server == 0 {
            return Err(ExperimentError::param("clients/servers/partitions_per_server", "expected at least 1 of each"));
        }
        if self.clients + self.servers > 250 {
            return Err(ExperimentError::param("clients", "a rack holds at most 250 hosts"));
        }
        if self.servers * self.partitions_per_server > 64 {
            return Err(ExperimentError::param("partitions_per_server", "at most 64 storage partitions in the rack (Pegasus's replica bitmap)"));
        }
        if self.partitions_per_server > 64 {
            return Err(ExperimentError::param("partitions_per_server", "at most 64 ports per storage host"));
        }
        for (name, v) in [("server_rate_rps", self.server_rate_rps), ("link_gbps", self.link_gbps), ("recirculation_gbps", self.recirculation_gbps)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(ExperimentError::bad_param(name, v, "a positive number"));
            }
        }
        if !(self.offered_rps >= 0.0 && self.offered_rps.is_finite()) {
            return Err(ExperimentError::bad_param("offered_rps", self.offered_rps, "≥ 0"));
        }
        if self.duration_us <= 0.0 || self.warmup_us < 0.0 || self.drain_us < 0.0 {
            return Err(ExperimentError::param("duration_us", "expected duration > 0 and warm-up, drain ≥ 0"));
        }
        if self.cache_size > self.table_entries {
            return Err(ExperimentError::param("cache_size", format!("{} exceeds the lookup table ({} entries)", self.cache_size, self.table_entries)));
        }
        if self.table_entries == 0 || self.table_entries > 65_536 {
            return Err(ExperimentError::param("table_entries", "expected 1..=65536"));
        }
        if self.queue_slots == 0 || self.queue_slots > 1024 {
            return Err(ExperimentError::param("queue_slots", "expected 1..=1024 slots per key"));
        }
        if !(1..=128).contains(&self.hkey_bits) {
            return Err(ExperimentError::param("hkey_bits", "expected 1..=128"));
        }
        if !matches!(self.fault.as_str(), "none" | "skip_invalidation") {
            return Err(ExperimentError::bad_param("fault", &self.fault, "\"none\" or \"skip_invalidation\""));
        }
        if !(self.server_rate_window_us >= 0.0 && self.server_rate_window_us.is_finite()) {
            return Err(ExperimentError::bad_param("server_rate_window_us", self.server_rate_window_us, "≥ 0 (0 = paced)"));
        }
        if self.server_rate_window_us > 0.0 && !(self.server_service_ns > 0.0 && self.server_service_ns <= 1e9 / self.server_rate_rps) {
            return Err(ExperimentError::param("server_service_ns", format!("expected a service time in (0, {}] ns (at most 1/server_rate_rps), got {}", 1e9 / self.server_rate_rps, self.server_service_ns)));
        }
        if self.server_queue_requests == 0 {
            return Err(ExperimentError::param("server_queue_requests", "expected at least 1"));
        }
        if let Some(f) = self.netcache_key_fraction {
            if !(0.0..=1.0).contains(&f) {
                return Err(ExperimentError::bad_param("netcache_key_fraction", f, "a fraction in [0, 1]"));
            }
        }
        if self.pegasus_keys > 4096 || self.netcache_entries > 1 << 20 {
            return Err(ExperimentError::param("pegasus_keys/netcache_entries", "too large"));
        }
        Ok(())
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub scheme: Scheme,
    /// OrbitCache's cached items in this run.
    pub cache_size: usize,
    pub offered_rps: f64,
    pub sent: u64,
    pub answered: u64,
    pub loss: f64,
    pub throughput_rps: f64,
    pub server_throughput_rps: f64,
    pub switch_throughput_rps: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub switch_latency_p50_us: f64,
    pub switch_latency_p99_us: f64,
    pub server_latency_p50_us: f64,
    pub server_latency_p99_us: f64,
    pub overflow_ratio: f64,
    pub per_server_rps: Vec<f64>,
    pub balancing_efficiency: f64,
    pub min_server_rps: f64,
    pub collisions: u64,
    pub corrections: u64,
    pub counters: serde_json::Map<String, serde_json::Value>,
    pub ticks: Vec<Tick>,
    /// (bin start µs, answers per second, overflowed answers per second).
    pub timeline: Vec<(f64, f64, f64)>,
    pub events: u64,
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

/// Run once at `spec.offered_rps`.
pub fn run(spec: &RunSpec, progress: &mut dyn FnMut(f64)) -> Result<RunResult, ExperimentError> {
    spec.validate()?;
    let topo_spec = TopologySpec {
        host_link_gbps: spec.link_gbps,
        fabric_link_gbps: spec.link_gbps,
        link_delay_ns: spec.link_delay_ns,
        switch_pipeline_latency_ns: spec.switch_pipeline_ns,
        recirculation_gbps: spec.recirculation_gbps,
        recirculation_latency_ns: spec.recirculation_latency_ns,
        ..TopologySpec::rack(spec.clients + spec.servers)
    };
    let mut rack = Rack::build(&topo_spec, spec.seed)?;
    let host_ip = |h: u32| rack.ip(h as usize);
    let tor = rack.switch_node;
    let addressing = Rc::new(Addressing {
        client_ips: (0..spec.clients).map(host_ip).collect(),
        server_ips: (spec.clients..spec.clients + spec.servers).map(host_ip).collect(),
        partitions_per_server: spec.partitions_per_server,
        switch_ip: rack.topo.nodes[tor as usize].ip,
        key_len: spec.workload.key_bytes,
        hkey_bits: spec.hkey_bits,
    });
    let workload = Rc::new(spec.workload.clone());
    let sampler = Rc::new(spec.workload.sampler());
    let history = Rc::new(RefCell::new(HashMap::new()));
    let start_ps = 0u64;
    let measure_ps = us_ps(spec.warmup_us);
    let stop_ps = measure_ps + us_ps(spec.duration_us);
    let end_ps = stop_ps + us_ps(spec.drain_us);

    // Multicast groups: one per host port, {host port, recirculation port}.
    let tor_ports = rack.net.nodes[tor as usize].num_ports;
    let recirc = tor_ports - 1;
    let mut groups = Vec::new();
    let mut host_groups = HashMap::new();
    for local in 0..recirc {
        let pid = rack.net.port_id(tor, local);
        let peer = rack.net.ports[pid as usize].peer;
        let peer_node = rack.net.ports[peer as usize].node as usize;
        if rack.topo.nodes[peer_node].role == Role::Host {
            host_groups.insert(rack.topo.nodes[peer_node].ip, groups.len() as u16);
            groups.push(vec![(local, 1u16), (recirc, 1u16)]);
        }
    }
    let cpu = CpuPort { bandwidth_bps: 10_000_000_000, buffer_bytes: 4 << 20, latency_ps: 5_000_000, gap_ps: 0 };
    let period_ps = (spec.controller_period_us > 0.0).then(|| us_ps(spec.controller_period_us));

    let host = |site: HostSite<'_>| -> Box<dyn Node> {
        let (h, nic) = (site.host_index, site.nic);
        if h < spec.clients {
            let cfg = ClientConfig {
                rate_rps: spec.offered_rps / spec.clients as f64,
                start_ps,
                measure_from_ps: measure_ps,
                stop_ps,
                port: 5000,
                timeline_bin_ps: us_ps(spec.timeline_bin_us),
            };
            let rng = innet_sim::rng::rng_for(spec.seed, &format!("client/{h}"));
            let mut c = Client::new(site.ip, nic, cfg, addressing.clone(), workload.clone(), sampler.clone(), history.clone(), rng);
            c.start(site.net, site.node);
            Box::new(c)
        } else {
            let cfg = ServerConfig {
                rate_rps: spec.server_rate_rps,
                rate_window_ps: (spec.server_rate_window_us > 0.0).then(|| us_ps(spec.server_rate_window_us)),
                service_ps: (spec.server_service_ns * 1e3).round() as u64,
                queue_requests: spec.server_queue_requests,
                ns_per_key_byte: spec.server_ns_per_key_byte,
                report_topk: period_ps.is_some() && spec.scheme == Scheme::OrbitCache,
                report_period_ps: period_ps.unwrap_or(u64::MAX / 4),
                topk: 10,
                report_min_count: spec.report_min_count,
                sketch_width: 65_536,
            };
            let s = StorageHost::new(site.ip, nic, h - spec.clients, addressing.clone(), workload.clone(), cfg);
            s.start(site.net, site.node);
            Box::new(s)
        }
    };
    let switch = |site: SwitchSite<'_>| -> Box<dyn Node> {
        match spec.scheme {
            Scheme::NoCache => Box::new(SimSwitch::new(L3Forward::default(), site.switch_index, site.routing.clone(), site.net, site.node)),
            Scheme::OrbitCache => {
                let prog = OrbitSwitch::new(OrbitSwitchConfig {
                    table_entries: spec.table_entries,
                    queue_slots: spec.queue_slots,
                    switch_ip: addressing.switch_ip,
                    host_groups: host_groups.clone(),
                    skip_invalidation: spec.fault == "skip_invalidation",
                    insert_valid: spec.insert_valid,
                });
                let ctl = OrbitControl::new(
                    OrbitControlConfig {
                        capacity: spec.cache_size,
                        preload: sampler.hottest(spec.cache_size as u64, 0),
                        period_ps,
                        fetch_timeout_ps: us_ps(spec.fetch_timeout_us),
                        fetch_tries: spec.fetch_tries,
                        auto_size: spec.auto_size,
                        overflow_target: spec.overflow_target,
                        min_capacity: 8,
                    },
                    addressing.clone(),
                    spec.table_entries,
                );
                let mut sw = SimSwitch::with_control(prog, ctl, site.switch_index, site.routing.clone(), site.net, site.node);
                sw.cfg.multicast_groups = groups.clone();
                sw.cpu_port = Some(cpu);
                sw.start_control_timer(site.net, site.node, 0, TOKEN_PRELOAD);
                Box::new(sw)
            }
            Scheme::NetCache | Scheme::FarReach => {
                let cfg = NetCacheConfig {
                    entries: spec.netcache_entries,
                    stages: spec.netcache_stages,
                    bytes_per_stage: spec.netcache_bytes_per_stage,
                    max_key_bytes: 16,
                    write_back: spec.scheme == Scheme::FarReach,
                    dummy_values: spec.netcache_key_fraction.is_some(),
                    key_len: spec.workload.key_bytes,
                    cm_rows: 4,
                    cm_width: 65_536,
                    hh_threshold: 128,
                    bloom_rows: 3,
                    bloom_bits: 262_144,
                };
                let prog = NetCacheSwitch::new(cfg);
                // The hottest cacheable items among the top `netcache_entries` ranks, or the
                // key file's uniform draw of them (Fig. 13).
                let preload: Vec<(u64, Stamp, u32)> = if spec.workload.key_bytes <= 16 {
                    sampler
                        .hottest(spec.netcache_entries as u64, 0)
                        .into_iter()
                        .filter_map(|k| {
                            let len = workload.value_bytes(k);
                            match spec.netcache_key_fraction {
                                Some(f) => in_netcache_key_file(k, f, spec.netcache_key_seed)
                                    .then(|| (k, prog.stored_len(len).unwrap_or(len))),
                                None => prog.cacheable(spec.workload.key_bytes, len).then_some((k, len)),
                            }
                        })
                        .map(|(k, len)| (k, Stamp { key_id: k, version: 0 }, len))
                        .collect()
                } else {
                    Vec::new()
                };
                let ctl = NetCacheControl {
                    addressing: addressing.clone(),
                    preload,
                    detect_period_ps: 1_000_000_000_000,
                    snapshot_period_ps: (spec.scheme == Scheme::FarReach && spec.snapshot_period_us > 0.0)
                        .then(|| us_ps(spec.snapshot_period_us)),
                    hot_reports: 0,
                    snapshots: 0,
                    written_back: 0,
                };
                let mut sw = SimSwitch::with_control(prog, ctl, site.switch_index, site.routing.clone(), site.net, site.node);
                sw.start_control_timer(site.net, site.node, 0, NC_TOKEN_START);
                Box::new(sw)
            }
            Scheme::Pegasus => {
                let keys = sampler.hottest(spec.pegasus_keys as u64, 0);
                Box::new(SimSwitch::new(PegasusSwitch::new(addressing.clone(), &keys), site.switch_index, site.routing.clone(), site.net, site.node))
            }
        }
    };
    let nodes = rack.nodes(host, switch);
    let mut sim = Simulator::new(rack.net, nodes);
    let horizon = end_ps as f64;
    sim.run_until(end_ps, &mut |now| progress((now as f64 / horizon).min(0.99)));

    // ---- collect ----
    let mut cstats: Vec<ClientStats> = Vec::new();
    let mut queued_at_servers = 0u64;
    let mut pstats: Vec<PartitionStats> = Vec::new();
    for (id, n) in rack.topo.nodes.iter().enumerate() {
        if n.role != Role::Host {
            continue;
        }
        if let Some(c) = sim.node_mut::<Client>(id as NodeId) {
            c.close();
            cstats.push(c.stats.clone());
        } else if let Some(s) = sim.node::<StorageHost>(id as NodeId) {
            queued_at_servers += s.queued_now();
            pstats.extend(s.stats.iter().cloned());
        }
    }
    let mut counters = serde_json::Map::new();
    let mut parked_at_end = 0u64;
    let mut ticks = Vec::new();
    let sw_id = tor;
    match spec.scheme {
        Scheme::OrbitCache => {
            let sw = sim.node::<SimSwitch<OrbitSwitch, OrbitControl>>(sw_id).expect("orbit switch");
            parked_at_end = sw.program.parked_now();
            let c = &sw.program.counters;
            for (k, v) in [
                ("parked", c.parked),
                ("served_by_cache_packets", c.served),
                ("overflow_requests", c.overflow),
                ("invalid_forwards", c.invalid_forwards),
                ("stale_cache_packets_dropped", c.stale_cache_packets),
                ("late_fetch_replies", c.late_fetch_replies),
                ("cache_packets_spawned", c.spawned),
                ("invalidations", c.invalidations),
                ("idle_orbit_passes", c.idle_passes),
                ("malformed", c.malformed),
                ("recirculations", sw.counters.recirculations),
                ("multicast_copies", sw.counters.multicast_copies),
                ("fetches_sent", sw.control.stats.fetches_sent),
                ("fetch_replies", sw.control.stats.fetch_replies),
                ("fetch_retries", sw.control.stats.fetch_retries),
                ("fetch_failures", sw.control.stats.fetch_failures),
                ("cache_insertions", sw.control.stats.insertions),
                ("cache_evictions", sw.control.stats.evictions),
                ("topk_reports", sw.control.stats.reports),
                ("cached_keys_at_end", sw.control.cached_keys() as u64),
                ("parked_at_end", parked_at_end),
            ] {
                counters.insert(k.into(), v.into());
            }
            ticks = sw.control.ticks.clone();
        }
        Scheme::NetCache | Scheme::FarReach => {
            let sw = sim.node::<SimSwitch<NetCacheSwitch, NetCacheControl>>(sw_id).expect("netcache switch");
            let c = &sw.program.counters;
            for (k, v) in [
                ("cached_items", sw.program.lookup.len() as u64),
                ("switch_hits", c.hits),
                ("invalid_forwards", c.invalid_forwards),
                ("invalidations", c.invalidations),
                ("refreshes", c.refreshes),
                ("writes_absorbed", c.write_backs_absorbed),
                ("hot_key_reports", c.hot_reports),
                ("snapshots", sw.control.snapshots),
                ("written_back", sw.control.written_back),
            ] {
                counters.insert(k.into(), v.into());
            }
        }
        Scheme::Pegasus => {
            let sw = sim.node::<SimSwitch<PegasusSwitch>>(sw_id).expect("pegasus switch");
            let c = &sw.program.counters;
            for (k, v) in [
                ("replicated_keys", sw.program.rkeys.len() as u64),
                ("replicated_reads", c.replicated_reads),
                ("replicated_writes", c.replicated_writes),
                ("replica_set_resets", c.replica_set_resets),
                ("replica_adds", c.replica_adds),
            ] {
                counters.insert(k.into(), v.into());
            }
        }
        Scheme::NoCache => {}
    }
    let events = sim.net.events_processed();
    let cons = sim.finish();

    // ---- invariants ----
    let sum = |f: &dyn Fn(&ClientStats) -> u64| cstats.iter().map(f).sum::<u64>();
    let wrong = sum(&|c| c.wrong_key_accepted);
    let stale = sum(&|c| c.stale_reads);
    if !cons.ok() {
        return Err(ExperimentError::Invariant(format!("packet conservation: {cons}")));
    }
    if wrong > 0 {
        return Err(ExperimentError::Invariant(format!("{wrong} replies accepted with a value of another key")));
    }
    if stale > 0 {
        return Err(ExperimentError::Invariant(format!(
            "{stale} reads returned a value older than a write acknowledged before they started"
        )));
    }
    let m = &sim.net.metrics;
    let unanswered = sum(&|c| c.unanswered_at_end);
    let queue_drops: u64 = pstats.iter().map(|p| p.queue_drops).sum();
    let net_losses = m.dropped_total() - m.dropped_by(DropReason::Program) - m.dropped_by(DropReason::BufferOverflow)
        + m.dropped_by(DropReason::BufferOverflow).saturating_sub(queue_drops);
    let explained = queued_at_servers + parked_at_end + queue_drops + net_losses + sum(&|c| c.slots_reused);
    if unanswered > explained {
        return Err(ExperimentError::Invariant(format!(
            "{unanswered} requests unanswered at the end but only {explained} are accounted for \
             (queued at servers {queued_at_servers}, parked in the switch {parked_at_end}, dropped by full server queues \
             {queue_drops}, lost in the network {net_losses})"
        )));
    }

    // ---- measurements ----
    let window_s = spec.duration_us / 1e6;
    let sent = sum(&|c| c.sent_measured);
    let answered = sum(&|c| c.answered_measured);
    let switch_replies = sum(&|c| c.switch_replies);
    let server_replies = sum(&|c| c.server_replies);
    let overflow_replies = sum(&|c| c.overflow_replies);
    let all_lat = sorted(cstats.iter().flat_map(|c| c.latency_switch_us.iter().chain(&c.latency_server_us).chain(&c.latency_write_us).copied()).collect());
    let sw_lat = sorted(cstats.iter().flat_map(|c| c.latency_switch_us.iter().copied()).collect());
    let srv_lat = sorted(cstats.iter().flat_map(|c| c.latency_server_us.iter().copied()).collect());
    let parts = (spec.servers * spec.partitions_per_server) as usize;
    let per_server_rps: Vec<f64> =
        (0..parts).map(|p| cstats.iter().map(|c| c.per_partition[p]).sum::<u64>() as f64 / window_s).collect();
    let mean_srv = per_server_rps.iter().sum::<f64>() / parts as f64;
    let min_srv = per_server_rps.iter().copied().fold(f64::INFINITY, f64::min);
    counters.insert("server_queue_drops".into(), queue_drops.into());
    counters.insert("unanswered_at_end".into(), unanswered.into());
    counters.insert("unexpected_replies".into(), sum(&|c| c.unexpected_replies).into());
    counters.insert("conservation_ok".into(), cons.ok().into());
    Ok(RunResult {
        scheme: spec.scheme,
        cache_size: spec.cache_size,
        offered_rps: spec.offered_rps,
        sent,
        answered,
        loss: if sent > 0 { 1.0 - answered as f64 / sent as f64 } else { 0.0 },
        throughput_rps: answered as f64 / window_s,
        server_throughput_rps: server_replies as f64 / window_s,
        switch_throughput_rps: switch_replies as f64 / window_s,
        latency_p50_us: percentile(&all_lat, 50.0),
        latency_p99_us: percentile(&all_lat, 99.0),
        switch_latency_p50_us: percentile(&sw_lat, 50.0),
        switch_latency_p99_us: percentile(&sw_lat, 99.0),
        server_latency_p50_us: percentile(&srv_lat, 50.0),
        server_latency_p99_us: percentile(&srv_lat, 99.0),
        overflow_ratio: if switch_replies + overflow_replies > 0 {
            overflow_replies as f64 / (switch_replies + overflow_replies) as f64
        } else {
            0.0
        },
        balancing_efficiency: if mean_srv > 0.0 { min_srv / mean_srv } else { 0.0 },
        min_server_rps: if min_srv.is_finite() { min_srv } else { 0.0 },
        per_server_rps,
        collisions: sum(&|c| c.collisions),
        corrections: sum(&|c| c.corrections_sent),
        counters,
        ticks,
        timeline: {
            let bins = cstats.iter().map(|c| c.timeline.len()).max().unwrap_or(0);
            let w = spec.timeline_bin_us;
            (0..bins)
                .map(|b| {
                    let n: u64 = cstats.iter().map(|c| c.timeline.get(b).copied().unwrap_or(0)).sum();
                    let o: u64 = cstats.iter().map(|c| c.timeline_overflow.get(b).copied().unwrap_or(0)).sum();
                    (b as f64 * w, n as f64 / (w / 1e6), o as f64 / (w / 1e6))
                })
                .collect()
        },
        events,
    })
}

/// How the throughput search went: every probe (offered load, loss).
#[derive(Debug, Clone)]
pub struct Search {
    pub best: RunResult,
    pub probes: Vec<(f64, f64)>,
}

/// The highest offered load whose loss stays ≤ `max_loss`: start at `start_rps`, double (or
/// halve) until the loss crosses the threshold, then bisect `refine` times between the last
/// passing and the first failing load. Returns the run at the best passing load.
pub fn search(spec: &RunSpec, start_rps: f64, max_loss: f64, refine: u32, progress: &mut dyn FnMut(f64)) -> Result<Search, ExperimentError> {
    let mut probes = Vec::new();
    let mut at = |rps: f64, probes: &mut Vec<(f64, f64)>| -> Result<RunResult, ExperimentError> {
        let s = RunSpec { offered_rps: rps, ..spec.clone() };
        let r = run(&s, &mut |_| {})?;
        probes.push((rps, r.loss));
        progress((probes.len() as f64 / (refine as f64 + 8.0)).min(0.99));
        Ok(r)
    };
    let mut lo: Option<RunResult> = None;
    let mut hi_rps: Option<f64> = None;
    let mut rps = start_rps.max(1_000.0);
    for _ in 0..12 {
        let r = at(rps, &mut probes)?;
        if r.loss <= max_loss {
            lo = Some(r);
            if hi_rps.is_some() {
                break;
            }
            rps *= 2.0;
        } else {
            hi_rps = Some(rps);
            if lo.is_some() {
                break;
            }
            rps /= 2.0;
        }
    }
    let mut lo = match lo {
        Some(r) => r,
        None => at(1_000.0, &mut probes)?,
    };
    if let Some(mut hi) = hi_rps {
        for _ in 0..refine {
            let mid = (lo.offered_rps + hi) / 2.0;
            let r = at(mid, &mut probes)?;
            if r.loss <= max_loss {
                lo = r;
            } else {
                hi = mid;
            }
        }
    }
    Ok(Search { best: lo, probes })
}
