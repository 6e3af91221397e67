//! Whole frames, the round-trip oracle: whatever `parse_frame` (and `parse_frame_with` with a
//! UDP tunnel on port 667) accepts must `emit`, the emitted bytes must re-parse to the same
//! FrameRepr (apart from the length fields emit recomputes by design), and emitting that
//! again must give the very same bytes.
#![no_main]

use innet_wire::frame::{parse_frame, parse_frame_with, FrameRepr};
use libfuzzer_sys::fuzz_target;

const TUNNEL_PORT: u16 = 667;

/// Copy the fields `FrameRepr::emit` derives from the content (IP payload lengths) from `to`.
fn with_lengths_of(mut f: FrameRepr, to: &FrameRepr) -> FrameRepr {
    f.ip.payload_len = to.ip.payload_len;
    if let (Some(t), Some(u)) = (&mut f.tunnel, &to.tunnel) {
        t.outer.payload_len = u.outer.payload_len;
    }
    f
}

fn check(data: &[u8], ports: &[u16]) {
    let Ok(f) = parse_frame_with(data, ports) else { return };
    let bytes = f.emit().unwrap_or_else(|e| panic!("parsed frame does not emit: {e}\n{f:?}"));
    assert_eq!(bytes.len(), f.buffer_len(), "emit length vs buffer_len");
    let g = parse_frame_with(&bytes, ports).unwrap_or_else(|e| panic!("emitted frame does not parse: {e}\n{f:?}"));
    assert_eq!(with_lengths_of(f.clone(), &g), g, "re-parsed frame differs");
    let again = g.emit().expect("re-parsed frame emits");
    assert_eq!(again, bytes, "emit is not a fixed point");
    assert!(bytes.len() <= data.len(), "emit grew the frame from {} to {} bytes", data.len(), bytes.len());
}

fuzz_target!(|data: &[u8]| {
    check(data, &[]);
    check(data, &[TUNNEL_PORT]);
    // The plain parser is parse_frame_with no extra ports.
    assert_eq!(parse_frame(data), parse_frame_with(data, &[]));
});
