"""The real-packet rig every netns test shares: a client / switch / server topology of network
namespaces (python/innet/netns.py) and the real servers started in it through the project's
scripts (scripts/cassandra.sh, redis.sh, memcached.sh). A rig that cannot be built FAILS the test
saying why (needs root); it never skips. The session-wide Cassandra download is the
`cassandra_cache` fixture in conftest.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from innet.netns import REPO, NetnsUnavailable, Topology


def topology(tag: str, what: str, **kwargs) -> Topology:
    """A topology that is up (`tag` names its namespaces; `what` says what cannot be tested
    without it), or the test fails."""
    t = Topology(tag=tag, **kwargs)
    try:
        t.up()
    except NetnsUnavailable as e:
        pytest.fail(f"cannot build network namespaces, so {what} cannot be tested: {e}")
    return t


@contextmanager
def topology_up(tag: str, what: str, **kwargs) -> Iterator[Topology]:
    """`topology`, taken down (with its switch) when the block ends."""
    t = topology(tag, what, **kwargs)
    try:
        yield t
    finally:
        t.down()


def fetch_cassandra() -> None:
    """scripts/cassandra.sh fetch: the jars from Maven Central, once per machine."""
    r = subprocess.run([str(REPO / "scripts/cassandra.sh"), "fetch"], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr


@contextmanager
def cassandra(t: Topology, auth: bool = False) -> Iterator[Path]:
    """A real Cassandra in `t`'s server namespace (scripts/cassandra.sh start / stop), in a fresh
    directory removed afterwards; `auth`: with authentication and authorization on
    (INNET_CASSANDRA_AUTH=1, superuser cassandra/cassandra)."""
    cdir = Path(tempfile.mkdtemp(prefix="innet-cassandra-"))
    try:
        r = subprocess.run([str(REPO / "scripts/cassandra.sh"), "start", str(cdir), t.server_ip, t.server],
                           capture_output=True, text=True, timeout=400,
                           env={**os.environ, "INNET_CASSANDRA_AUTH": "1" if auth else "0"})
        assert r.returncode == 0, r.stderr
        yield cdir
    finally:
        subprocess.run([str(REPO / "scripts/cassandra.sh"), "stop", str(cdir)], capture_output=True, timeout=120)
        shutil.rmtree(cdir, ignore_errors=True)


@contextmanager
def kv_server(t: Topology, script: str, port: int, sdir: Path) -> Iterator[None]:
    """A real key-value server (`script`: scripts/redis.sh or scripts/memcached.sh) on `port` in
    `t`'s server namespace, its files in `sdir`."""
    try:
        subprocess.run([str(REPO / script), "start", str(sdir), t.server_ip, str(port), t.server],
                       check=True, capture_output=True, timeout=60)
        yield
    finally:
        subprocess.run([str(REPO / script), "stop", str(sdir)], capture_output=True, timeout=60)


@contextmanager
def all_servers(tag: str, what: str, sdir: Path) -> Iterator[Topology]:
    """`topology_up` with a real Cassandra, Redis (port 6379) and memcached (port 11211) in its
    server namespace (their files under `sdir`)."""
    with topology_up(tag, what) as t, cassandra(t), kv_server(t, "scripts/redis.sh", 6379, sdir / "redis"), \
            kv_server(t, "scripts/memcached.sh", 11211, sdir / "memcached"):
        yield t


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
