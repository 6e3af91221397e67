"""Tenant frames for SwitchVM on real interfaces: Geneve (UDP 6081) with SwitchVM options and an
inner Ethernet/IPv4/UDP frame, built byte by byte (checksums included), and the inverse for what
a receiver gets. Used by the netns test and the replay-benchmark captures.

    from innet import _native
    from innet.switchvm.frames import geneve, outer_frame
    opts = _native.switchvm_options(counter_source, stack=[3])   # code + stack in the packet
    payload = geneve(7, opts, b"hello")                           # send to UDP port 6081
"""

from __future__ import annotations

import struct

from innet import ipv4 as ip

GENEVE_PORT = 6081
INNER_MACS = bytes.fromhex("020000000002" "020000000001")


def ipv4(src: str, dst: str, proto: int, body: bytes) -> bytes:
    """An IPv4 packet (no options, TTL 64, a correct header checksum) around `body`."""
    return ip.header(src, dst, proto, len(body), flags=0) + body


def udp(sport: int, dport: int, body: bytes) -> bytes:
    """A UDP datagram without a checksum (0, allowed over IPv4)."""
    return struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body


def geneve(vni: int, options: bytes, payload: bytes) -> bytes:
    """Geneve header + `options` + an inner Ethernet/IPv4/UDP frame carrying `payload`."""
    if len(options) % 4 or len(options) > 252:
        raise ValueError(f"Geneve options are a multiple of 4 bytes up to 252, got {len(options)}")
    inner = INNER_MACS + b"\x08\x00" + ipv4("192.168.0.1", "192.168.0.2", 17, udp(4000, 4001, payload))
    return bytes([len(options) // 4, 0]) + struct.pack("!HI", 0x6558, vni << 8) + options + inner


def outer_frame(src: str, dst: str, geneve_bytes: bytes) -> bytes:
    """A whole Ethernet frame carrying a Geneve payload to UDP port 6081 (for captures)."""
    return INNER_MACS + b"\x08\x00" + ipv4(src, dst, 17, udp(40000, GENEVE_PORT, geneve_bytes))


def parse_geneve(b: bytes) -> tuple[int, bytes, bytes]:
    """(VNI, option area, inner frame) of a Geneve payload."""
    optlen = (b[0] & 0x3F) * 4
    return int.from_bytes(b[4:7], "big"), b[8:8 + optlen], b[8 + optlen:]
