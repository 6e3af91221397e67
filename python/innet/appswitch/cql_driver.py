"""The DataStax cassandra-driver as the project's workloads use it, with one fix.

The driver's protocol v5 reader (`Connection._process_segment_buffer`, cassandra-driver 3.30.1,
the newest release) loses bytes: when a socket read ends 1 to 5 bytes (8 with LZ4) into a
segment header, too few bytes for the header and its CRC24, it leaves the buffer's position at
the end, and the following `reset_io_buffer()` keeps only the bytes *after* that position —
none. The next read then starts inside the header and the connection dies with `CRC mismatch
on header` (issue 23: seen once in ~400 passes of bench/appswitch_figs.py at connect, on the
control connection's schema read; any path that cuts the server's stream into more packets,
such as a switch that segments GSO frames, makes such reads more likely).

With LZ4 a second fault: a segment whose payload did not shrink is sent as it is, in the
compressed format (5-byte header, decompressed length 0), but `SegmentHeader.segment_length`
counts a 3-byte header for it, so a read that ends in the last 2 bytes of such a segment is
taken for a whole segment and its CRC32 read short (`struct.error`, the connection dies).

`fix_segment_reader()` rewinds the buffer in the first case (the driver already does so when
the header is complete but the segment is not) and counts the header by the codec's format in
the second. It is applied only while the driver still loses bytes
(`segment_reader_loses_bytes()` feeds its real reader v5 streams, plain and LZ4, split at every
offset).
"""

from __future__ import annotations

import io
import struct

_FIXED = False


def sample_stream(codec) -> tuple[bytes, list[int]]:
    """Three v5 segments, each carrying one response frame (streams 1, 2, 3); the second one's
    body is long and compressible (LZ4 compresses it; the others are stored as they are)."""
    out = io.BytesIO()
    for stream, pad in ((1, b""), (2, b"a" * 200), (3, b"")):
        body = struct.pack(">i", 1) + pad
        codec.encode(out, struct.pack(">BBhBi", 0x85, 0, stream, 0x08, len(body)) + body)
    return out.getvalue(), [1, 2, 3]


def read_in_parts(process_segment_buffer, codec, cuts: list[int]) -> list[int]:
    """The stream ids the driver's reader hands out when the stream arrives in reads ending at
    `cuts`, with `process_segment_buffer` as the segment step. Raises what the reader raises."""
    from cassandra.connection import Connection, _ConnectionIOBuffer

    class Probe(Connection):
        _process_segment_buffer = process_segment_buffer

    got: list[int] = []
    c = Probe.__new__(Probe)
    c._io_buffer = _ConnectionIOBuffer(c)
    c._current_frame = None
    c._is_checksumming_enabled = True
    c._io_buffer.set_checksumming_buffer()
    c._segment_codec = codec
    c.process_msg = lambda header, body: got.append(header.stream)

    def defunct(exc):
        raise exc

    c.defunct = defunct
    data, _ = sample_stream(codec)
    for a, b in zip([0, *cuts], [*cuts, len(data)]):
        c._io_buffer.io_buffer.write(data[a:b])
        c.process_io_buffer()
    return got


def segment_codecs() -> list:
    """The driver's v5 segment codecs: plain, and LZ4 when the lz4 package is installed."""
    from cassandra.connection import segment_codec_lz4, segment_codec_no_compression

    return [c for c in (segment_codec_no_compression, segment_codec_lz4) if c is not None]


def segment_reader_loses_bytes(process_segment_buffer=None) -> bool:
    """True when the driver's reader (or `process_segment_buffer` in its place) fails to hand
    out every frame of a v5 stream split into two reads at some offset, with or without LZ4."""
    from cassandra.connection import Connection

    step = process_segment_buffer or Connection._process_segment_buffer
    for codec in segment_codecs():
        data, want = sample_stream(codec)
        for cut in range(1, len(data)):
            try:
                if read_in_parts(step, codec, [cut]) != want:
                    return True
            except Exception:  # noqa: BLE001 - a CRC error is the symptom looked for
                return True
    return False


def _fixed_step(original):
    def _process_segment_buffer(self):
        buf = self._io_buffer
        if 0 < buf.readable_io_bytes() < self._segment_codec.header_length_with_crc:
            # Too few bytes for the header: keep them (the caller keeps what follows the
            # position) and wait for more.
            buf._segment_consumed = False
            buf.io_buffer.seek(0)
            return
        return original(self)

    return _process_segment_buffer


def _segment_length(header) -> int:
    """The whole segment's length: the header is 3 bytes without compression (decompressed
    length -1) and 5 with it, also when the payload is stored as it is (decompressed length 0)."""
    from cassandra.segment import CRC24_LENGTH, CRC32_LENGTH, SegmentCodec

    hl = SegmentCodec.UNCOMPRESSED_HEADER_LENGTH if header.uncompressed_payload_length < 0 \
        else SegmentCodec.COMPRESSED_HEADER_LENGTH
    return hl + CRC24_LENGTH + header.payload_length + CRC32_LENGTH


def fix_segment_reader() -> bool:
    """Apply the fix to the driver's classes if its reader loses bytes; idempotent. Returns True
    when the fix is in place, False when the driver needs none."""
    global _FIXED
    from cassandra.connection import Connection
    from cassandra.segment import SegmentHeader

    if _FIXED:
        return True
    if not segment_reader_loses_bytes():
        return False
    fixed = _fixed_step(Connection._process_segment_buffer)
    original_length = SegmentHeader.segment_length
    SegmentHeader.segment_length = property(_segment_length)
    if segment_reader_loses_bytes(fixed):
        SegmentHeader.segment_length = original_length
        raise RuntimeError("cassandra-driver: the v5 segment reader loses bytes and the fix does not cure it "
                           "(a new driver version?): see python/innet/appswitch/cql_driver.py")
    Connection._process_segment_buffer = fixed
    _FIXED = True
    return True
