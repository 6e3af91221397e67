//! RESP: the first byte picks commands (even) or replies (odd), the second where to split the
//! rest into two pushes. Never panics; a reassembled reply stream is a prefix of the input
//! whose messages' lengths add up to the bytes consumed; the in-place command reader hands out
//! the same commands as the owning one, and the in-place reply reader the same replies.
#![no_main]

use innet_wire::resp::{ReplyRef, RespReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (mode, cut, rest) = (data[0], data[1] as usize, &data[2..]);
    let cut = cut.min(rest.len());
    let mut r = RespReader::default();
    if mode & 1 == 0 {
        let mut out = Vec::new();
        if r.push_commands(&rest[..cut], &mut out).is_ok() {
            let _ = r.push_commands(&rest[cut..], &mut out);
        }
        let mut r2 = RespReader::default();
        let mut seen: Vec<Vec<Vec<u8>>> = Vec::new();
        let mut take = |args: &[&[u8]]| seen.push(args.iter().map(|a| a.to_vec()).collect());
        if r2.for_each_command(&rest[..cut], &mut take).is_ok() {
            let _ = r2.for_each_command(&rest[cut..], &mut take);
        }
        assert_eq!(out, seen);
    } else {
        let mut out = Vec::new();
        let ok = r.push_replies(&rest[..cut], &mut out).is_ok() && r.push_replies(&rest[cut..], &mut out).is_ok();
        // The in-place reader the switch uses: the same replies, bytes and leftover.
        let mut r2 = RespReader::default();
        let mut seen = Vec::new();
        let mut take = |v: ReplyRef<'_>, raw: &[u8]| seen.push((v.to_owned(), raw.to_vec()));
        let ok2 = r2.for_each_reply(&rest[..cut], &mut take).is_ok() && r2.for_each_reply(&rest[cut..], &mut take).is_ok();
        assert_eq!(ok, ok2);
        assert_eq!(out, seen);
        assert_eq!(r.pending_bytes(), r2.pending_bytes());
        let consumed: usize = out.iter().map(|m| m.1.len()).sum();
        assert!(consumed <= rest.len());
        if ok {
            assert_eq!(consumed + r.pending_bytes(), rest.len());
            assert_eq!(out.iter().flat_map(|m| m.1.iter().copied()).collect::<Vec<u8>>(), rest[..consumed]);
        }
    }
});
