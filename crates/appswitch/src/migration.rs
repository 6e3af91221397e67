//! TCP migration for one connection (the paper's §3.2 and §4.3): when the switch answers a
//! request itself, the request's bytes (α) never reach the server and the reply's bytes (β)
//! never come from it. This module keeps, per answered request, where those bytes sit in each
//! direction's sequence space, and maps every sequence and acknowledgement number between the
//! client's view and the server's view. The maps are position-dependent (not one running
//! offset), so retransmissions of bytes from before a hit are rewritten correctly. It also holds
//! the reply bytes until the client acknowledges them (a retransmitted request is answered again
//! with the same bytes), suppresses the duplicate ACKs hits would cause, and tracks FIN/RST.
//!
//! Positions are byte offsets from the first data byte of each direction (u64, unwrapped from
//! the 32-bit sequence numbers around the current position).

/// Hits kept per connection before the oldest are folded regardless of acknowledgements.
use std::collections::VecDeque;

pub const MAX_OPEN_HITS: usize = 64;
/// Reply buffers of folded hits kept for reuse, per connection.
const SPARE_REPLY_BUFFERS: usize = 8;

/// One request answered by the switch and its reply.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Request bytes in the client→server stream, client positions [req_c, req_c + req_len).
    pub req_c: u64,
    pub req_len: u64,
    /// Where the request would have been in the server's view of that stream.
    pub req_s: u64,
    /// Reply bytes inserted in the server→client stream before server position `rep_s`,
    /// occupying client positions [rep_c, rep_c + reply.len()).
    pub rep_s: u64,
    pub rep_c: u64,
    pub rep_len: u64,
    /// The reply, kept until the client acknowledges all of it.
    pub reply: Vec<u8>,
    pub reply_acked: bool,
    /// α and β of this hit and every hit before it, folded ones included (running sums, so a
    /// position maps by a binary search instead of a walk over the open hits).
    pub alpha_through: u64,
    pub beta_through: u64,
}

/// Per-connection migration state.
#[derive(Debug, Clone)]
pub struct Migration {
    /// Client and server initial sequence numbers (ISN); data starts at ISN + 1.
    pub c_isn: u32,
    pub s_isn: u32,
    /// Next client position the parser expects (everything before was seen in order).
    pub c_next: u64,
    /// Next server position the parser expects.
    pub s_next: u64,
    /// Hits in order (both streams' positions grow with the list).
    pub hits: VecDeque<Hit>,
    /// α and β of hits already folded (acknowledged on both sides).
    base_alpha: u64,
    base_beta: u64,
    /// Client positions below this were folded: data ending before it is stale.
    folded_c: u64,
    /// Server positions (server→client stream) below this were folded.
    folded_s: u64,
    /// Highest client→server server position the server acknowledged.
    pub server_acked_s: u64,
    /// Highest server→client client position the client acknowledged.
    pub client_acked_c: u64,
    /// Last ACK number (server view) and window forwarded to the server, and the client's raw
    /// ACK number on that segment: for duplicate-ACK suppression.
    last_fwd_ack: Option<(u32, u16, u32)>,
    /// Last ACK number sent to the client (by forwarding or by the switch).
    pub last_ack_to_client: u32,
    /// Latest timestamps (TSval) seen from each side.
    pub client_tsval: Option<u32>,
    pub server_tsval: Option<u32>,
    /// Latest window field from the server (for the switch's replies).
    pub server_window: u16,
    /// The client's MSS from its SYN (536 when absent, RFC 9293).
    pub client_mss: u16,
    /// The client's previous raw ACK number (a repeat is a duplicate ACK).
    pub last_client_ack: Option<u32>,
    pub client_fin: bool,
    pub server_fin: bool,
    pub reset: bool,
    /// Counters.
    pub alpha_bytes: u64,
    pub beta_bytes: u64,
    pub acks_suppressed: u64,
    /// Reply buffers of folded hits, reused for the next hits' replies (no allocation per hit).
    spare_replies: Vec<Vec<u8>>,
}

/// Unwrap a 32-bit offset to the u64 position nearest `reference` (may be negative: before start).
pub fn unwrap(off: u32, reference: u64) -> i64 {
    let d = off.wrapping_sub(reference as u32) as i32 as i64;
    reference as i64 + d
}

/// How to handle a client→server data segment, by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientPlan {
    /// Indexes of hits whose request bytes this segment carries again (answer them again).
    pub replay: Vec<usize>,
    /// New bytes (client positions) the parser has not seen: [new_from, end).
    pub new_from: Option<u64>,
    /// The bytes to forward, if any: client positions [from, to) (a sub-range of the segment).
    pub forward: Option<(u64, u64)>,
    /// The segment starts beyond `c_next` (a gap): it cannot be parsed in order.
    pub out_of_order: bool,
}

impl Migration {
    pub fn new(c_isn: u32, client_mss: Option<u16>) -> Self {
        Migration {
            c_isn,
            s_isn: 0,
            c_next: 0,
            s_next: 0,
            hits: VecDeque::new(),
            base_alpha: 0,
            base_beta: 0,
            folded_c: 0,
            folded_s: 0,
            server_acked_s: 0,
            client_acked_c: 0,
            last_fwd_ack: None,
            last_ack_to_client: 0,
            client_tsval: None,
            server_tsval: None,
            server_window: 0,
            client_mss: client_mss.unwrap_or(536),
            last_client_ack: None,
            client_fin: false,
            server_fin: false,
            reset: false,
            alpha_bytes: 0,
            beta_bytes: 0,
            acks_suppressed: 0,
            spare_replies: Vec::new(),
        }
    }

    // ---- sequence-number conversions ----
    pub fn client_pos(&self, seq: u32) -> i64 {
        unwrap(seq.wrapping_sub(self.c_isn.wrapping_add(1)), self.c_next)
    }
    pub fn server_pos(&self, seq: u32) -> i64 {
        unwrap(seq.wrapping_sub(self.s_isn.wrapping_add(1)), self.s_next)
    }
    /// Client's ACK number (of the server→client stream) as a client position.
    pub fn client_ack_pos(&self, ack: u32) -> i64 {
        unwrap(
            ack.wrapping_sub(self.s_isn.wrapping_add(1)),
            self.client_acked_c,
        )
    }
    /// Server's ACK number (of the client→server stream) as a server position.
    pub fn server_ack_pos(&self, ack: u32) -> i64 {
        unwrap(
            ack.wrapping_sub(self.c_isn.wrapping_add(1)),
            self.server_acked_s,
        )
    }
    fn c2s_seq(&self, s: u64) -> u32 {
        self.c_isn.wrapping_add(1).wrapping_add(s as u32)
    }
    /// The client-view sequence number of server→client client position `c`.
    pub fn s2c_seq_at(&self, c: u64) -> u32 {
        self.s2c_seq(c)
    }
    fn s2c_seq(&self, c: u64) -> u32 {
        self.s_isn.wrapping_add(1).wrapping_add(c as u32)
    }

    /// How many hits from the front satisfy `pred`, for a `pred` that holds for a prefix of
    /// the list (positions grow with it). Scanned from the back: the question is nearly always
    /// about the newest bytes, where every open hit lies before, so this is one comparison
    /// where a binary search over the deque's two halves costs several.
    #[inline]
    fn prefix_len(&self, pred: impl Fn(&Hit) -> bool) -> usize {
        let mut k = self.hits.len();
        while k > 0 && !pred(&self.hits[k - 1]) {
            k -= 1;
        }
        k
    }
    /// α before client position `c` (c not inside a hit's request).
    fn alpha_before(&self, c: u64) -> u64 {
        let k = self.prefix_len(|h| h.req_c + h.req_len <= c);
        self.alpha_through(k)
    }
    /// α of the folded hits and of open hits `..k`.
    fn alpha_through(&self, k: usize) -> u64 {
        if k == 0 {
            self.base_alpha
        } else {
            self.hits[k - 1].alpha_through
        }
    }
    /// β applying to server position `s` of the server→client stream.
    fn beta_at(&self, s: u64) -> u64 {
        let k = self.prefix_len(|h| h.rep_s <= s);
        if k == 0 {
            self.base_beta
        } else {
            self.hits[k - 1].beta_through
        }
    }

    /// Client→server: sequence number the server sees for client position `c`.
    pub fn map_client_seq(&self, c: u64) -> u32 {
        self.c2s_seq(c - self.alpha_before(c).min(c))
    }
    /// Server→client: sequence number the client sees for server position `s`.
    pub fn map_server_seq(&self, s: u64) -> u32 {
        self.s2c_seq(s + self.beta_at(s))
    }

    /// Client→server: the server-view ACK for the client's ACK at client position `c` of the
    /// server→client stream (an ACK inside an inserted reply acknowledges up to its start).
    /// Marks replies the client now holds entirely.
    pub fn map_client_ack(&mut self, c: u64) -> u32 {
        if c > self.client_acked_c {
            self.client_acked_c = c;
        }
        // Hits whose reply the client holds entirely: a prefix of the list (replies occupy
        // increasing client ranges). Their reply bytes are all β below `c`.
        let k = self.prefix_len(|h| c >= h.rep_c + h.rep_len);
        let beta = if k == 0 {
            self.base_beta
        } else {
            self.hits[k - 1].beta_through
        };
        // Mark them acknowledged and keep their buffers. The acknowledged hits are always a
        // prefix too (marked here only, folded from the front), so the walk stops at the first
        // one already marked.
        let mut j = k;
        while j > 0 && !self.hits[j - 1].reply_acked {
            j -= 1;
            let h = &mut self.hits[j];
            h.reply_acked = true;
            let mut buf = std::mem::take(&mut h.reply);
            if self.spare_replies.len() < SPARE_REPLY_BUFFERS {
                buf.clear();
                self.spare_replies.push(buf);
            }
        }
        // An ACK inside the next reply acknowledges up to its insertion point.
        let s = match self.hits.get(k) {
            Some(h) if c > h.rep_c => h.rep_s,
            _ => c.saturating_sub(beta),
        };
        self.s2c_seq(s)
    }

    /// Server→client: the client-view ACK for the server's ACK at server position `s`: a hit's
    /// request counts as acknowledged once the server acknowledged every byte before it (so the
    /// switch never acknowledges client bytes the server may not have). Acknowledging the
    /// request in the reply itself matters: a client with Nagle's algorithm holds its next small
    /// request while one is unacknowledged, and with delayed ACKs that costs tens of ms.
    pub fn map_server_ack(&mut self, s: u64) -> u32 {
        if s > self.server_acked_s {
            self.server_acked_s = s;
        }
        let k = self.prefix_len(|h| h.req_s <= s);
        let alpha = self.alpha_through(k);
        self.c2s_seq_client(s + alpha)
    }

    /// A reply the client is still missing part of, given its ACK at client position `c` of the
    /// server→client stream: (hit index, offset in the reply to resend from).
    pub fn reply_to_resend(&self, c: u64) -> Option<(usize, usize)> {
        // Replies occupy disjoint, increasing client ranges: only the last one starting at or
        // before `c` can hold it.
        let i = self.prefix_len(|h| h.rep_c <= c).checked_sub(1)?;
        let h = &self.hits[i];
        (!h.reply_acked && c < h.rep_c + h.rep_len).then(|| (i, (c - h.rep_c) as usize))
    }
    fn c2s_seq_client(&self, c: u64) -> u32 {
        self.c_isn.wrapping_add(1).wrapping_add(c as u32)
    }
    /// The ACK the client should get now (from the server's latest ACK).
    pub fn ack_for_client(&mut self) -> u32 {
        self.map_server_ack(self.server_acked_s)
    }

    /// Classify a client data segment at client positions [c0, c1).
    pub fn plan_client(&self, c0: i64, c1: i64) -> ClientPlan {
        let mut plan = ClientPlan {
            replay: Vec::new(),
            new_from: None,
            forward: None,
            out_of_order: false,
        };
        if c0 > self.c_next as i64 {
            plan.out_of_order = true;
            return plan;
        }
        if c0 == self.c_next as i64 {
            // Only new bytes (the usual segment): nothing to replay, forward them all.
            if c1 > c0 {
                plan.new_from = Some(self.c_next);
                plan.forward = Some((self.c_next, c1 as u64));
            }
            return plan;
        }
        let c0 = c0.max(0) as u64;
        let c1 = c1.max(0) as u64;
        if c1 > self.c_next {
            plan.new_from = Some(self.c_next);
        }
        // Old part [c0, min(c1, c_next)): replay hits, forward the first non-hit run.
        let old_end = c1.min(self.c_next);
        let mut pos = c0.max(self.folded_c);
        let mut run: Option<(u64, u64)> = None;
        for (i, h) in self.hits.iter().enumerate() {
            if h.req_c + h.req_len <= pos || pos >= old_end {
                continue;
            }
            if h.req_c >= old_end {
                break;
            }
            if h.req_c > pos && run.is_none() {
                run = Some((pos, h.req_c));
            }
            plan.replay.push(i);
            pos = h.req_c + h.req_len;
        }
        if run.is_none() && pos < old_end {
            run = Some((pos, old_end));
        }
        if plan.new_from.is_none() {
            plan.forward = run;
        } else {
            // New bytes present: forward old+new only if the old part is one run ending at
            // c_next; otherwise the old part is dropped (the peer has it or will ask again).
            plan.forward = match run {
                Some((a, b)) if b == self.c_next => Some((a, c1)),
                _ => Some((self.c_next, c1)),
            };
        }
        plan
    }

    /// The server→client segment [s0, s1) in server positions: the part to forward (trimmed at
    /// an insertion point so its client positions stay contiguous), or None if it is
    /// out of order (beyond `s_next`).
    pub fn plan_server(&self, s0: i64, s1: i64) -> Option<(u64, u64)> {
        if s0 > self.s_next as i64 {
            return None;
        }
        let s0 = s0.max(0) as u64;
        let s1 = s1.max(0) as u64;
        let cut = self
            .hits
            .iter()
            .map(|h| h.rep_s)
            .find(|&p| p > s0 && p < s1)
            .unwrap_or(s1);
        Some((s0, cut))
    }
    /// Server data wholly before the folded history: rewrite it to end at the client's
    /// acknowledged point (the client discards it as old and ACKs again).
    pub fn is_stale_server_data(&self, s1: u64) -> bool {
        s1 <= self.folded_s && s1 > 0
    }
    pub fn stale_server_seq(&self, len: u64) -> u32 {
        self.s2c_seq(self.client_acked_c.saturating_sub(len))
    }

    /// An empty buffer for the next reply (a folded hit's, when there is one), to be passed to
    /// [`Migration::answer`].
    pub fn take_reply_buffer(&mut self) -> Vec<u8> {
        self.spare_replies.pop().unwrap_or_default()
    }

    /// Register a request at client positions [c0, c1) answered with `reply`, inserted in the
    /// server→client stream at the current `s_next`. Returns the hit's index.
    pub fn answer(&mut self, c0: u64, c1: u64, reply: Vec<u8>) -> usize {
        let req_s = c0 - self.alpha_before(c0);
        let rep_s = self.s_next;
        let rep_c = rep_s + self.beta_at(rep_s);
        let rep_len = reply.len() as u64;
        self.alpha_bytes += c1 - c0;
        self.beta_bytes += rep_len;
        let alpha_through = self.alpha_through(self.hits.len()) + (c1 - c0);
        let beta_through = self.hits.back().map_or(self.base_beta, |h| h.beta_through) + rep_len;
        self.hits.push_back(Hit {
            alpha_through,
            beta_through,
            req_c: c0,
            req_len: c1 - c0,
            req_s,
            rep_s,
            rep_c,
            rep_len,
            reply,
            reply_acked: false,
        });
        self.hits.len() - 1
    }

    /// Reply segments for hit `i`: (sequence number, byte range in the reply), each at most
    /// `max_payload` bytes. Empty when the reply was already acknowledged.
    pub fn reply_segments(
        &self,
        i: usize,
        max_payload: usize,
    ) -> Vec<(u32, std::ops::Range<usize>)> {
        self.reply_segments_from(i, 0, max_payload)
    }
    /// Reply segments of hit `i` from byte `from` of its reply.
    pub fn reply_segments_from(
        &self,
        i: usize,
        from: usize,
        max_payload: usize,
    ) -> Vec<(u32, std::ops::Range<usize>)> {
        let h = &self.hits[i];
        if h.reply_acked {
            return Vec::new();
        }
        let step = max_payload.max(1);
        (from.min(h.reply.len())..h.reply.len())
            .step_by(step)
            .map(|a| {
                (
                    self.s2c_seq(h.rep_c + a as u64),
                    a..(a + step).min(h.reply.len()),
                )
            })
            .collect()
    }

    /// Duplicate-ACK suppression (the paper's §4.3): should a client segment without payload
    /// or SYN/FIN/RST, carrying `raw_ack` (client view) mapped to `ack` and window `window`,
    /// be forwarded? Acks that differ for the client but are the same for the server are
    /// dropped; the client's own duplicates (same raw ACK: loss signals) are forwarded.
    pub fn forward_pure_ack(&mut self, raw_ack: u32, ack: u32, window: u16) -> bool {
        if let Some((a, w, raw)) = self.last_fwd_ack {
            if a == ack && w == window && raw != raw_ack {
                self.acks_suppressed += 1;
                return false;
            }
        }
        self.last_fwd_ack = Some((ack, window, raw_ack));
        true
    }
    /// Record an ACK forwarded on a segment that was not a pure ACK.
    pub fn note_forwarded_ack(&mut self, raw_ack: u32, ack: u32, window: u16) {
        self.last_fwd_ack = Some((ack, window, raw_ack));
    }

    /// Fold hits both sides are done with into the base offsets (bounded state per connection).
    pub fn fold(&mut self) {
        // Nothing to fold while at most the kept few are open (the usual case: one per packet).
        if self.hits.len() <= 4 {
            return;
        }
        // Hits both sides are done with: a prefix (request and reply positions grow along the
        // list, and replies are marked acknowledged from the front).
        let (server_acked_s, client_acked_c) = (self.server_acked_s, self.client_acked_c);
        let n = self.prefix_len(|h| {
            h.reply_acked && server_acked_s >= h.req_s && client_acked_c >= h.rep_c + h.rep_len
        });
        // Keep a few recent hits so retransmissions just before them still map exactly; and never
        // more than MAX_OPEN_HITS (older ones are folded even if unacknowledged: bounded state and
        // per-packet work; a retransmission that old maps as stale data).
        let n = n
            .saturating_sub(4)
            .max(self.hits.len().saturating_sub(MAX_OPEN_HITS));
        for _ in 0..n {
            // One at a time from the front (cheaper than a `drain` for the one or two usual).
            let Some(mut h) = self.hits.pop_front() else {
                break;
            };
            self.base_alpha += h.req_len;
            self.base_beta += h.rep_len;
            self.folded_c = h.req_c + h.req_len;
            self.folded_s = h.rep_s;
            if self.spare_replies.len() < SPARE_REPLY_BUFFERS {
                h.reply.clear();
                self.spare_replies.push(h.reply);
            }
        }
    }

    /// Both FINs seen, or a reset: the state may be freed.
    pub fn finished(&self) -> bool {
        self.reset || (self.client_fin && self.server_fin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Client ISN 1000, server ISN 5000: positions start at seq 1001 / 5001.
    fn conn() -> Migration {
        let mut m = Migration::new(1000, Some(1460));
        m.s_isn = 5000;
        m
    }

    #[test]
    fn unwrap_across_wrap() {
        assert_eq!(unwrap(5, 3), 5);
        assert_eq!(unwrap(u32::MAX, 0), -1);
        let r = (1u64 << 32) + 10;
        assert_eq!(unwrap(12, r), r as i64 + 2);
        assert_eq!(unwrap(u32::MAX - 1, r), r as i64 - 12);
    }

    /// The paper's Fig. 7/8: after a hit of x request bytes and y reply bytes, later
    /// client segments go to the server x lower, server segments to the client y higher, and
    /// ACKs the other way.
    #[test]
    fn alpha_beta_offsets_after_hit() {
        let mut m = conn();
        // Request 1 (miss) [0,50) forwarded, reply 1 [0,100) from the server.
        let p = m.plan_client(0, 50);
        assert_eq!(p.forward, Some((0, 50)));
        m.c_next = 50;
        assert_eq!(m.map_client_seq(0), 1001);
        m.s_next = 100;
        m.map_server_ack(50);
        m.map_client_ack(100);
        // Request 2 [50,80) hit: 40 reply bytes inserted at server position 100.
        let i = m.answer(50, 80, vec![7; 40]);
        m.c_next = 80;
        assert_eq!(m.reply_segments(i, 1448), vec![(5001 + 100, 0..40)]);
        // The server acknowledged everything before the request: the reply acknowledges it.
        assert_eq!(m.ack_for_client(), 1001 + 80);
        // The client ACKs part of the reply: the rest is to be resent; ACKs inside map to 100.
        assert_eq!(m.reply_to_resend(110), Some((i, 10)));
        assert_eq!(
            m.reply_segments_from(i, 10, 1448),
            vec![(5001 + 110, 10..40)]
        );
        assert_eq!(m.map_client_ack(110), 5001 + 100);
        // The client ACKs the reply (client position 140 of the s2c stream): server sees 100.
        assert_eq!(m.map_client_ack(140), 5001 + 100);
        assert_eq!(m.reply_to_resend(140), None);
        // Request 3 [80,120) forwarded: server sees it at 50.
        assert_eq!(m.plan_client(80, 120).forward, Some((80, 120)));
        assert_eq!(m.map_client_seq(80), 1001 + 50);
        m.c_next = 120;
        // Server ACKs 90 (its view) -> client 120; reply 3 at server 100 -> client 140.
        assert_eq!(m.map_server_ack(90), 1001 + 120);
        assert_eq!(m.map_server_seq(100), 5001 + 140);
        // A retransmission of reply 1 (server [0,100)) keeps its old client position.
        assert_eq!(m.map_server_seq(0), 5001);
        assert_eq!(m.plan_server(0, 100), Some((0, 100)));
        // A server segment straddling the insertion point is cut there.
        m.s_next = 150;
        assert_eq!(m.plan_server(60, 150), Some((60, 100)));
    }

    #[test]
    fn retransmitted_hit_is_replayed_not_forwarded() {
        let mut m = conn();
        m.c_next = 0;
        let i = m.answer(0, 30, b"reply".to_vec());
        m.c_next = 30;
        let p = m.plan_client(0, 30);
        assert_eq!(p.replay, vec![i]);
        assert_eq!(p.forward, None);
        assert_eq!(p.new_from, None);
        // Coalesced retransmission of the hit and a forwarded request after it.
        m.c_next = 60;
        let p = m.plan_client(0, 60);
        assert_eq!(p.replay, vec![i]);
        assert_eq!(p.forward, Some((30, 60)));
        assert_eq!(m.map_client_seq(30), 1001);
        // Once the client holds the reply, a replay sends nothing but an ACK.
        m.map_client_ack(5);
        assert!(m.hits[i].reply_acked);
        assert!(m.reply_segments(i, 1448).is_empty());
    }

    #[test]
    fn ack_inside_reply_maps_to_insertion_point() {
        let mut m = conn();
        m.s_next = 10;
        m.c_next = 5;
        m.answer(0, 5, vec![0; 20]);
        assert_eq!(m.map_client_ack(15), 5001 + 10);
        assert!(!m.hits[0].reply_acked);
        assert_eq!(m.map_client_ack(30), 5001 + 10);
        assert!(m.hits[0].reply_acked);
        assert_eq!(m.map_client_ack(35), 5001 + 15);
    }

    #[test]
    fn duplicate_acks_from_hits_suppressed_real_dupacks_kept() {
        let mut m = conn();
        // Client ACKs 100, 200, 300 all map to server ACK 100 (Fig. A-1).
        assert!(m.forward_pure_ack(100, 100, 500));
        assert!(!m.forward_pure_ack(200, 100, 500));
        assert!(!m.forward_pure_ack(300, 100, 500));
        // A window update is forwarded.
        assert!(m.forward_pure_ack(300, 100, 600));
        // The client's own duplicate ACKs (same raw number) are loss signals: forwarded.
        assert!(m.forward_pure_ack(300, 100, 600));
        assert_eq!(m.acks_suppressed, 2);
    }

    #[test]
    fn out_of_order_and_fold() {
        let mut m = conn();
        assert!(m.plan_client(10, 20).out_of_order);
        assert_eq!(m.plan_server(5, 10), None);
        for k in 0..10u64 {
            m.answer(k * 10, k * 10 + 10, vec![1; 3]);
            m.c_next = k * 10 + 10;
        }
        m.map_client_ack(30);
        m.map_server_ack(0);
        m.fold();
        assert_eq!(m.hits.len(), 4);
        assert_eq!(m.map_client_seq(100), 1001);
        assert_eq!(m.map_server_seq(0), 5001 + 30);
        assert_eq!(m.map_server_ack(0), 1001 + 100);
    }

    /// The position maps against the straightforward versions they replaced (binary searches
    /// over the deque, a walk from the front for ACKs, a `take_while` for folding), on random
    /// histories of hits, forwarded bytes, ACKs from both sides, folds and retransmissions.
    mod oracle {
        use super::super::*;
        use proptest::prelude::*;

        fn alpha_before(m: &Migration, c: u64) -> u64 {
            let k = m.hits.partition_point(|h| h.req_c + h.req_len <= c);
            if k == 0 {
                m.base_alpha
            } else {
                m.hits[k - 1].alpha_through
            }
        }
        fn beta_at(m: &Migration, s: u64) -> u64 {
            let k = m.hits.partition_point(|h| h.rep_s <= s);
            if k == 0 {
                m.base_beta
            } else {
                m.hits[k - 1].beta_through
            }
        }
        fn map_server_ack(m: &mut Migration, s: u64) -> u32 {
            if s > m.server_acked_s {
                m.server_acked_s = s;
            }
            let k = m.hits.partition_point(|h| h.req_s <= s);
            let alpha = if k == 0 {
                m.base_alpha
            } else {
                m.hits[k - 1].alpha_through
            };
            m.c2s_seq_client(s + alpha)
        }
        fn reply_to_resend(m: &Migration, c: u64) -> Option<(usize, usize)> {
            let i = m.hits.partition_point(|h| h.rep_c <= c).checked_sub(1)?;
            let h = &m.hits[i];
            (!h.reply_acked && c < h.rep_c + h.rep_len).then(|| (i, (c - h.rep_c) as usize))
        }
        fn map_client_ack(m: &mut Migration, c: u64) -> u32 {
            if c > m.client_acked_c {
                m.client_acked_c = c;
            }
            let mut beta = m.base_beta;
            let mut s = None;
            for h in &mut m.hits {
                if c >= h.rep_c + h.rep_len {
                    beta += h.rep_len;
                    h.reply_acked = true;
                } else if c > h.rep_c {
                    s = Some(h.rep_s);
                    break;
                } else {
                    break;
                }
            }
            m.s2c_seq(s.unwrap_or(c.saturating_sub(beta)))
        }
        fn fold_count(m: &Migration) -> usize {
            if m.hits.len() <= 4 {
                return 0;
            }
            let n = m
                .hits
                .iter()
                .take_while(|h| {
                    h.reply_acked
                        && m.server_acked_s >= h.req_s
                        && m.client_acked_c >= h.rep_c + h.rep_len
                })
                .count();
            n.saturating_sub(4)
                .max(m.hits.len().saturating_sub(MAX_OPEN_HITS))
        }
        fn plan_client(m: &Migration, c0: i64, c1: i64) -> ClientPlan {
            // The general walk (no shortcut for new bytes only).
            let mut plan = ClientPlan {
                replay: Vec::new(),
                new_from: None,
                forward: None,
                out_of_order: false,
            };
            if c0 > m.c_next as i64 {
                plan.out_of_order = true;
                return plan;
            }
            let c0 = c0.max(0) as u64;
            let c1 = c1.max(0) as u64;
            if c1 > m.c_next {
                plan.new_from = Some(m.c_next);
            }
            let old_end = c1.min(m.c_next);
            let mut pos = c0.max(m.folded_c);
            let mut run: Option<(u64, u64)> = None;
            for (i, h) in m.hits.iter().enumerate() {
                if h.req_c + h.req_len <= pos || pos >= old_end {
                    continue;
                }
                if h.req_c >= old_end {
                    break;
                }
                if h.req_c > pos && run.is_none() {
                    run = Some((pos, h.req_c));
                }
                plan.replay.push(i);
                pos = h.req_c + h.req_len;
            }
            if run.is_none() && pos < old_end {
                run = Some((pos, old_end));
            }
            if plan.new_from.is_none() {
                plan.forward = run;
            } else {
                plan.forward = match run {
                    Some((a, b)) if b == m.c_next => Some((a, c1)),
                    _ => Some((m.c_next, c1)),
                };
            }
            plan
        }

        #[derive(Debug, Clone)]
        enum Op {
            Hit { req: u64, rep: u64 },
            ForwardClient(u64),
            ServerData(u64),
            ClientAck(u64),
            ServerAck(u64),
            Fold,
            Segment(u64, u64),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                3 => (1u64..40, 0u64..60).prop_map(|(req, rep)| Op::Hit { req, rep }),
                1 => (1u64..50).prop_map(Op::ForwardClient),
                1 => (1u64..80).prop_map(Op::ServerData),
                3 => (0u64..2000).prop_map(Op::ClientAck),
                2 => (0u64..2000).prop_map(Op::ServerAck),
                2 => Just(Op::Fold),
                2 => (0u64..2000, 0u64..100).prop_map(|(a, l)| Op::Segment(a, l)),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]
            #[test]
            fn maps_equal_the_straightforward_versions(ops in prop::collection::vec(op(), 1..200)) {
                let mut m = Migration::new(1000, Some(1460));
                m.s_isn = 5000;
                for o in ops {
                    match o {
                        Op::Hit { req, rep } => {
                            let c0 = m.c_next;
                            m.answer(c0, c0 + req, vec![7; rep as usize]);
                            m.c_next = c0 + req;
                        }
                        Op::ForwardClient(n) => m.c_next += n,
                        Op::ServerData(n) => m.s_next += n,
                        Op::ClientAck(c) => {
                            // ACKs up to the client-view end of the server→client stream.
                            let end = m.s_next + beta_at(&m, m.s_next);
                            let c = c.min(end);
                            prop_assert_eq!(m.reply_to_resend(c), reply_to_resend(&m, c));
                            let mut o = m.clone();
                            let want = map_client_ack(&mut o, c);
                            prop_assert_eq!(m.map_client_ack(c), want);
                            let acked = |x: &Migration| x.hits.iter().map(|h| h.reply_acked).collect::<Vec<_>>();
                            prop_assert_eq!(acked(&m), acked(&o));
                            prop_assert_eq!(m.client_acked_c, o.client_acked_c);
                        }
                        Op::ServerAck(s) => {
                            let s = s.min(m.c_next - alpha_before(&m, m.c_next));
                            let mut o = m.clone();
                            let want = map_server_ack(&mut o, s);
                            prop_assert_eq!(m.map_server_ack(s), want);
                        }
                        Op::Fold => {
                            let n = fold_count(&m);
                            let before = m.hits.len();
                            let front: Vec<u64> = m.hits.iter().skip(n).map(|h| h.req_c).collect();
                            m.fold();
                            prop_assert_eq!(m.hits.len(), before - n);
                            prop_assert_eq!(m.hits.iter().map(|h| h.req_c).collect::<Vec<_>>(), front);
                        }
                        Op::Segment(a, l) => {
                            let a = a.min(m.c_next);
                            prop_assert_eq!(m.plan_client(a as i64, (a + l) as i64), plan_client(&m, a as i64, (a + l) as i64));
                        }
                    }
                    // Positions everywhere map alike.
                    for c in [0, m.c_next / 3, m.c_next / 2, m.c_next] {
                        if m.hits.iter().all(|h| !(h.req_c < c && c < h.req_c + h.req_len)) {
                            prop_assert_eq!(m.alpha_before(c), alpha_before(&m, c));
                        }
                    }
                    for s in [0, m.s_next / 2, m.s_next] {
                        prop_assert_eq!(m.beta_at(s), beta_at(&m, s));
                    }
                }
            }
        }
    }
}
