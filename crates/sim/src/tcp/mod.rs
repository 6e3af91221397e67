//! A sans-IO TCP endpoint for the packet simulator: a deterministic state machine that hosts
//! drive with segments, timer expirations and the current time, and that carries *virtual*
//! payloads (byte counts). NewReno, CUBIC and DCTCP congestion control; no engine dependency.
//!
//! # Driving it
//!
//! ```text
//! let mut ep = TcpEndpoint::connect(cfg, isn, now_ps);   // or TcpEndpoint::listen(cfg, isn)
//! ep.send(bytes); ep.close();                              // application side, any time
//! ep.on_segment(now_ps, &seg, ce_marked);                  // a segment arrived (IP CE bit)
//! ep.on_timeout(now_ps);                                   // when now_ps >= next_timeout_ps()
//! while let Some((seg, ect)) = ep.poll_transmit(now_ps) { /* put seg on the wire, ECT if ect */ }
//! while let Some(ev) = ep.poll_event() { /* Connected, Delivered{bytes}, AllAcked, ... */ }
//! ep.next_timeout_ps();                                    // re-arm one timer at this instant
//! ```
//!
//! After any call that can change the endpoint (`on_segment`, `on_timeout`, `send`, `close`),
//! drain `poll_transmit` until `None`, drain `poll_event`, and re-read `next_timeout_ps`. A host
//! may call `on_timeout` early or late; it only acts on timers that are due. Nothing allocates
//! per segment once the small reused queues have grown (in-flight records, out-of-order ranges,
//! events).
//!
//! # Behaviour and the choices made (RFCs, then Linux / ns-3 where they agree)
//!
//! * **Sequence numbers** wrap as u32 on the wire; inside they are u64 offsets from the ISN
//!   (SYN = 0), and arriving numbers are unwrapped against the nearest expected value, so
//!   an ISN near `u32::MAX` works like any other.
//! * **Handshake**: SYN → SYN-ACK → ACK. The SYN and SYN-ACK are retransmitted after
//!   `initial_rto_ps`, doubling each time, up to `max_syn_retries`, then `TimedOut`. The first
//!   data leaves with the handshake's ACK, one RTT after `connect`. A SYN-to-SYN-ACK (or
//!   SYN-ACK-to-ACK) time gives the first RTT sample unless the SYN was retransmitted (Karn).
//!   ECN is negotiated per RFC 3168 (ECE|CWR on the SYN, ECE on the SYN-ACK) when both ends
//!   have `ecn`. No options are modelled: the window is a full u32 (no scaling needed), no
//!   SACK, no timestamps. RFC 6298 (5.7)'s 3 s RTO after a retransmitted SYN is not applied:
//!   the RTO stays backed off until the first valid sample, which comes one RTT later.
//! * **Sending**: up to min(cwnd, peer window) of sequence space in flight, MSS-sized
//!   segments, PSH on the segment that ends the queued data, FIN on (or after) the last data.
//!   No Nagle; sender-side silly-window avoidance only (no runt segment while data is in flight
//!   unless it ends the stream). A FIN alone is sent even when the window is full.
//! * **Slow start / congestion avoidance** (RFC 5681) with byte counting (RFC 3465, L = 2 MSS);
//!   initial ssthresh is unbounded. No cwnd validation (RFC 7661): application-limited
//!   periods still grow cwnd, as in ns-3.
//! * **HyStart** (CUBIC's `hystart`, a `Hystart` rule; the experiments' `hystart` parameter):
//!   - `Rfc9406` (the default) — HyStart++ during the initial slow start only: per round
//!     (SND.UNA passing the SND.NXT of the round's start) the min of the first 8 RTT samples is
//!     compared with the previous round's; an increase of clamp(min/8, 4 ms, 16 ms) enters
//!     Conservative Slow Start (growth / 4), a lower RTT returns to slow start, and after 5 CSS
//!     rounds ssthresh = cwnd. With datacenter RTTs it only acts once queueing adds milliseconds.
//!   - `Ns3` — ns-3.36.1's `TcpCubic` HyStart with its default attributes (what the SwitchV2P
//!     artifact runs; Linux-style). The RTT it judges is a smoothed RTT of data segments only
//!     (ns-3 hands CUBIC `m_lastRtt`, its estimator's SRTT, and takes no handshake sample); its
//!     minimum `delay_min` is kept since the start or the last RTO. On every new or duplicate
//!     ACK, before the window grows (ns-3's `PktsAcked`), and only while 16 MSS ≤ cwnd ≤
//!     ssthresh: (a) *ACK train* — an ACK within 2 ms of the previous tested one extends the
//!     train, and the train passing `delay_min` since the round's start ends slow start;
//!     (b) *delay* — the min of the round's first 8 RTT values, once 8 are in, above
//!     `delay_min` + clamp(`delay_min`, 4 ms, 1 s) ends it. Ending means ssthresh = cwnd. A
//!     round starts when, in slow start, an ACK passes the highest sequence sent at the last
//!     round's start (ns-3's `IncreaseWindow`); its start time is the train's origin. RTT values
//!     within 10 ms of a congestion-avoidance epoch's start are ignored (ns-3's CubicDelta). An
//!     exit found stays found until an RTO, which forgets `delay_min` and starts a round (ns-3's
//!     CA_LOSS reset); fast recovery and ECN leave it alone. At microsecond RTTs every ACK is
//!     within the 2 ms delta, so the train test reduces to "a tested ACK comes more than
//!     `delay_min` after its round began": on a clean path (every RTT equal) once a round's ACKs
//!     at line rate span an RTT (cwnd past the pipe size), where RTTs vary (queues elsewhere, a
//!     gateway) as soon as one ACK is late, from 16 segments on.
//!   - `Off` — slow start runs until a loss or an ECN echo.
//! * **CUBIC** (RFC 9438): on congestion W_max = cwnd (or cwnd·(1+β)/2 with fast convergence
//!   when cwnd < W_max), ssthresh = cwnd·β; an epoch starts at the first ACK in congestion
//!   avoidance with K = ∛((W_max − cwnd)/C); cwnd grows towards W_cubic(t + SRTT), clamped to
//!   [cwnd, 1.5 cwnd], and never below the Reno-friendly W_est (α = 3(1−β)/(1+β) until W_est
//!   reaches the pre-reduction cwnd, then 1). ECN echoes are congestion events like loss.
//! * **DCTCP** (RFC 8257): alpha ← (1−g)·alpha + g·F once per observation window (F = marked /
//!   acked bytes; window ends when SND.UNA passes the SND.NXT of its start), then on ECE
//!   cwnd ← cwnd·(1 − alpha/2) at most once per window (alpha is updated before the cut, as in
//!   Linux), with CWR on the next new data segment. Loss halves the flight size like Reno.
//!   The receiver keeps the RFC's CE state: on a change it first sends the ACK it was
//!   delaying, with the old ECE value, then acknowledges the new segment at once. After the
//!   handshake every DCTCP packet (pure ACKs and retransmissions too) is sent ECT, as Linux
//!   does (SYN and SYN-ACK are not: ECN is not yet negotiated); with classic ECN only new
//!   data is ECT (RFC 3168 §6.1.5) and the receiver latches ECE until CWR.
//! * **Fast retransmit / NewReno recovery** (RFC 6582) after `dupack_threshold` duplicate
//!   ACKs (RFC 5681 definition: no data, same ack and window, data outstanding):
//!   ssthresh from the controller, cwnd = ssthresh + threshold·MSS, +1 MSS per further
//!   duplicate, a partial ACK retransmits the next hole and deflates cwnd, a full ACK (one that
//!   covers `recover`) sets cwnd = min(ssthresh, flight + MSS). No new recovery starts before
//!   SND.UNA passes the previous `recover` (also set at an RTO); the optional ACK and
//!   timestamp heuristics of RFC 6582 §4 are not applied, so duplicate ACKs provoked by
//!   go-back-N resends after a *spurious* timeout can still start a fast retransmit.
//!   Limited transmit (ns-3's, also Linux's effective behaviour): each duplicate ACK below
//!   the threshold, outside recovery and after SND.UNA passed `recover`, lets one new segment
//!   go past cwnd (peer window permitting). No F-RTO or spurious-timeout undo.
//! * **RTO** (RFC 6298): SRTT/RTTVAR with gains 1/8 and 1/4, RTO = SRTT + max(G, 4·RTTVAR)
//!   clamped to [min_rto, max_rto]; samples only from segments never retransmitted (Karn) —
//!   every in-flight segment's send time is kept, and a cumulative ACK samples the newest
//!   segment it fully covers. The timer restarts on every ACK of new data (RFC 6298 5.3, the
//!   "slow but steady" variant of RFC 6582). A timeout doubles the RTO until the next valid
//!   sample, sets ssthresh from the controller, cwnd = 1 MSS, and resends go-back-N from
//!   SND.UNA. After `max_data_retries` consecutive timeouts the connection ends `TimedOut`.
//! * **Receiving**: in-order bytes are delivered to the application at once (`Delivered`), so
//!   the advertised window is the constant `receive_window_bytes`; data beyond it is trimmed.
//!   Out-of-order bytes are kept as sorted disjoint ranges and delivered when the hole fills.
//!   Delayed ACK as ns-3: every `delayed_ack_count`-th in-order data segment (of any size) or
//!   after `delayed_ack_timeout_ps`; an immediate ACK for out-of-order data, for a segment
//!   that fills (part of) a hole, for duplicates, and for a FIN. As in ns-3, a delayed-ACK
//!   timeout above `min_rto_ps` makes the last segment of an odd-sized burst time out at the
//!   sender (a spurious retransmission); datacenter profiles should keep it below min RTO.
//!   Windows never close (the application reads at once), so there is no zero-window probing.
//! * **Close**: `close` queues a FIN after all data; the RFC 793 states (FIN-WAIT-1/2,
//!   CLOSING, CLOSE-WAIT, LAST-ACK, TIME-WAIT) are followed. `PeerClosed` reports the peer's
//!   FIN; `Closed` the end. TIME-WAIT lasts `time_wait_ps` (default 1 s, re-acking a
//!   retransmitted FIN; 0 gives `Closed` at once, and the final ACK is still handed out by
//!   `poll_transmit`). `AllAcked` is reported each time every byte given to `send` has been
//!   acknowledged.
//! * **RST**: accepted when its sequence number is in the receive window (or, in SYN-SENT,
//!   when it acknowledges the SYN) and ends the connection with `Reset`. A RST is sent for an
//!   ACK to a listener or an unacceptable ACK during the handshake, and by `abort`. A closed
//!   endpoint ignores segments; answering strangers is the host's business.

mod cc;
mod config;
mod endpoint;
mod profiles;
mod ranges;
mod rtt;

#[cfg(test)]
mod tests;

pub use crate::packet::TcpFlags;
pub use config::{CongestionControl, Hystart, TcpConfig, TcpConfigError};
pub use endpoint::TcpEndpoint;
pub use profiles::tcp_config;

/// One TCP segment as the endpoint sees it: header fields and a virtual payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment {
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    /// Receive window in bytes (unscaled: the model has no window-scale option to carry).
    pub window: u32,
    pub payload_len: u32,
}

/// What the application learns from the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpEvent {
    /// The handshake completed.
    Connected,
    /// `bytes` more in-order bytes reached the application (each byte exactly once).
    Delivered { bytes: u64 },
    /// Every byte handed to `send` so far has been acknowledged.
    AllAcked,
    /// The peer's FIN arrived (after all its data).
    PeerClosed,
    /// The connection ended normally (or by `abort`).
    Closed,
    /// The peer reset the connection.
    Reset,
    /// The handshake or a retransmission gave up.
    TimedOut,
}

/// RFC 793 connection states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpState {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

impl TcpState {
    /// Past the handshake (data may flow in at least one direction).
    pub fn is_synchronized(self) -> bool {
        !matches!(
            self,
            TcpState::Closed | TcpState::Listen | TcpState::SynSent | TcpState::SynReceived
        )
    }
}

/// Counters and current values of one endpoint. Counters only grow; the `*_bytes` / `*_ps`
/// gauges are refreshed after every call that can change them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Every segment handed out by `poll_transmit`.
    pub segments_sent: u64,
    /// Segments with payload, first transmissions and retransmissions.
    pub data_segments_sent: u64,
    /// ACK-only segments (no data, SYN, FIN or RST).
    pub pure_acks_sent: u64,
    /// First-transmission payload bytes.
    pub bytes_sent: u64,
    /// Segments sent again (fast retransmit, partial-ACK retransmit, go-back-N after an RTO).
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// RTO expirations, handshake ones included.
    pub timeouts: u64,
    pub syn_retransmits: u64,
    /// Entries into fast recovery.
    pub fast_retransmits: u64,
    pub segments_received: u64,
    pub data_segments_received: u64,
    pub duplicate_segments_received: u64,
    pub out_of_order_segments: u64,
    /// Most out-of-order ranges held at once.
    pub max_ooo_ranges: u64,
    pub dupacks_received: u64,
    /// Sequence space acknowledged by the peer.
    pub bytes_acked: u64,
    /// In-order bytes delivered to the application.
    pub bytes_delivered: u64,
    /// Segments that arrived with IP CE.
    pub ce_received: u64,
    /// ACKs that arrived with ECE (ECN negotiated).
    pub ece_received: u64,
    /// cwnd cuts caused by ECN echoes.
    pub ecn_reductions: u64,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    /// 0 until the first RTT sample.
    pub srtt_ps: u64,
    pub rttvar_ps: u64,
    pub min_rtt_ps: u64,
    pub rto_ps: u64,
}
