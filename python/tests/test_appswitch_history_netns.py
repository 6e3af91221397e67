"""The history check's short form (issue 36; python/innet/appswitch/history.py): a randomized
concurrent workload through the real switch against real Cassandra 5 — several client processes
over protocols v4 and v5, LZ4 / Snappy / no compression, literal and prepared reads, writes with
and without TTL (literal and prepared with the TTL bound), deletes, BATCHes — while the switch is
SIGKILLed and restarted, paused with SIGSTOP, SIGTERMed and restarted, and its links throttled
(tbf: delay and tail-drop loss) for 3 s, with 1 % loss and 1 % reordering on its links throughout
(the switch's own impairment: this kernel has no sch_netem). Every read
is checked against what a single Cassandra node could have returned in its window (TTL expiry
included) and no operation may wait beyond a fault window. The same for Redis and memcached (their expiry times included: `SET ... EX`, exptime), on raw
connections, for half as long. The long form: bench/appswitch_history.py.

Needs root (namespaces); fails, never skips, without it. One Cassandra for the module.
"""

from __future__ import annotations

import json
import os

import pytest

from innet.appswitch.history import run_history
from netns_rig import all_servers

DURATION = float(os.environ.get("INNET_HISTORY_S", "40"))


@pytest.fixture(scope="module")
def rig(cassandra_cache):
    with all_servers(f"ah{abs(hash('history')) % 10000}", "the application switch") as t:
        yield t


KINDS = {
    "cql": ("read:literal:ok", "read:prepared:ok", "write:ttl:ok", "write:delete:ok", "write:batch:ok"),
    "redis": ("read:get:ok", "write:set:ok", "write:set-ttl:ok", "write:delete:ok"),
    "memcached": ("read:get:ok", "write:set:ok", "write:set-ttl:ok", "write:delete:ok"),
}


@pytest.mark.parametrize("protocol,port,duration", [("cql", 9042, DURATION), ("redis", 6379, DURATION / 2),
                                                    ("memcached", 11211, DURATION / 2)],
                         ids=["cql", "redis", "memcached"])
def test_history_under_process_and_link_faults_has_no_impossible_read(rig, protocol, port, duration, tmp_path):
    out = run_history(rig, duration, keys=8, clients=4, seed=7, impair=["--loss", "0.01", "--reorder", "0.01", "--duplicate", "0.01"],
                      state_file=str(tmp_path / "appswitch.state"), stats_dir=tmp_path, protocol=protocol,
                      port=port)
    brief = {k: v for k, v in out.items() if k not in ("impossible_all", "hangs_all", "records", "server_clock")}
    print(json.dumps(brief))
    assert [f["kind"] for f in out["faults"]] == ["sigkill", "sigstop", "sigterm", "throttle"], out["faults"]
    assert out["reads_checked"] > 100, brief
    assert out["impossible"] == 0, out["impossible_all"][:10]
    assert out["hangs"] == 0, out["hangs_all"][:10]
    # The switch answered reads from its cache in the run (a switch that never caches would
    # pass the check trivially), and each kind of operation happened.
    assert sum(int(s["hits"]) for s in out["switch_stats"] if s) > 0, out["switch_stats"]
    for kind in KINDS[protocol]:
        assert out["counts"].get(kind, 0) > 0, out["counts"]
    imp = out["impairment"]  # the link faults happened (SIGKILLed instances keep no stats)
    assert imp["impair_dropped"] > 0 and imp["impair_reordered"] > 0 and imp["impair_duplicated"] > 0, imp
    if protocol == "memcached":  # its expiry clock was sampled through the run (`ServerClock`)
        assert len(out["server_clock"]) > duration, len(out["server_clock"])
