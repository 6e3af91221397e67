//! Byte-exact packet formats, in smoltcp's split: a `*Packet<T: AsRef<[u8]>>` view reads and
//! writes fields in place and is only built by `new_checked` after the buffer was checked
//! long enough (so getters never panic); a `*Repr` is the parsed, validated header that
//! `parse`s from a view and `emit`s into one. `phv` is the parsed packet both runtimes share, with the one frame codec; `pcap` writes
//! and reads capture files. Above TCP, the application protocols a switch reads: `cql`
//! (Cassandra's native protocol, its compression, statement text and key serialization), `resp`
//! (Redis) and `memcache` (memcached's text protocol), each a stream reassembler over byte
//! pushes that never panics.

pub mod checksum;
pub mod cql;
pub mod ethernet;
pub mod frame;
pub mod geneve;
pub mod ipip;
pub mod ipv4;
pub mod memcache;
pub mod orbitcache;
pub mod pcap;
pub mod phv;
pub mod resp;
pub mod switchv2p;
pub mod switchvm;
pub mod tcp;
pub mod udp;

/// What was wrong with a buffer: which header, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{header}: {message}")]
pub struct Error {
    pub header: &'static str,
    pub message: String,
}

impl Error {
    pub fn new(header: &'static str, message: impl Into<String>) -> Self {
        Error {
            header,
            message: message.into(),
        }
    }
    pub(crate) fn short(header: &'static str, need: usize, have: usize) -> Self {
        Error::new(header, format!("needs {need} bytes, buffer has {have}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub use std::net::Ipv4Addr;

#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
#[inline]
pub(crate) fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
#[inline]
pub(crate) fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
