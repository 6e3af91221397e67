//! The speed of a program on the real switch core, measured as the application-switch paper
//! did: replay a capture through the program in memory (no sockets), one core, and count frames
//! per second. A frame whose IPv4 source is the first IPv4 frame's source enters port 0 (the
//! client side); every other frame enters port 1.

use std::time::Instant;

use super::switch::{FrameSwitch, TxBatch};

/// What a replay measured.
#[derive(Debug, Clone)]
pub struct BenchReport {
    pub frames_in_capture: usize,
    pub repeat: u32,
    pub frames: u64,
    pub wall_s: f64,
    pub frames_per_s: f64,
    pub ns_per_frame: f64,
    pub tx_frames: u64,
    pub dropped: u64,
    pub malformed: u64,
    pub passed_raw: u64,
    pub generated: u64,
    pub report: Vec<(String, String)>,
}

impl BenchReport {
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "frames_in_capture": self.frames_in_capture, "repeat": self.repeat, "frames": self.frames,
            "wall_s": self.wall_s, "frames_per_s": self.frames_per_s, "ns_per_frame": self.ns_per_frame,
            "tx_frames": self.tx_frames, "dropped": self.dropped, "malformed": self.malformed,
            "passed_raw": self.passed_raw, "generated": self.generated,
            "program_report": self.report.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        })
    }
}

/// Which port each frame enters (see the module doc).
pub fn ports_by_direction(frames: &[Vec<u8>]) -> Vec<u16> {
    let src = |f: &Vec<u8>| {
        (f.len() >= 34 && f[12..14] == [0x08, 0x00]).then(|| [f[26], f[27], f[28], f[29]])
    };
    let client = frames.iter().find_map(src);
    frames
        .iter()
        .map(|f| {
            if src(f).is_some() && src(f) == client {
                0
            } else {
                1
            }
        })
        .collect()
}

/// Replay `frames` `repeat` times through `sw`, in batches of 64 frames (the runtime's batch).
pub fn replay(sw: &mut dyn FrameSwitch, frames: &[Vec<u8>], repeat: u32) -> BenchReport {
    let ports = ports_by_direction(frames);
    let mut tx = TxBatch::new(sw.num_ports());
    let start = Instant::now();
    let mut n = 0u64;
    for _ in 0..repeat {
        for (chunk, pchunk) in frames.chunks(64).zip(ports.chunks(64)) {
            let now_ps = start.elapsed().as_nanos() as u64 * 1000;
            for (f, &p) in chunk.iter().zip(pchunk) {
                sw.on_frame(p.min(sw.num_ports() - 1), f, [0; 10], now_ps, &mut tx);
            }
            n += chunk.len() as u64;
            sw.on_tick(now_ps, &mut tx);
            tx.clear();
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    let st = sw.stats();
    let t = st.total();
    BenchReport {
        frames_in_capture: frames.len(),
        repeat,
        frames: n,
        wall_s,
        frames_per_s: n as f64 / wall_s.max(1e-9),
        ns_per_frame: wall_s * 1e9 / (n.max(1) as f64),
        tx_frames: t.tx_frames,
        dropped: t.dropped,
        malformed: t.malformed,
        passed_raw: t.passed_raw,
        generated: st.switch.generated,
        report: sw.report(),
    }
}
