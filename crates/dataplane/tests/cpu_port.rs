//! The switch CPU port (`Verdict::ToCpu` → `ControlPlane::packet_in`) and `Verdict::Consume`:
//! transfer time at the port's bandwidth, the CPU's latency, the spacing between transfers, the
//! drop-tail buffer, and packets that end at the switch counted as delivered.

use innet_dataplane::fabric::{build_fabric, Fabric};
use innet_dataplane::{ControlPlane, CpuPort, Ctx, Metadata, Program, SimSwitch, Verdict};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_sim::host::HostConfig;
use innet_sim::metrics::DropReason;
use innet_sim::packet::Packet;
use innet_sim::tcp::TcpConfig;
use innet_sim::topology::{Topology, TopologySpec};

const SER_100G_PS: u64 = 1066 * 80;
const SER_10G_PS: u64 = 1066 * 800;
const DELAY_PS: u64 = 1_000_000;
const CPU_LATENCY_PS: u64 = 8_500_000;
const GAP_PS: u64 = 250_000;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Cpu,
    Consume,
}

struct ToCpu {
    mode: Mode,
}

impl Program for ToCpu {
    fn name(&self) -> &str {
        "to_cpu"
    }
    fn ingress(&mut self, _pkt: &mut Packet, _meta: &mut Metadata, _ctx: &mut Ctx<'_>) -> Verdict {
        match self.mode {
            Mode::Cpu => Verdict::ToCpu,
            Mode::Consume => Verdict::Consume,
        }
    }
}

#[derive(Default)]
struct Cpu {
    seen_ps: Vec<u64>,
    timers_ps: Vec<u64>,
}

impl ControlPlane<ToCpu> for Cpu {
    fn packet_in(&mut self, _program: &mut ToCpu, _pkt: &mut Packet, ctx: &mut Ctx<'_>) -> Verdict {
        self.seen_ps.push(ctx.now_ps);
        // A control timer as the only side action of the pass must still fire.
        ctx.set_control_timer(ctx.now_ps + 1_000_000, 7);
        Verdict::Route
    }
    fn timer(&mut self, _program: &mut ToCpu, token: u64, ctx: &mut Ctx<'_>) {
        assert_eq!(token, 7);
        self.timers_ps.push(ctx.now_ps);
    }
}

fn rack(mode: Mode, packets: u64, cpu: Option<CpuPort>) -> Fabric {
    let topo = Topology::build(&TopologySpec::rack(2), &[]).unwrap();
    let flow = FlowSpec {
        src_host: 0,
        dst_host: 1,
        src_ip: 0,
        dst_ip: 0,
        start_ps: 0,
        size_bytes: packets * 1000,
        kind: FlowKind::Udp {
            payload_bytes: 1000,
            interval_ps: 0,
        },
    };
    let cfg = HostConfig {
        tcp: TcpConfig::default(),
        listen_all: true,
    };
    build_fabric(topo, 1, cfg, vec![flow], |site| {
        let mut sw = SimSwitch::with_control(
            ToCpu { mode },
            Cpu::default(),
            site.switch_index,
            site.routing.clone(),
            site.net,
            site.node,
        );
        sw.cpu_port = cpu;
        Box::new(sw)
    })
}

fn cpu_port(buffer_bytes: u64) -> CpuPort {
    CpuPort {
        bandwidth_bps: 10_000_000_000,
        buffer_bytes,
        latency_ps: CPU_LATENCY_PS,
        gap_ps: GAP_PS,
    }
}

fn switch(f: &Fabric) -> &SimSwitch<ToCpu, Cpu> {
    f.sim.node::<SimSwitch<ToCpu, Cpu>>(0).unwrap()
}

#[test]
fn a_packet_through_the_cpu_pays_transfer_and_latency() {
    let mut f = rack(Mode::Cpu, 1, Some(cpu_port(1 << 20)));
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    let at_switch = SER_100G_PS + DELAY_PS;
    assert_eq!(
        switch(&f).control.seen_ps,
        vec![at_switch + SER_10G_PS + CPU_LATENCY_PS]
    );
    assert_eq!(
        switch(&f).control.timers_ps,
        vec![at_switch + SER_10G_PS + CPU_LATENCY_PS + 1_000_000]
    );
    let arrival = f.sim.net.metrics.flows[0].first_arrival_ps.unwrap();
    assert_eq!(
        arrival,
        at_switch + SER_10G_PS + CPU_LATENCY_PS + SER_100G_PS + DELAY_PS
    );
}

#[test]
fn cpu_transfers_are_serialized_with_the_gap_and_the_buffer_drops_the_excess() {
    // Forty line-rate packets; the 10 G CPU port drains one per 853 ns + 250 ns while they
    // arrive every 85 ns, so a 3-packet buffer overflows. A packet frees its buffer space when
    // its transfer ends (not when the CPU is done with it): over the 3.4 µs of arrivals a few
    // more than the first three get in.
    let mut f = rack(Mode::Cpu, 40, Some(cpu_port(3 * 1066)));
    f.sim.run_until(u64::MAX, &mut |_| {});
    let c = f.sim.finish();
    assert!(c.ok(), "{c:?}");
    let sw = switch(&f);
    let seen = &sw.control.seen_ps;
    assert!(seen.len() > 3 && seen.len() <= 7, "{seen:?}");
    for w in seen.windows(2) {
        assert!(w[1] - w[0] >= SER_10G_PS + GAP_PS, "{seen:?}");
    }
    let dropped = f.sim.net.metrics.dropped_by(DropReason::BufferOverflow);
    assert_eq!(dropped as usize, 40 - seen.len());
    assert_eq!(sw.counters.cpu_drops, dropped);
    assert_eq!(sw.counters.to_cpu, 40);
    assert_eq!(
        f.sim.net.metrics.flows[0].packets_received as usize,
        seen.len()
    );
}

#[test]
fn without_a_cpu_port_packets_to_the_cpu_are_dropped_and_counted() {
    let mut f = rack(Mode::Cpu, 2, None);
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    assert_eq!(switch(&f).counters.cpu_drops, 2);
    assert_eq!(f.sim.net.metrics.dropped_total(), 2);
}

#[test]
fn consumed_packets_end_at_the_switch_as_delivered() {
    let mut f = rack(Mode::Consume, 3, None);
    f.sim.run_until(u64::MAX, &mut |_| {});
    let c = f.sim.finish();
    assert!(c.ok(), "{c:?}");
    assert_eq!((c.delivered, c.dropped), (3, 0));
    assert_eq!(switch(&f).counters.consumed, 3);
    assert_eq!(f.sim.net.metrics.flows[0].packets_received, 0);
}
