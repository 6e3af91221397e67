//! The application switch as a data-plane [`Program`] on real packets: tracks each TCP
//! connection to the server port, parses the key-value protocol in both directions (CQL, RESP
//! or memcached's text protocol), answers reads the cache holds (migration), forwards the rest with rewritten sequence
//! numbers (return migration), and learns values from the server's answers.
//!
//! This module is the part every protocol shares: connection tracking, the TCP side of
//! migration (sequence mapping, replies to the client, retransmissions), and the cache
//! bookkeeping of pending requests. Each protocol's caching program (framing its two byte
//! streams, classifying requests, answering hits, completing pending requests from replies) is
//! a submodule: [`cql`], [`redis`], [`memcached`]; the byte formats themselves are
//! `innet_wire::{cql, resp, memcache}`.

mod cql;
mod memcached;
mod redis;

use std::collections::VecDeque;
use std::rc::Rc;

/// The program's maps are looked up on every packet: a fast (non-DoS-resistant but seeded)
/// hasher instead of SipHash.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use innet_switch::program::TcpReply;
use innet_switch::{Ctx, Metadata, Program, Verdict};
use innet_wire::cql::statement::Statement;
use innet_wire::cql::{Frame as CqlFrame, FrameReader};
use innet_wire::memcache::{McReader, ReplyShape};
use innet_wire::phv::edit::{set_payload, set_tcp_options};
use innet_wire::tcp::{iter_options, TcpOptionRef};
use innet_wire::phv::{Packet, TcpFlags, L4};
use innet_wire::resp::RespReader;

use self::cql::{CqlConn, PreparedInfo};
use crate::cache::{Cache, ReadToken, WriteToken};
use crate::cql_schema::{Schema, SchemaRead};
use crate::migration::Migration;
use crate::state::Record;
use memcached::McConn;
use redis::{RedisConn, RedisState};

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
    /// CQL connections whose first frame asked for a protocol version other than 3-5 (the
    /// drivers' version negotiation): passed through like the above, not counted there.
    pub unsupported_versions: u64,
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
        /// The statement's text, recorded with its id in the state file.
        text: String,
    },
    /// A read of `system_schema.columns`, `.tables` or `.views` (drivers read them at
    /// connect): its rows teach the schema (`cql_schema`). `continued`: a later page (its first
    /// table may have started on the page before).
    SchemaRead {
        kind: SchemaRead,
        continued: bool,
    },
    /// A CQL `USE`: until it is answered, the connection's keyspace is unknown (reads that lean
    /// on it are neither answered nor learned, such writes flush).
    Use,
    Other,
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

/// New client bytes, [from, end) of the client's stream, from one segment, and what answering
/// them needs (the packet answered, its ingress port, the externs): what each protocol's
/// `*_client_bytes` reads.
struct ClientBytes<'a, 'c> {
    bytes: &'a [u8],
    /// The segment carries only new bytes and no FIN (so a hit may be answered in its place).
    may_answer: bool,
    from: u64,
    end: u64,
    pkt: &'a Packet,
    meta: &'a Metadata,
    ctx: &'a mut Ctx<'c>,
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
    /// Where new volatile facts and prepared ids are recorded before the write that taught
    /// them is forwarded (`--set state_file`, issue 36; `crate::state`).
    state: Option<crate::state::StateFile>,
    /// Reused per-packet list of memcached requests' reply shapes (and `noreply`).
    mc_shapes: Vec<(ReplyShape, bool)>,
    /// Reused per-packet lists of parsed requests and CQL frames.
    items_scratch: Vec<(Option<i16>, Classified)>,
    frames_scratch: Vec<CqlFrame>,
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
            state: None,
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

    /// Use `path` as the switch's state file: what earlier switches recorded there is known
    /// from now on (volatile keys and tables, prepared ids), and new facts are recorded there.
    /// Call before the first packet.
    pub fn use_state_file(&mut self, path: &std::path::Path) -> Result<(), String> {
        let protocol = match self.config.protocol {
            Protocol::Cql => "cql",
            Protocol::Redis => "redis",
            Protocol::Memcached => "memcached",
        };
        let (file, records) = crate::state::StateFile::open(path, protocol)?;
        for r in records {
            match r {
                Record::Key(k) => {
                    self.volatile.insert(k);
                }
                Record::Table(ks, t) => {
                    self.schema.mark_volatile(Some((&ks, &t)));
                }
                Record::All => {
                    self.volatile_all = true;
                    self.schema.mark_volatile(None);
                }
                Record::Prepared { id, keyspace, text } => {
                    self.reload_prepared(id, keyspace, &text)
                }
            }
        }
        self.state = Some(file);
        Ok(())
    }

    /// Record `r` in the state file (if there is one) before the request that taught it is
    /// forwarded. A switch that cannot record it must not forward that write (a later switch
    /// would not know the key expires), and it cannot take back bytes it has parsed: it stops,
    /// dropping the packet; the clients' connections are reset by the next switch.
    fn persist(&mut self, r: Record) {
        if let Some(f) = &mut self.state {
            if let Err(e) = f.append(&r) {
                eprintln!("appswitch: {e}; stopping rather than forward a write it cannot record");
                std::process::exit(70);
            }
        }
    }

    /// `item` was given an expiry time: never cached again, recorded durably when new.
    fn mark_key_volatile(&mut self, item: &[u8]) {
        if !self.volatile.contains(item) {
            self.volatile.insert(item.to_vec());
            self.persist(Record::Key(item.to_vec()));
        }
    }

    /// Expiry times were set where the switch cannot place them (for CQL: `t`'s cells, or with
    /// `None` any table's; memcached: a delayed `flush_all`).
    fn mark_volatile_where(&mut self, t: Option<(&str, &str)>) {
        match t {
            Some((ks, tb)) => {
                if self.schema.mark_volatile(Some((ks, tb))) {
                    self.persist(Record::Table(ks.to_string(), tb.to_string()));
                }
            }
            None => {
                let new = !self.volatile_all | self.schema.mark_volatile(None);
                self.volatile_all = true;
                if new {
                    self.persist(Record::All);
                }
            }
        }
    }
}

/// Replace SACK-permitted (kind 4) by two NOPs: the switch does not translate SACK blocks.
/// Walks past options whose length does not suit their kind (as a receiver would); stops at a
/// framing error, leaving the rest as it was.
pub fn strip_sack_permitted(opts: &[u8]) -> Vec<u8> {
    let mut o = opts.to_vec();
    for opt in iter_options(opts) {
        let Ok(opt) = opt else { break };
        if opt.kind == 4 && opt.data.is_empty() {
            o[opt.offset..opt.offset + 2].copy_from_slice(&[1, 1]);
        }
    }
    o
}

/// (MSS, (TSval, TSecr)) from raw options; like `innet_wire`'s parser, a malformed option list
/// yields nothing at all. Reads the bytes in place (`iter_options`: no option list is built,
/// this runs on every packet).
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
    let (mut mss, mut ts) = (None, None);
    for opt in iter_options(opts) {
        match opt.and_then(|o| o.get()) {
            Ok(TcpOptionRef::Mss(m)) => mss = Some(m),
            Ok(TcpOptionRef::Timestamps { value, echo }) => ts = Some((value, echo)),
            Ok(_) => {}
            Err(_) => return (None, None),
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

/// Requests were parsed and every one is a cache hit (so the switch can answer them all).
fn all_hits(items: &[(Option<i16>, Classified)]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|(_, c)| matches!(c, Classified::Read { hit: Some(_), .. }))
}

/// What each protocol reads from its connection state around one client segment, for the one
/// rule that decides whether the switch may answer the segment in the server's place.
struct AnswerGate {
    /// The segment carries only new bytes and no FIN (`ClientBytes::may_answer`).
    may_answer: bool,
    /// The client's stream was at a request boundary before the segment and after it: the
    /// segment holds whole requests only.
    c2s_boundary_before: bool,
    c2s_boundary_after: bool,
    /// The server's stream is at a reply boundary: no reply is half sent, so ours cannot
    /// interleave with one.
    s2c_boundary: bool,
    /// The protocol's own condition. RESP and memcached match replies to requests by order, so
    /// nothing may be pending at the server; CQL matches by stream id, but both directions
    /// must be framed alike (a v5 framing switch in flight makes our reply unreadable).
    protocol_ok: bool,
}

impl AnswerGate {
    /// The switch answers a segment only when every request in it hits, the connection is
    /// readable, the segment is whole requests that no half-sent reply or earlier request can
    /// be reordered with, and the server has not closed its side (it would not answer then).
    /// (`broken` and `mig` are the connection's: passed apart so that the protocol's state
    /// may stay borrowed.)
    fn open(&self, broken: bool, mig: &Migration, items: &[(Option<i16>, Classified)]) -> bool {
        self.may_answer
            && !broken
            && self.c2s_boundary_before
            && self.c2s_boundary_after
            && self.s2c_boundary
            && self.protocol_ok
            && all_hits(items)
            && !mig.server_fin
    }
}

impl AppSwitch {
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
            Pending::Prepare { .. }
            | Pending::SchemaRead { .. }
            | Pending::Use
            | Pending::Other => {}
        }
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
                            authenticated: false,
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
        let seg = ClientBytes {
            bytes,
            may_answer,
            from,
            end,
            pkt,
            meta,
            ctx,
        };
        let answered = self.parse_client_bytes_into(conn, seg, &mut items, &mut frames);
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

    fn parse_client_bytes_into(
        &mut self,
        conn: &mut Conn,
        seg: ClientBytes<'_, '_>,
        items: &mut Vec<(Option<i16>, Classified)>,
        frames: &mut Vec<CqlFrame>,
    ) -> bool {
        match &mut conn.proto {
            Proto::Cql(_) => self.cql_client_bytes(conn, seg, items, frames),
            Proto::Mc(_) => self.mc_client_bytes(conn, seg, items),
            Proto::Redis(_) => self.redis_client_bytes(conn, seg, items),
        }
    }

    /// Answer requests that all hit with their cached replies back to back (RESP, memcached:
    /// replies carry no request id, so they are simply concatenated in order).
    fn answer_concatenated(
        &mut self,
        conn: &mut Conn,
        items: &[(Option<i16>, Classified)],
        seg: ClientBytes<'_, '_>,
    ) {
        let mut reply = conn.mig.take_reply_buffer();
        for (_, cl) in items {
            if let Classified::Read { hit: Some(b), .. } = cl {
                reply.extend_from_slice(&self.hit_bytes[b.clone()]);
            }
        }
        self.counters.hits += items.len() as u64;
        self.counters.migrated_request_bytes += seg.end - seg.from;
        self.counters.migrated_reply_bytes += reply.len() as u64;
        let i = conn.mig.answer(seg.from, seg.end, reply);
        self.send_reply(conn, i, seg.pkt, seg.meta, seg.ctx);
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
            Proto::Cql(_) => self.cql_server_bytes(conn, bytes),
            Proto::Mc(_) => self.mc_server_bytes(conn, bytes),
            Proto::Redis(_) => self.redis_server_bytes(conn, bytes),
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
    use super::{read_options, strip_sack_permitted};
    use innet_wire::tcp::{parse_options, TcpOption};
    use proptest::prelude::*;

    /// `read_options` (its shortcut and the borrowed walk) against the owned parser (the oracle).
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
    fn strip_sack_permitted_nops_it_where_it_is() {
        // Linux's SYN: MSS, SACK permitted, timestamps, NOP, window scale.
        let syn = [2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 7, 0, 0, 0, 0, 1, 3, 3, 7];
        let mut want = syn;
        want[4..6].copy_from_slice(&[1, 1]);
        assert_eq!(strip_sack_permitted(&syn), want);
        // Past an option whose length does not suit its kind (a receiver walks past it too)...
        assert_eq!(strip_sack_permitted(&[2, 3, 0, 4, 2]), [2, 3, 0, 1, 1]);
        // ...but not past a framing error, nor past EOL; SACK blocks (kind 5) stay.
        assert_eq!(strip_sack_permitted(&[9, 1, 4, 2]), [9, 1, 4, 2]);
        assert_eq!(strip_sack_permitted(&[0, 4, 2]), [0, 4, 2]);
        assert_eq!(strip_sack_permitted(&[5, 10, 0, 0, 0, 1, 0, 0, 0, 2]), [5, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
    }

    #[test]
    fn read_options_reads_mss_and_timestamps() {
        let opts = [2, 4, 5, 180, 1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9, 4, 2];
        assert_eq!(read_options(&opts), (Some(1460), Some((7, 9))));
        assert_eq!(read_options(&[8, 9, 0, 0, 0, 7, 0, 0, 0]), (None, None));
    }
}
