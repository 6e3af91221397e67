//! Hash units: the CRC engines a switch uses to index register arrays and pick paths, over a
//! byte slice or a list of header fields, optionally salted so several units give independent
//! indexes (count-min rows, cuckoo ways). Algorithms come from the `crc` crate's catalogue.

use crc::{Crc, CRC_16_ARC, CRC_16_UMTS, CRC_32_ISCSI, CRC_32_ISO_HDLC};

use super::StateError;

static CRC16_ARC: Crc<u16> = Crc::<u16>::new(&CRC_16_ARC);
static CRC16_BUYPASS: Crc<u16> = Crc::<u16>::new(&CRC_16_UMTS);
static CRC32_IEEE: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);
static CRC32C: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);

/// Largest field list `hash_fields` accepts, in bytes; keeps the unit allocation-free while
/// covering a 5-tuple with room to spare (a Tofino hash input is 52 bytes at most).
pub const MAX_HASH_INPUT_BYTES: usize = 64;

/// Which CRC a unit computes. "123456789" check values are in the variant docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    /// CRC-16/ARC: poly 0x8005, init 0, reflected in and out, no final xor; check 0xBB3D.
    /// This is P4's `crc16` as BMv2 computes it and the crcmod "crc-16" that Tofino's CRC16
    /// follows, so it is the default 16-bit hash.
    Crc16,
    /// CRC-16/BUYPASS (the catalogue's CRC-16/UMTS): poly 0x8005, init 0, not reflected;
    /// check 0xFEE8. Offered for programs written against a non-reflected CRC16.
    Crc16Buypass,
    /// CRC-32/ISO-HDLC, the standard reflected IEEE CRC-32 of Ethernet and zlib (poly
    /// 0x04C11DB7, init and xorout 0xFFFFFFFF); check 0xCBF43926. SwitchV2P's cache index.
    Crc32,
    /// CRC-32C/iSCSI (Castagnoli, poly 0x1EDC6F41, reflected); check 0xE3069283.
    Crc32c,
}

/// A configured hash engine. A nonzero `seed` is hashed as 4 big-endian bytes *before* the
/// data, which gives a different, still deterministic function per seed; seed 0 is the plain
/// catalogue CRC, so known-answer tests hold for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HashUnit {
    pub algorithm: HashAlgorithm,
    pub seed: u32,
}

impl HashUnit {
    pub fn new(algorithm: HashAlgorithm, seed: u32) -> Self {
        Self { algorithm, seed }
    }

    /// The CRC of `bytes` (16-bit algorithms are zero-extended).
    pub fn hash(&self, bytes: &[u8]) -> u32 {
        let seed = self.seed.to_be_bytes();
        macro_rules! run {
            ($crc:expr) => {{
                let mut digest = $crc.digest();
                if self.seed != 0 {
                    digest.update(&seed);
                }
                digest.update(bytes);
                digest.finalize() as u32
            }};
        }
        match self.algorithm {
            HashAlgorithm::Crc16 => run!(CRC16_ARC),
            HashAlgorithm::Crc16Buypass => run!(CRC16_BUYPASS),
            HashAlgorithm::Crc32 => run!(CRC32_IEEE),
            HashAlgorithm::Crc32c => run!(CRC32C),
        }
    }

    /// Hash of header fields given as `(value, width_bits)`: each field is laid out big-endian
    /// (network order) in `ceil(width_bits / 8)` bytes, fields concatenated in order — the
    /// same bytes the fields have on the wire when they are byte-aligned.
    pub fn hash_fields(&self, fields: &[(u64, u32)]) -> Result<u32, StateError> {
        let mut buf = [0u8; MAX_HASH_INPUT_BYTES];
        let mut len = 0usize;
        for &(value, bits) in fields {
            if bits == 0 || bits > 64 {
                return Err(StateError::BadHashFieldWidth { bits });
            }
            if bits < 64 && value >> bits != 0 {
                return Err(StateError::FieldValueTooWide {
                    field: "hash input".into(),
                    value: value as u128,
                    bits,
                });
            }
            let nbytes = bits.div_ceil(8) as usize;
            if len + nbytes > MAX_HASH_INPUT_BYTES {
                return Err(StateError::HashInputTooLong {
                    bytes: len + nbytes,
                    max: MAX_HASH_INPUT_BYTES,
                });
            }
            buf[len..len + nbytes].copy_from_slice(&value.to_be_bytes()[8 - nbytes..]);
            len += nbytes;
        }
        Ok(self.hash(&buf[..len]))
    }

    /// An index into a table of `size` slots: `hash % size`. Modulo rather than masking so any
    /// size works; for power-of-two sizes it equals taking the low bits, as Tofino does.
    pub fn index(&self, bytes: &[u8], size: u32) -> Result<u32, StateError> {
        if size == 0 {
            return Err(StateError::ZeroHashRange);
        }
        Ok(self.hash(bytes) % size)
    }

    /// `index` over a field list.
    pub fn index_fields(&self, fields: &[(u64, u32)], size: u32) -> Result<u32, StateError> {
        if size == 0 {
            return Err(StateError::ZeroHashRange);
        }
        Ok(self.hash_fields(fields)? % size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECK: &[u8] = b"123456789";

    #[test]
    fn known_answers() {
        assert_eq!(
            HashUnit::new(HashAlgorithm::Crc32, 0).hash(CHECK),
            0xCBF4_3926
        );
        assert_eq!(HashUnit::new(HashAlgorithm::Crc16, 0).hash(CHECK), 0xBB3D);
        assert_eq!(
            HashUnit::new(HashAlgorithm::Crc16Buypass, 0).hash(CHECK),
            0xFEE8
        );
        assert_eq!(
            HashUnit::new(HashAlgorithm::Crc32c, 0).hash(CHECK),
            0xE306_9283
        );
        // Empty input: CRC-32 of nothing is 0.
        assert_eq!(HashUnit::new(HashAlgorithm::Crc32, 0).hash(b""), 0);
        // zlib's crc32(b"The quick brown fox jumps over the lazy dog") = 0x414FA339.
        assert_eq!(
            HashUnit::new(HashAlgorithm::Crc32, 0)
                .hash(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    #[test]
    fn seed_is_a_prefix_and_changes_the_function() {
        let plain = HashUnit::new(HashAlgorithm::Crc32, 0);
        let salted = HashUnit::new(HashAlgorithm::Crc32, 0xdead_beef);
        let mut prefixed = vec![0xde, 0xad, 0xbe, 0xef];
        prefixed.extend_from_slice(CHECK);
        assert_eq!(salted.hash(CHECK), plain.hash(&prefixed));
        assert_ne!(salted.hash(CHECK), plain.hash(CHECK));
        // Deterministic.
        assert_eq!(salted.hash(CHECK), salted.hash(CHECK));
    }

    #[test]
    fn fields_are_packed_big_endian_per_field() {
        let u = HashUnit::new(HashAlgorithm::Crc32, 7);
        // 10.0.0.1 (32 bits), port 80 (16 bits), proto 17 (8 bits), a 12-bit field -> 2 bytes.
        let fields = [(0x0a00_0001, 32), (80, 16), (17, 8), (0xabc, 12)];
        let bytes = [10, 0, 0, 1, 0, 80, 17, 0x0a, 0xbc];
        assert_eq!(u.hash_fields(&fields).unwrap(), u.hash(&bytes));
        assert_eq!(
            u.index_fields(&fields, 1000).unwrap(),
            u.hash(&bytes) % 1000
        );
        assert_eq!(
            u.hash_fields(&[(u64::MAX, 64)]).unwrap(),
            u.hash(&[0xff; 8])
        );
    }

    #[test]
    fn bad_field_inputs_are_errors() {
        let u = HashUnit::new(HashAlgorithm::Crc16, 0);
        assert!(matches!(
            u.hash_fields(&[(256, 8)]),
            Err(StateError::FieldValueTooWide { .. })
        ));
        assert!(matches!(
            u.hash_fields(&[(1, 0)]),
            Err(StateError::BadHashFieldWidth { .. })
        ));
        assert!(matches!(
            u.hash_fields(&[(1, 65)]),
            Err(StateError::BadHashFieldWidth { .. })
        ));
        let many = [(1u64, 64u32); 9];
        assert!(matches!(
            u.hash_fields(&many),
            Err(StateError::HashInputTooLong { .. })
        ));
        assert!(u.hash_fields(&many[..8]).is_ok());
        assert!(matches!(u.index(CHECK, 0), Err(StateError::ZeroHashRange)));
    }

    #[test]
    fn index_is_in_range_and_spreads() {
        let u = HashUnit::new(HashAlgorithm::Crc32, 0);
        let mut buckets = [0u32; 16];
        for i in 0u32..16_000 {
            let idx = u.index(&i.to_be_bytes(), 16).unwrap();
            assert!(idx < 16);
            buckets[idx as usize] += 1;
        }
        // A uniform spread puts 1000 in each; CRC over distinct counters should be near that.
        assert!(
            buckets.iter().all(|&b| (800..1200).contains(&b)),
            "{buckets:?}"
        );
        assert_eq!(u.index(CHECK, 1 << 16).unwrap(), 0xCBF4_3926 & 0xffff);
    }
}
