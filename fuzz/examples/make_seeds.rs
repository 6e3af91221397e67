//! Writes the seed corpus under fuzz/seeds/<target>/: small valid inputs built with the
//! crate's own emitters, so libFuzzer starts from every layer and tunnel kind instead of
//! having to guess checksums. Run: `cargo run --example make_seeds` in fuzz/ (stable rustc).

use std::fs;
use std::path::{Path, PathBuf};

use innet_wire::checksum;
use innet_wire::ethernet::{EthernetRepr, ETHERTYPE_IPV4};
use innet_wire::frame::{parse_frame_with, EncapRepr, FrameRepr, L4Repr, TunnelRepr};
use innet_wire::geneve::{GeneveOption, GeneveRepr, PROTOCOL_ETHERNET};
use innet_wire::ipv4::{Ipv4Repr, PROTO_TCP};
use innet_wire::pcap::PcapWriter;
use innet_wire::switchv2p::{ControlMessage, V2pOptions};
use innet_wire::tcp::{flags, TcpOption, TcpRepr};
use innet_wire::Ipv4Addr;

fn ip(src: [u8; 4], dst: [u8; 4], options: Vec<u8>) -> Ipv4Repr {
    Ipv4Repr {
        src: Ipv4Addr::from(src),
        dst: Ipv4Addr::from(dst),
        protocol: 0,
        ttl: 64,
        dscp: 0,
        ecn: 0,
        ident: 7,
        dont_fragment: true,
        options,
        payload_len: 0,
    }
}

fn eth(vlan_tci: Option<u16>) -> EthernetRepr {
    EthernetRepr {
        dst: [2, 0, 0, 0, 0, 2],
        src: [2, 0, 0, 0, 0, 1],
        vlan_tci,
        ethertype: ETHERTYPE_IPV4,
    }
}

fn syn() -> L4Repr {
    L4Repr::Tcp(TcpRepr {
        src_port: 40000,
        dst_port: 80,
        seq: 1000,
        ack: 0,
        flags: flags::SYN,
        window: 64240,
        urgent: 0,
        options: vec![
            TcpOption::Mss(1460),
            TcpOption::SackPermitted,
            TcpOption::Timestamps { value: 1, echo: 0 },
            TcpOption::WindowScale(7),
        ],
        payload_len: 0,
    })
}

fn ack_with_sack() -> L4Repr {
    L4Repr::Tcp(TcpRepr {
        src_port: 80,
        dst_port: 40000,
        seq: 5000,
        ack: 1001,
        flags: flags::ACK | flags::PSH,
        window: 512,
        urgent: 0,
        options: vec![
            TcpOption::Sack(vec![(10, 20), (30, 40)]),
            TcpOption::Unknown {
                kind: 30,
                data: vec![1, 2],
            },
        ],
        payload_len: 0,
    })
}

fn frames() -> Vec<(&'static str, FrameRepr)> {
    let (a, b, c, d) = (
        [10, 0, 0, 1],
        [10, 0, 1, 2],
        [192, 168, 0, 1],
        [192, 168, 0, 2],
    );
    let inner_udp = L4Repr::Udp {
        src_port: 5000,
        dst_port: 9000,
    };
    let geneve = GeneveRepr {
        oam: false,
        critical: true,
        protocol: PROTOCOL_ETHERNET,
        vni: 0x12345,
        options: vec![
            GeneveOption {
                class: 0x0103,
                kind: 0x81,
                data: vec![1, 2, 3, 4],
            },
            GeneveOption {
                class: 0xFFFF,
                kind: 2,
                data: vec![],
            },
        ],
    };
    vec![
        (
            "udp",
            FrameRepr {
                eth: eth(None),
                tunnel: None,
                ip: ip(a, b, vec![]),
                l4: inner_udp.clone(),
                payload: b"hi".to_vec(),
            },
        ),
        (
            "udp_vlan_ipopts",
            FrameRepr {
                eth: eth(Some(0x2064)),
                tunnel: None,
                ip: ip(a, b, vec![1, 1, 1, 0]),
                l4: inner_udp.clone(),
                payload: vec![0; 5],
            },
        ),
        (
            "tcp_syn",
            FrameRepr {
                eth: eth(None),
                tunnel: None,
                ip: ip(c, d, vec![]),
                l4: syn(),
                payload: vec![],
            },
        ),
        (
            "tcp_sack",
            FrameRepr {
                eth: eth(None),
                tunnel: None,
                ip: ip(d, c, vec![]),
                l4: ack_with_sack(),
                payload: b"data".to_vec(),
            },
        ),
        (
            "other_proto",
            FrameRepr {
                eth: eth(None),
                tunnel: None,
                ip: Ipv4Repr {
                    protocol: 47,
                    ..ip(a, b, vec![])
                },
                l4: L4Repr::Other,
                payload: vec![9; 6],
            },
        ),
        (
            "ipip",
            FrameRepr {
                eth: eth(None),
                tunnel: Some(TunnelRepr {
                    outer: ip(a, b, vec![]),
                    encap: EncapRepr::IpInIp,
                }),
                ip: ip(c, d, vec![]),
                l4: syn(),
                payload: vec![],
            },
        ),
        (
            "udp_tunnel_667",
            FrameRepr {
                eth: eth(None),
                tunnel: Some(TunnelRepr {
                    outer: ip(a, b, vec![]),
                    encap: EncapRepr::Udp {
                        src_port: 1234,
                        dst_port: 667,
                    },
                }),
                ip: ip(c, d, vec![]),
                l4: inner_udp.clone(),
                payload: b"x".to_vec(),
            },
        ),
        (
            "geneve_tcp",
            FrameRepr {
                eth: eth(None),
                tunnel: Some(TunnelRepr {
                    outer: ip(a, b, vec![]),
                    encap: EncapRepr::Geneve {
                        src_port: 4321,
                        geneve,
                        inner_eth: eth(None),
                    },
                }),
                ip: ip(c, d, vec![]),
                l4: ack_with_sack(),
                payload: b"inner".to_vec(),
            },
        ),
    ]
}

/// Inputs that once broke an oracle, kept so every run re-checks them first.
fn regressions() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    // A SACK option with no blocks (kind 5, length 2): parse accepted it, emit refused it.
    let (src, dst) = (Ipv4Addr::new(192, 168, 0, 1), Ipv4Addr::new(192, 168, 0, 2));
    let mut seg = vec![
        0x9c,
        0x40,
        0x00,
        0x50,
        0,
        0,
        3,
        0xe8,
        0,
        0,
        0,
        0,
        0x60,
        flags::ACK,
        0x10,
        0,
        0,
        0,
        0,
        0,
    ];
    seg.extend_from_slice(&[5, 2, 1, 1]);
    let c = checksum::finish(
        checksum::pseudo_header(src, dst, PROTO_TCP, seg.len() as u16) + checksum::sum(&seg),
    );
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    let tcp = [&src.octets()[..], &dst.octets(), &seg].concat();
    let mut ip = ip(src.octets(), dst.octets(), vec![]);
    ip.protocol = PROTO_TCP;
    ip.payload_len = seg.len();
    let mut frame = vec![0u8; 14 + ip.buffer_len()];
    eth(None).emit(&mut frame);
    ip.emit(&mut frame[14..]).expect("a plain header fits");
    frame[14 + 20..].copy_from_slice(&seg);
    vec![
        ("tcp", "regress_sack_zero_blocks", tcp),
        (
            "frame",
            "regress_sack_zero_blocks",
            [&[0u8][..], &frame].concat(),
        ),
    ]
}

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) {
    let d = dir.join(target);
    fs::create_dir_all(&d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
    let f = d.join(name);
    fs::write(&f, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", f.display()));
}

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/seeds").into()),
    );
    let mut pcap = PcapWriter::new(Vec::new(), 65535).expect("Vec never fails");
    for (i, (name, f)) in frames().into_iter().enumerate() {
        let bytes = f
            .emit()
            .unwrap_or_else(|e| panic!("seed {name} does not emit: {e}"));
        assert_eq!(
            parse_frame_with(&bytes, &[667]).map(|g| g.payload),
            Ok(f.payload.clone()),
            "seed {name} round trip"
        );
        // The frame target's first byte picks a mode; odd means "fix checksums first".
        write(&dir, "frame", name, &[&[1u8][..], &bytes].concat());
        // real_frame: the same frames, checksums fixed (odd mode), reply keeps TCP options (2).
        write(&dir, "real_frame", name, &[&[3u8][..], &bytes].concat());
        write(&dir, "ethernet", name, &bytes[..f.eth.header_len() + 2]);
        let ip_at = f.eth.header_len();
        write(&dir, "ipv4", name, &bytes[ip_at..]);
        pcap.write(i as u64 * 1_000_123, &bytes, bytes.len() as u32)
            .expect("Vec never fails");
        // The innermost transport segment, prefixed by its pseudo-header addresses.
        let inner_at = bytes.len()
            - (f.ip.header_len()
                + f.payload.len()
                + match &f.l4 {
                    L4Repr::Udp { .. } => 8,
                    L4Repr::Tcp(t) => t.header_len(),
                    L4Repr::Other => 0,
                });
        let mut seg = [f.ip.src.octets(), f.ip.dst.octets()].concat();
        seg.extend_from_slice(&bytes[inner_at + f.ip.header_len()..]);
        match &f.l4 {
            L4Repr::Udp { .. } => write(&dir, "udp", name, &seg),
            L4Repr::Tcp(t) => {
                write(&dir, "tcp", name, &seg);
                write(
                    &dir,
                    "tcp",
                    &format!("{name}_options"),
                    &seg[8 + 20..8 + t.header_len()],
                );
            }
            L4Repr::Other => {}
        }
        if let Some(TunnelRepr {
            outer,
            encap: EncapRepr::Geneve { .. },
        }) = &f.tunnel
        {
            write(
                &dir,
                "geneve",
                name,
                &bytes[ip_at + outer.header_len() + 8..],
            );
        }
    }
    // SwitchV2P: option areas (with a foreign option in front) and control messages.
    let opts = V2pOptions { spill: Some((0x6440_0005, 0x0a00_0001)), hit: Some((48, 0x0b00_0030)), misdelivery: None };
    let mut area = Vec::new();
    opts.emit_into(&mut area);
    write(&dir, "switchv2p", "hit_and_spill", &area);
    let mut area = vec![0x01, 0x02, 0x05, 0x01, 0, 0, 0, 0];
    V2pOptions { misdelivery: Some((0x6440_0005, 0x0a00_0101)), ..Default::default() }.emit_into(&mut area);
    write(&dir, "switchv2p", "foreign_then_misdelivery", &area);
    write(&dir, "switchv2p", "learn_message", &ControlMessage::Learn { vip: 0x6440_0005, pip: 0x0a00_0001 }.emit());
    // OrbitCache: a 16-byte-key read reply with a stamped value, and a top-k report (the first
    // byte of a seed is the key length the target uses).
    {
        use innet_wire::orbitcache::{Header, Message, Op, Stamp, TopKReport};
        let mut value = vec![0u8; 64];
        Stamp { key_id: 42, version: 1 }.emit(&mut value);
        let m = Message { header: Header::new(Op::ReadReply, 7, 0x1234), key: b"000000000000002a", value: &value };
        let mut seed = vec![16u8];
        seed.extend(m.emit());
        write(&dir, "orbitcache", "read_reply", &seed);
        let mut seed = vec![0u8];
        seed.extend(TopKReport { partition: 3, entries: vec![(42, 1000), (7, 120)] }.emit());
        write(&dir, "orbitcache", "topk_report", &seed);
    }
    // SwitchVM: a header with in-packet code for four EUs, an epilog and a stack.
    {
        use innet_wire::switchvm::{DpfHeader, RawEpilog, RawEu, RawProlog, SEL_IMM, SEL_NONE};
        let h = DpfHeader {
            lanes: 4,
            gas: 3,
            init_pc: Some(0x8000),
            app_id: 1,
            prologs: vec![RawProlog { index: 0, next: 0x8000, sel: vec![1 << 5, 0, 0, 0, 0, 0, 0, 0] }],
            eus: (0..4)
                .map(|s| RawEu {
                    stage: s,
                    sel: vec![0, 0, 0, 0, 2 << 5, 0, 0, 0],
                    alu: vec![1, 0, 0, 0],
                    mem: vec![3, 0, 0, 0],
                    taken: 0x8000,
                    not_taken: 0x8000,
                    imm: vec![Some(1), None, None, None],
                    op2: SEL_IMM,
                    imm2: Some(9),
                    ..Default::default()
                })
                .collect(),
            epilogs: vec![RawEpilog { index: 0, push: vec![0, 4], steer: SEL_IMM, steer_imm: 1, next: SEL_NONE, next_imm: 0, drop_code: false }],
            stack: vec![7],
        };
        write(&dir, "switchvm", "counter_in_packet", &h.emit().unwrap());
        write(&dir, "switchvm_sandbox", "counter_in_packet", &h.emit().unwrap());
        // The attacker's stack names the victim's cells (0..128) and its own (256..272).
        let mut wild = h.clone();
        wild.stack = vec![5, 0, 127, 256, 300];
        wild.gas = 8;
        write(&dir, "switchvm_sandbox", "wild_addresses", &wild.emit().unwrap());
    }
    // The assembler: every shipped DPF source.
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/switchvm/dpfs")).expect("the shipped DPFs") {
        let path = entry.expect("a DPF file").path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        write(&dir, "switchvm_asm", &name, &std::fs::read(&path).expect("readable DPF"));
    }
    write(&dir, "pcap", "all_seeds", &pcap.into_inner());
    for (name, flows) in [
        ("l3_router", include_str!("../../crates/ofswitch/pipelines/l3_router.flows")),
        ("acl_regs", include_str!("../../crates/ofswitch/pipelines/acl_regs.flows")),
        ("l2_rewrite", include_str!("../../crates/ofswitch/pipelines/l2_rewrite.flows")),
    ] {
        write(&dir, "gigaflow_flows", name, flows.as_bytes());
    }
    appswitch_seeds(&dir);
    for (target, name, bytes) in regressions() {
        write(&dir, target, name, &bytes);
    }
    println!("seeds written under {}", dir.display());
}

/// CQL (mode byte, split byte, stream) and RESP (mode byte, split byte, stream) seeds.
fn appswitch_seeds(dir: &Path) {
    use innet_wire::cql::{self, opcode, QueryParams, Value};
    let p = QueryParams { consistency: 1, flags: cql::query_flags::VALUES, values: vec![Value::Bytes(b"k1".to_vec())], ..Default::default() };
    let q = cql::request_frame(4, 3, opcode::QUERY, &cql::encode_query(4, "SELECT v FROM ks.kv WHERE k = ?", &p));
    let e = cql::request_frame(4, 4, opcode::EXECUTE, &cql::encode_execute(4, b"0123456789abcdef", b"", &p));
    write(dir, "cql", "v4_query_execute", &[&[0u8, 20][..], &q, &e].concat());
    let rows = cql::Rows {
        metadata: cql::RowsMetadata {
            flags: cql::rows_flags::GLOBAL_TABLES_SPEC,
            columns_count: 1,
            global_table: Some(("ks".into(), "kv".into())),
            columns: vec![cql::ColumnSpec { table: None, name: "v".into(), typ: cql::CqlType::Native(cql::type_id::VARCHAR) }],
            ..Default::default()
        },
        rows: vec![vec![Some(b"value".to_vec())]],
    };
    let mut body = Vec::new();
    cql::encode_rows(&rows, &mut body);
    let r = cql::response_frame(5, 3, opcode::RESULT, &body);
    let ready = cql::response_frame(5, 0, opcode::READY, &[]);
    let mut segs = Vec::new();
    cql::encode_frames_v5(&[r.clone(), r].concat(), &mut segs);
    write(dir, "cql", "v5_ready_then_rows", &[&[1u8, 9][..], &ready, &segs].concat());
    let q5 = cql::request_frame(5, 3, opcode::QUERY, &cql::encode_query(5, "UPDATE kv SET v = 'x' WHERE k = 'a'", &p));
    let mut segs = Vec::new();
    cql::encode_frames_v5(&q5, &mut segs);
    write(dir, "cql", "v5_segmented_query", &[&[2u8, 7][..], &segs].concat());
    // Compressed CQL: an LZ4 and a Snappy v4 frame (mode 0 / 1), LZ4 v5 segments (mode 6).
    {
        use innet_wire::cql::compression::{compress_body, compress_segment, Compression};
        for (mode, c, name) in [(0u8, Compression::Lz4, "v4_lz4_frame"), (1, Compression::Snappy, "v4_snappy_frame")] {
            let mut f = cql::response_frame(4, 3, opcode::RESULT, &compress_body(c, &body));
            f[1] |= cql::frame_flags::COMPRESSION;
            write(dir, "cql_compression", name, &[&[mode, 11][..], &f].concat());
        }
        let frames = [cql::response_frame(5, 3, opcode::RESULT, &body), q5.clone()].concat();
        let mut segs = Vec::new();
        cql::encode_compressed_format_segment(&compress_segment(&frames), Some(frames.len()), true, &mut segs);
        cql::encode_compressed_format_segment(&frames, None, true, &mut segs);
        write(dir, "cql_compression", "v5_lz4_segments", &[&[6u8, 13][..], &segs].concat());
    }
    let mut c = Vec::new();
    innet_wire::resp::encode_command(&[b"SET", b"k", b"v"], &mut c);
    innet_wire::resp::encode_command(&[b"GET", b"k"], &mut c);
    c.extend_from_slice(b"DEL k\r\n");
    write(dir, "resp", "commands", &[&[0u8, 5][..], &c].concat());
    write(dir, "resp", "replies", &[&[1u8, 5][..], &b"+OK\r\n$1\r\nv\r\n:1\r\n$-1\r\n*2\r\n$1\r\na\r\n:2\r\n"[..]].concat());
    let reqs = b"set k 0 0 3\r\nabc\r\nget k j\r\ndelete k noreply\r\nincr n 2\r\nms m 2 T9\r\nhi\r\nmn\r\nstats\r\n";
    write(dir, "memcache", "requests", &[&[0u8, 9][..], &reqs[..]].concat());
    // Mode 1: shapes Line, Values, UntilEnd, Meta, None, ... in order.
    let reps = b"STORED\r\nVALUE k 0 3\r\nabc\r\nEND\r\nSTAT pid 1\r\nEND\r\nVA 2 f1\r\nhi\r\n";
    write(dir, "memcache", "replies", &[&[1u8, 12][..], &reps[..]].concat());
}
