//! Semantics of the RMT switch runtime: recirculation (timing, contention, gas), the packet
//! replication engine (clones, multicast), packet generation, digests with control-plane
//! latency, and egress drops — each checked against exact expectations.

use innet_dataplane::fabric::{build_fabric, Fabric};
use innet_dataplane::{
    ControlPlane, Ctx, Digest, EgressVerdict, Metadata, Program, SimSwitch, Verdict,
};
use innet_sim::apps::{FlowKind, FlowSpec};
use innet_sim::host::HostConfig;
use innet_sim::metrics::DropReason;
use innet_sim::packet::{Ipv4, Packet, IP_PROTO_UDP, L4};
use innet_sim::tcp::TcpConfig;
use innet_sim::topology::{host_ip, Topology, TopologySpec};

const SER_100G_PS: u64 = 1066 * 80;
const DELAY_PS: u64 = 1_000_000;

fn udp(src: u32, dst: u32, packets: u64) -> FlowSpec {
    FlowSpec {
        src_host: src,
        dst_host: dst,
        src_ip: 0,
        dst_ip: 0,
        start_ps: 0,
        size_bytes: packets * 1000,
        kind: FlowKind::Udp {
            payload_bytes: 1000,
            interval_ps: 0,
        },
    }
}

/// A test program whose behaviour is chosen per test.
#[derive(Default)]
struct Probe {
    mode: Mode,
    passes_seen: Vec<u16>,
    egress_ports: Vec<u16>,
    timer_fired: u32,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Mode {
    #[default]
    Forward,
    /// Recirculate each packet this many times, then route it.
    Recirculate(u16),
    /// Recirculate forever (gas must stop it).
    Loop,
    /// Clone to host 2's port and route the original.
    Clone,
    Multicast,
    /// Drop at egress everything leaving toward host 1.
    EgressDropHost1,
    /// On the first packet, set a timer that generates a packet to host 2 and sends a digest.
    Generate,
}

impl Program for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        self.passes_seen.push(pkt.recirculations);
        match self.mode {
            Mode::Forward | Mode::EgressDropHost1 => Verdict::Route,
            Mode::Recirculate(n) => {
                if pkt.recirculations < n {
                    Verdict::Recirculate
                } else {
                    Verdict::Route
                }
            }
            Mode::Loop => Verdict::Recirculate,
            Mode::Clone => {
                let mut copy = pkt.clone();
                copy.ip.dst = host_ip(0, 2);
                ctx.clone_to(&copy, Verdict::Route);
                Verdict::Route
            }
            Mode::Multicast => Verdict::Multicast(0),
            Mode::Generate => {
                if meta.ingress_port != ctx.recirculation_port && self.timer_fired == 0 {
                    ctx.set_timer(ctx.now_ps + 5_000_000, 42);
                }
                Verdict::Route
            }
        }
    }
    fn egress(&mut self, pkt: &mut Packet, meta: &Metadata, _ctx: &mut Ctx<'_>) -> EgressVerdict {
        self.egress_ports.push(meta.egress_port);
        if self.mode == Mode::EgressDropHost1 && pkt.ip.dst == host_ip(0, 1) {
            EgressVerdict::Drop
        } else {
            EgressVerdict::Keep
        }
    }
    fn timer(&mut self, token: u64, ctx: &mut Ctx<'_>) {
        assert_eq!(token, 42);
        self.timer_fired += 1;
        let mut p = Packet::new(
            Ipv4::new(
                innet_sim::topology::switch_ip(0),
                host_ip(0, 2),
                IP_PROTO_UDP,
            ),
            L4::Udp {
                src_port: 1,
                dst_port: 2,
            },
            64,
        );
        p.is_data = false;
        ctx.generate(p, Verdict::Route);
        ctx.digest(7, vec![ctx.now_ps]);
    }
}

#[derive(Default)]
struct Recorder {
    got: Vec<(u64, Digest)>,
}

impl ControlPlane<Probe> for Recorder {
    fn digest(&mut self, program: &mut Probe, d: Digest, ctx: &mut Ctx<'_>) {
        program.timer_fired += 100;
        self.got.push((ctx.now_ps, d));
    }
}

fn rack(mode: Mode, flows: Vec<FlowSpec>, tweak: impl FnOnce(&mut TopologySpec)) -> Fabric {
    let mut spec = TopologySpec::rack(3);
    tweak(&mut spec);
    let topo = Topology::build(&spec, &[]).unwrap();
    let host_cfg = HostConfig {
        tcp: TcpConfig::default(),
        listen_all: true,
    };
    build_fabric(topo, 3, host_cfg, flows, |site| {
        let mut sw = SimSwitch::with_control(
            Probe {
                mode,
                ..Default::default()
            },
            Recorder::default(),
            site.switch_index,
            site.routing.clone(),
            site.net,
            site.node,
        );
        sw.cfg.max_recirculations = 100;
        sw.cfg.control_latency_ps = 2_000_000;
        // Group 0: hosts 1 and 2 (ports 0..3 are hosts in slot order; the last port recirculates).
        sw.cfg.multicast_groups = vec![vec![(1, 11), (2, 22)]];
        Box::new(sw)
    })
}

fn probe(f: &Fabric) -> &Probe {
    &f.sim.node::<SimSwitch<Probe, Recorder>>(0).unwrap().program
}

#[test]
fn recirculation_costs_a_pass_over_the_recirculation_link_each_time() {
    let mut f = rack(Mode::Recirculate(3), vec![udp(0, 1, 1)], |s| {
        s.recirculation_gbps = 100.0;
        s.recirculation_latency_ns = 500;
    });
    f.sim.run_until(u64::MAX, &mut |_| {});
    let rec = f.sim.net.metrics.flows[0];
    let one_pass = SER_100G_PS + 500_000;
    assert_eq!(
        rec.first_arrival_ps,
        Some(2 * SER_100G_PS + 2 * DELAY_PS + 3 * one_pass)
    );
    assert_eq!(probe(&f).passes_seen, vec![0, 1, 2, 3]);
    assert!(f.sim.finish().ok());
    // Recirculation is not a hop.
    assert_eq!(f.sim.net.metrics.hops_sum, 1);
}

#[test]
fn the_recirculation_port_is_contended_like_any_port() {
    // A slow recirculation port: 10 packets each recirculating once queue behind each other.
    let mut f = rack(Mode::Recirculate(1), vec![udp(0, 1, 10)], |s| {
        s.recirculation_gbps = 10.0
    });
    f.sim.run_until(u64::MAX, &mut |_| {});
    let rec = f.sim.net.metrics.flows[0];
    let ser_10g = 1066 * 800;
    // The last packet leaves the recirculation queue after all ten have been serialized at 10G.
    let done = rec.complete_ps.unwrap();
    assert!(done >= 10 * ser_10g + SER_100G_PS + 2 * DELAY_PS, "{done}");
    assert!(f
        .sim
        .net
        .metrics
        .ports
        .iter()
        .any(|p| p.max_queue_bytes >= 5 * 1066));
}

#[test]
fn recirculation_gas_stops_endless_loops() {
    let mut f = rack(Mode::Loop, vec![udp(0, 1, 2)], |_| {});
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    let m = &f.sim.net.metrics;
    assert_eq!(m.dropped_by(DropReason::RecirculationLimit), 2);
    assert_eq!(m.delivered_packets, 0);
    let sw = f.sim.node::<SimSwitch<Probe, Recorder>>(0).unwrap();
    assert_eq!(sw.counters.recirculations, 2 * 101);
}

#[test]
fn clones_are_new_packets_that_keep_the_creation_time() {
    let mut f = rack(Mode::Clone, vec![udp(0, 1, 4)], |_| {});
    f.sim.run_until(u64::MAX, &mut |_| {});
    let c = f.sim.finish();
    assert!(c.ok(), "{c}");
    assert_eq!(c.created, 8);
    assert_eq!(f.sim.net.metrics.delivered_packets, 8);
    // Host 2 got the clones: both destinations saw 4 packets of flow 0.
    assert_eq!(f.sim.net.metrics.flows[0].packets_received, 8);
}

#[test]
fn multicast_replicates_to_every_member_with_its_port() {
    let mut f = rack(Mode::Multicast, vec![udp(0, 1, 3)], |_| {});
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    // Copies keep the destination address: host 1 takes its 3, host 2 refuses the others.
    assert_eq!(f.sim.net.metrics.delivered_packets, 3);
    assert_eq!(f.sim.net.metrics.dropped_by(DropReason::NotForThisHost), 3);
    let mut ports = probe(&f).egress_ports.clone();
    ports.sort();
    assert_eq!(ports, vec![1, 1, 1, 2, 2, 2]);
}

#[test]
fn egress_drops_are_counted_as_program_drops() {
    let mut f = rack(
        Mode::EgressDropHost1,
        vec![udp(0, 1, 3), udp(0, 2, 2)],
        |_| {},
    );
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    assert_eq!(f.sim.net.metrics.dropped_by(DropReason::Program), 3);
    assert_eq!(f.sim.net.metrics.delivered_packets, 2);
}

#[test]
fn timers_generate_packets_and_digests_arrive_after_the_control_latency() {
    let mut f = rack(Mode::Generate, vec![udp(0, 1, 1)], |_| {});
    f.sim.run_until(u64::MAX, &mut |_| {});
    assert!(f.sim.finish().ok());
    assert_eq!(f.sim.net.metrics.delivered_packets, 2);
    let sw = f.sim.node::<SimSwitch<Probe, Recorder>>(0).unwrap();
    assert_eq!(sw.counters.generated, 1);
    assert_eq!(sw.program.timer_fired, 101);
    let (at, d) = &sw.control.got[0];
    assert_eq!(d.kind, 7);
    assert_eq!(*at, d.data[0] + 2_000_000);
    // The packet reached the switch at SER + DELAY; the timer fired 5 µs later.
    assert_eq!(d.data[0], SER_100G_PS + DELAY_PS + 5_000_000);
}

#[test]
fn stateless_programs_report_no_resources_and_stateful_ones_sum_their_parts() {
    use innet_dataplane::state::{RegisterArray, ResourceReport, Resources};
    let r = innet_dataplane::L3Forward::default().resources();
    assert_eq!((r.total_bits(), r.entries().len()), (0, 0));
    let cache = RegisterArray::new("cache_key", 1024, 32).unwrap();
    let bits = RegisterArray::new("access_bit", 1024, 1).unwrap();
    let report = ResourceReport::of_parts("cache", &[&cache as &dyn Resources, &bits]);
    assert_eq!(report.total_bits(), 1024 * 33);
    assert_eq!(report.register_arrays(), 2);
}
