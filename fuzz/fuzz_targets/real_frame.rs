//! The packet codec, frame ↔ Packet (innet-wire `phv::codec`): it must
//! never panic, and whatever `parse_into` accepts must `emit_into` to the very same bytes.
//! A reply built from it (`make_reply`) must emit a frame crates/wire parses (checksums right).
//! Inputs whose first byte is odd get their IPv4/TCP/UDP checksums fixed first, so mutations
//! reach the layers below a checksum.
#![no_main]

use innet_wire::phv::codec::{emit_into, parse_into};
use innet_wire::phv::edit::{blank_packet, make_reply};
use innet_wire::checksum;
use innet_wire::ethernet::{EthernetPacket, ETHERTYPE_IPV4};
use innet_wire::ipv4::{Ipv4Packet, PROTO_TCP, PROTO_UDP};
use libfuzzer_sys::fuzz_target;

fn fix_checksums(frame: &mut [u8]) {
    let Ok(mut e) = EthernetPacket::new_checked(&mut *frame) else { return };
    if e.ethertype() != ETHERTYPE_IPV4 {
        return;
    }
    let Ok(mut p) = Ipv4Packet::new_checked(e.payload_mut()) else { return };
    p.fill_checksum();
    let (src, dst, proto) = (p.src(), p.dst(), p.protocol());
    let body = p.payload_mut();
    let at = match proto {
        PROTO_UDP if body.len() >= 8 => 6,
        PROTO_TCP if body.len() >= 20 => 16,
        _ => return,
    };
    let Ok(len) = u16::try_from(body.len()) else { return };
    body[at..at + 2].fill(0);
    let c = checksum::finish(checksum::pseudo_header(src, dst, proto, len) + checksum::sum(body));
    let c = if c == 0 && proto == PROTO_UDP { 0xFFFF } else { c };
    body[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else { return };
    let mut fixed;
    let data = if mode & 1 == 1 {
        fixed = data.to_vec();
        fix_checksums(&mut fixed);
        &fixed[..]
    } else {
        data
    };
    let mut pkt = blank_packet();
    if parse_into(data, &mut pkt).is_err() {
        return;
    }
    let mut out = Vec::new();
    emit_into(&pkt, &mut out).unwrap_or_else(|e| panic!("accepted frame does not emit: {e}"));
    assert_eq!(out, data, "parse_into → emit_into is not byte-identical");
    make_reply(&mut pkt, mode & 2 == 2);
    emit_into(&pkt, &mut out).unwrap_or_else(|e| panic!("reply does not emit: {e}"));
    let mut again = blank_packet();
    if let Err(e) = parse_into(&out, &mut again) {
        panic!("reply frame does not parse back: {e}");
    }
});
