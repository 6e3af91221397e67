"""The real-packet switch on real interfaces: client and server namespaces joined through
`innet switch run --program forward` (python/innet/netns.py). Needs root; without it every
test FAILS saying so (never a silent skip).

Checks: nothing passes without the switch; ping and a byte-exact multi-MB TCP transfer pass with
it (host ends keep checksum offload and TSO, so the runtime's PACKET_VNET_HDR handling is
exercised), also under 1% netem loss; garbage frames injected on the wire are counted and passed
on without a crash; SIGTERM ends it cleanly with a summary.
"""

from __future__ import annotations

import json
import signal
import textwrap
import time
from pathlib import Path

import pytest

from innet import _native
from innet.netns import Topology
from netns_rig import topology_up

SERVER = textwrap.dedent("""
    import hashlib, socket, sys
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], 5001)); s.listen(1); s.settimeout(60)
    c, _ = s.accept(); c.settimeout(60); h = hashlib.sha256(); n = 0
    while True:
        b = c.recv(1 << 16)
        if not b: break
        h.update(b); n += len(b)
    print(n, h.hexdigest())
""")

CLIENT = textwrap.dedent("""
    import hashlib, random, socket, sys, time
    data = random.Random(7).randbytes(int(sys.argv[2]))
    for _ in range(100):
        try:
            c = socket.create_connection((sys.argv[1], 5001), timeout=5); break
        except OSError:
            time.sleep(0.1)
    c.settimeout(60); c.sendall(data); c.shutdown(socket.SHUT_WR); c.recv(1); c.close()
    print(len(data), hashlib.sha256(data).hexdigest())
""")


@pytest.fixture
def topo(request):
    netem = getattr(request, "param", None)
    with topology_up(f"rt{abs(hash(request.node.name)) % 10000}", "the real switch",
                     client_netem=netem, server_netem=netem) as t:
        yield t


def ping(t: Topology, count: int = 5) -> bool:
    r = t.exec(t.client, ["ping", "-c", str(count), "-i", "0.1", "-W", "1", "-q", t.server_ip], check=False)
    return r.returncode == 0


def summary(t: Topology, tmp: Path) -> tuple[int | None, str, dict]:
    code, log = t.stop_switch(signal.SIGTERM)
    js = json.loads((tmp / "stats.json").read_text()) if (tmp / "stats.json").exists() else {}
    return code, log, js


def transfer(t: Topology, nbytes: int) -> tuple[str, str]:
    import subprocess
    srv = t.popen(t.server, ["python3", "-c", SERVER, t.server_ip], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        cli = t.exec(t.client, ["python3", "-c", CLIENT, t.server_ip, str(nbytes)], timeout=120)
        out, err = srv.communicate(timeout=120)
    finally:
        if srv.poll() is None:
            srv.kill()
    assert srv.returncode == 0, err.decode()
    return cli.stdout.decode().strip(), out.decode().strip()


def test_nothing_passes_without_the_switch_and_ping_passes_with_it(topo, tmp_path):
    assert not ping(topo, 2), "frames crossed the switch namespace with no switch running"
    # The failed ARP leaves a FAILED neighbour entry the kernel would honour for a while.
    topo.exec(topo.client, ["ip", "neigh", "flush", "all"])
    topo.start_switch(extra=["--stats-json", str(tmp_path / "stats.json")])
    assert ping(topo, 5)
    code, log, js = summary(topo, tmp_path)
    assert code == 0, log
    assert js["total"]["rx_frames"] >= 10  # 5 requests + 5 replies (plus ARP)
    assert js["ports"][0]["passed_raw"] >= 1, "ARP must pass raw"


def test_tcp_transfer_is_byte_exact(topo, tmp_path):
    topo.start_switch(extra=["--stats-json", str(tmp_path / "stats.json")])
    sent, got = transfer(topo, 4 << 20)
    assert sent == got
    code, log, js = summary(topo, tmp_path)
    assert code == 0, log
    # Host ends keep offloads on: the runtime had to finish checksums and/or cut GSO frames.
    assert js["checksums_completed"] + js["gso_segments"] > 0, js
    assert js["total"]["malformed"] == 0 and js["total"]["tx_errors"] == 0, js


def test_tcp_transfer_is_byte_exact_under_loss_reordering_and_duplication(topo, tmp_path):
    # This kernel has no sch_netem, so the loss/reordering is the switch's own link impairment
    # (--loss/--reorder/--duplicate on its transmit side); Topology(client_netem=...) uses netem where it exists.
    # The program also recirculates every packet twice and runs a 1 ms timer: the externs on
    # real traffic.
    topo.start_switch(sets={"recirculations": "2", "timer_us": "1000"},
                      extra=["--stats-json", str(tmp_path / "stats.json"), "--loss", "0.01", "--reorder", "0.01",
                             "--duplicate", "0.01"])
    sent, got = transfer(topo, 3 << 20)
    assert sent == got
    code, log, js = summary(topo, tmp_path)
    assert code == 0, log
    assert js["impair_dropped"] > 10 and js["impair_reordered"] > 10 and js["impair_duplicated"] > 10, js
    forwarded = int(js["program_report"]["forwarded"])
    assert js["recirculations"] == 2 * forwarded and js["ingress_passes"] == 3 * forwarded, js
    assert js["timers_fired"] >= 10, js  # one per ms from the first packet to SIGTERM


INJECT = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind((sys.argv[1], 0))
    frames = [bytes.fromhex(line) for line in sys.stdin.read().split()] * int(sys.argv[2])
    for f in frames:
        s.send(f)
    print(len(frames))
""")


def garbage_frames() -> list[bytes]:
    """Frames the parser must refuse (the IPv4 ones built in Rust, header checksums right, so
    each fails where it says), broadcast from 02:00:00:00:00:01."""
    dst, src = bytes.fromhex("ffffffffffff"), bytes.fromhex("020000000001")

    def ip(proto: int, body: bytes) -> bytes:
        return dst + _native.ipv4_frame("10.77.0.1", "10.77.0.2", proto, body, dont_fragment=False)[6:]

    return [
        ip(6, bytes(380))[:14 + 20],                          # truncated IPv4 (total 400, header only)
        ip(6, bytes(12) + b"\xf0" + bytes(7)),                # TCP data offset 60 > 20
        ip(6, bytes(12) + b"\x10" + bytes(7)),                # TCP data offset 4 < 20
        dst + src + b"\x08\x00" + b"\x45" + bytes(30),         # bad IPv4 checksum/length
        dst + src + b"\x88\xb5" + b"local experimental ethertype",  # non-IP ethertype
        dst + src + b"\x86\xdd" + bytes(40),                   # IPv6-typed garbage
        dst + src + b"\x08\x00",                               # header only
    ]


def test_garbage_frames_are_counted_and_passed_without_a_crash(topo, tmp_path):
    topo.start_switch(extra=["--stats-json", str(tmp_path / "stats.json")])
    r = topo.exec(topo.client, ["python3", "-c", INJECT, topo.client_if, "20"],
                  input="\n".join(f.hex() for f in garbage_frames()).encode())
    sent = int(r.stdout.decode())
    time.sleep(0.5)
    assert topo.switch.poll() is None, "switch died on garbage"
    assert ping(topo, 3), "switch stopped forwarding after garbage"
    code, log, js = summary(topo, tmp_path)
    assert code == 0, log
    p0 = js["ports"][0]
    assert p0["malformed"] >= 5 * 20, js
    assert p0["passed_raw"] >= 2 * 20, js
    # Garbage is forwarded untouched to the other port, not dropped.
    assert js["ports"][1]["tx_frames"] >= sent, js


def test_sigterm_and_sigint_give_a_clean_exit_with_a_summary(topo, tmp_path):
    for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")):
        topo.start_switch(extra=["--stats-json", str(tmp_path / "stats.json")])
        assert ping(topo, 2)
        t0 = time.time()
        code, log = topo.stop_switch(sig)
        assert code == 0, log
        assert time.time() - t0 < 3
        assert f"stopped by {name}" in log, log
        assert "rx_frames" in log and "total" in log, log
        assert json.loads((tmp_path / "stats.json").read_text())["stopped_by"] == name


def test_bad_interface_is_a_clear_error(topo):
    import subprocess
    from innet.netns import innet_command, innet_env
    r = subprocess.run(["ip", "netns", "exec", topo.sw, *innet_command(), "switch", "run", "--program", "forward",
                        "--port", "p0", "--port", "nosuchif"], capture_output=True, text=True, env=innet_env(), timeout=30)
    assert r.returncode == 2
    assert "nosuchif" in r.stderr and "no such interface" in r.stderr, r.stderr
