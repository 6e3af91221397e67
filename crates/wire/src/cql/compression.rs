//! CQL compression, negotiated by the `COMPRESSION` option of the client's STARTUP: LZ4 and
//! Snappy frame bodies in protocol v4 (frames with the `COMPRESSION` header flag) and LZ4
//! segment payloads in v5. The codecs are the `lz4_flex` and `snap` crates; this module only
//! frames them as Cassandra does. Declared lengths above the protocol's limits are errors
//! (never an allocation), and no input panics.

use crate::cql::{err, Reader, Result, MAX_BODY_BYTES, MAX_SEGMENT_PAYLOAD_BYTES};

/// A compression algorithm a CQL connection may negotiate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Lz4,
    Snappy,
}

impl Compression {
    /// The STARTUP option's value (`lz4`, `snappy`; Cassandra compares them case-insensitively).
    pub fn from_name(name: &str) -> Option<Compression> {
        if name.eq_ignore_ascii_case("lz4") {
            Some(Compression::Lz4)
        } else if name.eq_ignore_ascii_case("snappy") {
            Some(Compression::Snappy)
        } else {
            None
        }
    }
}

/// The `COMPRESSION` entry of a STARTUP body (a `[string map]`), `Ok(None)` when absent.
pub fn startup_compression(body: &[u8]) -> Result<Option<String>> {
    let mut r = Reader::new(body, "STARTUP body");
    let n = r.short()?;
    let mut found = None;
    for _ in 0..n {
        let k = r.string()?;
        let v = r.string()?;
        if k.eq_ignore_ascii_case("COMPRESSION") {
            found = Some(v.to_string());
        }
    }
    Ok(found)
}

/// A v4 frame body as the compressor wrote it, decompressed into `out` (its old contents are
/// replaced). LZ4: a big-endian int with the decompressed length, then one LZ4 block (the
/// Java and Python drivers' and Cassandra's layout). Snappy: one raw Snappy block.
pub fn decompress_body(c: Compression, body: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    match c {
        Compression::Lz4 => {
            let Some((len, block)) = body.split_first_chunk::<4>() else {
                return err(
                    "LZ4 frame body",
                    format!("{} bytes, shorter than its 4-byte length", body.len()),
                );
            };
            let n = u32::from_be_bytes(*len);
            if n > MAX_BODY_BYTES {
                return err(
                    "LZ4 frame body",
                    format!("decompressed length {n} exceeds {MAX_BODY_BYTES}"),
                );
            }
            lz4_block(block, n as usize, out, "LZ4 frame body")
        }
        Compression::Snappy => {
            let n = snap::raw::decompress_len(body)
                .or_else(|e| err("Snappy frame body", e.to_string()))?;
            if n > MAX_BODY_BYTES as usize {
                return err(
                    "Snappy frame body",
                    format!("decompressed length {n} exceeds {MAX_BODY_BYTES}"),
                );
            }
            out.resize(n, 0);
            match snap::raw::Decoder::new().decompress(body, out) {
                Ok(got) if got == n => Ok(()),
                Ok(got) => err(
                    "Snappy frame body",
                    format!("decompressed {got} bytes, header said {n}"),
                ),
                Err(e) => err("Snappy frame body", e.to_string()),
            }
        }
    }
}

/// A v4 frame body compressed the way the drivers do (for tests, seeds and benchmarks).
pub fn compress_body(c: Compression, body: &[u8]) -> Vec<u8> {
    match c {
        Compression::Lz4 => {
            let mut v = (body.len() as u32).to_be_bytes().to_vec();
            v.extend_from_slice(&lz4_flex::block::compress(body));
            v
        }
        Compression::Snappy => snap::raw::Encoder::new()
            .compress_vec(body)
            .expect("a body under 4 GiB compresses"),
    }
}

/// A v5 segment payload compressed with LZ4 (a bare block: its decompressed length is in the
/// segment header), decompressed into `out`.
pub fn decompress_segment(
    payload: &[u8],
    uncompressed_len: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    if uncompressed_len > MAX_SEGMENT_PAYLOAD_BYTES {
        return err(
            "v5 compressed segment",
            format!("decompressed length {uncompressed_len} exceeds {MAX_SEGMENT_PAYLOAD_BYTES}"),
        );
    }
    lz4_block(payload, uncompressed_len, out, "v5 compressed segment")
}

/// A v5 segment payload as LZ4 (for tests and seeds).
pub fn compress_segment(payload: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress(payload)
}

fn lz4_block(block: &[u8], n: usize, out: &mut Vec<u8>, at: &'static str) -> Result<()> {
    out.resize(n, 0);
    match lz4_flex::block::decompress_into(block, out) {
        Ok(got) if got == n => Ok(()),
        Ok(got) => err(at, format!("decompressed {got} bytes, header said {n}")),
        Err(e) => err(at, format!("LZ4 block: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn startup_option_is_found_in_any_case() {
        let mut b = Vec::new();
        crate::cql::write::short(&mut b, 2);
        for (k, v) in [("CQL_VERSION", "3.0.0"), ("compression", "LZ4")] {
            crate::cql::write::string(&mut b, k);
            crate::cql::write::string(&mut b, v);
        }
        let name = startup_compression(&b).unwrap().unwrap();
        assert_eq!(Compression::from_name(&name), Some(Compression::Lz4));
        assert_eq!(startup_compression(&[0, 0]).unwrap(), None);
        assert!(startup_compression(&[0, 1, 0]).is_err());
        assert_eq!(Compression::from_name("zstd"), None);
    }

    /// Bytes written by the Python packages the driver uses (`lz4.block.compress(...,
    /// store_size=False)` behind the driver's big-endian length; `snappy.compress`): the crates
    /// must read exactly what the drivers send.
    #[test]
    fn reads_the_python_codecs_bytes() {
        let text = b"hello hello hello hello";
        let mut body = 23u32.to_be_bytes().to_vec();
        body.extend_from_slice(b"\x68\x68\x65\x6c\x6c\x6f\x20\x06\x00\x50\x68\x65\x6c\x6c\x6f");
        let mut out = Vec::new();
        decompress_body(Compression::Lz4, &body, &mut out).unwrap();
        assert_eq!(out, text);
        decompress_segment(&body[4..], 23, &mut out).unwrap();
        assert_eq!(out, text);
        let snappy = b"\x17\x14\x68\x65\x6c\x6c\x6f\x20\x42\x06\x00";
        decompress_body(Compression::Snappy, snappy, &mut out).unwrap();
        assert_eq!(out, text);
    }

    #[test]
    fn lies_about_lengths_are_errors() {
        let mut out = Vec::new();
        let mut body = 100u32.to_be_bytes().to_vec();
        body.extend_from_slice(&lz4_flex::block::compress(b"short"));
        assert!(decompress_body(Compression::Lz4, &body, &mut out).is_err());
        let huge = (MAX_BODY_BYTES + 1).to_be_bytes();
        assert!(decompress_body(Compression::Lz4, &huge, &mut out).is_err());
        assert!(decompress_body(Compression::Lz4, &[0, 0], &mut out).is_err());
        assert!(decompress_segment(b"\x00", MAX_SEGMENT_PAYLOAD_BYTES + 1, &mut out).is_err());
        // Snappy varint saying 2^32-1 bytes.
        assert!(decompress_body(Compression::Snappy, b"\xff\xff\xff\xff\x0f", &mut out).is_err());
    }

    use crate::cql::{
        encode_compressed_format_segment, frame_flags, opcode, response_frame, Frame, FrameHeader,
        FrameReader,
    };

    fn frame(version: u8, stream: i16, flags: u8, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        Frame {
            header: FrameHeader {
                version,
                is_response: true,
                flags,
                stream,
                opcode: opcode::RESULT,
                body_len: 0,
            },
            body: body.to_vec(),
        }
        .encode(&mut v);
        v
    }

    /// Push `all` cut in two at every point; the frames read must be `want` (stream, body).
    fn read_at_every_cut(c: Compression, all: &[u8], want: &[(i16, Vec<u8>)]) {
        for cut in 0..=all.len() {
            let mut r = FrameReader::new(true);
            r.set_compression(c);
            let mut out = Vec::new();
            r.push(&all[..cut], &mut out).unwrap();
            r.push(&all[cut..], &mut out).unwrap();
            let got: Vec<(i16, Vec<u8>)> = out
                .iter()
                .map(|f| {
                    assert_eq!(f.header.flags & frame_flags::COMPRESSION, 0);
                    assert_eq!(f.header.body_len as usize, f.body.len());
                    (f.header.stream, f.body.clone())
                })
                .collect();
            assert_eq!(got, want, "cut at {cut}");
            assert!(r.at_boundary());
        }
    }

    #[test]
    fn v4_compressed_frames_are_inflated_in_both_algorithms() {
        let body = b"a body a body a body a body".to_vec();
        for c in [Compression::Lz4, Compression::Snappy] {
            let all = [
                frame(4, 1, frame_flags::COMPRESSION, &compress_body(c, &body)),
                // A frame without the flag on the same connection is read as it is.
                frame(4, 2, 0, b"plain"),
            ]
            .concat();
            read_at_every_cut(c, &all, &[(1, body.clone()), (2, b"plain".to_vec())]);
        }
        // Compressed bytes with no compression negotiated (or v5 frames flagged) are errors.
        let mut r = FrameReader::new(true);
        let f = frame(
            4,
            1,
            frame_flags::COMPRESSION,
            &compress_body(Compression::Lz4, &body),
        );
        assert!(r.push(&f, &mut Vec::new()).is_err());
    }

    #[test]
    fn v5_compressed_segments_are_inflated() {
        let ready = response_frame(5, 0, opcode::READY, &[]);
        let f1 = frame(5, 3, 0, b"rows rows rows rows rows rows");
        let f2 = frame(5, 4, 0, b"short");
        let mut segs = Vec::new();
        // One LZ4 segment with two frames, one stored uncompressed (decompressed length 0),
        // and a frame split over two non-self-contained compressed segments.
        let both = [f1.clone(), f2.clone()].concat();
        encode_compressed_format_segment(
            &compress_segment(&both),
            Some(both.len()),
            true,
            &mut segs,
        );
        encode_compressed_format_segment(&f2, None, true, &mut segs);
        let (a, b) = f1.split_at(7);
        encode_compressed_format_segment(&compress_segment(a), Some(a.len()), false, &mut segs);
        encode_compressed_format_segment(&compress_segment(b), Some(b.len()), false, &mut segs);
        let all = [ready, segs].concat();
        let body1 = b"rows rows rows rows rows rows".to_vec();
        let want = [
            (0, vec![]),
            (3, body1.clone()),
            (4, b"short".to_vec()),
            (4, b"short".to_vec()),
            (3, body1),
        ];
        read_at_every_cut(Compression::Lz4, &all, &want);
        // The switch's own answers in that format read back.
        let mut v = Vec::new();
        crate::cql::encode_frames_v5_in(&f2, true, &mut v);
        let mut r = FrameReader::new(false);
        r.set_compression(Compression::Lz4);
        r.set_segmented();
        let mut out = Vec::new();
        r.push(&v, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].body, b"short");
    }

    proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(any::<u8>(), 0..3000), rep in 1usize..4) {
            let data: Vec<u8> = data.iter().copied().cycle().take(data.len() * rep).collect();
            let mut out = Vec::new();
            for c in [Compression::Lz4, Compression::Snappy] {
                decompress_body(c, &compress_body(c, &data), &mut out).unwrap();
                prop_assert_eq!(&out, &data);
            }
            if data.len() <= MAX_SEGMENT_PAYLOAD_BYTES {
                decompress_segment(&compress_segment(&data), data.len(), &mut out).unwrap();
                prop_assert_eq!(&out, &data);
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), n in 0usize..5000) {
            let mut out = Vec::new();
            let _ = decompress_body(Compression::Lz4, &data, &mut out);
            let _ = decompress_body(Compression::Snappy, &data, &mut out);
            let _ = decompress_segment(&data, n, &mut out);
            let _ = startup_compression(&data);
        }
    }
}
