//! One pipeline core, two devices: the same program with the same input frames through the
//! simulator's switch and the real switch must send the same frames out of the same ports,
//! count the same, and hand the control plane the same digests and CPU packets
//! (`innet_dataplane::twin`). Any difference between the devices' handling of a verdict or an
//! action shows here.

use innet_dataplane::twin::{rack_host_ips, sim_port_of, through_real, through_sim, Outcome};
use innet_dataplane::{
    ControlPlane, Ctx, Digest, EgressVerdict, L3Forward, Metadata, NoControl, Program,
    SwitchConfig, TcpReply, Verdict,
};
use innet_wire::phv::codec::{emit_into, TcpFrame};
use innet_wire::phv::edit::make_reply;
use innet_wire::phv::{Packet, L4};
use innet_wire::Ipv4Addr;

const HOSTS: u32 = 4;

fn ip(host: u32) -> Ipv4Addr {
    Ipv4Addr::from(rack_host_ips(HOSTS)[host as usize])
}

/// A TCP frame from host `from` to host `to` (or any address), to TCP port `dport`.
fn frame(from: u32, to: Ipv4Addr, dport: u16, seq: u32) -> Vec<u8> {
    TcpFrame::new((ip(from), 40000 + from as u16), (to, dport), seq, 7, 0x18)
        .payload(format!("payload {seq}").as_bytes())
        .emit()
}

fn both<P: Program, C: ControlPlane<P>, T: PartialEq + std::fmt::Debug>(
    make: impl Fn() -> (P, C),
    cfg: SwitchConfig,
    frames: &[(u16, Vec<u8>)],
    inspect: impl Fn(&P, &C) -> T,
) -> (Outcome, T) {
    let (p, c) = make();
    let (sim, sim_t) = through_sim(p, c, cfg.clone(), HOSTS, frames, 1_000_000_000, &inspect);
    let (p, c) = make();
    let (real, real_t) = through_real(p, c, cfg, HOSTS, frames, 10_000, &inspect).unwrap();
    assert_eq!(sim.out, real.out, "frames out per port: simulator vs real");
    assert_eq!(sim.counters, real.counters, "pipeline counters: simulator vs real");
    assert_eq!(sim_t, real_t, "program / control-plane state: simulator vs real");
    (sim, sim_t)
}

#[test]
fn the_real_routes_are_the_simulators() {
    for h in 0..HOSTS {
        assert_eq!(sim_port_of(HOSTS, u32::from(ip(h))), Some(h as u16));
    }
}

#[test]
fn l3_forwarding_is_the_same_on_both_devices() {
    let mut frames = Vec::new();
    for from in 0..HOSTS {
        for to in 0..HOSTS {
            if from != to {
                frames.push((from as u16, frame(from, ip(to), 80, from * 10 + to)));
            }
        }
    }
    // No route, and a TTL that expires here.
    frames.push((0, frame(0, Ipv4Addr::new(192, 0, 2, 1), 80, 99)));
    let mut ttl1 = frame(1, ip(2), 80, 98);
    ttl1[14 + 8] = 1;
    let c = innet_wire::checksum::checksum(&{
        let mut h = ttl1[14..34].to_vec();
        h[10] = 0;
        h[11] = 0;
        h
    });
    ttl1[24..26].copy_from_slice(&c.to_be_bytes());
    frames.push((1, ttl1));
    let (o, counts) = both(
        || (L3Forward::default(), NoControl),
        SwitchConfig::default(),
        &frames,
        |p: &L3Forward, _| (p.forwarded, p.ttl_drops, p.no_route_drops),
    );
    assert_eq!(counts, (12, 1, 1));
    assert_eq!(o.out.values().map(Vec::len).sum::<usize>(), 12);
    assert_eq!(o.counters.program_drops, 2);
}

/// A program whose behaviour is chosen by the TCP destination port, to use every verdict and
/// every action of the contract.
#[derive(Default)]
struct Kitchen {
    /// A received packet kept to build packets from in timers.
    template: Option<Packet>,
    timer_tokens: Vec<u64>,
    recirculated_passes: u32,
}

fn dport(pkt: &Packet) -> u16 {
    match pkt.l4 {
        L4::Tcp(h) => h.dst_port,
        _ => 0,
    }
}

fn seq(pkt: &Packet) -> u32 {
    match pkt.l4 {
        L4::Tcp(h) => h.seq,
        _ => 0,
    }
}

impl Program for Kitchen {
    fn name(&self) -> &str {
        "kitchen"
    }
    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        if self.template.is_none() {
            self.template = Some(ctx.copy_headers(pkt));
        }
        if meta.instance == innet_dataplane::Instance::Recirculated {
            self.recirculated_passes += 1;
        }
        match dport(pkt) {
            2 if pkt.recirculations < 2 => Verdict::Recirculate,
            3 => Verdict::Multicast(0),
            4 => {
                let mut copy = pkt.clone();
                copy.ip.dst = rack_host_ips(HOSTS)[3];
                ctx.clone_to(&copy, Verdict::Route);
                Verdict::Route
            }
            5 => {
                let mut r = ctx.copy_headers(pkt);
                make_reply(&mut r, false);
                ctx.generate(r, Verdict::Forward(meta.ingress_port));
                Verdict::Drop
            }
            6 => {
                let seg = TcpReply {
                    seq: 500,
                    ack: seq(pkt) + 1,
                    flags: 0x18,
                    window: 1000,
                    options: &[],
                    payload: b"from the switch",
                };
                ctx.reply_tcp(pkt, meta.ingress_port, &seg);
                Verdict::Consume
            }
            7 => Verdict::ToCpu,
            8 => {
                ctx.digest(8, vec![seq(pkt) as u64]);
                Verdict::Route
            }
            9 => {
                ctx.set_timer(ctx.now_ps + 5_000_000, seq(pkt) as u64);
                Verdict::Drop
            }
            11 => Verdict::Forward(99),
            12 => Verdict::Multicast(5),
            _ => Verdict::Route,
        }
    }
    fn egress(&mut self, pkt: &mut Packet, meta: &Metadata, _ctx: &mut Ctx<'_>) -> EgressVerdict {
        if meta.replication_id != 0 {
            pkt.ip.dscp = meta.replication_id as u8;
        }
        if dport(pkt) == 10 {
            return EgressVerdict::Drop;
        }
        EgressVerdict::Keep
    }
    fn timer(&mut self, token: u64, ctx: &mut Ctx<'_>) {
        self.timer_tokens.push(token);
        if let Some(t) = &self.template {
            let mut p = ctx.copy_headers(t);
            if let L4::Tcp(h) = &mut p.l4 {
                h.seq = token as u32;
            }
            ctx.generate(p, Verdict::Forward(1));
        }
    }
}

/// Records what reached the control plane; a digest starts a control timer that sends a
/// packet; a CPU packet is sent on to host 1.
#[derive(Default)]
struct Recorder {
    digests: Vec<Digest>,
    packet_in: Vec<Vec<u8>>,
    control_timers: Vec<u64>,
}

impl ControlPlane<Kitchen> for Recorder {
    fn digest(&mut self, _program: &mut Kitchen, d: Digest, ctx: &mut Ctx<'_>) {
        ctx.set_control_timer(ctx.now_ps + 1_000_000, d.data[0]);
        self.digests.push(d);
    }
    fn timer(&mut self, program: &mut Kitchen, token: u64, ctx: &mut Ctx<'_>) {
        self.control_timers.push(token);
        if let Some(t) = &program.template {
            let mut p = ctx.copy_headers(t);
            p.ip.dst = rack_host_ips(HOSTS)[2];
            ctx.generate(p, Verdict::Route);
        }
    }
    fn packet_in(&mut self, _program: &mut Kitchen, pkt: &mut Packet, _ctx: &mut Ctx<'_>) -> Verdict {
        let mut f = Vec::new();
        emit_into(pkt, &mut f).unwrap();
        self.packet_in.push(f);
        pkt.ip.dst = rack_host_ips(HOSTS)[1];
        Verdict::Route
    }
}

fn kitchen_frames() -> Vec<(u16, Vec<u8>)> {
    let mut frames = vec![(0, frame(0, ip(1), 1, 1))];
    for (i, d) in (2..=12).enumerate() {
        frames.push(((i % 4) as u16, frame((i % 4) as u32, ip(((i + 1) % 4) as u32), d, 100 + i as u32)));
    }
    frames
}

fn kitchen_config() -> SwitchConfig {
    SwitchConfig {
        multicast_groups: vec![vec![(1, 5), (2, 6), (3, 0)]],
        control_latency_ps: 2_000_000,
        ..SwitchConfig::default()
    }
}

#[test]
fn every_verdict_and_action_is_the_same_on_both_devices() {
    let (o, (tokens, recirc, digests, cpu, ctimers)) = both(
        || (Kitchen::default(), Recorder::default()),
        kitchen_config(),
        &kitchen_frames(),
        |p: &Kitchen, c: &Recorder| {
            (
                p.timer_tokens.clone(),
                p.recirculated_passes,
                c.digests.clone(),
                c.packet_in.clone(),
                c.control_timers.clone(),
            )
        },
    );
    // The test exercises what it claims to.
    let c = o.counters;
    assert_eq!(c.recirculations, 2);
    assert_eq!(recirc, 2);
    assert_eq!(c.multicast_copies, 3);
    assert_eq!(c.clones, 1);
    assert_eq!(c.generated, 4, "reply, reply_tcp, timer, control timer");
    assert_eq!(c.to_cpu, 1);
    assert_eq!(cpu.len(), 1);
    assert_eq!(c.digests, 1);
    assert_eq!(digests.len(), 1);
    assert_eq!(ctimers, vec![digests[0].data[0]]);
    assert_eq!(tokens.len(), 1);
    assert_eq!(c.timers_fired, 2);
    assert_eq!(c.egress_drops, 1);
    assert_eq!(c.no_route, 2);
    assert_eq!(c.consumed, 1);
    // Multicast copies carry their replication id.
    let dscps: Vec<u8> = (1..=3u16)
        .flat_map(|p| o.out[&p].iter())
        .filter(|f| f[14 + 1] >> 2 != 0)
        .map(|f| f[14 + 1] >> 2)
        .collect();
    assert_eq!(
        {
            let mut d = dscps;
            d.sort();
            d
        },
        vec![5, 6]
    );
}

/// Packets that recirculate past the limit are dropped the same way on both devices.
#[test]
fn the_recirculation_limit_is_the_same_on_both_devices() {
    struct Orbit;
    impl Program for Orbit {
        fn name(&self) -> &str {
            "orbit"
        }
        fn ingress(&mut self, _: &mut Packet, _: &mut Metadata, _: &mut Ctx<'_>) -> Verdict {
            Verdict::Recirculate
        }
    }
    let cfg = SwitchConfig {
        max_recirculations: 5,
        ..SwitchConfig::default()
    };
    let frames = vec![(0, frame(0, ip(1), 1, 1)), (2, frame(2, ip(1), 1, 2))];
    let (o, _) = both(|| (Orbit, NoControl), cfg, &frames, |_, _| ());
    assert_eq!(o.counters.recirculation_limit_drops, 2);
    assert_eq!(o.counters.recirculations, 12);
    assert_eq!(o.counters.ingress_passes, 12);
}
