//! Property tests of every format: Repr → bytes → Repr is the identity, and no parser panics
//! on arbitrary bytes.

use std::net::Ipv4Addr;

use innet_wire::ethernet::{EthernetPacket, EthernetRepr, ETHERTYPE_IPV4, ETHERTYPE_VLAN};
use innet_wire::frame::{parse_frame, parse_frame_with, EncapRepr, FrameRepr, L4Repr, TunnelRepr};
use innet_wire::geneve::{GeneveOption, GenevePacket, GeneveRepr, PROTOCOL_ETHERNET};
use innet_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use innet_wire::tcp::{TcpOption, TcpPacket, TcpRepr};
use innet_wire::udp::{UdpPacket, UdpRepr};
use innet_wire::{ipip, pcap, tcp};
use proptest::prelude::*;

fn addr() -> impl Strategy<Value = Ipv4Addr> {
    any::<u32>().prop_map(Ipv4Addr::from)
}

fn ip() -> impl Strategy<Value = Ipv4Repr> {
    (
        addr(),
        addr(),
        1u8..=255,
        0u8..64,
        0u8..4,
        any::<u16>(),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..=2),
    )
        .prop_map(|(src, dst, ttl, dscp, ecn, ident, df, words)| Ipv4Repr {
            src,
            dst,
            protocol: 0,
            ttl,
            dscp,
            ecn,
            ident,
            dont_fragment: df,
            // Options as whole 4-byte words of NOPs with a marker byte.
            options: words.iter().flat_map(|&w| [1, 1, 1, w]).collect(),
            payload_len: 0,
        })
}

fn tcp_opts() -> impl Strategy<Value = Vec<TcpOption>> {
    prop::collection::vec(
        prop_oneof![
            any::<u16>().prop_map(TcpOption::Mss),
            any::<u8>().prop_map(TcpOption::WindowScale),
            Just(TcpOption::SackPermitted),
            Just(TcpOption::Nop),
            prop::collection::vec((any::<u32>(), any::<u32>()), 1..=4).prop_map(TcpOption::Sack),
            (any::<u32>(), any::<u32>()).prop_map(|(value, echo)| TcpOption::Timestamps { value, echo }),
            (30u8..250, prop::collection::vec(any::<u8>(), 0..6))
                .prop_map(|(kind, data)| TcpOption::Unknown { kind, data }),
        ],
        0..5,
    )
    .prop_filter("options fit in 40 bytes", |o| tcp::options_len(o) <= 40)
}

fn l4() -> impl Strategy<Value = L4Repr> {
    prop_oneof![
        (any::<u16>(), any::<u16>())
            .prop_filter("not a tunnel port", |(_, d)| *d != 6081)
            .prop_map(|(s, d)| L4Repr::Udp {
                src_port: s,
                dst_port: d
            }),
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
            any::<u8>(),
            any::<u16>(),
            tcp_opts()
        )
            .prop_map(|(src_port, dst_port, seq, ack, flags, window, options)| {
                L4Repr::Tcp(TcpRepr {
                    src_port,
                    dst_port,
                    seq,
                    ack,
                    flags,
                    window,
                    urgent: 0,
                    options,
                    payload_len: 0,
                })
            }),
    ]
}

fn eth() -> impl Strategy<Value = EthernetRepr> {
    (any::<[u8; 6]>(), any::<[u8; 6]>(), prop::option::of(any::<u16>())).prop_map(|(dst, src, vlan_tci)| EthernetRepr {
        dst,
        src,
        vlan_tci,
        ethertype: ETHERTYPE_IPV4,
    })
}

fn encap() -> impl Strategy<Value = Option<(Ipv4Repr, EncapRepr)>> {
    prop::option::of((
        ip(),
        prop_oneof![
            Just(EncapRepr::IpInIp),
            any::<u16>().prop_map(|s| EncapRepr::Udp {
                src_port: s,
                dst_port: 667
            }),
            (
                any::<u16>(),
                0u32..1 << 24,
                prop::collection::vec((any::<u16>(), any::<u8>(), 0usize..3), 0..3),
                eth()
            )
                .prop_map(|(src_port, vni, opts, inner_eth)| EncapRepr::Geneve {
                    src_port,
                    geneve: GeneveRepr {
                        oam: false,
                        critical: false,
                        protocol: PROTOCOL_ETHERNET,
                        vni,
                        options: opts
                            .into_iter()
                            .map(|(class, kind, words)| GeneveOption {
                                class,
                                kind,
                                data: vec![0xAB; words * 4]
                            })
                            .collect(),
                    },
                    inner_eth: EthernetRepr {
                        vlan_tci: None,
                        ..inner_eth
                    },
                }),
        ],
    ))
}

fn normalize(mut f: FrameRepr, bytes: &[u8]) -> FrameRepr {
    // Fields emit derives from the content, taken from the parsed result.
    let parsed = parse_frame_with(bytes, &[667]).unwrap();
    f.ip.payload_len = parsed.ip.payload_len;
    f.ip.protocol = parsed.ip.protocol;
    if let L4Repr::Tcp(t) = &mut f.l4 {
        t.payload_len = f.payload.len();
    }
    if let (Some(t), Some(p)) = (&mut f.tunnel, &parsed.tunnel) {
        t.outer.payload_len = p.outer.payload_len;
        t.outer.protocol = p.outer.protocol;
    }
    f
}

proptest! {
    #[test]
    fn whole_frames_round_trip(eth in eth(), tun in encap(), ip in ip(), l4 in l4(), payload in prop::collection::vec(any::<u8>(), 0..300)) {
        let f = FrameRepr { eth, tunnel: tun.map(|(outer, encap)| TunnelRepr { outer, encap }), ip, l4, payload };
        let bytes = f.emit().unwrap();
        prop_assert_eq!(bytes.len(), f.buffer_len());
        let parsed = parse_frame_with(&bytes, &[667]).unwrap();
        // Byte-exact the other way too: what parses emits to the very same bytes.
        prop_assert_eq!(&parsed.emit().unwrap(), &bytes);
        prop_assert_eq!(parsed, normalize(f, &bytes));
    }

    #[test]
    fn ethernet_round_trip(e in eth(), ethertype in any::<u16>(), payload in prop::collection::vec(any::<u8>(), 0..20)) {
        // 0x8100 as the inner ethertype of an untagged frame would read back as a tag.
        prop_assume!(ethertype != ETHERTYPE_VLAN || e.vlan_tci.is_some());
        let r = EthernetRepr { ethertype, ..e };
        let mut buf = vec![0u8; r.header_len() + payload.len()];
        r.emit(&mut buf);
        buf[r.header_len()..].copy_from_slice(&payload);
        let p = EthernetPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(EthernetRepr::parse(&p).unwrap(), r);
        prop_assert_eq!(p.payload(), &payload[..]);
    }

    #[test]
    fn ipv4_round_trip(r in ip(), protocol in any::<u8>(), opts in prop::collection::vec(any::<[u8; 4]>(), 0..=10), payload in prop::collection::vec(any::<u8>(), 0..64), pad in 0usize..8) {
        let r = Ipv4Repr { protocol, options: opts.concat(), payload_len: payload.len(), ..r };
        // Link-layer padding after the packet must not change anything.
        let mut buf = vec![0xEEu8; r.buffer_len() + pad];
        buf[r.header_len()..r.buffer_len()].copy_from_slice(&payload);
        r.emit(&mut buf).unwrap();
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        prop_assert!(p.verify_checksum());
        prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r.clone());
        prop_assert_eq!(p.payload(), &payload[..]);
        // Any single corrupted header bit is caught by the checksum or by new_checked.
        let bit = (payload.len() * 7 + pad) % (r.header_len() * 8);
        buf[bit / 8] ^= 1 << (bit % 8);
        let bad = Ipv4Packet::new_checked(&buf[..]).and_then(|p| Ipv4Repr::parse(&p));
        prop_assert!(bad.is_err() || bad.as_ref().unwrap() != &r, "flipped bit {} went unnoticed", bit);
    }

    #[test]
    fn udp_round_trip(src in addr(), dst in addr(), sp in any::<u16>(), dp in any::<u16>(), payload in prop::collection::vec(any::<u8>(), 0..100)) {
        let r = UdpRepr { src_port: sp, dst_port: dp, payload_len: payload.len() };
        let mut buf = vec![0u8; r.buffer_len()];
        buf[8..].copy_from_slice(&payload);
        r.emit(&mut buf, src, dst).unwrap();
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(UdpRepr::parse(&p, src, dst).unwrap(), r);
        prop_assert_eq!(p.payload(), &payload[..]);
        if !payload.is_empty() {
            buf[8] ^= 0x10;
            prop_assert!(UdpRepr::parse(&UdpPacket::new_checked(&buf[..]).unwrap(), src, dst).is_err());
        }
    }

    #[test]
    fn tcp_round_trip(src in addr(), dst in addr(), l4 in l4(), payload in prop::collection::vec(any::<u8>(), 0..100)) {
        let L4Repr::Tcp(t) = l4 else { return Ok(()) };
        let r = TcpRepr { payload_len: payload.len(), ..t };
        let mut buf = vec![0u8; r.buffer_len()];
        buf[r.header_len()..].copy_from_slice(&payload);
        r.emit(&mut buf, src, dst).unwrap();
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(p.header_len(), r.header_len());
        prop_assert_eq!(TcpRepr::parse(&p, src, dst).unwrap(), r.clone());
        prop_assert_eq!(p.payload(), &payload[..]);
        let mut again = vec![0u8; buf.len()];
        again[r.header_len()..].copy_from_slice(&payload);
        TcpRepr::parse(&p, src, dst).unwrap().emit(&mut again, src, dst).unwrap();
        prop_assert_eq!(again, buf);
    }

    #[test]
    fn geneve_round_trip(oam in any::<bool>(), critical in any::<bool>(), protocol in any::<u16>(), vni in 0u32..1 << 24, opts in prop::collection::vec((any::<u16>(), any::<u8>(), prop::collection::vec(any::<[u8; 4]>(), 0..=31)), 0..6)) {
        let options: Vec<GeneveOption> = opts.into_iter().map(|(class, kind, words)| GeneveOption { class, kind, data: words.concat() }).collect();
        let r = GeneveRepr { oam, critical, protocol, vni, options };
        let mut buf = vec![0u8; r.header_len() + 3];
        match r.emit(&mut buf) {
            Err(e) => prop_assert!(r.options_len() > 252 && e.to_string().contains("at most 252"), "{e}"),
            Ok(()) => {
                let p = GenevePacket::new_checked(&buf[..]).unwrap();
                prop_assert_eq!(p.header_len(), r.header_len());
                prop_assert_eq!(GeneveRepr::parse(&p).unwrap(), r);
                prop_assert_eq!(p.payload().len(), 3);
            }
        }
    }

    #[test]
    fn ipip_round_trip(outer in ip(), inner in ip(), payload in prop::collection::vec(any::<u8>(), 0..50)) {
        let inner = Ipv4Repr { protocol: 17, payload_len: payload.len(), ..inner };
        let mut pkt = vec![0u8; inner.buffer_len()];
        inner.emit(&mut pkt).unwrap();
        pkt[inner.header_len()..].copy_from_slice(&payload);
        let bytes = ipip::encapsulate(&outer, &pkt).unwrap();
        let (o, view) = ipip::decapsulate(&bytes).unwrap();
        prop_assert_eq!(o, Ipv4Repr { protocol: 4, payload_len: pkt.len(), ..outer });
        prop_assert_eq!(Ipv4Repr::parse(&view).unwrap(), inner);
        prop_assert_eq!(view.payload(), &payload[..]);
    }

    #[test]
    fn pcap_round_trip(snaplen in 1u32..100, recs in prop::collection::vec((0u64..(1 << 32) * 1_000_000_000, prop::collection::vec(any::<u8>(), 0..120), 0u32..10), 0..6)) {
        let mut w = pcap::PcapWriter::new(Vec::new(), snaplen).unwrap();
        for (t, data, extra) in &recs {
            w.write(*t, data, data.len() as u32 + extra).unwrap();
        }
        let bytes = w.into_inner();
        prop_assert_eq!(u32::from_le_bytes(bytes[16..20].try_into().unwrap()), snaplen);
        let (link, back) = pcap::parse(&bytes).unwrap();
        prop_assert_eq!(link, pcap::LINKTYPE_ETHERNET);
        prop_assert_eq!(back.len(), recs.len());
        for (b, (t, data, extra)) in back.iter().zip(&recs) {
            prop_assert_eq!(b.time_ns, *t);
            prop_assert_eq!(&b.data[..], &data[..data.len().min(snaplen as usize)]);
            prop_assert_eq!(b.orig_len, data.len() as u32 + extra);
        }
    }

    #[test]
    fn tcp_options_round_trip(opts in tcp_opts()) {
        let t = TcpRepr { src_port: 1, dst_port: 2, seq: 3, ack: 4, flags: tcp::flags::ACK, window: 5, urgent: 0, options: opts.clone(), payload_len: 0 };
        let (s, d) = (Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8));
        let mut buf = vec![0u8; t.header_len()];
        t.emit(&mut buf, s, d).unwrap();
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(TcpRepr::parse(&p, s, d).unwrap().options, opts);
    }

    #[test]
    fn parsers_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_frame(&bytes);
        let _ = parse_frame_with(&bytes, &[667, 4789]);
        if let Ok(p) = EthernetPacket::new_checked(&bytes[..]) { let _ = EthernetRepr::parse(&p); let _ = p.payload(); }
        if let Ok(p) = Ipv4Packet::new_checked(&bytes[..]) { let _ = Ipv4Repr::parse(&p); let _ = p.payload(); }
        if let Ok(p) = UdpPacket::new_checked(&bytes[..]) { let _ = p.payload(); let _ = p.verify_checksum(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST); }
        if let Ok(p) = TcpPacket::new_checked(&bytes[..]) { let _ = TcpRepr::parse(&p, Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST); let _ = tcp::parse_options(p.options()); }
        if let Ok(p) = GenevePacket::new_checked(&bytes[..]) { let _ = GeneveRepr::parse(&p); let _ = p.options().count(); }
        let _ = pcap::parse(&bytes);
    }

    #[test]
    fn corrupting_a_valid_frame_never_panics(l4 in l4(), payload in prop::collection::vec(any::<u8>(), 0..64), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let f = FrameRepr {
            eth: EthernetRepr { dst: [1; 6], src: [2; 6], vlan_tci: None, ethertype: ETHERTYPE_IPV4 },
            tunnel: Some(TunnelRepr {
                outer: Ipv4Repr { src: Ipv4Addr::new(10, 0, 0, 1), dst: Ipv4Addr::new(10, 0, 0, 2), protocol: 0, ttl: 64, dscp: 0, ecn: 0, ident: 0, dont_fragment: false, options: vec![], payload_len: 0 },
                encap: EncapRepr::Geneve { src_port: 5, geneve: GeneveRepr { oam: false, critical: false, protocol: PROTOCOL_ETHERNET, vni: 9, options: vec![GeneveOption { class: 1, kind: 2, data: vec![0; 8] }] }, inner_eth: EthernetRepr { dst: [3; 6], src: [4; 6], vlan_tci: None, ethertype: ETHERTYPE_IPV4 } },
            }),
            ip: Ipv4Repr { src: Ipv4Addr::new(192, 168, 0, 1), dst: Ipv4Addr::new(192, 168, 0, 2), protocol: 0, ttl: 64, dscp: 0, ecn: 0, ident: 0, dont_fragment: false, options: vec![], payload_len: 0 },
            l4,
            payload,
        };
        let mut bytes = f.emit().unwrap();
        for (at, x) in flips {
            let n = bytes.len();
            bytes[at % n] ^= x;
        }
        let n = bytes.len();
        let _ = parse_frame(&bytes[..cut % (n + 1)]);
    }
}
