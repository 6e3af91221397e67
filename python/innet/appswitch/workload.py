"""Client workloads for the application switch, run with real drivers (redis-py, the DataStax
cassandra-driver) against a real server through the switch. Each checks every answer against a
model of what the server holds (this client is the only writer, and its operations are
sequential, so the model is exact at every moment) and reports counts and latencies as JSON.

    python3 -m innet.appswitch.workload redis --host 10.77.0.2 --ops 10000
    python3 -m innet.appswitch.workload cql --host 10.77.0.2 --ops 10000 [--protocol 4|5]
    python3 -m innet.appswitch.workload turnaround --host 10.77.0.2 ...   (Fig. 12 workload)
    python3 -m innet.appswitch.workload connections --host 10.77.0.2 --conns 8 ...   (Fig. 17)
    python3 -m innet.appswitch.workload timeline --host 10.77.0.2 --ops 20 ...   (Figs. 13-14)

Exit status 1 and a "wrong" list when any answer differed from the model.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time


def zipf_sampler(n: int, s: float, rng: random.Random):
    weights = [1.0 / (i + 1) ** s for i in range(n)]
    total = sum(weights)
    cum, acc = [], 0.0
    for w in weights:
        acc += w / total
        cum.append(acc)

    def draw() -> int:
        import bisect
        return min(bisect.bisect_left(cum, rng.random()), n - 1)

    return draw


def redis_mixed(host: str, port: int, ops: int, keys: int, conns: int, seed: int) -> dict:
    import redis

    rng = random.Random(seed)
    clients = [redis.Redis(host=host, port=port, socket_timeout=30, socket_connect_timeout=10) for _ in range(conns)]
    model: dict[str, bytes | None] = {}
    for k in range(keys):
        v = f"v{k}-0".encode()
        clients[0].set(f"k{k}", v)
        model[f"k{k}"] = v
    draw = zipf_sampler(keys, 1.0, rng)
    wrong, counts, errors = [], {"get": 0, "set": 0, "del": 0, "pipeline": 0}, 0
    t0 = time.perf_counter()
    for i in range(ops):
        c = clients[i % conns]
        k = f"k{draw()}"
        r = rng.random()
        try:
            if r < 0.75:
                got = c.get(k)
                counts["get"] += 1
                if got != model[k]:
                    wrong.append({"op": i, "key": k, "got": repr(got), "want": repr(model[k])})
            elif r < 0.9:
                v = f"v{k}-{i}".encode()
                c.set(k, v)
                model[k] = v
                counts["set"] += 1
            elif r < 0.95:
                c.delete(k)
                model[k] = None
                counts["del"] += 1
            else:
                # Pipelined GETs in one segment (several requests, one answer from the switch).
                p = c.pipeline(transaction=False)
                ks = [f"k{draw()}" for _ in range(3)]
                for kk in ks:
                    p.get(kk)
                for kk, got in zip(ks, p.execute()):
                    if got != model[kk]:
                        wrong.append({"op": i, "key": kk, "got": repr(got), "want": repr(model[kk])})
                counts["pipeline"] += 1
        except Exception as e:  # a reset or timeout is a failure of the switch too
            errors += 1
            wrong.append({"op": i, "error": repr(e)})
    elapsed = time.perf_counter() - t0
    return {"ops": ops, "counts": counts, "errors": errors, "wrong": wrong[:20], "wrong_count": len(wrong),
            "elapsed_s": elapsed, "model": {k: (v.decode() if v is not None else None) for k, v in model.items()}}


def memcached_mixed(host: str, port: int, ops: int, keys: int, conns: int, seed: int) -> dict:
    """Mixed memcached traffic through pymemcache on `conns` connections, every read checked
    against the model: get, set (with a reply, and noreply followed by a get on the same
    connection, which orders it), delete, multi-key get, pipelined gets in one segment (a raw
    socket), and a key with a 1 s expiry read before and after it expires (the switch must never
    answer it from the cache)."""
    import socket as _socket

    from pymemcache.client.base import Client

    rng = random.Random(seed)
    clients = [Client((host, port), connect_timeout=10, timeout=30, default_noreply=False) for _ in range(conns)]
    model: dict[str, bytes | None] = {}
    for k in range(keys):
        v = f"v{k}-0".encode()
        clients[0].set(f"k{k}", v)
        model[f"k{k}"] = v
    draw = zipf_sampler(keys, 1.0, rng)
    wrong: list[dict] = []
    counts = {"get": 0, "set": 0, "set_noreply": 0, "delete": 0, "get_many": 0, "pipeline": 0, "expiry": 0}
    errors = 0

    def check(i: int, k: str, got: bytes | None) -> None:
        if got != model[k]:
            wrong.append({"op": i, "key": k, "got": repr(got), "want": repr(model[k])})

    raw = _socket.create_connection((host, port), timeout=30)
    rbuf = b""

    def raw_gets(ks: list[str]) -> list[bytes | None]:
        nonlocal rbuf
        raw.sendall(b"".join(f"get {k}\r\n".encode() for k in ks))
        out: list[bytes | None] = []
        while len(out) < len(ks):
            while b"END\r\n" not in rbuf:
                chunk = raw.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                rbuf += chunk
            head, _, rbuf = rbuf.partition(b"END\r\n")
            if head.startswith(b"VALUE "):
                line, _, rest = head.partition(b"\r\n")
                n = int(line.split()[3])
                out.append(rest[:n])
            else:
                out.append(None)
        return out

    t0 = time.perf_counter()
    for i in range(ops):
        c = clients[i % conns]
        k = f"k{draw()}"
        r = rng.random()
        try:
            if r < 0.70:
                check(i, k, c.get(k))
                counts["get"] += 1
            elif r < 0.80:
                v = f"v{k}-{i}".encode()
                assert c.set(k, v, noreply=False)
                model[k] = v
                counts["set"] += 1
            elif r < 0.85:
                v = f"n{k}-{i}".encode()
                c.set(k, v, noreply=True)
                model[k] = v
                check(i, k, c.get(k))
                counts["set_noreply"] += 1
            elif r < 0.90:
                c.delete(k, noreply=False)
                model[k] = None
                counts["delete"] += 1
            elif r < 0.95:
                ks = sorted({f"k{draw()}" for _ in range(3)})
                got = c.get_many(ks)
                for kk in ks:
                    check(i, kk, got.get(kk))
                counts["get_many"] += 1
            else:
                ks = [f"k{draw()}" for _ in range(3)]
                for kk, got in zip(ks, raw_gets(ks)):
                    check(i, kk, got)
                counts["pipeline"] += 1
        except Exception as e:  # a reset or timeout is a failure of the switch too
            errors += 1
            wrong.append({"op": i, "error": repr(e)})
    # Expiry: read twice (would be learned and answered), then after it expired.
    try:
        clients[0].set("ttl", b"soon-gone", expire=1, noreply=False)
        for _ in range(3):
            if clients[1 % conns].get("ttl") != b"soon-gone":
                wrong.append({"op": "ttl-before", "got": "other"})
        time.sleep(2.2)
        got = clients[1 % conns].get("ttl")
        if got is not None:
            wrong.append({"op": "ttl-after", "key": "ttl", "got": repr(got), "want": "None (expired)"})
        counts["expiry"] += 1
    except Exception as e:
        errors += 1
        wrong.append({"op": "ttl", "error": repr(e)})
    elapsed = time.perf_counter() - t0
    raw.close()
    return {"ops": ops, "counts": counts, "errors": errors, "wrong": wrong[:20], "wrong_count": len(wrong),
            "elapsed_s": elapsed, "model": {k: (v.decode() if v is not None else None) for k, v in model.items()}}


def cql_session(host: str, protocol: int | None, compression: str = "auto"):
    """A driver session. `compression`: "auto" (the driver's default: LZ4 when the lz4 package
    is installed, else Snappy when python-snappy is), "none", "lz4" or "snappy"."""
    from cassandra.cluster import Cluster
    from cassandra.policies import WhiteListRoundRobinPolicy

    from innet.appswitch.cql_driver import fix_segment_reader

    fix_segment_reader()  # the driver's v5 reader loses bytes at some read boundaries

    kw = {"contact_points": [host], "load_balancing_policy": WhiteListRoundRobinPolicy([host]),
          "connect_timeout": 30, "control_connection_timeout": 30,
          "compression": {"auto": True, "none": False}.get(compression, compression)}
    if protocol:
        kw["protocol_version"] = protocol
    cluster = Cluster(**kw)
    session = cluster.connect()
    session.default_timeout = 30
    return cluster, session


def wait_schema_agreement(session, timeout_s: float = 120.0) -> None:
    """Wait until every node reports the coordinator's schema version. The driver's own wait
    skips nodes its load-balancing policy ignores (the sessions here are pinned to one node), so
    on a two-node cluster a write could reach a node that has not yet applied CREATE TABLE
    (INCOMPATIBLE_SCHEMA). Raises TimeoutError naming the versions seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        local = session.execute("SELECT schema_version FROM system.local WHERE key = 'local'").one()
        peers = [r.schema_version for r in session.execute("SELECT schema_version FROM system.peers")]
        versions = {local.schema_version, *peers}
        if len(versions) == 1:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"no schema agreement after {timeout_s:.0f} s: versions {sorted(map(str, versions))}")
        time.sleep(0.2)


def negotiated_compression(cluster) -> str | None:
    """The compression the driver's control connection negotiated (None: uncompressed)."""
    from cassandra.connection import locally_supported_compressions

    d = cluster.control_connection._connection.decompressor
    return next((k for k, (_, dec) in locally_supported_compressions.items() if dec is d), None)


def cql_mixed(host: str, ops: int, keys: int, seed: int, protocol: int | None, compression: str = "auto") -> dict:
    rng = random.Random(seed)
    cluster, s = cql_session(host, protocol, compression)
    s.execute("CREATE KEYSPACE IF NOT EXISTS innet WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE IF NOT EXISTS innet.kv (k int PRIMARY KEY, v text)")
    s.execute("TRUNCATE innet.kv")
    sel = s.prepare("SELECT v FROM innet.kv WHERE k = ?")
    upd = s.prepare("UPDATE innet.kv SET v = ? WHERE k = ?")
    ins = s.prepare("INSERT INTO innet.kv (k, v) VALUES (?, ?)")
    dele = s.prepare("DELETE FROM innet.kv WHERE k = ?")
    model: dict[int, str | None] = {}
    for k in range(keys):
        s.execute(ins, (k, f"v{k}-0"))
        model[k] = f"v{k}-0"
    draw = zipf_sampler(keys, 1.0, rng)
    wrong, errors = [], 0
    counts = {"select_prepared": 0, "select_literal": 0, "update": 0, "insert": 0, "delete": 0, "update_literal": 0}
    t0 = time.perf_counter()
    for i in range(ops):
        k = draw()
        r = rng.random()
        try:
            if r < 0.65:
                row = s.execute(sel, (k,)).one()
                counts["select_prepared"] += 1
            elif r < 0.8:
                row = s.execute(f"SELECT v FROM innet.kv WHERE k = {k}").one()
                counts["select_literal"] += 1
            else:
                row = None
                v = f"v{k}-{i}"
                if r < 0.88:
                    s.execute(upd, (v, k))
                    counts["update"] += 1
                elif r < 0.93:
                    s.execute(ins, (k, v))
                    counts["insert"] += 1
                elif r < 0.97:
                    s.execute(dele, (k,))
                    v = None
                    counts["delete"] += 1
                else:
                    s.execute(f"UPDATE innet.kv SET v = '{v}' WHERE k = {k}")
                    counts["update_literal"] += 1
                model[k] = v
                continue
            got = row.v if row is not None else None
            if got != model[k]:
                wrong.append({"op": i, "key": k, "got": got, "want": model[k]})
        except Exception as e:
            errors += 1
            wrong.append({"op": i, "error": repr(e)})
    elapsed = time.perf_counter() - t0
    version = cluster.protocol_version
    used = negotiated_compression(cluster)
    cluster.shutdown()
    return {"ops": ops, "counts": counts, "errors": errors, "wrong": wrong[:20], "wrong_count": len(wrong),
            "elapsed_s": elapsed, "protocol_version": version, "compression": used,
            "model": {str(k): v for k, v in model.items()}}


def cql_read_model(host: str, protocol: int | None, keys: int) -> dict:
    """What the server holds (read on a path without the switch)."""
    cluster, s = cql_session(host, protocol)
    out = {}
    for k in range(keys):
        row = s.execute(f"SELECT v FROM innet.kv WHERE k = {k}").one()
        out[str(k)] = row.v if row is not None else None
    cluster.shutdown()
    return out


def fig12_key(n: int, i: int) -> str:
    """Key i (0..255) of table t_n: exactly n characters (n = 1 uses 256 distinct letters)."""
    return chr(0x100 + i) if n == 1 else format(i, f"0{n}x")


def fig12_table(n: int) -> str:
    return "t" * n


def lexical_query(n: int, i: int) -> str:
    """The literal (unprepared) SELECT of Fig. 19: every statement of one table has the same
    layout, so the table and the key sit at fixed byte offsets (lexical_layout)."""
    return f"SELECT v FROM fig12.{fig12_table(n)} WHERE k = '{fig12_key(n, i)}'"


def lexical_layout(n: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(offset, length) in bytes of the table (`fig12.t…`) and of the key in lexical_query(n, ·)."""
    q = lexical_query(n, 0).encode()
    t0 = q.index(b"fig12.")
    k0 = q.index(b"'") + 1
    return (t0, len("fig12.") + n), (k0, len(fig12_key(n, 0).encode()))


def turnaround(host: str, queries: int, s_zipf: float, seed: int, protocol: int | None, setup: bool,
               tables: int = 16, keys_per_table: int = 256, read_ratio: float = 1.0,
               literal: bool = False, only_len: int = 0, owners: bool = False) -> dict:
    """The paper's §5.1 workload: tables whose names are 1..16 characters long (t, tt, ...), 256
    keys each, a key as long as its table's name, random alphabetic values of 1..4N characters;
    `queries` operations on keys drawn by Zipf(s) over all keys (a fixed random ranking), reads
    (prepared SELECT by key) or, with read_ratio < 1, writes (prepared UPDATE). `literal`: reads
    are unprepared QUERY frames with the key in the text (lexical_query); `only_len` = N > 0:
    only table N is queried (fixed-length keys, Fig. 19). Per operation:
    (kind, table length N, key index, turnaround µs). `owners` (Fig. 22): also the address of
    the node holding each queried key, from the driver's token map (replication factor 1)."""
    rng = random.Random(seed)
    # Uncompressed, as in the paper (its switch read the statement text in the packets) and as
    # these figures were measured before the lz4 package was installed.
    cluster, s = cql_session(host, protocol, "none")
    alpha = "abcdefghijklmnopqrstuvwxyz"
    ks = "fig12"
    if setup:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
        for n in range(1, tables + 1):
            s.execute(f"CREATE TABLE IF NOT EXISTS {ks}.{fig12_table(n)} (k text PRIMARY KEY, v text)")
        wait_schema_agreement(s)
        for n in range(1, tables + 1):
            ins = s.prepare(f"INSERT INTO {ks}.{fig12_table(n)} (k, v) VALUES (?, ?)")
            for i in range(keys_per_table):
                s.execute(ins, (fig12_key(n, i), "".join(rng.choice(alpha) for _ in range(rng.randint(1, 4 * n)))))
    sels = {n: s.prepare(f"SELECT v FROM {ks}.{fig12_table(n)} WHERE k = ?") for n in range(1, tables + 1)}
    upds = {n: s.prepare(f"UPDATE {ks}.{fig12_table(n)} SET v = ? WHERE k = ?") for n in range(1, tables + 1)}
    lens = [only_len] if only_len else list(range(1, tables + 1))
    population = [(n, i) for n in lens for i in range(keys_per_table)]
    rank = random.Random(seed + 1)
    rank.shuffle(population)
    draw = zipf_sampler(len(population), s_zipf, rng)
    samples = []
    for _ in range(queries):
        n, i = population[draw()]
        if rng.random() < read_ratio:
            stmt, args = (lexical_query(n, i), None) if literal else (sels[n], (fig12_key(n, i),))
            t0 = time.perf_counter_ns()
            s.execute(stmt, args).one()
            samples.append(("read", n, i, (time.perf_counter_ns() - t0) / 1000.0))
        else:
            v = "".join(rng.choice(alpha) for _ in range(rng.randint(1, 4 * n)))
            t0 = time.perf_counter_ns()
            s.execute(upds[n], (v, fig12_key(n, i)))
            samples.append(("write", n, i, (time.perf_counter_ns() - t0) / 1000.0))
    out: dict = {"samples": samples}
    if owners:
        out["owners"] = {}
        for _, n, i, _ in samples:
            replicas = cluster.metadata.get_replicas(ks, fig12_key(n, i).encode())
            out["owners"][f"{n}:{i}"] = [str(h.address) for h in replicas]
    cluster.shutdown()
    return out


def timeline(host: str, pairs: int, protocol: int | None, table_len: int, gap_ms: float) -> dict:
    """Figs. 13-14: `pairs` times, a prepared SELECT of a key not read before (a miss) and then
    of the same key again (a hit), `gap_ms` apart so each query's packets stand alone on the
    wire. Per query: (kind, key index, send time ns on CLOCK_REALTIME — the clock of the
    kernel's packet timestamps —, turnaround µs)."""
    cluster, s = cql_session(host, protocol, "none")  # uncompressed: payloads are matched by bytes
    sel = s.prepare(f"SELECT v FROM fig12.{fig12_table(table_len)} WHERE k = ?")
    samples = []
    for i in range(pairs):
        for kind in ("miss", "hit"):
            time.sleep(gap_ms / 1000.0)
            t_wall = time.time_ns()
            t0 = time.perf_counter_ns()
            s.execute(sel, (fig12_key(table_len, i),)).one()
            samples.append((kind, i, t_wall, (time.perf_counter_ns() - t0) / 1000.0))
    time.sleep(gap_ms / 1000.0)
    cluster.shutdown()
    return {"samples": samples}


def connections(host: str, queries: int, s_zipf: float, seed: int, protocol: int | None, conns: int,
                tables: int, keys_per_table: int, ready_file: str, go_file: str) -> dict:
    """Fig. 17: `conns` connections from this client (one driver Session, hence one TCP
    connection, each; one thread each), sharing `queries` prepared Zipf reads of the §5.1 data
    (pre-drawn, dealt round-robin). Once connected it creates `ready_file` and waits for
    `go_file`, so the orchestrator starts two client processes' loads together. Per read: (connection, table length, key index,
    send time ns (CLOCK_MONOTONIC, comparable across processes), turnaround µs, value)."""
    import threading

    rng = random.Random(seed)
    cluster, _ = cql_session(host, protocol, "none")  # uncompressed, as turnaround()
    sessions = [cluster.connect() for _ in range(conns)]
    for s in sessions:
        s.default_timeout = 60
    sels = {n: sessions[0].prepare(f"SELECT v FROM fig12.{fig12_table(n)} WHERE k = ?") for n in range(1, tables + 1)}
    population = [(n, i) for n in range(1, tables + 1) for i in range(keys_per_table)]
    random.Random(seed + 1).shuffle(population)  # the same ranking as turnaround()
    draw = zipf_sampler(len(population), s_zipf, rng)
    keys = [population[draw()] for _ in range(queries)]
    samples: list[list] = [[] for _ in range(conns)]
    errors: list[str] = []
    barrier = threading.Barrier(conns)

    def worker(j: int) -> None:
        s = sessions[j]
        barrier.wait()
        try:
            for n, i in keys[j::conns]:
                t0 = time.perf_counter_ns()
                row = s.execute(sels[n], (fig12_key(n, i),)).one()
                t1 = time.perf_counter_ns()
                samples[j].append((j, n, i, t0, (t1 - t0) / 1000.0, row.v if row is not None else None))
        except Exception as e:  # a reset or timeout is a failure of the switch
            errors.append(repr(e))

    import os

    if ready_file:
        open(ready_file, "w").close()
        deadline = time.time() + 300
        while go_file and not os.path.exists(go_file):
            if time.time() > deadline:
                raise TimeoutError(f"no {go_file} within 300 s")
            time.sleep(0.001)
    threads = [threading.Thread(target=worker, args=(j,)) for j in range(conns)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    cluster.shutdown()
    return {"samples": [x for per in samples for x in per], "errors": errors, "conns": conns}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m innet.appswitch.workload")
    ap.add_argument("kind", choices=["redis", "memcached", "cql", "cql-read-model", "turnaround", "connections",
                                       "timeline"])
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--keys", type=int, default=50)
    ap.add_argument("--conns", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--protocol", type=int, default=None)
    ap.add_argument("--zipf", type=float, default=1.0)
    ap.add_argument("--read-ratio", type=float, default=1.0)
    ap.add_argument("--setup", action="store_true")
    ap.add_argument("--tables", type=int, default=16)
    ap.add_argument("--keys-per-table", type=int, default=256)
    ap.add_argument("--literal", action="store_true", help="unprepared SELECTs with the key in the text")
    ap.add_argument("--only-len", type=int, default=0, help="query only the table of this name/key length")
    ap.add_argument("--ready-file", default="", help="connections: create this file once connected")
    ap.add_argument("--go-file", default="", help="connections: then start when this file exists")
    ap.add_argument("--owners", action="store_true", help="turnaround: report the node holding each queried key")
    ap.add_argument("--gap-ms", type=float, default=50.0, help="timeline: pause before each query")
    ap.add_argument("--compression", choices=["auto", "none", "lz4", "snappy"], default="auto",
                    help="cql: the driver's compression (auto: its default, LZ4 when the lz4 package is installed)")
    a = ap.parse_args(argv)
    if a.kind == "redis":
        out = redis_mixed(a.host, a.port, a.ops, a.keys, a.conns, a.seed)
    elif a.kind == "memcached":
        out = memcached_mixed(a.host, a.port, a.ops, a.keys, a.conns, a.seed)
    elif a.kind == "cql":
        out = cql_mixed(a.host, a.ops, a.keys, a.seed, a.protocol, a.compression)
    elif a.kind == "cql-read-model":
        out = cql_read_model(a.host, a.protocol, a.keys)
    elif a.kind == "connections":
        out = connections(a.host, a.ops, a.zipf, a.seed, a.protocol, a.conns, a.tables, a.keys_per_table, a.ready_file, a.go_file)
    elif a.kind == "timeline":
        out = timeline(a.host, a.ops, a.protocol, a.only_len or 8, a.gap_ms)
    else:
        out = turnaround(a.host, a.ops, a.zipf, a.seed, a.protocol, a.setup, a.tables, a.keys_per_table, a.read_ratio,
                         a.literal, a.only_len, a.owners)
    json.dump(out, sys.stdout)
    return 1 if out.get("wrong_count") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
