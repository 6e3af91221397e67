//! The five pipelines of the paper's Table 1, re-created from their public specifications as
//! Pipebench table specs (the paper's own pipeline files were never published). Each table keeps
//! the purpose, match fields and next tables of the specification it follows; stateful pieces
//! OVS cannot express without conntrack or groups (which the slow path does not model) are
//! written as register-carried decisions, as docs/gigaflow.md explains table by table.

use super::model::{Act, Key, Next, PipelineSpec, TableSpec};
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
    for p in 1..=super::ruleset::N_PORTS {
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

pub fn ols() -> PipelineSpec {
    todo_spec("OLS")
}
pub fn ant() -> PipelineSpec {
    todo_spec("ANT")
}
pub fn otl() -> PipelineSpec {
    todo_spec("OTL")
}
fn todo_spec(name: &'static str) -> PipelineSpec {
    PipelineSpec { name, description: "not yet built", tables: vec![], paper_tables: 0, paper_traversals: 0 }
}
