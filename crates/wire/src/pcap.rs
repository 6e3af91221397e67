//! libpcap capture files with nanosecond timestamps (magic 0xa1b23c4d) and Ethernet link type,
//! written to any `Write`; a reader for tests and tools.

use std::io::{self, Read, Write};

use crate::Error;

pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
pub const LINKTYPE_ETHERNET: u32 = 1;

/// Writes a pcap file: the global header on creation, then one record per frame.
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut out: W, snaplen: u32) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen })
    }

    /// Record `frame` (cut to the snap length) seen at `time_ns`; `orig_len` is the frame's
    /// full length on the wire (at least `frame.len()`).
    pub fn write(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let cap = frame.len().min(self.snaplen as usize);
        let secs = (time_ns / 1_000_000_000) as u32;
        let nanos = (time_ns % 1_000_000_000) as u32;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&secs.to_le_bytes());
        h[4..8].copy_from_slice(&nanos.to_le_bytes());
        h[8..12].copy_from_slice(&(cap as u32).to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.max(frame.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&frame[..cap])
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A whole capture file of `frames` in memory, one frame every `gap_ns` from time 0, nothing cut
/// (snap length 65535): the captures tests and benchmarks write.
pub fn file_bytes<'a>(frames: impl IntoIterator<Item = &'a [u8]>, gap_ns: u64) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), 65535).expect("writing to a Vec cannot fail");
    for (i, f) in frames.into_iter().enumerate() {
        w.write(i as u64 * gap_ns, f, f.len() as u32).expect("writing to a Vec cannot fail");
    }
    w.into_inner()
}

/// One record of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapRecord {
    pub time_ns: u64,
    pub data: Vec<u8>,
    pub orig_len: u32,
}

/// Read a whole pcap file (microsecond or nanosecond, little- or big-endian).
pub fn read_all(mut r: impl Read) -> Result<(u32, Vec<PcapRecord>), Error> {
    let mut all = Vec::new();
    r.read_to_end(&mut all)
        .map_err(|e| Error::new("pcap", format!("read failed: {e}")))?;
    parse(&all)
}

/// Parse pcap bytes; returns the link type and the records. Never panics on bad input.
pub fn parse(all: &[u8]) -> Result<(u32, Vec<PcapRecord>), Error> {
    if all.len() < 24 {
        return Err(Error::short("pcap", 24, all.len()));
    }
    let magic_le = u32::from_le_bytes(all[0..4].try_into().expect("4 bytes"));
    let (big, nanos) = match magic_le {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        0x4d3c_b2a1 => (true, true),
        m => return Err(Error::new("pcap", format!("magic 0x{m:08x} is not a pcap file"))),
    };
    let rd = |b: &[u8]| {
        let a: [u8; 4] = b.try_into().expect("4 bytes");
        if big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    let link = rd(&all[20..24]);
    let mut at = 24;
    let mut out = Vec::new();
    while at < all.len() {
        if all.len() - at < 16 {
            return Err(Error::new("pcap", format!("record header at byte {at} is cut short")));
        }
        let secs = rd(&all[at..at + 4]) as u64;
        let frac = rd(&all[at + 4..at + 8]) as u64;
        let cap = rd(&all[at + 8..at + 12]) as usize;
        let orig = rd(&all[at + 12..at + 16]);
        at += 16;
        if cap > all.len() - at {
            return Err(Error::new(
                "pcap",
                format!("record at byte {} claims {cap} bytes, {} left", at - 16, all.len() - at),
            ));
        }
        let time_ns = secs * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        out.push(PcapRecord {
            time_ns,
            data: all[at..at + cap].to_vec(),
            orig_len: orig,
        });
        at += cap;
    }
    Ok((link, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read() {
        let mut w = PcapWriter::new(Vec::new(), 8).unwrap();
        w.write(1_500_000_123, &[1, 2, 3], 3).unwrap();
        w.write(2, &[9; 20], 1500).unwrap();
        let bytes = w.into_inner();
        let (link, recs) = parse(&bytes).unwrap();
        assert_eq!(link, LINKTYPE_ETHERNET);
        assert_eq!(
            recs[0],
            PcapRecord {
                time_ns: 1_500_000_123,
                data: vec![1, 2, 3],
                orig_len: 3
            }
        );
        assert_eq!(recs[1].data.len(), 8);
        assert_eq!(recs[1].orig_len, 1500);
        assert!(parse(&bytes[..30]).is_err());
    }

    #[test]
    fn file_bytes_reads_back_every_frame_at_its_time() {
        let frames = [vec![1u8; 70_000], vec![2, 3]];
        let (_, recs) = parse(&file_bytes(frames.iter().map(Vec::as_slice), 1_000)).unwrap();
        assert_eq!(recs.iter().map(|r| (r.time_ns, r.data.len(), r.orig_len)).collect::<Vec<_>>(), [(0, 65535, 70_000), (1_000, 2, 2)]);
    }
}
