"""What a CQL read through the application switch means, checked against the truth: every read a
client sends through the switch is compared with what Cassandra itself answers at that moment,
read on a second driver connection opened inside the server's namespace (no switch on its path).

Two processes: `truth` runs in the server namespace and answers CQL text sent over a Unix socket
(a Unix socket is reachable from every network namespace); `cases` / `random` run in the client
namespace, talk to Cassandra through the switch, and ask the truth before and after each read
(with no concurrent writes, the answer must equal one of the two: the value at some moment of
the read). Issue 23's statement cases 1-8 are `cases`; `random` issues random writes and reads
(typed keys in several spellings, TTLs, comments, consistency levels, time-dependent selectors).

    python -m innet.appswitch.semantics truth --host IP --socket PATH
    python -m innet.appswitch.semantics cases --host IP --socket PATH      # JSON per case
    python -m innet.appswitch.semantics random --host IP --socket PATH --ops N --seed S
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable

from innet.appswitch.workload import cql_session

KS = "sem"


def session(host: str):
    return cql_session(host, None)


def outcome(run: Callable[[], Any]) -> str:
    """A read's answer as comparable text: the rows' values, or the error's class."""
    try:
        rows = run()
        return repr([list(r) for r in rows])
    except Exception as e:  # noqa: BLE001 (the error class is the answer)
        return f"error:{type(e).__name__}"


def consistency(name: str):
    from cassandra import ConsistencyLevel

    return getattr(ConsistencyLevel, name)


# ---- the truth: a driver connection in the server's namespace -----------------------------------

def serve_truth(host: str, path: str) -> None:
    from cassandra.query import SimpleStatement

    cluster, s = session(host)
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    print("ready", flush=True)
    while True:
        conn, _ = srv.accept()
        f = conn.makefile("rwb")
        for line in f:
            req = json.loads(line)
            if req.get("stop"):
                cluster.shutdown()
                return
            st = SimpleStatement(req["q"], consistency_level=consistency(req.get("cl", "ONE")))
            f.write(json.dumps({"a": outcome(lambda: s.execute(st))}).encode() + b"\n")
            f.flush()
        conn.close()


class Truth:
    """The client side of the truth connection."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.f = self.sock.makefile("rwb")

    def __call__(self, q: str, cl: str = "ONE") -> str:
        self.f.write(json.dumps({"q": q, "cl": cl}).encode() + b"\n")
        self.f.flush()
        return json.loads(self.f.readline())["a"]

    def write(self, q: str) -> None:
        a = self(q)
        assert not a.startswith("error"), (q, a)


class Checker:
    """Reads through the switch, each compared with the truth before and after it."""

    def __init__(self, s, truth: Truth) -> None:
        self.s, self.truth = s, truth
        self.reads = 0
        self.wrong: list[dict] = []
        self.rejected: list[str] = []

    def read(self, label: str, q: str, truth_q: str | None = None, cl: str = "ONE",
             run: Callable[[], Any] | None = None) -> str:
        """`q` through the switch (or `run()`, e.g. a prepared statement), `truth_q` (default
        `q`) on the truth connection."""
        from cassandra.query import SimpleStatement

        tq = truth_q or q
        before = self.truth(tq, cl)
        got = outcome(run or (lambda: self.s.execute(SimpleStatement(q, consistency_level=consistency(cl)))))
        after = self.truth(tq, cl)
        self.reads += 1
        if got not in (before, after):
            self.wrong.append({"case": label, "query": q, "cl": cl, "got": got, "truth_before": before,
                               "truth_after": after})
        return got

    def write(self, q: str, params: tuple | None = None) -> None:
        """A write through the switch; one Cassandra rejects is recorded (not a wrong answer)."""
        try:
            self.s.execute(q, params)
        except Exception as e:  # noqa: BLE001
            self.rejected.append(f"{q}: {type(e).__name__}: {e}"[:300])

    def reads_of(self, label: str, q: str, n: int = 3, **kw) -> None:
        for _ in range(n):
            self.read(label, q, **kw)


def setup_keyspace(s) -> None:
    s.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")


# ---- issue 23, cases 1-8 --------------------------------------------------------------------------

TTL_S = 2


def case_default_ttl(c: Checker) -> None:
    s = c.s
    s.execute(f"CREATE TABLE {KS}.dttl (k text PRIMARY KEY, v text) WITH default_time_to_live = {TTL_S}")
    s.execute(f"CREATE TABLE {KS}.alt (k text PRIMARY KEY, v text)")
    s.execute(f"CREATE TABLE {KS}.altx (k text PRIMARY KEY, v text)")
    for t in ("dttl", "alt", "altx"):
        c.write(f"INSERT INTO {KS}.{t} (k, v) VALUES ('a', 'one')")
        c.reads_of("1 default TTL", f"SELECT v FROM {KS}.{t} WHERE k = 'a'")
    # ALTER through the switch, and by a client that bypasses it (the switch sees the event).
    s.execute(f"ALTER TABLE {KS}.alt WITH default_time_to_live = {TTL_S}")
    c.truth.write(f"ALTER TABLE {KS}.altx WITH default_time_to_live = {TTL_S}")
    time.sleep(0.5)
    for t in ("alt", "altx"):
        c.write(f"INSERT INTO {KS}.{t} (k, v) VALUES ('a', 'two')")
        c.reads_of("1 default TTL (altered)", f"SELECT v FROM {KS}.{t} WHERE k = 'a'")
    time.sleep(TTL_S + 0.6)
    for t in ("dttl", "alt", "altx"):
        c.reads_of("1 default TTL, expired", f"SELECT v FROM {KS}.{t} WHERE k = 'a'")


def case_ttl_unkeyed(c: Checker) -> None:
    from cassandra.query import BatchStatement

    s = c.s
    tables = ["tj", "tin", "tbatch", "tdrv"]
    for t in tables:
        s.execute(f"CREATE TABLE {KS}.{t} (k text PRIMARY KEY, v text)")
        for k in ("a", "b"):
            c.write(f"INSERT INTO {KS}.{t} (k, v) VALUES ('{k}', 'plain')")
            c.reads_of("2 TTL write, keys unknown", f"SELECT v FROM {KS}.{t} WHERE k = '{k}'")
    c.write(f"INSERT INTO {KS}.tj JSON '{{\"k\": \"a\", \"v\": \"json\"}}' USING TTL {TTL_S}")
    c.write(f"UPDATE {KS}.tin USING TTL {TTL_S} SET v = 'in' WHERE k IN ('a', 'b')")
    c.write(f"BEGIN BATCH INSERT INTO {KS}.tbatch (k, v) VALUES ('a', 'batch') USING TTL {TTL_S}; APPLY BATCH")
    ins = s.prepare(f"INSERT INTO {KS}.tdrv (k, v) VALUES (?, ?) USING TTL {TTL_S}")
    b = BatchStatement()
    b.add(ins, ("a", "driver-batch"))
    s.execute(b)
    for t in tables:
        c.reads_of("2 TTL write, keys unknown", f"SELECT v FROM {KS}.{t} WHERE k = 'a'")
    time.sleep(TTL_S + 0.6)
    for t in tables:
        c.reads_of("2 TTL write, expired", f"SELECT v FROM {KS}.{t} WHERE k = 'a'")


def case_view(c: Checker) -> None:
    s = c.s
    s.execute(f"CREATE TABLE {KS}.base (k text PRIMARY KEY, v text)")
    s.execute(f"CREATE MATERIALIZED VIEW {KS}.byv AS SELECT k, v FROM {KS}.base "
              "WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)")
    time.sleep(1.0)  # the view is built
    c.write(f"INSERT INTO {KS}.base (k, v) VALUES ('a', 'x')")
    time.sleep(0.2)
    prep = s.prepare(f"SELECT k FROM {KS}.byv WHERE v = ?")
    q = f"SELECT k FROM {KS}.byv WHERE v = 'x'"
    c.reads_of("3 view", q)
    for _ in range(3):
        c.read("3 view (prepared)", "prepared", truth_q=q, run=lambda: s.execute(prep, ("x",)))
    c.write(f"UPDATE {KS}.base SET v = 'y' WHERE k = 'a'")
    time.sleep(0.2)
    c.reads_of("3 view after a base write", q)
    c.read("3 view after a base write (prepared)", "prepared", truth_q=q, run=lambda: s.execute(prep, ("x",)))


# Typed keys: (type, spellings of one value). Writes with one spelling must reach reads with any.
TYPED = [
    ("timestamp", ["1577836800000", "'2020-01-01 00:00:00+0000'", "'2020-01-01T00:00:00Z'"]),
    ("date", ["2147501910", "'2020-01-01'"]),
    ("inet", ["'0:0:0:0:0:0:0:1'", "'::1'"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"]),
    ("float", ["1", "1.0"]),
    ("double", ["2.50", "2.5"]),
    ("decimal", ["1", "1.0"]),
    ("time", ["'01:00:00'", "3600000000000"]),
    ("bigint", ["7", "00007"]),
    ("blob", ["0xcafe", "0xCAFE"]),
]


def case_typed_keys(c: Checker) -> None:
    s = c.s
    for i, (typ, spellings) in enumerate(TYPED):
        t = f"typed{i}"
        s.execute(f"CREATE TABLE {KS}.{t} (k {typ} PRIMARY KEY, v text)")
        for wi, w in enumerate(spellings):
            for r in spellings:
                if r == w:
                    continue
                q = f"SELECT v FROM {KS}.{t} WHERE k = {r}"
                c.write(f"INSERT INTO {KS}.{t} (k, v) VALUES ({w}, 'first-{wi}')")
                c.reads_of(f"4 typed key {typ}", q)
                c.write(f"UPDATE {KS}.{t} SET v = 'second-{wi}' WHERE k = {w}")
                c.reads_of(f"4 typed key {typ}, written as {w}, read as {r}", q)
    # A prepared write (the driver's bytes) and literal reads.
    s.execute(f"CREATE TABLE {KS}.typedp (k timestamp PRIMARY KEY, v text)")
    upd = s.prepare(f"UPDATE {KS}.typedp SET v = ? WHERE k = ?")
    when = datetime(2020, 1, 1, tzinfo=timezone.utc)
    q = f"SELECT v FROM {KS}.typedp WHERE k = '2020-01-01 00:00:00+0000'"
    s.execute(upd, ("one", when))
    c.reads_of("4 typed key, prepared write", q)
    s.execute(upd, ("two", when))
    c.reads_of("4 typed key, prepared write", q)


def case_time_dependent(c: Checker) -> None:
    s = c.s
    s.execute(f"CREATE TABLE {KS}.t5 (k text PRIMARY KEY, v text)")
    c.write(f"INSERT INTO {KS}.t5 (k, v) VALUES ('a', 'x')")
    c.truth.write(f"INSERT INTO {KS}.t5 (k, v) VALUES ('b', 'y') USING TTL 100")
    for sel in ["toUnixTimestamp(now())", "currentTimestamp()", "uuid()", "now()", "ttl(v)", "writetime(v)"]:
        key = "b" if sel == "ttl(v)" else "a"
        q = f"SELECT {sel} FROM {KS}.t5 WHERE k = '{key}'"
        seen = []
        for _ in range(3):
            seen.append(outcome(lambda: s.execute(q)))
            time.sleep(1.05 if sel == "ttl(v)" else 0.01)
        if sel == "writetime(v)":
            c.reads_of("5 writetime", q)  # deterministic without writes: must equal the truth
            continue
        if len(set(seen)) != len(seen):
            c.wrong.append({"case": "5 time-dependent selector", "query": q, "got": seen})
        c.reads += len(seen)


def case_bound_values(c: Checker) -> None:
    s = c.s
    s.execute(f"CREATE TABLE {KS}.t6 (k text PRIMARY KEY, v text)")
    c.write(f"INSERT INTO {KS}.t6 (k, v) VALUES ('a', 'x')")
    prep = s.prepare(f"SELECT k, blobAsText(?) FROM {KS}.t6 WHERE k = ?")
    for arg in [b"one", b"one", b"two", b"two", b"three"]:
        tq = f"SELECT k, blobAsText(0x{arg.hex()}) FROM {KS}.t6 WHERE k = 'a'"
        c.read("6 bound value outside the key", "prepared", truth_q=tq,
               run=lambda: s.execute(prep, (arg, "a")))


def one_row_table(c: Checker, table: str) -> tuple[str, Any]:
    """A new table `table` (k text key, v text) holding ('a', 'x'): its read of 'a' as text and
    prepared."""
    c.s.execute(f"CREATE TABLE {KS}.{table} (k text PRIMARY KEY, v text)")
    c.write(f"INSERT INTO {KS}.{table} (k, v) VALUES ('a', 'x')")
    q = f"SELECT v FROM {KS}.{table} WHERE k = 'a'"
    return q, c.s.prepare(q)


def case_consistency(c: Checker) -> None:
    s = c.s
    q, prep = one_row_table(c, "t7")
    for cl in ["ONE", "ONE", "TWO", "THREE", "ANY", "QUORUM", "ALL", "LOCAL_ONE", "SERIAL", "ONE"]:
        c.read(f"7 consistency {cl}", q, cl=cl)

        def run(cl=cl):
            prep.consistency_level = consistency(cl)
            return s.execute(prep)
        c.read(f"7 consistency {cl} (prepared)", "prepared", truth_q=q, cl=cl, run=run)


def case_comments(c: Checker) -> None:
    s = c.s
    s.execute(f"CREATE TABLE {KS}.t8 (k text PRIMARY KEY, v text)")
    for k in ("b", "zz"):
        c.write(f"INSERT INTO {KS}.t8 (k, v) VALUES ('{k}', 'old')")
    writes = [
        f"UPDATE {KS}.t8 SET v = 'x' /* WHERE k = 'zz' IF */ WHERE k = 'b'",
        f"UPDATE {KS}.t8 SET v = 'y' -- WHERE k = 'zz'\n WHERE k = 'b'",
        f"UPDATE {KS}.t8 SET v = 'z' // WHERE k = 'zz'\n WHERE k = 'b'",
        f"UPDATE {KS}.t8 SET v = 'w'' WHERE k = ''zz' WHERE k = 'b'",
    ]
    for w in writes:
        for k in ("b", "zz"):
            c.reads_of("8 comments", f"SELECT v FROM {KS}.t8 WHERE k = '{k}'")
        c.write(w)
        for k in ("b", "zz"):
            c.reads_of(f"8 comments: {w!r}", f"SELECT v FROM {KS}.t8 WHERE k = '{k}'")


# ---- beyond the ten cases: an adversarial Cassandra 5 user (issue 23, continued) ------------------

def _rows(rs, cap: int = 50) -> list:
    """At most `cap` rows of a (possibly paged) result: a switch that answers a page request with
    an earlier page would otherwise make the driver page forever."""
    out = []
    for r in rs:
        out.append(r)
        if len(out) >= cap:
            break
    return out


def case_paging(c: Checker) -> None:
    from cassandra.query import SimpleStatement

    s = c.s
    s.execute(f"CREATE TABLE {KS}.pg (k text, c int, v text, PRIMARY KEY (k, c))")
    for i in range(5):
        c.write(f"INSERT INTO {KS}.pg (k, c, v) VALUES ('a', {i}, 'v{i}')")
    q = f"SELECT c, v FROM {KS}.pg WHERE k = 'a'"
    prep = s.prepare(q)
    for size in (2, 2, 5000, 2, 3, 5000):
        c.read(f"11 paging, fetch_size {size}", q,
               run=lambda size=size: _rows(s.execute(SimpleStatement(q, fetch_size=size))))
        prep.fetch_size = size
        c.read(f"11 paging, fetch_size {size} (prepared)", "prepared", truth_q=q,
               run=lambda: _rows(s.execute(prep)))
    # One page by hand, then its continuation: the second request carries the paging state.
    for _ in range(2):
        first = s.execute(SimpleStatement(q, fetch_size=2))
        got = [list(r) for r in first.current_rows]
        nxt = s.execute(SimpleStatement(q, fetch_size=2), paging_state=first.paging_state)
        got += [list(r) for r in nxt.current_rows]
        want = [[i, f"v{i}"] for i in range(4)]
        c.reads += 1
        if got != want:
            c.wrong.append({"case": "11 paging state", "query": q, "got": repr(got), "want": repr(want)})


def case_tracing(c: Checker) -> None:
    s = c.s
    q, prep = one_row_table(c, "tr")

    def traced(stmt, trace: bool):
        rs = s.execute(stmt, trace=trace)
        ids = [t.trace_id for t in rs.response_future._query_traces or []]
        # Cassandra answers a request with the tracing flag with a tracing id, and one without
        # the flag without.
        if bool(ids) != trace:
            return [["tracing id" if ids else "no tracing id"]]
        return list(rs)

    for trace in (False, False, True, True, False, True):
        c.read(f"12 tracing={trace}", q, run=lambda trace=trace: traced(q, trace))
        c.read(f"12 tracing={trace} (prepared)", "prepared", truth_q=q, run=lambda trace=trace: traced(prep, trace))


def case_use(c: Checker) -> None:
    from cassandra.query import SimpleStatement

    s = c.s
    for ks, v in ((KS, "in-sem"), (KS + "2", "in-sem2")):
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(f"CREATE TABLE {ks}.u (k text PRIMARY KEY, v text)")
        c.write(f"INSERT INTO {ks}.u (k, v) VALUES ('a', '{v}')")
    q = "SELECT v FROM u WHERE k = 'a'"
    cluster = s.cluster
    s1, s2 = cluster.connect(KS), cluster.connect(KS + "2")  # each sends USE on its connections
    for _ in range(3):
        c.read("13 USE ks", q, truth_q=f"SELECT v FROM {KS}.u WHERE k = 'a'", run=lambda: s1.execute(q))
        c.read("13 USE ks2", q, truth_q=f"SELECT v FROM {KS}2.u WHERE k = 'a'", run=lambda: s2.execute(q))
    # The same session switching keyspaces with USE.
    for ks in (KS, KS + "2", KS, KS + "2"):
        s1.execute(f"USE {ks}")
        c.read(f"13 USE {ks} on a session", q, truth_q=f"SELECT v FROM {ks}.u WHERE k = 'a'",
               run=lambda: s1.execute(q))
    # v5: the keyspace carried in the QUERY itself (a statement's keyspace).
    if cluster.protocol_version >= 5:
        for ks in (KS + "2", KS, KS + "2"):
            c.read(f"13 per-query keyspace {ks}", q, truth_q=f"SELECT v FROM {ks}.u WHERE k = 'a'",
                   run=lambda ks=ks: s1.execute(SimpleStatement(q, keyspace=ks)))
    s1.shutdown()
    s2.shutdown()


def case_identifier_case(c: Checker) -> None:
    s = c.s
    s.execute(f"CREATE TABLE {KS}.lc (k text PRIMARY KEY, v text)")
    s.execute(f'CREATE TABLE {KS}."LC" (k text PRIMARY KEY, v text)')
    for t, v in (("lc", "lower"), ('"LC"', "quoted")):
        c.write(f"INSERT INTO {KS}.{t} (k, v) VALUES ('a', '{v}')")
    reads = [f"SELECT v FROM {KS}.LC WHERE k = 'a'", f"SELECT v FROM {KS.upper()}.Lc WHERE K = 'a'",
             f'SELECT v FROM {KS}."LC" WHERE k = \'a\'', f"select v from {KS}.lc where k = 'a'"]
    for w in (f"UPDATE {KS}.lc SET v = 'lower2' WHERE k = 'a'", f'UPDATE {KS}."LC" SET v = \'quoted2\' WHERE k = \'a\'',
              f"UPDATE {KS.upper()}.LC SET V = 'lower3' WHERE K = 'a'", f'UPDATE "{KS}"."LC" SET "v" = \'quoted3\' WHERE "k" = \'a\''):
        for q in reads:
            c.reads_of("14 identifier case", q, n=2)
        c.write(w)
    for q in reads:
        c.reads_of("14 identifier case", q, n=2)


def case_schema_changes(c: Checker) -> None:
    s = c.s
    for t in ("sc", "sctr", "scd"):
        s.execute(f"CREATE TABLE {KS}.{t} (k text PRIMARY KEY, v text, w text)")
        c.write(f"INSERT INTO {KS}.{t} (k, v, w) VALUES ('a', 'x', 'y')")
        c.reads_of("15 schema", f"SELECT * FROM {KS}.{t} WHERE k = 'a'")
    s.execute(f"TRUNCATE {KS}.sctr")
    c.reads_of("15 TRUNCATE", f"SELECT * FROM {KS}.sctr WHERE k = 'a'")
    # DDL by a client that bypasses the switch: the server's schema events reach the drivers
    # through the switch.
    c.truth.write(f"ALTER TABLE {KS}.sc DROP w")
    c.truth.write(f"ALTER TABLE {KS}.sc ADD z int")
    time.sleep(0.5)
    c.reads_of("15 ALTER (bypass)", f"SELECT * FROM {KS}.sc WHERE k = 'a'")
    c.truth.write(f"DROP TABLE {KS}.scd")
    c.truth.write(f"CREATE TABLE {KS}.scd (k text PRIMARY KEY, v text, w text)")
    c.truth.write(f"INSERT INTO {KS}.scd (k, v, w) VALUES ('a', 'new', 'new')")
    time.sleep(0.5)
    c.reads_of("15 DROP + CREATE (bypass)", f"SELECT * FROM {KS}.scd WHERE k = 'a'")


def case_system_keyspaces(c: Checker) -> None:
    """Tables Cassandra writes itself, never through a CQL write the switch could see:
    system.local's schema_version changes with every schema change, a tracing session's row in
    system_traces appears (and gets its duration) after the traced request has been answered —
    the driver polls it in `get_query_trace`."""
    s = c.s
    q = "SELECT schema_version FROM system.local WHERE key = 'local'"
    for i in range(3):
        c.reads_of("18 system.local", q, n=2)
        s.execute(f"CREATE TABLE {KS}.sys{i} (k text PRIMARY KEY, v text)")
        time.sleep(0.3)
    s.execute(f"CREATE TABLE {KS}.trc (k text PRIMARY KEY, v text)")
    for _ in range(2):
        rs = s.execute(f"SELECT v FROM {KS}.trc WHERE k = 'a'", trace=True)
        sid = rs.response_future.get_query_trace_ids()[0]
        tq = f"SELECT duration FROM system_traces.sessions WHERE session_id = {sid}"
        c.reads_of("18 system_traces", tq, n=1)
        try:
            trace = rs.get_query_trace(max_wait_sec=10)
            got = "complete" if trace.duration is not None else "incomplete"
        except Exception as e:  # noqa: BLE001
            got = f"error:{type(e).__name__}"
        c.reads += 1
        if got != "complete":
            c.wrong.append({"case": "18 system_traces (driver's trace fetch)", "session": str(sid), "got": got})
        c.reads_of("18 system_traces", tq, n=2)


def case_user_types(c: Checker) -> None:
    """A value column of a user-defined type: ALTER TYPE (through the switch, or by a client that
    bypasses it) changes the rows' metadata — Cassandra answers with the new fields — without
    any write to the table."""
    s = c.s
    s.execute(f"CREATE TYPE {KS}.addr (street text)")
    s.execute(f"CREATE TYPE {KS}.addr2 (street text)")
    s.execute(f"CREATE TABLE {KS}.ut (k text PRIMARY KEY, a frozen<addr>, b addr2)")
    c.write(f"INSERT INTO {KS}.ut (k, a, b) VALUES ('a', {{street: 'x'}}, {{street: 'y'}})")
    q = f"SELECT a, b FROM {KS}.ut WHERE k = 'a'"
    c.reads_of("19 user type", q)
    s.execute(f"ALTER TYPE {KS}.addr ADD city text")
    c.reads_of("19 user type (ALTER TYPE ADD)", q)
    c.truth.write(f"ALTER TYPE {KS}.addr2 RENAME street TO road")
    time.sleep(0.5)
    c.reads_of("19 user type (ALTER TYPE RENAME, bypass)", q)


def case_clauses(c: Checker) -> None:
    """LIMIT / PER PARTITION LIMIT, ALLOW FILTERING, static columns, counters and lightweight
    transactions: reads and writes through the switch."""
    s = c.s
    s.execute(f"CREATE TABLE {KS}.cl (k text, c int, st text STATIC, v text, PRIMARY KEY (k, c))")
    s.execute(f"CREATE TABLE {KS}.ctr (k text PRIMARY KEY, n counter)")
    for i in range(3):
        c.write(f"INSERT INTO {KS}.cl (k, c, st, v) VALUES ('a', {i}, 's0', 'v{i}')")
    reads = [f"SELECT c, v FROM {KS}.cl WHERE k = 'a' LIMIT 1", f"SELECT c, v FROM {KS}.cl WHERE k = 'a' PER PARTITION LIMIT 2",
             f"SELECT c FROM {KS}.cl WHERE k = 'a' AND v = 'v1' ALLOW FILTERING", f"SELECT st FROM {KS}.cl WHERE k = 'a'",
             f"SELECT DISTINCT k, st FROM {KS}.cl WHERE k = 'a'", f"SELECT n FROM {KS}.ctr WHERE k = 'a'"]
    lim = s.prepare(f"SELECT c, v FROM {KS}.cl WHERE k = ? LIMIT ?")
    writes = [f"UPDATE {KS}.cl SET st = 's1' WHERE k = 'a'", f"UPDATE {KS}.cl SET v = 'v1' WHERE k = 'a' AND c = 0",
              f"UPDATE {KS}.ctr SET n = n + 1 WHERE k = 'a'", f"UPDATE {KS}.cl SET v = 'lwt' WHERE k = 'a' AND c = 1 IF v = 'v1'",
              f"UPDATE {KS}.cl SET st = 'lwt' WHERE k = 'a' IF st = 'nope'", f"DELETE FROM {KS}.cl WHERE k = 'a' AND c = 2 IF EXISTS",
              f"UPDATE {KS}.ctr SET n = n - 3 WHERE k = 'a'", f"INSERT INTO {KS}.cl (k, c, v) VALUES ('a', 5, 'v1') IF NOT EXISTS",
              # Writes whose keys are not a plain `k = literal`.
              f"INSERT INTO {KS}.cl JSON '{{\"k\": \"a\", \"c\": 0, \"v\": \"json\"}}'",
              f"UPDATE {KS}.cl SET st = 'in' WHERE k IN ('a', 'b')", f"UPDATE {KS}.ctr SET n = n + 5 WHERE k IN ('a', 'b')",
              f"BEGIN UNLOGGED BATCH UPDATE {KS}.cl SET v = 'b1' WHERE k = 'a' AND c = 0; "
              f"UPDATE {KS}.cl SET st = 'b2' WHERE k = 'a'; APPLY BATCH",
              f"DELETE st FROM {KS}.cl WHERE k IN ('b', 'a')"]
    for w in writes + [None]:
        for q in reads:
            c.reads_of("16 clauses", q, n=2)
        for n in (1, 2, 1):
            c.read("16 LIMIT ?", "prepared", truth_q=f"SELECT c, v FROM {KS}.cl WHERE k = 'a' LIMIT {n}",
                   run=lambda n=n: s.execute(lim, ("a", n)))
        if w:
            c.write(w)


CASES = {
    "1_default_ttl": case_default_ttl,
    "2_ttl_unkeyed": case_ttl_unkeyed,
    "3_view": case_view,
    "4_typed_keys": case_typed_keys,
    "5_time_dependent": case_time_dependent,
    "6_bound_values": case_bound_values,
    "7_consistency": case_consistency,
    "8_comments": case_comments,
    "11_paging": case_paging,
    "12_tracing": case_tracing,
    "13_use_keyspace": case_use,
    "14_identifier_case": case_identifier_case,
    "15_schema_changes": case_schema_changes,
    "16_clauses": case_clauses,
    "18_system_keyspaces": case_system_keyspaces,
    "19_user_types": case_user_types,
}


def run_cases(host: str, path: str, names: list[str]) -> dict:
    cluster, s = session(host)
    setup_keyspace(s)
    truth = Truth(path)
    out = {}
    for name in names:
        c = Checker(s, truth)
        CASES[name](c)
        out[name] = {"reads": c.reads, "wrong": c.wrong, "rejected_writes": c.rejected}
    cluster.shutdown()
    return out


# ---- random differential ------------------------------------------------------------------------

# Tables (name, key type, spellings of key i).
def _ts(i: int) -> list[str]:
    ms = 1577836800000 + i * 86_400_000
    d = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return [str(ms), f"'{d:%Y-%m-%d %H:%M:%S}+0000'", f"'{d:%Y-%m-%dT%H:%M:%S}Z'"]


def _inet(i: int) -> list[str]:
    return [f"'::{i + 1:x}'", f"'0:0:0:0:0:0:0:{i + 1:x}'"]


def _text(i: int) -> list[str]:
    return [f"'k{i}'", f"$$k{i}$$"]


def _int(i: int) -> list[str]:
    return [str(i), f"{i:03d}"]


RANDOM_TABLES = [("rts", "timestamp", _ts), ("rinet", "inet", _inet), ("rtext", "text", _text), ("rint", "int", _int)]
COMMENTS = ["", " /* WHERE k = 0 */ ", " -- WHERE k = 1\n ", " // IF v = 'x'\n "]


def run_random(host: str, path: str, ops: int, seed: int, keys: int = 4) -> dict:
    rng = random.Random(seed)
    cluster, s = session(host)
    setup_keyspace(s)
    for name, typ, _ in RANDOM_TABLES:
        s.execute(f"DROP TABLE IF EXISTS {KS}.{name}")
        s.execute(f"CREATE TABLE {KS}.{name} (k {typ} PRIMARY KEY, v text, n int)")
    c = Checker(s, Truth(path))
    prepared = {name: s.prepare(f"SELECT v, n FROM {KS}.{name} WHERE k = ?") for name, _, _ in RANDOM_TABLES}
    counts: dict[str, int] = {}
    for op in range(ops):
        name, typ, spell = rng.choice(RANDOM_TABLES)
        kind = rng.choices(["read", "read_prepared", "read_cl", "read_fn", "write", "delete", "ttl_write"],
                           [10, 3, 1, 1, 4, 1, 1])[0]
        # Keys 0..keys-1, and two more that TTL writes go to (a key written with a TTL is never
        # cached again, so TTLs on every key would leave nothing to cache).
        i = keys + rng.randrange(2) if kind == "ttl_write" else rng.randrange(keys + 2)
        k = rng.choice(spell(i))
        cm = rng.choice(COMMENTS)
        counts[kind] = counts.get(kind, 0) + 1
        tq = f"SELECT v, n FROM {KS}.{name} WHERE k = {spell(i)[0]}"
        if kind == "read":
            c.read("random", f"SELECT v, n FROM {KS}.{name}{cm} WHERE k = {k}", truth_q=tq)
        elif kind == "read_prepared" and typ in ("text", "int"):
            val = f"k{i}" if typ == "text" else i
            c.read("random prepared", "prepared", truth_q=tq, run=lambda: s.execute(prepared[name], (val,)))
        elif kind == "read_cl":
            cl = rng.choice(["TWO", "ANY", "LOCAL_ONE", "QUORUM"])
            c.read("random consistency", f"SELECT v, n FROM {KS}.{name} WHERE k = {k}", truth_q=tq, cl=cl)
        elif kind == "read_fn":
            q = f"SELECT v, toUnixTimestamp(now()) FROM {KS}.{name} WHERE k = {k}"
            a, b = outcome(lambda: s.execute(q)), outcome(lambda: s.execute(q))
            if a == b and not a.startswith("error") and a != "[]":
                c.wrong.append({"case": "random now()", "query": q, "got": [a, b]})
        elif kind in ("write", "ttl_write"):
            using = f" USING TTL {rng.choice([1, 2])}" if kind == "ttl_write" else ""
            v = f"v{op}"
            if rng.random() < 0.5:
                c.write(f"UPDATE {KS}.{name}{using} SET v = '{v}', n = {op}{cm} WHERE k = {k}")
            else:
                c.write(f"INSERT INTO {KS}.{name} (k, v, n){cm} VALUES ({k}, '{v}', {op}){using}")
        elif kind == "delete":
            c.write(f"DELETE FROM {KS}.{name}{cm} WHERE k = {k}")
        if rng.random() < 0.02:
            time.sleep(1.1)  # let some TTLs run out
    cluster.shutdown()
    return {"reads": c.reads, "wrong": c.wrong, "counts": counts, "rejected_writes": c.rejected}


# ---- users and permissions (authentication on: scripts/cassandra.sh with INNET_CASSANDRA_AUTH=1) ---

def run_auth(host: str) -> dict:
    """Per-user answers: `alice` may SELECT the table, `bob` may not; alice reads a key through
    the switch (it could learn the answer), then bob reads it on his own connection, then the
    superuser REVOKEs alice's permission and alice reads again. Cassandra answers bob and the
    revoked alice Unauthorized every time (its permission caches are off); a switch that
    answers them from its cache gives rows instead. No truth connection is needed: the expected
    outcome of each read is known."""
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster
    from cassandra.policies import WhiteListRoundRobinPolicy

    from innet.appswitch.cql_driver import fix_segment_reader

    fix_segment_reader()

    def login(user: str, password: str):
        deadline = time.time() + 120
        while True:  # the default superuser appears a few seconds after CQL starts listening
            try:
                c = Cluster([host], load_balancing_policy=WhiteListRoundRobinPolicy([host]), compression=False,
                            auth_provider=PlainTextAuthProvider(user, password), connect_timeout=30)
                return c, c.connect()
            except Exception:  # noqa: BLE001
                if time.time() > deadline:
                    raise
                time.sleep(2)

    root_c, root = login("cassandra", "cassandra")
    root.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
                 "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    root.execute(f"CREATE TABLE IF NOT EXISTS {KS}.auth (k text PRIMARY KEY, v text)")
    root.execute(f"INSERT INTO {KS}.auth (k, v) VALUES ('a', 'secret')")
    for user in ("alice", "bob"):
        root.execute(f"CREATE ROLE IF NOT EXISTS {user} WITH PASSWORD = '{user}-pw' AND LOGIN = true")
    root.execute(f"GRANT SELECT ON TABLE {KS}.auth TO alice")
    clusters = {"cassandra": (root_c, root)}
    for user in ("alice", "bob"):
        clusters[user] = login(user, f"{user}-pw")
    q = f"SELECT v FROM {KS}.auth WHERE k = 'a'"
    prepared = {u: s.prepare(q) for u, (_, s) in clusters.items() if u != "bob"}
    reads, wrong = 0, []

    def check(label: str, user: str, want: str, prepared_stmt: bool = False) -> None:
        nonlocal reads
        s = clusters[user][1]
        stmt = prepared.get(user, q) if prepared_stmt else q
        got = outcome(lambda: s.execute(stmt))
        reads += 1
        if got != want:
            wrong.append({"case": label, "user": user, "prepared": prepared_stmt, "got": got, "want": want})

    rows, denied = repr([["secret"]]), "error:Unauthorized"
    for prep in (False, True):
        for _ in range(3):
            check("17 auth: the permitted user reads", "alice", rows, prep)
            check("17 auth: the superuser reads", "cassandra", rows, prep)
    for _ in range(3):
        check("17 auth: another user without SELECT", "bob", denied)
    root.execute(f"REVOKE SELECT ON TABLE {KS}.auth FROM alice")
    for prep in (False, True):
        for _ in range(3):
            check("17 auth: after REVOKE", "alice", denied, prep)
    root.execute(f"GRANT SELECT ON TABLE {KS}.auth TO alice")
    for _ in range(2):
        check("17 auth: after GRANT again", "alice", rows)
    for c, _ in clusters.values():
        c.shutdown()
    return {"reads": reads, "wrong": wrong}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m innet.appswitch.semantics")
    ap.add_argument("mode", choices=["truth", "cases", "random", "auth"])
    ap.add_argument("--host", required=True)
    ap.add_argument("--socket", default="", help="the truth's Unix socket (not for auth)")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="cases to run (default: all)")
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.mode == "truth":
        serve_truth(a.host, a.socket)
        return 0
    if a.mode == "auth":
        out = run_auth(a.host)
    elif a.mode == "cases":
        out = run_cases(a.host, a.socket, a.case or list(CASES))
    else:
        out = run_random(a.host, a.socket, a.ops, a.seed)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
