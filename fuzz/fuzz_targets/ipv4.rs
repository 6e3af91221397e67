//! IPv4 header: getters of a checked view never panic; a parsed header emits (with the parsed
//! payload length) to bytes that re-parse to the same repr and keep the payload in place.
//! IP-in-IP: what `ipip::decapsulate` accepts, `ipip::encapsulate` puts back around the same
//! inner bytes (the outer header may differ in bits the repr drops: reserved flag, checksum
//! 0x0000 vs 0xFFFF), and that decapsulates to the same outer repr.
#![no_main]

use innet_wire::ipip;
use innet_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((outer, inner)) = ipip::decapsulate(data) {
        let _ = (inner.src(), inner.dst(), inner.payload());
        let hl = outer.header_len();
        let body = &data[hl..hl + outer.payload_len];
        let again = ipip::encapsulate(&outer, body).expect("a decapsulated packet re-encapsulates");
        assert_eq!(&again[hl..], body, "encapsulate moved the inner packet");
        let (outer2, inner2) =
            ipip::decapsulate(&again).expect("re-encapsulated packet decapsulates");
        assert_eq!(outer2, outer);
        assert_eq!(inner2.payload(), inner.payload());
    }
    let Ok(p) = Ipv4Packet::new_checked(data) else {
        return;
    };
    let _ = (
        p.dscp(),
        p.ecn(),
        p.ident(),
        p.ttl(),
        p.src(),
        p.dst(),
        p.options(),
        p.header_checksum(),
    );
    assert_eq!(p.payload().len(), p.total_len() as usize - p.header_len());
    let Ok(repr) = Ipv4Repr::parse(&p) else {
        return;
    };
    assert!(p.verify_checksum());
    assert_eq!(repr.buffer_len(), p.total_len() as usize);
    let mut buf = vec![0u8; repr.buffer_len()];
    buf[repr.header_len()..].copy_from_slice(p.payload());
    repr.emit(&mut buf).expect("a parsed IPv4 header must emit");
    let q = Ipv4Packet::new_checked(&buf[..]).expect("emitted IPv4 is checkable");
    assert_eq!(Ipv4Repr::parse(&q).expect("emitted IPv4 parses"), repr);
    assert_eq!(q.payload(), p.payload());

    // The in-place setters keep the packet valid once the checksum is refilled.
    let mut m = data[..p.total_len() as usize].to_vec();
    let mut w = Ipv4Packet::new_checked(&mut m[..]).expect("same bytes as above");
    w.set_ttl(repr.ttl.wrapping_sub(1));
    w.set_ecn(3);
    w.fill_checksum();
    let r2 = Ipv4Repr::parse(&w).expect("checksum refilled after set_ttl/set_ecn");
    assert_eq!(
        (r2.ttl, r2.ecn, r2.dscp),
        (repr.ttl.wrapping_sub(1), 3, repr.dscp)
    );
});
