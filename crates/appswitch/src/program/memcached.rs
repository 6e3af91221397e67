//! The memcached caching program (text protocol): each connection's request/reply framing and the
//! reply shape each request expects, `noreply` writes, the classification of retrieval, storage
//! and meta commands, and the answer of hits as the replies concatenated in order.

use std::collections::VecDeque;

use super::{AnswerGate, AppSwitch, Classified, ClientBytes, Conn, Pending, Proto};
use crate::cache::WriteToken;
use innet_wire::memcache::{self, McReader, ReplyShape};

/// A memcached request waiting for its reply, and the `noreply` writes sent before it (the
/// server handles a connection's requests in order, so this reply shows they were applied).
pub(super) struct McPending {
    pub(super) shape: ReplyShape,
    pub(super) pending: Pending,
    pub(super) noreply_before: Vec<Pending>,
}

pub(super) struct McConn {
    pub(super) c2s: McReader,
    pub(super) s2c: McReader,
    pub(super) pending: VecDeque<McPending>,
    /// `noreply` writes not yet followed by a request that has a reply.
    pub(super) noreply: Vec<Pending>,
}

impl AppSwitch {
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
                    self.mark_volatile_where(None);
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
                    self.mark_key_volatile(&it);
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

    pub(super) fn mc_client_bytes(
        &mut self,
        conn: &mut Conn,
        seg: ClientBytes<'_, '_>,
        items: &mut Vec<(Option<i16>, Classified)>,
    ) -> bool {
        let Proto::Mc(m) = &mut conn.proto else {
            unreachable!("a memcached connection")
        };
        let boundary_before = m.c2s.at_boundary();
        let s2c_boundary = m.s2c.at_boundary();
        // Requests are classified as they are framed (borrowed from the segment); their
        // reply shapes go to a reused list beside `items`.
        let mut shapes = std::mem::take(&mut self.mc_shapes);
        let mut quiet = false;
        let res = m.c2s.push_requests(seg.bytes, |r| {
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
        let gate = AnswerGate {
            may_answer: seg.may_answer,
            c2s_boundary_before: boundary_before,
            c2s_boundary_after: m.c2s.at_boundary(),
            s2c_boundary,
            protocol_ok: m.pending.is_empty(),
        };
        let answer = gate.open(conn.broken, &conn.mig, items);
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
        self.answer_concatenated(conn, items, seg);
        true
    }

    pub(super) fn mc_server_bytes(&mut self, conn: &mut Conn, bytes: &[u8]) {
        let Proto::Mc(m) = &mut conn.proto else {
            unreachable!("a memcached connection")
        };
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
}
