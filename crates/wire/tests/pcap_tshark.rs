//! An outside decoder agrees with our bytes: frames built with innet-wire (UDP, a TCP SYN with
//! options, Geneve with options, IP-in-IP) go into a pcap file and tshark must read back the
//! fields we wrote, inner and outer, with every IP/UDP/TCP checksum verified good — and a
//! deliberately corrupted copy verified bad, so "good" is not just tshark's default. tshark is
//! a required tool (scripts/setup.sh installs it); its absence fails the test.

use std::net::Ipv4Addr;
use std::process::Command;

use innet_wire::ethernet::{EthernetRepr, ETHERTYPE_IPV4};
use innet_wire::frame::{EncapRepr, FrameRepr, L4Repr, TunnelRepr};
use innet_wire::geneve::{GeneveOption, GeneveRepr, PROTOCOL_ETHERNET};
use innet_wire::ipv4::{Ecn, Ipv4Repr};
use innet_wire::pcap::{self, PcapWriter};
use innet_wire::tcp::{flags, TcpOption, TcpRepr};

fn ip(src: [u8; 4], dst: [u8; 4]) -> Ipv4Repr {
    Ipv4Repr {
        src: Ipv4Addr::from(src),
        dst: Ipv4Addr::from(dst),
        protocol: 0,
        ttl: 63,
        dscp: 0,
        ecn: 0,
        ident: 0x4242,
        dont_fragment: true,
        options: vec![],
        payload_len: 0,
    }
}

fn eth(last: u8) -> EthernetRepr {
    EthernetRepr {
        dst: [2, 0, 0, 0, 0, last],
        src: [2, 0, 0, 0, 0, 0xEE],
        vlan_tci: None,
        ethertype: ETHERTYPE_IPV4,
    }
}

fn frames() -> Vec<FrameRepr> {
    let udp = FrameRepr {
        eth: eth(1),
        tunnel: None,
        ip: Ipv4Repr {
            dscp: 10,
            ecn: Ecn::Ect0.bits(),
            ..ip([10, 0, 0, 1], [10, 0, 1, 2])
        },
        l4: L4Repr::Udp {
            src_port: 5000,
            dst_port: 667,
        },
        payload: b"hello tshark".to_vec(),
    };
    let syn = FrameRepr {
        eth: eth(2),
        tunnel: None,
        ip: ip([192, 168, 0, 1], [192, 168, 0, 2]),
        l4: L4Repr::Tcp(TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq: 0x0102_0304,
            ack: 0,
            flags: flags::SYN | flags::ECE | flags::CWR,
            window: 64240,
            urgent: 0,
            options: vec![
                TcpOption::Mss(1460),
                TcpOption::SackPermitted,
                TcpOption::Timestamps {
                    value: 123_456,
                    echo: 0,
                },
                TcpOption::WindowScale(7),
            ],
            payload_len: 0,
        }),
        payload: vec![],
    };
    let geneve = FrameRepr {
        eth: eth(3),
        tunnel: Some(TunnelRepr {
            outer: ip([10, 0, 0, 1], [10, 0, 0, 2]),
            encap: EncapRepr::Geneve {
                src_port: 49_152,
                geneve: GeneveRepr {
                    oam: false,
                    critical: true,
                    protocol: PROTOCOL_ETHERNET,
                    vni: 0x12_3456,
                    options: vec![
                        GeneveOption {
                            class: 0x0103,
                            kind: 0x81,
                            data: vec![0xde, 0xad, 0xbe, 0xef],
                        },
                        GeneveOption {
                            class: 0xFFF0,
                            kind: 0x02,
                            data: vec![1, 2, 3, 4, 5, 6, 7, 8],
                        },
                    ],
                },
                inner_eth: eth(4),
            },
        }),
        ip: Ipv4Repr {
            ttl: 17,
            ident: 0x0707,
            ..ip([172, 16, 0, 1], [172, 16, 0, 2])
        },
        l4: L4Repr::Tcp(TcpRepr {
            src_port: 61111,
            dst_port: 62222,
            seq: 0xDEAD_BEEF,
            ack: 0x0BAD_F00D,
            flags: flags::ACK | flags::PSH,
            window: 4321,
            urgent: 0,
            options: vec![TcpOption::Timestamps {
                value: 77,
                echo: 66,
            }],
            payload_len: 0,
        }),
        payload: b"inner".to_vec(),
    };
    let ipip = FrameRepr {
        eth: eth(5),
        tunnel: Some(TunnelRepr {
            outer: ip([10, 0, 0, 1], [10, 0, 0, 3]),
            encap: EncapRepr::IpInIp,
        }),
        ip: ip([172, 16, 1, 1], [172, 16, 1, 2]),
        l4: L4Repr::Tcp(TcpRepr {
            src_port: 443,
            dst_port: 50_000,
            seq: 99,
            ack: 7,
            flags: flags::ACK | flags::PSH,
            window: 1000,
            urgent: 0,
            options: vec![TcpOption::Sack(vec![(1000, 2000)])],
            payload_len: 0,
        }),
        payload: b"payload bytes".to_vec(),
    };
    vec![udp, syn, geneve, ipip]
}

/// tshark's fields for every frame: one line per frame, `|`-separated, repeated fields
/// (outer and inner headers) joined with commas.
fn tshark_fields(file: &std::path::Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file);
    for pref in [
        "ip.check_checksum:TRUE",
        "udp.check_checksum:TRUE",
        "tcp.check_checksum:TRUE",
        "tcp.relative_sequence_numbers:FALSE",
    ] {
        cmd.args(["-o", pref]);
    }
    cmd.args([
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => panic!(
            "tshark could not be run ({e}); it is a required tool for this test: run scripts/setup.sh \
             (or `apt-get install tshark`) first"
        ),
    };
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("tshark prints UTF-8")
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

#[test]
fn tshark_decodes_what_we_wrote() {
    let frames = frames();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wire_tshark_{}.pcap", std::process::id()));
    let mut w = PcapWriter::new(std::fs::File::create(&path).expect("create pcap"), 65_535)
        .expect("pcap header");
    let mut written = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let bytes = f.emit().expect("frame emits");
        // The first frame claims 4 more bytes on the wire (an FCS we do not capture).
        let orig = bytes.len() as u32 + if i == 0 { 4 } else { 0 };
        w.write(
            1_700_000_000_000_000_000 + i as u64 * 1_000_000_123,
            &bytes,
            orig,
        )
        .expect("pcap record");
        written.push(bytes);
    }
    // Frame 5: frame 1 with its TTL and last payload byte changed behind the checksums' back.
    let mut bad = written[0].clone();
    bad[14 + 8] ^= 0x01;
    *bad.last_mut().expect("frame 1 has a payload") ^= 0x20;
    w.write(1_700_000_010_000_000_000, &bad, bad.len() as u32)
        .expect("pcap record");
    written.push(bad);
    w.flush().expect("flush");
    drop(w);

    // Our own reader sees the same records.
    let (link, recs) = pcap::parse(&std::fs::read(&path).expect("read pcap")).expect("pcap parses");
    assert_eq!(link, pcap::LINKTYPE_ETHERNET);
    assert_eq!(
        recs.iter().map(|r| r.data.clone()).collect::<Vec<_>>(),
        written
    );

    let fields = [
        "frame.number",
        "frame.time_epoch",
        "eth.src",
        "eth.dst",
        "ip.ttl",
        "ip.id",
        "ip.len",
        "ip.flags.df",
        "tcp.seq_raw",
        "tcp.ack_raw",
        "tcp.window_size_value",
        "tcp.options.timestamp.tsecr",
        "tcp.len",
        "geneve.option.unknown.data",
        "frame.len",
        "frame.cap_len",
        "ip.src",
        "ip.dst",
        "ip.proto",
        "ip.dsfield.dscp",
        "ip.dsfield.ecn",
        "ip.checksum.status",
        "udp.srcport",
        "udp.dstport",
        "udp.checksum.status",
        "tcp.srcport",
        "tcp.dstport",
        "tcp.seq",
        "tcp.ack",
        "tcp.flags",
        "tcp.checksum.status",
        "tcp.options.mss_val",
        "tcp.options.wscale.shift",
        "tcp.options.sack_perm",
        "tcp.options.timestamp.tsval",
        "tcp.options.sack_le",
        "tcp.options.sack_re",
        "geneve.vni",
        "geneve.flags.critical",
        "geneve.proto_type",
        "geneve.option.class",
        "geneve.option.type",
        "geneve.option.length",
        "data.data",
        "_ws.expert",
    ];
    let rows = tshark_fields(&path, &fields);
    assert_eq!(rows.len(), 5, "tshark saw {} frames: {rows:?}", rows.len());
    let get = |row: usize, name: &str| -> &str {
        let col = fields
            .iter()
            .position(|f| *f == name)
            .expect("field requested");
        rows[row]
            .get(col)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("frame {row} lacks column {name}: {:?}", rows[row]))
    };
    // tshark's checksum status: 1 = good, 0 = bad, 2 = unverified.
    let good = |row: usize, name: &str| {
        let v = get(row, name);
        assert!(
            !v.is_empty() && v.split(',').all(|s| s == "1"),
            "frame {row}: {name} = {v:?} (want all 1 = good)"
        );
    };

    for (i, _) in rows.iter().enumerate() {
        assert_eq!(get(i, "frame.number"), (i + 1).to_string());
    }
    // 1: plain UDP, with DSCP/ECN, time with nanoseconds, original length beyond the capture.
    assert_eq!(get(0, "frame.time_epoch"), "1700000000.000000000");
    assert_eq!(
        (get(0, "eth.src"), get(0, "eth.dst")),
        ("02:00:00:00:00:ee", "02:00:00:00:00:01")
    );
    assert_eq!(
        (
            get(0, "ip.ttl"),
            get(0, "ip.id"),
            get(0, "ip.len"),
            get(0, "ip.flags.df")
        ),
        ("63", "0x4242", "40", "1")
    );
    assert_eq!((get(0, "frame.len"), get(0, "frame.cap_len")), ("58", "54"));
    assert_eq!(
        (get(0, "ip.src"), get(0, "ip.dst"), get(0, "ip.proto")),
        ("10.0.0.1", "10.0.1.2", "17")
    );
    assert_eq!(
        (get(0, "ip.dsfield.dscp"), get(0, "ip.dsfield.ecn")),
        ("10", "2")
    );
    assert_eq!(
        (get(0, "udp.srcport"), get(0, "udp.dstport")),
        ("5000", "667")
    );
    assert_eq!(get(0, "data.data"), "68656c6c6f2074736861726b");
    good(0, "ip.checksum.status");
    good(0, "udp.checksum.status");

    // 2: TCP SYN with the options Linux sends, absolute sequence number.
    assert_eq!(get(1, "frame.time_epoch"), "1700000001.000000123");
    assert_eq!(
        (get(1, "tcp.srcport"), get(1, "tcp.dstport")),
        ("40000", "80")
    );
    assert_eq!(get(1, "tcp.seq"), "16909060");
    assert_eq!(get(1, "tcp.seq_raw"), "16909060");
    assert_eq!(
        (get(1, "tcp.window_size_value"), get(1, "tcp.len")),
        ("64240", "0")
    );
    assert_eq!(get(1, "tcp.flags"), "0x00c2");
    assert_eq!(get(1, "tcp.options.mss_val"), "1460");
    assert_eq!(get(1, "tcp.options.wscale.shift"), "7");
    assert!(
        !get(1, "tcp.options.sack_perm").is_empty(),
        "SACK permitted not seen"
    );
    assert_eq!(get(1, "tcp.options.timestamp.tsval"), "123456");
    good(1, "ip.checksum.status");
    good(1, "tcp.checksum.status");

    // 3: Geneve with two options, then inner Ethernet/IPv4/TCP.
    assert_eq!(get(2, "eth.src"), "02:00:00:00:00:ee,02:00:00:00:00:ee");
    assert_eq!(get(2, "eth.dst"), "02:00:00:00:00:03,02:00:00:00:00:04");
    assert_eq!(get(2, "ip.src"), "10.0.0.1,172.16.0.1");
    assert_eq!(get(2, "ip.dst"), "10.0.0.2,172.16.0.2");
    assert_eq!(get(2, "ip.proto"), "17,6");
    assert_eq!(
        (get(2, "ip.ttl"), get(2, "ip.id")),
        ("63,17", "0x4242,0x0707")
    );
    // Outer: 20 IP + 8 UDP + 8 Geneve + 20 options + 14 Ethernet + inner 20 IP + 32 TCP + 5.
    assert_eq!(get(2, "ip.len"), "127,57");
    assert_eq!(get(2, "udp.srcport"), "49152");
    assert_eq!(get(2, "udp.dstport"), "6081");
    assert_eq!(
        (get(2, "tcp.srcport"), get(2, "tcp.dstport")),
        ("61111", "62222")
    );
    assert_eq!(
        (get(2, "tcp.seq_raw"), get(2, "tcp.ack_raw")),
        ("3735928559", "195948557")
    );
    assert_eq!(get(2, "tcp.flags"), "0x0018");
    assert_eq!(
        (get(2, "tcp.window_size_value"), get(2, "tcp.len")),
        ("4321", "5")
    );
    assert_eq!(
        (
            get(2, "tcp.options.timestamp.tsval"),
            get(2, "tcp.options.timestamp.tsecr")
        ),
        ("77", "66")
    );
    good(2, "tcp.checksum.status");
    assert_eq!(
        get(2, "geneve.option.unknown.data"),
        "deadbeef,0102030405060708"
    );
    assert_eq!(get(2, "geneve.vni"), "0x123456");
    assert_eq!(get(2, "geneve.flags.critical"), "1");
    assert_eq!(get(2, "geneve.proto_type"), "0x6558");
    assert_eq!(get(2, "geneve.option.class"), "0x0103,0xfff0");
    assert_eq!(get(2, "geneve.option.type"), "0x81,0x02");
    assert_eq!(
        get(2, "geneve.option.length"),
        "20,8,12",
        "the header's option length, then each option's"
    );
    assert_eq!(get(2, "data.data"), "696e6e6572");
    good(2, "ip.checksum.status");
    good(2, "udp.checksum.status");

    // 4: IP-in-IP around TCP with a SACK block.
    assert_eq!(get(3, "ip.src"), "10.0.0.1,172.16.1.1");
    assert_eq!(get(3, "ip.dst"), "10.0.0.3,172.16.1.2");
    assert_eq!(get(3, "ip.proto"), "4,6");
    assert_eq!((get(3, "tcp.seq"), get(3, "tcp.ack")), ("99", "7"));
    assert_eq!((get(3, "tcp.seq_raw"), get(3, "tcp.ack_raw")), ("99", "7"));
    assert_eq!(
        get(3, "ip.len"),
        "85,65",
        "outer = 20 + inner (20 + 32 TCP + 13)"
    );
    assert_eq!(get(3, "tcp.len"), "13");
    assert_eq!(get(3, "data.data"), "7061796c6f6164206279746573");
    assert_eq!(
        (get(3, "tcp.options.sack_le"), get(3, "tcp.options.sack_re")),
        ("1000", "2000")
    );
    good(3, "ip.checksum.status");
    good(3, "tcp.checksum.status");

    // 5: the corrupted copy: tshark must call both checksums bad (0), which shows it really
    // checked the others.
    assert_eq!(get(4, "ip.ttl"), "62");
    assert_eq!(get(4, "ip.checksum.status"), "0");
    assert_eq!(get(4, "udp.checksum.status"), "0");

    // No frame may carry an expert warning about malformed fields.
    for (i, r) in rows.iter().enumerate() {
        let expert = get(i, "_ws.expert");
        assert!(
            !expert.to_lowercase().contains("malformed"),
            "frame {i}: {expert} in {r:?}"
        );
    }
    std::fs::remove_file(&path).ok();
}
