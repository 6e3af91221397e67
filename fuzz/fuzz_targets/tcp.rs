//! TCP: the first 8 input bytes are the pseudo-header addresses, the rest is the segment.
//! `iter_options` and `parse_options` on raw bytes never panic; the walk frames each option where
//! the last one ended and `parse_options` is the walk read through `get`; a parsed segment emits
//! (options in canonical form) to bytes that verify and re-parse to the same repr, and emit is
//! then a fixed point.
#![no_main]

use innet_wire::tcp::{iter_options, options_len, parse_options, TcpOption, TcpPacket, TcpRepr};
use innet_wire::Ipv4Addr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The borrowed walk over the options: each option starts where the last one ended, its data
    // is the bytes after kind and length, a framing error ends the walk, and the owned parser
    // agrees with the walk read through `get` (fails exactly when a step fails).
    let mut next = 0;
    let mut owned = Vec::new();
    let mut failed = false;
    let mut after_error = false;
    for o in iter_options(data) {
        assert!(!after_error, "the walk went on after a framing error");
        let Ok(o) = o else {
            failed = true;
            after_error = true;
            continue;
        };
        assert_eq!((o.offset, o.kind), (next, data[next]));
        next += if o.kind == 1 { 1 } else { 2 + o.data.len() };
        assert!(o.kind == 1 || (data[o.offset + 1] as usize == 2 + o.data.len()));
        match o.get() {
            Ok(v) => owned.push(TcpOption::from(v)),
            Err(_) => failed = true,
        }
    }
    match parse_options(data) {
        Ok(list) => assert!(!failed && list == owned, "parse_options disagrees with the walk"),
        Err(_) => assert!(failed, "parse_options failed where the walk did not"),
    }
    // Options alone, straight from the input: must return, not panic, and what parses must
    // fit back into at most as many bytes as it came from (padding after EOL dropped).
    if let Ok(opts) = parse_options(data) {
        let n = options_len(&opts);
        assert!(
            n <= data.len().div_ceil(4) * 4,
            "{n} bytes of options from {} input bytes",
            data.len()
        );
    }
    if data.len() < 8 {
        return;
    }
    let src = Ipv4Addr::new(data[0], data[1], data[2], data[3]);
    let dst = Ipv4Addr::new(data[4], data[5], data[6], data[7]);
    let seg = &data[8..];
    let Ok(p) = TcpPacket::new_checked(seg) else {
        return;
    };
    let _ = (
        p.seq(),
        p.ack(),
        p.flags(),
        p.window(),
        p.urgent(),
        p.options(),
    );
    assert_eq!(p.payload().len(), seg.len() - p.header_len());
    let Ok(repr) = TcpRepr::parse(&p, src, dst) else {
        return;
    };
    assert!(
        repr.header_len() <= p.header_len(),
        "canonical options grew the header"
    );
    let mut buf = vec![0u8; repr.header_len() + repr.payload_len];
    buf[repr.header_len()..].copy_from_slice(p.payload());
    repr.emit(&mut buf, src, dst)
        .expect("a parsed TCP header must emit");
    let q = TcpPacket::new_checked(&buf[..]).expect("emitted TCP is checkable");
    assert!(q.verify_checksum(src, dst));
    assert_eq!(
        TcpRepr::parse(&q, src, dst).expect("emitted TCP parses"),
        repr
    );
    assert_eq!(q.payload(), p.payload());

    // In-place rewrite of sequence space and flags, refilled checksum, still valid.
    let mut m = seg.to_vec();
    let mut w = TcpPacket::new_checked(&mut m[..]).expect("same bytes as above");
    w.set_seq(repr.ack);
    w.set_ack(repr.seq.wrapping_add(1));
    w.set_flags(!repr.flags);
    assert!(
        w.fill_checksum(src, dst),
        "a segment from an IPv4 packet fits 65535 bytes"
    );
    let r = TcpRepr::parse(&w, src, dst).expect("checksum refilled after rewrite");
    assert_eq!(
        (r.seq, r.ack, r.flags),
        (repr.ack, repr.seq.wrapping_add(1), !repr.flags)
    );
    assert_eq!(r.options, repr.options);
});
