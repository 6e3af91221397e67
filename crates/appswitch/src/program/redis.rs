//! The Redis caching program: each connection's RESP reassemblers and state (MULTI, HELLO 3,
//! SELECT), the classification of commands (GET reads, SET/DEL/expiry writes), and the answer of
//! hits as the replies concatenated in order.

use std::collections::VecDeque;

use super::{AnswerGate, AppSwitch, Classified, ClientBytes, Conn, Pending, Proto};
use crate::cache::WriteToken;
use innet_wire::resp::{self, ReplyRef, RespReader};

pub(super) struct RedisConn {
    pub(super) c2s: RespReader,
    pub(super) s2c: RespReader,
    pub(super) pending: VecDeque<Pending>,
    pub(super) st: RedisState,
}

/// What earlier commands on a Redis connection changed about the next ones.
#[derive(Default)]
pub(super) struct RedisState {
    pub(super) in_multi: bool,
    pub(super) uncacheable: bool,
    /// RESP3 after `HELLO 3` (null replies differ: `_` instead of `$-1`).
    pub(super) resp3: bool,
}

impl AppSwitch {
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
            (b"GET", 2)
                if self.volatile_all
                    || !self.volatile.is_empty() && self.volatile.contains(&item(args[1])) =>
            {
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
                self.mark_key_volatile(&it);
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
                    self.mark_key_volatile(&item(&args[1]));
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
            // Commands that give a key an expiry time the switch cannot read off the command:
            // RENAME, RENAMENX and COPY carry the source's TTL over to the destination,
            // RESTORE may set one, hash-field expiry empties (so deletes) the key later. The
            // key they leave behind is volatile; they remain writes of unknown keys.
            (b"RENAME" | b"RENAMENX" | b"COPY", n) if n >= 3 => {
                self.mark_key_volatile(&item(args[2]));
                Classified::Pending(Pending::WriteAll)
            }
            (
                b"RESTORE" | b"HEXPIRE" | b"HPEXPIRE" | b"HEXPIREAT" | b"HPEXPIREAT" | b"HSETEX"
                | b"HGETEX",
                n,
            ) if n >= 2 => {
                self.mark_key_volatile(&item(args[1]));
                Classified::Pending(Pending::WriteAll)
            }
            // Scripts and functions may give any key an expiry time (and SWAPDB brings in
            // another database's keys, with theirs): nothing is cached again.
            (b"EVAL" | b"EVALSHA" | b"FCALL" | b"SWAPDB", _) => {
                self.mark_volatile_where(None);
                Classified::Pending(Pending::WriteAll)
            }
            _ => Classified::Pending(Pending::WriteAll),
        }
    }

    pub(super) fn redis_client_bytes(
        &mut self,
        conn: &mut Conn,
        seg: ClientBytes<'_, '_>,
        items: &mut Vec<(Option<i16>, Classified)>,
    ) -> bool {
        let Proto::Redis(r) = &mut conn.proto else {
            unreachable!("a Redis connection")
        };
        let boundary_before = r.c2s.at_boundary();
        let s2c_boundary = r.s2c.at_boundary();
        // Commands classified in place, as they are framed (no argument copies).
        let st = &mut r.st;
        let parsed = r.c2s.for_each_command(seg.bytes, |args| {
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
        let gate = AnswerGate {
            may_answer: seg.may_answer,
            c2s_boundary_before: boundary_before,
            c2s_boundary_after: r.c2s.at_boundary(),
            s2c_boundary,
            protocol_ok: r.pending.is_empty(),
        };
        let answer = gate.open(conn.broken, &conn.mig, items);
        if !answer {
            for (_, cl) in items.drain(..) {
                let p = self.to_pending(cl);
                let p = self.begin(p);
                r.pending.push_back(p);
            }
            return false;
        }
        self.answer_concatenated(conn, items, seg);
        true
    }

    pub(super) fn redis_server_bytes(&mut self, conn: &mut Conn, bytes: &[u8]) {
        let Proto::Redis(rc) = &mut conn.proto else {
            unreachable!("a Redis connection")
        };
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
