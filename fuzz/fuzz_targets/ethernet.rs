//! Ethernet header: a checked view never panics, and a parsed header emits back to the same
//! bytes (up to the ethertype) and re-parses to the same repr.
#![no_main]

use innet_wire::ethernet::{EthernetPacket, EthernetRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = EthernetPacket::new_checked(data) else {
        return;
    };
    let repr = EthernetRepr::parse(&p).expect("EthernetRepr::parse of a checked view");
    assert_eq!(repr.header_len(), p.header_len());
    assert_eq!(p.payload().len(), data.len() - p.header_len());
    let mut buf = vec![0u8; repr.header_len()];
    repr.emit(&mut buf);
    // Every header bit is represented, so emit must reproduce the input header exactly.
    assert_eq!(
        &buf[..],
        &data[..repr.header_len()],
        "emit differs from the parsed header"
    );
    let again = EthernetRepr::parse(
        &EthernetPacket::new_checked(&buf[..]).expect("emitted header is checkable"),
    )
    .expect("emitted header parses");
    assert_eq!(again, repr);
});
