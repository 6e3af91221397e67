"""A history checker for the application switch (issue 36): every read of a recorded concurrent
history is checked against what a single-node key-value server could have returned in the read's
window, per key, and every operation against the fault windows (availability).

The model is a per-key register (Cassandra's single node at consistency ONE; Redis and memcached
alike): each write (a value, or ``None`` for a delete) takes effect at one instant inside its
window ``[invoked, completed]``; a write whose outcome is unknown (an error or a timeout:
``ok=False``) may take effect at any instant after it was invoked, or never. A write with a
TTL of ``T`` seconds taken at instant ``e`` is gone (reads give ``None``) from ``floor(e) + T``
on (Cassandra's ``nowInSec`` + TTL; the checker uses ``e - 1 + T`` for "may be gone", so it never
blames a read for an early expiry it cannot prove, and ``completed + T`` for "must be gone").

A server whose expiry clock is its own (memcached: ``current_time``, whole seconds advanced by a
once-a-second timer of its main thread, which runs late when that thread is starved of CPU) is
judged on that clock as sampled during the run (``ServerClock``: its ``stats`` ``time`` read from
inside the server's namespace): a write taken when the server's clock read ``C`` is gone once
the clock reads ``C + T``; the checker asks whether the sampled clock allows that in the read's
window, in both directions (an early ``None``, a late value).

A read that returned ``v`` in ``[a, b]`` is legal when some write ``w`` of ``v`` (or the initial
value) could be the latest one at some instant ``t`` in ``[a, b]``: ``w`` invoked before ``b``;
at ``t = max(a, w.invoked)`` with ``w`` taking effect at ``e = min(w.completed, t)`` (the latest
choice is always the most permissive), no other write certainly took effect in ``(e, t]``
(invoked after ``e`` and completed by ``t``), and ``w``'s TTL had not certainly run out at ``t``.
A ``None`` is also legal when a TTL'd write could have expired as the latest one. Verdicts:
``stale`` (the value had certainly been overwritten or expired before the read began), ``future``
(no write of it had been invoked before the read ended), ``unknown`` (never written at all).

Availability: an operation that waited longer than ``hang_s`` outside the fault windows (each
widened by ``grace_s``), counting one that never completed as waiting to the end of the
history, is a hang.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass
class Op:
    kind: str  # "read" | "write"
    key: str
    value: Any  # read: the value returned; write: the value written (None: a delete)
    invoked: float
    completed: float | None  # when the client got its answer (or error); None: never
    ttl: float | None = None  # seconds, writes only
    ok: bool = True  # False: an error or timeout (a read: nothing to check; a write: indeterminate)
    client: str = ""


@dataclass
class Verdict:
    reads_checked: int = 0
    impossible: list = field(default_factory=list)
    hangs: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.impossible and not self.hangs

    def summary(self) -> dict:
        return {"reads_checked": self.reads_checked, "impossible": len(self.impossible),
                "hangs": len(self.hangs), "first_impossible": self.impossible[:5], "first_hangs": self.hangs[:5]}


def _certain(w: Op) -> bool:
    """The write surely took effect by its completion (an acknowledged write)."""
    return w.ok and w.completed is not None


class _Overwrites:
    """The acknowledged writes of one key, to ask fast whether one certainly took effect inside
    `(e, t]`: invoked after `e` and completed by `t` (sorted by invocation, with the suffix
    minimum of completion times)."""

    def __init__(self, writes: list[Op]):
        certain = sorted((w.invoked, w.completed) for w in writes if _certain(w))
        self.invoked = [i for i, _ in certain]
        self.min_completed = [math.inf] * (len(certain) + 1)
        for i in range(len(certain) - 1, -1, -1):
            self.min_completed[i] = min(certain[i][1], self.min_completed[i + 1])

    def between(self, e: float, t: float) -> bool:
        return self.min_completed[bisect.bisect_right(self.invoked, e)] <= t


class ServerClock:
    """A server's expiry clock sampled during the run: ``(sent, received, clock)`` per sample —
    the wall times a probe was sent and answered, and the server clock it read (whole seconds,
    never decreasing). ``at_least(x)``: the clock surely read at least this at wall time ``x``
    (the largest reading answered by ``x``); ``at_most(x)``: at most this (the smallest reading
    asked for at or after ``x``). Outside the samples, no bound (``-inf`` / ``inf``)."""

    def __init__(self, samples: Iterable[tuple[float, float, float]]):
        samples = list(samples)
        by_recv = sorted((r, c) for _, r, c in samples)
        self.recv = [r for r, _ in by_recv]
        self.run_max = []
        m = -math.inf
        for _, c in by_recv:
            m = max(m, c)
            self.run_max.append(m)
        by_sent = sorted((s, c) for s, _, c in samples)
        self.sent = [s for s, _ in by_sent]
        self.suffix_min = [math.inf] * (len(by_sent) + 1)
        for i in range(len(by_sent) - 1, -1, -1):
            self.suffix_min[i] = min(by_sent[i][1], self.suffix_min[i + 1])

    def at_least(self, x: float) -> float:
        i = bisect.bisect_right(self.recv, x)
        return self.run_max[i - 1] if i else -math.inf

    def at_most(self, x: float) -> float:
        return self.suffix_min[bisect.bisect_left(self.sent, x)]

    def earliest(self, reading: float) -> float:
        """The earliest wall time at which the clock may read `reading` (just after the last
        sample asked for that still read less; ``-inf`` if none did)."""
        i = bisect.bisect_left(self.suffix_min, reading)
        return self.sent[i - 1] if i else -math.inf


def _may_source(w: Op, r: Op, over: _Overwrites, slack: float = 0.0, clock: ServerClock | None = None) -> bool:
    """Could `w`'s value be what `r` read, at some instant of `r`'s window? (`w` itself is
    never counted as its own overwrite: it is invoked at or before `e`.)"""
    a, b = r.invoked, r.completed
    if w.invoked > b:
        return False
    t = max(a, w.invoked)
    e = min(w.completed, t) if _certain(w) else t
    if over.between(e, t):
        return False
    if w.ttl is not None and _certain(w):
        if clock is not None:
            # Live at t only if the server's clock could still read below its reading at the
            # write (at most the first sample asked after the write completed) plus T.
            if clock.at_least(t) >= clock.at_most(w.completed) + w.ttl:
                return False
        elif t >= w.completed + w.ttl + slack:
            return False  # it had certainly expired by then
    return True


def _may_be_expired(w: Op, r: Op, over: _Overwrites, clock: ServerClock | None = None) -> bool:
    """Could `r` have read `None` because `w` (with a TTL) was the latest write and had expired?"""
    if w.ttl is None:
        return False
    a, b = r.invoked, r.completed
    e = w.invoked  # the earliest it could take effect: the earliest it could expire
    if clock is not None:
        # Gone by b only if the server's clock could read its reading at the write (at least
        # the last sample answered before the write was sent) plus T by then.
        reading = clock.at_least(e) + w.ttl
        if clock.at_most(b) < reading:
            return False
        return not over.between(e, max(a, e, clock.earliest(reading)))
    gone = e - 1 + w.ttl  # floor(e) + T >= e - 1 + T
    if gone > b:
        return False
    return not over.between(e, max(a, gone, e))


def _merged(windows: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(windows):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def check(ops: Iterable[Op], initial: dict | None = None, faults: Iterable[tuple[float, float]] = (),
          hang_s: float = 5.0, grace_s: float = 5.0, expiry_slack: float = 0.0,
          server_clock: ServerClock | None = None) -> Verdict:
    """Check every read of `ops` (per key; `initial`: key -> value before the history, default
    absent) and every operation's duration against the fault windows `faults` ([start, end]).
    `expiry_slack`: how late the server may drop an expired value (memcached's clock ticks once a
    second: 1 s; Redis compares milliseconds, `now > when`: 1 ms; Cassandra: 0, its
    `floor(now) >= floor(write) + TTL` holds for any read begun TTL after the write ended).
    `server_clock`: the server's sampled expiry clock; when given, TTLs are judged on it instead
    (both directions; `expiry_slack` is then unused)."""
    initial = initial or {}
    ops = list(ops)
    by_key: dict[str, list[Op]] = {}
    for o in ops:
        if o.kind == "write":
            by_key.setdefault(o.key, []).append(o)
    over = {k: _Overwrites(ws) for k, ws in by_key.items()}
    by_value: dict[tuple, list[Op]] = {}
    ttl_writes: dict[str, list[Op]] = {}
    for k, ws in by_key.items():
        for w in ws:
            by_value.setdefault((k, w.value), []).append(w)
            if w.ttl is not None:
                ttl_writes.setdefault(k, []).append(w)
    none = _Overwrites([])
    v = Verdict()
    windows = _merged([(s - grace_s, e + grace_s) for s, e in faults])
    end_of_history = max((o.completed or o.invoked) for o in ops) if ops else 0.0
    for o in ops:
        done = o.completed
        end = done if done is not None else end_of_history
        # Time spent waiting outside every fault window (with its grace).
        took = (end - o.invoked) - sum(max(0.0, min(end, e) - max(o.invoked, s)) for s, e in windows)
        if took > hang_s:
            v.hangs.append({"op": o.kind, "key": o.key, "client": o.client, "invoked": o.invoked,
                            "waited_outside_faults_s": round(took, 3), "completed": done is not None})
        if o.kind != "read" or not o.ok or o.completed is None:
            continue
        v.reads_checked += 1
        ov = over.get(o.key, none)
        same = by_value.get((o.key, o.value), [])
        if initial.get(o.key) == o.value:
            same = [Op("write", o.key, o.value, -math.inf, -math.inf), *same]
        if any(_may_source(w, o, ov, expiry_slack, server_clock) for w in same):
            continue
        if o.value is None and any(_may_be_expired(w, o, ov, server_clock) for w in ttl_writes.get(o.key, [])):
            continue
        if not same:
            why = "unknown"
        elif all(w.invoked > o.completed for w in same):
            why = "future"
        else:
            why = "stale"
        item = {"verdict": why, "key": o.key, "client": o.client, "value": o.value, "invoked": o.invoked,
                "completed": o.completed}
        expired = [max(o.invoked, w.invoked) - (w.completed + w.ttl) for w in same if w.ttl is not None and _certain(w)]
        if expired:  # how long after its expiry deadline the read began (the TTL case)
            item["after_expiry_s"] = round(min(expired), 6)
        v.impossible.append(item)
    return v


# ---------------------------------------------------------------------------------------------
# The randomized concurrent workload (one process per client, in the client namespace) and the
# run: clients, the fault schedule on the switch, the check.

HIST_KS = "hist"


# Tables of a run: `kv` never gets a TTL (the switch caches it), `ttl` gets keyed TTL writes
# (its keys become volatile one by one), `tb` gets BATCHes with a TTL (the whole table becomes
# volatile). Register keys are "table:k".
HIST_TABLES = ("kv", "ttl", "tb")


def _volatile_draw(rng, r: float, keys: int, last_ttl: float, ttl_gap: float) -> tuple[int, float, float]:
    """A volatile key (drawn uniformly, so each is written now and then) and the operation draw
    `r` (a write from 0.7 up), with at most one write per `ttl_gap` s: a write drawn sooner
    becomes a read. Returns the key, the draw and the time of the last volatile write."""
    import time

    k = rng.randrange(keys)
    if r >= 0.7 and time.time() - last_ttl < ttl_gap:
        r = rng.random() * 0.7
    elif r >= 0.7:
        last_ttl = time.time()
    return k, r, last_ttl


def cql_client(host: str, name: str, protocol: int, compression: str, seed: int, duration: float, keys: int,
               ttl_range: tuple[int, int] = (2, 5), ttl_gap: float = 2.0) -> dict:
    """One client: for `duration` seconds, random operations on `keys` Zipf-skewed keys of the
    tables `HIST_TABLES` — reads (literal and prepared); on `kv` UPDATE / INSERT / DELETE and
    two-key BATCHes without TTL; on `ttl` UPDATE ... USING TTL (literal, and prepared with the
    TTL as a bind marker), UPDATE without TTL and DELETE; on `tb` two-key BATCHes of INSERT ...
    USING TTL and DELETE — each recorded with its invocation and completion time and outcome.
    Errors are recorded, never retried (a failed write is indeterminate). Writes to `ttl` and
    `tb` are at most one per `ttl_gap` seconds per client, on uniformly drawn keys, so a
    volatile key often goes unwritten for longer than its TTL: a switch that forgot it was
    volatile (issue 36: after a restart) would serve it past its expiry, and the check sees it."""
    import random
    import time

    from cassandra.cluster import Cluster
    from cassandra.policies import ConstantReconnectionPolicy, WhiteListRoundRobinPolicy
    from cassandra.query import BatchStatement

    from innet.appswitch.workload import zipf_sampler
    from innet.appswitch.cql_driver import fix_segment_reader

    fix_segment_reader()
    rng = random.Random(seed)
    cluster = Cluster(contact_points=[host], load_balancing_policy=WhiteListRoundRobinPolicy([host]),
                      protocol_version=protocol, compression={"none": False}.get(compression, compression),
                      connect_timeout=10, control_connection_timeout=10,
                      reconnection_policy=ConstantReconnectionPolicy(0.5, None))
    s = cluster.connect()
    s.default_timeout = 4
    prep_read = {t: s.prepare(f"SELECT v FROM {HIST_KS}.{t} WHERE k = ?") for t in HIST_TABLES}
    prep_ttl = s.prepare(f"UPDATE {HIST_KS}.ttl USING TTL ? SET v = ? WHERE k = ?")
    prep_ins = s.prepare(f"INSERT INTO {HIST_KS}.kv (k, v) VALUES (?, ?)")
    draw = zipf_sampler(keys, 1.0, rng)
    ops: list[dict] = []
    seq = 0
    last_ttl = 0.0
    end = time.time() + duration
    while time.time() < end:
        k = draw()
        r = rng.random()
        table = "kv" if r < 0.6 else "ttl" if r < 0.85 else "tb"
        r = rng.random()
        if table != "kv":
            k, r, last_ttl = _volatile_draw(rng, r, keys, last_ttl, ttl_gap)
        seq += 1
        val = f"{name}-{seq}"
        rec: dict = {"client": name, "key": f"{table}:{k}"}
        t0 = time.time()
        try:
            if r < 0.35:
                rec.update(kind="read", how="literal")
                row = s.execute(f"SELECT v FROM {HIST_KS}.{table} WHERE k = {k}").one()
                rec["value"] = row.v if row else None
            elif r < 0.70:
                rec.update(kind="read", how="prepared")
                row = s.execute(prep_read[table], (k,)).one()
                rec["value"] = row.v if row else None
            elif r < 0.78 or table == "tb" and r < 0.95:
                k2 = (k + 1 + rng.randrange(keys - 1)) % keys
                ttl = rng.randint(*ttl_range) if table == "tb" else None
                using = f" USING TTL {ttl}" if ttl else ""
                b = BatchStatement()
                bt = "tb" if table == "tb" else "kv"
                b.add(f"INSERT INTO {HIST_KS}.{bt} (k, v) VALUES ({k}, '{val}'){using}")
                b.add(f"INSERT INTO {HIST_KS}.{bt} (k, v) VALUES ({k2}, '{val}b'){using}")
                rec.update(kind="write", key=f"{bt}:{k}", value=val, ttl=ttl, how="batch",
                           also={"key": f"{bt}:{k2}", "value": f"{val}b"})
                s.execute(b)
            elif r < 0.95 and table == "ttl":
                ttl = rng.randint(*ttl_range)
                if rng.random() < 0.2:  # INSERT ... USING TTL then UPDATE without: still volatile
                    rec.update(kind="write", value=val, how="update")
                    s.execute(f"UPDATE {HIST_KS}.ttl SET v = '{val}' WHERE k = {k}")
                elif rng.random() < 0.5:
                    rec.update(kind="write", value=val, ttl=ttl, how="ttl")
                    s.execute(f"UPDATE {HIST_KS}.ttl USING TTL {ttl} SET v = '{val}' WHERE k = {k}")
                else:
                    rec.update(kind="write", value=val, ttl=ttl, how="ttl")
                    s.execute(prep_ttl, (ttl, val, k))
            elif r < 0.87:
                rec.update(kind="write", value=val, how="update")
                s.execute(f"UPDATE {HIST_KS}.kv SET v = '{val}' WHERE k = {k}")
            elif r < 0.95:
                rec.update(kind="write", value=val, how="insert")
                s.execute(prep_ins, (k, val))
            else:
                rec.update(kind="write", value=None, how="delete")
                s.execute(f"DELETE FROM {HIST_KS}.{table} WHERE k = {k}")
            rec["ok"] = True
        except Exception as e:  # timeouts, resets: recorded; a write's outcome is then unknown
            rec["ok"] = False
            rec["error"] = type(e).__name__
        rec["invoked"], rec["completed"] = t0, time.time()
        ops.append(rec)
        if not rec["ok"]:
            time.sleep(0.05)
    cluster.shutdown()
    return {"client": name, "protocol": protocol, "compression": compression, "ops": ops}


def kv_client(proto: str, host: str, port: int, name: str, seed: int, duration: float, keys: int,
              ttl_range: tuple[int, int] = (2, 5), ttl_gap: float = 2.0) -> dict:
    """One Redis or memcached client on one raw connection (reconnecting after an error): for
    `duration` seconds, random operations on `keys` Zipf-skewed keys: GET; SET without expiry
    (keys k0..), SET with an expiry (Redis `SET ... EX`, memcached exptime) on the volatile keys
    t0..; DEL / delete — recorded as `cql_client` records them."""
    import random
    import socket
    import time

    from innet.appswitch.workload import zipf_sampler

    rng = random.Random(seed)
    draw = zipf_sampler(keys, 1.0, rng)

    class Conn:
        def __init__(self):
            self.s = socket.create_connection((host, port), timeout=4)
            self.buf = b""

        def line(self) -> bytes:
            while b"\r\n" not in self.buf:
                c = self.s.recv(65536)
                if not c:
                    raise ConnectionError("closed")
                self.buf += c
            ln, _, self.buf = self.buf.partition(b"\r\n")
            return ln

        def exact(self, n: int) -> bytes:
            while len(self.buf) < n + 2:
                c = self.s.recv(65536)
                if not c:
                    raise ConnectionError("closed")
                self.buf += c
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v

        def redis(self, *args: bytes):
            self.s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
            ln = self.line()
            if ln.startswith(b"$"):
                n = int(ln[1:])
                return None if n < 0 else self.exact(n).decode()
            if ln.startswith(b"-"):
                raise RuntimeError(ln.decode())
            return ln.decode()

        def mc(self, req: bytes):
            self.s.sendall(req)
            ln = self.line()
            if ln.startswith(b"VALUE "):
                v = self.exact(int(ln.split()[3])).decode()
                assert self.line() == b"END"
                return v
            if ln in (b"END", b"STORED", b"DELETED", b"NOT_FOUND"):
                return None
            raise RuntimeError(ln.decode())

    conn: Conn | None = None
    ops: list[dict] = []
    seq = 0
    last_ttl = 0.0
    end = time.time() + duration
    while time.time() < end:
        k = draw()
        volatile = rng.random() < 0.3
        r = rng.random()
        if volatile:
            k, r, last_ttl = _volatile_draw(rng, r, keys, last_ttl, ttl_gap)
        key = f"{'t' if volatile else 'k'}{k}"
        seq += 1
        val = f"{name}-{seq}"
        rec: dict = {"client": name, "key": key}
        t0 = time.time()
        try:
            if conn is None:
                conn = Conn()
            kb, vb = key.encode(), val.encode()
            if r < 0.7:
                rec.update(kind="read", how="get")
                rec["value"] = conn.redis(b"GET", kb) if proto == "redis" else conn.mc(b"get %s\r\n" % kb)
            elif r < 0.93:
                ttl = rng.randint(*ttl_range) if volatile else None
                rec.update(kind="write", value=val, ttl=ttl, how="set-ttl" if ttl else "set")
                if proto == "redis":
                    extra = (b"EX", str(ttl).encode()) if ttl else ()
                    conn.redis(b"SET", kb, vb, *extra)
                else:
                    conn.mc(b"set %s 0 %d %d\r\n%s\r\n" % (kb, ttl or 0, len(vb), vb))
            else:
                rec.update(kind="write", value=None, how="delete")
                if proto == "redis":
                    conn.redis(b"DEL", kb)
                else:
                    conn.mc(b"delete %s\r\n" % kb)
            rec["ok"] = True
        except Exception as e:  # a reset, a timeout: reconnect; a write's outcome is unknown
            rec["ok"] = False
            rec["error"] = type(e).__name__
            if conn is not None:
                conn.s.close()
            conn = None
        rec["invoked"], rec["completed"] = t0, time.time()
        ops.append(rec)
        if not rec["ok"]:
            time.sleep(0.05)
    return {"client": name, "protocol": proto, "compression": "none", "ops": ops}


def clock_client(host: str, port: int, duration: float, interval: float = 0.05) -> dict:
    """memcached's expiry clock sampled from inside the server's namespace (straight to the
    server, never through the switch): every `interval` s a `stats`, recording the wall times
    it was sent and answered and the server's `time` (its `current_time` plus a constant)."""
    import socket
    import time

    s = socket.create_connection((host, port), timeout=10)
    out = []
    end = time.time() + duration
    while time.time() < end:
        sent = time.time()
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            c = s.recv(65536)
            if not c:
                raise ConnectionError("memcached closed the clock probe's connection")
            buf += c
        recv = time.time()
        t = next(int(ln.split()[2]) for ln in buf.split(b"\r\n") if ln.startswith(b"STAT time "))
        out.append((sent, recv, t))
        time.sleep(interval)
    return {"clock": out}


def ops_of(records: list[dict]) -> list[Op]:
    """Recorded operations as the checker's `Op`s (a BATCH gives one write per key)."""
    out = []
    for r in records:
        out.append(Op(r["kind"], r["key"], r.get("value"), r["invoked"], r["completed"], r.get("ttl"),
                      ok=r["ok"], client=r["client"]))
        if "also" in r:
            out.append(Op("write", r["also"]["key"], r["also"]["value"], r["invoked"], r["completed"], r.get("ttl"),
                          ok=r["ok"], client=r["client"]))
    return out


# The clients of a run: (protocol version, compression), one process each.
CLIENTS = [(4, "lz4"), (5, "none"), (4, "none"), (5, "lz4"), (4, "snappy"), (5, "none")]


def fault_schedule(duration: float, link: bool = False) -> list[tuple[float, str, float]]:
    """(at seconds into the run, fault, how long): SIGKILL and SIGTERM restarts of the switch
    and a SIGSTOP pause, spread over the run and repeated for long runs; with `link`, also a
    throttled link window (`throttle`: delay and tail-drop loss, below)."""
    base = [(0.2, "sigkill", 0.3), (0.45, "sigstop", 3.0), (0.7, "sigterm", 0.3)]
    if link:
        base.append((0.85, "throttle", 3.0))
    rounds = max(1, int(duration // 100))
    out = []
    for i in range(rounds):
        for frac, kind, hold in base:
            out.append(((i + frac) * duration / rounds, kind, hold))
    return out


def run_history(t, duration: float, keys: int = 8, clients: int = 4, seed: int = 1, impair: list[str] | None = None,
                state_file: str = "", stats_dir=None, link: bool = True, protocol: str = "cql",
                port: int = 0) -> dict:
    """A run against the real rig `t` (a Topology with Cassandra — or, `protocol` "redis" /
    "memcached", that server on `port` — up): the data set up from the server's namespace, the
    switch started (`impair`: its --loss/--reorder), `clients` client processes for `duration` s
    while the fault schedule hits the switch, then every read checked. Returns the verdict's
    summary with the run's counts and fault windows."""
    import json
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from innet.netns import REPO

    if protocol == "cql":
        setup = ("import sys\nsys.path.insert(0, sys.argv[2])\nfrom innet.appswitch.workload import cql_session\n"
                 "c, s = cql_session(sys.argv[1], None, 'none')\n"
                 f"s.execute(\"CREATE KEYSPACE IF NOT EXISTS {HIST_KS} WITH replication = "
                 "{'class': 'SimpleStrategy', 'replication_factor': 1}\")\n"
                 f"for t in {HIST_TABLES!r}:\n"
                 f"    s.execute(f'CREATE TABLE IF NOT EXISTS {HIST_KS}.{{t}} (k int PRIMARY KEY, v text)')\n"
                 f"    s.execute(f'TRUNCATE {HIST_KS}.{{t}}')\n"
                 f"    for k in range({keys}): s.execute(f'INSERT INTO {HIST_KS}.{{t}} (k, v) VALUES (%s, %s)', (k, 'init'))\n"
                 "c.shutdown()\n")
        t.exec(t.server, [sys.executable, "-c", setup, t.server_ip, str(REPO / "python")], timeout=180)
        initial = {f"{tb}:{k}": "init" for tb in HIST_TABLES for k in range(keys)}
    else:
        flush = ("import socket, sys\ns = socket.create_connection((sys.argv[1], int(sys.argv[2])), 10)\n"
                 "s.sendall(b'*1\\r\\n$8\\r\\nFLUSHALL\\r\\n' if sys.argv[3] == 'redis' else b'flush_all\\r\\n')\n"
                 "assert s.recv(100).startswith((b'+OK', b'OK'))\n")
        t.exec(t.server, [sys.executable, "-c", flush, t.server_ip, str(port), protocol], timeout=60)
        initial = {}
    stats_dir = Path(stats_dir or "/tmp")
    sets = {"protocol": protocol, "cache_entries": "64"}
    sets["state_file"] = state_file or "off"  # off: what issue 36 found (the check must fail)
    extra = list(impair or [])
    n_switch = [0]

    def start():
        n_switch[0] += 1
        t.start_switch("appswitch", sets, extra=[*extra, "--stats-json", str(stats_dir / f"stats{n_switch[0]}.json")])

    start()
    procs = []
    for i in range(clients):
        proto, comp = CLIENTS[i % len(CLIENTS)]
        args = ["--host", t.server_ip, "--name", f"c{i}", "--seed", str(seed * 100 + i), "--duration", str(duration),
                "--keys", str(keys)]
        if protocol == "cql":
            args = ["cql-client", *args, "--protocol", str(proto), "--compression", comp]
        else:
            args = ["kv-client", *args, "--proto", protocol, "--port", str(port)]
        procs.append(t.popen(t.client, [sys.executable, "-m", "innet.appswitch.history", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    clock_proc = None
    if protocol == "memcached":  # its expiry clock, sampled beside the clients (`ServerClock`)
        clock_proc = t.popen(t.server, [sys.executable, "-m", "innet.appswitch.history", "clock-client", "--host",
                                        t.server_ip, "--port", str(port), "--duration", str(duration + 10)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.time() + (8 if protocol == "cql" else 0.5)  # the clients' connect time, roughly
    windows, schedule = [], fault_schedule(duration, link)
    for at, kind, hold in schedule:
        while time.time() < t0 + at:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.05)
        start_f = time.time()
        if kind == "throttle":
            # This kernel has no sch_netem and no tc classifiers or actions, but has tbf: both
            # ends' links are cut to 256 kbit/s with a 300 ms queue, so frames wait (delay) and
            # those beyond the queue are dropped (loss in bursts), in both directions.
            links = [(t.client, t.client_if), (t.server, t.server_if)]
            for ns, dev in links:
                t.exec(ns, ["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "256kbit", "burst", "4kb",
                            "latency", "300ms"])
            time.sleep(hold)
            for ns, dev in links:
                t.exec(ns, ["tc", "qdisc", "del", "dev", dev, "root"], check=False)
        elif kind == "sigstop":
            t.switch.send_signal(signal.SIGSTOP)
            time.sleep(hold)
            t.switch.send_signal(signal.SIGCONT)
        else:
            t.stop_switch(signal.SIGKILL if kind == "sigkill" else signal.SIGTERM)
            time.sleep(hold)
            start()
        windows.append((start_f, time.time(), kind))
    results = []
    for p in procs:
        o, e = p.communicate(timeout=duration + 300)
        if p.returncode != 0:
            raise RuntimeError(f"client failed ({p.returncode}): {e.decode(errors='replace')[-3000:]}")
        results.append(json.loads(o))
    code, _ = t.stop_switch()
    clock = None
    if clock_proc is not None:
        o, e = clock_proc.communicate(timeout=60)
        if clock_proc.returncode != 0:
            raise RuntimeError(f"clock probe failed ({clock_proc.returncode}): {e.decode(errors='replace')[-3000:]}")
        clock = json.loads(o)["clock"]
    records = [r for res in results for r in res["ops"]]
    ops = ops_of(records)
    v = check(ops, initial=initial, faults=[(s, e) for s, e, _ in windows], hang_s=6.0, grace_s=6.0,
              expiry_slack={"redis": 0.001}.get(protocol, 0.0),
              server_clock=ServerClock(clock) if clock is not None else None)
    counts: dict = {}
    for r in records:
        key = f"{r['kind']}:{r.get('how')}:{'ok' if r['ok'] else 'error'}"
        counts[key] = counts.get(key, 0) + 1
    stats = []
    impairment = {"impair_dropped": 0, "impair_reordered": 0, "impair_duplicated": 0}
    for i in range(1, n_switch[0] + 1):
        f = stats_dir / f"stats{i}.json"
        if f.exists():
            js = json.loads(f.read_text())
            stats.append(js.get("program_report"))
            for k in impairment:  # what the switch's own link impairment did (instances with stats)
                impairment[k] += int(js.get(k, 0))
    return {**v.summary(), "ops": len(records), "counts": counts, "clients": [(r["client"], r["protocol"], r["compression"]) for r in results],
            "faults": [{"kind": k, "start": round(s - t0, 2), "end": round(e - t0, 2)} for s, e, k in windows],
            "switch_stats": stats, "impairment": impairment, "impossible_all": v.impossible, "hangs_all": v.hangs, "records": records,
            "server_clock": clock}


def main(argv: list[str]) -> int:
    import argparse
    import json
    import sys

    ap = argparse.ArgumentParser(prog="python3 -m innet.appswitch.history")
    ap.add_argument("kind", choices=["cql-client", "kv-client", "clock-client"])
    ap.add_argument("--proto", choices=["redis", "memcached"], default="redis")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--host", required=True)
    ap.add_argument("--name", default="c0")
    ap.add_argument("--protocol", type=int, default=4)
    ap.add_argument("--compression", default="none")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--keys", type=int, default=8)
    a = ap.parse_args(argv)
    if a.kind == "clock-client":
        out = clock_client(a.host, a.port, a.duration)
    elif a.kind == "cql-client":
        out = cql_client(a.host, a.name, a.protocol, a.compression, a.seed, a.duration, a.keys)
    else:
        out = kv_client(a.proto, a.host, a.port, a.name, a.seed, a.duration, a.keys)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
