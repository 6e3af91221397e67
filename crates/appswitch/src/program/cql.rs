//! The CQL caching program: each connection's two frame reassemblers, the classification of
//! QUERY, EXECUTE, PREPARE and BATCH requests by statement and partition key, the answer of hits as
//! RESULT frames (v5 segments when negotiated), and what the server's answers teach (values,
//! prepared statements, schema).

use std::cell::Cell;
use std::rc::Rc;

use super::{AnswerGate, AppSwitch, Classified, ClientBytes, Conn, HashMap, Pending, Proto};
use crate::cache::WriteToken;
use crate::cql_schema::{schema_read, PartitionKey, SchemaRead};
use innet_wire::cql::compression::{self, Compression};
use innet_wire::cql::key::{self as cql_key, KeyType};
use innet_wire::cql::statement::{parse_statement, Statement, TableRef, Term};
use innet_wire::cql::{self, opcode, FrameReader, Framing, Request, ResultMsg};

/// What a prepared statement does, learned from PREPARE + RESULT Prepared.
#[derive(Debug, Clone)]
pub(super) struct PreparedInfo {
    pub(super) statement: Statement,
    pub(super) table: Option<(String, String)>,
    /// Bind index of the single partition-key column, when there is one.
    pub(super) pk: Option<usize>,
    /// The SELECT's "is this column the table's cacheable partition key, of which type" check
    /// and the schema generation it was made at (re-made when the schema knowledge changed).
    pub(super) pk_check: Cell<(u64, Option<KeyType>)>,
}

pub(super) struct CqlConn {
    pub(super) c2s: FrameReader,
    pub(super) s2c: FrameReader,
    pub(super) pending: HashMap<i16, Pending>,
    pub(super) keyspace: Option<String>,
    /// The server answered STARTUP with AUTHENTICATE: what a read returns depends on the user
    /// and on permissions at that moment (GRANT/REVOKE by anyone, roles, data masks), which the
    /// switch cannot see, so this connection's reads are neither answered nor learned.
    pub(super) authenticated: bool,
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

impl AppSwitch {
    fn qualify<'t>(t: &'t TableRef, conn_ks: Option<&'t str>) -> Option<(&'t str, &'t str)> {
        let ks = t.keyspace.as_deref().or(conn_ks)?;
        Some((ks, t.table.as_str()))
    }

    /// Classify a CQL request frame.
    fn classify_cql(
        &mut self,
        h: &cql::FrameHeader,
        body: &[u8],
        keyspace: Option<&str>,
        authenticated: bool,
    ) -> Classified {
        let other = Classified::Pending(Pending::Other);
        let cacheable_flags = !authenticated
            && h.flags
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
                text,
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
            self.mark_volatile_where(None);
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
                    None => self.mark_volatile_where(None),
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
                self.mark_volatile_where(None);
                return;
            }
        };
        for t in tables {
            match Self::qualify(t, ks) {
                Some(t) => self.mark_volatile_where(Some(t)),
                None => self.mark_volatile_where(None),
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
            self.mark_volatile_where(None);
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
            Statement::Use(_) => Classified::Pending(Pending::Use),
            Statement::OtherRead => Classified::Pending(Pending::Other),
        }
    }

    /// A write to a partition (its cache item) or, `None`, to partitions unknown. `with_ttl`:
    /// the written cells expire, so the key (or, key unknown, the whole table) is never cached
    /// again.
    fn write_key(&mut self, t: (&str, &str), item: Option<Vec<u8>>, with_ttl: bool) -> Classified {
        match item {
            Some(item) => {
                if with_ttl {
                    self.mark_key_volatile(&item);
                }
                Classified::Pending(Pending::Write {
                    items: vec![(item, WriteToken::placeholder())],
                    update: None,
                })
            }
            None => {
                if with_ttl {
                    self.mark_volatile_where(Some(t));
                }
                Classified::Pending(Pending::WriteAll)
            }
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

    /// A prepared id an earlier switch saw prepared (`state_file`): its statement is known
    /// (so an EXECUTE of it is a read, a write, a TTL write of a known table) but not the
    /// server's bind metadata, so no partition-key index: its reads are forwarded and its
    /// writes invalidate the whole table, until the driver prepares it again through this
    /// switch (then `learn_prepared` replaces it).
    pub(super) fn reload_prepared(&mut self, id: Vec<u8>, keyspace: Option<String>, text: &str) {
        let statement = parse_statement(text);
        let table = match &statement {
            Statement::Select { table, .. }
            | Statement::WriteByKey { table, .. }
            | Statement::Insert { table, .. }
            | Statement::WriteTable { table, .. } => Self::qualify(table, keyspace.as_deref())
                .map(|(k, t)| (k.to_string(), t.to_string())),
            _ => None,
        };
        self.prepared.insert(
            id,
            Rc::new(PreparedInfo {
                statement,
                table,
                pk: None,
                pk_check: Cell::new((u64::MAX, None)),
            }),
        );
    }

    pub(super) fn cql_client_bytes(
        &mut self,
        conn: &mut Conn,
        seg: ClientBytes<'_, '_>,
        items: &mut Vec<(Option<i16>, Classified)>,
        frames: &mut Vec<cql::Frame>,
    ) -> bool {
        let Proto::Cql(c) = &mut conn.proto else {
            unreachable!("a CQL connection")
        };
        let boundary_before = c.c2s.at_boundary();
        let s2c_boundary = c.s2c.at_boundary();
        let framing_ok = c.c2s.framing() == c.s2c.framing();
        if seg.from == 0 && asks_unsupported_version(seg.bytes) {
            // A connection opened in a version the switch does not speak: the drivers' version
            // negotiation (the Python driver tries DSE v2 and v1 first; Cassandra refuses them
            // and the driver reconnects a version lower). Passed through unread like any
            // unreadable connection (a server speaking that version would run what follows),
            // but not a parse failure.
            conn.broken = true;
            self.counters.unsupported_versions += 1;
        } else if c
            .c2s
            .push_reusing(seg.bytes, frames, &mut self.spare_bufs)
            .is_err()
        {
            conn.broken = true;
            self.counters.protocol_errors += 1;
        }
        let version = frames.first().map(|f| f.header.version).unwrap_or(4);
        for f in frames.iter().filter(|f| f.header.opcode == opcode::STARTUP) {
            // The compression asked for applies to both directions once the server
            // is READY; an unknown one leaves compressed bytes unreadable (broken).
            let c_name = compression::startup_compression(&f.body).ok().flatten();
            if let Some(alg) = c_name.as_deref().and_then(Compression::from_name) {
                c.c2s.set_compression(alg);
                c.s2c.set_compression(alg);
            }
        }
        // A USE not yet answered (sent earlier, or earlier in this segment) may change what an
        // unqualified table names: the keyspace is then unknown.
        let use_in_flight = c.pending.values().any(|p| matches!(p, Pending::Use));
        let authenticated = c.authenticated;
        let mut ks = if use_in_flight {
            None
        } else {
            c.keyspace.as_deref()
        };
        for f in frames.drain(..) {
            let cl = self.classify_cql(&f.header, &f.body, ks, authenticated);
            if matches!(cl, Classified::Pending(Pending::Use)) {
                ks = None;
            }
            items.push((Some(f.header.stream), cl));
            self.give(f.body);
        }
        let Proto::Cql(c) = &mut conn.proto else {
            unreachable!()
        };
        let gate = AnswerGate {
            may_answer: seg.may_answer,
            c2s_boundary_before: boundary_before,
            c2s_boundary_after: c.c2s.at_boundary(),
            s2c_boundary,
            protocol_ok: framing_ok,
        };
        if gate.open(conn.broken, &conn.mig, items) {
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
            self.counters.migrated_request_bytes += seg.end - seg.from;
            self.counters.migrated_reply_bytes += reply.len() as u64;
            let i = conn.mig.answer(seg.from, seg.end, reply);
            self.send_reply(conn, i, seg.pkt, seg.meta, seg.ctx);
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

    pub(super) fn cql_server_bytes(&mut self, conn: &mut Conn, bytes: &[u8]) {
        let Proto::Cql(c) = &mut conn.proto else {
            unreachable!("a CQL connection")
        };
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
                c.authenticated |= f.header.opcode == opcode::AUTHENTICATE;
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
                        text,
                    },
                    Some(ResultMsg::Prepared(pr)),
                ) => {
                    if self.state.is_some() && !self.prepared.contains_key(&pr.id) {
                        self.persist(crate::state::Record::Prepared {
                            id: pr.id.clone(),
                            keyspace: keyspace.clone(),
                            text,
                        });
                    }
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
                    let cacheable = f.header.flags == 0 && cql::rows_body_cacheable(&f.body);
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
}

/// The first bytes of a connection are a request opening it (OPTIONS or STARTUP) in a protocol
/// version other than 3-5 (v1/v2 have an 8-byte header with the opcode at byte 3, later
/// versions and DSE's a 9-byte one with it at byte 4).
fn asks_unsupported_version(first: &[u8]) -> bool {
    let Some(&v) = first.first() else {
        return false;
    };
    let opcode_at = if v < 3 { 3 } else { 4 };
    v & 0x80 == 0
        && !(3..=5).contains(&v)
        && first
            .get(opcode_at)
            .is_some_and(|&op| op == opcode::OPTIONS || op == opcode::STARTUP)
}
