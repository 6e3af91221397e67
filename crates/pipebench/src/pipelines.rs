//! The five pipelines of the paper's Table 1, re-created from their public specifications as
//! Pipebench table specs (the paper's own pipeline files were never published). Each table keeps
//! the purpose, match fields and next tables of the specification it follows; stateful pieces
//! OVS cannot express without conntrack or groups (which the slow path does not model) are
//! written as register-carried decisions, as docs/gigaflow.md explains table by table.

use super::model::{Act, Edge, Key, Next, PipelineSpec, TableSpec};
use Act::*;
use Key::*;
use Next::*;

/// Names accepted by [`pipeline`].
pub const NAMES: [&str; 5] = ["OFD", "PSC", "OLS", "ANT", "OTL"];

/// The pipeline spec for a Table 1 name (case-insensitive).
pub fn pipeline(name: &str) -> Result<PipelineSpec, String> {
    match name.to_ascii_uppercase().as_str() {
        "OFD" => Ok(ofd()),
        "PSC" => Ok(psc()),
        "OLS" => Ok(ols()),
        "ANT" => Ok(ant()),
        "OTL" => Ok(otl()),
        _ => Err(format!("unknown pipeline '{name}' (expected one of OFD, PSC, OLS, ANT, OTL)")),
    }
}

const ACL5: &[Key] = &[IpSrc, IpDst, Proto, SPort, DPort];

/// Register-dispatched output: one conditional miss per port value of `reg`.
fn out_by_port(mut t: TableSpec, reg: u8) -> TableSpec {
    for p in 1..=super::model::N_PORTS {
        t = t.miss_if((reg, p), &[], Port(p));
    }
    t
}

/// OF-DPA 2.0 as deployed by CORD (ONOS's OFDPA2 pipeliner): ingress port, VLAN, termination
/// MAC, unicast routing, bridging and policy ACL flow tables, and the four group types the
/// flows write (L3 ECMP, L3 unicast, L2 interface, L2 flood) as tables keyed by the decision.
/// reg0 = group type written by routing/bridging (1 L3 unicast, 2 L3 ECMP, 3 L2 interface,
/// 4 L2 flood, 6 punt), reg2 = output port, reg3 = VLAN, reg5 = ACL drop (clear-actions).
pub fn ofd() -> PipelineSpec {
    let acl = |t: TableSpec| {
        let mut t = t;
        for (g, next) in [(1u32, Table(71)), (2, Table(70)), (3, Table(72)), (4, Table(73))] {
            t = t.hit_if((0, g), ACL5, &[Load(5, 1)], next);
        }
        t.miss_if((0, 1), &[], Table(71)).miss_if((0, 2), &[], Table(70)).miss_if((0, 3), &[], Table(72)).miss_if((0, 4), &[], Table(73)).miss(&[], Drop)
    };
    PipelineSpec {
        name: "OFD",
        description: "CORD OF-DPA",
        paper_tables: 10,
        paper_traversals: 5,
        traversals_built: 5,
        tables: vec![
            TableSpec::new(0, "ingress_port", "admit packets by physical input port; goto VLAN").hit(&[InPort], &[], Table(10)).miss(&[], Table(10)),
            TableSpec::new(10, "vlan", "assign the port's VLAN to untagged frames (reg3); ports without a rule get the default VLAN 1")
                .hit(&[InPort, Untagged], &[Load(3, 10)], Table(20))
                .miss(&[Load(3, 1)], Table(20)),
            TableSpec::new(20, "termination_mac", "frames to the router MAC (IPv4) go to unicast routing, others to bridging")
                .hit(&[InPort, RouterMac], &[], Table(30))
                .miss(&[], Table(50)),
            TableSpec::new(30, "unicast_routing", "IPv4 LPM on the destination; writes an L3 unicast or L3 ECMP group (reg0) and port (reg2); a miss is punted")
                .lpm()
                .hit(&[IpDst], &[Load(0, 1), LoadPort(2)], Table(60))
                .hit(&[IpDst], &[Load(0, 2), LoadPort(2)], Table(60))
                .miss(&[Load(0, 6)], Table(60)),
            TableSpec::new(50, "bridging", "VLAN + destination MAC; writes an L2 interface group (known) or L2 flood group (unknown)")
                .hit(&[EthDst], &[Load(0, 3), LoadPort(2)], Table(60))
                .miss(&[Load(0, 4)], Table(60)),
            acl(TableSpec::new(60, "policy_acl", "5-tuple ACL; a hit clears the action set (reg5=1, drop at the group); then the written group runs (punted packets end here)")),
            TableSpec::new(70, "group_l3_ecmp", "L3 ECMP group: select a bucket by source address; each bucket is an L3 unicast group")
                .hit(&[IpSrc], &[], Table(71))
                .miss(&[], Table(71)),
            TableSpec::new(71, "group_l3_unicast", "L3 unicast group: rewrite source MAC (router) and destination MAC (next hop); chain to L2 interface")
                .lpm()
                .hit(&[IpDst], &[RouteMacs], Table(72))
                .miss(&[], Table(72)),
            out_by_port(TableSpec::new(72, "group_l2_interface", "L2 interface group: output on the port (reg2) unless the ACL cleared the actions").miss_if((5, 1), &[], Drop), 2)
                .miss(&[], Drop),
            TableSpec::new(73, "group_l2_flood", "L2 flood group: output on every port of the VLAN unless the ACL cleared the actions")
                .miss_if((5, 1), &[], Drop)
                .miss(&[], Output),
        ],
    }
}

/// PISCES' L2L3-ACL example (the switch.p4-derived program the PISCES paper benchmarks):
/// source-MAC check, router-MAC check, IPv4 LPM, next-hop (destination MAC), source-MAC
/// rewrite, destination-MAC forwarding and the ACL, in that order. Bridged frames skip L3.
/// reg2 = output port, chosen by dmac; the ACL denies (drop) or lets the port output.
pub fn psc() -> PipelineSpec {
    PipelineSpec {
        name: "PSC",
        description: "PISCES L2L3-ACL",
        paper_tables: 7,
        paper_traversals: 2,
        traversals_built: 2,
        tables: vec![
            TableSpec::new(0, "smac", "known source MACs (MAC learning); unknown ones would be learnt, both continue").hit(&[EthSrc], &[], Table(1)).miss(&[], Table(1)),
            TableSpec::new(1, "routable", "frames to a router MAC are routed (IPv4), the rest bridged").hit(&[RouterMac], &[], Table(2)).miss(&[], Table(5)),
            TableSpec::new(2, "ipv4_lpm", "IPv4 longest-prefix match on the destination; the default route continues").lpm().hit(&[IpDst], &[], Table(3)).miss(&[], Table(3)),
            TableSpec::new(3, "nexthop", "next hop's destination MAC by destination prefix").lpm().hit(&[IpDst], &[SetEthDst], Table(4)).miss(&[], Table(4)),
            TableSpec::new(4, "send_frame", "rewrite the source MAC to the router's for the egress port").hit(&[EthDst], &[RouteMacs], Table(5)).miss(&[], Table(5)),
            TableSpec::new(5, "dmac", "destination MAC to output port (reg2); unknown destinations flood (reg2=5)").hit(&[EthDst], &[LoadPort(2)], Table(6)).miss(&[Load(2, 5)], Table(6)),
            out_by_port(TableSpec::new(6, "acl", "5-tuple ACL: deny drops; otherwise output on reg2 (flood for 5)").hit(ACL5, &[], Drop), 2)
                .miss_if((2, 5), &[], Output)
                .miss(&[], Drop),
        ],
    }
}

/// OVN's logical switch as ovn-northd (20.09–20.12 era) defines it: 22 ingress and 11 egress
/// stages, of which we keep all but the three load-balancer hairpin stages (ls_in_pre_hairpin,
/// ls_in_nat_hairpin, ls_in_hairpin: they need conntrack), i.e. 19 + 11 = 30 tables.
/// ovn-controller puts ingress stage N at OpenFlow table 8+N behind its physical tables 0–7;
/// packets here enter the logical pipeline directly, so ingress stage N is table N and egress
/// stage N is table 40+N (written below with ovn-controller's numbers, shifted by `shift_ingress`). Stages default to
/// `next;` (priority-0 goto the next table). `output;` in an ingress stage (DHCP/DNS responders,
/// L2 lookup) jumps to the egress pipeline. reg14/reg15 = logical inport/outport, reg0 = the
/// REGBIT flags (1 conntrack, 2 load balancing), reg4 = responder flags (1 DHCP, 2 DNS).
pub fn ols() -> PipelineSpec {
    let next = |id: u8, name: &'static str, purpose: &'static str| TableSpec::new(id, name, purpose).miss(&[], Table(id + 1));
    shift_ingress(PipelineSpec {
        name: "OLS",
        description: "OVN logical switch",
        paper_tables: 30,
        paper_traversals: 23,
        // Table 1's 23 less the 4 that paired the DHCP responder with the stateless skip or the
        // egress ACL drop: a DHCP discovery carries no address a ClassBench rule matches.
        traversals_built: 19,
        tables: vec![
            TableSpec::new(8, "ls_in_port_sec_l2", "admit frames whose inport and eth.src match a port's addresses (sets the logical inport)")
                .hit(&[InPort, EthSrc], &[Load(14, 1)], Table(9))
                .miss(&[], Drop),
            TableSpec::new(9, "ls_in_port_sec_ip", "IPv4 source port security: inport + eth.src + ip4.src allowed; DHCP discovery (0.0.0.0 → 255.255.255.255, udp 68 → 67) from the port's eth.src allowed")
                .hit(&[InPort, EthSrc, IpSrc], &[], Table(10))
                .hit(&[InPort, EthSrc, DhcpDiscover], &[], Table(10))
                .miss(&[], Drop),
            next(10, "ls_in_port_sec_nd", "ARP/ND port security (IPv4 passes with the default)"),
            TableSpec::new(11, "ls_in_pre_acl", "mark traffic for conntrack (REGBIT_CONNTRACK_DEFRAG); stateless (allow-stateless) traffic skips the stateful ACL stages")
                .hit(&[IpSrc, IpDst], &[], Table(16))
                .miss(&[Load(0, 1)], Table(12)),
            TableSpec::new(12, "ls_in_pre_lb", "traffic to a load-balancer VIP: mark for conntrack/LB")
                .hit(&[IpDst, Proto, DPort], &[Load(0, 2)], Table(13))
                .miss(&[], Table(13)),
            TableSpec::new(13, "ls_in_pre_stateful", "send traffic marked for conntrack or load balancing to conntrack (ct_next: ct(table=next stage), a recirculation) in the ingress zone")
                .miss_if((0, 1), &[CtNext(OLS_ZONE_IN)], Table(14))
                .miss_if((0, 2), &[CtNext(OLS_ZONE_IN)], Table(14))
                .miss(&[], Table(14)),
            ovn_acl_hint(TableSpec::new(14, "ls_in_acl_hint", "ACL hints from the connection state (ct.new / ct.est && !ct.rpl → hint registers)"), 15),
            ovn_acl_guards(TableSpec::new(15, "ls_in_acl", "from-lport ACLs: drop/reject or allow on the 5-tuple; before them OVN's ct.inv drop and its reply/related fast paths"), 16)
                .hit(ACL5, &[], Drop)
                .hit(ACL5, &[Load(1, 1)], Table(16))
                .miss(&[], Table(16)),
            TableSpec::new(16, "ls_in_qos_mark", "QoS marking by addresses (DSCP kept in a register: the ToS byte is Gigaflow's tag)")
                .hit(&[IpSrc, IpDst], &[Load(2, 8)], Table(17))
                .miss(&[], Table(17)),
            next(17, "ls_in_qos_meter", "QoS metering (meters not modelled; continues)"),
            TableSpec::new(18, "ls_in_lb", "load balancing: DNAT a VIP to a backend (ct_lb as a rewrite)")
                .hit_if((0, 2), &[IpDst, Proto, DPort], &[Dnat], Table(19))
                .miss(&[], Table(19)),
            TableSpec::new(19, "ls_in_stateful", "commit new connections (ct_commit: ct(commit))")
                .guard(100, "+new+trk", &[CtCommit(OLS_ZONE_IN)], Table(20))
                .miss(&[], Table(20)),
            next(20, "ls_in_arp_rsp", "ARP/ND responder for known addresses (IPv4 passes)"),
            TableSpec::new(21, "ls_in_dhcp_options", "DHCPv4 requests (udp 68 → 67; discovery 0.0.0.0 → 255.255.255.255, renewal from the port's address to the server or broadcast) from a port with DHCP options: flag the reply")
                .hit(&[InPort, EthSrc, DhcpRequest], &[Load(4, 1)], Table(22))
                .miss(&[], Table(22)),
            TableSpec::new(22, "ls_in_dhcp_response", "answer flagged DHCP requests: outport = inport; output (to egress)")
                .miss_if((4, 1), &[Load(15, 1)], Table(40))
                .miss(&[], Table(23)),
            TableSpec::new(23, "ls_in_dns_lookup", "DNS queries (udp dst 53) to the switch's DNS server address: flag the answer")
                .hit(&[IpDst, Udp(53)], &[Load(4, 2)], Table(24))
                .miss(&[], Table(24)),
            TableSpec::new(24, "ls_in_dns_response", "answer flagged DNS queries: outport = inport; output (to egress)")
                .miss_if((4, 2), &[Load(15, 1)], Table(40))
                .miss(&[], Table(25)),
            next(25, "ls_in_external_port", "external (virtual) ports' ARP/DHCP handling (IPv4 unicast continues)"),
            TableSpec::new(26, "ls_in_l2_lkup", "destination MAC to logical outport (reg15); output to egress; unknown unicast is dropped (no unknown-address ports)")
                .hit(&[EthDst], &[LoadPort(15)], Table(40))
                .miss(&[], Drop),
            next(40, "ls_out_pre_lb", "egress: mark LB traffic (continues)"),
            next(41, "ls_out_pre_acl", "egress: mark for conntrack (continues)"),
            TableSpec::new(42, "ls_out_pre_stateful", "egress: conntrack in the output port's zone (ct_next: ct(table=next stage), a recirculation)").miss(&[CtNext(OLS_ZONE_OUT)], Table(43)),
            next(43, "ls_out_lb", "egress: load-balancer reply handling (continues)"),
            ovn_acl_hint(TableSpec::new(44, "ls_out_acl_hint", "egress: ACL hints from the connection state"), 45),
            ovn_acl_guards(TableSpec::new(45, "ls_out_acl", "to-lport ACLs on the 5-tuple; before them ct.inv drop and the reply/related fast paths"), 46)
                .hit(ACL5, &[], Drop)
                .miss(&[], Table(46)),
            next(46, "ls_out_qos_mark", "egress QoS marking (continues)"),
            next(47, "ls_out_qos_meter", "egress QoS metering (continues)"),
            TableSpec::new(48, "ls_out_stateful", "egress: commit new connections (ct(commit))")
                .guard(100, "+new+trk", &[CtCommit(OLS_ZONE_OUT)], Table(49))
                .miss(&[], Table(49)),
            TableSpec::new(49, "ls_out_port_sec_ip", "IPv4 destination port security: eth.dst + allowed ip4.dst pass, other addresses to that MAC drop")
                .hit(&[EthDst, IpDstHost], &[], Table(50))
                .hit(&[EthDst], &[], Drop)
                .miss(&[], Table(50)),
            TableSpec::new(50, "ls_out_port_sec_l2", "eth.dst of the outport: output; otherwise drop")
                .hit(&[EthDst], &[], Output)
                .miss(&[], Drop),
        ],
    })
}

/// OVN's ACL hint stage: hint registers from the connection state, then `next`.
fn ovn_acl_hint(t: TableSpec, next: u8) -> TableSpec {
    t.guard(7, "+new-est+trk", &[Load(7, 1)], Table(next)).guard(6, "-new+est-rpl+trk", &[Load(7, 2)], Table(next)).miss(&[], Table(next))
}

/// OVN's priority-65535 rules before an ACL stage's ACLs: `ct.inv` drops; reply traffic of
/// established connections and related traffic skip the ACLs to `next`.
fn ovn_acl_guards(t: TableSpec, next: u8) -> TableSpec {
    t.guard(65535, "+inv+trk", &[], Drop)
        .guard(65535, "-new+est-rel-inv+rpl+trk", &[], Table(next))
        .guard(65535, "-new-est+rel-inv+trk", &[], Table(next))
}

/// `spec` with its conntrack and TTL handling removed: no `ct`, no `dec_ttl`, no `ct_state`
/// guards — the stateful stages continue as plain `goto_table`s, as the pipelines were built
/// before conntrack was modelled (issue 22). Measures what recirculation does to the caches.
pub fn without_conntrack(mut spec: PipelineSpec) -> PipelineSpec {
    for t in &mut spec.tables {
        t.guards.clear();
        for e in t.hits.iter_mut().chain(t.misses.iter_mut()) {
            e.acts.retain(|a| !matches!(a, CtNext(_) | CtCommit(_) | DecTtl));
        }
    }
    spec
}

/// The pipeline with MAC-only port security: the tables that bind an end's MAC to its IPv4
/// address (OLS's `ls_in_port_sec_ip` and `ls_out_port_sec_ip`, ANT's SpoofGuard) keep only
/// their default, which continues where an admitted packet went — what OVN installs for a
/// logical port whose `port_security` lists a MAC and no IP, and Antrea without its IP check.
/// For the experiment varying the cause of GF < MF on OLS and ANT (issue 22): those lookups
/// examine an end's MAC and address together, coupling L2 and L3 parts into one per-flow
/// sub-traversal.
pub fn mac_only_port_security(mut spec: PipelineSpec) -> PipelineSpec {
    let binds = |k: &[Key]| (k.contains(&EthSrc) && (k.contains(&IpSrc) || k.contains(&IpSrcHost))) || (k.contains(&EthDst) && (k.contains(&IpDst) || k.contains(&IpDstHost)));
    for t in &mut spec.tables {
        let Some(admit) = t.hits.iter().find(|e| binds(e.keys)).map(|e| e.next) else { continue };
        t.hits.clear();
        t.misses = vec![Edge { keys: &[], requires: None, acts: Vec::new(), next: admit }];
    }
    spec
}

/// Renumbers OVN's ingress tables 8..=39 to 0..=31 (see [`ols`]).
fn shift_ingress(mut spec: PipelineSpec) -> PipelineSpec {
    let map = |t: u8| if (8..40).contains(&t) { t - 8 } else { t };
    for t in &mut spec.tables {
        t.id = map(t.id);
        for e in t.hits.iter_mut().chain(t.misses.iter_mut()) {
            if let Next::Table(n) = e.next {
                e.next = Next::Table(map(n));
            }
        }
        for g in &mut t.guards {
            if let Next::Table(n) = g.next {
                g.next = Next::Table(map(n));
            }
        }
    }
    spec
}

/// OVN's conntrack zones for the logical switch's ingress and egress (OVN takes them per
/// logical port from reg13; one per direction here, as our ct takes no zone from a field).
const OLS_ZONE_IN: u16 = 1;
const OLS_ZONE_OUT: u16 = 2;
/// Antrea's conntrack zone (`CtZone`, 0xfff0).
const ANT_ZONE: u16 = 65520;

/// Antrea's OVS pipeline (docs/design/ovs-pipeline.md, Antrea 1.x table numbers). reg0 marks,
/// reg1 = output port, reg4 = Service state (1 affinity, 2 needs DNAT).
pub fn ant() -> PipelineSpec {
    PipelineSpec {
        name: "ANT",
        description: "Antrea (Kubernetes)",
        paper_tables: 22,
        paper_traversals: 20,
        traversals_built: 20,
        tables: vec![
            TableSpec::new(0, "Classifier", "classify by input port (and interface MAC): Pods, gateway and tunnel to SpoofGuard, uplink to Uplink")
                .hit(&[InPort, EthSrc], &[Load(0, 2)], Table(10))
                .hit(&[InPort, EthSrc], &[Load(0, 4)], Table(5))
                .miss(&[], Table(10)),
            TableSpec::new(5, "Uplink", "traffic from the uplink goes to the host (bridge-local port)").miss(&[], Port(1)),
            TableSpec::new(10, "SpoofGuard", "a Pod's port, MAC and IP must agree; otherwise drop").hit(&[InPort, EthSrc, IpSrc], &[], Table(30)).miss(&[], Drop),
            TableSpec::new(20, "ARPResponder", "answers ARP for the gateway/remote Pods (ARP only: no IPv4 packet comes here)").miss(&[], Drop),
            TableSpec::new(30, "Conntrack", "ct(table=31,zone=65520): conntrack, then ConntrackState in a recirculated pass").miss(&[CtNext(ANT_ZONE)], Table(31)),
            TableSpec::new(31, "ConntrackState", "drop invalid connections (ct_state=+inv+trk)").guard(190, "+inv+trk", &[], Drop).miss(&[], Table(40)),
            TableSpec::new(40, "SessionAffinity", "Service session affinity: remember the chosen Endpoint (reg4=1)")
                .hit(&[IpSrc, IpDst, Proto, DPort], &[Load(4, 1)], Table(41))
                .miss(&[], Table(41)),
            TableSpec::new(41, "ServiceLB", "ClusterIP/NodePort Service by destination IP, protocol and port: select an Endpoint (reg4=2)")
                .hit(&[IpDst, Proto, DPort], &[Load(4, 2)], Table(42))
                .miss(&[], Table(42)),
            TableSpec::new(42, "EndpointDNAT", "DNAT Service traffic to the selected Endpoint")
                .hit_if((4, 2), &[IpDst, Proto, DPort], &[Dnat], Table(45))
                .miss(&[], Table(45)),
            TableSpec::new(45, "AntreaPolicyEgressRule", "Antrea-native (ClusterNetworkPolicy) egress rules: drop on the 5-tuple").hit(ACL5, &[], Drop).miss(&[], Table(50)),
            TableSpec::new(50, "EgressRule", "K8s NetworkPolicy egress allow rules: allowed traffic skips the default table")
                .hit(&[IpSrc, IpDst, Proto, DPort], &[], Table(61))
                .miss(&[], Table(60)),
            TableSpec::new(60, "EgressDefaultRule", "default deny for Pods isolated for egress").hit(&[IpSrc], &[], Drop).miss(&[], Table(61)),
            TableSpec::new(61, "EgressMetric", "egress policy metrics (continues)").miss(&[], Table(70)),
            TableSpec::new(70, "L3Forwarding", "to the gateway MAC and another subnet: rewrite MACs and route; same subnet goes to L2")
                .hit(&[RouterMac, IpDst], &[RouteMacs], Table(72))
                .miss(&[], Table(80)),
            TableSpec::new(72, "L3DecTTL", "decrement TTL of routed packets (dec_ttl)").miss(&[DecTtl], Table(80)),
            TableSpec::new(80, "L2ForwardingCalc", "destination MAC to output port (reg1); unknown destinations flood (reg1=5)")
                .hit(&[EthDst], &[LoadPort(1)], Table(85))
                .miss(&[Load(1, 5)], Table(85)),
            TableSpec::new(85, "AntreaPolicyIngressRule", "Antrea-native ingress rules: drop on the 5-tuple").hit(ACL5, &[], Drop).miss(&[], Table(90)),
            TableSpec::new(90, "IngressRule", "K8s NetworkPolicy ingress allow rules: allowed traffic skips the default table")
                .hit(&[IpSrc, IpDst, Proto, DPort], &[], Table(101))
                .miss(&[], Table(100)),
            TableSpec::new(100, "IngressDefaultRule", "default deny for Pods isolated for ingress").hit(&[IpDst], &[], Drop).miss(&[], Table(101)),
            TableSpec::new(101, "IngressMetric", "ingress policy metrics (continues)").miss(&[], Table(105)),
            TableSpec::new(105, "ConntrackCommit", "commit new connections: ct(commit,table=110), a recirculation")
                .guard(200, "+new+trk", &[CtCommit(ANT_ZONE), CtNext(ANT_ZONE)], Table(110))
                .miss(&[], Table(110)),
            out_by_port(TableSpec::new(110, "L2ForwardingOut", "output on reg1's port; flood for unknown destinations"), 1)
                .miss_if((1, 5), &[], Output)
                .miss(&[], Drop),
        ],
    }
}

/// The ONF Table Type Pattern for an L2/L3 switch with ACLs (ONF TS-017's L2L3-ACL example):
/// ingress ACL, VLAN (access ports learn MACs, router-facing trunks do not), MAC learning,
/// termination MAC, bridging, IPv4 unicast routing, next hop (neighbour), egress ACL.
pub fn otl() -> PipelineSpec {
    PipelineSpec {
        name: "OTL",
        description: "ONF TTP L2L3-ACL",
        paper_tables: 8,
        paper_traversals: 11,
        traversals_built: 11,
        tables: vec![
            TableSpec::new(0, "ingress_acl", "ingress 5-tuple ACL: deny drops").hit(ACL5, &[], Drop).miss(&[], Table(1)),
            TableSpec::new(1, "vlan", "untagged frames get the port's VLAN (reg3); access ports (1, 3) go to MAC learning, trunk ports (2, 4) skip it")
                .hit(&[PortGroup(0), Untagged], &[Load(3, 10)], Table(2))
                .hit(&[PortGroup(1), Untagged], &[Load(3, 20)], Table(3))
                .miss(&[Load(3, 1)], Table(2)),
            TableSpec::new(2, "mac_learning", "known (port, source MAC) pairs; unknown ones would be learnt; continue")
                .hit(&[InPort, EthSrc], &[], Table(3))
                .miss(&[], Table(3)),
            TableSpec::new(3, "termination_mac", "frames to a router MAC are routed, others bridged").hit(&[RouterMac], &[], Table(5)).miss(&[], Table(4)),
            TableSpec::new(4, "bridging", "destination MAC to port; unknown destinations flood").hit(&[EthDst], &[], Output).miss(&[], Output),
            TableSpec::new(5, "unicast_routing", "IPv4 LPM: prefixes resolve through the next-hop table, host routes rewrite directly; no route drops")
                .lpm()
                .hit(&[IpDst], &[], Table(6))
                .hit(&[IpDstHost], &[RouteMacs], Table(7))
                .miss(&[], Drop),
            TableSpec::new(6, "next_hop", "neighbour (ARP) entries: rewrite MACs; unresolved next hops drop (would go to the controller)")
                .hit(&[IpDstHost], &[RouteMacs], Table(7))
                .miss(&[], Drop),
            TableSpec::new(7, "egress_acl", "egress 5-tuple ACL: deny drops, otherwise output").hit(ACL5, &[], Drop).miss(&[], Output),
        ],
    }
}
