//! Whole frames, the round-trip oracle: whatever `parse_frame` (and `parse_frame_with` with a
//! UDP tunnel on port 667) accepts must `emit`, the emitted bytes must re-parse to the same
//! FrameRepr (apart from the length fields emit recomputes by design), and emitting that
//! again must give the very same bytes. Inputs whose first byte is odd get their checksums
//! fixed first (see `fix_checksums`), so mutations reach the layers below a checksum.
#![no_main]

use innet_wire::checksum;
use innet_wire::ethernet::{EthernetPacket, ETHERTYPE_IPV4};
use innet_wire::frame::{parse_frame, parse_frame_with, FrameRepr};
use innet_wire::geneve::{GenevePacket, UDP_PORT as GENEVE_PORT};
use innet_wire::ipv4::{Ipv4Packet, PROTO_IPIP, PROTO_TCP, PROTO_UDP};
use innet_wire::Ipv4Addr;
use libfuzzer_sys::fuzz_target;

const TUNNEL_PORT: u16 = 667;

/// Rewrite every IPv4, UDP and TCP checksum the frame parser will check so they are right,
/// walking the same layers it does (tunnels one level deep). Anything malformed is left as is.
fn fix_checksums(frame: &mut [u8], depth: u32) {
    let Ok(mut e) = EthernetPacket::new_checked(&mut *frame) else {
        return;
    };
    if e.ethertype() == ETHERTYPE_IPV4 {
        fix_ipv4(e.payload_mut(), depth);
    }
}

fn fix_ipv4(b: &mut [u8], depth: u32) {
    let Ok(mut p) = Ipv4Packet::new_checked(&mut *b) else {
        return;
    };
    p.fill_checksum();
    let (src, dst, proto) = (p.src(), p.dst(), p.protocol());
    let body = p.payload_mut();
    match proto {
        PROTO_IPIP if depth == 0 => fix_ipv4(body, depth + 1),
        PROTO_UDP if body.len() >= 8 => {
            let len = u16::from_be_bytes([body[4], body[5]]) as usize;
            if !(8..=body.len()).contains(&len) {
                return;
            }
            let port = u16::from_be_bytes([body[2], body[3]]);
            if depth == 0 && port == GENEVE_PORT {
                if let Ok(g) = GenevePacket::new_checked(&body[8..len]) {
                    let at = 8 + g.header_len();
                    fix_checksums(&mut body[at..len], depth + 1);
                }
            } else if depth == 0 && port == TUNNEL_PORT {
                fix_ipv4(&mut body[8..len], depth + 1);
            }
            fill(&mut body[..len], 6, src, dst, PROTO_UDP);
        }
        PROTO_TCP if body.len() >= 20 => fill(body, 16, src, dst, PROTO_TCP),
        _ => {}
    }
}

/// Put the pseudo-header checksum of `seg` at byte `at` (a computed 0 goes out as 0xFFFF, which
/// is the same value in one's complement and what UDP requires).
fn fill(seg: &mut [u8], at: usize, src: Ipv4Addr, dst: Ipv4Addr, proto: u8) {
    let Ok(len) = u16::try_from(seg.len()) else {
        return;
    };
    seg[at..at + 2].fill(0);
    let c = checksum::finish(checksum::pseudo_header(src, dst, proto, len) + checksum::sum(seg));
    let c = if c == 0 { 0xFFFF } else { c };
    seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Copy the fields `FrameRepr::emit` derives from the content (IP payload lengths) from `to`.
fn with_lengths_of(mut f: FrameRepr, to: &FrameRepr) -> FrameRepr {
    f.ip.payload_len = to.ip.payload_len;
    if let (Some(t), Some(u)) = (&mut f.tunnel, &to.tunnel) {
        t.outer.payload_len = u.outer.payload_len;
    }
    f
}

fn check(data: &[u8], ports: &[u16]) {
    let Ok(f) = parse_frame_with(data, ports) else {
        return;
    };
    let bytes = f
        .emit()
        .unwrap_or_else(|e| panic!("parsed frame does not emit: {e}\n{f:?}"));
    assert_eq!(bytes.len(), f.buffer_len(), "emit length vs buffer_len");
    let g = parse_frame_with(&bytes, ports)
        .unwrap_or_else(|e| panic!("emitted frame does not parse: {e}\n{f:?}"));
    assert_eq!(with_lengths_of(f.clone(), &g), g, "re-parsed frame differs");
    let again = g.emit().expect("re-parsed frame emits");
    assert_eq!(again, bytes, "emit is not a fixed point");
    assert!(
        bytes.len() <= data.len(),
        "emit grew the frame from {} to {} bytes",
        data.len(),
        bytes.len()
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let mut fixed;
    let data = if mode & 1 == 1 {
        fixed = data.to_vec();
        fix_checksums(&mut fixed, 0);
        &fixed[..]
    } else {
        data
    };
    check(data, &[]);
    check(data, &[TUNNEL_PORT]);
    // The plain parser is parse_frame_with no extra ports.
    assert_eq!(parse_frame(data), parse_frame_with(data, &[]));
});
