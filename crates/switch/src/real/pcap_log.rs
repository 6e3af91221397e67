//! The optional capture of what the program saw: every frame handed to the program, with
//! wall-clock timestamps (the runtime's start time plus its monotonic clock), as a pcap file.

use std::fs::File;
use std::io::BufWriter;
use std::time::{SystemTime, UNIX_EPOCH};

use innet_wire::pcap::PcapWriter;

pub struct PcapLog {
    writer: PcapWriter<BufWriter<File>>,
    path: String,
    start_unix_ns: u64,
    frames: u64,
    error: Option<String>,
}

impl PcapLog {
    /// Create `path` (frames up to 65535 bytes are kept whole).
    pub fn create(path: &str) -> Result<Self, String> {
        let file =
            File::create(path).map_err(|e| format!("{path}: cannot create the pcap file: {e}"))?;
        let writer = PcapWriter::new(BufWriter::with_capacity(1 << 20, file), 65535)
            .map_err(|e| format!("{path}: {e}"))?;
        let start_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Ok(PcapLog {
            writer,
            path: path.to_string(),
            start_unix_ns,
            frames: 0,
            error: None,
        })
    }

    /// Record a frame seen `now_ps` after the runtime started. A write error stops the capture
    /// (reported by `finish`), never the switch.
    pub fn write(&mut self, now_ps: u64, frame: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let t = self.start_unix_ns + now_ps / 1000;
        match self.writer.write(t, frame, frame.len() as u32) {
            Ok(()) => self.frames += 1,
            Err(e) => self.error = Some(format!("{}: write failed: {e}", self.path)),
        }
    }

    pub fn finish(mut self) -> Result<String, String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.writer
            .flush()
            .map_err(|e| format!("{}: {e}", self.path))?;
        Ok(format!(
            "{} frames the program saw written to {}",
            self.frames, self.path
        ))
    }
}
