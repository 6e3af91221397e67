//! The data-plane program contract: what a P4-like program sees (a parsed packet, standard
//! metadata, a context of externs) and what it decides (a verdict, plus side actions such as
//! clones, generated packets, digests and timers).
//!
//! The same program type runs in the simulated switch and in the real-packet switch; the context
//! hides which runtime is underneath.

use innet_wire::phv::codec::{write_tcp_frame, TcpFrameHeaders};
use innet_wire::phv::edit::{make_reply, set_payload, set_tcp_options};
use innet_wire::phv::{Ipv4, Packet, TcpFlags, TcpHeader, WireExtras, L4};

/// What [`Ctx::reply_tcp`] sends: the segment's own fields (the rest comes from the packet
/// it answers).
#[derive(Debug, Clone, Copy)]
pub struct TcpReply<'a> {
    pub seq: u32,
    pub ack: u32,
    /// TCP flags (`TcpFlags::ACK | TcpFlags::PSH`, ...).
    pub flags: u8,
    pub window: u16,
    /// Raw TCP options (a multiple of 4 bytes, at most 40).
    pub options: &'a [u8],
    pub payload: &'a [u8],
}
use rand_chacha::ChaCha8Rng;

/// A forwarding table's answer for a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHop {
    /// Out of this local port.
    Port(u16),
    /// The destination is this switch itself.
    ToSelf,
    NoRoute,
}

/// How a packet instance came to be in the pipeline (P4's `instance_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instance {
    Normal,
    Recirculated,
    Clone,
    Generated,
}

/// Standard metadata of one pipeline pass.
#[derive(Debug, Clone, Copy)]
pub struct Metadata {
    pub ingress_port: u16,
    pub instance: Instance,
    /// Set by the traffic manager before egress.
    pub egress_port: u16,
    /// Bytes queued at the egress port when this packet was enqueued (egress only).
    pub enq_queue_bytes: u64,
    /// Replication id of a multicast copy (egress only).
    pub replication_id: u16,
}

/// Where a packet (or a clone, or a generated packet) goes after ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Out of a given local port.
    Forward(u16),
    /// The switch's own forwarding table (shortest path + ECMP on the outer header).
    Route,
    /// Once more through the pipeline, via the recirculation port.
    Recirculate,
    /// To every member of a multicast group of the packet replication engine.
    Multicast(u16),
    /// The packet ends at this switch (a control message addressed to it, e.g. a learning or
    /// invalidation packet): counted as delivered, not dropped.
    Consume,
    /// To the switch CPU over the CPU port (PCIe): queued at the port's bandwidth and buffer,
    /// then handed to [`crate::ControlPlane::packet_in`] after the CPU's latency. Dropped if
    /// the switch has no CPU port configured.
    ToCpu,
    Drop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressVerdict {
    Keep,
    Drop,
}

/// A message from the data plane to the control plane (e.g. a learned key, a report).
#[derive(Debug, Clone, PartialEq)]
pub struct Digest {
    pub kind: u16,
    pub data: Vec<u64>,
}

/// Side actions a pass requested; the runtime carries them out after the pass. The lists are
/// filled only through [`Ctx`], which also sets `pending`: the pipeline asks "any actions?" after
/// every pass, and one flag answers it from one cache line, where six list lengths took several.
#[derive(Default)]
pub struct Actions {
    pub(crate) clones: Vec<(Packet, Verdict)>,
    pub(crate) generated: Vec<(Packet, Verdict)>,
    pub(crate) digests: Vec<Digest>,
    pub(crate) timers: Vec<(u64, u64)>,
    pub(crate) control_timers: Vec<(u64, u64)>,
    /// Frames a program wrote whole ([`Ctx::reply_tcp`]), each with the port it leaves by.
    pub(crate) frames: Vec<(u16, Vec<u8>)>,
    /// Whether any of the lists above may hold something (set by every [`Ctx`] method that
    /// adds to them; cleared by the pipeline when it has taken them all).
    pub(crate) pending: bool,
    /// Buffers of sent frames, reused by [`Ctx::reply_tcp`]. Not an action.
    pub spare_frames: Vec<Vec<u8>>,
    /// Packets the runtime recycled, handed out by [`Ctx::copy_headers`] (no allocation per
    /// generated packet). Not an action: `clear` and `is_empty` ignore it.
    pub spare: Vec<Packet>,
    /// A device property, not an action: whether the runtime takes whole frames from
    /// [`Ctx::reply_tcp`] (the real switch, whose output is frames) or wants packets (the
    /// simulator, whose output is packets; false by default).
    pub takes_frames: bool,
}

impl Actions {
    pub fn clear(&mut self) {
        self.clones.clear();
        self.generated.clear();
        self.digests.clear();
        self.timers.clear();
        self.control_timers.clear();
        self.frames.clear();
        self.pending = false;
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        debug_assert!(
            self.pending
                || (self.clones.is_empty()
                    && self.generated.is_empty()
                    && self.digests.is_empty()
                    && self.timers.is_empty()
                    && self.control_timers.is_empty()
                    && self.frames.is_empty()),
            "an action was added without setting `pending`"
        );
        !self.pending
    }
}

/// Forwarding-table access for a program (the runtime's routes).
pub trait Router {
    fn next_hop(&self, pkt: &Packet) -> NextHop;
}

/// The externs a program can use during a pass.
pub struct Ctx<'a> {
    pub now_ps: u64,
    pub switch_id: u32,
    /// Number of local ports, the recirculation port (the last one) included.
    pub num_ports: u16,
    pub recirculation_port: u16,
    pub router: &'a dyn Router,
    /// The switch's random number generator (seeded per switch).
    pub rng: &'a mut ChaCha8Rng,
    pub(crate) actions: &'a mut Actions,
}

impl<'a> Ctx<'a> {
    /// The context of one pass; the runtime collects what the program asks for in `actions`.
    pub fn new(
        now_ps: u64,
        switch_id: u32,
        num_ports: u16,
        recirculation_port: u16,
        router: &'a dyn Router,
        rng: &'a mut ChaCha8Rng,
        actions: &'a mut Actions,
    ) -> Self {
        Ctx { now_ps, switch_id, num_ports, recirculation_port, router, rng, actions }
    }
    /// Copy `pkt` (as it is now) to another destination (I2E/E2E clone via the PRE).
    pub fn clone_to(&mut self, pkt: &Packet, dest: Verdict) {
        self.actions.clones.push((pkt.clone(), dest));
        self.actions.pending = true;
    }
    /// A copy of `pkt`'s headers, tunnel and wire extras with no payload, for a packet the
    /// program builds from a received one (a reply). Made in a packet the runtime recycled when
    /// it has one, so it costs no allocation; otherwise a clone.
    pub fn copy_headers(&mut self, pkt: &Packet) -> Packet {
        let Some(mut p) = self.actions.spare.pop() else {
            let mut p = pkt.clone();
            p.payload_bytes.get_or_insert_with(Box::default).clear();
            p.payload_len = 0;
            return p;
        };
        p.uid = pkt.uid;
        p.tunnel.clone_from(&pkt.tunnel);
        p.ip = pkt.ip;
        p.l4 = pkt.l4;
        p.payload_len = 0;
        match (&mut p.wire, &pkt.wire) {
            (Some(d), Some(s)) => copy_wire(d, s),
            (d, s) => d.clone_from(s),
        }
        p.payload_bytes.get_or_insert_with(Box::default).clear();
        p.flow_id = pkt.flow_id;
        p.created_ps = pkt.created_ps;
        p.hops = pkt.hops;
        p.is_data = pkt.is_data;
        p.recirculations = pkt.recirculations;
        p
    }
    /// A TCP segment back to the sender of `to` (a received packet), sent out of `port`: the
    /// headers [`innet_wire::phv::edit::make_reply`] makes (MACs, addresses and ports swapped, TTL
    /// 64, IP ident 0, ECN 0, no IP options, no trailer) with `seg`'s sequence numbers, flags,
    /// window, TCP options and payload. On the real runtime a plain (untunnelled) IPv4/TCP `to`
    /// gets its reply written as a frame at once, in a reused buffer that the runtime queues for
    /// transmission as it is: no `Packet`, no egress pass (for programs whose egress does not
    /// touch their own replies). Anything else — a tunnelled packet, TCP options that do not
    /// fit, a runtime that wants packets (the simulator: `Actions::takes_frames` false) — goes
    /// the general way: a packet built by `copy_headers` +
    /// `make_reply` and generated towards `port` (with the egress pass).
    pub fn reply_tcp(&mut self, to: &Packet, port: u16, seg: &TcpReply<'_>) {
        if let (true, None, Some(w), L4::Tcp(h)) =
            (self.actions.takes_frames, &to.tunnel, to.wire.as_deref(), &to.l4)
        {
            if seg.options.len() <= 40 && seg.options.len() % 4 == 0 {
                let mut buf = self.actions.spare_frames.pop().unwrap_or_default();
                let hdr = TcpFrameHeaders {
                    eth_dst: w.eth_src,
                    eth_src: w.eth_dst,
                    vlan_tci: w.vlan_tci,
                    ip: Ipv4 {
                        src: to.ip.dst,
                        dst: to.ip.src,
                        protocol: to.ip.protocol,
                        ttl: 64,
                        dscp: to.ip.dscp,
                        ecn: 0,
                        ident: 0,
                    },
                    ip_flags_fragment: w.ip_flags_fragment,
                    ip_options: &[],
                    tcp: TcpHeader {
                        src_port: h.dst_port,
                        dst_port: h.src_port,
                        seq: seg.seq,
                        ack: seg.ack,
                        flags: TcpFlags(seg.flags),
                        window: seg.window as u32,
                        options_bytes: seg.options.len() as u8,
                    },
                    tcp_reserved_bits: 0,
                    tcp_urgent: 0,
                    tcp_options: seg.options,
                };
                match write_tcp_frame(&hdr, seg.payload, seg.payload.len(), &[], &mut buf) {
                    Ok(()) => {
                        self.actions.frames.push((port, buf));
                        self.actions.pending = true;
                        return;
                    }
                    Err(_) => self.actions.spare_frames.push(buf),
                }
            }
        }
        // The general way (the same headers, through a packet).
        let mut r = self.copy_headers(to);
        make_reply(&mut r, false);
        set_tcp_options(&mut r, seg.options);
        if let L4::Tcp(t) = &mut r.l4 {
            t.seq = seg.seq;
            t.ack = seg.ack;
            t.flags = TcpFlags(seg.flags);
            t.window = seg.window as u32;
        }
        set_payload(&mut r, seg.payload);
        self.generate(r, Verdict::Forward(port));
    }
    /// Inject a brand-new packet (packet generation, learning packets, replies).
    pub fn generate(&mut self, pkt: Packet, dest: Verdict) {
        self.actions.generated.push((pkt, dest));
        self.actions.pending = true;
    }
    /// Send a digest to the control plane (arrives after the control-plane latency).
    pub fn digest(&mut self, kind: u16, data: Vec<u64>) {
        self.actions.digests.push(Digest { kind, data });
        self.actions.pending = true;
    }
    /// Ask for `Program::timer(token)` at `at_ps` (a packet generator's trigger).
    pub fn set_timer(&mut self, at_ps: u64, token: u64) {
        self.actions.timers.push((at_ps, token));
        self.actions.pending = true;
    }
    /// Ask for `ControlPlane::timer(token)` at `at_ps` (periodic control-plane work).
    pub fn set_control_timer(&mut self, at_ps: u64, token: u64) {
        self.actions.control_timers.push((at_ps, token));
        self.actions.pending = true;
    }
    /// The forwarding table's choice for this packet.
    pub fn route(&self, pkt: &Packet) -> NextHop {
        self.router.next_hop(pkt)
    }
}

/// A data-plane program.
pub trait Program: 'static {
    /// A short name for reports.
    fn name(&self) -> &str;
    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict;
    /// Runs per outgoing copy after the traffic manager chose the port.
    fn egress(&mut self, _pkt: &mut Packet, _meta: &Metadata, _ctx: &mut Ctx<'_>) -> EgressVerdict {
        EgressVerdict::Keep
    }
    /// A timer set with [`Ctx::set_timer`] fired (no packet in the pipeline).
    fn timer(&mut self, _token: u64, _ctx: &mut Ctx<'_>) {}
    /// The state the program declares (registers, tables), for the resource report; programs
    /// build it with `ResourceReport::of_parts` over their blocks. Empty for stateless programs.
    fn resources(&self) -> crate::state::ResourceReport {
        crate::state::ResourceReport::new(self.name())
    }
}

/// Decrement the routing header's TTL; false if the packet must be dropped (TTL expired).
#[inline]
pub fn decrement_ttl(pkt: &mut Packet) -> bool {
    let ip = pkt.routing_ip_mut();
    if ip.ttl <= 1 {
        return false;
    }
    ip.ttl -= 1;
    true
}

/// `*d = s.clone()` field by field, in place: no temporary, and the trailer keeps its buffer.
/// (Destructured whole, so a field added to `WireExtras` must be added here too.)
fn copy_wire(d: &mut WireExtras, s: &WireExtras) {
    let WireExtras {
        eth_dst,
        eth_src,
        vlan_tci,
        ip_flags_fragment,
        ip_options,
        tcp_options,
        tcp_reserved_bits,
        tcp_urgent,
        udp_checksum_zero,
        trailer,
        outer_ip_flags_fragment,
        outer_ip_options,
        outer_udp_checksum_zero,
        geneve_flags,
        geneve_reserved,
        inner_eth_dst,
        inner_eth_src,
    } = s;
    d.eth_dst = *eth_dst;
    d.eth_src = *eth_src;
    d.vlan_tci = *vlan_tci;
    d.ip_flags_fragment = *ip_flags_fragment;
    d.ip_options = *ip_options;
    d.tcp_options = *tcp_options;
    d.tcp_reserved_bits = *tcp_reserved_bits;
    d.tcp_urgent = *tcp_urgent;
    d.udp_checksum_zero = *udp_checksum_zero;
    d.trailer.clear();
    d.trailer.extend_from_slice(trailer);
    d.outer_ip_flags_fragment = *outer_ip_flags_fragment;
    d.outer_ip_options = *outer_ip_options;
    d.outer_udp_checksum_zero = *outer_udp_checksum_zero;
    d.geneve_flags = *geneve_flags;
    d.geneve_reserved = *geneve_reserved;
    d.inner_eth_dst = *inner_eth_dst;
    d.inner_eth_src = *inner_eth_src;
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_wire::phv::{Encap, Ipv4, OptionBytes, TcpHeader, Tunnel, L4};
    use rand::SeedableRng;

    /// A reply built in a recycled packet equals a clone of the template without payload,
    /// whatever the recycled packet held before.
    #[test]
    fn copy_headers_in_a_recycled_packet_equals_a_clone() {
        let mut tpl = Packet::new(
            Ipv4 {
                src: 1,
                dst: 2,
                protocol: 6,
                ttl: 9,
                dscp: 3,
                ecn: 1,
                ident: 77,
            },
            L4::Tcp(TcpHeader {
                src_port: 5,
                dst_port: 6,
                seq: 7,
                ack: 8,
                flags: Default::default(),
                window: 9,
                options_bytes: 4,
            }),
            3,
        );
        tpl.tunnel = Some(Tunnel {
            outer: Ipv4::default(),
            encap: Encap::IpInIp,
        });
        tpl.payload_bytes = Some(Box::new(b"abc".to_vec()));
        tpl.wire = Some(Box::new(WireExtras {
            eth_dst: [1; 6],
            eth_src: [2; 6],
            vlan_tci: Some(5),
            ip_flags_fragment: 0x4000,
            ip_options: OptionBytes::new(&[1, 1, 1, 0]).unwrap(),
            tcp_options: OptionBytes::new(&[1, 1, 8, 2]).unwrap(),
            tcp_reserved_bits: 3,
            tcp_urgent: 4,
            udp_checksum_zero: true,
            trailer: vec![0xAB; 3],
            outer_ip_flags_fragment: 7,
            outer_ip_options: OptionBytes::new(&[9; 8]).unwrap(),
            outer_udp_checksum_zero: true,
            geneve_flags: 1,
            geneve_reserved: 2,
            inner_eth_dst: [3; 6],
            inner_eth_src: [4; 6],
        }));
        let mut stale = tpl.clone();
        stale.wire = Some(Box::new(WireExtras {
            trailer: vec![1; 40],
            ..Default::default()
        }));
        stale.tunnel = None;
        stale.payload_bytes = Some(Box::new(vec![9; 100]));
        let mut actions = Actions::default();
        actions.spare.push(stale);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        struct NoRoute;
        impl Router for NoRoute {
            fn next_hop(&self, _: &Packet) -> NextHop {
                NextHop::NoRoute
            }
        }
        let mut ctx = Ctx {
            now_ps: 0,
            switch_id: 0,
            num_ports: 2,
            recirculation_port: 2,
            router: &NoRoute,
            rng: &mut rng,
            actions: &mut actions,
        };
        let got = ctx.copy_headers(&tpl);
        let mut want = tpl.clone();
        want.payload_bytes = Some(Box::default());
        want.payload_len = 0;
        assert_eq!(got, want);
    }

    /// `reply_tcp` writes the very frame the general way (a packet by `copy_headers` +
    /// `make_reply`, emitted) gives, for requests with and without a VLAN tag, IP options, TCP
    /// options, urgent pointer, reserved bits and padding; a tunnelled request, and any request
    /// on a runtime that wants packets (the simulator), goes the general way.
    #[test]
    fn reply_tcp_frame_equals_the_packet_way() {
        use innet_wire::phv::codec::{emit_into, parse_into, TcpFrame};
        use innet_wire::phv::edit::blank_packet;
        use innet_wire::tcp::TcpOption;
        use innet_wire::Ipv4Addr;
        struct NoRoute;
        impl Router for NoRoute {
            fn next_hop(&self, _: &Packet) -> NextHop {
                NextHop::NoRoute
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (vlan, opts, pad, tunnel) in [
            (false, false, false, false),
            (true, true, true, false),
            (false, true, false, false),
            (false, false, true, true),
        ] {
            let mut f = TcpFrame::new(
                (Ipv4Addr::new(10, 0, 0, 1), 40000),
                (Ipv4Addr::new(10, 0, 0, 2), 9042),
                1000,
                2000,
                0x18,
            )
            .payload(b"request bytes")
            .options(if opts {
                vec![
                    TcpOption::Nop,
                    TcpOption::Nop,
                    TcpOption::Timestamps { value: 5, echo: 6 },
                ]
            } else {
                vec![]
            })
            .emit();
            if pad {
                f.extend_from_slice(&[0xEE; 7]);
            }
            let mut req = blank_packet();
            parse_into(&f, &mut req).unwrap();
            if vlan {
                req.wire.as_mut().unwrap().vlan_tci = Some(0x0123);
            }
            req.wire.as_mut().unwrap().tcp_urgent = 9;
            req.wire.as_mut().unwrap().tcp_reserved_bits = 1;
            req.ip.dscp = 10;
            req.ip.ecn = 2;
            if tunnel {
                req.tunnel = Some(Tunnel {
                    outer: req.ip,
                    encap: Encap::IpInIp,
                });
            }
            let ts = [1u8, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 8];
            let seg = TcpReply {
                seq: 77,
                ack: 88,
                flags: 0x18,
                window: 999,
                options: if opts { &ts } else { &[] },
                payload: b"the answer",
            };
            // The general way, by hand.
            let mut r = req.clone();
            make_reply(&mut r, false);
            set_tcp_options(&mut r, seg.options);
            if let L4::Tcp(t) = &mut r.l4 {
                t.seq = seg.seq;
                t.ack = seg.ack;
                t.flags = TcpFlags(seg.flags);
                t.window = seg.window as u32;
            }
            set_payload(&mut r, seg.payload);
            let mut want = Vec::new();
            emit_into(&r, &mut want).unwrap();
            for takes_frames in [true, false] {
            let mut actions = Actions { takes_frames, ..Default::default() };
            let mut ctx = Ctx::new(0, 0, 2, 2, &NoRoute, &mut rng, &mut actions);
            ctx.reply_tcp(&req, 0, &seg);
            if tunnel || !takes_frames {
                assert!(actions.frames.is_empty());
                assert_eq!(actions.generated.len(), 1);
                let mut got = Vec::new();
                emit_into(&actions.generated[0].0, &mut got).unwrap();
                assert_eq!(got, want);
                assert_eq!(actions.generated[0].1, Verdict::Forward(0));
            } else {
                assert!(actions.generated.is_empty());
                assert_eq!(actions.frames.len(), 1);
                assert_eq!(actions.frames[0].0, 0);
                assert_eq!(
                    actions.frames[0].1, want,
                    "vlan {vlan} opts {opts} pad {pad}"
                );
            }
            }
        }
    }
}
