"""The cassandra-driver's v5 segment reader as the workloads use it (python/innet/cql_driver.py):
the released driver loses bytes when a socket read ends inside a segment header (issue 23's
`CRC mismatch on header` at connect) or, with LZ4, in the last bytes of a stored segment; with
the fix every frame comes out whatever the read boundaries. No server needed: the driver's own
reader is fed the bytes."""

from __future__ import annotations

import random
import subprocess
import sys

from innet import cql_driver


def test_the_released_driver_loses_bytes_at_some_read_boundaries():
    # A fresh interpreter: the driver as installed, before any fix is applied.
    r = subprocess.run([sys.executable, "-c", "from innet.cql_driver import segment_reader_loses_bytes as f; "
                        "print(f())"], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "True", (
        "the installed cassandra-driver no longer loses bytes: fix_segment_reader() is not applied and "
        "python/innet/cql_driver.py can go")


def test_the_fixed_reader_hands_out_every_frame_at_every_read_boundary():
    from cassandra.connection import Connection

    assert cql_driver.fix_segment_reader() is True
    assert cql_driver.fix_segment_reader() is True  # idempotent
    step = Connection._process_segment_buffer
    rng = random.Random(23)
    codecs = cql_driver._codecs()
    assert len(codecs) == 2, "the lz4 package is installed (scripts/setup.sh): both framings are tested"
    for codec in codecs:
        data, want = cql_driver._v5_stream(codec)
        for cut in range(1, len(data)):  # two reads, split at every offset
            assert cql_driver._read_split(step, codec, [cut]) == want, (codec.compression, cut)
        assert cql_driver._read_split(step, codec, list(range(1, len(data)))) == want  # a byte per read
        for _ in range(200):  # random read boundaries
            cuts = sorted(rng.sample(range(1, len(data)), rng.randrange(1, 8)))
            assert cql_driver._read_split(step, codec, cuts) == want, (codec.compression, cuts)
