//! UDP: the first 8 input bytes are the pseudo-header addresses, the rest is the datagram.
//! A parsed datagram emits back to bytes that verify and re-parse to the same repr.
#![no_main]

use innet_wire::udp::{UdpPacket, UdpRepr, HEADER_LEN};
use innet_wire::Ipv4Addr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let src = Ipv4Addr::new(data[0], data[1], data[2], data[3]);
    let dst = Ipv4Addr::new(data[4], data[5], data[6], data[7]);
    let Ok(p) = UdpPacket::new_checked(&data[8..]) else {
        return;
    };
    assert_eq!(p.payload().len(), p.len() as usize - HEADER_LEN);
    assert_eq!(p.is_empty(), p.payload().is_empty());
    let Ok(repr) = UdpRepr::parse(&p, src, dst) else {
        return;
    };
    let mut buf = vec![0u8; HEADER_LEN + repr.payload_len];
    buf[HEADER_LEN..].copy_from_slice(p.payload());
    repr.emit(&mut buf, src, dst)
        .expect("a parsed UDP header must emit");
    let q = UdpPacket::new_checked(&buf[..]).expect("emitted UDP is checkable");
    // emit always fills a checksum (0 is sent as 0xFFFF), so it must verify for real.
    assert_ne!(q.checksum(), 0);
    assert!(q.verify_checksum(src, dst));
    assert_eq!(
        UdpRepr::parse(&q, src, dst).expect("emitted UDP parses"),
        repr
    );
    assert_eq!(q.payload(), p.payload());

    // In-place rewrite as a NAT would do it: new ports, refilled checksum, still valid.
    let mut m = data[8..8 + p.len() as usize].to_vec();
    let mut w = UdpPacket::new_checked(&mut m[..]).expect("same bytes as above");
    w.set_src_port(repr.dst_port);
    w.set_dst_port(repr.src_port.wrapping_add(1));
    w.fill_checksum(src, dst);
    let r = UdpRepr::parse(&w, src, dst).expect("checksum refilled after port rewrite");
    assert_eq!(
        (r.src_port, r.dst_port),
        (repr.dst_port, repr.src_port.wrapping_add(1))
    );
});
