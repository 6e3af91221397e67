//! Properties of the packet codec (frame ↔ Packet, `phv::codec`): every frame `parse_into` accepts
//! re-emits byte-identically (whatever its MACs, VLAN tag, IP options, DF/reserved bits, TCP
//! options — raw, even malformed-looking ones — urgent pointer, padding); random bytes never
//! panic; whatever wire's own parser accepts as plain IPv4/TCP/UDP, the runtime accepts too.

use innet_wire::phv::codec::{emit_into, parse_into, Refusal};
use innet_wire::phv::edit::{blank_packet, make_reply};
use innet_wire::checksum;
use proptest::prelude::*;

/// Build a frame from raw parts, with right lengths and checksums.
#[allow(clippy::too_many_arguments)]
fn build(
    vlan: Option<u16>,
    ip_opts: &[u8],
    flags_frag: u16,
    proto: u8,
    tcp_opts: &[u8],
    tcp_byte12_low: u8,
    urgent: u16,
    payload: &[u8],
    trailer: &[u8],
    udp_zero: bool,
) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    if let Some(t) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&t.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let ip_at = f.len();
    let ihl = 20 + ip_opts.len();
    let l4 = match proto {
        6 => {
            let mut t = vec![0x9c, 0x40, 0x23, 0x52, 0, 0, 0, 1, 0, 0, 0, 2];
            t.push((((20 + tcp_opts.len()) / 4) as u8) << 4 | (tcp_byte12_low & 0x0f));
            t.extend_from_slice(&[0x18, 0x01, 0x00, 0, 0]);
            t.extend_from_slice(&urgent.to_be_bytes());
            t.extend_from_slice(tcp_opts);
            t
        }
        17 => {
            let mut u = vec![0x30, 0x39, 0x00, 0x35];
            u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
            u.extend_from_slice(&[0, 0]);
            u
        }
        _ => vec![],
    };
    let total = ihl + l4.len() + payload.len();
    f.extend_from_slice(&[0x40 | (ihl / 4) as u8, 0x2e]);
    f.extend_from_slice(&(total as u16).to_be_bytes());
    f.extend_from_slice(&[0x12, 0x34]);
    f.extend_from_slice(&flags_frag.to_be_bytes());
    f.extend_from_slice(&[17, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(ip_opts);
    let c = checksum::checksum(&f[ip_at..ip_at + ihl]);
    f[ip_at + 10..ip_at + 12].copy_from_slice(&c.to_be_bytes());
    let l4_at = f.len();
    f.extend_from_slice(&l4);
    f.extend_from_slice(payload);
    let seg_len = f.len() - l4_at;
    let pseudo = checksum::sum(&[10, 0, 0, 1, 10, 0, 0, 2]) + proto as u32 + seg_len as u32;
    match proto {
        6 => {
            let c = checksum::finish(pseudo + checksum::sum(&f[l4_at..]));
            f[l4_at + 16..l4_at + 18].copy_from_slice(&c.to_be_bytes());
        }
        17 if !udp_zero => {
            let c = checksum::finish(pseudo + checksum::sum(&f[l4_at..]));
            let c = if c == 0 { 0xffff } else { c };
            f[l4_at + 6..l4_at + 8].copy_from_slice(&c.to_be_bytes());
        }
        _ => {}
    }
    f.extend_from_slice(trailer);
    f
}

fn words(max: usize) -> impl Strategy<Value = Vec<u8>> {
    (0..=max / 4).prop_flat_map(|n| prop::collection::vec(any::<u8>(), n * 4))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn accepted_frames_re_emit_byte_identically(
        vlan in prop::option::of(any::<u16>()),
        ip_opts in words(40),
        df in any::<bool>(), evil in any::<bool>(),
        proto in prop::sample::select(vec![1u8, 6, 17, 47]),
        tcp_opts in words(40),
        low in 0u8..16, urgent in any::<u16>(),
        payload in prop::collection::vec(any::<u8>(), 0..300),
        trailer in prop::collection::vec(any::<u8>(), 0..20),
        udp_zero in any::<bool>(),
    ) {
        let ff = (df as u16) << 14 | (evil as u16) << 15;
        let f = build(vlan, &ip_opts, ff, proto, &tcp_opts, low, urgent, &payload, &trailer, udp_zero);
        let mut p = blank_packet();
        match parse_into(&f, &mut p) {
            Ok(()) => {
                let mut out = Vec::new();
                emit_into(&p, &mut out).unwrap();
                prop_assert_eq!(&out, &f);
                prop_assert_eq!(innet_wire::phv::edit::payload(&p), &payload[..]);
                // A reply emits a frame that parses back.
                make_reply(&mut p, true);
                emit_into(&p, &mut out).unwrap();
                let mut q = blank_packet();
                prop_assert!(parse_into(&out, &mut q).is_ok());
            }
            // Only a checksum that happens to be the other one's-complement zero may be refused.
            Err(Refusal::Unsupported(why)) => prop_assert!(why.contains("other zero"), "{}", why),
            Err(e) => prop_assert!(false, "valid frame refused: {}", e),
        }
    }

    #[test]
    fn random_bytes_never_panic_and_accepted_ones_round_trip(
        mut bytes in prop::collection::vec(any::<u8>(), 0..200),
        ipv4 in any::<bool>(),
    ) {
        if ipv4 && bytes.len() > 34 {
            bytes[12] = 0x08; bytes[13] = 0x00; bytes[14] = 0x45;
            let tl = (bytes.len() - 14) as u16;
            bytes[16..18].copy_from_slice(&tl.to_be_bytes());
            bytes[20] &= 0x40; bytes[21] = 0;
            bytes[24] = 0; bytes[25] = 0;
            let c = checksum::checksum(&bytes[14..34]);
            bytes[24..26].copy_from_slice(&c.to_be_bytes());
        }
        let mut p = blank_packet();
        if parse_into(&bytes, &mut p).is_ok() {
            let mut out = Vec::new();
            emit_into(&p, &mut out).unwrap();
            prop_assert_eq!(out, bytes);
        }
    }

    #[test]
    fn wire_parser_and_runtime_agree_on_plain_frames(
        payload in prop::collection::vec(any::<u8>(), 0..100),
        proto in prop::sample::select(vec![6u8, 17]),
    ) {
        let f = build(None, &[], 0x4000, proto, &[1, 1, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6], 0, 0, &payload, &[], false);
        let w = innet_wire::frame::parse_frame(&f).unwrap();
        let mut p = blank_packet();
        parse_into(&f, &mut p).unwrap();
        prop_assert_eq!(p.payload_len as usize, w.payload.len());
        prop_assert_eq!(p.ip.src, u32::from(w.ip.src));
    }
}

mod tunnels {
    use innet_wire::phv::codec::{emit_into, parse_into};
    use innet_wire::phv::edit::blank_packet;
    use innet_wire::phv::Encap;
    use innet_wire::ethernet::{EthernetRepr, ETHERTYPE_IPV4};
    use innet_wire::frame::{EncapRepr, FrameRepr, L4Repr, TunnelRepr};
    use innet_wire::geneve::{GeneveOption, GeneveRepr, PROTOCOL_ETHERNET};
    use innet_wire::ipv4::Ipv4Repr;
    use innet_wire::tcp::{TcpOption, TcpRepr};
    use innet_wire::Ipv4Addr;
    use proptest::prelude::*;

    fn ip(a: u32, b: u32, ident: u16) -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::from(a),
            dst: Ipv4Addr::from(b),
            protocol: 0,
            ttl: 9,
            dscp: 4,
            ecn: 1,
            ident,
            dont_fragment: ident.is_multiple_of(2),
            options: vec![],
            payload_len: 0,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]
        #[test]
        fn geneve_and_ipip_frames_decode_as_tunnels_and_re_emit_byte_identically(
            geneve in any::<bool>(), vni in 0u32..(1 << 24), sport in any::<u16>(), oam in any::<bool>(),
            opts in prop::collection::vec((any::<u16>(), 0u8..128, prop::collection::vec(any::<u8>(), 0..3)), 0..3),
            a in any::<u32>(), b in any::<u32>(), ident in any::<u16>(),
            tcp in any::<bool>(), payload in prop::collection::vec(any::<u8>(), 0..200),
        ) {
            let encap = if geneve {
                EncapRepr::Geneve {
                    src_port: sport,
                    geneve: GeneveRepr {
                        oam, critical: false, protocol: PROTOCOL_ETHERNET, vni,
                        options: opts.iter().map(|(c, k, d)| GeneveOption { class: *c, kind: *k, data: d.iter().flat_map(|x| [*x; 4]).collect() }).collect(),
                    },
                    inner_eth: EthernetRepr { dst: [2, 1, 0, 0, 0, 2], src: [2, 1, 0, 0, 0, 1], vlan_tci: None, ethertype: ETHERTYPE_IPV4 },
                }
            } else {
                EncapRepr::IpInIp
            };
            let l4 = if tcp {
                L4Repr::Tcp(TcpRepr { src_port: 1, dst_port: 2, seq: 3, ack: 4, flags: 0x10, window: 5, urgent: 0,
                    options: vec![TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamps { value: 1, echo: 2 }], payload_len: 0 })
            } else {
                L4Repr::Udp { src_port: 7, dst_port: 8 }
            };
            let f = FrameRepr {
                eth: EthernetRepr { dst: [2, 0, 0, 0, 0, 2], src: [2, 0, 0, 0, 0, 1], vlan_tci: None, ethertype: ETHERTYPE_IPV4 },
                tunnel: Some(TunnelRepr { outer: ip(b, a, ident ^ 0x55), encap }),
                ip: ip(a, b, ident),
                l4,
                payload,
            }.emit().unwrap();
            let mut p = blank_packet();
            parse_into(&f, &mut p).unwrap();
            let t = p.tunnel.as_ref().expect("decoded as a tunnel");
            prop_assert_eq!(t.outer.src, b);
            match &t.encap {
                Encap::Geneve { vni: v, src_port, .. } => { prop_assert!(geneve); prop_assert_eq!(*v, vni); prop_assert_eq!(*src_port, sport); }
                Encap::IpInIp => prop_assert!(!geneve),
                e => prop_assert!(false, "unexpected encap {:?}", e),
            }
            prop_assert_eq!(p.ip.src, a);
            let mut out = Vec::new();
            emit_into(&p, &mut out).unwrap();
            prop_assert_eq!(out, f);
        }
    }
}

/// The fast path of `parse_into` (plain untagged IPv4/TCP read straight from the bytes) against
/// the full parser, on valid frames of every shape and on the same frames with one byte
/// changed (a wrong checksum, a fragment bit, a short length, another protocol, ...): the same
/// verdict and, when accepted, the same packet. Then the emit fast path: a packet with new
/// seq/ack/IP ident/window/payload emits a frame the full parser accepts (both checksums
/// right) and reads back to the same packet.
mod fast_paths {
    use super::{build, words};
    use innet_wire::phv::codec::{emit_into, parse_into, parse_into_full};
    use innet_wire::phv::edit::{blank_packet, set_payload};
    use innet_wire::phv::L4;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        #[test]
        fn fast_parse_equals_full_parse(
            vlan in prop::option::of(any::<u16>()),
            ip_opts in words(40),
            ff in prop::sample::select(vec![0u16, 0x4000, 0x8000, 0x2000, 0x0001]),
            proto in prop::sample::select(vec![6u8, 6, 6, 17, 4]),
            tcp_opts in words(40),
            low in 0u8..16, urgent in any::<u16>(),
            payload in prop::collection::vec(any::<u8>(), 0..300),
            trailer in prop::collection::vec(any::<u8>(), 0..20),
            flip in prop::option::of((any::<prop::sample::Index>(), 1u8..=255)),
            cut in prop::option::of(any::<prop::sample::Index>()),
        ) {
            let mut f = build(vlan, &ip_opts, ff, proto, &tcp_opts, low, urgent, &payload, &trailer, false);
            if let Some((at, x)) = flip {
                let i = at.index(f.len());
                f[i] ^= x;
            }
            if let Some(c) = cut {
                let n = c.index(f.len() + 1);
                f.truncate(n);
            }
            let (mut fast, mut full) = (blank_packet(), blank_packet());
            let a = parse_into(&f, &mut fast);
            let b = parse_into_full(&f, &mut full);
            prop_assert_eq!(&a, &b);
            if a.is_ok() {
                prop_assert_eq!(&fast, &full);
            }
        }

        #[test]
        fn edited_packets_emit_right_checksums(
            ip_opts in words(40), tcp_opts in words(40),
            payload in prop::collection::vec(any::<u8>(), 0..300),
            new_payload in prop::option::of(prop::collection::vec(any::<u8>(), 0..300)),
            seq in any::<u32>(), ack in any::<u32>(), ident in any::<u16>(), window in any::<u16>(),
            flags in any::<u8>(), trailer in prop::collection::vec(any::<u8>(), 0..20),
        ) {
            let f = build(None, &ip_opts, 0x4000, 6, &tcp_opts, 0, 0, &payload, &trailer, false);
            let mut p = blank_packet();
            if parse_into(&f, &mut p).is_err() {
                // Only a checksum that happens to be the other zero is refused.
                return Ok(());
            }
            if let L4::Tcp(h) = &mut p.l4 {
                h.seq = seq;
                h.ack = ack;
                h.window = window as u32;
                h.flags.0 = flags;
            }
            p.ip.ident = ident;
            if let Some(np) = &new_payload {
                set_payload(&mut p, np);
                // Simulation metadata the parser derives from the payload.
                p.is_data = !np.is_empty();
            }
            let mut out = Vec::new();
            emit_into(&p, &mut out).unwrap();
            let mut q = blank_packet();
            match parse_into_full(&out, &mut q) {
                Ok(()) => prop_assert_eq!(&q, &p),
                Err(innet_wire::phv::codec::Refusal::Unsupported(why)) => {
                    prop_assert!(why.contains("other zero"), "{}", why)
                }
                Err(e) => prop_assert!(false, "emitted frame refused: {}", e),
            }
        }
    }
}

/// A plain UDP tunnel (which a real frame cannot be parsed into: the port is not known) is
/// emitted as wire's own frame parser reads it when told the port: outer IPv4/UDP with right
/// lengths and checksums around the inner packet.
#[test]
fn udp_tunnel_emits_as_wires_parser_reads_it() {
    use innet_wire::frame::{parse_frame_with, EncapRepr, L4Repr};
    use innet_wire::phv::{Encap, Ipv4, Packet, Tunnel, WireExtras, IP_PROTO_UDP, L4};
    let mut p = Packet::new(Ipv4::new(0xC0A8_0001, 0xC0A8_0002, IP_PROTO_UDP), L4::Udp { src_port: 7, dst_port: 8 }, 5);
    p.payload_bytes = Some(Box::new(b"hello".to_vec()));
    p.tunnel = Some(Tunnel { outer: Ipv4::new(0x0A00_0001, 0x0A00_0002, IP_PROTO_UDP), encap: Encap::Udp { src_port: 4000, dst_port: 4789 } });
    p.wire = Some(Box::new(WireExtras { eth_dst: [2; 6], eth_src: [4; 6], ..Default::default() }));
    let mut out = Vec::new();
    emit_into(&p, &mut out).unwrap();
    assert_eq!(out.len() as u32 + 4, p.frame_bytes());
    let f = parse_frame_with(&out, &[4789]).expect("valid lengths and checksums");
    let t = f.tunnel.expect("tunnel");
    assert_eq!(t.encap, EncapRepr::Udp { src_port: 4000, dst_port: 4789 });
    assert_eq!(u32::from(t.outer.dst), 0x0A00_0002);
    assert_eq!(f.l4, L4Repr::Udp { src_port: 7, dst_port: 8 });
    assert_eq!(f.payload, b"hello");
}
