"""What a CQL read means, through the application switch and the real Cassandra (issue 23, cases
1-8): default TTLs, TTL writes whose keys the switch cannot tell, materialized views, typed keys
spelled differently, time-dependent selectors, bound values outside the key, consistency levels,
comments. Client, switch and server namespaces (python/innet/netns.py), Cassandra 5.0 in the
server namespace (scripts/cassandra.sh), `innet switch run --program appswitch` between, the
scenarios of python/innet/appswitch/semantics.py in the client namespace, and a second driver
connection opened inside the server's namespace as the truth: every read through the switch must
equal what Cassandra answers just before or just after it. Then a random differential run.
Needs root: without it the tests FAIL saying so.

Sizes: INNET_APPSWITCH_SEM_OPS (operations of the random run, default 400).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from innet.appswitch.semantics import CASES
from innet.netns import Topology
from netns_rig import topology_up

OPS = int(os.environ.get("INNET_APPSWITCH_SEM_OPS", "400"))


@pytest.fixture(scope="module")
def env(cassandra_cache, tmp_path_factory):
    sock = str(tmp_path_factory.mktemp("truth") / "truth.sock")
    stats = tmp_path_factory.mktemp("switch") / "stats.json"
    with topology_up(f"sem{os.getpid() % 10000}", "the application switch", cassandra=True) as t:
        t.start_switch("appswitch", {"protocol": "cql", "cache_entries": "256"}, extra=["--stats-json", str(stats)])
        truth = t.popen(t.server, [sys.executable, "-m", "innet.appswitch.semantics", "truth", "--host", t.server_ip,
                                   "--socket", sock], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert truth.stdout.readline().strip() == b"ready", truth.stderr.read().decode()[-2000:]
            yield t, sock, stats
        finally:
            truth.kill()
            truth.wait()


def client(t: Topology, sock: str, args: list[str], timeout: float = 600) -> dict:
    r = t.exec(t.client, [sys.executable, "-m", "innet.appswitch.semantics", *args, "--host", t.server_ip,
                          "--socket", sock], check=False, timeout=timeout)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
    return json.loads(r.stdout)


@pytest.mark.parametrize("case", list(CASES))
def test_statement_case_matches_the_truth(env, case):
    t, sock, _ = env
    out = client(t, sock, ["cases", "--case", case])[case]
    print(json.dumps({"case": case, "reads": out["reads"], "rejected_writes": out["rejected_writes"]}))
    assert out["reads"] > 0
    assert out["wrong"] == [], json.dumps(out["wrong"], indent=1)[:6000]


def test_random_reads_and_writes_match_the_truth(env):
    t, sock, stats = env
    t0 = time.time()
    out = client(t, sock, ["random", "--ops", str(OPS), "--seed", "23"], timeout=900)
    code, log = t.stop_switch()
    assert code == 0, log[-3000:]
    rep = json.loads(stats.read_text()).get("program_report") or {}
    rep = dict(rep) if isinstance(rep, list) else rep
    print(json.dumps({"reads": out["reads"], "counts": out["counts"], "elapsed_s": round(time.time() - t0, 1),
                      "switch": rep}))
    assert out["wrong"] == [], json.dumps(out["wrong"], indent=1)[:6000]
    assert out["reads"] > OPS // 3
    # The switch did answer reads (a switch that caches nothing passes the comparisons).
    assert int(rep["hits"]) > OPS // 20, rep
