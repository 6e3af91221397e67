//! SwitchVM's in-packet header: parsing any option area never panics, and whatever parses and
//! re-emits parses back to the same header.
#![no_main]

use innet_wire::switchvm::DpfHeader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = DpfHeader::parse(data) {
        if let Ok(area) = h.emit() {
            assert_eq!(DpfHeader::parse(&area).unwrap(), h);
        }
    }
});
