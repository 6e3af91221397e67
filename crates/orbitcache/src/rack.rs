//! The rack's address plan: clients and storage hosts behind one ToR, storage partitions as UDP
//! ports of the storage hosts (partition p lives on storage host p / per_host, port
//! 3000 + p % per_host), and the switch's own address (its controller).

use crate::keys;

#[derive(Debug, Clone)]
pub struct Addressing {
    pub client_ips: Vec<u32>,
    pub server_ips: Vec<u32>,
    pub partitions_per_server: u32,
    pub switch_ip: u32,
    pub key_len: usize,
    pub hkey_bits: u32,
}

impl Addressing {
    pub fn partitions(&self) -> u32 {
        self.server_ips.len() as u32 * self.partitions_per_server
    }

    /// (IP, UDP port) of partition `p`.
    #[inline]
    pub fn partition_addr(&self, p: u32) -> (u32, u16) {
        let per = self.partitions_per_server;
        (self.server_ips[(p / per) as usize], innet_wire::orbitcache::BASE_PORT + (p % per) as u16)
    }

    /// The partition behind an address, if it is one.
    pub fn partition_of(&self, ip: u32, port: u16) -> Option<u32> {
        let host = self.server_ips.iter().position(|&s| s == ip)? as u32;
        let off = port.checked_sub(innet_wire::orbitcache::BASE_PORT)? as u32;
        (off < self.partitions_per_server).then_some(host * self.partitions_per_server + off)
    }

    /// The partition that owns a key.
    #[inline]
    pub fn key_partition(&self, key: &[u8]) -> u32 {
        keys::partition(key, self.partitions())
    }

    /// The key bytes and hash of key `id`.
    pub fn key(&self, id: u64) -> (Vec<u8>, u128) {
        let mut k = vec![0u8; self.key_len];
        keys::key_bytes(id, &mut k);
        let h = keys::hkey(&k, self.hkey_bits);
        (k, h)
    }
}
