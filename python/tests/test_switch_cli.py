"""`innet switch` and `innet bench switch` without namespaces: bad input is one clear line and
exit 2, the program list, and the in-memory replay benchmark on a capture written here."""

import json
import struct

from innet import ipv4


def test_switch_list_names_forward(innet_cmd):
    r = innet_cmd("switch", "list")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("forward")


def test_bad_input_is_one_line_and_exit_2(innet_cmd):
    cases = [
        (["--program", "nosuch", "--port", "a", "--port", "b"], "no switch program 'nosuch'"),
        (["--program", "forward", "--port", "a", "--port", "b", "--set", "recirculatoins=1"], "recirculations"),
        (["--program", "forward", "--port", "a", "--port", "b", "--set", "recirculations=x"], "whole number"),
        (["--program", "forward", "--port", "a", "--port", "b", "--route", "10.0.0.0/8=9"], "port 9 does not exist"),
        (["--program", "forward", "--port", "a", "--port", "b", "--loss", "1.5"], "--loss"),
        (["--program", "forward", "--port", "a"], "at least two --port"),
        (["--program", "forward", "--port", "nosuchif0", "--port", "nosuchif1"], "nosuchif0: no such interface"),
    ]
    for args, needle in cases:
        r = innet_cmd("switch", "run", *args)
        assert r.returncode == 2, (args, r.stderr)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        assert len(lines) == 1 and lines[0].startswith("innet: error:"), (args, r.stderr)
        assert needle in lines[0], (args, lines[0])


def test_appswitch_keeps_a_state_file_unless_told_off(tmp_path):
    """Issue 36: `innet switch run --program appswitch` records volatile keys in a durable file by
    default (a restarted switch must not serve what the server has expired); `state_file=off`
    is the explicit opt-out. The switch is built (and its state file opened) before its ports
    are, so interfaces that do not exist show it without namespaces."""
    import os
    import subprocess
    import sys

    def run(*sets):
        return subprocess.run([sys.executable, "-m", "innet", "switch", "run", "--program", "appswitch",
                               "--port", "nosuchif0", "--port", "nosuchif1", *sets],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONWARNINGS": "ignore", "INNET_STATE_DIR": str(tmp_path / "st")})

    r = run("--set", "protocol=redis")
    assert r.returncode == 2 and "nosuchif0: no such interface" in r.stderr, r.stderr
    f = tmp_path / "st" / "appswitch-redis-6379-nosuchif0-nosuchif1.state"
    assert f"state file: {f}" in r.stderr, r.stderr
    assert f.read_text().splitlines()[0] == "innet-appswitch-state 1 redis"
    r = run("--set", "protocol=memcached", "--set", "state_file=off")
    assert r.returncode == 2 and "state file" not in r.stderr, r.stderr
    assert not (tmp_path / "st" / "appswitch-memcached-11211-nosuchif0-nosuchif1.state").exists()
    # A state file that is not one is a clear error naming it (never used, never overwritten).
    bad = tmp_path / "bad.state"
    bad.write_text("hello\n")
    r = run("--set", "protocol=cql", "--set", f"state_file={bad}")
    assert r.returncode == 2 and f"state_file {bad}: line 1: expected" in r.stderr, r.stderr
    assert bad.read_text() == "hello\n"


def test_ipv4_header_and_checksum_match_a_known_header():
    # A header from the wild (Wikipedia's "IPv4 header checksum" example): checksum 0xB861.
    known = bytes.fromhex("45000073000040004011b861c0a80001c0a800c7")
    assert ipv4.checksum(known[:10] + b"\0\0" + known[12:]) == 0xB861 and ipv4.checksum(known) == 0
    assert ipv4.header("192.168.0.1", "192.168.0.199", ipv4.UDP, 0x73 - 20, ident=0) == known
    assert ipv4.checksum(b"\x01") == ~0x0100 & 0xFFFF  # an odd length is padded with a zero byte


def _frame(i: int, reply: bool) -> bytes:
    """A UDP/IPv4 frame with correct checksums (client 10.0.0.1 <-> server 10.0.0.2)."""
    src, dst = (b"\x0a\x00\x00\x02", b"\x0a\x00\x00\x01") if reply else (b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02")
    payload = b"key:%06d" % i
    udp_len = 8 + len(payload)
    ip = ipv4.header(src, dst, ipv4.UDP, udp_len, ident=i)
    udp = bytearray(struct.pack("!HHHH", 40000, 11211, udp_len, 0) + payload)
    c = ipv4.checksum(ipv4.pseudo_header(src, dst, ipv4.UDP, udp_len) + bytes(udp)) or 0xFFFF
    udp[6:8] = struct.pack("!H", c)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + bytes(udp)


def test_bench_switch_replays_a_capture(innet_cmd, tmp_path):
    pcap = tmp_path / "cap.pcap"
    with open(pcap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for i in range(200):
            fr = _frame(i, reply=i % 2 == 1)
            f.write(struct.pack("<IIII", 0, i, len(fr), len(fr)) + fr)
        arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + bytes(28)
        f.write(struct.pack("<IIII", 0, 999, len(arp), len(arp)) + arp)
    r = innet_cmd("bench", "switch", "--pcap", str(pcap), "--program", "forward", "--repeat", "3", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["frames"] == 3 * 201
    assert rep["tx_frames"] == 3 * 201 and rep["malformed"] == 0 and rep["passed_raw"] == 3
    assert rep["frames_per_s"] > 0
    assert rep["program_report"]["forwarded"] == str(3 * 200)
    bad = innet_cmd("bench", "switch", "--pcap", str(tmp_path / "none.pcap"))
    assert bad.returncode == 2 and "no such file" in bad.stderr
