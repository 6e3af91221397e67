"""The one IPv4 header (and Internet checksum) the Python side writes: the frames a test or an
experiment hands to the real switch (SwitchVM's Geneve tenants, UDP and TCP frames for replays,
garbage for the parsers). The switch's own codec is Rust's (crates/wire); this is only for the
bytes Python sends it.

    from innet import ipv4
    ip = ipv4.header("10.0.0.1", "10.0.0.2", ipv4.UDP, len(udp)) + udp
    udp_sum = ipv4.checksum(ipv4.pseudo_header("10.0.0.1", "10.0.0.2", ipv4.UDP, len(udp)) + udp) or 0xFFFF
"""

from __future__ import annotations

import struct

TCP, UDP = 6, 17
DONT_FRAGMENT = 0x4000


def addr(a: str | bytes) -> bytes:
    """A dotted quad (or its 4 bytes) as 4 bytes."""
    if isinstance(a, (bytes, bytearray)):
        if len(a) != 4:
            raise ValueError(f"an IPv4 address is 4 bytes, got {len(a)}")
        return bytes(a)
    return bytes(map(int, a.split(".")))


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of `data`, an odd length padded with a zero byte."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def header(src: str | bytes, dst: str | bytes, proto: int, payload_len: int, ident: int = 1,
           flags: int = DONT_FRAGMENT, ttl: int = 64, total_len: int | None = None, ihl: int = 5) -> bytes:
    """A 20-byte IPv4 header with a correct header checksum: `total_len` (default 20 +
    `payload_len`) and `ihl` only differ for a deliberately malformed packet."""
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + payload_len if total_len is None else total_len,
                              ident & 0xFFFF, flags, ttl, proto, 0, addr(src), addr(dst)))
    h[10:12] = struct.pack("!H", checksum(bytes(h)))
    return bytes(h)


def pseudo_header(src: str | bytes, dst: str | bytes, proto: int, length: int) -> bytes:
    """The pseudo-header a TCP or UDP checksum covers."""
    return addr(src) + addr(dst) + struct.pack("!BBH", 0, proto, length)
