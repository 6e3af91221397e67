//! One program, both devices: runs a program with the same input frames through the
//! simulator's switch ([`SimSwitch`] in a one-rack network whose hosts only send and record)
//! and through the real switch ([`RealSwitch`] fed the frames in memory, no sockets), and
//! returns what left each: the frames per port and the pipeline's counters. The differential
//! tests of the pipeline core use it (crates/dataplane/tests/one_core.rs; a system's tests can
//! use it the same way): a difference between the two devices' verdict handling shows here.
//!
//! Time is the one thing the devices do not share (the simulator has links and a CPU port with
//! latency; the real switch answers at once), so the outcomes compare what left, not when: the
//! frames of each port are sorted.

use std::collections::BTreeMap;

use innet_sim::engine::{Node, Simulator};
use innet_sim::network::{Network, NodeId, PortId};
use innet_sim::packet::PacketId;
use innet_sim::routing;
use innet_sim::topology::TopologySpec;
use innet_switch::real::{FrameSwitch, RealConfig, RealSwitch, RouteTable, TxBatch};
use innet_switch::{ControlPlane, Program, SwitchConfig, SwitchCounters};
use innet_wire::phv::codec::{emit_into, parse_into};
use innet_wire::phv::edit::blank_packet;

use crate::fabric::{HostSite, Rack, SwitchSite};
use crate::{CpuPort, SimSwitch};

/// What left a switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Frames that left by each port (the recirculation port aside), sorted.
    pub out: BTreeMap<u16, Vec<Vec<u8>>>,
    pub counters: SwitchCounters,
}

/// The hosts of the simulated rack: they record what reaches them (as frames).
struct Tap {
    got: Vec<Vec<u8>>,
}

impl Node for Tap {
    fn receive(&mut self, net: &mut Network, _me: NodeId, _in: PortId, id: PacketId) {
        let mut f = Vec::new();
        match emit_into(net.pkt(id), &mut f) {
            Ok(()) => self.got.push(f),
            Err(e) => self.got.push(format!("emit error: {e}").into_bytes()),
        }
        net.consume(id);
    }
}

/// The rack of `hosts` hosts both devices stand for.
fn rack(hosts: u32) -> Rack {
    Rack::build(&TopologySpec::rack(hosts), 1).expect("a rack builds")
}

/// The IPs of the hosts of a rack of `hosts` hosts, in host order.
pub fn rack_host_ips(hosts: u32) -> Vec<u32> {
    let r = rack(hosts);
    (0..hosts as usize).map(|h| r.ip(h)).collect()
}

/// Run `program` + `control` on the simulator's switch of a rack of `hosts` hosts: each
/// `(port, frame)` is sent by the host on that switch port at time 0 (in order); the run lasts
/// `horizon_ps`. The CPU port is fast (10 Gb/s, 1 µs). Returns what left and `inspect` of the
/// program and control plane at the end.
pub fn through_sim<P: Program, C: ControlPlane<P>, T>(
    program: P,
    control: C,
    cfg: SwitchConfig,
    hosts: u32,
    frames: &[(u16, Vec<u8>)],
    horizon_ps: u64,
    inspect: impl FnOnce(&P, &C) -> T,
) -> (Outcome, T) {
    let mut rack = rack(hosts);
    let tor = rack.switch_node;
    let mut parts = Some((program, control, cfg));
    let tap = |_: HostSite<'_>| -> Box<dyn Node> { Box::new(Tap { got: Vec::new() }) };
    let switch = |site: SwitchSite<'_>| -> Box<dyn Node> {
        let (program, control, cfg) = parts.take().expect("a rack has one switch");
        let mut sw = SimSwitch::with_control(program, control, site.switch_index, site.routing.clone(), site.net, site.node);
        sw.cfg = cfg;
        sw.cpu_port = Some(CpuPort {
            bandwidth_bps: 10_000_000_000,
            buffer_bytes: 1 << 20,
            latency_ps: 1_000_000,
            gap_ps: 0,
        });
        Box::new(sw)
    };
    let nodes = rack.nodes(tap, switch);
    let mut net = rack.net;
    let mut tap_of_port = BTreeMap::new();
    let recirc = net.nodes[tor as usize].num_ports - 1;
    for local in 0..recirc {
        let peer = net.ports[net.port_id(tor, local) as usize].peer;
        tap_of_port.insert(local, net.ports[peer as usize].node);
    }
    for (port, frame) in frames {
        let mut pkt = blank_packet();
        parse_into(frame, &mut pkt).expect("test frames parse");
        let id = net.create_packet(pkt);
        let tap = tap_of_port[port];
        let pid = net.port_id(tap, 0);
        net.transmit(pid, id);
    }
    let mut sim = Simulator::new(net, nodes);
    sim.run_until(horizon_ps, &mut |_| {});
    let mut out = BTreeMap::new();
    for (&port, &tap) in &tap_of_port {
        let mut got = sim.node::<Tap>(tap).expect("a tap").got.clone();
        got.sort();
        out.insert(port, got);
    }
    let sw = sim.node::<SimSwitch<P, C>>(tor).expect("the switch");
    let result = (
        Outcome {
            out,
            counters: sw.counters,
        },
        inspect(&sw.program, &sw.control),
    );
    sim.finish();
    result
}

/// Run the same on the real switch (frames in memory): `hosts` ports with static routes to the
/// rack's host IPs; each frame enters on its port at time 0; then the switch is ticked (one lap
/// of the recirculation port per tick, timers at their time) until nothing is left or
/// `max_ticks` ticks have run.
pub fn through_real<P: Program, C: ControlPlane<P>, T>(
    program: P,
    control: C,
    cfg: SwitchConfig,
    hosts: u32,
    frames: &[(u16, Vec<u8>)],
    max_ticks: u32,
    inspect: impl FnOnce(&P, &C) -> T,
) -> Result<(Outcome, T), String> {
    // Host i is on the switch's port i (`sim_port_of` checks it against the simulator's routes).
    let routes: Vec<String> = rack_host_ips(hosts)
        .iter()
        .enumerate()
        .map(|(i, ip)| format!("{}/32={i}", std::net::Ipv4Addr::from(*ip)))
        .collect();
    let mut rc = RealConfig::ports(hosts as u16);
    rc.routes = RouteTable::parse(&routes, hosts as u16)?;
    rc.switch = cfg;
    let mut sw = RealSwitch::new(program, control, rc)?;
    let mut tx = TxBatch::new(hosts as u16);
    let mut out: BTreeMap<u16, Vec<Vec<u8>>> = (0..hosts as u16).map(|p| (p, Vec::new())).collect();
    let mut collect = |tx: &mut TxBatch| {
        for p in 0..hosts as u16 {
            out.get_mut(&p)
                .expect("a port")
                .extend(tx.port(p).queued().iter().map(|(_, f)| f.clone()));
        }
        tx.clear();
    };
    for (port, frame) in frames {
        sw.on_frame(*port, frame, [0; 10], 0, &mut tx);
        collect(&mut tx);
    }
    let mut now = 0;
    for _ in 0..max_ticks {
        let next = sw.on_tick(now, &mut tx);
        collect(&mut tx);
        match next {
            Some(t) => now = now.max(t),
            None => break,
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    let counters = sw.stats().switch;
    let t = inspect(&sw.program, &sw.control);
    Ok((Outcome { out, counters }, t))
}

/// Where the simulator's routing sends a packet to `ip` from the rack's switch (to check that
/// the real switch's static routes say the same).
pub fn sim_port_of(hosts: u32, ip: u32) -> Option<u16> {
    let Rack { routing, switch_index, .. } = rack(hosts);
    let idx = switch_index as usize;
    let pkt = innet_sim::packet::Packet::new(
        innet_sim::packet::Ipv4::new(0, ip, innet_sim::packet::IP_PROTO_UDP),
        innet_sim::packet::L4::Udp {
            src_port: 1,
            dst_port: 2,
        },
        0,
    );
    match routing.fibs[idx].next_hop(&routing, &pkt) {
        routing::NextHop::Port(p) => Some(p),
        _ => None,
    }
}
