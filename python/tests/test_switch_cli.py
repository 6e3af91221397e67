"""`innet switch` and `innet bench switch` without namespaces: bad input is one clear line and
exit 2, the program list, and the in-memory replay benchmark on a capture written here."""

import json

import pytest

from innet import _native


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


def test_frames_built_in_rust_match_a_known_ipv4_header():
    # A header from the wild (Wikipedia's "IPv4 header checksum" example): checksum 0xB861.
    known = bytes.fromhex("45000073000040004011b861c0a80001c0a800c7")
    f = _native.udp_frame("192.168.0.1", "192.168.0.199", 40000, 11211, bytes(0x73 - 28), ident=0)
    assert f[14:34] == known and len(f) == 14 + 0x73
    assert f[34:38] == bytes.fromhex("9c402bcb") and f[38:40] == bytes.fromhex("005f")  # ports, UDP length
    bad = _native.ipv4_frame("192.168.0.1", "192.168.0.199", 17, bytes(0x73 - 20), ident=0)
    assert bad[14:34] == known and bad[34:] == bytes(0x73 - 20)  # the payload as given: no UDP header
    with pytest.raises(_native.UserInputError, match="src address '10.0.0': expected a dotted quad"):
        _native.udp_frame("10.0.0", "10.0.0.2", 1, 2, b"")
    with pytest.raises(_native.UserInputError, match="Geneve options: expected a multiple of 4 bytes"):
        _native.geneve(7, b"\x01\x02", b"")


def test_geneve_frames_built_in_rust_round_trip():
    opts = _native.switchvm_options(None, stack=[3])
    g = _native.geneve(7, opts, b"hello")
    assert g[:8] == bytes([len(opts) // 4, 0, 0x65, 0x58, 0, 0, 7, 0])  # no OAM/critical, Ethernet, VNI 7
    vni, o, inner = _native.parse_geneve(g)
    assert (vni, o) == (7, opts) and inner[12:14] == b"\x08\x00" and inner.endswith(b"hello")
    assert inner[14 + 9] == 17 and inner[14 + 12:14 + 20] == bytes([192, 168, 0, 1, 192, 168, 0, 2])
    f = _native.geneve_frame("10.78.0.1", "10.78.0.2", 7, opts, b"hello")
    assert f[14 + 20 + 2:14 + 20 + 4] == (6081).to_bytes(2, "big") and f[14 + 20 + 8:] == g
    with pytest.raises(_native.UserInputError, match="geneve"):
        _native.parse_geneve(b"\x3f" + bytes(7))  # 252 bytes of options announced, none there


def _frame(i: int, reply: bool) -> bytes:
    """A UDP/IPv4 frame with correct checksums (client 10.0.0.1 <-> server 10.0.0.2)."""
    src, dst = ("10.0.0.2", "10.0.0.1") if reply else ("10.0.0.1", "10.0.0.2")
    return _native.udp_frame(src, dst, 40000, 11211, b"key:%06d" % i, ident=i)


def test_bench_switch_replays_a_capture(innet_cmd, tmp_path):
    pcap = tmp_path / "cap.pcap"
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + bytes(28)
    pcap.write_bytes(_native.pcap_file([_frame(i, reply=i % 2 == 1) for i in range(200)] + [arp]))
    r = innet_cmd("bench", "switch", "--pcap", str(pcap), "--program", "forward", "--repeat", "3", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["frames"] == 3 * 201
    assert rep["tx_frames"] == 3 * 201 and rep["malformed"] == 0 and rep["passed_raw"] == 3
    assert rep["frames_per_s"] > 0
    assert rep["program_report"]["forwarded"] == str(3 * 200)
    bad = innet_cmd("bench", "switch", "--pcap", str(tmp_path / "none.pcap"))
    assert bad.returncode == 2 and "no such file" in bad.stderr
