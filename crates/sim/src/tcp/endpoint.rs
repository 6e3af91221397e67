//! The TCP connection state machine: handshake, sending within min(cwnd, rwnd), ACK processing
//! with NewReno recovery and RTO, receiving with delayed ACKs and out-of-order ranges, ECN echo,
//! FIN/RST. See the module doc of `tcp` for every behavioural choice.

use std::collections::VecDeque;

use super::cc::CongestionState;
use super::config::TcpConfig;
use super::ranges::RangeSet;
use super::rtt::RttEstimator;
use super::{TcpEvent, TcpFlags, TcpSegment, TcpState, TcpStats};

/// One segment in flight, for RTT samples (Karn's rule: only never-retransmitted ones count).
#[derive(Debug, Clone, Copy)]
struct Sent {
    end: u64,
    sent_ps: u64,
    retransmitted: bool,
}

/// A sans-IO TCP endpoint. Sequence numbers are kept internally as u64 offsets from the ISN
/// (the SYN is 0, the first data byte 1) so comparisons never wrap; the wire carries the low 32
/// bits added to the ISN, and incoming numbers are unwrapped against the nearest expected value.
#[derive(Debug, Clone)]
pub struct TcpEndpoint {
    cfg: TcpConfig,
    mss: u64,
    rwnd: u64,
    state: TcpState,

    // Sender. Offsets relative to `iss`.
    iss: u32,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    snd_wnd: u64,
    /// Bytes the application has handed over; data occupies offsets 1..=app_bytes.
    app_bytes: u64,
    fin_requested: bool,
    syn_pending: bool,
    syn_retries: u32,
    syn_retransmitted: bool,
    syn_sent_ps: u64,
    data_retries: u32,
    fast_rtx_pending: bool,
    in_recovery: bool,
    /// End (exclusive) of what was sent when recovery or the last RTO began (RFC 6582 "recover").
    recover: u64,
    dupacks: u32,
    /// Duplicate ACKs that each allow one segment past cwnd (limited transmit).
    limited_tx_credit: u32,
    all_acked_reported: u64,
    in_flight: VecDeque<Sent>,
    cc: CongestionState,
    rtt: RttEstimator,
    rto_deadline_ps: Option<u64>,

    // ECN.
    ecn_on: bool,
    /// Sender: set CWR on the next new data segment (RFC 3168 §6.1.2).
    send_cwr: bool,
    /// Sender: no further ECN reduction until snd_una passes this (once per window).
    cwr_end: Option<u64>,
    /// Receiver (classic ECN): echo ECE until the peer's CWR arrives.
    ece_echo: bool,
    /// Receiver (DCTCP): the CE state of the last data segment (RFC 8257 §3.2).
    dctcp_ce: bool,

    // Receiver. Offsets relative to `irs`.
    irs: u32,
    rcv_nxt: u64,
    ooo: RangeSet,
    peer_fin: Option<u64>,
    ack_now: bool,
    delack_segments: u32,
    delack_deadline_ps: Option<u64>,
    /// Control segments built ahead of time (the DCTCP ACK with the previous CE state).
    ctl_queue: VecDeque<TcpSegment>,
    rst_pending: bool,

    time_wait_deadline_ps: Option<u64>,
    events: VecDeque<TcpEvent>,
    stats: TcpStats,
}

#[inline]
fn unwrap_seq(base_wire: u32, base: u64, wire: u32) -> Option<u64> {
    let diff = wire.wrapping_sub(base_wire) as i32 as i64;
    let v = base as i64 + diff;
    (v >= 0).then_some(v as u64)
}

impl TcpEndpoint {
    fn new(cfg: TcpConfig, isn: u32, state: TcpState) -> Self {
        let mss = cfg.mss_bytes.max(1) as u64;
        let rwnd = (cfg.receive_window_bytes as u64).max(mss);
        let cc = CongestionState::new(cfg.congestion_control, mss, cfg.initial_cwnd_segments as u64);
        let rtt = RttEstimator::new(
            cfg.initial_rto_ps,
            cfg.min_rto_ps.max(1),
            cfg.max_rto_ps,
            cfg.clock_granularity_ps,
        );
        TcpEndpoint {
            cfg,
            mss,
            rwnd,
            state,
            iss: isn,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            snd_wnd: mss,
            app_bytes: 0,
            fin_requested: false,
            syn_pending: false,
            syn_retries: 0,
            syn_retransmitted: false,
            syn_sent_ps: 0,
            data_retries: 0,
            fast_rtx_pending: false,
            in_recovery: false,
            recover: 0,
            dupacks: 0,
            limited_tx_credit: 0,
            all_acked_reported: 0,
            in_flight: VecDeque::new(),
            cc,
            rtt,
            rto_deadline_ps: None,
            ecn_on: false,
            send_cwr: false,
            cwr_end: None,
            ece_echo: false,
            dctcp_ce: false,
            irs: 0,
            rcv_nxt: 0,
            ooo: RangeSet::default(),
            peer_fin: None,
            ack_now: false,
            delack_segments: 0,
            delack_deadline_ps: None,
            ctl_queue: VecDeque::new(),
            rst_pending: false,
            time_wait_deadline_ps: None,
            events: VecDeque::new(),
            // The congestion and RTT fields are filled in by `stats()`.
            stats: TcpStats::default(),
        }
    }

    /// Active open: the endpoint is in SYN-SENT with a SYN ready for `poll_transmit`.
    pub fn connect(cfg: TcpConfig, isn: u32, _now_ps: u64) -> Self {
        let mut ep = Self::new(cfg, isn, TcpState::SynSent);
        ep.syn_pending = true;
        ep
    }

    /// Passive open: LISTEN until the first SYN, which it answers with a SYN-ACK.
    pub fn listen(cfg: TcpConfig, isn: u32) -> Self {
        Self::new(cfg, isn, TcpState::Listen)
    }

    /// Append `bytes` virtual bytes to the send stream. Ignored after `close` (the FIN's
    /// sequence number is fixed then) and on a closed connection.
    pub fn send(&mut self, bytes: u64) {
        if self.fin_requested || matches!(self.state, TcpState::Closed) {
            return;
        }
        self.app_bytes += bytes;
    }

    /// Send a FIN once every queued byte has been sent. Idempotent.
    pub fn close(&mut self) {
        match self.state {
            TcpState::Closed => {}
            TcpState::Listen => self.enter_closed(TcpEvent::Closed),
            _ => self.fin_requested = true,
        }
    }

    /// Abort: send a RST (if synchronized) and close at once, reporting `Closed`.
    pub fn abort(&mut self) {
        if self.state.is_synchronized() || self.state == TcpState::SynReceived {
            self.rst_pending = true;
        }
        if self.state != TcpState::Closed {
            self.enter_closed(TcpEvent::Closed);
        }
    }

    pub fn state(&self) -> TcpState {
        self.state
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.cc.cwnd
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.cc.ssthresh
    }

    /// Sequence space sent and not yet acknowledged (SYN and FIN count one each).
    pub fn bytes_in_flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// Whether the connection is in fast recovery.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// Whether HyStart++ has slowed the initial slow start (Conservative Slow Start).
    pub fn in_conservative_slow_start(&self) -> bool {
        self.cc.in_conservative_slow_start()
    }

    /// DCTCP's congestion estimate alpha, if this endpoint runs DCTCP.
    pub fn dctcp_alpha(&self) -> Option<f64> {
        self.cc.dctcp_alpha()
    }

    /// CUBIC's (W_max bytes, K seconds) of the current epoch, if this endpoint runs CUBIC.
    pub fn cubic_w_max_and_k(&self) -> Option<(f64, f64)> {
        self.cc.cubic_w_max_and_k()
    }

    /// Whether ECN was negotiated on the handshake.
    pub fn ecn_negotiated(&self) -> bool {
        self.ecn_on
    }

    /// The counters, with the congestion and RTT state as of now (read from their owners
    /// here rather than copied into the counters after every segment).
    pub fn stats(&self) -> TcpStats {
        TcpStats {
            cwnd_bytes: self.cc.cwnd,
            ssthresh_bytes: self.cc.ssthresh,
            srtt_ps: self.rtt.srtt_ps().unwrap_or(0),
            rttvar_ps: self.rtt.rttvar_ps(),
            min_rtt_ps: self.rtt.min_rtt_ps().unwrap_or(0),
            rto_ps: self.rtt.rto_ps(),
            ..self.stats.clone()
        }
    }

    pub fn poll_event(&mut self) -> Option<TcpEvent> {
        self.events.pop_front()
    }

    /// Earliest pending timer: retransmission (data, SYN, SYN-ACK), delayed ACK, TIME-WAIT.
    pub fn next_timeout_ps(&self) -> Option<u64> {
        let earlier = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        earlier(earlier(self.rto_deadline_ps, self.delack_deadline_ps), self.time_wait_deadline_ps)
    }

    /// Run every timer that is due at `now_ps`.
    pub fn on_timeout(&mut self, now_ps: u64) {
        if self.delack_deadline_ps.is_some_and(|t| t <= now_ps) {
            self.delack_deadline_ps = None;
            self.ack_now = true;
        }
        if self.time_wait_deadline_ps.is_some_and(|t| t <= now_ps) {
            self.time_wait_deadline_ps = None;
            self.enter_closed(TcpEvent::Closed);
            return;
        }
        if self.rto_deadline_ps.is_some_and(|t| t <= now_ps) {
            self.rto_deadline_ps = None;
            self.retransmission_timeout(now_ps);
        }
    }

    fn retransmission_timeout(&mut self, now_ps: u64) {
        match self.state {
            TcpState::SynSent | TcpState::SynReceived => {
                self.syn_retries += 1;
                if self.syn_retries > self.cfg.max_syn_retries {
                    self.enter_closed(TcpEvent::TimedOut);
                    return;
                }
                self.stats.timeouts += 1;
                self.stats.syn_retransmits += 1;
                self.syn_retransmitted = true;
                self.syn_pending = true;
                self.rtt.back_off();
            }
            TcpState::Closed | TcpState::Listen | TcpState::TimeWait => {}
            _ => {
                if self.snd_una >= self.snd_max {
                    return;
                }
                self.data_retries += 1;
                if self.data_retries > self.cfg.max_data_retries {
                    self.enter_closed(TcpEvent::TimedOut);
                    return;
                }
                self.stats.timeouts += 1;
                self.cc.on_timeout(self.snd_max - self.snd_una);
                self.cc.hystart_on_rto(now_ps, self.snd_max);
                // Go-back-N from the first unacknowledged byte; RFC 6582: no fast retransmit
                // for losses among what was already sent (recover = highest sent).
                self.snd_nxt = self.snd_una;
                self.recover = self.snd_max;
                self.in_recovery = false;
                self.fast_rtx_pending = false;
                self.dupacks = 0;
                self.limited_tx_credit = 0;
                self.cwr_end = None;
                self.in_flight.clear();
                self.rtt.back_off();
            }
        }
    }

    fn enter_closed(&mut self, event: TcpEvent) {
        self.state = TcpState::Closed;
        self.ack_now = false;
        self.rto_deadline_ps = None;
        self.delack_deadline_ps = None;
        self.time_wait_deadline_ps = None;
        self.syn_pending = false;
        self.fast_rtx_pending = false;
        self.events.push_back(event);
    }

    #[inline]
    fn wire_seq(&self, off: u64) -> u32 {
        self.iss.wrapping_add(off as u32)
    }

    #[inline]
    fn wire_ack(&self) -> u32 {
        self.irs.wrapping_add(self.rcv_nxt as u32)
    }

    fn data_end(&self) -> u64 {
        1 + self.app_bytes
    }

    fn fin_sent(&self) -> bool {
        self.fin_requested && self.snd_max > self.data_end()
    }

    fn is_dctcp(&self) -> bool {
        self.cfg.congestion_control.is_dctcp()
    }

    /// ECE on an outgoing ACK: DCTCP echoes the CE state exactly, classic ECN latches it.
    fn ece_flag(&self) -> u8 {
        let on = self.ecn_on && if self.is_dctcp() { self.dctcp_ce } else { self.ece_echo };
        if on {
            TcpFlags::ECE
        } else {
            0
        }
    }

    /// DCTCP marks every packet ECT (as Linux does); classic ECN only new data (RFC 3168 §6.1.5).
    fn ect_for(&self, new_data: bool) -> bool {
        self.ecn_on && (self.is_dctcp() || new_data)
    }

    fn note_ack_sent(&mut self) {
        self.ack_now = false;
        self.delack_segments = 0;
        self.delack_deadline_ps = None;
    }

    fn pure_ack(&self) -> TcpSegment {
        TcpSegment {
            seq: self.wire_seq(self.snd_nxt),
            ack: self.wire_ack(),
            flags: TcpFlags(TcpFlags::ACK | self.ece_flag()),
            window: self.rwnd.min(u32::MAX as u64) as u32,
            payload_len: 0,
        }
    }

    /// The next segment to put on the wire, with whether to mark it ECN-capable.
    pub fn poll_transmit(&mut self, now_ps: u64) -> Option<(TcpSegment, bool)> {
        let out = self.next_segment(now_ps);
        if let Some((seg, _)) = &out {
            self.stats.segments_sent += 1;
            if seg.payload_len == 0 && seg.flags.0 == TcpFlags::ACK | (seg.flags.0 & TcpFlags::ECE) {
                self.stats.pure_acks_sent += 1;
            }
        }
        out
    }

    fn next_segment(&mut self, now_ps: u64) -> Option<(TcpSegment, bool)> {
        if self.rst_pending {
            self.rst_pending = false;
            let seg = TcpSegment {
                seq: self.wire_seq(self.snd_nxt),
                ack: self.wire_ack(),
                flags: TcpFlags(TcpFlags::RST | TcpFlags::ACK),
                window: 0,
                payload_len: 0,
            };
            return Some((seg, false));
        }
        if let Some(seg) = self.ctl_queue.pop_front() {
            return Some((seg, self.ect_for(false)));
        }
        match self.state {
            TcpState::SynSent if self.syn_pending => return Some(self.emit_syn(now_ps, false)),
            TcpState::SynReceived if self.syn_pending => return Some(self.emit_syn(now_ps, true)),
            TcpState::Closed | TcpState::Listen | TcpState::SynSent | TcpState::SynReceived => {
                // A closed endpoint may still owe the ACK of the peer's FIN (TIME-WAIT of 0).
                if self.ack_now && self.state == TcpState::Closed && self.rcv_nxt > 0 {
                    self.note_ack_sent();
                    return Some((self.pure_ack(), self.ect_for(false)));
                }
                return None;
            }
            _ => {}
        }
        if self.fast_rtx_pending {
            self.fast_rtx_pending = false;
            if self.snd_una < self.snd_max {
                return Some(self.emit_data(now_ps, self.snd_una, u64::MAX, true));
            }
        }
        if let Some(out) = self.next_new_segment(now_ps) {
            return Some(out);
        }
        if self.ack_now {
            self.note_ack_sent();
            return Some((self.pure_ack(), self.ect_for(false)));
        }
        None
    }

    fn emit_syn(&mut self, now_ps: u64, with_ack: bool) -> (TcpSegment, bool) {
        self.syn_pending = false;
        self.syn_sent_ps = now_ps;
        self.snd_nxt = self.snd_nxt.max(1);
        self.snd_max = self.snd_max.max(1);
        if self.rto_deadline_ps.is_none() {
            self.rto_deadline_ps = Some(now_ps.saturating_add(self.rtt.rto_ps()));
        }
        // RFC 3168 §6.1.1: an ECN-setup SYN carries ECE|CWR, the SYN-ACK answers with ECE.
        let mut flags = TcpFlags::SYN;
        if with_ack {
            flags |= TcpFlags::ACK;
            if self.ecn_on {
                flags |= TcpFlags::ECE;
            }
            self.note_ack_sent();
        } else if self.cfg.ecn {
            flags |= TcpFlags::ECE | TcpFlags::CWR;
        }
        let seg = TcpSegment {
            seq: self.iss,
            ack: if with_ack { self.wire_ack() } else { 0 },
            flags: TcpFlags(flags),
            window: self.rwnd.min(u32::MAX as u64) as u32,
            payload_len: 0,
        };
        // Linux's DCTCP sends even the SYN as ECT; only once negotiated here, so never on a SYN.
        (seg, false)
    }

    /// New data (or go-back-N resends below snd_max) as the window allows, with the FIN last.
    fn next_new_segment(&mut self, now_ps: u64) -> Option<(TcpSegment, bool)> {
        let data_end = self.data_end();
        let fin_unsent = self.fin_requested && self.snd_nxt <= data_end;
        if self.snd_nxt >= data_end && !fin_unsent {
            return None;
        }
        let flight = self.snd_nxt - self.snd_una;
        let remaining = data_end.saturating_sub(self.snd_nxt);
        // Limited transmit: each duplicate ACK so far lets one more segment of new data out.
        let extra = if self.snd_nxt == self.snd_max {
            self.limited_tx_credit as u64 * self.mss
        } else {
            0
        };
        let cwnd = self.cc.cwnd + extra;
        let room = cwnd.min(self.snd_wnd).saturating_sub(flight);
        let len = self.mss.min(remaining).min(room);
        if remaining > 0 {
            if len == 0 {
                return None;
            }
            // Sender-side silly-window avoidance (RFC 1122 §4.2.3.4): no runt segment while
            // data is in flight unless it is the end of the stream.
            if len < self.mss && len < remaining && flight > 0 {
                return None;
            }
        }
        Some(self.emit_data(now_ps, self.snd_nxt, len, false))
    }

    /// Build the segment that starts at offset `start` with at most `max_len` payload bytes;
    /// `is_fast_rtx` leaves snd_nxt alone.
    fn emit_data(&mut self, now_ps: u64, start: u64, max_len: u64, is_fast_rtx: bool) -> (TcpSegment, bool) {
        let data_end = self.data_end();
        let len = self.mss.min(data_end.saturating_sub(start)).min(max_len);
        let end_data = start + len;
        let fin = self.fin_requested && end_data == data_end;
        let end = end_data + fin as u64;
        let retransmission = start < self.snd_max;
        let mut flags = TcpFlags::ACK | self.ece_flag();
        if fin {
            flags |= TcpFlags::FIN;
        }
        if len > 0 && end_data == data_end {
            flags |= TcpFlags::PSH;
        }
        if self.send_cwr && len > 0 && !retransmission {
            flags |= TcpFlags::CWR;
            self.send_cwr = false;
        }
        let seg = TcpSegment {
            seq: self.wire_seq(start),
            ack: self.wire_ack(),
            flags: TcpFlags(flags),
            window: self.rwnd.min(u32::MAX as u64) as u32,
            payload_len: len as u32,
        };
        if retransmission {
            self.stats.retransmits += 1;
            self.stats.retransmitted_bytes += len;
            // Karn's rule: the segments this overlaps can no longer give an RTT sample.
            for s in self.in_flight.iter_mut().filter(|s| s.end > start) {
                s.retransmitted = true;
                if s.end >= end {
                    break;
                }
            }
        } else {
            self.stats.bytes_sent += len;
        }
        if len > 0 {
            self.stats.data_segments_sent += 1;
        }
        if !is_fast_rtx {
            self.snd_nxt = end;
            if end > self.snd_max {
                if fin {
                    // The FIN goes out: FIN-WAIT-1 or LAST-ACK.
                    self.state = match self.state {
                        TcpState::CloseWait => TcpState::LastAck,
                        TcpState::Established => TcpState::FinWait1,
                        s => s,
                    };
                }
                self.snd_max = end;
            }
            match self.in_flight.back() {
                Some(last) if last.end >= end => {} // a go-back-N resend inside a recorded segment
                _ => self.in_flight.push_back(Sent {
                    end,
                    sent_ps: now_ps,
                    retransmitted: retransmission,
                }),
            }
        }
        if self.rto_deadline_ps.is_none() {
            self.rto_deadline_ps = Some(now_ps.saturating_add(self.rtt.rto_ps()));
        }
        self.note_ack_sent();
        (seg, self.ect_for(!retransmission && len > 0))
    }

    /// Process one arriving segment; `ce_marked` is the IP ECN field's CE on arrival.
    pub fn on_segment(&mut self, now_ps: u64, seg: &TcpSegment, ce_marked: bool) {
        self.stats.segments_received += 1;
        if ce_marked {
            self.stats.ce_received += 1;
        }
        match self.state {
            TcpState::Closed => self.on_segment_closed(seg),
            TcpState::Listen => self.on_segment_listen(now_ps, seg),
            TcpState::SynSent => self.on_segment_syn_sent(now_ps, seg),
            _ => self.on_segment_synchronized(now_ps, seg, ce_marked),
        }
    }

    /// RFC 793 "If the state is CLOSED": discard the segment and answer anything but a RST with
    /// a RST, so a peer still retransmitting (its FIN after our TIME-WAIT ended, say) stops.
    fn on_segment_closed(&mut self, seg: &TcpSegment) {
        let f = seg.flags;
        if f.has(TcpFlags::RST) {
            return;
        }
        let rst = if f.has(TcpFlags::ACK) {
            TcpSegment { seq: seg.ack, ack: 0, flags: TcpFlags(TcpFlags::RST), window: 0, payload_len: 0 }
        } else {
            let len = seg.payload_len + u32::from(f.has(TcpFlags::SYN)) + u32::from(f.has(TcpFlags::FIN));
            TcpSegment {
                seq: 0,
                ack: seg.seq.wrapping_add(len),
                flags: TcpFlags(TcpFlags::RST | TcpFlags::ACK),
                window: 0,
                payload_len: 0,
            }
        };
        self.ctl_queue.push_back(rst);
    }

    fn on_segment_listen(&mut self, _now_ps: u64, seg: &TcpSegment) {
        let f = seg.flags;
        if f.has(TcpFlags::RST) {
            return;
        }
        if f.has(TcpFlags::ACK) {
            // RFC 793: an ACK to a listener gets a RST (seq = the ACK's ack).
            self.ctl_queue.push_back(TcpSegment {
                seq: seg.ack,
                ack: 0,
                flags: TcpFlags(TcpFlags::RST),
                window: 0,
                payload_len: 0,
            });
            return;
        }
        if !f.has(TcpFlags::SYN) {
            return;
        }
        self.irs = seg.seq;
        self.rcv_nxt = 1;
        self.snd_wnd = seg.window as u64;
        self.ecn_on = self.cfg.ecn && f.has(TcpFlags::ECE) && f.has(TcpFlags::CWR);
        self.state = TcpState::SynReceived;
        self.syn_pending = true;
    }

    fn on_segment_syn_sent(&mut self, now_ps: u64, seg: &TcpSegment) {
        let f = seg.flags;
        let ack_ok = f.has(TcpFlags::ACK) && seg.ack == self.wire_seq(1);
        if f.has(TcpFlags::ACK) && !ack_ok {
            if !f.has(TcpFlags::RST) {
                self.ctl_queue.push_back(TcpSegment {
                    seq: seg.ack,
                    ack: 0,
                    flags: TcpFlags(TcpFlags::RST),
                    window: 0,
                    payload_len: 0,
                });
            }
            return;
        }
        if f.has(TcpFlags::RST) {
            if ack_ok {
                self.enter_closed(TcpEvent::Reset);
            }
            return;
        }
        if !f.has(TcpFlags::SYN) {
            return;
        }
        self.irs = seg.seq;
        self.rcv_nxt = 1;
        self.snd_wnd = seg.window as u64;
        if ack_ok {
            self.ecn_on = self.cfg.ecn && f.has(TcpFlags::ECE) && !f.has(TcpFlags::CWR);
            self.snd_una = 1;
            self.handshake_done(now_ps);
            self.ack_now = true;
        } else {
            // Simultaneous open (RFC 793): answer with a SYN-ACK.
            self.ecn_on = self.cfg.ecn && f.has(TcpFlags::ECE) && f.has(TcpFlags::CWR);
            self.state = TcpState::SynReceived;
            self.syn_pending = true;
        }
    }

    fn handshake_done(&mut self, now_ps: u64) {
        self.state = TcpState::Established;
        self.rto_deadline_ps = None;
        self.syn_pending = false;
        self.syn_retries = 0;
        if !self.syn_retransmitted {
            self.rtt.sample(now_ps.saturating_sub(self.syn_sent_ps));
        }
        self.events.push_back(TcpEvent::Connected);
    }

    fn on_segment_synchronized(&mut self, now_ps: u64, seg: &TcpSegment, ce: bool) {
        let f = seg.flags;
        let Some(seq) = unwrap_seq(self.wire_ack(), self.rcv_nxt, seg.seq) else {
            self.ack_now = true;
            return;
        };
        if f.has(TcpFlags::RST) {
            // Accept a RST only inside the receive window (RFC 793 / 5961 without challenge ACKs).
            if seq >= self.rcv_nxt && seq <= self.rcv_nxt + self.rwnd {
                // RFC 793: in CLOSING, LAST-ACK and TIME-WAIT the user already closed, so a RST
                // just ends the connection; elsewhere the user is told of the reset.
                let event = match self.state {
                    TcpState::Closing | TcpState::LastAck | TcpState::TimeWait => TcpEvent::Closed,
                    _ => TcpEvent::Reset,
                };
                self.enter_closed(event);
            }
            return;
        }
        if f.has(TcpFlags::SYN) {
            // A retransmitted SYN or SYN-ACK: our answer was lost.
            if self.state == TcpState::SynReceived {
                self.syn_pending = true;
            } else {
                self.ack_now = true;
            }
            return;
        }
        if !f.has(TcpFlags::ACK) {
            return;
        }
        if self.state == TcpState::SynReceived {
            if seg.ack != self.wire_seq(1) {
                self.ctl_queue.push_back(TcpSegment {
                    seq: seg.ack,
                    ack: 0,
                    flags: TcpFlags(TcpFlags::RST),
                    window: 0,
                    payload_len: 0,
                });
                return;
            }
            self.snd_una = 1;
            self.snd_wnd = seg.window as u64;
            self.handshake_done(now_ps);
        }
        if !self.process_ack(now_ps, seg) {
            return;
        }
        if self.state == TcpState::Closed {
            return;
        }
        if f.has(TcpFlags::CWR) {
            // RFC 3168 §6.1.3: the sender reacted; stop echoing (a CE on this very segment
            // sets it again below).
            self.ece_echo = false;
        }
        if seg.payload_len > 0 || f.has(TcpFlags::FIN) {
            self.process_data(now_ps, seq, seg.payload_len as u64, f.has(TcpFlags::FIN), ce);
        }
    }

    /// The sender half of an arriving ACK. Returns false when the segment must be dropped.
    fn process_ack(&mut self, now_ps: u64, seg: &TcpSegment) -> bool {
        let Some(ack) = unwrap_seq(self.wire_seq(self.snd_una), self.snd_una, seg.ack) else {
            return true; // ancient ACK: ignore it, keep the data
        };
        if ack > self.snd_max {
            // RFC 793: an ACK for something not yet sent gets an ACK and is dropped.
            self.ack_now = true;
            return false;
        }
        let ece = self.ecn_on && seg.flags.has(TcpFlags::ECE);
        let window = seg.window as u64;
        if ack < self.snd_una {
            return true;
        }
        if ack == self.snd_una {
            let is_dup = seg.payload_len == 0
                && !seg.flags.has(TcpFlags::FIN)
                && self.snd_max > self.snd_una
                && window == self.snd_wnd;
            self.snd_wnd = window;
            if is_dup {
                self.cc.ns3_hystart_on_ack(now_ps);
                self.on_dupack();
            }
            if ece {
                self.on_ece();
            }
            return true;
        }
        // New data acknowledged.
        let acked = ack - self.snd_una;
        self.stats.bytes_acked += acked;
        self.snd_wnd = window;
        let mut sample = None;
        while let Some(s) = self.in_flight.front() {
            if s.end > ack {
                break;
            }
            sample = Some(*s);
            self.in_flight.pop_front();
        }
        if let Some(s) = sample {
            if !s.retransmitted {
                let rtt_ps = now_ps.saturating_sub(s.sent_ps);
                self.rtt.sample(rtt_ps);
                self.cc.hystart_on_rtt(rtt_ps);
            }
        }
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        self.data_retries = 0;
        self.limited_tx_credit = 0;
        self.cc.dctcp_on_ack(self.snd_una, self.snd_nxt, acked, ece);
        // An ACK that reaches only up to the window that was cut still echoes marks on data
        // sent before the cut; the next reduction needs an ACK for data sent after it.
        if self.cwr_end.is_some_and(|e| self.snd_una > e) {
            self.cwr_end = None;
        }
        let reduced = ece && self.on_ece();
        self.cc.ns3_hystart_on_ack(now_ps);
        if self.in_recovery {
            if ack >= self.recover {
                // RFC 6582 full ACK: deflate to min(ssthresh, FlightSize + SMSS).
                let flight = self.snd_max - self.snd_una;
                self.cc.cwnd = self.cc.ssthresh.min(flight.max(self.mss) + self.mss);
                self.in_recovery = false;
                self.dupacks = 0;
            } else {
                // Partial ACK: resend the next hole, deflate by what was acked, add one MSS back.
                self.fast_rtx_pending = true;
                self.cc.cwnd = self.cc.cwnd.saturating_sub(acked);
                if acked >= self.mss {
                    self.cc.cwnd += self.mss;
                }
                self.cc.cwnd = self.cc.cwnd.max(self.mss);
            }
        } else {
            self.dupacks = 0;
            if !reduced {
                self.cc.hystart_on_ack(now_ps, self.snd_una, self.snd_nxt, self.snd_max);
                self.cc.on_ack(now_ps, acked, self.rtt.srtt_ps());
            }
        }
        // RFC 6298 (5.2 / 5.3): stop the timer when all is acked, else restart it.
        self.rto_deadline_ps = (self.snd_una < self.snd_max).then(|| now_ps.saturating_add(self.rtt.rto_ps()));
        let data_acked = self.snd_una.min(self.data_end()) - 1;
        if data_acked == self.app_bytes && self.app_bytes > self.all_acked_reported {
            self.all_acked_reported = self.app_bytes;
            self.events.push_back(TcpEvent::AllAcked);
        }
        if self.fin_sent() && self.snd_una == self.snd_max {
            match self.state {
                TcpState::FinWait1 => self.state = TcpState::FinWait2,
                TcpState::Closing => self.enter_time_wait(now_ps),
                TcpState::LastAck => self.enter_closed(TcpEvent::Closed),
                _ => {}
            }
        }
        true
    }

    fn on_dupack(&mut self) {
        self.dupacks += 1;
        self.stats.dupacks_received += 1;
        if self.in_recovery {
            // RFC 6582 step 4: each further duplicate means one more segment left the network.
            self.cc.cwnd += self.mss;
            return;
        }
        if self.snd_una < self.recover {
            // RFC 6582 step 2: no new recovery (nor limited transmit, as in ns-3's CA_LOSS
            // state) for losses in a window that was already recovered or timed out.
            return;
        }
        if self.dupacks < self.cfg.dupack_threshold {
            if self.cfg.limited_transmit {
                self.limited_tx_credit += 1;
            }
            return;
        }
        if self.dupacks == self.cfg.dupack_threshold {
            let flight = self.snd_max - self.snd_una;
            self.cc.on_loss(flight);
            self.recover = self.snd_max;
            self.in_recovery = true;
            self.cwr_end = None;
            let inflation = (self.cfg.dupack_threshold as u64).saturating_mul(self.mss);
            self.cc.cwnd = self.cc.ssthresh.saturating_add(inflation);
            self.fast_rtx_pending = true;
            self.limited_tx_credit = 0;
            self.stats.fast_retransmits += 1;
        }
    }

    /// React to ECE at most once per window, never inside loss recovery. True if cwnd shrank.
    fn on_ece(&mut self) -> bool {
        self.stats.ece_received += 1;
        if self.in_recovery || self.cwr_end.is_some() {
            return false;
        }
        self.cc.on_ecn(self.snd_max - self.snd_una);
        self.cwr_end = Some(self.snd_max);
        self.send_cwr = true;
        self.stats.ecn_reductions += 1;
        true
    }

    fn enter_time_wait(&mut self, now_ps: u64) {
        self.rto_deadline_ps = None;
        if self.cfg.time_wait_ps == 0 {
            // The ACK of the peer's FIN may still be pending; poll_transmit sends it when Closed.
            self.state = TcpState::Closed;
            self.delack_deadline_ps = None;
            self.events.push_back(TcpEvent::Closed);
        } else {
            self.state = TcpState::TimeWait;
            self.time_wait_deadline_ps = Some(now_ps.saturating_add(self.cfg.time_wait_ps));
        }
    }

    /// The receiver half: place the bytes, deliver what became contiguous, decide when to ACK.
    fn process_data(&mut self, now_ps: u64, start: u64, len: u64, fin: bool, ce: bool) {
        if !matches!(
            self.state,
            TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2
        ) {
            // After the peer's FIN anything new is a retransmission: just acknowledge.
            self.ack_now = true;
            return;
        }
        self.stats.data_segments_received += (len > 0) as u64;
        if self.ecn_on && len > 0 {
            if self.is_dctcp() {
                if ce != self.dctcp_ce {
                    // RFC 8257 §3.2: on a CE change, first ACK what came before with the old
                    // state if an ACK was being delayed, then ACK this segment at once.
                    if self.delack_segments > 0 {
                        let ack = self.pure_ack();
                        self.ctl_queue.push_back(ack);
                    }
                    self.dctcp_ce = ce;
                    self.ack_now = true;
                }
            } else if ce {
                self.ece_echo = true;
            }
        }
        let end = start + len;
        let right_edge = self.rcv_nxt + self.rwnd;
        if end < self.rcv_nxt || (end == self.rcv_nxt && !(fin && self.peer_fin.is_none())) {
            // Entirely old: a retransmission whose ACK was lost.
            self.stats.duplicate_segments_received += 1;
            self.ack_now = true;
            return;
        }
        if start >= right_edge && len > 0 {
            self.ack_now = true;
            return;
        }
        let end = end.min(right_edge);
        if fin && end == start + len {
            self.peer_fin = Some(end);
        }
        if start > self.rcv_nxt {
            // Out of order: keep the range, send a duplicate ACK now (RFC 5681 §4.2).
            self.ooo.insert(start, end);
            self.stats.out_of_order_segments += 1;
            self.stats.max_ooo_ranges = self.stats.max_ooo_ranges.max(self.ooo.len() as u64);
            self.ack_now = true;
            return;
        }
        let had_hole = !self.ooo.is_empty();
        let old = self.rcv_nxt;
        self.rcv_nxt = self.ooo.advance(end.max(self.rcv_nxt));
        let delivered = self.rcv_nxt - old;
        if delivered > 0 {
            self.stats.bytes_delivered += delivered;
            self.events.push_back(TcpEvent::Delivered { bytes: delivered });
        }
        if self.peer_fin == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            self.ooo.clear();
            self.ack_now = true;
            self.events.push_back(TcpEvent::PeerClosed);
            match self.state {
                TcpState::Established => self.state = TcpState::CloseWait,
                TcpState::FinWait1 => self.state = TcpState::Closing,
                TcpState::FinWait2 => self.enter_time_wait(now_ps),
                _ => {}
            }
            return;
        }
        if had_hole || len == 0 {
            // Filling (part of) a hole: ACK at once so the sender leaves recovery quickly.
            self.ack_now = true;
            return;
        }
        self.delack_segments += 1;
        if self.delack_segments >= self.cfg.delayed_ack_count.max(1) {
            self.ack_now = true;
        } else if self.delack_deadline_ps.is_none() {
            self.delack_deadline_ps = Some(now_ps.saturating_add(self.cfg.delayed_ack_timeout_ps));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unwrap_seq;

    #[test]
    fn unwrap_across_the_32_bit_boundary() {
        let base_wire = u32::MAX - 10;
        assert_eq!(unwrap_seq(base_wire, 100, 5), Some(116));
        assert_eq!(unwrap_seq(base_wire, 100, u32::MAX - 20), Some(90));
        assert_eq!(unwrap_seq(base_wire, 5, u32::MAX - 20), None, "before offset 0");
        assert_eq!(unwrap_seq(3, 1 << 40, 3), Some(1 << 40));
    }
}
