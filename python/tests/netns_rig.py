"""The real-packet rig every netns test shares: innet.netns.rig (the one bring-up and tear-down the
experiments and benches use too), a client / switch / server topology of network namespaces with
the real servers started in it through the project's scripts (scripts/cassandra.sh, redis.sh,
memcached.sh). A rig that cannot be built FAILS the test saying why (needs root); it never skips. The session-wide Cassandra download is the
`cassandra_cache` fixture in conftest.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from innet.netns import REPO, NetnsUnavailable, Topology
from innet.netns import rig as netns_rig


def topology_up(tag: str, what: str, **rig):
    """innet.netns.rig: the topology up (`tag` names its namespaces) with the servers `rig` asks for
    (``cassandra=True``, ``auth=True``, ``kv=(("redis", 6379), ...)``, and the Topology's own
    fields), all of it gone when the block ends; without namespaces the test FAILS saying `what`
    cannot be tested."""

    def unavailable(e: NetnsUnavailable) -> BaseException:
        pytest.fail(f"cannot build network namespaces, so {what} cannot be tested: {e}")

    return netns_rig(tag, unavailable, **rig)


def fetch_cassandra() -> None:
    """scripts/cassandra.sh fetch: the jars from Maven Central, once per machine."""
    r = subprocess.run([str(REPO / "scripts/cassandra.sh"), "fetch"], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr


def all_servers(tag: str, what: str):
    """`topology_up` with a real Cassandra, Redis (port 6379) and memcached (port 11211) in its
    server namespace."""
    return topology_up(tag, what, cassandra=True, kv=(("redis", 6379), ("memcached", 11211)))


def stop_switch_stats(t: Topology, stats: Path) -> dict:
    """Stop the switch (it must exit cleanly) and return its `--stats-json`."""
    code, log = t.stop_switch()
    assert code == 0, f"switch exit {code}:\n{log[-3000:]}"
    return json.loads(stats.read_text())


def program_counter(stats: dict, name: str) -> int:
    """One counter of the program's report (`--stats-json` carries it as a dict of strings)."""
    rep = stats.get("program_report") or {}
    if isinstance(rep, list):
        rep = dict(rep)
    return int(rep[name])
