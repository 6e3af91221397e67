//! TCP settings with their defaults in one place (the ns-3 "attributes" of this model), and the
//! congestion-control choice.

use thiserror::Error;

const PS_PER_MS: u64 = 1_000_000_000;
const PS_PER_S: u64 = 1_000_000_000_000;

/// Which congestion controller a sender runs, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CongestionControl {
    /// RFC 5681 slow start / congestion avoidance with RFC 6582 fast recovery, halving on loss.
    NewReno,
    /// RFC 9438 CUBIC.
    Cubic {
        /// Multiplicative decrease factor (RFC 9438: 0.7).
        beta: f64,
        /// Cubic scaling constant in segments / s³ (RFC 9438: 0.4).
        c: f64,
        /// Release bandwidth faster when W_max shrinks (RFC 9438 §4.7).
        fast_convergence: bool,
        /// Never grow slower than the Reno-friendly estimate W_est (RFC 9438 §4.3).
        tcp_friendly: bool,
        /// How slow start may end before a loss: RFC 9406 HyStart++ by default (its 4 ms
        /// minimum delay threshold means it only acts when queueing adds milliseconds), ns-3.36's
        /// ACK-train and delay HyStart, or none.
        hystart: Hystart,
    },
    /// RFC 8257 DCTCP: Reno growth, ECN-proportional decrease. Needs `TcpConfig::ecn`.
    Dctcp {
        /// EWMA gain for alpha (RFC 8257: 1/16).
        g: f64,
        /// Alpha before the first observation window ends (RFC 8257 and Linux: 1).
        initial_alpha: f64,
    },
}

impl CongestionControl {
    /// CUBIC with the RFC 9438 constants.
    pub fn cubic() -> Self {
        CongestionControl::Cubic {
            beta: 0.7,
            c: 0.4,
            fast_convergence: true,
            tcp_friendly: true,
            hystart: Hystart::Rfc9406,
        }
    }

    /// The same controller with another HyStart rule (only CUBIC has one; others are returned
    /// unchanged).
    pub fn with_hystart(self, rule: Hystart) -> Self {
        match self {
            CongestionControl::Cubic { beta, c, fast_convergence, tcp_friendly, .. } => {
                CongestionControl::Cubic { beta, c, fast_convergence, tcp_friendly, hystart: rule }
            }
            other => other,
        }
    }

    /// DCTCP with the RFC 8257 constants.
    pub fn dctcp() -> Self {
        CongestionControl::Dctcp {
            g: 1.0 / 16.0,
            initial_alpha: 1.0,
        }
    }

    pub fn is_dctcp(&self) -> bool {
        matches!(self, CongestionControl::Dctcp { .. })
    }
}

/// CUBIC's hybrid slow start: which rule (if any) ends slow start before a loss does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hystart {
    /// Slow start runs until a loss or ECN echo.
    Off,
    /// RFC 9406 HyStart++, initial slow start only: a per-round min-RTT increase of at least
    /// clamp(min/8, 4 ms, 16 ms) enters Conservative Slow Start; five CSS rounds end it.
    Rfc9406,
    /// ns-3.36.1's `TcpCubic` HyStart (the Linux-style one the SwitchV2P artifact runs): once
    /// cwnd ≥ 16 segments, slow start ends when a round's ACKs (each within 2 ms of the previous)
    /// have kept coming for longer than the minimum smoothed RTT, or when the round's first 8
    /// smoothed-RTT values exceed that minimum by clamp(minimum, 4 ms, 1 s). Re-armed at every
    /// retransmission timeout. See the `tcp` module doc.
    Ns3,
}

impl Hystart {
    /// By the name an experiment parameter uses: off, rfc9406 or ns3.
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "off" => Some(Hystart::Off),
            "rfc9406" => Some(Hystart::Rfc9406),
            "ns3" => Some(Hystart::Ns3),
            _ => None,
        }
    }
}

/// Settings of one TCP endpoint. `Default` gives the values documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes per full segment (SMSS). Default 1460 (Ethernet MTU 1500).
    pub mss_bytes: u32,
    /// Initial congestion window in segments (RFC 6928, ns-3 and Linux: 10).
    pub initial_cwnd_segments: u32,
    /// Lower bound of the retransmission timeout. Default 200 ms (Linux; ns-3 uses 1 s).
    pub min_rto_ps: u64,
    /// RTO before the first RTT sample, also the SYN / SYN-ACK timeout. Default 1 s (RFC 6298).
    pub initial_rto_ps: u64,
    /// Upper bound of the backed-off RTO. Default 60 s (RFC 6298 allows any value ≥ 60 s).
    pub max_rto_ps: u64,
    /// Clock granularity G of RFC 6298: RTO ≥ SRTT + G. Default 1 ms (ns-3's ClockGranularity).
    pub clock_granularity_ps: u64,
    /// Duplicate ACKs that trigger fast retransmit. Default 3; a huge value (the SwitchV2P
    /// artifact uses 2048) leaves loss recovery to the RTO.
    pub dupack_threshold: u32,
    /// Send one new segment past cwnd for each duplicate ACK below `dupack_threshold`, as ns-3
    /// (LimitedTransmit) and, through its in-flight accounting, Linux do; with the threshold
    /// at 3 this is RFC 3042's two segments. Default true. With a huge threshold it keeps the
    /// ACK clock (and the flow) going until the RTO repairs the loss.
    pub limited_transmit: bool,
    /// Acknowledge every Nth in-order data segment (ns-3's DelAckCount). Default 2; 1 = no delay.
    pub delayed_ack_count: u32,
    /// Longest an ACK is held back. Default 200 ms (ns-3's DelAckTimeout, Linux's maximum).
    pub delayed_ack_timeout_ps: u64,
    /// Default CUBIC (Linux's and ns-3's default).
    pub congestion_control: CongestionControl,
    /// Negotiate ECN (RFC 3168) on the handshake. Default false. DCTCP needs it on both ends.
    pub ecn: bool,
    /// Advertised receive window. The application reads in-order bytes as soon as they are
    /// delivered, so this is constant and bounds out-of-order data too. Default 4 MiB (the order
    /// of Linux's autotuned buffers; ns-3's 128 KiB would cap datacenter flows well below line
    /// rate). Values below one MSS are raised to one MSS so a sender can always make progress.
    pub receive_window_bytes: u32,
    /// SYN (or SYN-ACK) retransmissions before giving up with `TimedOut`. Default 6 (Linux, ns-3).
    pub max_syn_retries: u32,
    /// Consecutive data RTOs before giving up with `TimedOut`. Default 15 (Linux tcp_retries2).
    pub max_data_retries: u32,
    /// How long TIME-WAIT lasts before `Closed`; during it a retransmitted FIN is re-acked.
    /// Default 1 s: long enough to answer the peer's FIN retransmissions after a lost final
    /// ACK, far shorter than 2·MSL (a simulation has no stray old duplicates to wait out).
    /// 0 reports `Closed` at once (the final ACK is still handed out by `poll_transmit`).
    pub time_wait_ps: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1460,
            initial_cwnd_segments: 10,
            min_rto_ps: 200 * PS_PER_MS,
            initial_rto_ps: PS_PER_S,
            max_rto_ps: 60 * PS_PER_S,
            clock_granularity_ps: PS_PER_MS,
            dupack_threshold: 3,
            limited_transmit: true,
            delayed_ack_count: 2,
            delayed_ack_timeout_ps: 200 * PS_PER_MS,
            congestion_control: CongestionControl::cubic(),
            ecn: false,
            receive_window_bytes: 4 << 20,
            max_syn_retries: 6,
            max_data_retries: 15,
            time_wait_ps: PS_PER_S,
        }
    }
}

/// A setting that cannot work, named by its field.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TcpConfigError {
    #[error("tcp config: field `{field}` {message}")]
    Invalid { field: &'static str, message: String },
}

impl TcpConfig {
    /// Check the settings; the endpoint itself never panics on a bad config (it clamps), but an
    /// experiment should reject one with this error instead of running something unintended.
    pub fn validate(&self) -> Result<(), TcpConfigError> {
        let bad = |field: &'static str, message: String| Err(TcpConfigError::Invalid { field, message });
        if self.mss_bytes == 0 {
            return bad("mss_bytes", "must be at least 1, got 0".into());
        }
        if self.initial_cwnd_segments == 0 {
            return bad("initial_cwnd_segments", "must be at least 1, got 0".into());
        }
        if self.min_rto_ps == 0 {
            return bad("min_rto_ps", "must be positive, got 0".into());
        }
        if self.max_rto_ps < self.min_rto_ps {
            return bad(
                "max_rto_ps",
                format!("must be ≥ min_rto_ps ({}), got {}", self.min_rto_ps, self.max_rto_ps),
            );
        }
        if self.initial_rto_ps == 0 {
            return bad("initial_rto_ps", "must be positive, got 0".into());
        }
        if self.dupack_threshold == 0 {
            return bad("dupack_threshold", "must be at least 1, got 0".into());
        }
        if self.delayed_ack_count == 0 {
            return bad(
                "delayed_ack_count",
                "must be at least 1 (1 acks every segment), got 0".into(),
            );
        }
        if self.receive_window_bytes < self.mss_bytes {
            return bad(
                "receive_window_bytes",
                format!(
                    "must be ≥ mss_bytes ({}), got {}",
                    self.mss_bytes, self.receive_window_bytes
                ),
            );
        }
        match self.congestion_control {
            CongestionControl::NewReno => {}
            CongestionControl::Cubic { beta, c, .. } => {
                if !(beta > 0.0 && beta < 1.0) {
                    return bad("congestion_control.beta", format!("must be in (0, 1), got {beta}"));
                }
                if !(c > 0.0 && c.is_finite()) {
                    return bad("congestion_control.c", format!("must be a positive number, got {c}"));
                }
            }
            CongestionControl::Dctcp { g, initial_alpha } => {
                if !(g > 0.0 && g <= 1.0) {
                    return bad("congestion_control.g", format!("must be in (0, 1], got {g}"));
                }
                if !(0.0..=1.0).contains(&initial_alpha) {
                    return bad(
                        "congestion_control.initial_alpha",
                        format!("must be in [0, 1], got {initial_alpha}"),
                    );
                }
                if !self.ecn {
                    return bad("ecn", "must be true with DCTCP (it reacts only to ECN marks)".into());
                }
            }
        }
        Ok(())
    }
}
