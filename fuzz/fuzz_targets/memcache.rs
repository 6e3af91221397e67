//! memcached text protocol: the first byte picks requests (even) or replies (odd; its other bits
//! pick the shapes the replies are read with), the second where to split the rest into two
//! pushes. Never panics; split or whole, the same messages come out, and on success the bytes
//! consumed plus those still buffered are the whole input.
#![no_main]

use innet_wire::memcache::{McReader, ReplyShape};
use libfuzzer_sys::fuzz_target;

const SHAPES: [ReplyShape; 5] = [
    ReplyShape::Line,
    ReplyShape::Values,
    ReplyShape::UntilEnd,
    ReplyShape::Meta,
    ReplyShape::None,
];

fn run(mode: u8, parts: &[&[u8]]) -> (Vec<(String, usize)>, bool, usize) {
    let mut r = McReader::default();
    let mut out = Vec::new();
    let mut ok = true;
    for p in parts {
        let res = if mode & 1 == 0 {
            r.push_requests(p, |q| out.push((format!("{:?}", q.cmd), q.len)))
        } else {
            // The n-th reply of the stream is read with shape n (counted across pushes).
            r.push_replies(
                p,
                &mut out,
                |out| Some(SHAPES[((mode as usize >> 1) + out.len()) % SHAPES.len()]),
                |out, rep, raw| out.push((format!("{rep:?}"), raw.len())),
            )
        };
        if res.is_err() {
            ok = false;
            break;
        }
    }
    (out, ok, r.pending_bytes())
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (mode, cut, rest) = (data[0], data[1] as usize, &data[2..]);
    let cut = cut.min(rest.len());
    let (split, ok, pending) = run(mode, &[&rest[..cut], &rest[cut..]]);
    let consumed: usize = split.iter().map(|m| m.1).sum();
    assert!(consumed <= rest.len());
    if ok {
        assert_eq!(consumed + pending, rest.len());
        let (whole, whole_ok, _) = run(mode, &[rest]);
        // Reply shapes depend on how many replies came before, the same in both runs.
        assert!(whole_ok);
        assert_eq!(whole, split);
    }
});
