//! The OrbitCache switch program through both devices of the one pipeline core
//! (`innet_dataplane::twin`): a write reply spawns a cache packet (multicast to the client and
//! into the recirculation loop), reads for the key park in the request table and are served by
//! the orbiting packet (multicast again), a write invalidates the key, plain packets are routed.
//! The simulator's switch and the real switch must send the same frames out of the same ports
//! and leave the program in the same state; only the number of idle laps differs (time is not
//! shared: the orbit runs until the simulation's horizon, or the real switch's last tick).

use std::collections::HashMap;

use innet_dataplane::twin::{rack_host_ips, through_real, through_sim};
use innet_dataplane::{NoControl, SwitchConfig};
use innet_orbitcache::kv;
use innet_orbitcache::orbit_switch::{OrbitCounters, OrbitSwitch, OrbitSwitchConfig};
use innet_wire::orbitcache::{Header, Op, Stamp, BASE_PORT, CACHED_SWITCH};
use innet_wire::phv::codec::emit_into;
use innet_wire::phv::WireExtras;

const HOSTS: u32 = 4;
const HKEY: u128 = 0xfeed;

fn frame(mut pkt: innet_sim::packet::Packet) -> Vec<u8> {
    pkt.wire = Some(Box::new(WireExtras {
        eth_dst: [2, 0, 0, 0, 0, 2],
        eth_src: [2, 0, 0, 0, 0, 1],
        ..WireExtras::default()
    }));
    let mut f = Vec::new();
    emit_into(&pkt, &mut f).unwrap();
    f
}

/// A message from host `from` (the server, host 3, answers from its OrbitCache port).
fn msg(from: u32, to: u32, dport: u16, h: Header, value: bool) -> Vec<u8> {
    let ips = rack_host_ips(HOSTS);
    let stamp = Stamp {
        key_id: 7,
        version: 1,
    };
    frame(kv::build(
        (ips[from as usize], if from == 3 { BASE_PORT } else { 5000 + from as u16 }),
        (ips[to as usize], dport),
        &h,
        b"key-0007",
        value.then_some((stamp, 64)),
    ))
}

fn program() -> OrbitSwitch {
    let ips = rack_host_ips(HOSTS);
    let host_groups: HashMap<u32, u16> = ips.iter().enumerate().map(|(i, &ip)| (ip, i as u16)).collect();
    let mut p = OrbitSwitch::new(OrbitSwitchConfig {
        table_entries: 4,
        queue_slots: 4,
        switch_ip: innet_sim::topology::switch_ip(0),
        host_groups,
        skip_invalidation: false,
        insert_valid: false,
    });
    p.install(HKEY, 0);
    p.fetching[0] = true;
    p
}

/// One group per host: {the host's port, the recirculation port} (as crates/orbitcache/src/run.rs).
fn config() -> SwitchConfig {
    SwitchConfig {
        multicast_groups: (0..HOSTS as u16).map(|p| vec![(p, 1), (HOSTS as u16, 1)]).collect(),
        ..SwitchConfig::default()
    }
}

fn frames() -> Vec<(u16, Vec<u8>)> {
    let wrep = Header {
        cached: CACHED_SWITCH,
        ..Header::new(Op::WriteReply, 1, HKEY)
    };
    let mut f = vec![(3, msg(3, 0, 5000, wrep, true))];
    // Plain traffic (not on OrbitCache ports) from host 1 first, so that its reads reach the
    // simulated switch after the write reply.
    for i in 0..3 {
        f.push((1, msg(1, 2, 9, Header::new(Op::Read, 100 + i, 1), true)));
    }
    for seq in 10..13 {
        f.push((1, msg(1, 3, BASE_PORT, Header::new(Op::Read, seq, HKEY), false)));
    }
    // A read for a key not cached goes to the server.
    f.push((2, msg(2, 3, BASE_PORT, Header::new(Op::Read, 20, 0xbeef), false)));
    f
}

fn state(p: &OrbitSwitch, _: &NoControl) -> (OrbitCounters, Vec<u8>, Vec<u8>, Vec<u16>) {
    let mut c = p.counters.clone();
    c.idle_passes = 0; // laps: the one thing that depends on how long the orbit ran
    (c, p.state.clone(), p.generation.clone(), p.qlen.clone())
}

#[test]
fn orbitcache_is_the_same_on_both_devices() {
    let (sim, sim_state) = through_sim(program(), NoControl, config(), HOSTS, &frames(), 50_000_000, state);
    let (real, real_state) = through_real(program(), NoControl, config(), HOSTS, &frames(), 200, state).unwrap();
    assert_eq!(sim.out, real.out, "frames out per port: simulator vs real");
    assert_eq!(sim_state, real_state, "program state: simulator vs real");
    let (s, r) = (sim.counters, real.counters);
    assert_eq!(
        (s.multicast_copies, s.consumed, s.no_route, s.program_drops, s.clones, s.generated),
        (r.multicast_copies, r.consumed, r.no_route, r.program_drops, r.clones, r.generated)
    );
    // What the test is about happened: one cache packet spawned, three reads parked and served
    // by it (each a multicast to host 1 and back into the loop), the rest routed.
    let (c, st, _, qlen) = sim_state;
    assert_eq!((c.spawned, c.parked, c.served), (1, 3, 3));
    assert_eq!(st[0], innet_orbitcache::orbit_switch::VALID);
    assert_eq!(qlen[0], 0);
    assert_eq!(s.multicast_copies, 2 * 4);
    assert_eq!(sim.out[&0].len(), 1, "the write reply reached the client");
    assert_eq!(sim.out[&1].len(), 3, "three served reads");
    assert_eq!(sim.out[&2].len(), 3, "the plain packets");
    assert_eq!(sim.out[&3].len(), 1, "the uncached read reached the server");
    assert!(s.recirculations > 10 && r.recirculations > 10, "the cache packet orbits");
}
