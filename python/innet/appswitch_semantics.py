"""What a CQL read through the application switch means, checked against the truth: every read a
client sends through the switch is compared with what Cassandra itself answers at that moment,
read on a second driver connection opened inside the server's namespace (no switch on its path).

Two processes: `truth` runs in the server namespace and answers CQL text sent over a Unix socket
(a Unix socket is reachable from every network namespace); `cases` / `random` run in the client
namespace, talk to Cassandra through the switch, and ask the truth before and after each read
(with no concurrent writes, the answer must equal one of the two: the value at some moment of
the read). Issue 23's statement cases 1-8 are `cases`; `random` issues random writes and reads
(typed keys in several spellings, TTLs, comments, consistency levels, time-dependent selectors).

    python -m innet.appswitch_semantics truth --host IP --socket PATH
    python -m innet.appswitch_semantics cases --host IP --socket PATH      # JSON per case
    python -m innet.appswitch_semantics random --host IP --socket PATH --ops N --seed S
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

from innet.appswitch_workload import cql_session

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


def case_consistency(c: Checker) -> None:
    s = c.s
    s.execute(f"CREATE TABLE {KS}.t7 (k text PRIMARY KEY, v text)")
    c.write(f"INSERT INTO {KS}.t7 (k, v) VALUES ('a', 'x')")
    q = f"SELECT v FROM {KS}.t7 WHERE k = 'a'"
    prep = s.prepare(q)
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


CASES = {
    "1_default_ttl": case_default_ttl,
    "2_ttl_unkeyed": case_ttl_unkeyed,
    "3_view": case_view,
    "4_typed_keys": case_typed_keys,
    "5_time_dependent": case_time_dependent,
    "6_bound_values": case_bound_values,
    "7_consistency": case_consistency,
    "8_comments": case_comments,
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m innet.appswitch_semantics")
    ap.add_argument("mode", choices=["truth", "cases", "random"])
    ap.add_argument("--host", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="cases to run (default: all)")
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.mode == "truth":
        serve_truth(a.host, a.socket)
        return 0
    if a.mode == "cases":
        out = run_cases(a.host, a.socket, a.case or list(CASES))
    else:
        out = run_random(a.host, a.socket, a.ops, a.seed)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
