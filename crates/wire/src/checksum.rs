//! The Internet checksum (RFC 1071) and the IPv4 pseudo-header sum for UDP and TCP.

use std::net::Ipv4Addr;

/// One's-complement sum of `data` as 16-bit big-endian words (an odd last byte padded with
/// zero), folded to 16 bits but not complemented; sums of several pieces may be added before
/// [`finish`]. The bytes are summed as native little-endian 64-bit words into a 128-bit
/// accumulator and the folded sum byte-swapped at the end (RFC 1071 §2: the sum is independent
/// of byte order up to that swap, and 2^16 ≡ 1 mod 0xFFFF makes the word size irrelevant), eight
/// times fewer additions than word by word. 0 only for all-zero data, as the word-by-word fold.
#[inline]
pub fn sum(data: &[u8]) -> u32 {
    let mut acc: u128 = 0;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        acc += u64::from_le_bytes(c.try_into().expect("8 bytes")) as u128;
    }
    // The last 0..7 bytes in 4-, 2- and 1-byte little-endian pieces (each starts at an even
    // offset, so each is a whole number of 16-bit words, the odd last byte the low half of one).
    let mut rest = chunks.remainder();
    if rest.len() >= 4 {
        acc += u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as u128;
        rest = &rest[4..];
    }
    if rest.len() >= 2 {
        acc += u16::from_le_bytes([rest[0], rest[1]]) as u128;
        rest = &rest[2..];
    }
    if let [b] = rest {
        acc += *b as u128;
    }
    // Fold 128 → 64 → 32 → 16 bits with end-around carry (each step keeps the sum modulo
    // 0xFFFF, which divides 2^64 − 1 and 2^32 − 1, and gives 0 only for a zero sum).
    let (x, c) = (acc as u64).overflowing_add((acc >> 64) as u64);
    let x = x + c as u64;
    let (x, c) = (x as u32).overflowing_add((x >> 32) as u32);
    let x = x + c as u32;
    let (x, c) = (x as u16).overflowing_add((x >> 16) as u16);
    let x = x + c as u16;
    x.swap_bytes() as u32
}

/// Fold a 32-bit sum into 16 bits and complement it.
pub fn finish(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    !(acc as u16)
}

/// The checksum of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    finish(sum(data))
}

/// Sum of the IPv4 pseudo-header for a transport segment of `length` bytes (not folded).
pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u32 {
    pseudo_header_u32(u32::from(src), u32::from(dst), protocol, length)
}

/// [`pseudo_header`] with the addresses as u32.
#[inline]
pub fn pseudo_header_u32(src: u32, dst: u32, protocol: u8, length: u16) -> u32 {
    (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) + protocol as u32 + length as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the sum of these words is 0xddf2, its complement 0x220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&data), 0x220d);
    }

    /// The word-by-word sum of RFC 1071, the oracle for the fast [`sum`].
    fn slow_folded(data: &[u8]) -> u32 {
        let mut acc: u32 = 0;
        let mut chunks = data.chunks_exact(2);
        for c in &mut chunks {
            acc += u16::from_be_bytes([c[0], c[1]]) as u32;
        }
        if let [b] = chunks.remainder() {
            acc += (*b as u32) << 8;
        }
        while acc >> 16 != 0 {
            acc = (acc & 0xFFFF) + (acc >> 16);
        }
        acc
    }

    proptest::proptest! {
        #[test]
        fn fast_sum_equals_the_word_by_word_sum(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            ones in 0usize..300, zeros in 0usize..20,
        ) {
            // The folded sums themselves (not only the checksums): 0 and 0xFFFF differ.
            for d in [data.clone(), vec![0xFF; ones], vec![0; zeros], [vec![0xFF; ones], data].concat()] {
                proptest::prop_assert_eq!(slow_folded(&d), sum(&d), "{:02x?}", d);
            }
        }
    }
}
