//! The real switch's main loop: one thread, one AF_PACKET socket per port, frames received in
//! batches (recvmmsg), offload undone ([`super::vnet`]), each frame through the
//! [`FrameSwitch`], what it produced sent in batches (sendmmsg); program timers from a timer
//! heap on a monotonic clock; a stats line on stderr once per second; SIGINT/SIGTERM end the
//! loop cleanly and a counters summary is returned.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use super::afpacket::{PacketSocket, RxBatch};
use super::switch::{FrameSwitch, PortCounters, SwitchStats, TxBatch};
use super::vnet::{
    complete_checksum, segment_tcp4, Vnet, F_NEEDS_CSUM, GSO_ECN, GSO_NONE, GSO_TCPV4,
};
use super::PcapLog;

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Interface names, in port order (port 0 = the first).
    pub ports: Vec<String>,
    /// Record every frame handed to the program to this pcap file.
    pub pcap: Option<String>,
    /// Stop after this long (None: until SIGINT/SIGTERM).
    pub duration: Option<Duration>,
    /// Print a stats line on stderr this often (None: never).
    pub stats_interval: Option<Duration>,
    /// Frames per recvmmsg.
    pub batch: usize,
    /// Link impairment on the switch's transmit side (for kernels without tc netem).
    pub impair: Impairment,
}

/// Loss and reordering the switch adds on its transmit side, like netem on its links: each
/// frame is dropped with probability `loss`; otherwise, with probability `reorder`, it is held
/// back and sent right after the next frame of that port (or after 1 ms if none comes).
/// Seeded, so a run's pattern repeats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    pub loss: f64,
    pub reorder: f64,
    /// Probability that a frame is sent twice (the copy right behind it).
    pub duplicate: f64,
    pub seed: u64,
}

impl Impairment {
    pub fn none() -> Self {
        Impairment {
            loss: 0.0,
            reorder: 0.0,
            duplicate: 0.0,
            seed: 1,
        }
    }
    pub fn is_active(&self) -> bool {
        self.loss > 0.0 || self.reorder > 0.0 || self.duplicate > 0.0
    }
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("--loss", self.loss),
            ("--reorder", self.reorder),
            ("--duplicate", self.duplicate),
        ] {
            if !(0.0..1.0).contains(&v) {
                return Err(format!("{name} {v}: expected a probability in [0, 1)"));
            }
        }
        Ok(())
    }
}

type HeldFrame = ([u8; 10], Vec<u8>, Instant);

struct Impairer {
    cfg: Impairment,
    rng: rand_chacha::ChaCha8Rng,
    /// Per port: the frame held back for reordering, and since when.
    held: Vec<Option<HeldFrame>>,
    out: Vec<([u8; 10], Vec<u8>)>,
}

impl Impairer {
    fn new(cfg: Impairment, num_ports: usize) -> Self {
        use rand::SeedableRng;
        Impairer {
            cfg,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed),
            held: vec![None; num_ports],
            out: Vec::new(),
        }
    }

    /// What actually goes out of `port` for these queued frames; counts into `st`.
    fn apply(
        &mut self,
        port: usize,
        queued: &[([u8; 10], Vec<u8>)],
        st: &mut SwitchStats,
    ) -> &[([u8; 10], Vec<u8>)] {
        use rand::Rng;
        self.out.clear();
        for (h, f) in queued {
            if self.rng.gen::<f64>() < self.cfg.loss {
                st.impair_dropped += 1;
                let c = &mut st.ports[port];
                c.tx_frames = c.tx_frames.saturating_sub(1);
                c.tx_bytes = c.tx_bytes.saturating_sub(f.len() as u64);
                continue;
            }
            if self.held[port].is_none() && self.rng.gen::<f64>() < self.cfg.reorder {
                st.impair_reordered += 1;
                self.held[port] = Some((*h, f.clone(), Instant::now()));
                continue;
            }
            self.out.push((*h, f.clone()));
            // Drawn only when asked for, so runs without it keep their loss/reorder draws.
            if self.cfg.duplicate > 0.0 && self.rng.gen::<f64>() < self.cfg.duplicate {
                st.impair_duplicated += 1;
                let c = &mut st.ports[port];
                c.tx_frames += 1;
                c.tx_bytes += f.len() as u64;
                self.out.push((*h, f.clone()));
            }
            if let Some((hh, ff, _)) = self.held[port].take() {
                self.out.push((hh, ff));
            }
        }
        if let Some((_, _, at)) = &self.held[port] {
            if at.elapsed() >= Duration::from_millis(1) {
                let (hh, ff, _) = self.held[port].take().expect("held");
                self.out.push((hh, ff));
            }
        }
        &self.out
    }
}

impl RunOptions {
    pub fn new(ports: Vec<String>) -> Self {
        RunOptions {
            ports,
            pcap: None,
            duration: None,
            stats_interval: Some(Duration::from_secs(1)),
            batch: 64,
            impair: Impairment::none(),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub program: String,
    pub ports: Vec<String>,
    pub elapsed_s: f64,
    /// Why it stopped: "SIGINT", "SIGTERM" or "duration".
    pub stopped_by: String,
    pub stats: SwitchStats,
    pub report: Vec<(String, String)>,
    pub pcap: Option<String>,
    pub rx_truncated: u64,
}

impl RunSummary {
    /// Human-readable summary, one line per port and one for the switch.
    pub fn text(&self) -> String {
        let mut s = format!(
            "innet switch: program '{}' stopped by {} after {:.1} s\n",
            self.program, self.stopped_by, self.elapsed_s
        );
        s += &format!(
            "  {:<12} {:>10} {:>12} {:>10} {:>12} {:>8} {:>9} {:>10} {:>9}\n",
            "port",
            "rx_frames",
            "rx_bytes",
            "tx_frames",
            "tx_bytes",
            "dropped",
            "malformed",
            "passed_raw",
            "tx_errors"
        );
        let row = |name: &str, c: &PortCounters| {
            format!(
                "  {:<12} {:>10} {:>12} {:>10} {:>12} {:>8} {:>9} {:>10} {:>9}\n",
                name,
                c.rx_frames,
                c.rx_bytes,
                c.tx_frames,
                c.tx_bytes,
                c.dropped,
                c.malformed,
                c.passed_raw,
                c.tx_errors
            )
        };
        for (i, c) in self.stats.ports.iter().enumerate() {
            s += &row(
                &format!(
                    "{i}:{}",
                    self.ports.get(i).map(|s| s.as_str()).unwrap_or("?")
                ),
                c,
            );
        }
        s += &row("total", &self.stats.total());
        let st = &self.stats;
        s += &format!(
            "  passes {} recirculations {} generated {} clones {} consumed {} to_cpu {} timers {} no_route {} emit_errors {} gso_frames {} gso_segments {} checksums_completed {} rx_truncated {}\n",
            st.switch.ingress_passes, st.switch.recirculations, st.switch.generated, st.switch.clones, st.switch.consumed, st.switch.to_cpu, st.switch.timers_fired,
            st.switch.no_route, st.emit_errors, st.gso_frames, st.gso_segments, st.checksums_completed, self.rx_truncated
        );
        if st.impair_dropped + st.impair_reordered + st.impair_duplicated > 0 {
            s += &format!(
                "  impairment: dropped {} reordered {} duplicated {}\n",
                st.impair_dropped, st.impair_reordered, st.impair_duplicated
            );
        }
        if let Some(e) = &st.emit_error_last {
            s += &format!("  last emit error: {e}\n");
        }
        if !self.report.is_empty() {
            s += &format!(
                "  program: {}\n",
                self.report
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        if let Some(p) = &self.pcap {
            s += &format!("  pcap: {p}\n");
        }
        s
    }

    /// The same as JSON.
    pub fn json(&self) -> serde_json::Value {
        let port = |name: &str, c: &PortCounters| {
            serde_json::json!({
                "name": name, "rx_frames": c.rx_frames, "rx_bytes": c.rx_bytes, "tx_frames": c.tx_frames,
                "tx_bytes": c.tx_bytes, "dropped": c.dropped, "malformed": c.malformed,
                "passed_raw": c.passed_raw, "tx_errors": c.tx_errors,
            })
        };
        let st = &self.stats;
        serde_json::json!({
            "program": self.program,
            "stopped_by": self.stopped_by,
            "elapsed_s": self.elapsed_s,
            "ports": st.ports.iter().enumerate().map(|(i, c)| port(self.ports.get(i).map(|s| s.as_str()).unwrap_or("?"), c)).collect::<Vec<_>>(),
            "total": port("total", &st.total()),
            "ingress_passes": st.switch.ingress_passes, "recirculations": st.switch.recirculations,
            "recirculation_limit_drops": st.switch.recirculation_limit_drops, "generated": st.switch.generated,
            "clones": st.switch.clones, "consumed": st.switch.consumed, "to_cpu": st.switch.to_cpu, "digests": st.switch.digests,
            "timers_fired": st.switch.timers_fired, "no_route": st.switch.no_route, "emit_errors": st.emit_errors,
            "emit_error_last": st.emit_error_last, "gso_frames": st.gso_frames, "gso_segments": st.gso_segments,
            "checksums_completed": st.checksums_completed, "rx_truncated": self.rx_truncated,
            "impair_dropped": st.impair_dropped, "impair_reordered": st.impair_reordered, "impair_duplicated": st.impair_duplicated,
            "program_report": self.report.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "pcap": self.pcap,
        })
    }
}

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT/SIGTERM handlers for the duration of a run; the previous ones (e.g. Python's) come
/// back on drop.
struct SignalGuard {
    old: [(libc::c_int, libc::sigaction); 2],
}

impl SignalGuard {
    fn install() -> Self {
        STOP.store(false, Ordering::SeqCst);
        SIGNAL.store(0, Ordering::SeqCst);
        let mut old = [
            (libc::SIGINT, unsafe { std::mem::zeroed() }),
            (libc::SIGTERM, unsafe { std::mem::zeroed() }),
        ];
        for (sig, prev) in old.iter_mut() {
            // SAFETY: a zeroed sigaction with our async-signal-safe handler (atomics only).
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut sa.sa_mask);
                sa.sa_flags = 0; // no SA_RESTART: poll() returns EINTR at once
                libc::sigaction(*sig, &sa, prev);
            }
        }
        SignalGuard { old }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring what sigaction gave us.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

fn rate(now: u64, before: u64, dt_s: f64) -> String {
    let r = (now - before) as f64 / dt_s.max(1e-9);
    if r >= 1e6 {
        format!("{:.2}M/s", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1}k/s", r / 1e3)
    } else {
        format!("{r:.0}/s")
    }
}

/// Undo offload for one received frame and hand it (or its segments) to the switch.
fn ingest(
    sw: &mut dyn FrameSwitch,
    port: u16,
    vnet: [u8; 10],
    frame: &mut [u8],
    now_ps: u64,
    tx: &mut TxBatch,
    scratch: &mut Vec<u8>,
) {
    let v = Vnet::parse(&vnet);
    match v.gso_type & !GSO_ECN {
        GSO_NONE => {
            if v.flags & F_NEEDS_CSUM != 0 && complete_checksum(frame, &v) {
                sw.stats_mut().checksums_completed += 1;
            }
            sw.on_frame(port, frame, [0; 10], now_ps, tx);
        }
        GSO_TCPV4 => {
            // Each segment goes through the switch as it is cut (no per-segment allocation).
            match segment_tcp4(frame, v.gso_size, scratch, |s| {
                sw.on_frame(port, s, [0; 10], now_ps, tx)
            }) {
                Some(n) => {
                    let st = sw.stats_mut();
                    st.gso_frames += 1;
                    st.gso_segments += n as u64;
                }
                // Not TCP/IPv4 after all: the kernel can segment it on the way out.
                None => sw.on_frame(port, frame, vnet, now_ps, tx),
            }
        }
        _ => {
            // UDP or IPv6 GSO: passed raw with its vnet header, the kernel segments it on send.
            let n = sw.num_ports();
            let st = sw.stats_mut();
            st.ports[port as usize].rx_frames += 1;
            st.ports[port as usize].rx_bytes += frame.len() as u64;
            st.ports[port as usize].passed_raw += 1;
            for p in (0..n).filter(|&p| p != port) {
                tx.push_raw(p, vnet, frame);
                st.ports[p as usize].tx_frames += 1;
                st.ports[p as usize].tx_bytes += frame.len() as u64;
            }
        }
    }
}

fn flush(
    socks: &[PacketSocket],
    tx: &mut TxBatch,
    sw: &mut dyn FrameSwitch,
    imp: &mut Option<Impairer>,
) {
    for (p, s) in socks.iter().enumerate() {
        let q = tx.port(p as u16).queued();
        let held = imp.as_ref().is_some_and(|i| i.held[p].is_some());
        if q.is_empty() && !held {
            continue;
        }
        let q = match imp {
            Some(i) => i.apply(p, q, sw.stats_mut()),
            None => q,
        };
        if q.is_empty() {
            continue;
        }
        let (_, failed) = s.send_batch(q);
        if failed > 0 {
            let c = &mut sw.stats_mut().ports[p];
            c.tx_errors += failed as u64;
            c.tx_frames -= (failed as u64).min(c.tx_frames);
        }
    }
    tx.clear();
}

/// Run `sw` on the interfaces until SIGINT/SIGTERM (or the duration). Errors (an interface
/// that does not exist, no permission) come before any frame is touched.
pub fn run(mut sw: Box<dyn FrameSwitch>, opts: &RunOptions) -> Result<RunSummary, String> {
    if opts.ports.is_empty() {
        return Err("at least one --port is needed (two for a switch)".into());
    }
    if opts.ports.len() != sw.num_ports() as usize {
        return Err(format!(
            "the program was built for {} ports, {} given",
            sw.num_ports(),
            opts.ports.len()
        ));
    }
    for (i, p) in opts.ports.iter().enumerate() {
        if opts.ports[..i].contains(p) {
            return Err(format!("interface {p} given twice"));
        }
    }
    let socks: Vec<PacketSocket> = opts
        .ports
        .iter()
        .map(|p| PacketSocket::open(p))
        .collect::<Result<_, _>>()?;
    let pcap_path = opts.pcap.clone();
    if let Some(p) = &opts.pcap {
        sw.set_pcap(PcapLog::create(p)?);
    }
    let batch = opts.batch.clamp(1, 1024);
    let mut rx: Vec<RxBatch> = socks.iter().map(|_| RxBatch::new(batch)).collect();
    let mut tx = TxBatch::new(sw.num_ports());
    let mut scratch = Vec::with_capacity(2048);
    let mut pfds: Vec<libc::pollfd> = socks
        .iter()
        .map(|s| libc::pollfd {
            fd: s.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    opts.impair.validate()?;
    let mut impairer = opts
        .impair
        .is_active()
        .then(|| Impairer::new(opts.impair, socks.len()));
    let guard = SignalGuard::install();
    let start = Instant::now();
    let now_ps = |start: &Instant| start.elapsed().as_nanos() as u64 * 1000;
    let mut next_timer: Option<u64> = None;
    let mut last_stats = (Instant::now(), sw.stats().clone());
    let mut stopped_by = "SIGINT".to_string();
    let mut io_error: Option<String> = None;
    loop {
        if STOP.load(Ordering::SeqCst) {
            stopped_by = if SIGNAL.load(Ordering::SeqCst) == libc::SIGTERM {
                "SIGTERM"
            } else {
                "SIGINT"
            }
            .into();
            break;
        }
        let elapsed = start.elapsed();
        if opts.duration.is_some_and(|d| elapsed >= d) {
            stopped_by = "duration".into();
            break;
        }
        // Sleep until a frame, the next timer, the next stats line, or 100 ms.
        let now = now_ps(&start);
        let mut timeout_ms: i64 = 100;
        if impairer
            .as_ref()
            .is_some_and(|i| i.held.iter().any(|h| h.is_some()))
        {
            timeout_ms = 1;
        }
        if let Some(t) = next_timer {
            timeout_ms = timeout_ms.min((t.saturating_sub(now) / 1_000_000_000) as i64);
        }
        if let Some(iv) = opts.stats_interval {
            let due = iv.saturating_sub(last_stats.0.elapsed());
            timeout_ms = timeout_ms.min(due.as_millis() as i64);
        }
        for p in pfds.iter_mut() {
            p.revents = 0;
        }
        // SAFETY: a valid array of pollfds.
        let rc = unsafe {
            libc::poll(
                pfds.as_mut_ptr(),
                pfds.len() as libc::nfds_t,
                timeout_ms.max(0) as libc::c_int,
            )
        };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                io_error = Some(format!("poll: {e}"));
                break;
            }
        }
        for (i, s) in socks.iter().enumerate() {
            if pfds[i].revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
                io_error = Some(format!(
                    "interface {}: socket error (interface gone?)",
                    s.iface
                ));
            }
            if pfds[i].revents & libc::POLLIN == 0 {
                continue;
            }
            // A few batches per port per round, so one busy port cannot starve the others.
            for _ in 0..4 {
                let n = match s.recv_batch(&mut rx[i]) {
                    Ok(n) => n,
                    Err(e) => {
                        io_error = Some(format!("interface {}: recvmmsg: {e}", s.iface));
                        0
                    }
                };
                if n == 0 {
                    break;
                }
                let now = now_ps(&start);
                for j in 0..n {
                    if rx[i].is_outgoing(j) {
                        continue;
                    }
                    let (vnet, frame) = rx[i].frame_mut(j);
                    ingest(
                        sw.as_mut(),
                        i as u16,
                        vnet,
                        frame,
                        now,
                        &mut tx,
                        &mut scratch,
                    );
                }
                flush(&socks, &mut tx, sw.as_mut(), &mut impairer);
                if n < batch {
                    break;
                }
            }
        }
        if io_error.is_some() {
            break;
        }
        next_timer = sw.on_tick(now_ps(&start), &mut tx);
        flush(&socks, &mut tx, sw.as_mut(), &mut impairer);
        if let Some(iv) = opts.stats_interval {
            if last_stats.0.elapsed() >= iv {
                let dt = last_stats.0.elapsed().as_secs_f64();
                let st = sw.stats();
                let mut line = format!("innet switch {:>5.0}s", start.elapsed().as_secs_f64());
                for (k, c) in st.ports.iter().enumerate() {
                    let b = &last_stats.1.ports[k];
                    line += &format!(
                        " | {} rx {} {} tx {} {}",
                        opts.ports[k],
                        c.rx_frames,
                        rate(c.rx_frames, b.rx_frames, dt),
                        c.tx_frames,
                        rate(c.tx_frames, b.tx_frames, dt)
                    );
                }
                let t = st.total();
                line += &format!(
                    " | drop {} malformed {} raw {} tx_err {} emit_err {}",
                    t.dropped, t.malformed, t.passed_raw, t.tx_errors, st.emit_errors
                );
                for (k, v) in sw.report() {
                    line += &format!(" {k}={v}");
                }
                eprintln!("{line}");
                last_stats = (Instant::now(), st.clone());
            }
        }
    }
    drop(guard);
    let pcap_line = sw.finish()?;
    let summary = RunSummary {
        program: sw.program_name().to_string(),
        ports: opts.ports.clone(),
        elapsed_s: start.elapsed().as_secs_f64(),
        stopped_by,
        stats: sw.stats().clone(),
        report: sw.report(),
        pcap: pcap_line.or(pcap_path.map(|p| format!("{p} (empty)"))),
        rx_truncated: rx.iter().map(|r| r.truncated).sum(),
    };
    if let Some(e) = io_error {
        return Err(format!("{e}\n{}", summary.text()));
    }
    Ok(summary)
}
