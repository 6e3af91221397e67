//! Checksum offload and GSO, undone in software. With PACKET_VNET_HDR the kernel hands a frame
//! over with the virtio_net_hdr that says "the transport checksum is still to be finished
//! (csum_start/csum_offset)" or "this is a GSO super-frame to cut into gso_size segments".
//! Frames that leave a veth from a local stack are like that by default (the recipes measured
//! TCP failing without this). Here the checksum is completed in place, and TCP/IPv4 GSO frames
//! are cut into the MSS-sized segments the wire would have carried, so a program always sees
//! ordinary frames and every frame the runtime sends has a complete checksum.

use innet_wire::checksum;

use super::switch::VnetHeader;

pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_ECN: u8 = 0x80;

/// The fields of a virtio_net_hdr (little-endian on the machines we run on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vnet {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl Vnet {
    pub fn parse(h: &VnetHeader) -> Self {
        let le = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
        Vnet {
            flags: h[0],
            gso_type: h[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        }
    }
}

/// Finish a partial checksum in place: the field at csum_start+csum_offset holds the
/// pseudo-header sum; the checksum covers everything from csum_start. False if the offsets do not
/// fit the frame (left as is; the parser will call it malformed).
pub fn complete_checksum(frame: &mut [u8], v: &Vnet) -> bool {
    let start = v.csum_start as usize;
    let field = start + v.csum_offset as usize;
    if field + 2 > frame.len() || start > frame.len() {
        return false;
    }
    let mut c = checksum::finish(checksum::sum(&frame[start..]));
    // UDP over IPv4 sends a computed 0 as 0xFFFF (0 means "no checksum").
    let udp =
        frame.len() > 23 && frame[12..14] == [0x08, 0x00] && frame[23] == 17 && v.csum_offset == 6;
    if udp && c == 0 {
        c = 0xFFFF;
    }
    frame[field..field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Cut a TCP/IPv4 GSO frame into segments of at most `gso_size` payload bytes, calling `each`
/// with every segment (headers copied, IP length/ident/checksum and TCP seq/flags/checksum set
/// as a NIC's TSO would). Returns the number of segments, or None when the frame is not a
/// well-formed Ethernet/IPv4/TCP frame (the caller then treats it as malformed).
pub fn segment_tcp4(
    frame: &[u8],
    gso_size: u16,
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(&[u8]),
) -> Option<usize> {
    if frame.len() < 14 {
        return None;
    }
    let l2 = if frame[12..14] == [0x81, 0x00] {
        18
    } else {
        14
    };
    if frame.len() < l2 + 20
        || frame[l2 - 2..l2] != [0x08, 0x00]
        || frame[l2] >> 4 != 4
        || frame[l2 + 9] != 6
    {
        return None;
    }
    let ihl = ((frame[l2] & 0x0F) as usize) * 4;
    let tcp_at = l2 + ihl;
    if ihl < 20 || frame.len() < tcp_at + 20 {
        return None;
    }
    let thl = ((frame[tcp_at + 12] >> 4) as usize) * 4;
    let hdr = tcp_at + thl;
    if thl < 20 || frame.len() < hdr || gso_size == 0 {
        return None;
    }
    let ip_total = u16::from_be_bytes([frame[l2 + 2], frame[l2 + 3]]) as usize;
    // The kernel may leave the IP total length of a super-frame wrong (or 0); the frame's own
    // length is what counts.
    let end = if ip_total >= ihl + thl && l2 + ip_total <= frame.len() && ip_total != 0 {
        l2 + ip_total
    } else {
        frame.len()
    };
    let payload = &frame[hdr..end];
    let ident0 = u16::from_be_bytes([frame[l2 + 4], frame[l2 + 5]]);
    let seq0 = u32::from_be_bytes(frame[tcp_at + 4..tcp_at + 8].try_into().ok()?);
    let flags0 = frame[tcp_at + 13];
    let src: [u8; 4] = frame[l2 + 12..l2 + 16].try_into().ok()?;
    let dst: [u8; 4] = frame[l2 + 16..l2 + 20].try_into().ok()?;
    let chunks: Vec<&[u8]> = if payload.is_empty() {
        vec![&[][..]]
    } else {
        payload.chunks(gso_size as usize).collect()
    };
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        scratch.clear();
        scratch.extend_from_slice(&frame[..hdr]);
        scratch.extend_from_slice(chunk);
        let total = (ihl + thl + chunk.len()) as u16;
        scratch[l2 + 2..l2 + 4].copy_from_slice(&total.to_be_bytes());
        scratch[l2 + 4..l2 + 6].copy_from_slice(&ident0.wrapping_add(i as u16).to_be_bytes());
        scratch[l2 + 10..l2 + 12].fill(0);
        let c = checksum::checksum(&scratch[l2..l2 + ihl]);
        scratch[l2 + 10..l2 + 12].copy_from_slice(&c.to_be_bytes());
        let seq = seq0.wrapping_add((i * gso_size as usize) as u32);
        scratch[tcp_at + 4..tcp_at + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = flags0;
        if i + 1 != n {
            flags &= !(0x01 | 0x08); // FIN, PSH only on the last segment
        }
        if i != 0 {
            flags &= !0x80; // CWR only on the first
        }
        scratch[tcp_at + 13] = flags;
        scratch[tcp_at + 16..tcp_at + 18].fill(0);
        let seg_len = (thl + chunk.len()) as u16;
        let pseudo = checksum::sum(&src) + checksum::sum(&dst) + 6 + seg_len as u32;
        let c = checksum::finish(pseudo + checksum::sum(&scratch[tcp_at..]));
        scratch[tcp_at + 16..tcp_at + 18].copy_from_slice(&c.to_be_bytes());
        each(scratch);
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_wire::frame::{parse_frame, L4Repr};

    fn big_tcp(payload_len: usize) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = (20 + 32 + payload_len) as u16;
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[0, 7, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[
            0x9c,
            0x40,
            0,
            80,
            0,
            0,
            0,
            100,
            0,
            0,
            0,
            1,
            0x80,
            0x18 | 0x01 | 0x80,
            1,
            0,
            0,
            0,
            0,
            0,
        ]);
        f.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        f.extend((0..payload_len).map(|i| i as u8));
        f
    }

    #[test]
    fn gso_frame_becomes_valid_segments_carrying_the_same_bytes() {
        let f = big_tcp(5000);
        let mut scratch = Vec::new();
        let mut segs = Vec::new();
        let n = segment_tcp4(&f, 1448, &mut scratch, |s| segs.push(s.to_vec())).unwrap();
        assert_eq!(n, 4);
        let mut data = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let p = parse_frame(s).expect("segment has right lengths and checksums");
            let L4Repr::Tcp(t) = p.l4 else { panic!() };
            assert_eq!(t.seq, 100 + 1448 * i as u32);
            assert_eq!(t.flags & 0x01 != 0, i == 3, "FIN only last");
            assert_eq!(t.flags & 0x80 != 0, i == 0, "CWR only first");
            assert_eq!(p.ip.ident, 7 + i as u16);
            data.extend_from_slice(&p.payload);
        }
        assert_eq!(data, f[14 + 20 + 32..]);
    }

    #[test]
    fn partial_checksum_is_completed() {
        let mut f = big_tcp(10);
        // Put the pseudo-header sum in the field, as the kernel leaves it.
        let seg_len = (f.len() - 34) as u32;
        let pseudo = checksum::sum(&[10, 0, 0, 1, 10, 0, 0, 2]) + 6 + seg_len;
        let mut folded = pseudo;
        while folded >> 16 != 0 {
            folded = (folded & 0xffff) + (folded >> 16);
        }
        f[50..52].copy_from_slice(&(folded as u16).to_be_bytes());
        let ipc = checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&ipc.to_be_bytes());
        assert!(parse_frame(&f).is_err());
        let v = Vnet {
            flags: F_NEEDS_CSUM,
            gso_type: 0,
            hdr_len: 0,
            gso_size: 0,
            csum_start: 34,
            csum_offset: 16,
        };
        assert!(complete_checksum(&mut f, &v));
        parse_frame(&f).expect("checksum completed");
    }
}
