//! SwitchV2P options and control messages: parsing never panics; parsed options re-emitted into
//! the same area parse back equal, keep every foreign option byte, and take exactly their size.
#![no_main]

use innet_wire::switchv2p::{ControlMessage, V2pOptions, OPTION_CLASS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = ControlMessage::parse(data) {
        assert_eq!(ControlMessage::parse(&m.emit()).unwrap(), m);
    }
    let Ok(opts) = V2pOptions::parse(data) else {
        return;
    };
    let foreign: usize = innet_wire::geneve::iter_options(data)
        .map(|o| o.unwrap())
        .filter(|(c, _, _)| *c != OPTION_CLASS)
        .map(|(_, _, d)| 4 + d.len())
        .sum();
    let mut area = data.to_vec();
    opts.rewrite(&mut area).expect("a parsed area rewrites");
    assert_eq!(area.len(), foreign + opts.wire_len());
    assert_eq!(V2pOptions::parse(&area).unwrap(), opts);
});
