//! Geneve: a checked view's option iterator ends (stopping after its first error) and stays
//! inside the option area; a parsed header emits to the same option bytes and re-parses equal.
#![no_main]

use innet_wire::geneve::{GenevePacket, GeneveRepr, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = GenevePacket::new_checked(data) else {
        return;
    };
    let _ = (p.oam(), p.critical(), p.protocol(), p.vni());
    assert!(p.vni() < 1 << 24);
    assert_eq!(p.payload().len(), data.len() - p.header_len());
    let (mut seen, mut errors, mut steps) = (0usize, 0usize, 0usize);
    for o in p.options() {
        steps += 1;
        assert!(steps <= 64, "option iterator does not end");
        match o {
            Ok((_, _, d)) => {
                assert_eq!(d.len() % 4, 0);
                seen += 4 + d.len();
            }
            Err(_) => errors += 1,
        }
    }
    assert!(
        errors <= 1,
        "iterator yielded {errors} errors, expected it to stop after one"
    );
    assert!(seen <= p.options_len());
    if errors == 0 {
        assert_eq!(
            seen,
            p.options_len(),
            "well-formed options must cover the option area"
        );
    }
    let Ok(repr) = GeneveRepr::parse(&p) else {
        assert_eq!(
            errors, 1,
            "parse failed though every option was well-formed"
        );
        return;
    };
    assert_eq!(repr.header_len(), p.header_len());
    let mut buf = vec![0u8; repr.header_len()];
    repr.emit(&mut buf)
        .expect("a parsed Geneve header must emit");
    let q = GenevePacket::new_checked(&buf[..]).expect("emitted Geneve is checkable");
    assert_eq!(GeneveRepr::parse(&q).expect("emitted Geneve parses"), repr);
    // Option class and type bytes are kept verbatim; only reserved bits may differ.
    for (a, b) in p.options().zip(q.options()) {
        assert_eq!(a.expect("parsed above"), b.expect("emitted"));
    }
    assert_eq!(
        &buf[2..HEADER_LEN - 1],
        &data[2..HEADER_LEN - 1],
        "protocol and VNI bytes"
    );

    // Setters touch only their own bits: the reserved byte after the VNI and the options stay.
    let mut m = data.to_vec();
    let mut w = GenevePacket::new_checked(&mut m[..]).expect("same bytes as above");
    w.set_vni(!repr.vni);
    w.set_oam(!repr.oam);
    w.set_critical(!repr.critical);
    let r = GeneveRepr::parse(&w).expect("options untouched by the setters");
    assert_eq!(
        (r.vni, r.oam, r.critical),
        (!repr.vni & 0xFF_FFFF, !repr.oam, !repr.critical)
    );
    assert_eq!(r.options, repr.options);
    assert_eq!(
        m[HEADER_LEN - 1],
        data[HEADER_LEN - 1],
        "reserved byte after the VNI"
    );
});
