//! Writes the captures the application switch's throughput benchmark replays (the paper's §5.8:
//! "inputting packets from a dump file"): one CQL v4 connection (PREPARE, then 10,000
//! request/answer/ACK exchanges) whose reads all hit a warm cache (one key) or all miss (every
//! key new, more keys than the cache holds), and the same for Redis.
//!
//!   cargo run --release -p innet-appswitch --example bench_captures -- DIR
//!   innet bench switch --pcap DIR/cql-hit.pcap --program appswitch --set protocol=cql --set server_port=9042

use std::path::PathBuf;

use innet_appswitch::cql::{
    self, opcode, ColumnSpec, CqlType, Prepared, QueryParams, Rows, RowsMetadata, Value,
};
use innet_appswitch::resp;
use innet_wire::ethernet::{EthernetRepr, ETHERTYPE_IPV4};
use innet_wire::frame::{FrameRepr, L4Repr};
use innet_wire::ipv4::{Ipv4Repr, PROTO_TCP};
use innet_wire::pcap::PcapWriter;
use innet_wire::tcp::{flags, TcpOption, TcpRepr};
use innet_wire::Ipv4Addr;

const EXCHANGES: u32 = 10_000;

struct Conn {
    frames: Vec<Vec<u8>>,
    c: u32,
    s: u32,
    port: u16,
}

impl Conn {
    fn frame(&self, to_server: bool, seq: u32, ack: u32, fl: u8, payload: &[u8]) -> Vec<u8> {
        let (src, dst, sp, dp) = if to_server {
            ([10, 0, 0, 1], [10, 0, 0, 2], 40000, self.port)
        } else {
            ([10, 0, 0, 2], [10, 0, 0, 1], self.port, 40000)
        };
        FrameRepr {
            eth: EthernetRepr {
                dst: [2, 0, 0, 0, 0, 2],
                src: [2, 0, 0, 0, 0, 1],
                vlan_tci: None,
                ethertype: ETHERTYPE_IPV4,
            },
            tunnel: None,
            ip: Ipv4Repr {
                src: Ipv4Addr::from(src),
                dst: Ipv4Addr::from(dst),
                protocol: PROTO_TCP,
                ttl: 64,
                dscp: 0,
                ecn: 0,
                ident: 1,
                dont_fragment: true,
                options: vec![],
                payload_len: 0,
            },
            l4: L4Repr::Tcp(TcpRepr {
                src_port: sp,
                dst_port: dp,
                seq,
                ack,
                flags: fl,
                window: 500,
                urgent: 0,
                options: vec![
                    TcpOption::Nop,
                    TcpOption::Nop,
                    TcpOption::Timestamps {
                        value: seq,
                        echo: ack,
                    },
                ],
                payload_len: payload.len(),
            }),
            payload: payload.to_vec(),
        }
        .emit()
        .expect("bench frame emits")
    }
    fn open(port: u16) -> Conn {
        let mut c = Conn {
            frames: Vec::new(),
            c: 1001,
            s: 5001,
            port,
        };
        let syn = c.frame(true, 1000, 0, flags::SYN, &[]);
        let synack = c.frame(false, 5000, 1001, flags::SYN | flags::ACK, &[]);
        let ack = c.frame(true, 1001, 5001, flags::ACK, &[]);
        c.frames.extend([syn, synack, ack]);
        c
    }
    /// Request, answer, client ACK.
    fn exchange(&mut self, req: &[u8], ans: &[u8]) {
        let f = self.frame(true, self.c, self.s, flags::ACK | flags::PSH, req);
        self.frames.push(f);
        self.c = self.c.wrapping_add(req.len() as u32);
        let f = self.frame(false, self.s, self.c, flags::ACK | flags::PSH, ans);
        self.frames.push(f);
        self.s = self.s.wrapping_add(ans.len() as u32);
        let f = self.frame(true, self.c, self.s, flags::ACK, &[]);
        self.frames.push(f);
    }
    fn write(&self, path: &PathBuf) {
        let mut w = PcapWriter::new(Vec::new(), 65535).expect("vec");
        for (i, f) in self.frames.iter().enumerate() {
            w.write(i as u64 * 1000, f, f.len() as u32).expect("vec");
        }
        std::fs::write(path, w.into_inner())
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!("{}: {} frames", path.display(), self.frames.len());
    }
}

fn cql_capture(hit: bool) -> Conn {
    let mut c = Conn::open(9042);
    let q = "SELECT v FROM ks.kv WHERE k = ?";
    let prep = cql::request_frame(
        4,
        1,
        opcode::PREPARE,
        &[&(q.len() as i32).to_be_bytes()[..], q.as_bytes()].concat(),
    );
    let p = Prepared {
        id: b"0123456789abcdef".to_vec(),
        result_metadata_id: None,
        bind_flags: cql::rows_flags::GLOBAL_TABLES_SPEC,
        pk_indexes: vec![0],
        bind_global_table: Some(("ks".into(), "kv".into())),
        bind_columns: vec![ColumnSpec {
            table: None,
            name: "k".into(),
            typ: CqlType::Native(cql::type_id::INT),
        }],
        result: RowsMetadata {
            flags: cql::rows_flags::NO_METADATA,
            columns_count: 1,
            ..Default::default()
        },
    };
    let mut body = Vec::new();
    cql::encode_prepared(4, &p, &mut body);
    c.exchange(&prep, &cql::response_frame(4, 1, opcode::RESULT, &body));
    for i in 0..EXCHANGES {
        let key = if hit { 7 } else { i as i32 };
        let params = QueryParams {
            consistency: 1,
            flags: cql::query_flags::VALUES | cql::query_flags::SKIP_METADATA,
            values: vec![Value::Bytes(key.to_be_bytes().to_vec())],
            ..Default::default()
        };
        let stream = (i % 1000) as i16 + 2;
        let req = cql::request_frame(
            4,
            stream,
            opcode::EXECUTE,
            &cql::encode_execute(4, &p.id, &[], &params),
        );
        let rows = Rows {
            metadata: RowsMetadata {
                flags: cql::rows_flags::NO_METADATA,
                columns_count: 1,
                ..Default::default()
            },
            rows: vec![vec![Some(
                format!("value-of-{key}-abcdefghij").into_bytes(),
            )]],
        };
        let mut body = Vec::new();
        cql::encode_rows(&rows, &mut body);
        c.exchange(&req, &cql::response_frame(4, stream, opcode::RESULT, &body));
    }
    c
}

fn redis_capture(hit: bool) -> Conn {
    let mut c = Conn::open(6379);
    for i in 0..EXCHANGES {
        let key = if hit {
            "key:7".to_string()
        } else {
            format!("key:{i}")
        };
        let mut req = Vec::new();
        resp::encode_command(&[b"GET", key.as_bytes()], &mut req);
        let mut ans = Vec::new();
        resp::encode_bulk(
            Some(format!("value-of-{key}-abcdefghij").as_bytes()),
            &mut ans,
        );
        c.exchange(&req, &ans);
    }
    c
}

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/tmp".into()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    cql_capture(true).write(&dir.join("cql-hit.pcap"));
    cql_capture(false).write(&dir.join("cql-miss.pcap"));
    redis_capture(true).write(&dir.join("redis-hit.pcap"));
    redis_capture(false).write(&dir.join("redis-miss.pcap"));
}
