//! Gigaflow's `ovs-ofctl add-flows` parser: any text either parses or gives a line/column error,
//! never a panic, and whatever parses builds a pipeline that traces a packet without panicking.
#![no_main]

use innet_ofswitch::{fields::Flow, flows::parse_flows, Pipeline};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_flows(text) {
        Ok(rules) => {
            let p = Pipeline::new(rules);
            let _ = p.trace(&Flow::default());
        }
        Err(e) => assert!(e.line >= 1 && e.column >= 1),
    }
});
