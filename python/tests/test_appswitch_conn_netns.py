"""The application switch's connection-level cases against a real Cassandra 5 (scripts/cassandra.sh)
in the server namespace, the real cassandra-driver in the client namespace and the real switch
(`innet switch run --program appswitch`) between them (python/innet/netns.py). The truth is a
driver connection opened inside the server's namespace, which does not pass the switch.

- Compressed connections (LZ4 in v4 and v5, Snappy in v4, as the driver negotiates them when
  the lz4 / python-snappy packages are installed) are parsed and cached: every answer equals the
  exact model, the server ends holding the model, and the switch answers hits with no protocol
  error.
- A switch restart: connections that had hits (α/β now lost) are closed cleanly, so the client's
  next request fails at once instead of hanging, a write on such an unseen connection never
  passes unseen while another connection reads through the cache, and the client reconnects and
  is served correctly.
- `max_age_ms`: a write that bypasses the switch is seen by reads through it once the cached
  answer is older than the bound (and, without it, is not: the design's stated limit).

Needs root (namespaces); fails, never skips, without it. One Cassandra for the module (~1 GB heap).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from innet.netns import REPO, Topology
from netns_rig import program_counter, stop_switch_stats, topology_up


@pytest.fixture(scope="module")
def rig(cassandra_cache):
    with topology_up(f"ac{abs(hash('conn')) % 10000}", "the application switch", cassandra=True) as t:
        yield t


# Statements run by a driver session inside the server namespace (no switch on its path); the
# first column of each statement's first row (or None) printed as JSON.
TRUTH = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from innet.appswitch.workload import cql_session
    cluster, s = cql_session(sys.argv[1], None, "none")
    out = []
    for stmt in sys.argv[3:]:
        row = s.execute(stmt).one()
        out.append(row[0] if row is not None else None)
    cluster.shutdown()
    print(json.dumps(out))
""")


def truth(t: Topology, *statements: str) -> list:
    r = t.exec(t.server, [sys.executable, "-c", TRUTH, t.server_ip, str(REPO / "python"), *statements], timeout=120)
    return json.loads(r.stdout)


def drive(t: Topology, script: str, args: list[str], steps: list) -> dict:
    """Run `script` in the client namespace with `args` and a fresh sync directory as its last
    argument; for each (file, action) of `steps`, wait until the script
    creates `file` in it, then run `action(dir)`. Returns the JSON the script prints."""
    d = Path(tempfile.mkdtemp(prefix="innet-sync-"))
    p = t.popen(t.client, [sys.executable, "-c", script, *args, str(d)], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
    try:
        for name, action in steps:
            wait_for(d / name, p)
            action(d)
        o, e = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
        subprocess.run(["rm", "-rf", str(d)])
    assert p.returncode == 0, e.decode(errors="replace")[-3000:]
    return json.loads(o)


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"client exited ({proc.returncode}) before {path.name}: {err.decode()[-3000:]}")
        assert time.time() < deadline, f"client did not reach {path.name}"
        time.sleep(0.05)


@pytest.mark.parametrize("compression,protocol", [("lz4", 4), ("lz4", 5), ("snappy", 4)],
                         ids=["lz4-v4", "lz4-v5", "snappy-v4"])
def test_compressed_connections_are_cached(rig, compression, protocol, tmp_path):
    t = rig
    stats = tmp_path / "stats.json"
    t.start_switch("appswitch", {"protocol": "cql", "cache_entries": "64"}, extra=["--stats-json", str(stats)])
    ops = 1500
    r = t.exec(t.client, [sys.executable, "-m", "innet.appswitch.workload", "cql", "--host", t.server_ip,
                          "--ops", str(ops), "--keys", "40", "--protocol", str(protocol),
                          "--compression", compression], check=False, timeout=600)
    assert r.returncode in (0, 1), r.stderr.decode(errors="replace")[-3000:]
    out = json.loads(r.stdout)
    s = stop_switch_stats(t, stats)
    assert (out["protocol_version"], out["compression"]) == (protocol, compression), out
    assert out["errors"] == 0, out["wrong"]
    assert out["wrong_count"] == 0, out["wrong"]
    held = t.exec(t.server, [sys.executable, "-m", "innet.appswitch.workload", "cql-read-model", "--host",
                             t.server_ip, "--keys", "40"], timeout=120)
    assert json.loads(held.stdout) == out["model"]
    print(json.dumps({"compression": compression, "protocol": protocol, "switch": s.get("program_report")}))
    assert program_counter(s, "protocol_errors") == 0, s
    assert program_counter(s, "hits") > ops // 10, s
    assert program_counter(s, "learned") > 0, s


# Connection A has hits, then the switch restarts; B connects through the new switch and reads
# the key (learned, then a hit); A writes it (A is a connection the new switch never saw open);
# B reads again; A retries until its write is acknowledged; B reads the final value.
RESTART = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    from innet.appswitch.workload import cql_session
    host, protocol, d = sys.argv[1], int(sys.argv[2]), Path(sys.argv[4])
    def wait(name):
        deadline = time.time() + 300
        while not (d / name).exists():
            assert time.time() < deadline, name
            time.sleep(0.05)
    ca, a = cql_session(host, protocol)
    a.default_timeout = 10
    a.execute("CREATE KEYSPACE IF NOT EXISTS conn WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    a.execute("CREATE TABLE IF NOT EXISTS conn.kv (k int PRIMARY KEY, v text)")
    a.execute("INSERT INTO conn.kv (k, v) VALUES (1, 'v0')")
    sel_a = a.prepare("SELECT v FROM conn.kv WHERE k = ?")
    upd_a = a.prepare("UPDATE conn.kv SET v = ? WHERE k = ?")
    out = {"a_reads": [a.execute(sel_a, (1,)).one().v for _ in range(5)]}
    (d / "hits").touch()
    wait("restarted")
    cb, b = cql_session(host, protocol)
    b.default_timeout = 10
    sel_b = b.prepare("SELECT v FROM conn.kv WHERE k = ?")
    out["b_before"] = [b.execute(sel_b, (1,)).one().v for _ in range(3)]
    t0 = time.time()
    try:
        a.execute(upd_a, ("v1", 1))
        out["a_write"] = "ok"
    except Exception as e:
        out["a_write"] = repr(e)[:300]
    out["a_write_s"] = time.time() - t0
    out["b_after"] = b.execute(sel_b, (1,)).one().v
    (d / "check").touch()
    wait("checked")
    t0 = time.time()
    out["a_retry"] = None
    while time.time() - t0 < 90:
        try:
            a.execute(upd_a, ("v2", 1))
            out["a_retry"] = time.time() - t0
            break
        except Exception:
            time.sleep(0.5)
    out["b_final"] = [b.execute(sel_b, (1,)).one().v for _ in range(3)]
    out["a_final"] = a.execute(sel_a, (1,)).one().v
    ca.shutdown()
    cb.shutdown()
    print(json.dumps(out))
""")


@pytest.mark.parametrize("protocol", [4, 5])
def test_restart_closes_migrated_connections_and_unseen_writes_never_pass(rig, protocol, tmp_path):
    t = rig
    truth(t, "CREATE KEYSPACE IF NOT EXISTS conn WITH replication = "
             "{'class': 'SimpleStrategy', 'replication_factor': 1}",
          "CREATE TABLE IF NOT EXISTS conn.kv (k int PRIMARY KEY, v text)", "TRUNCATE conn.kv")
    stats1, stats2 = tmp_path / "stats1.json", tmp_path / "stats2.json"
    t.start_switch("appswitch", {"protocol": "cql"}, extra=["--stats-json", str(stats1)])
    held = {}

    def restart(d: Path) -> None:
        held["s1"] = stop_switch_stats(t, stats1)  # SIGTERM: the restart
        t.start_switch("appswitch", {"protocol": "cql"}, extra=["--stats-json", str(stats2)])
        (d / "restarted").touch()

    def check(d: Path) -> None:
        held["then"] = truth(t, "SELECT v FROM conn.kv WHERE k = 1")[0]
        (d / "checked").touch()

    out = drive(t, RESTART, [t.server_ip, str(protocol), str(REPO / "python")],
                [("hits", restart), ("check", check)])
    s1, held_then = held["s1"], held["then"]
    assert program_counter(s1, "hits") >= 3, s1.get("program_report")
    s2 = stop_switch_stats(t, stats2)
    print(json.dumps({"protocol": protocol, "client": out, "truth_at_check": held_then,
                      "switch_after_restart": s2.get("program_report")}))
    assert out["a_reads"] == ["v0"] * 5
    assert out["b_before"] == ["v0"] * 3
    # No hang: the old switch's connection is closed at once (the driver's timeout is 10 s).
    assert out["a_write_s"] < 5, out
    # An acknowledged write is applied; B (reading through the cache) sees what the server holds.
    if out["a_write"] == "ok":
        assert held_then == "v1", (out, held_then)
    assert out["b_after"] == held_then, (out, held_then)
    # The client reconnects through the switch and is served correctly again.
    assert out["a_retry"] is not None, out
    assert out["b_final"] == ["v2"] * 3 and out["a_final"] == "v2", out
    assert truth(t, "SELECT v FROM conn.kv WHERE k = 1") == ["v2"]
    assert program_counter(s2, "unseen_resets") > 0, s2.get("program_report")
    assert program_counter(s2, "hits") > 0, s2.get("program_report")


# Reads a key until it is cached, waits while the test writes it bypassing the switch, then
# reads it again after `sleep` seconds.
MAX_AGE = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from innet.appswitch.workload import cql_session
    host, sleep, d = sys.argv[1], float(sys.argv[3]), Path(sys.argv[4])
    c, s = cql_session(host, None)
    sel = s.prepare("SELECT v FROM conn.age WHERE k = ?")
    before = [s.execute(sel, (1,)).one().v for _ in range(3)]
    (d / "learned").touch()
    while not (d / "written").exists():
        time.sleep(0.05)
    # Keep the entry in use (a read every 100 ms), then read once more.
    t0 = time.time()
    while time.time() - t0 < sleep:
        s.execute(sel, (1,))
        time.sleep(0.1)
    after = s.execute(sel, (1,)).one().v
    c.shutdown()
    print(json.dumps({"before": before, "after": after}))
""")


@pytest.mark.parametrize("max_age_ms", [1000, 0], ids=["bounded", "unbounded"])
def test_max_age_bounds_how_stale_a_bypassed_write_leaves_the_cache(rig, max_age_ms, tmp_path):
    t = rig
    truth(t, "CREATE KEYSPACE IF NOT EXISTS conn WITH replication = "
             "{'class': 'SimpleStrategy', 'replication_factor': 1}",
          "CREATE TABLE IF NOT EXISTS conn.age (k int PRIMARY KEY, v text)",
          "INSERT INTO conn.age (k, v) VALUES (1, 'old')")
    stats = tmp_path / "stats.json"
    sets = {"protocol": "cql"} | ({"max_age_ms": str(max_age_ms)} if max_age_ms else {})
    t.start_switch("appswitch", sets, extra=["--stats-json", str(stats)])

    def bypassing_write(d: Path) -> None:
        truth(t, "UPDATE conn.age SET v = 'new' WHERE k = 1")
        (d / "written").touch()

    out = drive(t, MAX_AGE, [t.server_ip, str(REPO / "python"), "2.0"], [("learned", bypassing_write)])
    s = stop_switch_stats(t, stats)
    print(json.dumps({"max_age_ms": max_age_ms, "client": out, "switch": s.get("program_report")}))
    assert out["before"] == ["old"] * 3
    assert program_counter(s, "hits") >= 2, s.get("program_report")
    if max_age_ms:
        assert out["after"] == "new", out
        assert program_counter(s, "expired") > 0, s.get("program_report")
    else:
        # The stated limit without the bound: the switch never saw the write.
        assert out["after"] == "old", out
        assert program_counter(s, "expired") == 0, s.get("program_report")
