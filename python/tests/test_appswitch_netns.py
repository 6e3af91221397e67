"""The application switch against the real things: client, switch and server network namespaces
(python/innet/netns.py), a real Redis (scripts/redis.sh), a real memcached (scripts/memcached.sh) and a real Cassandra 5.0 from Maven
Central jars (scripts/cassandra.sh) in the server namespace, `innet switch run --program
appswitch` on the switch's ports, and the real drivers (redis-py, pymemcache, cassandra-driver) in the
client namespace (python/innet/appswitch/workload.py). Every answer must equal what the server
holds for that key at that moment, including across writes and under 1% loss and 1% reordering
(the switch's --loss/--reorder: this kernel has no tc netem);
hits must happen (the switch answers), no connection may be reset; garbage and non-KV traffic
pass through. Needs root: without it the tests FAIL saying so.

Sizes: INNET_APPSWITCH_OPS (default 10000 mixed operations per run; CI can lower it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from innet.netns import REPO, Topology
from netns_rig import program_counter, stop_switch_stats, topology_up

OPS = int(os.environ.get("INNET_APPSWITCH_OPS", "10000"))


def topology(name: str, **rig):
    return topology_up(f"as{abs(hash(name)) % 10000}", "the application switch", **rig)


def workload(t: Topology, args: list[str], timeout: float = 900) -> dict:
    r = t.exec(t.client, [sys.executable, "-m", "innet.appswitch.workload", *args], check=False, timeout=timeout)
    if r.returncode not in (0, 1):
        raise AssertionError(f"workload failed ({r.returncode}): {r.stderr.decode(errors='replace')[-3000:]}")
    return json.loads(r.stdout)


# Loss and reordering: this kernel has no sch_netem, so the switch's own link impairment
# (`--loss`/`--reorder` on its transmit side, both directions, the switch's answers included).
IMPAIR = ["--loss", "0.01", "--reorder", "0.01"]


def server_holds_redis(t: Topology, model: dict) -> None:
    """The server holds what the model says (read directly in the server namespace)."""
    for k, v in list(model.items())[:50]:
        got = t.exec(t.server, ["redis-cli", "-h", t.server_ip, "--raw", "get", k]).stdout.decode().rstrip("\n")
        assert got == (v or ""), (k, got, v)


def server_holds_memcached(t: Topology, model: dict) -> None:
    """The server holds what the model says (a plain socket in the server namespace)."""
    keys = list(model)[:50]
    script = ("import socket,sys\ns=socket.create_connection((sys.argv[1],11211),10)\n"
              "s.sendall(''.join(f'get {k}\\r\\n' for k in sys.argv[2:]).encode())\nb=b''\n"
              "while b.count(b'END\\r\\n')<len(sys.argv)-2: b+=s.recv(65536)\nsys.stdout.buffer.write(b)")
    raw = t.exec(t.server, [sys.executable, "-c", script, t.server_ip, *keys]).stdout
    for k, block in zip(keys, raw.split(b"END\r\n")):
        got = block.split(b"\r\n")[1].decode() if block.startswith(b"VALUE ") else None
        assert got == model[k], (k, got, model[k])


# Server script, port, and the check of what the server holds; the switch protocol and the
# workload kind are the server's name.
KV_SERVERS = {
    "redis": (6379, server_holds_redis),
    "memcached": (11211, server_holds_memcached),
}


@pytest.mark.parametrize("impair", [[], IMPAIR], ids=["clean", "loss1pct"])
@pytest.mark.parametrize("server", list(KV_SERVERS))
def test_kv_server_through_appswitch(server, impair, tmp_path):
    port, server_holds = KV_SERVERS[server]
    with topology(f"{server}-{impair}", kv=((server, port),)) as t:
        stats = tmp_path / "stats.json"
        t.start_switch("appswitch", {"protocol": server, "cache_entries": "32"},
                       extra=["--stats-json", str(stats), *impair])
        out = workload(t, [server, "--host", t.server_ip, "--port", str(port), "--ops", str(OPS), "--keys", "50",
                           "--conns", "3"])
        assert out["errors"] == 0, out["wrong"]
        assert out["wrong_count"] == 0, out["wrong"]
        assert all(n > 0 for n in out["counts"].values()), out["counts"]
        server_holds(t, out["model"])
        s = stop_switch_stats(t, stats)
        print(json.dumps({"server": server, "impair": impair, "counts": out["counts"], "elapsed_s": out["elapsed_s"],
                          "switch": s.get("program_report")}))
        assert program_counter(s, "hits") > OPS // 10, s
        assert program_counter(s, "misses") > 0, s
        assert program_counter(s, "protocol_errors") == 0, s


GARBAGE = textwrap.dedent("""
    import socket, sys
    # Not CQL at all, on the CQL port: the server closes it; the switch must pass it through.
    s = socket.create_connection((sys.argv[1], 9042), timeout=10)
    s.sendall(b"\\x00\\xffGET / HTTP/1.1\\r\\n\\r\\n" * 3)
    try:
        s.recv(100)
    except OSError:
        pass
    s.close()
    # A truncated frame header, then close.
    s = socket.create_connection((sys.argv[1], 9042), timeout=10)
    s.sendall(b"\\x05\\x00\\x00")
    s.close()
    print("ok")
""")


# Unprepared SELECTs only, on a table no statement was ever prepared for: the switch can cache
# them only if it learned the table's partition key from the driver's system_schema.columns reads.
LITERAL = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[3])
    from innet.appswitch.workload import cql_session
    cluster, s = cql_session(sys.argv[1], int(sys.argv[2]))
    s.execute("CREATE KEYSPACE IF NOT EXISTS lit WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE IF NOT EXISTS lit.kv (k text PRIMARY KEY, v text)")
    cluster.shutdown()
    # A new session reads the schema (now with lit.kv) at connect, through the switch.
    cluster, s = cql_session(sys.argv[1], int(sys.argv[2]))
    s.execute("INSERT INTO lit.kv (k, v) VALUES ('a', 'one')")
    got = [s.execute("SELECT v FROM lit.kv WHERE k = 'a'").one().v for _ in range(6)]
    assert got == ["one"] * 6, got
    s.execute("UPDATE lit.kv SET v = 'two' WHERE k = 'a'")
    got = [s.execute("SELECT v FROM lit.kv WHERE k = 'a'").one().v for _ in range(3)]
    assert got == ["two"] * 3, got
    cluster.shutdown()
    print("ok")
""")


@pytest.mark.parametrize("impair,protocol", [([], 5), ([], 4), (IMPAIR, 5)], ids=["v5", "v4", "v5-loss1pct"])
def test_cassandra_through_appswitch(cassandra_cache, impair, protocol, tmp_path):
    with topology(f"cql-{impair}-{protocol}", cassandra=True) as t:
        stats = tmp_path / "stats.json"
        t.start_switch("appswitch", {"protocol": "cql", "cache_entries": "64"}, extra=["--stats-json", str(stats), *impair])
        g = t.exec(t.client, [sys.executable, "-c", GARBAGE, t.server_ip], check=False, timeout=60)
        assert g.returncode == 0, g.stderr
        if not impair and protocol == 4:
            lit = t.exec(t.client, [sys.executable, "-c", LITERAL, t.server_ip, str(protocol), str(REPO / "python")],
                         check=False, timeout=180)
            assert lit.returncode == 0, lit.stderr.decode(errors="replace")[-3000:]
            s = stop_switch_stats(t, stats)
            # 6 + 3 literal reads, each value answered by the server once: at least 7 hits.
            assert program_counter(s, "hits") >= 7, s.get("program_report")
            t.start_switch("appswitch", {"protocol": "cql", "cache_entries": "64"}, extra=["--stats-json", str(stats)])
        ops = OPS if impair else max(OPS // 3, 1000)
        out = workload(t, ["cql", "--host", t.server_ip, "--ops", str(ops), "--keys", "40", "--protocol", str(protocol)])
        assert out["protocol_version"] == protocol
        assert out["errors"] == 0, out["wrong"]
        assert out["wrong_count"] == 0, out["wrong"]
        s = stop_switch_stats(t, stats)
        # What the server holds, read without the switch in the path (a plain forwarder).
        t.start_switch("forward")
        held = workload(t, ["cql-read-model", "--host", t.server_ip, "--keys", "40", "--protocol", str(protocol)])
        assert held == out["model"]
        assert program_counter(s, "hits") > ops // 10, s
        assert program_counter(s, "learned") > 0, s
        assert program_counter(s, "protocol_errors") <= 1, s  # the garbage connection


def test_turnaround_quick_direction(cassandra_cache):
    """appswitch.turnaround --quick (Fig. 12): the mechanism behind the figure's direction — the
    switch answers the hits itself (its hit counter equals the LRU replay, checked inside the
    experiment; every hit's request and reply bytes are kept from the server: α and β grow by
    them), every other read goes to the server, nothing breaks. No wall-time assertion: on this
    shared 2-core machine load flipped one (2 failures in 4 runs); the timing direction is
    measured by bench/appswitch_figs.py with interleaved repeats and confidence intervals."""
    from innet import api

    r = api.run("appswitch.turnaround", quick=True)
    s = {k: int(v) for k, v in r.summary["switch"].items()}
    q = r.summary["queries"]
    hits = round(r.summary["hit_ratio"] * q)
    assert 0.2 < r.summary["hit_ratio"] < 0.9, r.summary
    assert s["hits"] == hits and s["misses"] == q - hits, s
    assert s["learned"] >= 1 and s["learned"] <= s["misses"], s
    # Each hit's request (an EXECUTE of ≥ 9 + 2 + 16 bytes) never reached the server, its reply
    # (a RESULT Rows) never came from it.
    assert s["migrated_request_bytes"] >= 27 * hits and s["migrated_reply_bytes"] >= 9 * hits, s
    assert s["protocol_errors"] == 0, s
    m, med = r.summary["turnaround_mean_us"], r.summary["turnaround_median_us"]
    assert all(v is not None and v > 0 for v in (*m.values(), *med.values())), (m, med)
    # Two rounds (the quick form), normal first in round 0 and cached first in round 1; the same
    # query sequence in every pass, each class's change per round, and the median between.
    smp = r.tables["samples"]
    assert r.summary["rounds"] == 2 and len(smp) == 4 * r.summary["queries"], len(smp)
    firsts = smp.groupby("round", sort=True)["mode"].first().tolist()
    assert firsts == ["normal", "appswitch"], firsts
    per_pass = smp.groupby(["round", "mode"])["key"].apply(list)
    assert all(keys == per_pass.iloc[0] for keys in per_pass), "passes sent different queries"
    for c in ("all", "hit", "miss"):
        rounds, (lo, hi) = r.summary["vs_normal_rounds"][c], r.summary["vs_normal_ci95"][c]
        assert len(rounds) == 2 and lo <= r.summary["vs_normal"][c] <= hi, (c, rounds, lo, hi)
    # Every paper number the report sets beside Fig. 12 names a metric this summary has.
    from innet import reproduce

    fig = next(f for f in reproduce.load_papers()["appswitch"].figures if f.experiment == "appswitch.turnaround")
    for n in fig.paper_numbers:
        v = r.summary
        for part in n["metric"].split("."):
            assert isinstance(v, dict) and part in v, (n["metric"], sorted(r.summary))
            v = v[part]
        assert isinstance(v, (int, float)), (n["metric"], v)


def test_cachesize_quick_hit_ratio_grows(cassandra_cache):
    """appswitch.cachesize --quick (Fig. 15): the hit ratio grows with the cache size."""
    from innet import api

    r = api.run("appswitch.cachesize", quick=True)
    ratios = [pt["hit_ratio"] for pt in r.summary["points"]]
    assert ratios == sorted(ratios) and ratios[0] < ratios[-1], r.summary["points"]
    assert all(pt["appswitch_median_us"] is not None for pt in r.summary["points"])


def test_the_rig_takes_everything_down_when_the_block_fails():
    """innet.netns.rig, the one bring-up and tear-down (experiments, benches, these tests): a
    block that raises still stops the servers it started, removes their files and deletes the
    namespaces."""
    with pytest.raises(RuntimeError, match="planted"):
        with topology("rig-teardown", kv=(("redis", 6379),)) as t:
            (script, sdir), = t.servers_started
            assert script == "scripts/redis.sh" and sdir.parent == t.workdir()
            pid = int((sdir / "redis.pid").read_text())
            os.kill(pid, 0)  # running
            namespaces = t.namespaces()
            raise RuntimeError("planted")
    assert not sdir.parent.exists(), "the rig's files outlived it"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    assert not [ns for ns in namespaces if ns in listed], listed
