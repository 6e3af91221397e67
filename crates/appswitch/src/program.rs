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
use crate::cql::{self, opcode, FrameReader, Framing, Request, ResultMsg};
use crate::cql_statement::{parse_statement, KeyValue, Statement, TableRef, Term};
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
    /// Packets not on a tracked connection (other ports, non-TCP, connections seen mid-way).
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
    /// A read of `system_schema.columns` (drivers read it at connect): its rows teach the
    /// partition keys of tables. `continued`: a later page (its first table may have started on
    /// the page before).
    SchemaColumns {
        continued: bool,
    },
    Other,
}

/// What a prepared statement does, learned from PREPARE + RESULT Prepared.
#[derive(Debug, Clone)]
struct PreparedInfo {
    statement: Statement,
    table: Option<(String, String)>,
    /// Bind index of the single partition-key column and its type, when there is one.
    pk: Option<(usize, cql::CqlType, String)>,
    /// The SELECT's "is this column the table's partition key" check and the `pk_generation`
    /// it was made at (re-made when the schema knowledge changed).
    pk_check: Cell<(u64, bool)>,
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
    broken: bool,
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
    /// Partition-key column of tables (keyspace, table) with a single-column key, learned from
    /// prepared statements' metadata; `None` = compound key (never cached by key).
    partition_keys: HashMap<String, HashMap<String, Option<String>>>,
    /// Bumped whenever `partition_keys` changes: prepared statements remember their
    /// partition-key check with the generation it was made at.
    pk_generation: u64,
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
            partition_keys: HashMap::default(),
            pk_generation: 1,
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

fn cql_item(mut v: Vec<u8>, ks: &str, table: &str, key: &KeyValue) -> Vec<u8> {
    v.clear();
    v.extend_from_slice(b"cql:");
    v.extend_from_slice(ks.as_bytes());
    v.push(b'.');
    v.extend_from_slice(table.as_bytes());
    v.push(0);
    key.encode(&mut v);
    v
}

/// A bound value of a known CQL type as a cache key.
/// Requests were parsed and every one is a cache hit (so the switch can answer them all).
fn all_hits(items: &[(Option<i16>, Classified)]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|(_, c)| matches!(c, Classified::Read { hit: Some(_), .. }))
}

/// A QUERY that reads `system_schema.columns` (any case; with or without a WHERE clause). Only
/// a SELECT: a write that merely mentions the name (in a string) stays a write.
fn is_schema_columns_query(text: &str) -> bool {
    const NEEDLE: &[u8] = b"system_schema.columns";
    let t = text.trim_start().as_bytes();
    t.len() >= NEEDLE.len()
        && t[..6].eq_ignore_ascii_case(b"select")
        && text
            .as_bytes()
            .windows(NEEDLE.len())
            .any(|w| w.eq_ignore_ascii_case(NEEDLE))
}

/// The `volatile` entry that stands for a whole CQL table (a TTL write whose key is unknown).
fn cql_table_marker(t: (&str, &str)) -> Vec<u8> {
    format!("cql-table:{}.{}", t.0, t.1).into_bytes()
}

fn key_from_bound(typ: &cql::CqlType, b: &[u8]) -> Option<KeyValue> {
    use cql::type_id::*;
    let cql::CqlType::Native(id) = typ else {
        return None;
    };
    match *id {
        INT if b.len() == 4 => Some(KeyValue::Int(i32::from_be_bytes(b.try_into().ok()?) as i64)),
        BIGINT | COUNTER if b.len() == 8 => {
            Some(KeyValue::Int(i64::from_be_bytes(b.try_into().ok()?)))
        }
        SMALLINT if b.len() == 2 => {
            Some(KeyValue::Int(i16::from_be_bytes(b.try_into().ok()?) as i64))
        }
        TINYINT if b.len() == 1 => Some(KeyValue::Int(b[0] as i8 as i64)),
        ASCII | VARCHAR => Some(KeyValue::Text(String::from_utf8(b.to_vec()).ok()?)),
        BLOB | UUID | TIMEUUID => Some(KeyValue::Bytes(b.to_vec())),
        _ => None,
    }
}

impl AppSwitch {
    fn qualify<'t>(t: &'t TableRef, conn_ks: Option<&'t str>) -> Option<(&'t str, &'t str)> {
        let ks = t.keyspace.as_deref().or(conn_ks)?;
        Some((ks, t.table.as_str()))
    }

    fn pk_of(&self, (ks, table): (&str, &str)) -> Option<&str> {
        self.partition_keys
            .get(ks)
            .and_then(|t| t.get(table))
            .and_then(|c| c.as_deref())
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
        let Ok(req) = cql::parse_request(h, body) else {
            return Classified::Pending(Pending::WriteAll);
        };
        match req {
            Request::Query { text, params } if is_schema_columns_query(&text) => {
                Classified::Pending(Pending::SchemaColumns {
                    continued: params.paging_state.is_some(),
                })
            }
            Request::Query { text, params } => {
                let ks = params.keyspace.as_deref().or(keyspace);
                let fixed = self.fixed_layout.as_ref().and_then(|f| f.read(&text));
                let st = match fixed {
                    Some(r) => {
                        // No lexing: the column is taken to be the partition key (the assumption).
                        let column = Self::qualify(&r.table, ks)
                            .and_then(|t| self.pk_of(t).map(str::to_string))
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
                self.classify_statement(
                    &st,
                    ks,
                    |term| match term {
                        Term::Literal(k) => Some(k.clone()),
                        _ => None,
                    },
                    cacheable_flags && params.paging_state.is_none(),
                    |s: &mut Vec<u8>| {
                        s.extend_from_slice(&[
                            b'Q',
                            h.version,
                            (params.flags & cql::query_flags::SKIP_METADATA) as u8,
                        ]);
                        if let Statement::Select { shape, .. } = &st {
                            s.extend_from_slice(shape.as_bytes());
                        }
                    },
                    None,
                )
            }
            // Handled above, in place.
            Request::Execute { .. } => self.classify_execute(h, body, cacheable_flags),
            Request::Prepare { text, keyspace: ks } => Classified::Pending(Pending::Prepare {
                statement: parse_statement(&text),
                keyspace: ks.or_else(|| keyspace.map(str::to_string)),
            }),
            Request::Batch => Classified::Pending(Pending::WriteAll),
            Request::Other(op) => match op {
                opcode::STARTUP | opcode::OPTIONS | opcode::REGISTER | opcode::AUTH_RESPONSE => {
                    other
                }
                _ => Classified::Pending(Pending::WriteAll),
            },
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
            // Unknown prepared id (prepared before we saw the connection): may write.
            return Classified::Pending(Pending::WriteAll);
        };
        let pk = &info.pk;
        let want = pk.as_ref().map(|p| p.0);
        let Ok(ex) = cql::parse_execute_ref(h.version, body, want) else {
            return Classified::Pending(Pending::WriteAll);
        };
        let st = &info.statement;
        let ks = info.table.as_ref().map(|t| t.0.as_str());
        self.classify_statement(
            st,
            ks,
            |term| {
                let idx = match term {
                    Term::Marker(i) => *i,
                    _ => return None,
                };
                let (pk_idx, typ, _) = pk.as_ref()?;
                if *pk_idx != idx {
                    return None;
                }
                match ex.value? {
                    cql::ValueRef::Bytes(b) => key_from_bound(typ, b),
                    _ => None,
                }
            },
            cacheable_flags && !ex.has_paging_state && !ex.has_names,
            |s: &mut Vec<u8>| {
                let rmid = ex.result_metadata_id.unwrap_or(&[]);
                s.extend_from_slice(&[
                    b'E',
                    h.version,
                    (ex.flags & cql::query_flags::SKIP_METADATA) as u8,
                ]);
                s.extend_from_slice(ex.id);
                s.push(0);
                s.extend_from_slice(rmid);
            },
            Some(&info.pk_check),
        )
    }

    fn classify_statement(
        &mut self,
        st: &Statement,
        ks: Option<&str>,
        key_of: impl Fn(&Term) -> Option<KeyValue>,
        cacheable: bool,
        shape: impl FnOnce(&mut Vec<u8>),
        pk_check: Option<&Cell<(u64, bool)>>,
    ) -> Classified {
        match st {
            Statement::Select {
                table, column, key, ..
            } => {
                let Some(t) = Self::qualify(table, ks) else {
                    return Classified::Pending(Pending::Other);
                };
                // A prepared statement's table and column never change: its check is
                // remembered until the partition keys known change.
                let pk_ok = match pk_check.map(Cell::get) {
                    Some((g, ok)) if g == self.pk_generation => ok,
                    _ => {
                        let ok =
                            !t.0.starts_with("system") && self.pk_of(t) == Some(column.as_str());
                        if let Some(c) = pk_check {
                            c.set((self.pk_generation, ok));
                        }
                        ok
                    }
                };
                if !pk_ok || !cacheable {
                    return Classified::Pending(Pending::Other);
                }
                let Some(k) = key_of(key) else {
                    return Classified::Pending(Pending::Other);
                };
                let item = cql_item(self.buf(), t.0, t.1, &k);
                if !self.volatile.is_empty()
                    && (self.volatile.contains(&item)
                        || self.volatile.contains(&cql_table_marker(t)))
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
                    return Classified::Pending(Pending::WriteAll);
                };
                let key = self.pk_of(t).and_then(|pk| {
                    let i = columns.iter().position(|c| c == pk)?;
                    key_of(values[i].as_ref()?)
                });
                self.write_key(t, key, *with_ttl)
            }
            Statement::WriteByKey {
                table,
                column,
                key,
                with_ttl,
                ..
            } => {
                let Some(t) = Self::qualify(table, ks) else {
                    return Classified::Pending(Pending::WriteAll);
                };
                let key = if self.pk_of(t) == Some(column.as_str()) {
                    key_of(key)
                } else {
                    None
                };
                self.write_key(t, key, *with_ttl)
            }
            Statement::WriteTable(_) | Statement::Other => Classified::Pending(Pending::WriteAll),
            Statement::Use(_) | Statement::OtherRead => Classified::Pending(Pending::Other),
        }
    }

    /// A write to a key (or, `None`, to keys unknown). `with_ttl`: the written cells expire,
    /// so the key (or, key unknown, the whole table) is never cached again.
    fn write_key(&mut self, t: (&str, &str), key: Option<KeyValue>, with_ttl: bool) -> Classified {
        match key {
            Some(k) => {
                let item = cql_item(self.buf(), t.0, t.1, &k);
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
                    self.volatile.insert(cql_table_marker(t));
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
            Pending::Prepare { .. } | Pending::SchemaColumns { .. } | Pending::Other => {}
        }
    }

    /// Learn tables' partition keys from rows of `system_schema.columns` (keyspace_name,
    /// table_name, column_name, kind, position). A table is learned only when all its rows are
    /// in this page: not the first table of a continued page, not the last of a page with more
    /// pages to come.
    fn learn_schema_columns(&mut self, rows: &cql::Rows, continued: bool) {
        let col = |name: &str| rows.metadata.columns.iter().position(|c| c.name == name);
        let (Some(ks_i), Some(tb_i), Some(col_i), Some(kind_i), Some(pos_i)) = (
            col("keyspace_name"),
            col("table_name"),
            col("column_name"),
            col("kind"),
            col("position"),
        ) else {
            return;
        };
        let text = |row: &[Option<Vec<u8>>], i: usize| {
            row.get(i)
                .and_then(|v| v.as_deref())
                .and_then(|b| std::str::from_utf8(b).ok())
                .map(str::to_string)
        };
        // (table, partition-key columns with their positions), in row order.
        let mut tables: Vec<((String, String), Vec<(i32, String)>)> = Vec::new();
        for row in &rows.rows {
            let (Some(ks), Some(tb), Some(name), Some(kind)) = (
                text(row, ks_i),
                text(row, tb_i),
                text(row, col_i),
                text(row, kind_i),
            ) else {
                return;
            };
            let t = (ks, tb);
            if tables.last().map(|(last, _)| last) != Some(&t) {
                tables.push((t, Vec::new()));
            }
            if kind == "partition_key" {
                let pos = row
                    .get(pos_i)
                    .and_then(|v| v.as_deref())
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(i32::from_be_bytes)
                    .unwrap_or(-1);
                if let Some((_, pks)) = tables.last_mut() {
                    pks.push((pos, name));
                }
            }
        }
        let more = rows.metadata.flags & cql::rows_flags::HAS_MORE_PAGES != 0;
        let n = tables.len();
        for (i, (t, pks)) in tables.into_iter().enumerate() {
            if (continued && i == 0) || (more && i + 1 == n) {
                continue;
            }
            match pks.as_slice() {
                [] => {}
                [(_, only)] => {
                    self.pk_generation += 1;
                    self.partition_keys
                        .entry(t.0)
                        .or_default()
                        .insert(t.1, Some(only.clone()));
                }
                _ => {
                    self.pk_generation += 1;
                    self.partition_keys
                        .entry(t.0)
                        .or_default()
                        .insert(t.1, None);
                }
            }
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
            match p.pk_indexes.as_slice() {
                [i] => {
                    if let Some(col) = p.bind_columns.get(*i as usize) {
                        self.pk_generation += 1;
                        self.partition_keys
                            .entry(t.0.clone())
                            .or_default()
                            .insert(t.1.clone(), Some(col.name.clone()));
                        pk = Some((*i as usize, col.typ.clone(), col.name.clone()));
                    }
                }
                [] => {}
                _ => {
                    self.pk_generation += 1;
                    self.partition_keys
                        .entry(t.0.clone())
                        .or_default()
                        .insert(t.1.clone(), None);
                }
            }
        }
        self.prepared.insert(
            p.id.clone(),
            Rc::new(PreparedInfo {
                statement,
                table,
                pk,
                pk_check: Cell::new((0, false)),
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
            self.counters.bypassed += 1;
            return Verdict::Route;
        };
        let verdict = match dir {
            Dir::ToServer => self.from_client(conn, pkt, meta, ctx),
            Dir::ToClient => self.from_server(conn, pkt),
        };
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
    /// Free a connection's state; writes it had in flight end (their outcome is unknown).
    fn close(&mut self, conn: Conn) {
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
                        cql::encode_frames_v5(&frames_bytes, &mut v);
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
                        (Pending::SchemaColumns { continued }, Some(ResultMsg::Rows(rows))) => {
                            self.learn_schema_columns(&rows, continued);
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
