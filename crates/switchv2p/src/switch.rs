//! The data-plane program of every switch under the cache-based schemes: SwitchV2P's
//! topology-aware protocol (paper §3.2–3.3, Table 1), and the LocalLearning / GwCache baselines,
//! which share its cache structure but learn greedily.
//!
//! Per tenant packet (Geneve-tunnelled; "to-GW" = the outer destination is a gateway), in order,
//! as in the authors' artifact (docs/switchv2p.md explains each choice):
//! 0. A packet a local server sent back because it could not deliver it carries the server's
//!    misdelivery tag: its ToR drops its hit tag and sends an invalidation packet to the switch
//!    that served the stale hit, unless the timestamp vector says one went out within a base RTT.
//! 1. A misdelivery-tagged packet invalidates a cached stale entry or is re-resolved by a
//!    switch that already holds the new one; nothing else happens to it.
//! 2. Spines (not gateway spines) promote: a to-GW packet that hits carries the entry to the
//!    core in a spill option instead of being resolved here.
//! 3. ToRs learn the sender's mapping from packets they deliver to a local server (source
//!    learning), and a resolved packet's destination if the slot is free.
//! 4. Gateway ToRs, spines, gateway spines and cores learn from resolved packets or from a
//!    spill option, each with its admission policy; the victim of an insertion rides on in the
//!    packet (spillover). Gateway ToRs send a learning packet to the sender's ToR with
//!    probability P_learn (the sender: the server of the inner source VM, which a packet a
//!    server sent back keeps, as the artifact's `SourceTag`).
//! 5. A still-unresolved packet that hits is resolved: the outer destination is rewritten and
//!    a hit option names this switch.
//!
//! Control packets (UDP 333) to switch addresses carry learning and invalidation messages: an
//! invalidation removes the stale entry at every switch it crosses, a learning message is
//! inserted at its destination only.

use std::sync::Arc;

use innet_dataplane::program::{Ctx, Metadata, Program, Verdict};
use innet_dataplane::state::{ResourceEntry, ResourceKind, ResourceReport};
use innet_dataplane::L3Forward;
use innet_sim::packet::{Encap, Ipv4, Packet, L4, IP_PROTO_UDP};
use innet_sim::rng::{FastMap, FastSet};
use innet_wire::switchv2p::{ControlMessage, OptionArea, V2pOptions, CONTROL_PORT};
use rand::Rng;

use crate::cache::{bits_to_address, ArtifactIds, MappingCache};
use crate::directory::Directory;
use crate::scheme::{CacheSite, Scheme};
use crate::stats::SharedStats;

/// The in-band metadata area of a tenant packet's tunnel: Geneve options, or zero-byte tags.
#[inline]
pub fn tunnel_tags(encap: &Encap) -> Option<&[u8]> {
    match encap {
        Encap::Geneve { options, .. } => Some(options),
        Encap::IpInIpTagged { tags } => Some(tags.as_slice()),
        _ => None,
    }
}

#[inline]
pub fn tunnel_tags_mut(encap: &mut Encap) -> Option<&mut dyn OptionArea> {
    match encap {
        Encap::Geneve { options, .. } => Some(options),
        Encap::IpInIpTagged { tags } => Some(tags),
        _ => None,
    }
}

/// A switch's place in the topology (paper Table 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum V2pRole {
    Tor,
    GatewayTor,
    Spine,
    GatewaySpine,
    Core,
}

impl V2pRole {
    pub fn name(self) -> &'static str {
        match self {
            V2pRole::Tor => "tor",
            V2pRole::GatewayTor => "gateway_tor",
            V2pRole::Spine => "spine",
            V2pRole::GatewaySpine => "gateway_spine",
            V2pRole::Core => "core",
        }
    }
    /// The paper's three layers (Table 5): core, spine (incl. gateway spines), ToR (incl. gateway ToRs).
    pub fn layer(self) -> &'static str {
        match self {
            V2pRole::Tor | V2pRole::GatewayTor => "tor",
            V2pRole::Spine | V2pRole::GatewaySpine => "spine",
            V2pRole::Core => "core",
        }
    }
    pub fn is_tor(self) -> bool {
        matches!(self, V2pRole::Tor | V2pRole::GatewayTor)
    }
}

/// Facts every switch shares.
#[derive(Debug, Default)]
pub struct FabricFacts {
    /// Physical addresses of the gateways (asked for every tenant packet at every switch: a
    /// fast integer hash, not SipHash).
    pub gateways: FastSet<u32>,
    /// Server PIP → the IP of its ToR (where learning packets for its sender go).
    pub tor_ip_of_server: FastMap<u32, u32>,
    /// Per flow id: start time and the sender's VIP (to recognise a flow's first packet).
    pub flow_start_ps: Vec<u64>,
    pub flow_src_vip: Vec<u32>,
    /// Where each VM lives (a learning packet goes to the ToR of its packet's sender VM).
    pub directory: Option<Arc<Directory>>,
}

/// Switch settings that vary by scheme and experiment.
#[derive(Debug, Clone)]
pub struct V2pSwitchSettings {
    /// The scheme: its protocol ([`Scheme::protocol`]) says what the program does, and the
    /// scheme builds the cache ([`Scheme::new_cache`]).
    pub scheme: Scheme,
    pub role: V2pRole,
    pub switch_id: u32,
    pub switch_ip: u32,
    /// Cache slots on this switch (0 = no cache).
    pub cache_slots: u32,
    /// Salt of the index hash: 0 everywhere for SwitchV2P, random per switch for LocalLearning.
    pub hash_salt: u32,
    /// `cache_index=artifact`: the artifact's VM numbers, which the cache hashes instead of VIPs.
    pub artifact_ids: Option<ArtifactIds>,
    /// Probability that a gateway ToR sends a learning packet for a mapping it learns.
    pub p_learn: f64,
    /// Spines promote only entries whose access bit was already set (the paper's wording)
    /// instead of on every hit (the artifact).
    pub promote_requires_access_bit: bool,
    /// Minimum spacing of invalidation packets to the same switch (the timestamp vector's
    /// base RTT); 0 with `timestamp_vector` off.
    pub invalidation_spacing_ps: u64,
    pub num_switches: usize,
}

pub struct V2pSwitch {
    pub cfg: V2pSwitchSettings,
    pub cache: Box<dyn MappingCache>,
    facts: Arc<FabricFacts>,
    stats: SharedStats,
    /// Local port → PIP of the server behind it (ToRs only).
    host_ports: Vec<Option<u32>>,
    /// Per switch id: the earliest time another invalidation may go to it.
    ts_vector: Vec<u64>,
    l3: L3Forward,
    invalidations: bool,
    timestamp_vector: bool,
}

impl V2pSwitch {
    pub fn new(cfg: V2pSwitchSettings, facts: Arc<FabricFacts>, stats: SharedStats, host_ports: Vec<Option<u32>>) -> Self {
        let site = CacheSite { slots: cfg.cache_slots, salt: cfg.hash_salt, role: cfg.role, artifact_ids: cfg.artifact_ids.clone() };
        let cache = cfg.scheme.new_cache(&site);
        let invalidations = cfg.scheme.protocol() != Scheme::SwitchV2PNoInvalidation;
        let timestamp_vector = cfg.scheme.protocol() == Scheme::SwitchV2P;
        V2pSwitch {
            ts_vector: vec![0; cfg.num_switches],
            cfg,
            cache,
            facts,
            stats,
            host_ports,
            l3: L3Forward::default(),
            invalidations,
            timestamp_vector,
        }
    }

    /// The hash and random-number units the program uses per packet, with their output bits
    /// (Tofino `Hash` and `Random` externs; the resource report has no kind for them): the
    /// cache index of the destination VIP and, for ToR source learning, of the source VIP (the
    /// P4 computes both and picks one), and the P_learn draw of gateway ToRs (10 bits as the
    /// P4's `rand10 <= 5`).
    pub fn hash_units(&self) -> Vec<(&'static str, u32)> {
        let mut v = vec![("dst_index_hash", self.cache.index_bits())];
        if self.cfg.scheme.is_switchv2p() {
            v.push(("src_index_hash", self.cache.index_bits()));
            v.push(("p_learn_random", 10));
        }
        v
    }

    fn control_packet(&self, dst_ip: u32, msg: ControlMessage) -> Packet {
        let bytes = msg.emit();
        let mut p = Packet::new(
            Ipv4::new(self.cfg.switch_ip, dst_ip, IP_PROTO_UDP),
            L4::Udp { src_port: CONTROL_PORT, dst_port: CONTROL_PORT },
            bytes.len() as u32,
        );
        p.payload_bytes = Some(Box::new(bytes.to_vec()));
        p
    }

    /// A ToR saw a hit tag on a misdelivered packet: tell the switch that served it.
    fn maybe_invalidate(&mut self, hit_switch: u32, hit_ip: u32, vip: u32, stale: u32, ctx: &mut Ctx<'_>) {
        if !self.invalidations {
            return;
        }
        if self.timestamp_vector {
            let slot = hit_switch as usize;
            if slot < self.ts_vector.len() {
                if ctx.now_ps < self.ts_vector[slot] {
                    self.stats.borrow_mut().invalidations_suppressed += 1;
                    return;
                }
                self.ts_vector[slot] = ctx.now_ps.saturating_add(self.cfg.invalidation_spacing_ps);
            }
        }
        if hit_switch == self.cfg.switch_id {
            // This ToR served the stale hit itself: invalidate locally, no packet needed.
            if self.cache.remove_if(vip, stale) {
                self.stats.borrow_mut().invalidated_entries += 1;
            }
            return;
        }
        let p = self.control_packet(hit_ip, ControlMessage::Invalidate { vip, stale_pip: stale });
        self.stats.borrow_mut().invalidation_packets += 1;
        ctx.generate(p, Verdict::Route);
    }

    fn is_first_packet(&self, pkt: &Packet) -> bool {
        let f = pkt.flow_id as usize;
        f < self.facts.flow_start_ps.len()
            && self.facts.flow_start_ps[f] == pkt.created_ps
            && self.facts.flow_src_vip[f] == pkt.ip.src
    }

    fn count_hit(&mut self, pkt: &Packet) {
        let first = self.is_first_packet(pkt);
        let mut s = self.stats.borrow_mut();
        s.hits[self.cfg.switch_id as usize] += 1;
        if first {
            s.first_hits[self.cfg.switch_id as usize] += 1;
        }
    }

    /// Learning and invalidation messages (UDP 333, not tunnelled).
    fn control(&mut self, pkt: &mut Packet, ctx: &mut Ctx<'_>) -> Verdict {
        let msg = pkt.payload_bytes.as_deref().and_then(|b| ControlMessage::parse(b).ok());
        let for_me = pkt.ip.dst == self.cfg.switch_ip;
        match msg {
            Some(ControlMessage::Invalidate { vip, stale_pip }) => {
                if self.cache.remove_if(vip, stale_pip) {
                    self.stats.borrow_mut().invalidated_entries += 1;
                }
            }
            Some(ControlMessage::Learn { vip, pip }) if for_me => {
                if self.cache.put(vip, pip).is_ok() {
                    self.stats.borrow_mut().inserts_learning += 1;
                }
            }
            _ => {}
        }
        if for_me {
            Verdict::Consume
        } else {
            self.l3.forward(pkt, ctx)
        }
    }

    /// LocalLearning and GwCache: learn every resolved destination (overwrite), resolve hits.
    fn greedy(&mut self, pkt: &mut Packet, vdst: u32, to_gw: bool) {
        let t = pkt.tunnel.as_mut().expect("tenant packets are tunnelled");
        if !to_gw {
            if self.cache.put(vdst, t.outer.dst).is_ok() {
                self.stats.borrow_mut().inserts_destination += 1;
            }
        } else if let Some(pip) = self.cache.get(vdst) {
            t.outer.dst = pip;
            self.count_hit(pkt);
        }
    }

    /// SwitchV2P's steps 0–5 (module doc). Returns the options to write back, if changed.
    fn switchv2p(&mut self, pkt: &mut Packet, meta: &Metadata, mut opts: V2pOptions, ctx: &mut Ctx<'_>) -> Option<V2pOptions> {
        let role = self.cfg.role;
        let vdst = pkt.ip.dst;
        let vsrc = pkt.ip.src;
        let (outer_src, outer_dst) = {
            let t = pkt.tunnel.as_ref().expect("tunnelled");
            (t.outer.src, t.outer.dst)
        };
        let to_gw = self.facts.gateways.contains(&outer_dst);
        let from_server = self.host_ports.get(meta.ingress_port as usize).copied().flatten();
        let mut changed = false;

        // 0. A server sent back a packet it could not deliver (its vswitch tagged it).
        if role.is_tor() && from_server.is_some() {
            if let Some((_, stale)) = opts.misdelivery {
                if let Some((hit_switch, hit_ip)) = opts.hit.take() {
                    changed = true;
                    self.maybe_invalidate(hit_switch, hit_ip, vdst, stale, ctx);
                }
            }
        }

        // 1. Misdelivered packets: invalidate or re-resolve, nothing else.
        if let Some((mvip, stale)) = opts.misdelivery {
            if mvip == vdst {
                match self.cache.get(vdst) {
                    Some(v) if v == stale => {
                        self.cache.remove(vdst);
                        self.stats.borrow_mut().invalidated_entries += 1;
                    }
                    Some(v) if v != outer_dst => {
                        pkt.tunnel.as_mut().expect("tunnelled").outer.dst = v;
                    }
                    _ => {}
                }
                return changed.then_some(opts);
            }
        }

        // 2. Promotion from spines to cores.
        if role == V2pRole::Spine && to_gw {
            let was_hot = self.cache.find(vdst).is_some() && self.cache.slot_bit(vdst);
            if let Some(v) = self.cache.get(vdst) {
                if !self.cfg.promote_requires_access_bit || was_hot {
                    opts.spill = Some((vdst, v));
                    self.stats.borrow_mut().promotions += 1;
                    return Some(opts);
                }
                // Not hot yet: resolve here (step 5) on the lookup already made.
                pkt.tunnel.as_mut().expect("tunnelled").outer.dst = v;
                opts.hit = Some((self.cfg.switch_id, self.cfg.switch_ip));
                self.count_hit(pkt);
                return Some(opts);
            }
            // The miss already cleared the slot's bit; fall through to learning.
        }

        match role {
            // 3. ToRs: source learning on the way down to a server; destination if free.
            V2pRole::Tor => {
                if from_server.is_none() {
                    if self.cache.put(vsrc, outer_src).is_ok() {
                        self.stats.borrow_mut().inserts_source += 1;
                    }
                } else if !to_gw && self.cache.put_if_free(vdst, outer_dst) {
                    self.stats.borrow_mut().inserts_destination += 1;
                }
            }
            // 4. Destination learning / spillover / promotions.
            _ => {
                let had_tag = opts.spill.is_some();
                let candidate = opts.spill.or((!to_gw).then_some((vdst, outer_dst)));
                if let Some((k, v)) = candidate {
                    match role {
                        V2pRole::Core => {
                            if had_tag {
                                if k == vdst && !self.cache.slot_bit(k) && self.cache.find(k).is_none() {
                                    if let Ok(victim) = self.cache.put(k, v) {
                                        self.stats.borrow_mut().inserts_spill += 1;
                                        opts.spill = victim;
                                        changed = true;
                                        if victim.is_some() {
                                            self.stats.borrow_mut().spills += 1;
                                        }
                                    }
                                }
                            } else if self.cache.put_if_free(k, v) {
                                self.stats.borrow_mut().inserts_destination += 1;
                            }
                        }
                        V2pRole::Spine | V2pRole::GatewaySpine => {
                            // Admission: never evict an entry in use (bit set) for a newcomer.
                            let busy = self.cache.slot_bit(k) && self.cache.find(k).is_none();
                            if !busy {
                                changed |= self.overwrite_and_spill(k, v, had_tag, &mut opts);
                            }
                        }
                        V2pRole::GatewayTor => {
                            // Whatever it learns, its own mapping or a spilled one (the
                            // artifact's `learn` is the spill option's entry when there is one).
                            if self.maybe_learning_packet(vsrc, outer_src, k, v, ctx) && had_tag {
                                self.stats.borrow_mut().learning_packets_spilled += 1;
                            }
                            changed |= self.overwrite_and_spill(k, v, had_tag, &mut opts);
                        }
                        V2pRole::Tor => unreachable!("handled above"),
                    }
                }
            }
        }

        // 5. Resolution.
        if to_gw {
            if let Some(v) = self.cache.get(vdst) {
                pkt.tunnel.as_mut().expect("tunnelled").outer.dst = v;
                opts.hit = Some((self.cfg.switch_id, self.cfg.switch_ip));
                self.count_hit(pkt);
                changed = true;
            }
        }
        // A spilled entry going down to a server has no switch left to land in: drop it.
        if opts.spill.is_some() && role.is_tor() {
            let dst = pkt.tunnel.as_ref().expect("tunnelled").outer.dst;
            if self.host_ports.iter().any(|p| *p == Some(dst)) {
                opts.spill = None;
                changed = true;
            }
        }
        changed.then_some(opts)
    }

    /// Insert (k, v) by overwriting; the displaced entry (if any) rides on in the spill option,
    /// and a consumed spill option is removed. Returns whether the options changed.
    fn overwrite_and_spill(&mut self, k: u32, v: u32, had_tag: bool, opts: &mut V2pOptions) -> bool {
        let Ok(victim) = self.cache.put(k, v) else { return false };
        let mut s = self.stats.borrow_mut();
        if had_tag {
            s.inserts_spill += 1;
        } else {
            s.inserts_destination += 1;
        }
        if victim.is_some() {
            s.spills += 1;
        }
        if had_tag || victim.is_some() {
            opts.spill = victim;
            return true;
        }
        false
    }

    /// With probability P_learn, send (vip, pip) to the sender's ToR; whether one was sent. The
    /// sender is the server the inner source VM `vsrc` lives on: the outer source, except for a
    /// packet a server sent back, whose outer source is that server (the artifact's client tags
    /// every packet with its server's address, `SourceTag`, and the learning packet goes there).
    fn maybe_learning_packet(&mut self, vsrc: u32, outer_src: u32, vip: u32, pip: u32, ctx: &mut Ctx<'_>) -> bool {
        if self.cfg.p_learn <= 0.0 || !(ctx.rng.gen::<f64>() < self.cfg.p_learn) {
            return false;
        }
        let sender_pip = self.facts.directory.as_ref().and_then(|d| d.pip_at(vsrc, ctx.now_ps)).unwrap_or(outer_src);
        let Some(&tor_ip) = self.facts.tor_ip_of_server.get(&sender_pip) else { return false };
        if tor_ip == self.cfg.switch_ip {
            return false;
        }
        let p = self.control_packet(tor_ip, ControlMessage::Learn { vip, pip });
        self.stats.borrow_mut().learning_packets += 1;
        ctx.generate(p, Verdict::Route);
        true
    }
}

impl Program for V2pSwitch {
    fn name(&self) -> &str {
        "switchv2p"
    }

    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        let tenant = pkt.tunnel.as_ref().is_some_and(|t| tunnel_tags(&t.encap).is_some());
        if !tenant {
            if pkt.tunnel.is_none() && matches!(pkt.l4, L4::Udp { dst_port: CONTROL_PORT, .. }) {
                return self.control(pkt, ctx);
            }
            return self.l3.forward(pkt, ctx);
        }
        if self.cfg.cache_slots > 0 {
            let outer_dst = pkt.tunnel.as_ref().expect("tenant").outer.dst;
            let to_gw = self.facts.gateways.contains(&outer_dst);
            if self.cfg.scheme.is_switchv2p() {
                let opts = match tunnel_tags(&pkt.tunnel.as_ref().expect("tenant").encap) {
                    Some(options) if !options.is_empty() => V2pOptions::parse(options).unwrap_or_default(),
                    _ => V2pOptions::default(),
                };
                if let Some(new) = self.switchv2p(pkt, meta, opts, ctx) {
                    if let Some(options) = pkt.tunnel.as_mut().and_then(|t| tunnel_tags_mut(&mut t.encap)) {
                        new.overwrite(options);
                    }
                }
            } else {
                let vdst = pkt.ip.dst;
                self.greedy(pkt, vdst, to_gw);
            }
        }
        self.l3.forward(pkt, ctx)
    }

    /// Every table and register the program uses, sized for this switch's network, in the
    /// layout of the artifact's P4 prototype where ours has the same state (docs/switchv2p.md,
    /// "Switch resources (Table 6)", lists what differs). The P4 program is the same on every
    /// switch (a `switch_config` entry selects the role), so every role declares every block.
    fn resources(&self) -> ResourceReport {
        let mut r = ResourceReport::new(self.name());
        let n_switches = self.cfg.num_switches as u64;
        let servers = self.facts.tor_ip_of_server.len() as u64;
        let gateways = self.facts.gateways.len() as u64;
        for e in self.cache.resource_entries("v2p") {
            r.push(e);
        }
        if self.timestamp_vector {
            // One time per switch id (the P4's `bf`: 32-bit times, `global_tstamp[47:16]`).
            r.push(ResourceEntry::new("ts_vector", ResourceKind::Register, n_switches, 0, 32));
        }
        let id_bits = bits_to_address(n_switches);
        // Role (3 bits: ToR, gateway ToR, spine, gateway spine, core) and switch id.
        r.push(ResourceEntry::new("switch_config", ResourceKind::Exact, 1, 0, 3 + id_bits));
        // Is the outer destination a gateway (the P4's `match_gw`).
        r.push(ResourceEntry::new("match_gw", ResourceKind::Exact, gateways, 32, 1));
        if self.cfg.scheme.is_switchv2p() {
            // ToRs: the server behind each port, to tag packets a server sends back (the P4's
            // `check_misdelivered` keys on the outer source instead).
            r.push(ResourceEntry::new("server_of_port", ResourceKind::Exact, self.host_ports.len() as u64, 9, 32));
            // Gateway ToRs: a sender's ToR, where its learning packet goes (the P4's
            // `learning_mirror_session` + `src_to_tor`).
            r.push(ResourceEntry::new("sender_tor", ResourceKind::Exact, servers, 32, 32));
        }
        // Outer destination → port, for every server, gateway and switch address.
        r.push(ResourceEntry::new("l3_forward", ResourceKind::Exact, servers + gateways + n_switches, 32, 9));
        r
    }
}
