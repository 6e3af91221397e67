//! CQL compression: the first byte picks the codec (bit 0: Snappy, else LZ4), the direction
//! (bit 1: server side) and the framing (bit 2: v5 segments, compressed format); the second
//! where to split the rest into two pushes. The compressed-frame reassembler and the bare
//! decoders never panic, frames they hand out are inflated (no compression flag, body length
//! as read), and compressing any input then decompressing it gives the input back.
#![no_main]

use innet_wire::cql::compression::{
    compress_body, compress_segment, decompress_body, decompress_segment, startup_compression, Compression,
};
use innet_wire::cql::{frame_flags, FrameReader, MAX_SEGMENT_PAYLOAD_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (mode, cut, rest) = (data[0], data[1] as usize, &data[2..]);
    let c = if mode & 1 != 0 { Compression::Snappy } else { Compression::Lz4 };
    let mut r = FrameReader::new(mode & 2 != 0);
    r.set_compression(c);
    if mode & 4 != 0 {
        r.set_segmented();
    }
    let cut = cut.min(rest.len());
    let mut frames = Vec::new();
    if r.push(&rest[..cut], &mut frames).is_ok() {
        let _ = r.push(&rest[cut..], &mut frames);
    }
    for f in &frames {
        assert_eq!(f.header.body_len as usize, f.body.len());
        if mode & 4 == 0 {
            assert_eq!(f.header.flags & frame_flags::COMPRESSION, 0, "a v4 frame handed out still compressed");
        }
    }
    let mut out = Vec::new();
    let _ = decompress_body(c, rest, &mut out);
    let _ = decompress_segment(rest, cut * 512, &mut out);
    let _ = startup_compression(rest);
    decompress_body(c, &compress_body(c, rest), &mut out).expect("own compression decodes");
    assert_eq!(out, rest);
    if rest.len() <= MAX_SEGMENT_PAYLOAD_BYTES {
        decompress_segment(&compress_segment(rest), rest.len(), &mut out).expect("own segment decodes");
        assert_eq!(out, rest);
    }
});
