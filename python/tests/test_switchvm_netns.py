"""SwitchVM on real interfaces: `innet switch run --program switchvm` between a client and a
server namespace (python/innet/netns.py). Tenants send Geneve (UDP 6081) datagrams whose VNI is
the tenant and whose SwitchVM options carry the private counter's invocation and stack (the
frames built and parsed in Rust: `_native.geneve`, `_native.parse_geneve`); the server reads back
what the switch pushed. Needs root; without it the test FAILS saying so.

Checks: in-packet code and the tenant's default (in-switch) DPF both run on real frames; two
tenants using the same virtual address count separately (isolation); an unauthorized tenant's
code is dropped and counted, never run; frames without SwitchVM options and plain traffic pass
untouched; the switch's counters agree with what the server received.
"""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from innet import _native
from netns_rig import topology_up

COUNTER = (Path(__file__).resolve().parents[2] / "crates/switchvm/dpfs/counter.dpf").read_text()

RECEIVER = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((sys.argv[1], 6081)); s.settimeout(float(sys.argv[2]))
    print('ready', flush=True)
    try:
        while True:
            print(s.recv(4096).hex(), flush=True)
    except socket.timeout:
        pass
""")

SENDER = textwrap.dedent("""
    import socket, sys, time
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for line in sys.stdin.read().split():
        s.sendto(bytes.fromhex(line), (sys.argv[1], 6081))
        time.sleep(0.002)
""")


@pytest.fixture
def topo(request):
    with topology_up(f"sv{abs(hash(request.node.name)) % 10000}", "SwitchVM on real packets",
                     subnet="10.78.0") as t:
        yield t


def test_switchvm_runs_tenants_dpfs_on_real_frames_and_keeps_them_apart(topo, tmp_path):
    stats = tmp_path / "stats.json"
    topo.start_switch("switchvm", sets={"tenants": "7,8", "deploy": "counter", "default_dpf": "counter"},
                      extra=["--stats-json", str(stats)])
    in_packet = _native.switchvm_options(COUNTER, stack=[3])        # code travels in the packet
    by_default = _native.switchvm_options(None, stack=[3])          # no code, no init_pc: tenant default
    frames = []
    frames += [_native.geneve(7, in_packet, b"t7-%02d" % i) for i in range(20)]
    frames += [_native.geneve(8, by_default, b"t8-%02d" % i) for i in range(10)]
    frames += [_native.geneve(9, in_packet, b"t9-%02d" % i) for i in range(5)]   # not authorized
    frames += [_native.geneve(9, b"", b"plain-%d" % i) for i in range(3)]         # no SwitchVM options: not invoked

    rx = topo.popen(topo.server, ["python3", "-c", RECEIVER, topo.server_ip, "3"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert rx.stdout.readline().strip() == "ready"
    topo.exec(topo.client, ["python3", "-c", SENDER, topo.server_ip],
              input="\n".join(f.hex() for f in frames).encode(), timeout=60)
    out, err = rx.communicate(timeout=30)
    got = [bytes.fromhex(line) for line in out.split()]

    sent_inner = {_native.parse_geneve(f)[2] for f in frames}
    by_tenant: dict[int, list[tuple[bytes, list[int]]]] = {}
    for d in got:
        vni, opts, inner = _native.parse_geneve(d)
        stack = _native.switchvm_stack(opts) if opts else None
        by_tenant.setdefault(vni, []).append((inner, stack))
        # The inner frame is carried untouched.
        assert inner in sent_inner, inner

    t7 = [s for _, s in by_tenant.get(7, [])]
    t8 = [s for _, s in by_tenant.get(8, [])]
    t9 = by_tenant.get(9, [])
    # The counter pushes (id, new count): tenant 7 counts 1..20, tenant 8 — same virtual
    # address 3 — counts 1..10 in its own memory.
    assert sorted(t7) == [[3, k] for k in range(1, 21)], t7
    assert sorted(t8) == [[3, k] for k in range(1, 11)], t8
    # Tenant 9 is not authorized: its code is dropped, never run; its frames without SwitchVM
    # options are not invocations and pass untouched.
    assert len(t9) == 3 and all(s is None for _, s in t9), t9
    # The in-packet code still rides in tenant 7's packets (no DROP_CODE in the counter).
    assert all(len(_native.parse_geneve(d)[1]) > 200 for d in got if _native.parse_geneve(d)[0] == 7 and _native.parse_geneve(d)[1])

    code, log = topo.stop_switch(signal.SIGTERM)
    assert code == 0, log
    rep = json.loads(stats.read_text())["program_report"]
    assert int(rep["executed"]) == 30, rep
    assert int(rep["violations"]) == 5, rep
    assert int(rep["malformed"]) == 0, rep
    assert int(rep["not_invoked"]) == 3, rep


def test_switchvm_bad_settings_are_clear_errors(topo):
    from innet.netns import innet_command, innet_env
    r = subprocess.run(["ip", "netns", "exec", topo.sw, *innet_command(), "switch", "run", "--program", "switchvm",
                        "--port", topo.ports[0], "--port", topo.ports[1], "--set", "deploy=nope"],
                       capture_output=True, text=True, timeout=60, env=innet_env())
    assert r.returncode != 0
    assert "no shipped DPF `nope`" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
