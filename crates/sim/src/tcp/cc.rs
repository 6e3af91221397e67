//! Congestion window arithmetic for NewReno, CUBIC (RFC 9438) and DCTCP (RFC 8257). The endpoint
//! decides *when* something happened (ACK, loss, ECN echo, timeout); this decides by how much the
//! window moves. Windows are bytes; CUBIC's cubic is computed in f64 bytes and seconds.

use super::config::{CongestionControl, Hystart};
use super::rtt::RttEstimator;

const PS_PER_S: f64 = 1e12;

#[derive(Debug, Clone)]
pub(crate) struct CongestionState {
    kind: CongestionControl,
    mss: u64,
    pub(crate) cwnd: u64,
    pub(crate) ssthresh: u64,
    /// Bytes acked since the last one-MSS increase in Reno congestion avoidance (RFC 3465).
    reno_bytes_acked: u64,
    cubic: CubicState,
    dctcp: DctcpState,
    hystart: HystartState,
    /// ns-3.36.1's HyStart, when the controller is CUBIC with `Hystart::Ns3`.
    ns3_hystart: Option<Ns3Hystart>,
}

// RFC 9406 constants (no pacing, so no per-ACK growth limit beyond byte counting's L).
const HYSTART_MIN_RTT_THRESH_PS: u64 = 4_000_000_000;
const HYSTART_MAX_RTT_THRESH_PS: u64 = 16_000_000_000;
const HYSTART_MIN_RTT_DIVISOR: u64 = 8;
const HYSTART_N_RTT_SAMPLE: u32 = 8;
const HYSTART_CSS_GROWTH_DIVISOR: u64 = 4;
const HYSTART_CSS_ROUNDS: u32 = 5;

/// RFC 9406 HyStart++ for the initial slow start only (its §4.2 recommendation).
#[derive(Debug, Clone)]
struct HystartState {
    active: bool,
    window_end: u64,
    last_round_min_rtt_ps: u64,
    current_round_min_rtt_ps: u64,
    samples: u32,
    /// In Conservative Slow Start: the min RTT that triggered it and the rounds spent there.
    css: Option<(u64, u32)>,
}

// ns-3.36.1 TcpCubic's HyStart attributes at their defaults (the SwitchV2P artifact sets none).
const NS3_HYSTART_LOW_WINDOW_SEGMENTS: u64 = 16;
const NS3_HYSTART_ACK_DELTA_PS: u64 = 2_000_000_000;
const NS3_HYSTART_MIN_SAMPLES: u32 = 8;
const NS3_HYSTART_DELAY_MIN_PS: u64 = 4_000_000_000;
const NS3_HYSTART_DELAY_MAX_PS: u64 = 1_000_000_000_000;
/// ns-3's CubicDelta: RTT values within this long of a congestion-avoidance epoch's start are
/// ignored (meant for "right after fast recovery").
const NS3_CUBIC_DELTA_PS: u64 = 10_000_000_000;

/// ns-3.36.1's hybrid slow start (module doc of `tcp`). Times are picoseconds; `None` stands
/// for ns-3's "not yet set" (Time::Min).
#[derive(Debug, Clone)]
struct Ns3Hystart {
    /// Smoothed RTT from data segments only, as ns-3's m_lastRtt (ns-3 keeps no RTT history
    /// for the SYN, so the handshake gives it no sample; the endpoint's own SRTT has one).
    /// Only its SRTT is used (RFC 6298 gains, as ns-3's RttMeanDeviation).
    rtt: RttEstimator,
    /// Minimum of the smoothed RTTs seen since the connection start or the last RTO.
    delay_min_ps: Option<u64>,
    /// An exit point was found (by either test): no more tests until an RTO re-arms them.
    found: bool,
    round_start_ps: Option<u64>,
    last_ack_ps: Option<u64>,
    /// The round ends when an ACK passes this (the highest sequence sent at its start).
    end_seq: u64,
    /// Smallest of the round's first `NS3_HYSTART_MIN_SAMPLES` smoothed RTTs.
    curr_rtt_ps: Option<u64>,
    samples: u32,
}

impl Ns3Hystart {
    fn new() -> Self {
        Ns3Hystart {
            rtt: RttEstimator::new(1, 1, 1, 0),
            delay_min_ps: None,
            found: false,
            round_start_ps: None,
            last_ack_ps: None,
            end_seq: 0,
            curr_rtt_ps: None,
            samples: 0,
        }
    }

    fn reset_round(&mut self, now_ps: u64, snd_max: u64) {
        self.round_start_ps = Some(now_ps);
        self.last_ack_ps = Some(now_ps);
        self.end_seq = snd_max;
        self.curr_rtt_ps = None;
        self.samples = 0;
    }
}

#[derive(Debug, Clone, Default)]
struct CubicState {
    /// W_max in bytes: the window just before the last reduction (after fast convergence).
    w_max: f64,
    /// cwnd just before the last reduction (cwnd_prior of RFC 9438 §4.3).
    cwnd_prior: f64,
    /// Time to reach W_max from the start of the epoch, seconds.
    k_s: f64,
    epoch_start_ps: Option<u64>,
    /// Reno-friendly estimate W_est in bytes.
    w_est: f64,
    /// Sub-byte growth carried between ACKs so slow growth is not rounded away.
    carry: f64,
}

#[derive(Debug, Clone)]
struct DctcpState {
    alpha: f64,
    window_end: u64,
    acked_bytes: u64,
    marked_bytes: u64,
}

impl CongestionState {
    pub(crate) fn new(kind: CongestionControl, mss: u64, initial_cwnd_segments: u64) -> Self {
        let initial_alpha = match kind {
            CongestionControl::Dctcp { initial_alpha, .. } => initial_alpha.clamp(0.0, 1.0),
            _ => 1.0,
        };
        CongestionState {
            kind,
            mss,
            cwnd: mss * initial_cwnd_segments.max(1),
            // RFC 5681: "arbitrarily high"; start in slow start until the first congestion.
            ssthresh: u64::MAX / 4,
            reno_bytes_acked: 0,
            cubic: CubicState::default(),
            dctcp: DctcpState {
                alpha: initial_alpha,
                window_end: 1,
                acked_bytes: 0,
                marked_bytes: 0,
            },
            ns3_hystart: matches!(kind, CongestionControl::Cubic { hystart: Hystart::Ns3, .. })
                .then(Ns3Hystart::new),
            hystart: HystartState {
                active: matches!(kind, CongestionControl::Cubic { hystart: Hystart::Rfc9406, .. }),
                window_end: 0,
                last_round_min_rtt_ps: u64::MAX,
                current_round_min_rtt_ps: u64::MAX,
                samples: 0,
                css: None,
            },
        }
    }

    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    pub(crate) fn dctcp_alpha(&self) -> Option<f64> {
        self.kind.is_dctcp().then_some(self.dctcp.alpha)
    }

    /// Cubic's (W_max bytes, K seconds) of the current epoch, for tests and traces.
    pub(crate) fn cubic_w_max_and_k(&self) -> Option<(f64, f64)> {
        matches!(self.kind, CongestionControl::Cubic { .. }).then_some((self.cubic.w_max, self.cubic.k_s))
    }

    /// Window growth for `acked_bytes` newly acknowledged outside recovery.
    pub(crate) fn on_ack(&mut self, now_ps: u64, acked_bytes: u64, srtt_ps: Option<u64>) {
        if acked_bytes == 0 {
            return;
        }
        if self.in_slow_start() {
            // RFC 3465 appropriate byte counting with L = 2 SMSS: a stretch ACK (delayed ACK
            // of two segments) grows the window by what it acknowledged, not by one MSS.
            let mut inc = acked_bytes.min(2 * self.mss);
            if self.hystart.active && self.hystart.css.is_some() {
                inc /= HYSTART_CSS_GROWTH_DIVISOR;
            }
            self.cwnd = (self.cwnd + inc).min(self.ssthresh.max(self.cwnd));
            return;
        }
        match self.kind {
            CongestionControl::NewReno | CongestionControl::Dctcp { .. } => self.reno_avoidance(acked_bytes),
            CongestionControl::Cubic {
                beta, c, tcp_friendly, ..
            } => self.cubic_avoidance(now_ps, acked_bytes, srtt_ps, beta, c, tcp_friendly),
        }
    }

    fn reno_avoidance(&mut self, acked_bytes: u64) {
        // RFC 5681 (3.1) with byte counting: one MSS per cwnd of acknowledged bytes.
        self.reno_bytes_acked += acked_bytes;
        if self.reno_bytes_acked >= self.cwnd {
            self.reno_bytes_acked -= self.cwnd;
            self.cwnd += self.mss;
        }
    }

    fn cubic_avoidance(&mut self, now_ps: u64, acked: u64, srtt_ps: Option<u64>, beta: f64, c: f64, friendly: bool) {
        let mss = self.mss as f64;
        let cwnd = self.cwnd as f64;
        let st = &mut self.cubic;
        let epoch = match st.epoch_start_ps {
            Some(e) => e,
            None => {
                // RFC 9438 §4.2: a new congestion-avoidance epoch starts at the first ACK.
                st.epoch_start_ps = Some(now_ps);
                if cwnd < st.w_max {
                    st.k_s = ((st.w_max - cwnd) / (c * mss)).cbrt();
                } else {
                    st.k_s = 0.0;
                    st.w_max = cwnd;
                }
                st.w_est = cwnd;
                st.carry = 0.0;
                now_ps
            }
        };
        let t = now_ps.saturating_sub(epoch) as f64 / PS_PER_S;
        let rtt = srtt_ps.unwrap_or(0) as f64 / PS_PER_S;
        let w_cubic = |t: f64| c * mss * (t - st.k_s).powi(3) + st.w_max;
        if friendly {
            // RFC 9438 §4.3: W_est grows like Reno with the alpha that matches CUBIC's beta,
            // then like Reno itself once it passes the window before the last reduction.
            let alpha = if st.w_est >= st.cwnd_prior {
                1.0
            } else {
                3.0 * (1.0 - beta) / (1.0 + beta)
            };
            st.w_est += alpha * mss * acked as f64 / cwnd;
            if w_cubic(t) < st.w_est {
                if st.w_est > cwnd {
                    self.cwnd = st.w_est as u64;
                }
                return;
            }
        }
        // RFC 9438 §4.4/4.5: aim at W_cubic one RTT ahead, clamped to [cwnd, 1.5 cwnd].
        let target = w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        st.carry += (target - cwnd) * acked as f64 / cwnd;
        let whole = st.carry.floor();
        if whole >= 1.0 {
            st.carry -= whole;
            self.cwnd += whole as u64;
        }
    }

    /// Whether HyStart++ has moved the initial slow start into Conservative Slow Start.
    pub(crate) fn in_conservative_slow_start(&self) -> bool {
        self.hystart.active && self.hystart.css.is_some()
    }

    /// HyStart round bookkeeping (either mode), before the growth of an ACK that moved SND.UNA.
    pub(crate) fn hystart_on_ack(&mut self, now_ps: u64, snd_una: u64, snd_nxt: u64, snd_max: u64) {
        self.ns3_hystart_round(now_ps, snd_una, snd_max);
        if !self.hystart.active || !self.in_slow_start() {
            return;
        }
        let h = &mut self.hystart;
        if snd_una >= h.window_end {
            h.last_round_min_rtt_ps = h.current_round_min_rtt_ps;
            h.current_round_min_rtt_ps = u64::MAX;
            h.samples = 0;
            h.window_end = snd_nxt;
            if let Some((_, rounds)) = h.css.as_mut() {
                *rounds += 1;
                if *rounds >= HYSTART_CSS_ROUNDS {
                    // RFC 9406: CSS lasted long enough, go to congestion avoidance.
                    h.active = false;
                    h.css = None;
                    self.ssthresh = self.cwnd;
                }
            }
        }
    }

    /// One RTT sample of a data segment: HyStart++'s delay-increase detection, or ns-3
    /// HyStart's smoothed RTT.
    pub(crate) fn hystart_on_rtt(&mut self, rtt_ps: u64) {
        self.ns3_hystart_on_rtt(rtt_ps);
        if !self.hystart.active || !self.in_slow_start() {
            return;
        }
        let h = &mut self.hystart;
        h.current_round_min_rtt_ps = h.current_round_min_rtt_ps.min(rtt_ps);
        h.samples += 1;
        if h.samples < HYSTART_N_RTT_SAMPLE || h.last_round_min_rtt_ps == u64::MAX {
            return;
        }
        match h.css {
            None => {
                let thresh = (h.last_round_min_rtt_ps / HYSTART_MIN_RTT_DIVISOR)
                    .clamp(HYSTART_MIN_RTT_THRESH_PS, HYSTART_MAX_RTT_THRESH_PS);
                if h.current_round_min_rtt_ps >= h.last_round_min_rtt_ps.saturating_add(thresh) {
                    h.css = Some((h.current_round_min_rtt_ps, 0));
                }
            }
            Some((baseline, _)) => {
                if h.current_round_min_rtt_ps < baseline {
                    // The delay increase was spurious: back to standard slow start.
                    h.css = None;
                }
            }
        }
    }

    /// ns-3 HyStart: a data RTT sample, folded into its own smoothed RTT.
    fn ns3_hystart_on_rtt(&mut self, rtt_ps: u64) {
        if let Some(h) = self.ns3_hystart.as_mut() {
            h.rtt.sample(rtt_ps);
        }
    }

    /// ns-3 HyStart's per-ACK tests (ns-3's `PktsAcked`): on every ACK that acknowledges new
    /// data or is a duplicate, before the window grows. The RTT it judges is the smoothed one.
    pub(crate) fn ns3_hystart_on_ack(&mut self, now_ps: u64) {
        let (cwnd, ssthresh, mss) = (self.cwnd, self.ssthresh, self.mss);
        let epoch = self.cubic.epoch_start_ps;
        let Some(h) = self.ns3_hystart.as_mut() else {
            return;
        };
        let Some(rtt) = h.rtt.srtt_ps() else {
            return; // no data RTT measured yet
        };
        if epoch.is_some_and(|e| now_ps.saturating_sub(e) < NS3_CUBIC_DELTA_PS) {
            return;
        }
        let delay_min = h.delay_min_ps.map_or(rtt, |d| d.min(rtt));
        h.delay_min_ps = Some(delay_min);
        if h.found || cwnd > ssthresh || cwnd < NS3_HYSTART_LOW_WINDOW_SEGMENTS * mss {
            return;
        }
        // ACK train: ACKs keep coming closely spaced for longer than the minimum delay.
        if let (Some(last), Some(start)) = (h.last_ack_ps, h.round_start_ps) {
            if now_ps.saturating_sub(last) <= NS3_HYSTART_ACK_DELTA_PS {
                h.last_ack_ps = Some(now_ps);
                if now_ps.saturating_sub(start) > delay_min {
                    h.found = true;
                }
            }
        }
        // Delay: the round's first samples; every later one compares their minimum.
        if h.samples < NS3_HYSTART_MIN_SAMPLES {
            h.curr_rtt_ps = Some(h.curr_rtt_ps.map_or(rtt, |c| c.min(rtt)));
            h.samples += 1;
        } else if h.curr_rtt_ps.is_some_and(|c| {
            c > delay_min + delay_min.clamp(NS3_HYSTART_DELAY_MIN_PS, NS3_HYSTART_DELAY_MAX_PS)
        }) {
            h.found = true;
        }
        if h.found {
            self.ssthresh = cwnd;
        }
    }

    /// ns-3 HyStart's round start (in ns-3's `IncreaseWindow`): in slow start, an ACK beyond the
    /// round's end starts a new round that ends at what has been sent so far.
    fn ns3_hystart_round(&mut self, now_ps: u64, snd_una: u64, snd_max: u64) {
        let slow_start = self.in_slow_start();
        if let Some(h) = self.ns3_hystart.as_mut() {
            if slow_start && snd_una > h.end_seq {
                h.reset_round(now_ps, snd_max);
            }
        }
    }

    /// A retransmission timeout re-arms ns-3's HyStart (ns-3 resets it on entering CA_LOSS):
    /// the minimum delay is forgotten and a round starts now.
    pub(crate) fn hystart_on_rto(&mut self, now_ps: u64, snd_max: u64) {
        if let Some(h) = self.ns3_hystart.as_mut() {
            h.delay_min_ps = None;
            h.found = false;
            h.reset_round(now_ps, snd_max);
        }
    }

    /// A loss detected by duplicate ACKs: set ssthresh (the caller sets cwnd for recovery).
    pub(crate) fn on_loss(&mut self, flight_bytes: u64) {
        self.hystart.active = false;
        self.ssthresh = match self.kind {
            CongestionControl::Cubic {
                beta, fast_convergence, ..
            } => self.cubic_reduce(beta, fast_convergence),
            // DCTCP reacts to loss like Reno (RFC 8257 §3.5).
            CongestionControl::NewReno | CongestionControl::Dctcp { .. } => (flight_bytes / 2).max(2 * self.mss),
        };
        self.reno_bytes_acked = 0;
    }

    /// An ECN echo, at most once per window: set ssthresh and cwnd together.
    pub(crate) fn on_ecn(&mut self, flight_bytes: u64) {
        self.hystart.active = false;
        self.ssthresh = match self.kind {
            CongestionControl::Dctcp { .. } => {
                // RFC 8257 §3.3: cwnd × (1 − alpha / 2).
                let reduced = (self.cwnd as f64 * (1.0 - self.dctcp.alpha / 2.0)) as u64;
                reduced.max(2 * self.mss)
            }
            CongestionControl::Cubic {
                beta, fast_convergence, ..
            } => self.cubic_reduce(beta, fast_convergence),
            CongestionControl::NewReno => (flight_bytes / 2).max(2 * self.mss),
        };
        self.cwnd = self.ssthresh;
        self.reno_bytes_acked = 0;
    }

    /// A retransmission timeout: ssthresh as for a loss, cwnd to the one-segment loss window.
    pub(crate) fn on_timeout(&mut self, flight_bytes: u64) {
        self.on_loss(flight_bytes);
        self.cwnd = self.mss;
    }

    fn cubic_reduce(&mut self, beta: f64, fast_convergence: bool) -> u64 {
        let cwnd = self.cwnd as f64;
        let st = &mut self.cubic;
        st.cwnd_prior = cwnd;
        // RFC 9438 §4.7 fast convergence: a flow whose W_max shrank releases some more.
        st.w_max = if fast_convergence && cwnd < st.w_max {
            cwnd * (1.0 + beta) / 2.0
        } else {
            cwnd
        };
        st.epoch_start_ps = None;
        ((cwnd * beta) as u64).max(2 * self.mss)
    }

    /// RFC 8257 §3.3 sender bookkeeping for one ACK that acknowledged `acked_bytes` (with the
    /// ECE flag `ece`): at the end of each observation window fold the marked fraction into alpha.
    pub(crate) fn dctcp_on_ack(&mut self, snd_una: u64, snd_nxt: u64, acked_bytes: u64, ece: bool) {
        let CongestionControl::Dctcp { g, .. } = self.kind else {
            return;
        };
        let d = &mut self.dctcp;
        d.acked_bytes += acked_bytes;
        if ece {
            d.marked_bytes += acked_bytes;
        }
        if snd_una > d.window_end {
            let f = if d.acked_bytes > 0 {
                d.marked_bytes as f64 / d.acked_bytes as f64
            } else {
                0.0
            };
            d.alpha = (1.0 - g) * d.alpha + g * f;
            d.acked_bytes = 0;
            d.marked_bytes = 0;
            d.window_end = snd_nxt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn reno_slow_start_then_one_mss_per_window() {
        let mut cc = CongestionState::new(CongestionControl::NewReno, MSS, 2);
        cc.on_ack(0, 2 * MSS, None);
        assert_eq!(cc.cwnd, 4 * MSS);
        cc.on_ack(0, 10 * MSS, None);
        assert_eq!(cc.cwnd, 6 * MSS, "byte counting caps one ACK at 2 MSS");
        cc.on_loss(6 * MSS);
        assert_eq!(cc.ssthresh, 3 * MSS);
        cc.cwnd = cc.ssthresh;
        for _ in 0..2 {
            cc.on_ack(0, MSS, None);
        }
        assert_eq!(cc.cwnd, 3 * MSS);
        cc.on_ack(0, MSS, None);
        assert_eq!(cc.cwnd, 4 * MSS);
    }

    #[test]
    fn cubic_reduction_and_k() {
        let mut cc = CongestionState::new(CongestionControl::cubic(), MSS, 100);
        cc.ssthresh = 0;
        cc.on_loss(100 * MSS);
        assert_eq!(cc.ssthresh, 70 * MSS);
        cc.cwnd = cc.ssthresh;
        cc.on_ack(1_000, MSS, Some(0));
        let (w_max, k) = cc.cubic_w_max_and_k().unwrap();
        assert_eq!(w_max, 100.0 * MSS as f64);
        assert!((k - (100.0f64 * 0.3 / 0.4).cbrt()).abs() < 1e-9);
        // A second loss below W_max triggers fast convergence.
        let before = cc.cwnd as f64;
        assert!(before < 71.0 * MSS as f64);
        cc.on_loss(cc.cwnd);
        let (w_max, _) = cc.cubic_w_max_and_k().unwrap();
        assert!((w_max - before * 0.85).abs() < 1e-6, "w_max {w_max}");
    }

    /// One ACK in the endpoint's order: HyStart's tests, its round bookkeeping, then growth.
    fn ack(cc: &mut CongestionState, t_ps: u64, snd_una: u64, snd_max: u64) {
        cc.ns3_hystart_on_ack(t_ps);
        cc.hystart_on_ack(t_ps, snd_una, snd_max, snd_max);
        cc.on_ack(t_ps, 2 * MSS, Some(10_000_000));
    }

    /// ns-3's HyStart: the ACK train ends slow start once a round's closely spaced ACKs outlast
    /// the minimum RTT; an RTO re-arms it with a round starting at the timeout.
    #[test]
    fn ns3_hystart_train_then_rearmed_by_a_timeout() {
        const US: u64 = 1_000_000;
        let mut cc = CongestionState::new(CongestionControl::cubic().with_hystart(Hystart::Ns3), MSS, 20);
        cc.hystart_on_rtt(10 * US);
        // The first ACK starts a round (ending at what has been sent, 100 segments).
        ack(&mut cc, 0, 2 * MSS, 100 * MSS);
        ack(&mut cc, 5 * US, 4 * MSS, 100 * MSS);
        assert!(cc.in_slow_start(), "5 µs of train < 10 µs minimum RTT");
        let before = cc.cwnd;
        ack(&mut cc, 11 * US, 6 * MSS, 100 * MSS);
        assert_eq!(cc.ssthresh, before, "train of 11 µs > 10 µs: ssthresh = cwnd");
        assert!(!cc.in_slow_start());
        // A timeout far later: ssthresh from CUBIC, cwnd 1 MSS, HyStart re-armed.
        cc.cwnd = 100 * MSS;
        let t = 1_000_000 * US;
        cc.on_timeout(100 * MSS);
        cc.hystart_on_rto(t, 200 * MSS);
        assert_eq!(cc.ssthresh, 70 * MSS);
        // ACKs 1 µs apart for resent data (below the round's end): cwnd 1, 3, 5, ... MSS. From 16
        // MSS on it is tested; the train, counted from the timeout, passes 10 µs at the 11th.
        for k in 1..=10 {
            ack(&mut cc, t + k * US, (2 * k) * MSS, 200 * MSS);
            assert!(cc.in_slow_start(), "ACK {k}: cwnd {}", cc.cwnd / MSS);
        }
        ack(&mut cc, t + 11 * US, 22 * MSS, 200 * MSS);
        assert_eq!(cc.ssthresh, 21 * MSS, "exit at the 11th ACK after the timeout");
    }

    #[test]
    fn dctcp_alpha_ewma_and_reduction() {
        let mut cc = CongestionState::new(CongestionControl::dctcp(), MSS, 100);
        // One window with a quarter of its bytes marked.
        cc.dctcp_on_ack(1, 10_000, 3 * MSS, false);
        cc.dctcp_on_ack(5_000, 20_000, MSS, true);
        let a = cc.dctcp_alpha().unwrap();
        assert!((a - (15.0 / 16.0 + 0.25 / 16.0)).abs() < 1e-12, "alpha {a}");
        cc.on_ecn(0);
        assert_eq!(cc.cwnd, (100.0 * MSS as f64 * (1.0 - a / 2.0)) as u64);
    }
}
