"""Issue 36: no expired TTL value after a restart of the application switch (SIGKILL or SIGTERM).

A key written with a TTL through the switch; the switch is restarted before the TTL runs out;
the new switch never saw that write and learns the row from the next read's answer. It must
not serve it from its cache once the server has expired it. The real rig: real Cassandra 5 /
Redis / memcached in the server namespace, the real switch (`innet switch run --program
appswitch`, started as every netns test starts it, with `--set state_file=...`: the switch's
durable knowledge of volatile keys, tables and prepared ids), the real drivers in the client
namespace. A read whose invocation comes after the write's acknowledgement + TTL must get
"absent" (Cassandra expires a cell at the write's `nowInSec` + TTL <= acknowledgement + TTL;
Redis and memcached likewise count from when they ran the write).

Needs root (namespaces); fails, never skips, without it. One Cassandra for the module.
"""

from __future__ import annotations

import json
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from innet.netns import REPO, Topology
from netns_rig import all_servers, program_counter, stop_switch_stats
from test_appswitch_conn_netns import drive, truth

TTL = 6  # seconds: long enough to restart the switch and reconnect before it runs out


@pytest.fixture(scope="module")
def rig(cassandra_cache):
    with all_servers(f"at{abs(hash('ttl')) % 10000}", "the application switch") as t:
        yield t


def restarted(t: Topology, sets: dict, sig: int, stats1: Path, stats2: Path, held: dict):
    """The action that restarts the switch with `sig` (its stats kept when it could write them)."""
    def act(d: Path) -> None:
        if sig == signal.SIGTERM:
            held["s1"] = stop_switch_stats(t, stats1)
        else:
            code, log = t.stop_switch(sig)
            assert code == -sig, (code, log[-2000:])
        t.start_switch("appswitch", sets, extra=["--stats-json", str(stats2)])
        (d / "restarted").touch()
    return act


def expired_reads_served(reads: list, deadline: dict, margin: float = 0.05) -> list:
    """Reads invoked after their key's expiry deadline (+ `margin` s) that still got a value."""
    return [r for r in reads if r["t"] >= deadline[r["key"]] + margin and r["v"] is not None]


# Writes three TTL'd rows through the switch (a literal UPDATE ... USING TTL, a prepared INSERT
# with the TTL as a bind marker, a driver BATCH of a TTL'd INSERT: keyed, keyed, table-wide), closes
# its session, waits for the restart, then reads every row (literal and prepared) on a new session
# through the new switch until well past expiry.
CQL = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    from cassandra.query import BatchStatement, SimpleStatement
    from innet.appswitch.workload import cql_session
    host, protocol, ttl, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[4]), Path(sys.argv[5])
    def wait(name):
        deadline = time.time() + 300
        while not (d / name).exists():
            assert time.time() < deadline, name
            time.sleep(0.02)
    ca, a = cql_session(host, protocol)
    stay = a.prepare("SELECT v FROM ttlr.kv WHERE k = ?")
    out = {"warm": [a.execute(stay, (1,)).one().v for _ in range(3)], "deadline": {}}
    a.execute(f"UPDATE ttlr.kv USING TTL {ttl} SET v = 'lit' WHERE k = 2")
    out["deadline"]["kv2"] = time.time() + ttl
    ins = a.prepare("INSERT INTO ttlr.kv (k, v) VALUES (?, ?) USING TTL ?")
    a.execute(ins, (3, "prep", ttl))
    out["deadline"]["kv3"] = time.time() + ttl
    b = BatchStatement()
    b.add(SimpleStatement(f"INSERT INTO ttlr.bt (k, v) VALUES (1, 'batch') USING TTL {ttl}"))
    a.execute(b)
    out["deadline"]["bt1"] = time.time() + ttl
    ca.shutdown()
    (d / "written").touch()
    wait("restarted")
    cb, s = cql_session(host, protocol)
    s.default_timeout = 10
    p_kv = s.prepare("SELECT v FROM ttlr.kv WHERE k = ?")
    p_bt = s.prepare("SELECT v FROM ttlr.bt WHERE k = ?")
    reads = []
    end = max(out["deadline"].values()) + 1.5
    while time.time() < end:
        for key, lit, prep, arg in (("kv2", "SELECT v FROM ttlr.kv WHERE k = 2", p_kv, 2),
                                    ("kv3", "SELECT v FROM ttlr.kv WHERE k = 3", p_kv, 3),
                                    ("bt1", "SELECT v FROM ttlr.bt WHERE k = 1", p_bt, 1)):
            for how, q in (("literal", lambda: s.execute(lit)), ("prepared", lambda: s.execute(prep, (arg,)))):
                t0 = time.time()
                row = q().one()
                reads.append({"key": key, "how": how, "t": t0, "v": row.v if row else None})
        out.setdefault("stay", []).append(s.execute("SELECT v FROM ttlr.kv WHERE k = 1").one().v)
        time.sleep(0.03)
    out["reads"] = reads
    cb.shutdown()
    print(json.dumps(out))
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
@pytest.mark.parametrize("protocol", [4, 5])
def test_cql_ttl_row_is_never_served_after_expiry_across_a_restart(rig, protocol, sig, tmp_path):
    t = rig
    truth(t, "CREATE KEYSPACE IF NOT EXISTS ttlr WITH replication = "
             "{'class': 'SimpleStrategy', 'replication_factor': 1}",
          "CREATE TABLE IF NOT EXISTS ttlr.kv (k int PRIMARY KEY, v text)",
          "CREATE TABLE IF NOT EXISTS ttlr.bt (k int PRIMARY KEY, v text)",
          "TRUNCATE ttlr.kv", "TRUNCATE ttlr.bt", "INSERT INTO ttlr.kv (k, v) VALUES (1, 'stay')")
    sets = {"protocol": "cql", "state_file": str(tmp_path / "appswitch.state")}
    stats1, stats2 = tmp_path / "stats1.json", tmp_path / "stats2.json"
    t.start_switch("appswitch", sets, extra=["--stats-json", str(stats1)])
    held: dict = {}
    out = drive(t, CQL, [t.server_ip, str(protocol), str(REPO / "python"), str(TTL)],
                [("written", restarted(t, sets, sig, stats1, stats2, held))])
    s2 = stop_switch_stats(t, stats2)
    wrong = expired_reads_served(out["reads"], out["deadline"])
    print(json.dumps({"protocol": protocol, "signal": sig.name, "reads": len(out["reads"]),
                      "expired_served": len(wrong), "first": wrong[:3],
                      "switch_after_restart": s2.get("program_report")}))
    assert out["warm"] == ["stay"] * 3
    # The rows existed when the new switch first saw them read (so it could have learned them).
    for key in out["deadline"]:
        assert any(r["key"] == key and r["v"] is not None for r in out["reads"]), key
    assert not wrong, f"{len(wrong)} reads got a value after its TTL ran out, e.g. {wrong[:3]}"
    # Caching still works after the restart for rows without a TTL.
    assert set(out["stay"]) == {"stay"}
    assert program_counter(s2, "hits") > 0, s2.get("program_report")


# Redis (SET ... EX and EXPIRE) and memcached (set with an exptime): the same shape over a raw
# socket each, one request at a time.
KV = textwrap.dedent("""
    import json, socket, sys, time
    from pathlib import Path
    proto, host, port, ttl, d = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
    def wait(name):
        deadline = time.time() + 300
        while not (d / name).exists():
            assert time.time() < deadline, name
            time.sleep(0.02)
    class Conn:
        def __init__(self):
            self.s = socket.create_connection((host, port), timeout=10)
            self.buf = b""
        def line(self):
            while b"\\r\\n" not in self.buf:
                c = self.s.recv(65536)
                assert c, "closed"
                self.buf += c
            l, _, self.buf = self.buf.partition(b"\\r\\n")
            return l
        def exact(self, n):
            while len(self.buf) < n + 2:
                c = self.s.recv(65536)
                assert c, "closed"
                self.buf += c
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v
        def redis(self, *args):
            self.s.sendall(b"*%d\\r\\n" % len(args) + b"".join(b"$%d\\r\\n%s\\r\\n" % (len(a), a) for a in args))
            l = self.line()
            if l.startswith(b"$"):
                n = int(l[1:])
                return None if n < 0 else self.exact(n).decode()
            return l.decode()
        def mc_get(self, k):
            self.s.sendall(b"get %s\\r\\n" % k)
            l, v = self.line(), None
            if l.startswith(b"VALUE "):
                v = self.exact(int(l.split()[3])).decode()
                l = self.line()
            assert l == b"END", l
            return v
        def mc_set(self, k, v, exp):
            self.s.sendall(b"set %s 0 %d %d\\r\\n%s\\r\\n" % (k, exp, len(v), v))
            assert self.line() == b"STORED"
        def get(self, k):
            return self.redis(b"GET", k) if proto == "redis" else self.mc_get(k)
    a = Conn()
    out = {"deadline": {}}
    if proto == "redis":
        a.redis(b"SET", b"stay", b"stay")
        out["warm"] = [a.get(b"stay") for _ in range(3)]
        assert a.redis(b"SET", b"ex", b"ex", b"EX", str(ttl).encode()) == "+OK"
        out["deadline"]["ex"] = time.time() + ttl
        assert a.redis(b"SET", b"exp", b"exp") == "+OK"
        assert a.redis(b"EXPIRE", b"exp", str(ttl).encode()) == ":1"
        out["deadline"]["exp"] = time.time() + ttl
    else:
        a.mc_set(b"stay", b"stay", 0)
        out["warm"] = [a.get(b"stay") for _ in range(3)]
        a.mc_set(b"ex", b"ex", ttl)
        out["deadline"]["ex"] = time.time() + ttl
        a.mc_set(b"exp", b"exp", 0)
        a.s.sendall(b"touch exp %d\\r\\n" % ttl)
        assert a.line() == b"TOUCHED"
        out["deadline"]["exp"] = time.time() + ttl
    a.s.close()
    (d / "written").touch()
    wait("restarted")
    b = Conn()
    reads, stay = [], []
    end = max(out["deadline"].values()) + 1.5
    while time.time() < end:
        for key in out["deadline"]:
            t0 = time.time()
            reads.append({"key": key, "t": t0, "v": b.get(key.encode())})
        stay.append(b.get(b"stay"))
        time.sleep(0.02)
    out["reads"], out["stay"] = reads, stay
    print(json.dumps(out))
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
@pytest.mark.parametrize("server,port", [("redis", 6379), ("memcached", 11211)], ids=["redis", "memcached"])
def test_kv_expiry_is_never_served_after_expiry_across_a_restart(rig, server, port, sig, tmp_path):
    t = rig
    sets = {"protocol": server, "state_file": str(tmp_path / "appswitch.state")}
    stats1, stats2 = tmp_path / "stats1.json", tmp_path / "stats2.json"
    t.start_switch("appswitch", sets, extra=["--stats-json", str(stats1)])
    held: dict = {}
    out = drive(t, KV, [server, t.server_ip, str(port), str(TTL)],
                [("written", restarted(t, sets, sig, stats1, stats2, held))])
    s2 = stop_switch_stats(t, stats2)
    # memcached's clock ticks once a second, so an item may outlive its exptime by up to 1 s.
    wrong = expired_reads_served(out["reads"], out["deadline"], 0.05 if server == "redis" else 1.05)
    print(json.dumps({"server": server, "signal": sig.name, "reads": len(out["reads"]),
                      "expired_served": len(wrong), "first": wrong[:3],
                      "switch_after_restart": s2.get("program_report")}))
    assert out["warm"] == ["stay"] * 3
    for key in out["deadline"]:
        assert any(r["key"] == key and r["v"] is not None for r in out["reads"]), key
    assert not wrong, f"{len(wrong)} reads got a value after its expiry, e.g. {wrong[:3]}"
    assert set(out["stay"]) == {"stay"}
    assert program_counter(s2, "hits") > 0, s2.get("program_report")
