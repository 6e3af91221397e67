//! OrbitCache's key-value messages (the UDP payload on the reserved ports) and the companion
//! messages of the baselines that share the format (NetCache, FarReach, Pegasus), plus the top-k
//! report a storage server sends its controller.
//!
//! A message is a fixed 28-byte header, then the key (`key_len` bytes, fixed per deployment like
//! the artifact's `KEY_SIZE`), then the value (the rest of the payload):
//!
//! | bytes | field   | meaning |
//! |-------|---------|---------|
//! | 0     | OP      | [`Op`] |
//! | 1–4   | SEQ     | per-client request id (big-endian) |
//! | 5–20  | HKEY    | 128-bit key hash, the switch's lookup key |
//! | 21    | FLAG    | [`FLAG_FETCHING`]: a write to a cached key (the server must return the value) |
//! | 22    | CACHED  | who answered: [`CACHED_SERVER`], [`CACHED_SWITCH`], [`CACHED_OVERFLOW`] |
//! | 23–26 | LATENCY | the client's send timestamp in µs (carried back for latency) |
//! | 27    | VER     | cache-packet generation (OrbitCache) or replica version (Pegasus), mod 256 |
//!
//! The paper's header is the first 22 bytes; CACHED and LATENCY are the prototype's extra fields
//! (its §4), and VER takes the place of the prototype's 1-byte SrvID (partitions are UDP ports
//! here, so SrvID is not needed). 28 bytes of header + 16 bytes of key + 1,416 bytes of value +
//! 40 bytes of IPv4/UDP make the 1,500-byte MTU, as in the paper's Fig. 17.
//!
//! Values in the simulator carry a 12-byte stamp at their start — the key id (8 bytes) and the
//! write version (4 bytes) — so clients can check what they were given; the rest of the value is
//! filler whose length is what counts on the wire.

use crate::{be32, put32, Error, Result};

pub const HEADER_BYTES: usize = 28;
/// A value's stamp: key id (u64) and version (u32), at the start of the value.
pub const STAMP_BYTES: usize = 12;
/// The largest value one 1,500-byte packet carries with a 16-byte key.
pub const MAX_VALUE_BYTES_16B_KEY: usize = 1500 - 40 - HEADER_BYTES - 16;
/// First UDP port of the storage partitions (partition i listens on BASE_PORT + i % 8).
pub const BASE_PORT: u16 = 3000;
/// The switch parses OrbitCache headers when the UDP source or destination port is in
/// [BASE_PORT, BASE_PORT + PORT_RANGE).
pub const PORT_RANGE: u16 = 64;
/// UDP port of the controller (top-k reports from servers arrive here).
pub const CONTROLLER_PORT: u16 = 4321;

pub const FLAG_NONE: u8 = 0;
pub const FLAG_FETCHING: u8 = 1;
/// FarReach: a snapshot write-back from the switch's controller to the server.
pub const FLAG_SNAPSHOT: u8 = 2;
/// Pegasus: a write whose version the switch assigned (in the value's stamp).
pub const FLAG_PEGASUS: u8 = 3;
/// FarReach: a write reply the switch answered itself (write-back).
pub const FLAG_SWITCH_REPLY: u8 = 4;

pub const CACHED_SERVER: u8 = 0;
pub const CACHED_SWITCH: u8 = 1;
pub const CACHED_OVERFLOW: u8 = 2;

/// Whether a UDP port is one of OrbitCache's reserved ports.
#[inline]
pub fn is_kv_port(port: u16) -> bool {
    (BASE_PORT..BASE_PORT + PORT_RANGE).contains(&port)
}

/// Message types (the artifact's numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    /// R-REQ
    Read = 0,
    /// R-REP (also every cache packet)
    ReadReply = 1,
    /// W-REQ
    Write = 2,
    /// W-REP
    WriteReply = 3,
    /// CRN-REQ: a read that bypasses the cache after a hash collision
    Correction = 4,
    /// F-REQ
    Fetch = 5,
    /// F-REP
    FetchReply = 6,
}

impl Op {
    pub fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            0 => Op::Read,
            1 => Op::ReadReply,
            2 => Op::Write,
            3 => Op::WriteReply,
            4 => Op::Correction,
            5 => Op::Fetch,
            6 => Op::FetchReply,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "R-REQ",
            Op::ReadReply => "R-REP",
            Op::Write => "W-REQ",
            Op::WriteReply => "W-REP",
            Op::Correction => "CRN-REQ",
            Op::Fetch => "F-REQ",
            Op::FetchReply => "F-REP",
        }
    }
}

/// The parsed 28-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub op: Op,
    pub seq: u32,
    pub hkey: u128,
    pub flag: u8,
    pub cached: u8,
    pub latency_us: u32,
    pub ver: u8,
}

impl Header {
    pub fn new(op: Op, seq: u32, hkey: u128) -> Self {
        Header { op, seq, hkey, flag: FLAG_NONE, cached: CACHED_SERVER, latency_us: 0, ver: 0 }
    }

    /// Parse the header at the start of `b`.
    pub fn parse(b: &[u8]) -> Result<Header> {
        if b.len() < HEADER_BYTES {
            return Err(Error::short("orbitcache", HEADER_BYTES, b.len()));
        }
        let op = Op::from_u8(b[0]).ok_or_else(|| Error::new("orbitcache", format!("OP {} is not one of 0..=6", b[0])))?;
        let mut hk = [0u8; 16];
        hk.copy_from_slice(&b[5..21]);
        Ok(Header {
            op,
            seq: be32(b, 1),
            hkey: u128::from_be_bytes(hk),
            flag: b[21],
            cached: b[22],
            latency_us: be32(b, 23),
            ver: b[27],
        })
    }

    /// Write the header into the first 28 bytes of `b` (which must be that long).
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = self.op as u8;
        put32(b, 1, self.seq);
        b[5..21].copy_from_slice(&self.hkey.to_be_bytes());
        b[21] = self.flag;
        b[22] = self.cached;
        put32(b, 23, self.latency_us);
        b[27] = self.ver;
    }

    /// The OP byte alone, rewritten in place (the switch relabels cache packets R-REP).
    pub fn set_op(b: &mut [u8], op: Op) {
        b[0] = op as u8;
    }
}

/// The value stamp the simulator writes at the start of every value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub key_id: u64,
    pub version: u32,
}

impl Stamp {
    pub fn parse(b: &[u8]) -> Result<Stamp> {
        if b.len() < STAMP_BYTES {
            return Err(Error::short("orbitcache value stamp", STAMP_BYTES, b.len()));
        }
        let mut k = [0u8; 8];
        k.copy_from_slice(&b[..8]);
        Ok(Stamp { key_id: u64::from_be_bytes(k), version: be32(b, 8) })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.key_id.to_be_bytes());
        put32(b, 8, self.version);
    }
}

/// A whole message: header, key and (possibly empty) value bytes, borrowed from a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub header: Header,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl<'a> Message<'a> {
    /// Split a payload of a deployment whose keys are `key_len` bytes long.
    pub fn parse(b: &'a [u8], key_len: usize) -> Result<Message<'a>> {
        let header = Header::parse(b)?;
        let need = HEADER_BYTES + key_len;
        if b.len() < need {
            return Err(Error::new(
                "orbitcache",
                format!("{} needs a {key_len}-byte key after the header: payload has {} bytes, needs {need}", header.op.name(), b.len()),
            ));
        }
        Ok(Message { header, key: &b[HEADER_BYTES..need], value: &b[need..] })
    }

    /// Serialize into a fresh buffer.
    pub fn emit(&self) -> Vec<u8> {
        let mut v = vec![0u8; HEADER_BYTES + self.key.len() + self.value.len()];
        self.header.emit(&mut v);
        v[HEADER_BYTES..HEADER_BYTES + self.key.len()].copy_from_slice(self.key);
        v[HEADER_BYTES + self.key.len()..].copy_from_slice(self.value);
        v
    }
}

/// A storage server's periodic report of its hottest uncached keys: `count` pairs of (key id,
/// estimated requests), after a 4-byte magic and a 2-byte partition id and 2-byte count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopKReport {
    pub partition: u16,
    pub entries: Vec<(u64, u32)>,
}

const REPORT_MAGIC: u32 = 0x544F_504B; // "TOPK"
const REPORT_ENTRY_BYTES: usize = 12;
/// At most this many entries fit one 1,500-byte packet.
pub const REPORT_MAX_ENTRIES: usize = (1500 - 40 - 8) / REPORT_ENTRY_BYTES;

impl TopKReport {
    pub fn emit(&self) -> Vec<u8> {
        let n = self.entries.len().min(REPORT_MAX_ENTRIES);
        let mut v = vec![0u8; 8 + n * REPORT_ENTRY_BYTES];
        put32(&mut v, 0, REPORT_MAGIC);
        v[4..6].copy_from_slice(&self.partition.to_be_bytes());
        v[6..8].copy_from_slice(&(n as u16).to_be_bytes());
        for (i, &(k, c)) in self.entries.iter().take(n).enumerate() {
            let at = 8 + i * REPORT_ENTRY_BYTES;
            v[at..at + 8].copy_from_slice(&k.to_be_bytes());
            put32(&mut v, at + 8, c);
        }
        v
    }

    pub fn parse(b: &[u8]) -> Result<TopKReport> {
        if b.len() < 8 {
            return Err(Error::short("orbitcache top-k report", 8, b.len()));
        }
        if be32(b, 0) != REPORT_MAGIC {
            return Err(Error::new("orbitcache top-k report", format!("magic {:#010x}, expected {REPORT_MAGIC:#010x}", be32(b, 0))));
        }
        let partition = u16::from_be_bytes([b[4], b[5]]);
        let n = u16::from_be_bytes([b[6], b[7]]) as usize;
        if n > REPORT_MAX_ENTRIES {
            return Err(Error::new("orbitcache top-k report", format!("{n} entries, at most {REPORT_MAX_ENTRIES} fit a packet")));
        }
        let need = 8 + n * REPORT_ENTRY_BYTES;
        if b.len() < need {
            return Err(Error::new("orbitcache top-k report", format!("{n} entries need {need} bytes, buffer has {}", b.len())));
        }
        let entries = (0..n)
            .map(|i| {
                let at = 8 + i * REPORT_ENTRY_BYTES;
                let mut k = [0u8; 8];
                k.copy_from_slice(&b[at..at + 8]);
                (u64::from_be_bytes(k), be32(b, at + 8))
            })
            .collect();
        Ok(TopKReport { partition, entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_sits_where_the_table_says() {
        let h = Header {
            op: Op::WriteReply,
            seq: 0x01020304,
            hkey: 0x0011_2233_4455_6677_8899_aabb_ccdd_eeff,
            flag: FLAG_FETCHING,
            cached: CACHED_SWITCH,
            latency_us: 0xdeadbeef,
            ver: 9,
        };
        let mut b = [0u8; HEADER_BYTES];
        h.emit(&mut b);
        assert_eq!(b[0], 3);
        assert_eq!(&b[1..5], &[1, 2, 3, 4]);
        assert_eq!(b[5], 0x00);
        assert_eq!(b[20], 0xff);
        assert_eq!(b[21], 1);
        assert_eq!(&b[23..27], &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(Header::parse(&b).unwrap(), h);
    }

    #[test]
    fn bad_op_and_short_buffers_are_named() {
        let mut b = [0u8; HEADER_BYTES];
        b[0] = 7;
        let e = Header::parse(&b).unwrap_err();
        assert!(e.to_string().contains("OP 7"), "{e}");
        let e = Header::parse(&b[..10]).unwrap_err();
        assert!(e.to_string().contains("needs 28 bytes"), "{e}");
        let e = Message::parse(&[0u8; 30], 16).unwrap_err();
        assert!(e.to_string().contains("16-byte key"), "{e}");
    }

    #[test]
    fn the_mtu_budget_matches_the_paper() {
        assert_eq!(MAX_VALUE_BYTES_16B_KEY, 1416);
    }

    #[test]
    fn messages_and_reports_round_trip() {
        let key = b"0000000000abcdef";
        let mut value = vec![0u8; 64];
        Stamp { key_id: 0xabcdef, version: 3 }.emit(&mut value);
        let m = Message { header: Header::new(Op::ReadReply, 5, 77), key, value: &value };
        let b = m.emit();
        let p = Message::parse(&b, 16).unwrap();
        assert_eq!(p, m);
        assert_eq!(Stamp::parse(p.value).unwrap(), Stamp { key_id: 0xabcdef, version: 3 });
        let r = TopKReport { partition: 7, entries: vec![(1, 100), (99, 5)] };
        assert_eq!(TopKReport::parse(&r.emit()).unwrap(), r);
        assert!(TopKReport::parse(&r.emit()[..10]).is_err());
    }
}
