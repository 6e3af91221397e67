//! The real switch's core on frames in memory (no sockets): forwarding is byte-exact, frames the
//! program cannot see pass raw and are counted, verdicts and externs (recirculation, timers,
//! generated replies, emit errors) do what the runtime documents.

use std::collections::BTreeMap;

use innet_wire::phv::codec::TcpFrame;
use innet_wire::phv::edit::{make_reply, set_payload};
use innet_switch::real::{builtin_programs, FrameSwitch, RealConfig, RealSwitch, TxBatch};
use innet_switch::{Ctx, Metadata, NoControl, Program, Verdict};
use innet_wire::phv::{Ipv4, Packet, L4};
use innet_wire::frame::parse_frame;
use innet_wire::tcp::TcpOption;
use innet_wire::Ipv4Addr;

fn tcp_frame(payload: &[u8]) -> Vec<u8> {
    TcpFrame::new(
        (Ipv4Addr::new(10, 0, 0, 1), 40000),
        (Ipv4Addr::new(10, 0, 0, 2), 6379),
        1,
        2,
        0x18,
    )
    .window(100)
    .options(vec![
        TcpOption::Nop,
        TcpOption::Nop,
        TcpOption::Timestamps { value: 1, echo: 2 },
    ])
    .payload(payload)
    .emit()
}

fn forward(settings: &[(&str, &str)]) -> Box<dyn FrameSwitch> {
    let spec = builtin_programs()
        .into_iter()
        .find(|p| p.name == "forward")
        .unwrap();
    let s: BTreeMap<String, String> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    spec.instantiate(s, 2).unwrap()
}

#[test]
fn forward_is_byte_exact_and_counts_raw_and_malformed() {
    let mut sw = forward(&[]);
    let mut tx = TxBatch::new(2);
    let f = tcp_frame(b"*1\r\n$4\r\nPING\r\n");
    sw.on_frame(0, &f, [0; 10], 0, &mut tx);
    assert_eq!(tx.port(1).queued().len(), 1);
    assert_eq!(tx.port(1).queued()[0].1, f);
    let mut arp = vec![0xff; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0x11; 28]);
    sw.on_frame(1, &arp, [0; 10], 0, &mut tx);
    assert_eq!(tx.port(0).queued()[0].1, arp);
    let mut truncated = f.clone();
    truncated.truncate(40);
    sw.on_frame(0, &truncated, [0; 10], 0, &mut tx);
    sw.on_frame(0, &[1, 2, 3], [0; 10], 0, &mut tx);
    let st = sw.stats();
    assert_eq!(st.ports[0].rx_frames, 3);
    assert_eq!(st.ports[0].malformed, 2);
    assert_eq!(st.ports[1].passed_raw, 1);
    assert_eq!(st.ports[1].tx_frames, 3);
    assert_eq!(tx.port(1).queued()[2].1, vec![1, 2, 3]);
}

#[test]
fn unknown_settings_are_errors() {
    let spec = builtin_programs()
        .into_iter()
        .find(|p| p.name == "forward")
        .unwrap();
    let mut s = BTreeMap::new();
    s.insert("recirculatoins".to_string(), "2".to_string());
    let e = spec.instantiate(s, 2).err().unwrap();
    assert!(
        e.contains("recirculatoins") && e.contains("recirculations"),
        "{e}"
    );
}

#[test]
fn recirculation_and_timers() {
    let mut sw = forward(&[("recirculations", "3"), ("timer_us", "10")]);
    let mut tx = TxBatch::new(2);
    sw.on_frame(0, &tcp_frame(b"x"), [0; 10], 1_000_000, &mut tx);
    // Each tick is one lap of the recirculation port.
    for lap in 1..=3 {
        assert_eq!(tx.port(1).queued().len(), 0, "out after {lap} laps: too early");
        let next = sw.on_tick(1_000_000, &mut tx);
        assert_eq!(sw.stats().switch.recirculations, lap);
        if lap < 3 {
            assert_eq!(next, Some(1_000_000), "still recirculating");
        }
    }
    assert_eq!(sw.stats().switch.ingress_passes, 4);
    assert_eq!(tx.port(1).queued().len(), 1);
    assert_eq!(sw.on_tick(5_000_000, &mut tx), Some(11_000_000));
    assert_eq!(sw.on_tick(11_000_000, &mut tx), Some(21_000_000));
    assert_eq!(sw.stats().switch.timers_fired, 1);
    let rep: BTreeMap<_, _> = sw.report().into_iter().collect();
    assert_eq!(rep["timer_ticks"], "1");
}

/// Answers every TCP segment itself (a reply built from the request) and drops the request;
/// a packet made from scratch without wire extras must be counted as an emit error.
struct Responder;
impl Program for Responder {
    fn name(&self) -> &str {
        "responder"
    }
    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        let mut r = pkt.clone();
        make_reply(&mut r, false);
        if let L4::Tcp(h) = &mut r.l4 {
            h.seq = 1000;
        }
        set_payload(&mut r, b"+PONG\r\n");
        ctx.generate(r, Verdict::Forward(meta.ingress_port));
        ctx.generate(
            Packet::new(
                Ipv4::new(1, 2, 17),
                L4::Udp {
                    src_port: 1,
                    dst_port: 2,
                },
                4,
            ),
            Verdict::Forward(1),
        );
        Verdict::Drop
    }
}

#[test]
fn generated_reply_goes_back_with_right_checksums() {
    let mut sw = RealSwitch::new(Responder, NoControl, RealConfig::ports(2)).unwrap();
    let mut tx = TxBatch::new(2);
    sw.on_frame(0, &tcp_frame(b"PING"), [0; 10], 0, &mut tx);
    assert_eq!(tx.port(1).queued().len(), 0);
    let out = &tx.port(0).queued()[0].1;
    let g = parse_frame(out).expect("reply parses with right checksums");
    assert_eq!(g.eth.dst, [2, 0, 0, 0, 0, 1]);
    assert_eq!(g.payload, b"+PONG\r\n");
    let st = sw.stats();
    assert_eq!(st.switch.generated, 2);
    assert_eq!(st.emit_errors, 1);
    assert!(st
        .emit_error_last
        .as_deref()
        .unwrap()
        .contains("wire extras"));
    assert_eq!(st.ports[0].dropped, 2);
}

#[test]
fn ipip_with_a_garbage_inside_is_plain_ipv4_not_malformed() {
    use innet_wire::phv::codec::{emit_into, parse_into};
    use innet_wire::phv::edit::blank_packet;
    let mut f = tcp_frame(b"");
    // Turn it into IP-in-IP whose "inner packet" is the TCP header bytes (not IPv4).
    f[14 + 9] = 4;
    f[24] = 0;
    f[25] = 0;
    let c = innet_wire::checksum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let mut p = blank_packet();
    parse_into(&f, &mut p).unwrap();
    assert!(p.tunnel.is_none());
    assert_eq!(p.ip.protocol, 4);
    let mut out = Vec::new();
    emit_into(&p, &mut out).unwrap();
    assert_eq!(out, f);
}

/// Multicasts every packet to group 0.
struct Mcast;
impl Program for Mcast {
    fn name(&self) -> &str {
        "mcast"
    }
    fn ingress(&mut self, _pkt: &mut Packet, _meta: &mut Metadata, _ctx: &mut Ctx<'_>) -> Verdict {
        Verdict::Multicast(0)
    }
}

#[test]
fn multicast_copies_go_to_the_group_and_a_bad_member_is_a_clear_error() {
    let mut cfg = RealConfig::ports(3);
    cfg.switch.multicast_groups = vec![vec![(1, 0), (2, 1)]];
    let mut sw = RealSwitch::new(Mcast, NoControl, cfg.clone()).unwrap();
    let mut tx = TxBatch::new(3);
    let f = tcp_frame(b"m");
    sw.on_frame(0, &f, [0; 10], 0, &mut tx);
    assert_eq!(tx.port(1).queued()[0].1, f);
    assert_eq!(tx.port(2).queued()[0].1, f);
    assert_eq!(sw.stats().switch.multicast_copies, 2);
    cfg.switch.multicast_groups = vec![vec![(1, 0)], vec![(2, 0), (7, 1)]];
    let e = RealSwitch::new(Mcast, NoControl, cfg).err().expect("port 7 of 3");
    assert!(e.contains("multicast group 1") && e.contains("port 7") && e.contains("below 4"), "{e}");
}

mod never_crash {
    use super::*;
    use innet_switch::real::vnet::{complete_checksum, segment_tcp4, Vnet};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// Any bytes on any port: the switch does not panic, and every frame it sends is either the
        /// input untouched (passed raw) or one the wire parser accepts (checksums right).
        #[test]
        fn any_frame_is_passed_raw_or_forwarded_valid(mut bytes in prop::collection::vec(any::<u8>(), 0..300), ipv4 in any::<bool>(), port in 0u16..3) {
            if ipv4 && bytes.len() > 34 {
                bytes[12] = 0x08; bytes[13] = 0x00; bytes[14] = 0x45; bytes[20] &= 0x40; bytes[21] = 0;
                let tl = (bytes.len() - 14) as u16;
                bytes[16..18].copy_from_slice(&tl.to_be_bytes());
                bytes[24] = 0; bytes[25] = 0;
                let c = innet_wire::checksum::checksum(&bytes[14..34]);
                bytes[24..26].copy_from_slice(&c.to_be_bytes());
            }
            let mut sw = forward(&[("recirculations", "1")]);
            let mut tx = TxBatch::new(2);
            sw.on_frame(port, &bytes, [0; 10], 0, &mut tx);
            for p in 0..2 {
                for (_, f) in tx.port(p).queued() {
                    prop_assert!(f == &bytes || innet_wire::phv::codec::parse_into(f, &mut innet_wire::phv::edit::blank_packet()).is_ok());
                }
            }
        }

        /// The offload undoing code takes any vnet header and bytes without panicking.
        #[test]
        fn vnet_handling_never_panics(mut bytes in prop::collection::vec(any::<u8>(), 0..400), gso in any::<u16>(), start in any::<u16>(), off in any::<u16>()) {
            let mut scratch = Vec::new();
            let mut n = 0;
            let _ = segment_tcp4(&bytes, gso, &mut scratch, |_| n += 1);
            let v = Vnet { flags: 1, gso_type: 0, hdr_len: 0, gso_size: gso, csum_start: start, csum_offset: off };
            let _ = complete_checksum(&mut bytes, &v);
        }
    }
}
