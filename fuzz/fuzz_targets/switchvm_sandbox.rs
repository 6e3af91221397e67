//! SwitchVM's sandbox under a coverage-guided fuzzer: any option area an untrusted tenant can put
//! in a packet (its invocation, in-packet code, stack and gas), run with every invocation it
//! chains to, never changes the victim tenant's memory, never steers outside the attacker's
//! rules, never runs past its gas and never panics.
#![no_main]

use innet_switchvm::sandbox::Arena;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(pkt) = innet_switchvm::encoding::decode(data, 4) else { return };
    let mut arena = Arena::new();
    if let Err(e) = arena.run_untrusted(pkt) {
        panic!("sandbox broken: {e}");
    }
    if let Err(e) = arena.victim_intact() {
        panic!("sandbox broken: {e}");
    }
});
