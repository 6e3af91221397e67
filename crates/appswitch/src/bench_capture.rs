//! The captures the throughput benchmark replays (the paper's §5.8, "inputting packets from a
//! dump file"): one client connection through the switch, as the switch's two ports would see
//! it on a live connection. Client frames are in the client's sequence space, server frames in
//! the server's; a request the switch answers itself never reaches the server, so the server
//! sends nothing for it, and the client's next ACK acknowledges the reply the switch sent (its
//! bytes sit where the server's answer would have been in the client's view).
//!
//! Shapes (docs/appswitch.md, "Throughput captures"):
//! - CQL v4: handshake; PREPARE `SELECT v FROM ks.kv WHERE k = ?` and its answer; the
//!   driver's `SELECT * FROM system_schema.tables` and its answer (ks.kv, no default TTL: the
//!   switch caches a table only once it has seen its options); then
//!   - miss: `exchanges` × (EXECUTE for a new int key, the server's Rows answer, client ACK);
//!   - hit: a literal `UPDATE ... WHERE k = 7` and its Void answer (invalidates key 7, so every
//!     replay of the capture starts the same way), one EXECUTE for key 7 that misses and is
//!     learned, then `exchanges − 1` × (EXECUTE for key 7, client ACK of the switch's reply).
//! - Redis: handshake; then
//!   - miss: `exchanges` × (GET of a new key, the bulk answer, client ACK);
//!   - hit: `SET key:7 V` and `+OK` (write-through: the cache takes V), then `exchanges` ×
//!     (GET key:7, client ACK of the switch's reply).

use innet_wire::phv::codec::TcpFrame;
use innet_wire::tcp::{flags, TcpOption};
use innet_wire::Ipv4Addr;

use innet_wire::cql::{
    self, opcode, ColumnSpec, CqlType, Prepared, QueryParams, Rows, RowsMetadata, Value,
};
use innet_wire::resp;

/// Which capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    CqlHit,
    CqlMiss,
    RedisHit,
    RedisMiss,
}

impl Case {
    pub const ALL: [Case; 4] = [Case::CqlHit, Case::CqlMiss, Case::RedisHit, Case::RedisMiss];
    /// File stem: cql-hit, cql-miss, redis-hit, redis-miss.
    pub fn name(self) -> &'static str {
        match self {
            Case::CqlHit => "cql-hit",
            Case::CqlMiss => "cql-miss",
            Case::RedisHit => "redis-hit",
            Case::RedisMiss => "redis-miss",
        }
    }
    pub fn protocol(self) -> &'static str {
        match self {
            Case::CqlHit | Case::CqlMiss => "cql",
            Case::RedisHit | Case::RedisMiss => "redis",
        }
    }
    pub fn server_port(self) -> u16 {
        match self {
            Case::CqlHit | Case::CqlMiss => 9042,
            Case::RedisHit | Case::RedisMiss => 6379,
        }
    }
}

/// A request the switch is expected to answer: which frame carries it and the reply the client
/// then holds at client sequence number `reply_seq`.
#[derive(Debug, Clone)]
pub struct ExpectedHit {
    pub frame: usize,
    pub reply_seq: u32,
    pub reply: Vec<u8>,
}

/// A capture: frames in order (client frames enter port 0, server frames port 1) and the hits.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    pub frames: Vec<Vec<u8>>,
    pub hits: Vec<ExpectedHit>,
    /// Whether each frame comes from the client.
    pub from_client: Vec<bool>,
}

const CLIENT: ([u8; 4], u16) = ([10, 0, 0, 1], 40000);
const SERVER_IP: [u8; 4] = [10, 0, 0, 2];
const C_ISN: u32 = 1000;
const S_ISN: u32 = 5000;

/// One connection being written: the client→server stream's next sequence number in the
/// client's and the server's view, and the same for server→client.
struct Conn {
    cap: Capture,
    port: u16,
    c_cli: u32,
    c_srv: u32,
    s_cli: u32,
    s_srv: u32,
}

impl Conn {
    fn open(port: u16) -> Conn {
        let mut c = Conn {
            cap: Capture::default(),
            port,
            c_cli: C_ISN + 1,
            c_srv: C_ISN + 1,
            s_cli: S_ISN + 1,
            s_srv: S_ISN + 1,
        };
        c.push(true, C_ISN, 0, flags::SYN, &[]);
        c.push(false, S_ISN, C_ISN + 1, flags::SYN | flags::ACK, &[]);
        c.push(true, C_ISN + 1, S_ISN + 1, flags::ACK, &[]);
        c
    }
    fn push(&mut self, from_client: bool, seq: u32, ack: u32, fl: u8, payload: &[u8]) {
        let client = (Ipv4Addr::from(CLIENT.0), CLIENT.1);
        let server = (Ipv4Addr::from(SERVER_IP), self.port);
        let (src, dst) = if from_client {
            (client, server)
        } else {
            (server, client)
        };
        let f = TcpFrame::new(src, dst, seq, ack, fl)
            .options(vec![
                TcpOption::Nop,
                TcpOption::Nop,
                TcpOption::Timestamps {
                    value: seq,
                    echo: ack,
                },
            ])
            .payload(payload)
            .emit();
        self.cap.frames.push(f);
        self.cap.from_client.push(from_client);
    }
    /// A request the server answers: request, answer, the client's ACK of it.
    fn forwarded(&mut self, req: &[u8], ans: &[u8]) {
        self.push(true, self.c_cli, self.s_cli, flags::ACK | flags::PSH, req);
        self.c_cli = self.c_cli.wrapping_add(req.len() as u32);
        self.c_srv = self.c_srv.wrapping_add(req.len() as u32);
        self.push(false, self.s_srv, self.c_srv, flags::ACK | flags::PSH, ans);
        self.s_srv = self.s_srv.wrapping_add(ans.len() as u32);
        self.s_cli = self.s_cli.wrapping_add(ans.len() as u32);
        self.push(true, self.c_cli, self.s_cli, flags::ACK, &[]);
    }
    /// A request the switch answers with `reply`: the request, then the client's ACK of the
    /// reply (the server sees neither the request nor an answer).
    fn answered(&mut self, req: &[u8], reply: &[u8]) {
        self.push(true, self.c_cli, self.s_cli, flags::ACK | flags::PSH, req);
        self.cap.hits.push(ExpectedHit {
            frame: self.cap.frames.len() - 1,
            reply_seq: self.s_cli,
            reply: reply.to_vec(),
        });
        self.c_cli = self.c_cli.wrapping_add(req.len() as u32);
        self.s_cli = self.s_cli.wrapping_add(reply.len() as u32);
        self.push(true, self.c_cli, self.s_cli, flags::ACK, &[]);
    }
}

/// Build the capture of `case` with `exchanges` reads (see the module doc).
pub fn capture(case: Case, exchanges: u32) -> Capture {
    match case {
        Case::CqlHit => cql_capture(true, exchanges),
        Case::CqlMiss => cql_capture(false, exchanges),
        Case::RedisHit => redis_capture(true, exchanges),
        Case::RedisMiss => redis_capture(false, exchanges),
    }
}

/// The capture as pcap bytes (one frame per millisecond).
pub fn pcap_bytes(cap: &Capture) -> Vec<u8> {
    innet_wire::pcap::file_bytes(cap.frames.iter().map(Vec::as_slice), 1_000_000)
}

fn cql_capture(hit: bool, exchanges: u32) -> Capture {
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
    c.forwarded(&prep, &cql::response_frame(4, 1, opcode::RESULT, &body));
    // The driver's read of the tables' options (at connect): ks.kv has no default TTL.
    let q = "SELECT * FROM system_schema.tables";
    let params = QueryParams {
        consistency: 1,
        ..Default::default()
    };
    let req = cql::request_frame(4, 1, opcode::QUERY, &cql::encode_query(4, q, &params));
    let mut body = Vec::new();
    cql::encode_rows(
        &crate::cql_schema::tables_rows(&[("ks", "kv", 0)]),
        &mut body,
    );
    c.forwarded(&req, &cql::response_frame(4, 1, opcode::RESULT, &body));
    let value = |key: i32| format!("value-of-{key}-abcdefghij");
    if hit {
        let update = format!("UPDATE ks.kv SET v = '{}' WHERE k = 7", value(7));
        let params = QueryParams {
            consistency: 1,
            ..Default::default()
        };
        let req = cql::request_frame(4, 1, opcode::QUERY, &cql::encode_query(4, &update, &params));
        let void = cql::response_frame(4, 1, opcode::RESULT, &1i32.to_be_bytes());
        c.forwarded(&req, &void);
    }
    for i in 0..exchanges {
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
            rows: vec![vec![Some(value(key).into_bytes())]],
        };
        let mut body = Vec::new();
        cql::encode_rows(&rows, &mut body);
        let ans = cql::response_frame(4, stream, opcode::RESULT, &body);
        if hit && i > 0 {
            c.answered(&req, &ans);
        } else {
            c.forwarded(&req, &ans);
        }
    }
    c.cap
}

fn redis_capture(hit: bool, exchanges: u32) -> Capture {
    let mut c = Conn::open(6379);
    let value = |key: &str| format!("value-of-{key}-abcdefghij");
    if hit {
        let mut req = Vec::new();
        resp::encode_command(&[b"SET", b"key:7", value("key:7").as_bytes()], &mut req);
        c.forwarded(&req, b"+OK\r\n");
    }
    for i in 0..exchanges {
        let key = if hit {
            "key:7".to_string()
        } else {
            format!("key:{i}")
        };
        let mut req = Vec::new();
        resp::encode_command(&[b"GET", key.as_bytes()], &mut req);
        let mut ans = Vec::new();
        resp::encode_bulk(Some(value(&key).as_bytes()), &mut ans);
        if hit {
            c.answered(&req, &ans);
        } else {
            c.forwarded(&req, &ans);
        }
    }
    c.cap
}
