//! Cassandra's native protocol (v4 and v5) as the application switch needs it: frame headers,
//! v5's CRC-checked segment framing, a per-direction stream reassembler, the request messages
//! it acts on (QUERY, PREPARE, EXECUTE) and RESULT decoding/encoding. Compressed frames (v4)
//! and segments (v5) are inflated by the reassembler (codecs in [`compression`]); [`statement`] is the lexer of statement text and [`key`] the
//! serialized form of partition-key values. Malformed
//! bytes give a [`CqlError`], never a panic.

use std::fmt;

pub mod compression;
pub mod key;
pub mod statement;

use compression::Compression;

/// Frame header length (v3 and later).
pub const HEADER_BYTES: usize = 9;
/// Largest body we accept (the protocol's default `native_transport_max_frame_size` is 16 MiB;
/// 256 MiB is the spec's hard limit).
pub const MAX_BODY_BYTES: u32 = 256 * 1024 * 1024;
/// v5 segment payload limit (128 KiB - 1).
pub const MAX_SEGMENT_PAYLOAD_BYTES: usize = 128 * 1024 - 1;

pub mod opcode {
    pub const ERROR: u8 = 0x00;
    pub const STARTUP: u8 = 0x01;
    pub const READY: u8 = 0x02;
    pub const AUTHENTICATE: u8 = 0x03;
    pub const OPTIONS: u8 = 0x05;
    pub const SUPPORTED: u8 = 0x06;
    pub const QUERY: u8 = 0x07;
    pub const RESULT: u8 = 0x08;
    pub const PREPARE: u8 = 0x09;
    pub const EXECUTE: u8 = 0x0A;
    pub const REGISTER: u8 = 0x0B;
    pub const EVENT: u8 = 0x0C;
    pub const BATCH: u8 = 0x0D;
    pub const AUTH_CHALLENGE: u8 = 0x0E;
    pub const AUTH_RESPONSE: u8 = 0x0F;
    pub const AUTH_SUCCESS: u8 = 0x10;
}

/// Frame header flags.
pub mod frame_flags {
    pub const COMPRESSION: u8 = 0x01;
    pub const TRACING: u8 = 0x02;
    pub const CUSTOM_PAYLOAD: u8 = 0x04;
    pub const WARNING: u8 = 0x08;
    pub const USE_BETA: u8 = 0x10;
}

/// Query parameter flags (a byte in v4, an int in v5).
pub mod query_flags {
    pub const VALUES: u32 = 0x01;
    pub const SKIP_METADATA: u32 = 0x02;
    pub const PAGE_SIZE: u32 = 0x04;
    pub const WITH_PAGING_STATE: u32 = 0x08;
    pub const WITH_SERIAL_CONSISTENCY: u32 = 0x10;
    pub const WITH_DEFAULT_TIMESTAMP: u32 = 0x20;
    pub const WITH_NAMES_FOR_VALUES: u32 = 0x40;
    pub const WITH_KEYSPACE: u32 = 0x80;
    pub const WITH_NOW_IN_SECONDS: u32 = 0x100;
}

/// Rows metadata flags.
pub mod rows_flags {
    pub const GLOBAL_TABLES_SPEC: u32 = 0x01;
    pub const HAS_MORE_PAGES: u32 = 0x02;
    pub const NO_METADATA: u32 = 0x04;
    pub const METADATA_CHANGED: u32 = 0x08;
}

/// RESULT kinds.
pub mod result_kind {
    pub const VOID: i32 = 1;
    pub const ROWS: i32 = 2;
    pub const SET_KEYSPACE: i32 = 3;
    pub const PREPARED: i32 = 4;
    pub const SCHEMA_CHANGE: i32 = 5;
}

/// What went wrong and where, for malformed protocol bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CqlError {
    /// The structure being read ("frame header", "QUERY body", ...).
    pub at: &'static str,
    pub msg: String,
}

impl fmt::Display for CqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cql {}: {}", self.at, self.msg)
    }
}
impl std::error::Error for CqlError {}

pub type Result<T> = std::result::Result<T, CqlError>;

pub(crate) fn err<T>(at: &'static str, msg: impl Into<String>) -> Result<T> {
    Err(CqlError {
        at,
        msg: msg.into(),
    })
}

/// A bounds-checked cursor over a message body, with the protocol's notations.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    at: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], at: &'static str) -> Self {
        Reader { buf, pos: 0, at }
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.short_read(n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// The error of a read past the end (out of line: the reads above stay small).
    #[cold]
    #[inline(never)]
    fn short_read(&self, n: usize) -> CqlError {
        CqlError {
            at: self.at,
            msg: format!(
                "needs {n} bytes at offset {} but only {} remain",
                self.pos,
                self.remaining()
            ),
        }
    }
    #[inline]
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    pub fn short(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    #[inline]
    pub fn int(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn long(&mut self) -> Result<i64> {
        let b = self.take(8)?;
        Ok(i64::from_be_bytes(b.try_into().expect("8 bytes")))
    }
    fn utf8(&self, b: &'a [u8]) -> Result<&'a str> {
        std::str::from_utf8(b).or_else(|_| {
            err(
                self.at,
                format!("string before offset {} is not UTF-8", self.pos),
            )
        })
    }
    /// `[string]`: a short length and UTF-8 bytes.
    pub fn string(&mut self) -> Result<&'a str> {
        let n = self.short()? as usize;
        let b = self.take(n)?;
        self.utf8(b)
    }
    /// `[long string]`: an int length and UTF-8 bytes.
    pub fn long_string(&mut self) -> Result<&'a str> {
        let n = self.int()?;
        if n < 0 {
            return err(self.at, format!("long string length {n} is negative"));
        }
        let b = self.take(n as usize)?;
        self.utf8(b)
    }
    /// `[short bytes]`.
    #[inline]
    pub fn short_bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.short()? as usize;
        self.take(n)
    }
    /// `[value]`: an int length; -1 is null, -2 is "not set".
    pub fn value(&mut self) -> Result<Value> {
        let n = self.int()?;
        match n {
            -1 => Ok(Value::Null),
            -2 => Ok(Value::Unset),
            n if n < 0 => err(self.at, format!("value length {n} is below -2")),
            n => Ok(Value::Bytes(self.take(n as usize)?.to_vec())),
        }
    }
    /// `[bytes]`: an int length; negative is null.
    #[inline]
    pub fn bytes(&mut self) -> Result<Option<&'a [u8]>> {
        let n = self.int()?;
        if n < 0 {
            return Ok(None);
        }
        Ok(Some(self.take(n as usize)?))
    }
}

/// Big-endian writers for the protocol's notations.
pub mod write {
    pub fn short(out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&v.to_be_bytes());
    }
    pub fn int(out: &mut Vec<u8>, v: i32) {
        out.extend_from_slice(&v.to_be_bytes());
    }
    pub fn string(out: &mut Vec<u8>, s: &str) {
        short(out, s.len() as u16);
        out.extend_from_slice(s.as_bytes());
    }
    pub fn short_bytes(out: &mut Vec<u8>, b: &[u8]) {
        short(out, b.len() as u16);
        out.extend_from_slice(b);
    }
    pub fn bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
        match b {
            None => int(out, -1),
            Some(b) => {
                int(out, b.len() as i32);
                out.extend_from_slice(b);
            }
        }
    }
}

/// A bound value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Unset,
    Bytes(Vec<u8>),
}

/// The fixed 9-byte frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Protocol version without the direction bit (3, 4 or 5).
    pub version: u8,
    pub is_response: bool,
    pub flags: u8,
    pub stream: i16,
    pub opcode: u8,
    pub body_len: u32,
}

impl FrameHeader {
    /// Parse a header from the first 9 bytes; `Ok(None)` if fewer are available.
    pub fn parse(b: &[u8]) -> Result<Option<FrameHeader>> {
        if b.len() < HEADER_BYTES {
            return Ok(None);
        }
        let version = b[0] & 0x7f;
        if !(3..=5).contains(&version) {
            return err(
                "frame header",
                format!("protocol version {version} is not 3, 4 or 5"),
            );
        }
        let body_len = u32::from_be_bytes([b[5], b[6], b[7], b[8]]);
        if body_len > MAX_BODY_BYTES {
            return err(
                "frame header",
                format!("body length {body_len} exceeds {MAX_BODY_BYTES}"),
            );
        }
        Ok(Some(FrameHeader {
            version,
            is_response: b[0] & 0x80 != 0,
            flags: b[1],
            stream: i16::from_be_bytes([b[2], b[3]]),
            opcode: b[4],
            body_len,
        }))
    }
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.version | if self.is_response { 0x80 } else { 0 });
        out.push(self.flags);
        out.extend_from_slice(&self.stream.to_be_bytes());
        out.push(self.opcode);
        out.extend_from_slice(&self.body_len.to_be_bytes());
    }
}

/// One complete frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub header: FrameHeader,
    pub body: Vec<u8>,
}

impl Frame {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut h = self.header;
        h.body_len = self.body.len() as u32;
        h.emit(out);
        out.extend_from_slice(&self.body);
    }
}

// ---- v5 segments -------------------------------------------------------------------------

const CRC24_INIT: u32 = 0x875060;
const CRC24_POLY: u32 = 0x1974F0B;
const CRC32_PREFIX: [u8; 4] = [0xfa, 0x2d, 0x55, 0xca];
/// Uncompressed segment header: 3 bytes of header and 3 of CRC24.
pub const SEGMENT_HEADER_BYTES: usize = 6;
/// Segment header once compression is negotiated: 5 bytes of header and 3 of CRC24.
pub const COMPRESSED_SEGMENT_HEADER_BYTES: usize = 8;
pub const SEGMENT_TRAILER_BYTES: usize = 4;

/// CRC24 of the first `len` bytes of `data` taken little-endian (as Cassandra computes it over
/// the segment header).
pub fn crc24(mut data: u64, len: usize) -> u32 {
    let mut crc = CRC24_INIT;
    for _ in 0..len {
        crc ^= ((data & 0xff) as u32) << 16;
        data >>= 8;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x1000000 != 0 {
                crc ^= CRC24_POLY;
            }
        }
    }
    crc
}

/// CRC32 (zlib's) of the payload, seeded with Cassandra's 4 prefix bytes.
pub fn crc32(payload: &[u8]) -> u32 {
    const CRC: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let mut d = CRC.digest();
    d.update(&CRC32_PREFIX);
    d.update(payload);
    d.finalize()
}

/// A parsed uncompressed segment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    pub payload_len: usize,
    pub self_contained: bool,
}

impl SegmentHeader {
    pub fn parse(b: &[u8]) -> Result<Option<SegmentHeader>> {
        if b.len() < SEGMENT_HEADER_BYTES {
            return Ok(None);
        }
        let data = b[0] as u64 | (b[1] as u64) << 8 | (b[2] as u64) << 16;
        let got = b[3] as u32 | (b[4] as u32) << 8 | (b[5] as u32) << 16;
        let want = crc24(data, 3);
        if got != want {
            return err(
                "v5 segment header",
                format!("CRC24 0x{got:06x} != computed 0x{want:06x}"),
            );
        }
        if data >> 18 != 0 {
            return err(
                "v5 segment header",
                "reserved bits set (a compressed-format header on a connection that negotiated no compression)",
            );
        }
        Ok(Some(SegmentHeader {
            payload_len: (data & 0x1ffff) as usize,
            self_contained: data & (1 << 17) != 0,
        }))
    }
}

/// A segment header in the format of a connection that negotiated compression: 17 bits of
/// payload length, 17 of decompressed length (0: the payload is not compressed), the
/// self-contained bit, 5 spare bits, then the CRC24 of those 5 bytes. Returns the header and
/// the decompressed length.
pub fn parse_compressed_segment_header(b: &[u8]) -> Result<Option<(SegmentHeader, usize)>> {
    if b.len() < COMPRESSED_SEGMENT_HEADER_BYTES {
        return Ok(None);
    }
    let data = b[..5]
        .iter()
        .rev()
        .fold(0u64, |acc, &x| acc << 8 | x as u64);
    let got = b[5] as u32 | (b[6] as u32) << 8 | (b[7] as u32) << 16;
    let want = crc24(data, 5);
    if got != want {
        return err(
            "v5 compressed segment header",
            format!("CRC24 0x{got:06x} != computed 0x{want:06x}"),
        );
    }
    Ok(Some((
        SegmentHeader {
            payload_len: (data & 0x1ffff) as usize,
            self_contained: data & (1 << 34) != 0,
        },
        ((data >> 17) & 0x1ffff) as usize,
    )))
}

/// Wrap `payload` (at most [`MAX_SEGMENT_PAYLOAD_BYTES`]) in one uncompressed segment.
pub fn encode_segment(payload: &[u8], self_contained: bool, out: &mut Vec<u8>) {
    assert!(
        payload.len() <= MAX_SEGMENT_PAYLOAD_BYTES,
        "caller splits payloads"
    );
    let data = payload.len() as u64 | if self_contained { 1 << 17 } else { 0 };
    out.extend_from_slice(&(data as u32).to_le_bytes()[..3]);
    out.extend_from_slice(&crc24(data, 3).to_le_bytes()[..3]);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32(payload).to_le_bytes());
}

/// Wrap `payload` in one segment of the compressed format. `compressed`: the payload is an LZ4
/// block of `uncompressed_len` bytes; otherwise it is sent as it is (decompressed length 0, as
/// the drivers and Cassandra do when compressing would not make it smaller).
pub fn encode_compressed_format_segment(
    payload: &[u8],
    uncompressed_len: Option<usize>,
    self_contained: bool,
    out: &mut Vec<u8>,
) {
    assert!(
        payload.len() <= MAX_SEGMENT_PAYLOAD_BYTES,
        "caller splits payloads"
    );
    let data = payload.len() as u64
        | (uncompressed_len.unwrap_or(0) as u64 & 0x1ffff) << 17
        | if self_contained { 1 << 34 } else { 0 };
    out.extend_from_slice(&data.to_le_bytes()[..5]);
    out.extend_from_slice(&crc24(data, 5).to_le_bytes()[..3]);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32(payload).to_le_bytes());
}

/// Encode frames for a connection in v5 framing: self-contained segments when they fit,
/// otherwise one frame split over several non-self-contained segments.
pub fn encode_frames_v5(frames_bytes: &[u8], out: &mut Vec<u8>) {
    encode_frames_v5_in(frames_bytes, false, out)
}

/// [`encode_frames_v5`] for a connection whose segments have the compressed format
/// (`compressed_format`, after STARTUP negotiated LZ4); the payload itself is not compressed.
pub fn encode_frames_v5_in(frames_bytes: &[u8], compressed_format: bool, out: &mut Vec<u8>) {
    let one = frames_bytes.len() <= MAX_SEGMENT_PAYLOAD_BYTES;
    for chunk in frames_bytes.chunks(MAX_SEGMENT_PAYLOAD_BYTES) {
        if compressed_format {
            encode_compressed_format_segment(chunk, None, one, out);
        } else {
            encode_segment(chunk, one, out);
        }
    }
    if frames_bytes.is_empty() {
        if compressed_format {
            encode_compressed_format_segment(&[], None, true, out);
        } else {
            encode_segment(&[], true, out);
        }
    }
}

// ---- per-direction reassembly ----------------------------------------------------------

/// How a direction's bytes are framed right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Frames back to back (v4, and v5 before STARTUP completes).
    Plain,
    /// v5 after READY/AUTHENTICATE: frames inside CRC-checked segments.
    Segmented,
}

/// Reassembles one direction of a CQL connection: bytes in (in TCP order, any split), complete
/// frames out. Keeps partial frames (and partial v5 segments) between pushes.
#[derive(Debug, Clone)]
pub struct FrameReader {
    framing: Framing,
    /// Undecoded bytes from the wire (frames, or segments when segmented).
    raw: Vec<u8>,
    /// Frame bytes taken out of segments, waiting to form complete frames.
    unsegmented: Vec<u8>,
    /// Server→client readers switch to segments by themselves after a v5 READY/AUTHENTICATE.
    is_server_side: bool,
    /// The compression the connection's STARTUP negotiated: v4 frames with the compression
    /// flag are inflated with it, and v5 segments have the compressed format.
    compression: Option<Compression>,
    /// Reused buffer for inflated bytes.
    inflated: Vec<u8>,
}

impl FrameReader {
    pub fn new(is_server_side: bool) -> Self {
        FrameReader {
            framing: Framing::Plain,
            raw: Vec::new(),
            unsegmented: Vec::new(),
            is_server_side,
            compression: None,
            inflated: Vec::new(),
        }
    }
    /// The client's STARTUP asked for this compression (from then on both directions use it).
    pub fn set_compression(&mut self, c: Compression) {
        self.compression = Some(c);
    }
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }
    pub fn framing(&self) -> Framing {
        self.framing
    }
    /// Switch to v5 segments (the client→server reader, when the server said READY).
    pub fn set_segmented(&mut self) {
        self.framing = Framing::Segmented;
    }
    /// True when no partial frame or segment is pending: a new frame (or segment) may be
    /// inserted into this direction's byte stream here without corrupting it.
    pub fn at_boundary(&self) -> bool {
        self.raw.is_empty() && self.unsegmented.is_empty()
    }
    /// Bytes of partial frames/segments held.
    pub fn pending_bytes(&self) -> usize {
        self.raw.len() + self.unsegmented.len()
    }

    /// Feed the next bytes of the stream; complete frames are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<()> {
        self.push_reusing(bytes, out, &mut Vec::new())
    }

    /// [`FrameReader::push`], taking the frames' body buffers from `spare` when it has some
    /// (the caller gives the bodies back when done: no allocation per frame).
    pub fn push_reusing(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<Frame>,
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<()> {
        self.raw.extend_from_slice(bytes);
        let mut used = 0;
        let result = loop {
            match self.framing {
                Framing::Plain => match take_frame(&self.raw[used..], spare) {
                    Ok(Some((mut frame, n))) => {
                        used += n;
                        if frame.header.flags & frame_flags::COMPRESSION != 0 {
                            if let Err(e) = self.inflate(&mut frame) {
                                break Err(e);
                            }
                        }
                        let switch = self.is_server_side
                            && frame.header.version == 5
                            && frame.header.is_response
                            && matches!(frame.header.opcode, opcode::READY | opcode::AUTHENTICATE);
                        out.push(frame);
                        if switch {
                            self.framing = Framing::Segmented;
                        }
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                },
                Framing::Segmented => match self.segment_header(used) {
                    Ok(Some((h, header_len, uncompressed_len))) => {
                        let total = header_len + h.payload_len + SEGMENT_TRAILER_BYTES;
                        if self.raw.len() - used < total {
                            break Ok(());
                        }
                        let seg = &self.raw[used..used + total];
                        let payload = &seg[header_len..header_len + h.payload_len];
                        let t = &seg[header_len + h.payload_len..];
                        let got = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
                        let want = crc32(payload);
                        if got != want {
                            break err(
                                "v5 segment payload",
                                format!("CRC32 0x{got:08x} != computed 0x{want:08x}"),
                            );
                        }
                        if h.self_contained && !self.unsegmented.is_empty() {
                            break err(
                                "v5 segment",
                                "self-contained segment while a split frame is incomplete",
                            );
                        }
                        if uncompressed_len > 0 {
                            if let Err(e) = compression::decompress_segment(
                                payload,
                                uncompressed_len,
                                &mut self.inflated,
                            ) {
                                break Err(e);
                            }
                            self.unsegmented.extend_from_slice(&self.inflated);
                        } else {
                            self.unsegmented.extend_from_slice(payload);
                        }
                        used += total;
                        let mut at = 0;
                        let inner = loop {
                            match take_frame(&self.unsegmented[at..], spare) {
                                Ok(Some((frame, n))) => {
                                    at += n;
                                    out.push(frame);
                                }
                                Ok(None) => break Ok(()),
                                Err(e) => break Err(e),
                            }
                        };
                        self.unsegmented.drain(..at);
                        if let Err(e) = inner {
                            break Err(e);
                        }
                        if h.self_contained && !self.unsegmented.is_empty() {
                            break err("v5 segment", "self-contained segment ends inside a frame");
                        }
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                },
            }
        };
        self.raw.drain(..used);
        result
    }

    /// The segment header at `raw[at..]` in this connection's format: (header, header length,
    /// decompressed length or 0).
    fn segment_header(&self, at: usize) -> Result<Option<(SegmentHeader, usize, usize)>> {
        let b = &self.raw[at..];
        match self.compression {
            None => Ok(SegmentHeader::parse(b)?.map(|h| (h, SEGMENT_HEADER_BYTES, 0))),
            Some(Compression::Lz4) => Ok(parse_compressed_segment_header(b)?
                .map(|(h, n)| (h, COMPRESSED_SEGMENT_HEADER_BYTES, n))),
            Some(Compression::Snappy) => err(
                "v5 segment",
                "Snappy negotiated on a v5 connection (v5 compresses segments with LZ4 only)",
            ),
        }
    }

    /// Replace a v4 compressed frame's body by its decompressed bytes and clear the flag.
    fn inflate(&mut self, frame: &mut Frame) -> Result<()> {
        let Some(c) = self.compression else {
            return err(
                "frame header",
                "compressed frame on a connection whose STARTUP negotiated no known compression",
            );
        };
        if self.framing == Framing::Segmented || frame.header.version >= 5 {
            return err(
                "frame header",
                "compression flag on a v5 frame (v5 compresses segments, not frames)",
            );
        }
        compression::decompress_body(c, &frame.body, &mut self.inflated)?;
        std::mem::swap(&mut frame.body, &mut self.inflated);
        frame.header.flags &= !frame_flags::COMPRESSION;
        frame.header.body_len = frame.body.len() as u32;
        Ok(())
    }
}

/// One complete frame from the front of `b`, and its length.
fn take_frame(b: &[u8], spare: &mut Vec<Vec<u8>>) -> Result<Option<(Frame, usize)>> {
    let Some(header) = FrameHeader::parse(b)? else {
        return Ok(None);
    };
    let total = HEADER_BYTES + header.body_len as usize;
    if b.len() < total {
        return Ok(None);
    }
    let mut body = spare.pop().unwrap_or_default();
    body.clear();
    body.extend_from_slice(&b[HEADER_BYTES..total]);
    Ok(Some((Frame { header, body }, total)))
}

// ---- requests ----------------------------------------------------------------------------

/// `<query_parameters>` of QUERY and EXECUTE.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryParams {
    pub consistency: u16,
    pub flags: u32,
    pub values: Vec<Value>,
    /// Names of the values when `WITH_NAMES_FOR_VALUES`.
    pub names: Option<Vec<String>>,
    pub page_size: Option<i32>,
    pub paging_state: Option<Vec<u8>>,
    pub serial_consistency: Option<u16>,
    pub timestamp: Option<i64>,
    pub keyspace: Option<String>,
    pub now_in_seconds: Option<i32>,
}

impl QueryParams {
    fn parse(r: &mut Reader<'_>, version: u8) -> Result<QueryParams> {
        use query_flags::*;
        let consistency = r.short()?;
        let flags = if version >= 5 {
            r.int()? as u32
        } else {
            r.u8()? as u32
        };
        let mut p = QueryParams {
            consistency,
            flags,
            ..Default::default()
        };
        if flags & VALUES != 0 {
            let n = r.short()? as usize;
            let mut names = Vec::new();
            for _ in 0..n {
                if flags & WITH_NAMES_FOR_VALUES != 0 {
                    names.push(r.string()?.to_string());
                }
                p.values.push(r.value()?);
            }
            if flags & WITH_NAMES_FOR_VALUES != 0 {
                p.names = Some(names);
            }
        }
        if flags & PAGE_SIZE != 0 {
            p.page_size = Some(r.int()?);
        }
        if flags & WITH_PAGING_STATE != 0 {
            p.paging_state = Some(r.bytes()?.unwrap_or_default().to_vec());
        }
        if flags & WITH_SERIAL_CONSISTENCY != 0 {
            p.serial_consistency = Some(r.short()?);
        }
        if flags & WITH_DEFAULT_TIMESTAMP != 0 {
            p.timestamp = Some(r.long()?);
        }
        if version >= 5 && flags & WITH_KEYSPACE != 0 {
            p.keyspace = Some(r.string()?.to_string());
        }
        if version >= 5 && flags & WITH_NOW_IN_SECONDS != 0 {
            p.now_in_seconds = Some(r.int()?);
        }
        Ok(p)
    }
}

/// A client request, as far as the switch cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Query {
        text: String,
        params: QueryParams,
    },
    Prepare {
        text: String,
        keyspace: Option<String>,
    },
    Execute {
        id: Vec<u8>,
        result_metadata_id: Option<Vec<u8>>,
        params: QueryParams,
    },
    Batch,
    /// Any other opcode (STARTUP, OPTIONS, REGISTER, AUTH_RESPONSE...): passed through.
    Other(u8),
}

/// Decode a request frame's body.
pub fn parse_request(h: &FrameHeader, body: &[u8]) -> Result<Request> {
    match h.opcode {
        opcode::QUERY => {
            let mut r = Reader::new(body, "QUERY body");
            let text = r.long_string()?.to_string();
            let params = QueryParams::parse(&mut r, h.version)?;
            Ok(Request::Query { text, params })
        }
        opcode::PREPARE => {
            let mut r = Reader::new(body, "PREPARE body");
            let text = r.long_string()?.to_string();
            let mut keyspace = None;
            if h.version >= 5 && r.remaining() > 0 {
                let flags = r.int()?;
                if flags & 0x01 != 0 {
                    keyspace = Some(r.string()?.to_string());
                }
            }
            Ok(Request::Prepare { text, keyspace })
        }
        opcode::EXECUTE => {
            let mut r = Reader::new(body, "EXECUTE body");
            let id = r.short_bytes()?.to_vec();
            let result_metadata_id = if h.version >= 5 {
                Some(r.short_bytes()?.to_vec())
            } else {
                None
            };
            let params = QueryParams::parse(&mut r, h.version)?;
            Ok(Request::Execute {
                id,
                result_metadata_id,
                params,
            })
        }
        opcode::BATCH => Ok(Request::Batch),
        op => Ok(Request::Other(op)),
    }
}

/// A bound value read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueRef<'a> {
    Null,
    Unset,
    Bytes(&'a [u8]),
}

/// An EXECUTE request read in place, without copies: what the switch needs to classify it.
/// Accepts and rejects exactly the bodies [`parse_request`] does (a proptest checks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecuteRef<'a> {
    pub id: &'a [u8],
    pub result_metadata_id: Option<&'a [u8]>,
    /// `<query_parameters>` flags.
    pub flags: u32,
    /// The bound value at the index asked for (None: there is no such value).
    pub value: Option<ValueRef<'a>>,
    /// Values are named (`WITH_NAMES_FOR_VALUES` with `VALUES`).
    pub has_names: bool,
    pub has_paging_state: bool,
    pub consistency: u16,
    pub serial_consistency: Option<u16>,
    /// The `<n><value_1>...<value_n>` bytes (empty without `VALUES`): every bound value.
    pub values: &'a [u8],
    /// v5 `now_in_seconds` was given (the server evaluates TTLs at that time).
    pub has_now_in_seconds: bool,
}

/// The prepared id of an EXECUTE body (to find which bound value matters before
/// [`parse_execute_ref`]).
pub fn execute_id(body: &[u8]) -> Result<&[u8]> {
    Reader::new(body, "EXECUTE body").short_bytes()
}

/// Read an EXECUTE body in place, keeping the bound value at index `want`.
pub fn parse_execute_ref(version: u8, body: &[u8], want: Option<usize>) -> Result<ExecuteRef<'_>> {
    use query_flags::*;
    let mut r = Reader::new(body, "EXECUTE body");
    let id = r.short_bytes()?;
    let result_metadata_id = if version >= 5 {
        Some(r.short_bytes()?)
    } else {
        None
    };
    let consistency = r.short()?;
    let flags = if version >= 5 {
        r.int()? as u32
    } else {
        r.u8()? as u32
    };
    let mut value = None;
    let mut has_names = false;
    let values_at = r.remaining();
    if flags & VALUES != 0 {
        let n = r.short()? as usize;
        has_names = flags & WITH_NAMES_FOR_VALUES != 0;
        for i in 0..n {
            if has_names {
                r.string()?;
            }
            let v = match r.int()? {
                -1 => ValueRef::Null,
                -2 => ValueRef::Unset,
                n if n < 0 => return err(r.at, format!("value length {n} is below -2")),
                n => ValueRef::Bytes(r.take(n as usize)?),
            };
            if Some(i) == want {
                value = Some(v);
            }
        }
    }
    let values = &body[body.len() - values_at..body.len() - r.remaining()];
    if flags & PAGE_SIZE != 0 {
        r.int()?;
    }
    if flags & WITH_PAGING_STATE != 0 {
        r.bytes()?;
    }
    let mut serial_consistency = None;
    if flags & WITH_SERIAL_CONSISTENCY != 0 {
        serial_consistency = Some(r.short()?);
    }
    if flags & WITH_DEFAULT_TIMESTAMP != 0 {
        r.long()?;
    }
    if version >= 5 && flags & WITH_KEYSPACE != 0 {
        r.string()?;
    }
    if version >= 5 && flags & WITH_NOW_IN_SECONDS != 0 {
        r.int()?;
    }
    Ok(ExecuteRef {
        id,
        result_metadata_id,
        flags,
        value,
        has_names,
        has_paging_state: flags & WITH_PAGING_STATE != 0,
        consistency,
        serial_consistency,
        values,
        has_now_in_seconds: version >= 5 && flags & WITH_NOW_IN_SECONDS != 0,
    })
}

/// Encode a QUERY body (used by tests, seeds and the benchmark capture builder).
pub fn encode_query(version: u8, text: &str, params: &QueryParams) -> Vec<u8> {
    let mut b = Vec::new();
    write::int(&mut b, text.len() as i32);
    b.extend_from_slice(text.as_bytes());
    encode_params(version, params, &mut b);
    b
}

/// Encode an EXECUTE body.
pub fn encode_execute(
    version: u8,
    id: &[u8],
    result_metadata_id: &[u8],
    params: &QueryParams,
) -> Vec<u8> {
    let mut b = Vec::new();
    write::short_bytes(&mut b, id);
    if version >= 5 {
        write::short_bytes(&mut b, result_metadata_id);
    }
    encode_params(version, params, &mut b);
    b
}

fn encode_params(version: u8, p: &QueryParams, b: &mut Vec<u8>) {
    use query_flags::*;
    write::short(b, p.consistency);
    if version >= 5 {
        write::int(b, p.flags as i32);
    } else {
        b.push(p.flags as u8);
    }
    if p.flags & VALUES != 0 {
        write::short(b, p.values.len() as u16);
        for (i, v) in p.values.iter().enumerate() {
            if let Some(names) = &p.names {
                write::string(b, names.get(i).map(String::as_str).unwrap_or(""));
            }
            match v {
                Value::Null => write::int(b, -1),
                Value::Unset => write::int(b, -2),
                Value::Bytes(x) => write::bytes(b, Some(x)),
            }
        }
    }
    if let Some(n) = p.page_size {
        write::int(b, n);
    }
    if let Some(s) = &p.paging_state {
        write::bytes(b, Some(s));
    }
    if let Some(s) = p.serial_consistency {
        write::short(b, s);
    }
    if let Some(t) = p.timestamp {
        b.extend_from_slice(&t.to_be_bytes());
    }
    if let Some(k) = &p.keyspace {
        write::string(b, k);
    }
    if let Some(n) = p.now_in_seconds {
        write::int(b, n);
    }
}

// ---- results -----------------------------------------------------------------------------

/// A CQL type `[option]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CqlType {
    Custom(String),
    /// A native type by its id (ascii 0x01 ... duration 0x15).
    Native(u16),
    List(Box<CqlType>),
    Map(Box<CqlType>, Box<CqlType>),
    Set(Box<CqlType>),
    Udt {
        keyspace: String,
        name: String,
        fields: Vec<(String, CqlType)>,
    },
    Tuple(Vec<CqlType>),
}

pub mod type_id {
    pub const CUSTOM: u16 = 0x00;
    pub const ASCII: u16 = 0x01;
    pub const BIGINT: u16 = 0x02;
    pub const BLOB: u16 = 0x03;
    pub const BOOLEAN: u16 = 0x04;
    pub const COUNTER: u16 = 0x05;
    pub const DOUBLE: u16 = 0x07;
    pub const FLOAT: u16 = 0x08;
    pub const INT: u16 = 0x09;
    pub const TIMESTAMP: u16 = 0x0B;
    pub const UUID: u16 = 0x0C;
    pub const VARCHAR: u16 = 0x0D;
    pub const TIMEUUID: u16 = 0x0F;
    pub const INET: u16 = 0x10;
    pub const DATE: u16 = 0x11;
    pub const TIME: u16 = 0x12;
    pub const SMALLINT: u16 = 0x13;
    pub const TINYINT: u16 = 0x14;
    pub const LIST: u16 = 0x20;
    pub const MAP: u16 = 0x21;
    pub const SET: u16 = 0x22;
    pub const UDT: u16 = 0x30;
    pub const TUPLE: u16 = 0x31;
}

/// Types nest; a hostile frame must not recurse without bound.
const MAX_TYPE_DEPTH: u32 = 16;

impl CqlType {
    fn parse(r: &mut Reader<'_>, depth: u32) -> Result<CqlType> {
        if depth > MAX_TYPE_DEPTH {
            return err(r.at, format!("type nesting deeper than {MAX_TYPE_DEPTH}"));
        }
        use type_id::*;
        let id = r.short()?;
        Ok(match id {
            CUSTOM => CqlType::Custom(r.string()?.to_string()),
            0x01..=0x15 => CqlType::Native(id),
            LIST => CqlType::List(Box::new(Self::parse(r, depth + 1)?)),
            MAP => CqlType::Map(
                Box::new(Self::parse(r, depth + 1)?),
                Box::new(Self::parse(r, depth + 1)?),
            ),
            SET => CqlType::Set(Box::new(Self::parse(r, depth + 1)?)),
            UDT => {
                let keyspace = r.string()?.to_string();
                let name = r.string()?.to_string();
                let n = r.short()?;
                let mut fields = Vec::new();
                for _ in 0..n {
                    let f = r.string()?.to_string();
                    fields.push((f, Self::parse(r, depth + 1)?));
                }
                CqlType::Udt {
                    keyspace,
                    name,
                    fields,
                }
            }
            TUPLE => {
                let n = r.short()?;
                let mut ts = Vec::new();
                for _ in 0..n {
                    ts.push(Self::parse(r, depth + 1)?);
                }
                CqlType::Tuple(ts)
            }
            other => return err(r.at, format!("unknown type id 0x{other:04x}")),
        })
    }
    fn emit(&self, out: &mut Vec<u8>) {
        use type_id::*;
        match self {
            CqlType::Custom(s) => {
                write::short(out, CUSTOM);
                write::string(out, s);
            }
            CqlType::Native(id) => write::short(out, *id),
            CqlType::List(t) => {
                write::short(out, LIST);
                t.emit(out);
            }
            CqlType::Map(k, v) => {
                write::short(out, MAP);
                k.emit(out);
                v.emit(out);
            }
            CqlType::Set(t) => {
                write::short(out, SET);
                t.emit(out);
            }
            CqlType::Udt {
                keyspace,
                name,
                fields,
            } => {
                write::short(out, UDT);
                write::string(out, keyspace);
                write::string(out, name);
                write::short(out, fields.len() as u16);
                for (f, t) in fields {
                    write::string(out, f);
                    t.emit(out);
                }
            }
            CqlType::Tuple(ts) => {
                write::short(out, TUPLE);
                write::short(out, ts.len() as u16);
                for t in ts {
                    t.emit(out);
                }
            }
        }
    }
}

/// `<col_spec>`: keyspace and table are present only without a global table spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub table: Option<(String, String)>,
    pub name: String,
    pub typ: CqlType,
}

impl ColumnSpec {
    /// Columns `(name, native type id)` under a global table spec (for captures and tests).
    pub fn natives(cols: &[(&str, u16)]) -> Vec<ColumnSpec> {
        cols.iter()
            .map(|(n, t)| ColumnSpec {
                table: None,
                name: n.to_string(),
                typ: CqlType::Native(*t),
            })
            .collect()
    }
}

/// Rows (and Prepared result) metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowsMetadata {
    pub flags: u32,
    pub columns_count: u32,
    pub paging_state: Option<Vec<u8>>,
    pub new_metadata_id: Option<Vec<u8>>,
    pub global_table: Option<(String, String)>,
    pub columns: Vec<ColumnSpec>,
}

fn parse_col_specs(r: &mut Reader<'_>, n: u32, global: bool) -> Result<Vec<ColumnSpec>> {
    let mut cols = Vec::new();
    for _ in 0..n {
        let table = if global {
            None
        } else {
            Some((r.string()?.to_string(), r.string()?.to_string()))
        };
        let name = r.string()?.to_string();
        let typ = CqlType::parse(r, 0)?;
        cols.push(ColumnSpec { table, name, typ });
    }
    Ok(cols)
}

fn emit_col_specs(cols: &[ColumnSpec], out: &mut Vec<u8>) {
    for c in cols {
        if let Some((k, t)) = &c.table {
            write::string(out, k);
            write::string(out, t);
        }
        write::string(out, &c.name);
        c.typ.emit(out);
    }
}

/// Columns counts come from the wire; cap what we preallocate or loop over.
const MAX_COLUMNS: i32 = 65_535;

impl RowsMetadata {
    fn parse(r: &mut Reader<'_>) -> Result<RowsMetadata> {
        use rows_flags::*;
        let flags = r.int()? as u32;
        let n = r.int()?;
        if !(0..=MAX_COLUMNS).contains(&n) {
            return err(
                r.at,
                format!("columns_count {n} is outside 0..={MAX_COLUMNS}"),
            );
        }
        let mut m = RowsMetadata {
            flags,
            columns_count: n as u32,
            ..Default::default()
        };
        if flags & HAS_MORE_PAGES != 0 {
            m.paging_state = Some(r.bytes()?.unwrap_or_default().to_vec());
        }
        if flags & METADATA_CHANGED != 0 {
            m.new_metadata_id = Some(r.short_bytes()?.to_vec());
        }
        if flags & NO_METADATA == 0 {
            if flags & GLOBAL_TABLES_SPEC != 0 {
                m.global_table = Some((r.string()?.to_string(), r.string()?.to_string()));
            }
            m.columns = parse_col_specs(r, n as u32, flags & GLOBAL_TABLES_SPEC != 0)?;
        }
        Ok(m)
    }
    fn emit(&self, out: &mut Vec<u8>) {
        write::int(out, self.flags as i32);
        write::int(out, self.columns_count as i32);
        if let Some(p) = &self.paging_state {
            write::bytes(out, Some(p));
        }
        if let Some(id) = &self.new_metadata_id {
            write::short_bytes(out, id);
        }
        if let Some((k, t)) = &self.global_table {
            write::string(out, k);
            write::string(out, t);
        }
        emit_col_specs(&self.columns, out);
    }
}

/// A Rows result: metadata and cells (`None` = null).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub metadata: RowsMetadata,
    pub rows: Vec<Vec<Option<Vec<u8>>>>,
}

/// A Prepared result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub id: Vec<u8>,
    pub result_metadata_id: Option<Vec<u8>>,
    /// Bind-variable metadata: flags, partition-key indexes and the variables' specs.
    pub bind_flags: u32,
    pub pk_indexes: Vec<u16>,
    pub bind_global_table: Option<(String, String)>,
    pub bind_columns: Vec<ColumnSpec>,
    pub result: RowsMetadata,
}

/// A RESULT message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultMsg {
    Void,
    Rows(Rows),
    SetKeyspace(String),
    Prepared(Prepared),
    SchemaChange(SchemaChange),
}

/// A schema change (RESULT Schema_change, or an EVENT SCHEMA_CHANGE): what it touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    /// `KEYSPACE`, `TABLE`, `TYPE`, `FUNCTION` or `AGGREGATE`.
    pub target: String,
    pub keyspace: String,
    /// The table (or type, function...) name; `None` for a keyspace.
    pub name: Option<String>,
}

impl SchemaChange {
    /// `<change_type><target><options>` (the rest of a function's options is not read).
    fn parse(r: &mut Reader<'_>) -> Result<SchemaChange> {
        r.string()?; // CREATED / UPDATED / DROPPED
        let target = r.string()?.to_string();
        let keyspace = r.string()?.to_string();
        let name = if target == "KEYSPACE" {
            None
        } else {
            Some(r.string()?.to_string())
        };
        Ok(SchemaChange {
            target,
            keyspace,
            name,
        })
    }
}

/// The schema change an EVENT frame's body announces (`None` for topology and status events).
pub fn parse_event_schema_change(body: &[u8]) -> Result<Option<SchemaChange>> {
    let mut r = Reader::new(body, "EVENT body");
    if r.string()? != "SCHEMA_CHANGE" {
        return Ok(None);
    }
    SchemaChange::parse(&mut r).map(Some)
}

/// One statement of a BATCH request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchItem<'a> {
    Query(&'a str),
    Prepared(&'a [u8]),
}

/// The statements of a BATCH body (`<type><n><query_1>...<query_n>...`): their text or
/// prepared id (their values are skipped).
pub fn batch_items(body: &[u8]) -> Result<Vec<BatchItem<'_>>> {
    let mut r = Reader::new(body, "BATCH body");
    r.u8()?; // logged / unlogged / counter
    let n = r.short()?;
    let mut items = Vec::with_capacity(n.min(1024) as usize);
    for _ in 0..n {
        let item = match r.u8()? {
            0 => BatchItem::Query(r.long_string()?),
            1 => BatchItem::Prepared(r.short_bytes()?),
            k => {
                return err(
                    "BATCH body",
                    format!("statement kind {k} is neither 0 nor 1"),
                )
            }
        };
        for _ in 0..r.short()? {
            r.value()?;
        }
        items.push(item);
    }
    Ok(items)
}

/// Decode a RESULT body.
pub fn parse_result(version: u8, body: &[u8]) -> Result<ResultMsg> {
    let mut r = Reader::new(body, "RESULT body");
    match r.int()? {
        result_kind::VOID => Ok(ResultMsg::Void),
        result_kind::ROWS => {
            let metadata = RowsMetadata::parse(&mut r)?;
            let n = r.int()?;
            if n < 0 {
                return err("RESULT body", format!("rows_count {n} is negative"));
            }
            let cols = metadata.columns_count as usize;
            // Every cell takes at least 4 bytes: refuse counts the body cannot hold. Rows without
            // columns take no bytes at all, so their count is capped (a fuzzer's billion rows).
            let fits = if cols == 0 {
                n <= 1024
            } else {
                (n as usize).saturating_mul(cols).saturating_mul(4) <= r.remaining()
            };
            if !fits {
                return err(
                    "RESULT body",
                    format!(
                        "{n} rows of {cols} columns do not fit in {} bytes",
                        r.remaining()
                    ),
                );
            }
            let mut rows = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let mut row = Vec::with_capacity(cols);
                for _ in 0..cols {
                    row.push(r.bytes()?.map(<[u8]>::to_vec));
                }
                rows.push(row);
            }
            if r.remaining() != 0 {
                return err(
                    "RESULT body",
                    format!("{} bytes after the last row", r.remaining()),
                );
            }
            Ok(ResultMsg::Rows(Rows { metadata, rows }))
        }
        result_kind::SET_KEYSPACE => Ok(ResultMsg::SetKeyspace(r.string()?.to_string())),
        result_kind::PREPARED => {
            let id = r.short_bytes()?.to_vec();
            let result_metadata_id = if version >= 5 {
                Some(r.short_bytes()?.to_vec())
            } else {
                None
            };
            let bind_flags = r.int()? as u32;
            let n = r.int()?;
            if !(0..=MAX_COLUMNS).contains(&n) {
                return err(
                    "RESULT Prepared",
                    format!("columns_count {n} is outside 0..={MAX_COLUMNS}"),
                );
            }
            let pk_count = r.int()?;
            if !(0..=MAX_COLUMNS).contains(&pk_count) {
                return err(
                    "RESULT Prepared",
                    format!("pk_count {pk_count} is outside 0..={MAX_COLUMNS}"),
                );
            }
            let mut pk_indexes = Vec::new();
            for _ in 0..pk_count {
                pk_indexes.push(r.short()?);
            }
            let global = bind_flags & rows_flags::GLOBAL_TABLES_SPEC != 0;
            let bind_global_table = if global {
                Some((r.string()?.to_string(), r.string()?.to_string()))
            } else {
                None
            };
            let bind_columns = parse_col_specs(&mut r, n as u32, global)?;
            let result = RowsMetadata::parse(&mut r)?;
            Ok(ResultMsg::Prepared(Prepared {
                id,
                result_metadata_id,
                bind_flags,
                pk_indexes,
                bind_global_table,
                bind_columns,
                result,
            }))
        }
        result_kind::SCHEMA_CHANGE => Ok(ResultMsg::SchemaChange(SchemaChange::parse(&mut r)?)),
        k => err("RESULT body", format!("unknown result kind {k}")),
    }
}

/// Whether a RESULT body is one the switch may store as a cached answer, read in place: a Rows
/// result without more pages or changed metadata, with at most one row, in its canonical
/// encoding (the bytes `encode_rows(parse_result(body))` gives back — no null written as a
/// length below −1). The same verdict as decoding, checking and re-encoding it (proptest
/// `rows_cacheable_in_place_equals_reencoding` and the `cql` fuzz target), without building
/// the rows.
pub fn rows_body_cacheable(body: &[u8]) -> bool {
    rows_body_cacheable_impl(body).unwrap_or(false)
}

fn rows_body_cacheable_impl(body: &[u8]) -> Result<bool> {
    use rows_flags::*;
    let mut r = Reader::new(body, "RESULT body");
    if r.int()? != result_kind::ROWS {
        return Ok(false);
    }
    let flags = r.int()? as u32;
    let n = r.int()?;
    if !(0..=MAX_COLUMNS).contains(&n) || flags & (HAS_MORE_PAGES | METADATA_CHANGED) != 0 {
        return Ok(false);
    }
    if flags & NO_METADATA == 0 {
        let global = flags & GLOBAL_TABLES_SPEC != 0;
        if global {
            r.string()?;
            r.string()?;
        }
        for _ in 0..n {
            if !global {
                r.string()?;
                r.string()?;
            }
            r.string()?;
            // Types are re-emitted exactly as parsed; parsing checks they are known.
            CqlType::parse(&mut r, 0)?;
        }
    }
    let rows = r.int()?;
    if !(0..=1).contains(&rows) {
        return Ok(false);
    }
    // The decoder's size check (every cell takes at least 4 bytes).
    let cols = n as usize;
    if cols > 0 && (rows as usize) * cols * 4 > r.remaining() {
        return Ok(false);
    }
    for _ in 0..rows as usize * cols {
        let len = r.int()?;
        if len < -1 {
            // Decoded as null, re-encoded as −1: not canonical.
            return Ok(false);
        }
        if len > 0 {
            r.take(len as usize)?;
        }
    }
    Ok(r.remaining() == 0)
}

/// Encode a Rows RESULT body (the switch's answer to a hit).
pub fn encode_rows(rows: &Rows, out: &mut Vec<u8>) {
    write::int(out, result_kind::ROWS);
    rows.metadata.emit(out);
    write::int(out, rows.rows.len() as i32);
    for row in &rows.rows {
        for cell in row {
            write::bytes(out, cell.as_deref());
        }
    }
}

/// Encode a Prepared RESULT body (tests and seeds).
pub fn encode_prepared(version: u8, p: &Prepared, out: &mut Vec<u8>) {
    write::int(out, result_kind::PREPARED);
    write::short_bytes(out, &p.id);
    if version >= 5 {
        write::short_bytes(out, p.result_metadata_id.as_deref().unwrap_or(&[]));
    }
    write::int(out, p.bind_flags as i32);
    write::int(out, p.bind_columns.len() as i32);
    write::int(out, p.pk_indexes.len() as i32);
    for i in &p.pk_indexes {
        write::short(out, *i);
    }
    if let Some((k, t)) = &p.bind_global_table {
        write::string(out, k);
        write::string(out, t);
    }
    emit_col_specs(&p.bind_columns, out);
    p.result.emit(out);
}

/// Build a complete response frame (plain framing) for `stream`.
pub fn response_frame(version: u8, stream: i16, op: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    append_response_frame(version, stream, op, body, &mut out);
    out
}

/// Append a complete response frame (plain framing) to `out` (a reused buffer).
pub fn append_response_frame(version: u8, stream: i16, op: u8, body: &[u8], out: &mut Vec<u8>) {
    FrameHeader {
        version,
        is_response: true,
        flags: 0,
        stream,
        opcode: op,
        body_len: body.len() as u32,
    }
    .emit(out);
    out.extend_from_slice(body);
}

/// Build a complete request frame (plain framing).
pub fn request_frame(version: u8, stream: i16, op: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    FrameHeader {
        version,
        is_response: false,
        flags: 0,
        stream,
        opcode: op,
        body_len: body.len() as u32,
    }
    .emit(&mut out);
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn kv_rows(value: Option<&[u8]>) -> Rows {
        Rows {
            metadata: RowsMetadata {
                flags: rows_flags::GLOBAL_TABLES_SPEC,
                columns_count: 1,
                global_table: Some(("ks".into(), "kv".into())),
                columns: vec![ColumnSpec {
                    table: None,
                    name: "v".into(),
                    typ: CqlType::Native(type_id::VARCHAR),
                }],
                ..Default::default()
            },
            rows: vec![vec![value.map(<[u8]>::to_vec)]],
        }
    }

    #[test]
    fn crc24_matches_cassandra_driver() {
        // Values from the Python driver's compute_crc24 (cassandra/segment.py).
        assert_eq!(crc24(5 | 1 << 17, 3), 0x9a9919);
        assert_eq!(crc24(0, 3), 0x7de777);
        assert_eq!(crc32(b"hello"), 0xb60e8074);
        let seg = {
            let mut v = Vec::new();
            encode_segment(b"hello", true, &mut v);
            v
        };
        let h = SegmentHeader::parse(&seg).unwrap().unwrap();
        assert_eq!(
            h,
            SegmentHeader {
                payload_len: 5,
                self_contained: true
            }
        );
    }

    #[test]
    fn segment_crc_errors_are_values() {
        let mut v = Vec::new();
        encode_segment(b"hello", true, &mut v);
        let mut bad = v.clone();
        bad[3] ^= 1;
        assert!(SegmentHeader::parse(&bad).is_err());
        let mut r = FrameReader::new(true);
        r.set_segmented();
        let mut bad = v.clone();
        *bad.last_mut().unwrap() ^= 1;
        let mut out = Vec::new();
        assert!(r.push(&bad, &mut out).is_err());
    }

    #[test]
    fn frames_split_anywhere_and_coalesced() {
        let mut body = Vec::new();
        encode_rows(&kv_rows(Some(b"value-1")), &mut body);
        let f1 = response_frame(4, 7, opcode::RESULT, &body);
        let f2 = response_frame(4, 9, opcode::RESULT, &body);
        let all = [f1.clone(), f2.clone()].concat();
        for cut in 0..=all.len() {
            let mut r = FrameReader::new(true);
            let mut out = Vec::new();
            r.push(&all[..cut], &mut out).unwrap();
            r.push(&all[cut..], &mut out).unwrap();
            assert_eq!(out.len(), 2, "cut at {cut}");
            assert_eq!(out[0].header.stream, 7);
            assert_eq!(out[1].header.stream, 9);
            assert!(r.at_boundary());
        }
    }

    #[test]
    fn v5_switches_to_segments_after_ready() {
        let ready = response_frame(5, 0, opcode::READY, &[]);
        let mut body = Vec::new();
        encode_rows(&kv_rows(Some(b"x")), &mut body);
        let rows = response_frame(5, 3, opcode::RESULT, &body);
        let mut segs = Vec::new();
        encode_frames_v5(&[rows.clone(), rows.clone()].concat(), &mut segs);
        let all = [ready, segs].concat();
        for cut in 0..=all.len() {
            let mut r = FrameReader::new(true);
            let mut out = Vec::new();
            r.push(&all[..cut], &mut out).unwrap();
            r.push(&all[cut..], &mut out).unwrap();
            assert_eq!(out.len(), 3, "cut at {cut}");
            assert_eq!(r.framing(), Framing::Segmented);
            assert!(r.at_boundary());
        }
    }

    #[test]
    fn v5_large_frame_spans_segments() {
        let big = vec![b'a'; 300_000];
        let rows = kv_rows(Some(&big));
        let mut body = Vec::new();
        encode_rows(&rows, &mut body);
        let frame = response_frame(5, 1, opcode::RESULT, &body);
        let mut segs = Vec::new();
        encode_frames_v5(&frame, &mut segs);
        let mut r = FrameReader::new(true);
        r.set_segmented();
        let mut out = Vec::new();
        for chunk in segs.chunks(1448) {
            r.push(chunk, &mut out).unwrap();
        }
        assert_eq!(out.len(), 1);
        assert_eq!(
            parse_result(5, &out[0].body).unwrap(),
            ResultMsg::Rows(rows)
        );
    }

    #[test]
    fn query_params_round_trip_v4_v5() {
        for version in [4u8, 5] {
            let mut p = QueryParams {
                consistency: 1,
                flags: query_flags::VALUES
                    | query_flags::PAGE_SIZE
                    | query_flags::WITH_DEFAULT_TIMESTAMP,
                values: vec![Value::Bytes(vec![0, 0, 0, 42]), Value::Null, Value::Unset],
                page_size: Some(5000),
                timestamp: Some(1_700_000_000_000_000),
                ..Default::default()
            };
            if version == 5 {
                p.flags |= query_flags::WITH_KEYSPACE;
                p.keyspace = Some("ks".into());
            }
            let body = encode_query(version, "SELECT v FROM kv WHERE k = ?", &p);
            let h = FrameHeader {
                version,
                is_response: false,
                flags: 0,
                stream: 1,
                opcode: opcode::QUERY,
                body_len: body.len() as u32,
            };
            assert_eq!(
                parse_request(&h, &body).unwrap(),
                Request::Query {
                    text: "SELECT v FROM kv WHERE k = ?".into(),
                    params: p.clone()
                }
            );
            let body = encode_execute(version, b"ID", b"MD", &p);
            let h = FrameHeader {
                opcode: opcode::EXECUTE,
                ..h
            };
            match parse_request(&h, &body).unwrap() {
                Request::Execute { id, params, .. } => {
                    assert_eq!(id, b"ID");
                    assert_eq!(params, p);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn rows_and_prepared_round_trip() {
        let rows = kv_rows(Some(b"hello"));
        let mut b = Vec::new();
        encode_rows(&rows, &mut b);
        assert_eq!(parse_result(4, &b).unwrap(), ResultMsg::Rows(rows.clone()));
        let p = Prepared {
            id: vec![1, 2, 3],
            result_metadata_id: Some(vec![9]),
            bind_flags: rows_flags::GLOBAL_TABLES_SPEC,
            pk_indexes: vec![0],
            bind_global_table: Some(("ks".into(), "kv".into())),
            bind_columns: vec![ColumnSpec {
                table: None,
                name: "k".into(),
                typ: CqlType::Native(type_id::INT),
            }],
            result: rows.metadata.clone(),
        };
        let mut b = Vec::new();
        encode_prepared(5, &p, &mut b);
        assert_eq!(parse_result(5, &b).unwrap(), ResultMsg::Prepared(p));
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        let h = FrameHeader {
            version: 4,
            is_response: false,
            flags: 0,
            stream: 0,
            opcode: opcode::QUERY,
            body_len: 0,
        };
        assert!(parse_request(&h, &[0, 0, 0, 9, b'a']).is_err());
        assert!(parse_result(4, &[0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(parse_result(4, &[0, 0, 0, 99]).is_err());
        // rows_count that cannot fit
        assert!(parse_result(4, &[0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 0x7f, 0, 0, 0]).is_err());
        assert!(FrameHeader::parse(&[0x09, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        // a billion rows of no columns (found by fuzzing: a time-out, not a crash)
        assert!(parse_result(4, &[0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0x3a, 0, 0, 0]).is_err());
        // deep type nesting
        let mut deep = vec![
            0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, b'k', 0, 1, b't', 0, 1, b'c',
        ];
        for _ in 0..100 {
            deep.extend_from_slice(&[0, 0x20]);
        }
        assert!(parse_result(4, &deep).is_err());
    }
}

#[cfg(test)]
mod execute_ref_tests {
    use super::*;
    use proptest::prelude::*;

    /// The in-place EXECUTE reader against the owning parser (the oracle): same accept/reject,
    /// same id, metadata id, flags, value at the index, names and paging state.
    fn check(version: u8, body: &[u8], want: usize) -> std::result::Result<(), TestCaseError> {
        let h = FrameHeader {
            version,
            is_response: false,
            flags: 0,
            stream: 1,
            opcode: opcode::EXECUTE,
            body_len: body.len() as u32,
        };
        let owned = parse_request(&h, body);
        let borrowed = parse_execute_ref(version, body, Some(want));
        match (owned, borrowed) {
            (Err(_), Err(_)) => {}
            (
                Ok(Request::Execute {
                    id,
                    result_metadata_id,
                    params,
                }),
                Ok(r),
            ) => {
                prop_assert_eq!(r.id, id.as_slice());
                prop_assert_eq!(r.result_metadata_id, result_metadata_id.as_deref());
                prop_assert_eq!(execute_id(body).ok(), Some(id.as_slice()));
                prop_assert_eq!(r.flags, params.flags);
                let v = params.values.get(want).map(|v| match v {
                    Value::Null => ValueRef::Null,
                    Value::Unset => ValueRef::Unset,
                    Value::Bytes(b) => ValueRef::Bytes(b),
                });
                prop_assert_eq!(r.value, v);
                prop_assert_eq!(r.has_names, params.names.is_some());
                prop_assert_eq!(r.has_paging_state, params.paging_state.is_some());
            }
            (o, b) => prop_assert!(false, "owned {:?} vs borrowed {:?}", o, b),
        }
        Ok(())
    }

    fn params() -> impl Strategy<Value = QueryParams> {
        (
            any::<u16>(),
            0u32..0x200,
            prop::collection::vec(
                prop_oneof![
                    Just(Value::Null),
                    Just(Value::Unset),
                    prop::collection::vec(any::<u8>(), 0..9).prop_map(Value::Bytes)
                ],
                0..4,
            ),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(consistency, flags, values, names, paging)| QueryParams {
                consistency,
                flags,
                names: names.then(|| (0..values.len()).map(|i| format!("n{i}")).collect()),
                values,
                page_size: (flags & query_flags::PAGE_SIZE != 0).then_some(100),
                paging_state: paging.then(|| vec![1, 2, 3]),
                serial_consistency: Some(9),
                timestamp: Some(7),
                keyspace: Some("ks".into()),
                now_in_seconds: Some(5),
            })
    }

    proptest! {
        #[test]
        fn execute_ref_matches_parse_request(
            version in prop_oneof![Just(4u8), Just(5u8)],
            id in prop::collection::vec(any::<u8>(), 0..17),
            p in params(),
            want in 0usize..5,
            cut in any::<prop::sample::Index>(),
            flip in any::<Option<(prop::sample::Index, u8)>>(),
        ) {
            let mut body = encode_execute(version, &id, b"md", &p);
            check(version, &body, want)?;
            // Truncations and corruptions must be judged alike too.
            if let Some((at, x)) = flip {
                if !body.is_empty() {
                    let i = at.index(body.len());
                    body[i] ^= x;
                }
            }
            let n = cut.index(body.len() + 1);
            check(version, &body[..n], want)?;
            check(version, &body, want)?;
        }
    }
}

#[cfg(test)]
mod rows_cacheable_tests {
    use super::*;
    use proptest::prelude::*;

    /// What the switch did before the in-place check: decode, check, re-encode, compare.
    fn oracle(body: &[u8]) -> bool {
        match parse_result(4, body) {
            Ok(ResultMsg::Rows(rows)) => {
                let mut enc = Vec::new();
                encode_rows(&rows, &mut enc);
                rows.rows.len() <= 1
                    && rows.metadata.flags & rows_flags::HAS_MORE_PAGES == 0
                    && rows.metadata.flags & rows_flags::METADATA_CHANGED == 0
                    && enc == body
            }
            _ => false,
        }
    }

    fn typ() -> impl Strategy<Value = CqlType> {
        let leaf = prop_oneof![
            (0x01u16..=0x15).prop_map(CqlType::Native),
            "[a-z]{0,5}".prop_map(CqlType::Custom),
        ];
        leaf.prop_recursive(2, 6, 2, |t| {
            prop_oneof![
                t.clone().prop_map(|x| CqlType::List(Box::new(x))),
                t.clone().prop_map(|x| CqlType::Set(Box::new(x))),
                (t.clone(), t.clone()).prop_map(|(k, v)| CqlType::Map(Box::new(k), Box::new(v))),
                prop::collection::vec(t, 0..3).prop_map(CqlType::Tuple),
            ]
        })
    }

    fn body() -> impl Strategy<Value = Vec<u8>> {
        (
            0u32..16,
            prop::collection::vec(("[a-z]{1,4}", typ()), 0..4),
            0usize..3,
            prop::collection::vec(
                prop::option::of(prop::collection::vec(any::<u8>(), 0..6)),
                0..12,
            ),
        )
            .prop_map(|(flags, cols, nrows, cells)| {
                let global = flags & rows_flags::GLOBAL_TABLES_SPEC != 0;
                let no_md = flags & rows_flags::NO_METADATA != 0;
                let n = cols.len();
                let metadata = RowsMetadata {
                    flags,
                    columns_count: n as u32,
                    paging_state: (flags & rows_flags::HAS_MORE_PAGES != 0).then(|| vec![1, 2]),
                    new_metadata_id: (flags & rows_flags::METADATA_CHANGED != 0).then(|| vec![3]),
                    global_table: (global && !no_md).then(|| ("ks".into(), "t".into())),
                    columns: if no_md {
                        Vec::new()
                    } else {
                        cols.into_iter()
                            .map(|(name, typ)| ColumnSpec {
                                table: (!global).then(|| ("ks".into(), "t".into())),
                                name,
                                typ,
                            })
                            .collect()
                    },
                };
                let rows = (0..nrows)
                    .map(|r| {
                        (0..n)
                            .map(|c| cells.get(r * n + c).cloned().flatten())
                            .collect()
                    })
                    .collect();
                let mut out = Vec::new();
                encode_rows(&Rows { metadata, rows }, &mut out);
                out
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn rows_cacheable_in_place_equals_reencoding(
            b in body(),
            flip in prop::option::of((any::<prop::sample::Index>(), 1u8..=255)),
            cut in prop::option::of(any::<prop::sample::Index>()),
            null_as in prop::option::of((any::<prop::sample::Index>(), -5i32..0)),
        ) {
            prop_assert_eq!(rows_body_cacheable(&b), oracle(&b));
            let mut m = b.clone();
            if let Some((at, x)) = flip {
                let i = at.index(m.len());
                m[i] ^= x;
            }
            if let Some(c) = cut {
                let n = c.index(m.len() + 1);
                m.truncate(n);
            }
            prop_assert_eq!(rows_body_cacheable(&m), oracle(&m), "mutated {:02x?}", m);
            // A null cell written with another negative length (decoded as null, re-encoded
            // as -1): find a -1 length near the end and rewrite it.
            if let Some((at, v)) = null_as {
                let mut m = b.clone();
                let ones: Vec<usize> = (0..m.len().saturating_sub(3)).filter(|&i| m[i..i + 4] == [0xff; 4]).collect();
                if !ones.is_empty() {
                    let i = ones[at.index(ones.len())];
                    m[i..i + 4].copy_from_slice(&v.to_be_bytes());
                    prop_assert_eq!(rows_body_cacheable(&m), oracle(&m));
                }
            }
        }
    }

    #[test]
    fn cacheable_rows_and_refusals() {
        let mut b = Vec::new();
        encode_rows(&tests::kv_rows(Some(b"value")), &mut b);
        assert!(rows_body_cacheable(&b));
        // The null cell written as -2 is not the canonical encoding.
        let mut n = b.clone();
        let at = n.len() - 9;
        n.truncate(at);
        n.extend_from_slice(&(-2i32).to_be_bytes());
        assert!(!rows_body_cacheable(&n));
        assert!(!oracle(&n));
        // Two rows are never cached; a trailing byte is an error.
        let mut t = b.clone();
        t.push(0);
        assert!(!rows_body_cacheable(&t));
        assert!(!rows_body_cacheable(&[0, 0, 0, 1]));
    }
}
