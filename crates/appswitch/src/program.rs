//! The application switch as a data-plane [`Program`] on real packets: tracks each TCP
//! connection to the server port, parses the key-value protocol in both directions (CQL, RESP
//! or memcached's text protocol), answers reads the cache holds (migration), forwards the rest with rewritten sequence
//! numbers (return migration), and learns values from the server's answers.

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

/// The program's maps are looked up on every packet: a fast (non-DoS-resistant but seeded)
/// hasher instead of SipHash.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use innet_switch::program::TcpReply;
use innet_wire::phv::edit::{set_payload, set_tcp_options};
use innet_switch::{Ctx, Metadata, Program, Verdict};
use innet_wire::phv::{Packet, TcpFlags, L4};

use crate::cache::{Cache, ReadToken, WriteToken};
use crate::compression::{self, Compression};
use crate::cql::{self, opcode, FrameReader, Framing, Request, ResultMsg};
use crate::cql_key::{self, KeyType};
use crate::cql_schema::{schema_read, PartitionKey, Schema, SchemaRead};
use crate::cql_statement::{parse_statement, Statement, TableRef, Term};
use crate::memcache::{self, McReader, ReplyShape};
use crate::migration::Migration;
use crate::resp::{self, ReplyRef, RespReader};

/// Which protocol the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Cql,
    Redis,
    Memcached,
}

/// Knobs (`--set protocol=cql|redis|memcached server_port=N cache_entries=N`).
#[derive(Debug, Clone)]
pub struct Config {
    pub protocol: Protocol,
    pub server_port: u16,
    pub cache_entries: usize,
}

/// The program's counters.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counters {
    /// Requests answered by the switch.
    pub hits: u64,
    /// Cacheable reads forwarded to the server.
    pub misses: u64,
    /// Writes forwarded (write-through).
    pub writes: u64,
    /// Answers learned into the cache.
    pub learned: u64,
    /// Packets not on a tracked connection (other ports, non-TCP, RSTs of connections the
    /// switch did not see open).
    pub bypassed: u64,
    /// Request bytes answered by the switch (α) and reply bytes it sent (β), over all connections.
    pub migrated_request_bytes: u64,
    pub migrated_reply_bytes: u64,
    /// Retransmitted requests answered again from the held reply.
    pub replays: u64,
    /// Parts of replies resent because the client's ACKs showed it missed them.
    pub reply_retransmits: u64,
    pub acks_suppressed: u64,
    pub out_of_order_dropped: u64,
    /// Connections whose bytes did not parse (then passed through, mapped, never answered).
    pub protocol_errors: u64,
    pub connections: u64,
    /// Segments of connections the switch did not see open, answered by closing the
    /// connection (an RST to the sender, a probe to the other side).
    pub unseen_resets: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ConnKey {
    client_ip: u32,
    client_port: u16,
    server_ip: u32,
}

enum Pending {
    Read {
        item: Vec<u8>,
        shape: Vec<u8>,
        token: ReadToken,
    },
    /// Writes to known keys; `update` = (shape, reply) the cache takes if the write succeeds.
    Write {
        items: Vec<(Vec<u8>, WriteToken)>,
        update: Option<(Vec<u8>, Vec<u8>)>,
    },
    WriteAll,
    Prepare {
        statement: Statement,
        keyspace: Option<String>,
    },
    /// A read of `system_schema.columns`, `.tables` or `.views` (drivers read them at
    /// connect): its rows teach the schema (`cql_schema`). `continued`: a later page (its first
    /// table may have started on the page before).
    SchemaRead {
        kind: SchemaRead,
        continued: bool,
    },
    Other,
}

/// What a prepared statement does, learned from PREPARE + RESULT Prepared.
#[derive(Debug, Clone)]
struct PreparedInfo {
    statement: Statement,
    table: Option<(String, String)>,
    /// Bind index of the single partition-key column, when there is one.
    pk: Option<usize>,
    /// The SELECT's "is this column the table's cacheable partition key, of which type" check
    /// and the schema generation it was made at (re-made when the schema knowledge changed).
    pk_check: Cell<(u64, Option<KeyType>)>,
}

struct CqlConn {
    c2s: FrameReader,
    s2c: FrameReader,
    pending: HashMap<i16, Pending>,
    keyspace: Option<String>,
}

struct RedisConn {
    c2s: RespReader,
    s2c: RespReader,
    pending: VecDeque<Pending>,
    st: RedisState,
}

/// What earlier commands on a Redis connection changed about the next ones.
#[derive(Default)]
struct RedisState {
    in_multi: bool,
    uncacheable: bool,
    /// RESP3 after `HELLO 3` (null replies differ: `_` instead of `$-1`).
    resp3: bool,
}

/// A memcached request waiting for its reply, and the `noreply` writes sent before it (the
/// server handles a connection's requests in order, so this reply shows they were applied).
struct McPending {
    shape: ReplyShape,
    pending: Pending,
    noreply_before: Vec<Pending>,
}

struct McConn {
    c2s: McReader,
    s2c: McReader,
    pending: VecDeque<McPending>,
    /// `noreply` writes not yet followed by a request that has a reply.
    noreply: Vec<Pending>,
}

enum Proto {
    Cql(CqlConn),
    Redis(RedisConn),
    Mc(McConn),
}

struct Conn {
    mig: Migration,
    proto: Proto,
    /// The bytes stopped parsing: the connection passes through (mapped, never answered).
    broken: bool,
    /// A broken connection may carry writes the switch cannot see: it holds a write of unknown
    /// keys open (the cache is empty and nothing fills) until it ends.
    holds_unknown_write: bool,
    uses_timestamps: bool,
    closing_acks: u8,
}

/// One parsed request and what the switch would do with it.
enum Classified {
    /// A cacheable read: its cache coordinates and, if the cache has it, the reply bytes.
    Read {
        item: Vec<u8>,
        shape: Vec<u8>,
        /// The cached reply: a range of `AppSwitch::hit_bytes` (this packet's hits).
        hit: Option<std::ops::Range<usize>>,
    },
    Pending(Pending),
}

/// The application switch program.
pub struct AppSwitch {
    pub config: Config,
    pub cache: Cache,
    pub counters: Counters,
    conns: HashMap<ConnKey, Conn>,
    prepared: HashMap<Vec<u8>, Rc<PreparedInfo>>,
    /// What is known of the CQL schema (partition keys and their types, table options,
    /// views, tables with TTL'd cells).
    schema: Schema,
    /// Fig. 19's baseline: read QUERY SELECTs at fixed offsets instead of lexing them.
    pub fixed_layout: Option<crate::fixed_fields::FixedLayout>,
    /// Keys (cache items) given an expiry time through the switch: never cached, since the
    /// server drops them on its own. `volatile_all`: a delayed `flush_all` was seen.
    volatile: std::collections::HashSet<Vec<u8>, foldhash::fast::RandomState>,
    volatile_all: bool,
    /// Reused per-packet list of memcached requests' reply shapes (and `noreply`).
    mc_shapes: Vec<(ReplyShape, bool)>,
    /// Reused per-packet lists of parsed requests and CQL frames.
    items_scratch: Vec<(Option<i16>, Classified)>,
    frames_scratch: Vec<cql::Frame>,
    /// This packet's cached replies, back to back (`Classified::Read::hit` ranges).
    hit_bytes: Vec<u8>,
    /// Emptied cache-key and shape buffers (and CQL frame bodies) for reuse: no allocation per
    /// request once warm.
    spare_bufs: Vec<Vec<u8>>,
}

impl AppSwitch {
    pub fn new(config: Config) -> Self {
        AppSwitch {
            cache: Cache::new(config.cache_entries),
            config,
            counters: Counters::default(),
            conns: HashMap::default(),
            prepared: HashMap::default(),
            schema: Schema::default(),
            fixed_layout: None,
            volatile: Default::default(),
            volatile_all: false,
            mc_shapes: Vec::new(),
            items_scratch: Vec::new(),
            frames_scratch: Vec::new(),
            hit_bytes: Vec::new(),
            spare_bufs: Vec::new(),
        }
    }
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }
}

/// Replace SACK-permitted (kind 4) by two NOPs: the switch does not translate SACK blocks.
pub fn strip_sack_permitted(opts: &[u8]) -> Vec<u8> {
    let mut o = opts.to_vec();
    let mut i = 0;
    while i < o.len() {
        match o[i] {
            0 => break,
            1 => i += 1,
            k => {
                let Some(&len) = o.get(i + 1) else { break };
                let len = len as usize;
                if len < 2 || i + len > o.len() {
                    break;
                }
                if k == 4 && len == 2 {
                    o[i] = 1;
                    o[i + 1] = 1;
                }
                i += len;
            }
        }
    }
    o
}

/// (MSS, (TSval, TSecr)) from raw options, ignoring what does not parse. Scans the bytes in
/// place (no option list is built: this runs on every packet). Like `innet_wire`'s parser, a
/// malformed option list yields nothing at all.
fn read_options(opts: &[u8]) -> (Option<u16>, Option<(u32, u32)>) {
    // The layout on nearly every segment of a Linux connection: NOP, NOP, timestamps.
    if let [1, 1, 8, 10, v0, v1, v2, v3, e0, e1, e2, e3] = *opts {
        return (
            None,
            Some((
                u32::from_be_bytes([v0, v1, v2, v3]),
                u32::from_be_bytes([e0, e1, e2, e3]),
            )),
        );
    }
    let mut mss = None;
    let mut ts = None;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = opts.get(i + 1) else {
                    return (None, None);
                };
                let len = len as usize;
                if len < 2 || i + len > opts.len() {
                    return (None, None);
                }
                let body = &opts[i + 2..i + len];
                match (kind, body.len()) {
                    (2, 2) => mss = Some(u16::from_be_bytes([body[0], body[1]])),
                    (8, 8) => {
                        ts = Some((
                            u32::from_be_bytes([body[0], body[1], body[2], body[3]]),
                            u32::from_be_bytes([body[4], body[5], body[6], body[7]]),
                        ))
                    }
                    (2, _) | (8, _) | (3, 0 | 2..) | (4, 1..) => return (None, None),
                    (5, n) if n == 0 || !n.is_multiple_of(8) => return (None, None),
                    _ => {}
                }
                i += len;
            }
        }
    }
    (mss, ts)
}

fn tcp_opts(pkt: &Packet) -> &[u8] {
    pkt.wire
        .as_deref()
        .map(|w| w.tcp_options.as_slice())
        .unwrap_or(&[])
}

/// The cache item of a CQL partition: the table, then the key's bytes (appended by the caller).
fn cql_item(mut v: Vec<u8>, ks: &str, table: &str) -> Vec<u8> {
    v.clear();
    v.extend_from_slice(b"cql:");
    v.extend_from_slice(ks.as_bytes());
    v.push(b'.');
    v.extend_from_slice(table.as_bytes());
    v.push(0);
    v
}

/// What besides the key decides a CQL read's answer, appended to its shape: the consistency
/// level and serial consistency (a level the server rejects is never learned, so never served)
/// and every bound value (`values`: their wire bytes).
fn shape_params(s: &mut Vec<u8>, consistency: u16, serial: Option<u16>, values: &[u8]) {
    s.extend_from_slice(&consistency.to_be_bytes());
    match serial {
        Some(c) => {
            s.push(1);
            s.extend_from_slice(&c.to_be_bytes());
        }
        None => s.push(0),
    }
    s.extend_from_slice(&(values.len() as u32).to_be_bytes());
    s.extend_from_slice(values);
}

/// Consistency levels at which a read is never answered from the cache: SERIAL and
/// LOCAL_SERIAL reads run Paxos (they may commit a write in progress).
fn cacheable_consistency(c: u16) -> bool {
    !matches!(c, 0x0008 | 0x0009)
}

/// Requests were parsed and every one is a cache hit (so the switch can answer them all).
fn all_hits(items: &[(Option<i16>, Classified)]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|(_, c)| matches!(c, Classified::Read { hit: Some(_), .. }))
}

impl AppSwitch {
    fn qualify<'t>(t: &'t TableRef, conn_ks: Option<&'t str>) -> Option<(&'t str, &'t str)> {
        let ks = t.keyspace.as_deref().or(conn_ks)?;
        Some((ks, t.table.as_str()))
    }

    /// An empty buffer (a reused one when there is one).
    fn buf(&mut self) -> Vec<u8> {
        self.spare_bufs.pop().unwrap_or_default()
    }
    /// Keep `v`'s allocation for a later request.
    fn give(&mut self, mut v: Vec<u8>) {
        if self.spare_bufs.len() < 64 && v.capacity() > 0 {
            v.clear();
            self.spare_bufs.push(v);
        }
    }
    /// Keep the buffers of a classified request that is done with.
    fn give_classified(&mut self, cl: Classified) {
        if let Classified::Read { item, shape, .. } = cl {
            self.give(item);
            self.give(shape);
        }
    }
    /// Look `item` up for `shape`; a hit's reply is copied into `hit_bytes`.
    fn lookup_hit(&mut self, item: &[u8], shape: &[u8]) -> Option<std::ops::Range<usize>> {
        let body = self.cache.lookup(item, shape)?;
        let at = self.hit_bytes.len();
        self.hit_bytes.extend_from_slice(body);
        Some(at..self.hit_bytes.len())
    }

    /// Classify a CQL request frame.
    fn classify_cql(
        &mut self,
        h: &cql::FrameHeader,
        body: &[u8],
        keyspace: Option<&str>,
    ) -> Classified {
        let other = Classified::Pending(Pending::Other);
        let cacheable_flags = h.flags
            & (cql::frame_flags::TRACING
                | cql::frame_flags::CUSTOM_PAYLOAD
                | cql::frame_flags::COMPRESSION)
            == 0;
        if h.opcode == opcode::EXECUTE {
            // The hot path: read in place (no copy of the id or the bound values).
            return self.classify_execute(h, body, cacheable_flags);
        }
        if h.opcode == opcode::BATCH {
            return self.classify_batch(body, keyspace);
        }
        let Ok(req) = cql::parse_request(h, body) else {
            return Classified::Pending(Pending::WriteAll);
        };
        match req {
            Request::Query { text, params } => {
                if let Some(kind) = schema_read(&text) {
                    return Classified::Pending(Pending::SchemaRead {
                        kind,
                        continued: params.paging_state.is_some(),
                    });
                }
                let ks = params.keyspace.as_deref().or(keyspace);
                let fixed = self.fixed_layout.as_ref().and_then(|f| f.read(&text));
                let st = match fixed {
                    Some(r) => {
                        // No lexing: the column is taken to be the partition key (the assumption).
                        let column = Self::qualify(&r.table, ks)
                            .and_then(|t| self.schema.key_column_name(t).map(str::to_string))
                            .unwrap_or_default();
                        Statement::Select {
                            table: r.table,
                            column,
                            key: Term::Literal(r.key),
                            shape: r.shape,
                        }
                    }
                    None => parse_statement(&text),
                };
                let cacheable = cacheable_flags
                    && params.paging_state.is_none()
                    && params.now_in_seconds.is_none()
                    && cacheable_consistency(params.consistency);
                self.classify_statement(
                    &st,
                    ks,
                    |term, typ, out| match term {
                        Term::Literal(k) => cql_key::from_literal(typ, k, out),
                        _ => false,
                    },
                    cacheable,
                    |s: &mut Vec<u8>| {
                        s.extend_from_slice(&[
                            b'Q',
                            h.version,
                            (params.flags & cql::query_flags::SKIP_METADATA) as u8,
                        ]);
                        let mut values = Vec::new();
                        for v in &params.values {
                            match v {
                                cql::Value::Null => values.push(0),
                                cql::Value::Unset => values.push(1),
                                cql::Value::Bytes(b) => {
                                    values.push(2);
                                    values.extend_from_slice(&(b.len() as u32).to_be_bytes());
                                    values.extend_from_slice(b);
                                }
                            }
                        }
                        shape_params(s, params.consistency, params.serial_consistency, &values);
                        if let Statement::Select { shape, .. } = &st {
                            s.extend_from_slice(shape.as_bytes());
                        }
                    },
                    None,
                )
            }
            // Handled above, in place.
            Request::Execute { .. } => self.classify_execute(h, body, cacheable_flags),
            Request::Batch => self.classify_batch(body, keyspace),
            Request::Prepare { text, keyspace: ks } => Classified::Pending(Pending::Prepare {
                statement: parse_statement(&text),
                keyspace: ks.or_else(|| keyspace.map(str::to_string)),
            }),
            Request::Other(op) => match op {
                opcode::STARTUP | opcode::OPTIONS | opcode::REGISTER | opcode::AUTH_RESPONSE => {
                    other
                }
                _ => Classified::Pending(Pending::WriteAll),
            },
        }
    }

    /// A BATCH: writes of unknown keys (flush). A statement in it that sets a TTL makes its
    /// table volatile; one the switch cannot read (an unknown prepared id, a body that does not
    /// parse, a table it cannot name) makes every table volatile.
    fn classify_batch(&mut self, body: &[u8], keyspace: Option<&str>) -> Classified {
        let Ok(items) = cql::batch_items(body) else {
            self.schema.mark_volatile(None);
            return Classified::Pending(Pending::WriteAll);
        };
        for item in items {
            match item {
                cql::BatchItem::Query(text) => self.note_ttl(&parse_statement(text), keyspace),
                cql::BatchItem::Prepared(id) => match self.prepared.get(id).cloned() {
                    Some(info) => {
                        let ks = info.table.as_ref().map(|t| t.0.clone());
                        self.note_ttl(&info.statement, ks.as_deref().or(keyspace));
                    }
                    None => self.schema.mark_volatile(None),
                },
            }
        }
        Classified::Pending(Pending::WriteAll)
    }

    /// A statement whose keys the switch does not take apart: if it may set a TTL, its tables
    /// (all tables, if it cannot name them) become volatile.
    fn note_ttl(&mut self, st: &Statement, ks: Option<&str>) {
        if !st.with_ttl() {
            return;
        }
        let tables: Vec<&TableRef> = match st {
            Statement::Insert { table, .. }
            | Statement::WriteByKey { table, .. }
            | Statement::WriteTable { table, .. } => vec![table],
            Statement::Batch {
                tables,
                complete: true,
                ..
            } => tables.iter().collect(),
            _ => {
                self.schema.mark_volatile(None);
                return;
            }
        };
        for t in tables {
            match Self::qualify(t, ks) {
                Some(t) => self.schema.mark_volatile(Some(t)),
                None => self.schema.mark_volatile(None),
            }
        }
    }

    /// Classify an EXECUTE read in place (`cql::parse_execute_ref`).
    fn classify_execute(
        &mut self,
        h: &cql::FrameHeader,
        body: &[u8],
        cacheable_flags: bool,
    ) -> Classified {
        let Ok(id) = cql::execute_id(body) else {
            return Classified::Pending(Pending::WriteAll);
        };
        let Some(info) = self.prepared.get(id).cloned() else {
            // Unknown prepared id (prepared before we saw the connection): may write, maybe
            // with a TTL.
            self.schema.mark_volatile(None);
            return Classified::Pending(Pending::WriteAll);
        };
        let pk = info.pk;
        let Ok(ex) = cql::parse_execute_ref(h.version, body, pk) else {
            return Classified::Pending(Pending::WriteAll);
        };
        let st = &info.statement;
        let ks = info.table.as_ref().map(|t| t.0.as_str());
        let cacheable = cacheable_flags
            && !ex.has_paging_state
            && !ex.has_names
            && !ex.has_now_in_seconds
            && cacheable_consistency(ex.consistency);
        self.classify_statement(
            st,
            ks,
            |term, typ, out| {
                let idx = match term {
                    Term::Marker(i) => *i,
                    _ => return false,
                };
                match (pk, ex.value) {
                    (Some(p), Some(cql::ValueRef::Bytes(b))) if p == idx => {
                        cql_key::from_bound(typ, b, out)
                    }
                    _ => false,
                }
            },
            cacheable,
            |s: &mut Vec<u8>| {
                let rmid = ex.result_metadata_id.unwrap_or(&[]);
                s.extend_from_slice(&[
                    b'E',
                    h.version,
                    (ex.flags & cql::query_flags::SKIP_METADATA) as u8,
                ]);
                s.extend_from_slice(ex.id);
                s.push(0);
                s.extend_from_slice(&(rmid.len() as u16).to_be_bytes());
                s.extend_from_slice(rmid);
                shape_params(s, ex.consistency, ex.serial_consistency, ex.values);
            },
            Some(&info.pk_check),
        )
    }

    /// `key_of(term, type, out)` appends the key bytes of `term` for a column of `type` to
    /// `out` (false: no key).
    fn classify_statement(
        &mut self,
        st: &Statement,
        ks: Option<&str>,
        key_of: impl Fn(&Term, KeyType, &mut Vec<u8>) -> bool,
        cacheable: bool,
        shape: impl FnOnce(&mut Vec<u8>),
        pk_check: Option<&Cell<(u64, Option<KeyType>)>>,
    ) -> Classified {
        match st {
            Statement::Select {
                table, column, key, ..
            } => {
                let Some(t) = Self::qualify(table, ks) else {
                    return Classified::Pending(Pending::Other);
                };
                // A prepared statement's table and column never change: its check is
                // remembered until the schema knowledge changes.
                let typ = match pk_check.map(Cell::get) {
                    Some((g, typ)) if g == self.schema.generation => typ,
                    _ => {
                        let typ = self
                            .schema
                            .cacheable_key(t)
                            .filter(|(c, _)| *c == column.as_str())
                            .map(|(_, typ)| typ);
                        if let Some(c) = pk_check {
                            c.set((self.schema.generation, typ));
                        }
                        typ
                    }
                };
                let (Some(typ), true) = (typ, cacheable) else {
                    return Classified::Pending(Pending::Other);
                };
                let mut item = cql_item(self.buf(), t.0, t.1);
                if !key_of(key, typ, &mut item)
                    || !self.volatile.is_empty() && self.volatile.contains(&item)
                {
                    self.give(item);
                    return Classified::Pending(Pending::Other);
                }
                let mut sh = self.buf();
                shape(&mut sh);
                let hit = self.lookup_hit(&item, &sh);
                Classified::Read {
                    item,
                    shape: sh,
                    hit,
                }
            }
            Statement::Insert {
                table,
                columns,
                values,
                with_ttl,
                ..
            } => {
                let Some(t) = Self::qualify(table, ks) else {
                    self.note_ttl(st, ks);
                    return Classified::Pending(Pending::WriteAll);
                };
                let item = self.schema.key_column(t).and_then(|(pk, typ)| {
                    let term = values[columns.iter().position(|c| c == pk)?].as_ref()?;
                    let mut item = cql_item(Vec::new(), t.0, t.1);
                    key_of(term, typ, &mut item).then_some(item)
                });
                self.write_key(t, item, *with_ttl)
            }
            Statement::WriteByKey {
                table,
                column,
                key,
                with_ttl,
                ..
            } => {
                let Some(t) = Self::qualify(table, ks) else {
                    self.note_ttl(st, ks);
                    return Classified::Pending(Pending::WriteAll);
                };
                let item = self
                    .schema
                    .key_column(t)
                    .filter(|(pk, _)| *pk == column.as_str())
                    .and_then(|(_, typ)| {
                        let mut item = cql_item(Vec::new(), t.0, t.1);
                        key_of(key, typ, &mut item).then_some(item)
                    });
                self.write_key(t, item, *with_ttl)
            }
            Statement::WriteTable { .. } | Statement::Batch { .. } | Statement::Other => {
                self.note_ttl(st, ks);
                Classified::Pending(Pending::WriteAll)
            }
            Statement::Use(_) | Statement::OtherRead => Classified::Pending(Pending::Other),
        }
    }

    /// A write to a partition (its cache item) or, `None`, to partitions unknown. `with_ttl`:
    /// the written cells expire, so the key (or, key unknown, the whole table) is never cached
    /// again.
    fn write_key(&mut self, t: (&str, &str), item: Option<Vec<u8>>, with_ttl: bool) -> Classified {
        match item {
            Some(item) => {
                if with_ttl {
                    self.volatile.insert(item.clone());
                }
                Classified::Pending(Pending::Write {
                    items: vec![(item, WriteToken::placeholder())],
                    update: None,
                })
            }
            None => {
                if with_ttl {
                    self.schema.mark_volatile(Some(t));
                }
                Classified::Pending(Pending::WriteAll)
            }
        }
    }

    fn classify_redis(&mut self, args: &[&[u8]], conn: &mut RedisState) -> Classified {
        let Some(cmd) = args.first() else {
            return Classified::Pending(Pending::Other);
        };
        // Upper-cased on the stack (every command this matches is shorter than 16 bytes).
        let mut upper = [0u8; 16];
        let cmd: &[u8] = match upper.get_mut(..cmd.len()) {
            Some(u) => {
                u.copy_from_slice(cmd);
                u.make_ascii_uppercase();
                u
            }
            None => cmd,
        };
        let item = |k: &[u8]| {
            let mut v = b"redis:0:".to_vec();
            v.extend_from_slice(k);
            v
        };
        match (cmd, args.len()) {
            (b"MULTI", _) => {
                conn.in_multi = true;
                Classified::Pending(Pending::WriteAll)
            }
            (b"EXEC" | b"DISCARD", _) => {
                conn.in_multi = false;
                Classified::Pending(Pending::WriteAll)
            }
            (b"HELLO", _) => {
                match args.get(1).copied() {
                    Some(b"3") => conn.resp3 = true,
                    Some(b"2") => conn.resp3 = false,
                    None => {}
                    Some(_) => conn.uncacheable = true,
                }
                Classified::Pending(Pending::Other)
            }
            (b"SELECT" | b"RESET", _) => {
                conn.uncacheable = true;
                Classified::Pending(Pending::Other)
            }
            _ if conn.in_multi && cmd == b"GET" => Classified::Pending(Pending::Other),
            (b"GET", 2) if !self.volatile.is_empty() && self.volatile.contains(&item(args[1])) => {
                Classified::Pending(Pending::Other)
            }
            (b"GET", 2) if !conn.uncacheable => {
                let mut it = self.buf();
                it.extend_from_slice(b"redis:0:");
                it.extend_from_slice(&args[1]);
                let mut shape = self.buf();
                shape.extend_from_slice(if conn.resp3 { b"GET/3" } else { b"GET/2" });
                let hit = self.lookup_hit(&it, &shape);
                Classified::Read {
                    item: it,
                    shape,
                    hit,
                }
            }
            (b"GET", _) => Classified::Pending(Pending::Other),
            // Commands that give a key an expiry time: the server will drop it on its own, so
            // the key is never cached again (see `volatile`).
            (
                b"SETEX" | b"PSETEX" | b"EXPIRE" | b"PEXPIRE" | b"EXPIREAT" | b"PEXPIREAT"
                | b"GETEX",
                n,
            ) if n >= 2 => {
                let it = item(&args[1]);
                self.volatile.insert(it.clone());
                Classified::Pending(Pending::Write {
                    items: vec![(it, WriteToken::placeholder())],
                    update: None,
                })
            }
            (b"SET", n) if n >= 3 => {
                let ttl = args[3..].iter().any(|o| {
                    matches!(
                        o.to_ascii_uppercase().as_slice(),
                        b"EX" | b"PX" | b"EXAT" | b"PXAT" | b"KEEPTTL"
                    )
                });
                if ttl {
                    self.volatile.insert(item(&args[1]));
                }
                let update = (n == 3 && !conn.in_multi && !conn.uncacheable).then(|| {
                    let mut r = Vec::new();
                    resp::encode_bulk(Some(&args[2]), &mut r);
                    (
                        if conn.resp3 {
                            b"GET/3".to_vec()
                        } else {
                            b"GET/2".to_vec()
                        },
                        r,
                    )
                });
                Classified::Pending(Pending::Write {
                    items: vec![(item(&args[1]), WriteToken::placeholder())],
                    update,
                })
            }
            (b"DEL" | b"UNLINK", n) if n >= 2 => Classified::Pending(Pending::Write {
                items: args[1..]
                    .iter()
                    .map(|k| (item(k), WriteToken::placeholder()))
                    .collect(),
                update: None,
            }),
            (
                b"PING" | b"ECHO" | b"INFO" | b"CLIENT" | b"COMMAND" | b"EXISTS" | b"TTL" | b"PTTL"
                | b"TYPE" | b"STRLEN" | b"MGET" | b"KEYS" | b"SCAN" | b"DBSIZE" | b"TIME"
                | b"GETRANGE",
                _,
            ) => Classified::Pending(Pending::Other),
            _ => Classified::Pending(Pending::WriteAll),
        }
    }

    fn classify_mc(&mut self, r: &memcache::Request<'_>) -> Classified {
        use memcache::Cmd;
        let item = |k: &[u8]| {
            let mut v = b"mc:".to_vec();
            v.extend_from_slice(k);
            v
        };
        let write = |items: Vec<Vec<u8>>, update| {
            Classified::Pending(Pending::Write {
                items: items
                    .into_iter()
                    .map(|k| (k, WriteToken::placeholder()))
                    .collect(),
                update,
            })
        };
        match (r.cmd, r.key) {
            (Cmd::Get, Some(k)) if r.keys == 1 => {
                let mut it = self.buf();
                it.extend_from_slice(b"mc:");
                it.extend_from_slice(k);
                if self.volatile_all || self.volatile.contains(&it) {
                    self.give(it);
                    return Classified::Pending(Pending::Other);
                }
                let mut shape = self.buf();
                shape.extend_from_slice(b"get");
                let hit = self.lookup_hit(&it, &shape);
                Classified::Read {
                    item: it,
                    shape,
                    hit,
                }
            }
            (
                Cmd::Get
                | Cmd::Gets
                | Cmd::MetaGet
                | Cmd::MetaNoop
                | Cmd::MetaDebug
                | Cmd::Stats
                | Cmd::Version
                | Cmd::Verbosity
                | Cmd::Quit,
                _,
            ) => Classified::Pending(Pending::Other),
            (Cmd::FlushAll, _) => {
                if r.exptime != 0 {
                    // Items vanish later, at a time the switch cannot see: stop caching.
                    self.volatile_all = true;
                }
                Classified::Pending(Pending::WriteAll)
            }
            (
                Cmd::Gat
                | Cmd::Gats
                | Cmd::Set
                | Cmd::Add
                | Cmd::Replace
                | Cmd::Append
                | Cmd::Prepend
                | Cmd::Cas
                | Cmd::Delete
                | Cmd::Incr
                | Cmd::Decr
                | Cmd::Touch
                | Cmd::MetaSet
                | Cmd::MetaDelete
                | Cmd::MetaArith,
                Some(k),
            ) => {
                let it = item(k);
                let touches_ttl = matches!(
                    r.cmd,
                    Cmd::Gat
                        | Cmd::Gats
                        | Cmd::Touch
                        | Cmd::Set
                        | Cmd::Add
                        | Cmd::Replace
                        | Cmd::Cas
                        | Cmd::MetaSet
                        | Cmd::MetaArith
                );
                if touches_ttl && r.exptime != 0 {
                    self.volatile.insert(it.clone());
                }
                if matches!(r.cmd, Cmd::Gat | Cmd::Gats) && r.keys > 1 {
                    return Classified::Pending(Pending::WriteAll);
                }
                // A plain `set` that succeeds makes `get k` answer exactly this.
                let update = (r.cmd == Cmd::Set && r.exptime == 0 && !r.noreply).then(|| {
                    let mut v = Vec::new();
                    memcache::encode_value(k, r.flags, r.data, &mut v);
                    (b"get".to_vec(), v)
                });
                write(vec![it], update)
            }
            _ => Classified::Pending(Pending::WriteAll),
        }
    }

    /// Start the write bookkeeping of a pending entry that is being forwarded.
    fn begin(&mut self, p: Pending) -> Pending {
        match p {
            Pending::Write { items, update } => {
                self.counters.writes += 1;
                let items = items
                    .into_iter()
                    .map(|(k, _)| {
                        let t = self.cache.begin_write(&k);
                        (k, t)
                    })
                    .collect();
                Pending::Write { items, update }
            }
            Pending::WriteAll => {
                self.counters.writes += 1;
                self.cache.begin_write_all();
                Pending::WriteAll
            }
            p => p,
        }
    }

    /// The server answered a pending request; `ok_reply`: the raw reply for RESP, or the
    /// decoded RESULT for CQL.
    fn complete(&mut self, p: Pending, success: bool, learned: Option<&[u8]>) {
        match p {
            Pending::Read { item, shape, token } => {
                if let Some(body) = learned {
                    if self.cache.fill(&item, &shape, body, token) {
                        self.counters.learned += 1;
                    }
                }
                self.give(item);
                self.give(shape);
            }
            Pending::Write { items, update } => {
                let single = items.len() == 1;
                for (k, t) in items {
                    let up = if success && single {
                        update.as_ref().map(|(s, r)| (s.as_slice(), r.as_slice()))
                    } else {
                        None
                    };
                    self.cache.end_write(&k, t, up);
                }
            }
            Pending::WriteAll => self.cache.end_write_all(),
            Pending::Prepare { .. } | Pending::SchemaRead { .. } | Pending::Other => {}
        }
    }

    /// Rows of a `system_schema` read (`cql_schema`); knowledge that changed flushes the cache.
    fn learn_schema(&mut self, kind: SchemaRead, rows: &cql::Rows, continued: bool) {
        let learned = match kind {
            SchemaRead::Columns => self.schema.learn_columns(rows, continued),
            SchemaRead::Tables => self.schema.learn_tables(rows),
            SchemaRead::Views => self.schema.learn_views(rows),
        };
        if learned.changed {
            self.cache.flush();
        }
    }

    /// A schema change (a DDL statement's result, or an event about anyone's DDL): what was
    /// known of the table is forgotten until the driver's refresh reads it again.
    fn schema_changed(&mut self, change: &cql::SchemaChange) {
        if self.schema.forget(change).changed {
            self.cache.flush();
        }
    }

    fn learn_prepared(
        &mut self,
        p: &cql::Prepared,
        statement: Statement,
        keyspace: Option<String>,
    ) {
        let table = p
            .bind_global_table
            .clone()
            .or_else(|| p.bind_columns.first().and_then(|c| c.table.clone()))
            .or_else(|| {
                let t = match &statement {
                    Statement::Select { table, .. }
                    | Statement::WriteByKey { table, .. }
                    | Statement::Insert { table, .. } => table,
                    _ => return None,
                };
                Self::qualify(t, keyspace.as_deref()).map(|(k, t)| (k.to_string(), t.to_string()))
            });
        let mut pk = None;
        if let Some(t) = &table {
            let key = match p.pk_indexes.as_slice() {
                [i] => p.bind_columns.get(*i as usize).map(|col| {
                    pk = Some(*i as usize);
                    PartitionKey::Single {
                        column: col.name.clone(),
                        typ: KeyType::from_cql_type(&col.typ),
                    }
                }),
                [] => None,
                _ => Some(PartitionKey::Compound),
            };
            if let Some(key) = key {
                if self.schema.set_partition_key((&t.0, &t.1), key).changed {
                    self.cache.flush();
                }
            }
        }
        self.prepared.insert(
            p.id.clone(),
            Rc::new(PreparedInfo {
                statement,
                table,
                pk,
                pk_check: Cell::new((u64::MAX, None)),
            }),
        );
    }
}

impl WriteToken {
    /// Stands in until the write is forwarded and [`Cache::begin_write`] gives the real token.
    fn placeholder() -> WriteToken {
        Cache::placeholder_token()
    }
}

enum Dir {
    ToServer,
    ToClient,
}

impl Program for AppSwitch {
    fn name(&self) -> &str {
        "appswitch"
    }

    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        self.cache.set_now_ns(ctx.now_ps / 1000);
        let L4::Tcp(h) = pkt.l4 else {
            self.counters.bypassed += 1;
            return Verdict::Route;
        };
        let (dir, key) = if h.dst_port == self.config.server_port {
            (
                Dir::ToServer,
                ConnKey {
                    client_ip: pkt.ip.src,
                    client_port: h.src_port,
                    server_ip: pkt.ip.dst,
                },
            )
        } else if h.src_port == self.config.server_port {
            (
                Dir::ToClient,
                ConnKey {
                    client_ip: pkt.ip.dst,
                    client_port: h.dst_port,
                    server_ip: pkt.ip.src,
                },
            )
        } else {
            self.counters.bypassed += 1;
            return Verdict::Route;
        };
        let syn = h.flags.has(TcpFlags::SYN);
        let ack = h.flags.has(TcpFlags::ACK);
        if syn {
            let opts = strip_sack_permitted(tcp_opts(pkt));
            set_tcp_options(pkt, &opts);
            let (mss, ts) = read_options(&opts);
            match dir {
                Dir::ToServer if !ack => {
                    if let Some(old) = self.conns.remove(&key) {
                        self.close(old);
                    }
                    let proto = match self.config.protocol {
                        Protocol::Cql => Proto::Cql(CqlConn {
                            c2s: FrameReader::new(false),
                            s2c: FrameReader::new(true),
                            pending: HashMap::default(),
                            keyspace: None,
                        }),
                        Protocol::Redis => Proto::Redis(RedisConn {
                            c2s: RespReader::default(),
                            s2c: RespReader::default(),
                            pending: VecDeque::new(),
                            st: RedisState::default(),
                        }),
                        Protocol::Memcached => Proto::Mc(McConn {
                            c2s: McReader::default(),
                            s2c: McReader::default(),
                            pending: VecDeque::new(),
                            noreply: Vec::new(),
                        }),
                    };
                    let mut mig = Migration::new(h.seq, mss);
                    mig.client_tsval = ts.map(|t| t.0);
                    self.counters.connections += 1;
                    self.conns.insert(
                        key,
                        Conn {
                            mig,
                            proto,
                            broken: false,
                            holds_unknown_write: false,
                            uses_timestamps: ts.is_some(),
                            closing_acks: 0,
                        },
                    );
                }
                Dir::ToClient => {
                    if let Some(c) = self.conns.get_mut(&key) {
                        c.mig.s_isn = h.seq;
                        c.mig.last_ack_to_client = h.ack;
                        c.mig.server_window = h.window as u16;
                        c.mig.server_tsval = ts.map(|t| t.0);
                        c.uses_timestamps &= ts.is_some();
                    }
                }
                _ => {}
            }
            return Verdict::Route;
        }
        // The connection map is taken out of `self` while the connection is worked on (the
        // handlers need `&mut self` and `&mut Conn`; they never touch `self.conns`): one hash
        // lookup and no move of the connection state per packet.
        let mut conns = std::mem::take(&mut self.conns);
        let Some(conn) = conns.get_mut(&key) else {
            self.conns = conns;
            return self.reset_unseen(pkt, meta, ctx);
        };
        let verdict = match dir {
            Dir::ToServer => self.from_client(conn, pkt, meta, ctx),
            Dir::ToClient => self.from_server(conn, pkt),
        };
        if conn.broken && !conn.holds_unknown_write {
            // Before this packet leaves: whatever it carries may be a write.
            conn.holds_unknown_write = true;
            self.cache.begin_write_all();
        }
        let done = conn.mig.reset || conn.closing_acks >= 2;
        if !done {
            conn.mig.fold();
        }
        let closed = if done { conns.remove(&key) } else { None };
        self.conns = conns;
        if let Some(conn) = closed {
            self.close(conn);
        }
        verdict
    }
}

impl AppSwitch {
    /// A segment of a connection whose opening the switch did not see: it started before the
    /// switch did, or the switch restarted and lost the connection's α/β maps and parser
    /// state. Its sequence numbers cannot be mapped (forwarding them would hang a connection
    /// that had hits) and its bytes cannot be framed (a write would pass unseen), so the
    /// connection is closed on both sides and the client reconnects through the switch:
    /// - the sender gets an RST at the sequence number its own ACK says it expects next
    ///   (exact, so accepted — RFC 5961 leaves no challenge for it);
    /// - the segment itself, emptied and moved 2^31 bytes outside the receiver's window, goes
    ///   on as a probe: the receiver answers an unacceptable segment with an ACK of its own
    ///   next expected sequence number (RFC 793 §3.9), and that ACK, arriving here, gets the
    ///   other side its exact RST in turn.
    ///
    /// Nothing of the connection's data passes. RSTs are dropped (never answered).
    fn reset_unseen(&mut self, pkt: &mut Packet, meta: &Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        let L4::Tcp(h) = pkt.l4 else {
            unreachable!("checked by ingress")
        };
        if h.flags.has(TcpFlags::RST) {
            self.counters.bypassed += 1;
            return Verdict::Drop;
        }
        self.counters.unseen_resets += 1;
        if h.flags.has(TcpFlags::ACK) {
            ctx.reply_tcp(
                pkt,
                meta.ingress_port,
                &TcpReply {
                    seq: h.ack,
                    ack: 0,
                    flags: TcpFlags::RST,
                    window: 0,
                    options: &[],
                    payload: &[],
                },
            );
        }
        set_payload(pkt, &[]);
        if let L4::Tcp(t) = &mut pkt.l4 {
            t.seq = h.seq.wrapping_add(1 << 31);
            t.flags = TcpFlags(TcpFlags::ACK);
        }
        Verdict::Route
    }

    /// Free a connection's state; writes it had in flight end (their outcome is unknown).
    fn close(&mut self, conn: Conn) {
        if conn.holds_unknown_write {
            self.cache.end_write_all();
        }
        let pend: Vec<Pending> = match conn.proto {
            Proto::Cql(c) => c.pending.into_values().collect(),
            Proto::Redis(r) => r.pending.into_iter().collect(),
            Proto::Mc(m) => m
                .pending
                .into_iter()
                .flat_map(|e| std::iter::once(e.pending).chain(e.noreply_before))
                .chain(m.noreply)
                .collect(),
        };
        for p in pend {
            self.complete(p, false, None);
        }
    }

    fn from_client(
        &mut self,
        conn: &mut Conn,
        pkt: &mut Packet,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
    ) -> Verdict {
        let L4::Tcp(h) = pkt.l4 else {
            unreachable!("checked by ingress")
        };
        let (_, ts) = read_options(tcp_opts(pkt));
        if let Some((v, _)) = ts {
            conn.mig.client_tsval = Some(v);
        }
        // Borrow the payload out of the packet (no copy); it is put back (or replaced) below.
        let data_box = pkt.payload_bytes.take().unwrap_or_default();
        let verdict = self.from_client_payload(conn, pkt, &data_box, h, meta, ctx);
        if pkt.payload_bytes.is_none() {
            pkt.payload_bytes = Some(data_box);
        }
        verdict
    }

    fn from_client_payload(
        &mut self,
        conn: &mut Conn,
        pkt: &mut Packet,
        data: &[u8],
        h: innet_wire::phv::TcpHeader,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
    ) -> Verdict {
        let c0 = conn.mig.client_pos(h.seq);
        let c1 = c0 + data.len() as i64;
        let fin = h.flags.has(TcpFlags::FIN);
        let rst = h.flags.has(TcpFlags::RST);
        let dup_ack = conn.mig.last_client_ack == Some(h.ack);
        let mut resend = None;
        let mapped_ack = if h.flags.has(TcpFlags::ACK) {
            let c = conn.mig.client_ack_pos(h.ack).max(0) as u64;
            conn.mig.last_client_ack = Some(h.ack);
            let a = conn.mig.map_client_ack(c);
            // A duplicate ACK, or a new request, while the client misses part of a reply: resend it.
            if dup_ack || !data.is_empty() {
                resend = conn.mig.reply_to_resend(c);
            }
            Some(a)
        } else {
            None
        };
        if let (Some((i, from)), true, false) = (resend, data.is_empty(), rst) {
            self.counters.reply_retransmits += 1;
            self.send_reply_from(conn, i, from, pkt, meta, ctx);
        }
        if rst {
            conn.mig.reset = true;
            self.rewrite(pkt, conn.mig.map_client_seq(c0.max(0) as u64), mapped_ack);
            return Verdict::Route;
        }
        if conn.mig.client_fin && conn.mig.server_fin && data.is_empty() {
            conn.closing_acks += 1;
        }
        if data.is_empty() {
            if fin {
                conn.mig.client_fin = true;
            }
            let seq = conn.mig.map_client_seq(c0.max(0) as u64);
            if !fin {
                if let Some(a) = mapped_ack {
                    if !conn.mig.forward_pure_ack(h.ack, a, h.window as u16) {
                        self.counters.acks_suppressed += 1;
                        self.ack_client_if_due(conn, pkt, meta, ctx);
                        return Verdict::Drop;
                    }
                }
            }
            self.rewrite(pkt, seq, mapped_ack);
            self.ack_client_if_due(conn, pkt, meta, ctx);
            return Verdict::Route;
        }
        let plan = conn.mig.plan_client(c0, c1);
        if plan.out_of_order {
            self.counters.out_of_order_dropped += 1;
            return Verdict::Drop;
        }
        for &i in &plan.replay {
            self.counters.replays += 1;
            self.send_reply(conn, i, pkt, meta, ctx);
        }
        if let Some((i, from)) = resend.filter(|(i, _)| !plan.replay.contains(i)) {
            self.counters.reply_retransmits += 1;
            self.send_reply_from(conn, i, from, pkt, meta, ctx);
        }
        let mut answered = false;
        if let Some(from) = plan.new_from {
            let new = &data[(from as i64 - c0) as usize..];
            let whole_new = from as i64 == c0;
            answered = self.parse_client_bytes(
                conn,
                new,
                whole_new && !fin,
                from,
                c1 as u64,
                pkt,
                meta,
                ctx,
            );
            conn.mig.c_next = c1 as u64;
        }
        if fin {
            conn.mig.client_fin = true;
        }
        if answered {
            return Verdict::Drop;
        }
        match plan.forward {
            Some((a, b)) => {
                let off = (a as i64 - c0) as usize;
                let len = (b - a) as usize;
                if off != 0 || len != data.len() {
                    set_payload(pkt, &data[off..off + len]);
                    if let L4::Tcp(t) = &mut pkt.l4 {
                        // A trimmed retransmission keeps FIN only if it still ends the stream.
                        if b != c1 as u64 {
                            t.flags = TcpFlags(t.flags.0 & !TcpFlags::FIN);
                        }
                    }
                }
                let seq = conn.mig.map_client_seq(a);
                if let Some(ack) = mapped_ack {
                    conn.mig.note_forwarded_ack(h.ack, ack, h.window as u16);
                }
                self.rewrite(pkt, seq, mapped_ack);
                Verdict::Route
            }
            None => Verdict::Drop,
        }
    }

    /// Parse new client bytes [from, end); if `may_answer` and every request completed in them
    /// is a cache hit, answer them all (returns true). Otherwise start the bookkeeping of what is
    /// forwarded.
    #[allow(clippy::too_many_arguments)]
    fn parse_client_bytes(
        &mut self,
        conn: &mut Conn,
        bytes: &[u8],
        may_answer: bool,
        from: u64,
        end: u64,
        pkt: &Packet,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
    ) -> bool {
        if conn.broken {
            return false;
        }
        // The per-packet lists live in `self` between packets (no allocation per packet).
        let mut items = std::mem::take(&mut self.items_scratch);
        let mut frames = std::mem::take(&mut self.frames_scratch);
        let answered = self.parse_client_bytes_into(
            conn,
            bytes,
            may_answer,
            from,
            end,
            pkt,
            meta,
            ctx,
            &mut items,
            &mut frames,
        );
        for (_, cl) in items.drain(..) {
            self.give_classified(cl);
        }
        for f in frames.drain(..) {
            self.give(f.body);
        }
        self.hit_bytes.clear();
        self.items_scratch = items;
        self.frames_scratch = frames;
        answered
    }

    #[allow(clippy::too_many_arguments)]
    fn parse_client_bytes_into(
        &mut self,
        conn: &mut Conn,
        bytes: &[u8],
        may_answer: bool,
        from: u64,
        end: u64,
        pkt: &Packet,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
        items: &mut Vec<(Option<i16>, Classified)>,
        frames: &mut Vec<cql::Frame>,
    ) -> bool {
        let (boundary_before, s2c_boundary, framing_ok, version);
        match &mut conn.proto {
            Proto::Cql(c) => {
                boundary_before = c.c2s.at_boundary();
                s2c_boundary = c.s2c.at_boundary();
                framing_ok = c.c2s.framing() == c.s2c.framing();
                if c.c2s
                    .push_reusing(bytes, frames, &mut self.spare_bufs)
                    .is_err()
                {
                    conn.broken = true;
                    self.counters.protocol_errors += 1;
                }
                version = frames.first().map(|f| f.header.version).unwrap_or(4);
                for f in frames.iter().filter(|f| f.header.opcode == opcode::STARTUP) {
                    // The compression asked for applies to both directions once the server
                    // is READY; an unknown one leaves compressed bytes unreadable (broken).
                    let c_name = compression::startup_compression(&f.body).ok().flatten();
                    if let Some(alg) = c_name.as_deref().and_then(Compression::from_name) {
                        c.c2s.set_compression(alg);
                        c.s2c.set_compression(alg);
                    }
                }
                let ks = c.keyspace.as_deref();
                for f in frames.drain(..) {
                    let cl = self.classify_cql(&f.header, &f.body, ks);
                    items.push((Some(f.header.stream), cl));
                    self.give(f.body);
                }
                let Proto::Cql(c) = &mut conn.proto else {
                    unreachable!()
                };
                let at_end = c.c2s.at_boundary();
                let all_hits = all_hits(items);
                if may_answer
                    && !conn.broken
                    && boundary_before
                    && at_end
                    && s2c_boundary
                    && framing_ok
                    && all_hits
                    && !conn.mig.server_fin
                {
                    let mut frames_bytes = conn.mig.take_reply_buffer();
                    for (stream, cl) in items.iter() {
                        if let Classified::Read {
                            hit: Some(body), ..
                        } = cl
                        {
                            cql::append_response_frame(
                                version,
                                stream.unwrap_or(0),
                                opcode::RESULT,
                                &self.hit_bytes[body.clone()],
                                &mut frames_bytes,
                            );
                        }
                    }
                    let reply = if c.s2c.framing() == Framing::Segmented {
                        let mut v = Vec::new();
                        let compressed_format = c.s2c.compression().is_some();
                        cql::encode_frames_v5_in(&frames_bytes, compressed_format, &mut v);
                        v
                    } else {
                        frames_bytes
                    };
                    self.counters.hits += items.len() as u64;
                    self.counters.migrated_request_bytes += end - from;
                    self.counters.migrated_reply_bytes += reply.len() as u64;
                    let i = conn.mig.answer(from, end, reply);
                    self.send_reply(conn, i, pkt, meta, ctx);
                    return true;
                }
                for (stream, cl) in items.drain(..) {
                    let p = self.to_pending(cl);
                    let p = self.begin(p);
                    let Proto::Cql(c) = &mut conn.proto else {
                        unreachable!()
                    };
                    if let Some(old) = c.pending.insert(stream.unwrap_or(0), p) {
                        self.complete(old, false, None);
                    }
                }
                false
            }
            Proto::Mc(m) => {
                boundary_before = m.c2s.at_boundary();
                s2c_boundary = m.s2c.at_boundary();
                // Requests are classified as they are framed (borrowed from the segment); their
                // reply shapes go to a reused list beside `items`.
                let mut shapes = std::mem::take(&mut self.mc_shapes);
                let mut quiet = false;
                let res = m.c2s.push_requests(bytes, |r| {
                    quiet |= r.quiet;
                    shapes.push((r.reply, r.noreply));
                    items.push((None, self.classify_mc(r)));
                });
                if res.is_err() || quiet {
                    // Quiet meta commands suppress some replies: replies can no longer be
                    // matched to requests, so the connection passes through from here.
                    conn.broken = true;
                    self.counters.protocol_errors += 1;
                }
                let Proto::Mc(m) = &mut conn.proto else {
                    unreachable!()
                };
                let all_hits = all_hits(items);
                let answer = may_answer
                    && !conn.broken
                    && boundary_before
                    && m.c2s.at_boundary()
                    && s2c_boundary
                    && all_hits
                    && m.pending.is_empty()
                    && !conn.mig.server_fin;
                if !answer {
                    for ((_, cl), &(shape, noreply)) in items.drain(..).zip(shapes.iter()) {
                        let p = self.to_pending(cl);
                        let p = self.begin(p);
                        if noreply || shape == ReplyShape::None {
                            m.noreply.push(p);
                        } else {
                            let noreply_before = std::mem::take(&mut m.noreply);
                            m.pending.push_back(McPending {
                                shape,
                                pending: p,
                                noreply_before,
                            });
                        }
                    }
                }
                shapes.clear();
                self.mc_shapes = shapes;
                if !answer {
                    return false;
                }
                self.answer_concatenated(conn, items, from, end, pkt, meta, ctx);
                true
            }
            Proto::Redis(r) => {
                boundary_before = r.c2s.at_boundary();
                s2c_boundary = r.s2c.at_boundary();
                // Commands classified in place, as they are framed (no argument copies).
                let st = &mut r.st;
                let parsed = r.c2s.for_each_command(bytes, |args| {
                    let cl = self.classify_redis(args, st);
                    items.push((None, cl));
                });
                if parsed.is_err() {
                    conn.broken = true;
                    self.counters.protocol_errors += 1;
                }
                let Proto::Redis(r) = &mut conn.proto else {
                    unreachable!()
                };
                let all_hits = all_hits(items);
                let answer = may_answer
                    && !conn.broken
                    && boundary_before
                    && r.c2s.at_boundary()
                    && s2c_boundary
                    && all_hits
                    && r.pending.is_empty()
                    && !conn.mig.server_fin;
                if !answer {
                    for (_, cl) in items.drain(..) {
                        let p = self.to_pending(cl);
                        let p = self.begin(p);
                        r.pending.push_back(p);
                    }
                    return false;
                }
                self.answer_concatenated(conn, items, from, end, pkt, meta, ctx);
                true
            }
        }
    }

    /// Answer requests that all hit with their cached replies back to back (RESP, memcached:
    /// replies carry no request id, so they are simply concatenated in order).
    #[allow(clippy::too_many_arguments)]
    fn answer_concatenated(
        &mut self,
        conn: &mut Conn,
        items: &[(Option<i16>, Classified)],
        from: u64,
        end: u64,
        pkt: &Packet,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
    ) {
        let mut reply = conn.mig.take_reply_buffer();
        for (_, cl) in items {
            if let Classified::Read { hit: Some(b), .. } = cl {
                reply.extend_from_slice(&self.hit_bytes[b.clone()]);
            }
        }
        self.counters.hits += items.len() as u64;
        self.counters.migrated_request_bytes += end - from;
        self.counters.migrated_reply_bytes += reply.len() as u64;
        let i = conn.mig.answer(from, end, reply);
        self.send_reply(conn, i, pkt, meta, ctx);
    }

    fn to_pending(&mut self, cl: Classified) -> Pending {
        match cl {
            Classified::Read { item, shape, .. } => {
                self.counters.misses += 1;
                Pending::Read {
                    item,
                    shape,
                    token: self.cache.begin_read(),
                }
            }
            Classified::Pending(p) => p,
        }
    }

    fn from_server(&mut self, conn: &mut Conn, pkt: &mut Packet) -> Verdict {
        let L4::Tcp(h) = pkt.l4 else {
            unreachable!("checked by ingress")
        };
        let (_, ts) = read_options(tcp_opts(pkt));
        if let Some((v, _)) = ts {
            conn.mig.server_tsval = Some(v);
        }
        conn.mig.server_window = h.window as u16;
        let data_box = pkt.payload_bytes.take().unwrap_or_default();
        let verdict = self.from_server_payload(conn, pkt, &data_box, h);
        if pkt.payload_bytes.is_none() {
            pkt.payload_bytes = Some(data_box);
        }
        verdict
    }

    fn from_server_payload(
        &mut self,
        conn: &mut Conn,
        pkt: &mut Packet,
        data: &[u8],
        h: innet_wire::phv::TcpHeader,
    ) -> Verdict {
        let s0 = conn.mig.server_pos(h.seq);
        let s1 = s0 + data.len() as i64;
        let mapped_ack = if h.flags.has(TcpFlags::ACK) {
            let s = conn.mig.server_ack_pos(h.ack).max(0) as u64;
            let a = conn.mig.map_server_ack(s);
            conn.mig.last_ack_to_client = a;
            Some(a)
        } else {
            None
        };
        if h.flags.has(TcpFlags::RST) {
            conn.mig.reset = true;
        }
        if h.flags.has(TcpFlags::FIN) {
            conn.mig.server_fin = true;
        }
        if conn.mig.client_fin
            && conn.mig.server_fin
            && data.is_empty()
            && !h.flags.has(TcpFlags::FIN)
        {
            conn.closing_acks += 1;
        }
        if data.is_empty() {
            let seq = conn.mig.map_server_seq(s0.max(0) as u64);
            self.rewrite(pkt, seq, mapped_ack);
            return Verdict::Route;
        }
        let Some((a, b)) = conn.mig.plan_server(s0, s1) else {
            self.counters.out_of_order_dropped += 1;
            return Verdict::Drop;
        };
        if b > conn.mig.s_next {
            let new = &data[(conn.mig.s_next as i64 - s0) as usize..(b as i64 - s0) as usize];
            self.parse_server_bytes(conn, new);
            conn.mig.s_next = b;
        }
        let off = (a as i64 - s0) as usize;
        let len = (b - a) as usize;
        if off != 0 || len != data.len() {
            set_payload(pkt, &data[off..off + len]);
            if b as i64 != s1 {
                if let L4::Tcp(t) = &mut pkt.l4 {
                    t.flags = TcpFlags(t.flags.0 & !TcpFlags::FIN);
                }
            }
        }
        let seq = if conn.mig.is_stale_server_data(b) {
            conn.mig.stale_server_seq(b - a)
        } else {
            conn.mig.map_server_seq(a)
        };
        self.rewrite(pkt, seq, mapped_ack);
        Verdict::Route
    }

    fn parse_server_bytes(&mut self, conn: &mut Conn, bytes: &[u8]) {
        if conn.broken {
            return;
        }
        match &mut conn.proto {
            Proto::Cql(c) => {
                let mut frames = std::mem::take(&mut self.frames_scratch);
                let r = c.s2c.push_reusing(bytes, &mut frames, &mut self.spare_bufs);
                for f in frames.iter() {
                    if f.header.opcode == opcode::EVENT {
                        if let Ok(Some(change)) = cql::parse_event_schema_change(&f.body) {
                            self.schema_changed(&change);
                        }
                        continue;
                    }
                    if f.header.opcode == opcode::READY || f.header.opcode == opcode::AUTHENTICATE {
                        if c.s2c.framing() == Framing::Segmented {
                            c.c2s.set_segmented();
                        }
                        continue;
                    }
                    // Decode a RESULT only if a request waits for it or it may be a
                    // SetKeyspace (kind 3): answers to requests the switch answered itself
                    // (the capture replays them) cost no decoding.
                    // A read's answer is judged in place (`cql::rows_body_cacheable`, below):
                    // no decoding for it either.
                    let set_keyspace = f.body.get(..4) == Some(&3i32.to_be_bytes()[..]);
                    let wanted = set_keyspace
                        || matches!(
                            c.pending.get(&f.header.stream),
                            Some(p) if !matches!(p, Pending::Read { .. })
                        );
                    let result = if f.header.opcode == opcode::RESULT && wanted {
                        cql::parse_result(f.header.version, &f.body).ok()
                    } else {
                        None
                    };
                    if let Some(ResultMsg::SetKeyspace(ks)) = &result {
                        c.keyspace = Some(ks.clone());
                    }
                    let Some(p) = c.pending.remove(&f.header.stream) else {
                        continue;
                    };
                    let success = f.header.opcode == opcode::RESULT;
                    match (p, result) {
                        (
                            Pending::Prepare {
                                statement,
                                keyspace,
                            },
                            Some(ResultMsg::Prepared(pr)),
                        ) => {
                            self.learn_prepared(&pr, statement, keyspace);
                        }
                        (Pending::SchemaRead { kind, continued }, Some(ResultMsg::Rows(rows))) => {
                            self.learn_schema(kind, &rows, continued);
                        }
                        (p, Some(ResultMsg::SchemaChange(change))) => {
                            self.schema_changed(&change);
                            self.complete(p, true, None);
                        }
                        (p @ Pending::Read { .. }, None) if success => {
                            // Only a single-row Rows result in its canonical encoding is
                            // stored, checked in place (the same verdict as decoding and
                            // re-encoding it).
                            let cacheable =
                                f.header.flags == 0 && cql::rows_body_cacheable(&f.body);
                            self.complete(p, true, cacheable.then_some(f.body.as_slice()));
                        }
                        (p, _) => self.complete(p, success, None),
                    }
                }
                for f in frames.drain(..) {
                    self.give(f.body);
                }
                self.frames_scratch = frames;
                if r.is_err() {
                    conn.broken = true;
                    self.counters.protocol_errors += 1;
                }
            }
            Proto::Mc(m) => {
                let mut st = (&mut *self, &mut m.pending);
                let r = m.s2c.push_replies(
                    bytes,
                    &mut st,
                    |(_, pend)| pend.front().map(|e| e.shape),
                    |(sw, pend), reply, raw| {
                        let Some(e) = pend.pop_front() else {
                            return;
                        };
                        match e.pending {
                            p @ Pending::Read { .. } => {
                                // `get k` answers nothing (END) or k's one item.
                                let key_ok = match (&p, reply) {
                                    (
                                        Pending::Read { item, .. },
                                        memcache::Reply::Values {
                                            items: 1,
                                            first_key: Some(k),
                                            ..
                                        },
                                    ) => item.get(3..) == Some(k),
                                    (_, memcache::Reply::Values { items: 0, .. }) => true,
                                    _ => false,
                                };
                                sw.complete(p, key_ok, key_ok.then_some(raw));
                            }
                            p @ Pending::Write { .. } => {
                                let ok = reply == memcache::Reply::Stored;
                                sw.complete(p, ok, None);
                            }
                            p => sw.complete(p, false, None),
                        }
                        for w in e.noreply_before {
                            sw.complete(w, false, None);
                        }
                    },
                );
                if r.is_err() {
                    conn.broken = true;
                    self.counters.protocol_errors += 1;
                }
            }
            Proto::Redis(rc) => {
                // Replies read in place (no copies), each completing the oldest pending request.
                let pending = &mut rc.pending;
                let r = rc.s2c.for_each_reply(bytes, |reply, raw| {
                    let Some(p) = pending.pop_front() else {
                        return;
                    };
                    match p {
                        p @ Pending::Read { .. } => {
                            let ok = matches!(reply, ReplyRef::Bulk(_));
                            self.complete(p, ok, ok.then_some(raw));
                        }
                        p @ Pending::Write { .. } => {
                            let ok = matches!(reply, ReplyRef::Simple(s) if s == b"OK");
                            self.complete(p, ok, None);
                        }
                        p => self.complete(p, false, None),
                    }
                });
                if r.is_err() {
                    conn.broken = true;
                    self.counters.protocol_errors += 1;
                }
            }
        }
    }

    fn rewrite(&self, pkt: &mut Packet, seq: u32, ack: Option<u32>) {
        if let L4::Tcp(t) = &mut pkt.l4 {
            t.seq = seq;
            if let Some(a) = ack {
                t.ack = a;
            }
        }
    }

    /// A segment to the client, answering one of its packets (`Ctx::reply_tcp`: written as a
    /// frame at once on the real runtime), out of the port it came in by.
    #[allow(clippy::too_many_arguments)]
    fn send_segment(
        &self,
        conn: &Conn,
        from_client: &Packet,
        seq: u32,
        ack: u32,
        data: &[u8],
        psh: bool,
        port: u16,
        ctx: &mut Ctx<'_>,
    ) {
        let mut o = [1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0];
        let options: &[u8] = if conn.uses_timestamps {
            let tsval = conn.mig.server_tsval.unwrap_or(0);
            let tsecr = conn.mig.client_tsval.unwrap_or(0);
            o[4..8].copy_from_slice(&tsval.to_be_bytes());
            o[8..12].copy_from_slice(&tsecr.to_be_bytes());
            &o
        } else {
            &[]
        };
        ctx.reply_tcp(
            from_client,
            port,
            &TcpReply {
                seq,
                ack,
                flags: TcpFlags::ACK | if psh { TcpFlags::PSH } else { 0 },
                window: conn.mig.server_window,
                options,
                payload: data,
            },
        );
    }

    fn send_reply(
        &mut self,
        conn: &mut Conn,
        i: usize,
        pkt: &Packet,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
    ) {
        self.send_reply_from(conn, i, 0, pkt, meta, ctx)
    }

    fn send_reply_from(
        &mut self,
        conn: &mut Conn,
        i: usize,
        from: usize,
        pkt: &Packet,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
    ) {
        let ack = conn.mig.ack_for_client();
        conn.mig.last_ack_to_client = ack;
        let max = (conn.mig.client_mss as usize)
            .saturating_sub(if conn.uses_timestamps { 12 } else { 0 })
            .max(64);
        let (rep_c, len) = {
            let h = &conn.mig.hits[i];
            (h.rep_c, if h.reply_acked { 0 } else { h.reply.len() })
        };
        let mut a = from.min(len);
        if a == len {
            // The client holds the reply already: just acknowledge its retransmission.
            let seq = conn.mig.map_server_seq(conn.mig.s_next);
            self.send_segment(conn, pkt, seq, ack, &[], false, meta.ingress_port, ctx);
            return;
        }
        // Segments of at most `max` bytes (the same cut as `Migration::reply_segments_from`,
        // without building the list).
        while a < len {
            let b = (a + max).min(len);
            let seq = conn.mig.s2c_seq_at(rep_c + a as u64);
            let data = &conn.mig.hits[i].reply[a..b];
            self.send_segment(conn, pkt, seq, ack, data, b == len, meta.ingress_port, ctx);
            a = b;
        }
    }

    /// Once the client holds a reply, its request may be acknowledged: tell the client if the
    /// server will not (the ACK it is owed moved past what it was last sent).
    fn ack_client_if_due(
        &mut self,
        conn: &mut Conn,
        pkt: &Packet,
        meta: &Metadata,
        ctx: &mut Ctx<'_>,
    ) {
        let a = conn.mig.ack_for_client();
        if (a.wrapping_sub(conn.mig.last_ack_to_client) as i32) > 0 {
            conn.mig.last_ack_to_client = a;
            let seq = conn.mig.map_server_seq(conn.mig.s_next);
            self.send_segment(conn, pkt, seq, a, &[], false, meta.ingress_port, ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read_options;
    use innet_wire::tcp::{parse_options, TcpOption};
    use proptest::prelude::*;

    /// The in-place option scanner against the wire crate's parser (the oracle).
    fn oracle(opts: &[u8]) -> (Option<u16>, Option<(u32, u32)>) {
        let (mut mss, mut ts) = (None, None);
        if let Ok(list) = parse_options(opts) {
            for o in list {
                match o {
                    TcpOption::Mss(m) => mss = Some(m),
                    TcpOption::Timestamps { value, echo } => ts = Some((value, echo)),
                    _ => {}
                }
            }
        }
        (mss, ts)
    }

    proptest! {
        #[test]
        fn read_options_matches_wire_parser(
            opts in prop::collection::vec(
                prop_oneof![Just(0u8), Just(1), Just(2), Just(3), Just(4), Just(5), Just(8), Just(10), any::<u8>()],
                0..40,
            )
        ) {
            prop_assert_eq!(read_options(&opts), oracle(&opts));
        }

        /// The usual NOP, NOP, timestamps layout (read on a shortcut), and it cut or extended.
        #[test]
        fn timestamp_layout_matches_wire_parser(
            ts in prop::collection::vec(any::<u8>(), 8),
            tail in prop::collection::vec(any::<u8>(), 0..4),
            cut in 0usize..13,
        ) {
            let opts = [&[1u8, 1, 8, 10][..], &ts].concat();
            prop_assert_eq!(read_options(&opts), oracle(&opts));
            prop_assert_eq!(read_options(&opts[..cut]), oracle(&opts[..cut]));
            let longer = [&opts[..], &tail].concat();
            prop_assert_eq!(read_options(&longer), oracle(&longer));
        }
    }

    #[test]
    fn read_options_reads_mss_and_timestamps() {
        let opts = [2, 4, 5, 180, 1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9, 4, 2];
        assert_eq!(read_options(&opts), (Some(1460), Some((7, 9))));
        assert_eq!(read_options(&[8, 9, 0, 0, 0, 7, 0, 0, 0]), (None, None));
    }
}
