//! OrbitCache messages and top-k reports: parsing never panics, and what parses re-emits to the
//! same bytes (header, key and value are a plain split of the payload).
#![no_main]

use innet_wire::orbitcache::{Header, Message, Stamp, TopKReport, HEADER_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let key_len = data.first().map(|b| (*b % 64) as usize).unwrap_or(16);
    let body = data.get(1..).unwrap_or(&[]);
    if let Ok(m) = Message::parse(body, key_len) {
        assert_eq!(m.emit(), body);
        assert_eq!(m.key.len(), key_len);
        let mut again = [0u8; HEADER_BYTES];
        m.header.emit(&mut again);
        assert_eq!(Header::parse(&again).unwrap(), m.header);
        if let Ok(s) = Stamp::parse(m.value) {
            let mut b = [0u8; 12];
            s.emit(&mut b);
            assert_eq!(&b[..], &m.value[..12]);
        }
    }
    if let Ok(r) = TopKReport::parse(body) {
        assert_eq!(TopKReport::parse(&r.emit()).unwrap(), r);
    }
});
