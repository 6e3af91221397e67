"""The application switch's Figs. 17 and 19 on real packets (need root: network namespaces, a
real Cassandra from Maven Central jars, `innet switch run`), declared in crates/appswitch/src/experiments.rs,
which names ``connections`` and ``lexical`` here to run them.

appswitch.connections (Fig. 17, §5.4): 1..64 connections per client, 1 or 2 client machines
(two client namespaces bridged onto the switch's client port, each its own source address),
the §5.1 workload (prepared Zipf reads, cache 64); per point a pass through a plain forwarding
switch ("normal") and one through the application switch (cold cache). Concurrent queries make
the order the switch saw them unknown to the clients, so hit/miss per query comes from replaying
the switch's LRU on an event timeline (a request at its send time; a miss's answer learned at its
receive time), and the replay's hit count is reported next to the switch's own counter. Every
answer of the cached pass is checked against the normal pass's answer for that key.

appswitch.lexical (Fig. 19, §5.6): the paper compares its switch *with* lexical analysis against
one that reads the key at a fixed address of the query (the client sending only queries that
meet the fixed-layout assumption). Here: unprepared QUERY SELECTs whose key sits in the text, all
on the one table whose name and keys are N characters long (fixed layout), through `forward`
("normal"), `appswitch parser=lexical` (the statement lexer) and `appswitch parser=fixed`
(crates/appswitch/src/fixed_fields.rs: table and key read at fixed byte offsets), for each key
length N in `key_lens`, modes rotated per round so no mode always runs first.
"""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

from innet.appswitch.experiments import experiment_rig, lru_hits


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


# The switch's counters a pass reports (its `program_report`, as integers).
SWITCH_COUNTERS = ("hits", "misses", "migrated_request_bytes", "migrated_reply_bytes", "protocol_errors")


def _stop_switch_counters(t, stats_path: Path | None) -> dict[str, int]:
    """Stop the switch; its SWITCH_COUNTERS (all 0 for a pass without `--stats-json`)."""
    code, log = t.stop_switch()
    if code != 0:
        raise RuntimeError(f"switch exited {code}: {log[-2000:]}")
    if stats_path is None:
        return dict.fromkeys(SWITCH_COUNTERS, 0)
    report = json.loads(stats_path.read_text())["program_report"]
    return {k: int(report[k]) for k in SWITCH_COUNTERS}


def replay_hits_timeline(samples: list[tuple], capacity: int) -> list[bool]:
    """Hit/miss per request of a concurrent run, by replaying an LRU of `capacity` keys on a
    timeline: request i (key, send_ns, recv_ns) looks the key up at send_ns (a hit refreshes
    it); a miss's answer is learned at its recv_ns (inserted or refreshed, evicting the least
    recently used). Returns a list parallel to `samples`."""
    events = []
    for idx, (key, t_send, t_recv) in enumerate(samples):
        events.append((t_send, 1, idx))
    lru: OrderedDict = OrderedDict()
    hit = [False] * len(samples)
    learns: list[tuple[int, int, int]] = []
    import heapq

    events.sort()
    ei = 0
    while ei < len(events) or learns:
        if learns and (ei >= len(events) or learns[0][0] <= events[ei][0]):
            _, _, idx = heapq.heappop(learns)
            key = samples[idx][0]
            if capacity > 0:
                lru[key] = True
                lru.move_to_end(key)
                if len(lru) > capacity:
                    lru.popitem(last=False)
            continue
        _, _, idx = events[ei]
        ei += 1
        key = samples[idx][0]
        if key in lru:
            lru.move_to_end(key)
            hit[idx] = True
        else:
            heapq.heappush(learns, (samples[idx][2], 0, idx))
    return hit


def connections_pass(t, workdir: Path, tag: str, nclients: int, conns: int, queries: int, seed: int,
                     common: list[str], prefix: list[str] | None = None) -> tuple[list[list], list[str]]:
    """One Fig. 17 pass: `nclients` client processes (one per client namespace, seeds `seed`,
    `seed + 1000`), each with `conns` connections sharing `queries` reads, connect first, then
    all start together (ready/go files under `workdir`, named by `tag`). `common`: the
    workload's host/protocol/data options; `prefix`: put before the command (CPU placement).
    Per client, its samples; and the errors the clients met."""
    procs = []
    ready = [workdir / f"ready-{tag}-{j}" for j in range(nclients)]
    go = workdir / f"go-{tag}"
    for j, (ns, _ip) in enumerate(t.client_namespaces()[:nclients]):
        cmd = [*(prefix or []), sys.executable, "-m", "innet.appswitch.workload", "connections", *common,
               "--seed", str(seed + 1000 * j), "--ops", str(queries), "--conns", str(conns),
               "--ready-file", str(ready[j]), "--go-file", str(go)]
        procs.append(t.popen(ns, cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    deadline = time.time() + 300
    while not all(r.exists() for r in ready):
        if any(pr.poll() is not None for pr in procs) or time.time() > deadline:
            break
        time.sleep(0.01)
    go.touch()
    per_client, errors = [], []
    for j, pr in enumerate(procs):
        out, err = pr.communicate(timeout=1800)
        if pr.returncode != 0:
            raise RuntimeError(f"client {j} failed ({pr.returncode}): {err.decode(errors='replace')[-2000:]}")
        res = json.loads(out)
        per_client.append(res["samples"])
        errors += res["errors"]
    return per_client, errors


def connections(name: str, p: dict[str, Any], progress: Callable[[float], None]) -> tuple[str, dict]:
    from innet import _native

    conns_list, clients_list = _native.parse_list("conns", p["conns"], whole=True), _native.parse_list("clients", p["clients"], whole=True)
    for c in clients_list:
        if c not in (1, 2):
            raise _native.UserInputError(f"appswitch.connections: clients={c}: expected 1 or 2 (client namespaces)")
    for c in conns_list:
        if not 1 <= c <= 1024:
            raise _native.UserInputError(f"appswitch.connections: conns={c}: expected 1..1024")
    queries, cache, zipf = int(p["queries"]), int(p["cache_entries"]), float(p["zipf"])
    tables, kpt, protocol, seed = int(p["tables"]), int(p["keys_per_table"]), int(p["protocol"]), int(p["seed"])
    points = [(nc, c) for nc in clients_list for c in conns_list]
    results, rows = [], {k: [] for k in ("clients", "conns", "mode", "client", "conn", "table_len", "key", "hit",
                                         "turnaround_us")}

    def load(nclients: int, conns: int, tag: str) -> tuple[list[list], list[str]]:
        return connections_pass(t, cdir, tag, nclients, conns, queries, seed, common)

    with experiment_rig("appswitch.connections", "axc", clients=max(clients_list)) as t:
        cdir = t.workdir()
        common = ["--host", t.server_ip, "--protocol", str(protocol), "--zipf", str(zipf), "--tables", str(tables),
                  "--keys-per-table", str(kpt)]
        progress(0.1)
        t.start_switch("forward")
        t.exec(t.client, [sys.executable, "-m", "innet.appswitch.workload", "turnaround", *common, "--seed", str(seed),
                          "--setup", "--ops", "0"], timeout=1800)
        load(1, 1, "warm")  # warm-up pass, discarded (Cassandra's JIT, flushes after loading)
        t.stop_switch()
        for k, (nclients, conns) in enumerate(points):
            t.start_switch("forward")
            normal, nerr = load(nclients, conns, f"n{k}")
            _stop_switch_counters(t, None)
            stats_path = cdir / f"stats-{k}.json"
            t.start_switch("appswitch", {"protocol": "cql", "cache_entries": str(cache)},
                           extra=["--stats-json", str(stats_path)])
            cached, cerr = load(nclients, conns, f"a{k}")
            counters = _stop_switch_counters(t, stats_path)
            switch_hits = counters["hits"]
            truth = {(s[1], s[2]): s[5] for per in normal for s in per}
            flat = [(j, s) for j, per in enumerate(cached) for s in per]
            wrong = sum(1 for _, s in flat if (s[1], s[2]) in truth and truth[(s[1], s[2])] != s[5])
            hits = replay_hits_timeline([((s[1], s[2]), s[3], s[3] + int(s[4] * 1000)) for _, s in flat], cache)
            n_us = [s[4] for per in normal for s in per]
            a_us = [s[4] for _, s in flat]
            h_us = [s[4] for (_, s), h in zip(flat, hits) if h]
            m_us = [s[4] for (_, s), h in zip(flat, hits) if not h]
            sent = nclients * queries
            normal_mean = _mean(n_us)
            rel = lambda x: (x / normal_mean - 1.0) if x is not None and normal_mean else None  # noqa: E731
            results.append({
                "clients": nclients, "conns": conns, "queries_sent": sent,
                "answered": len(a_us), "answered_normal": len(n_us),
                "errors": nerr + cerr, "wrong_answers": wrong,
                "hit_ratio": switch_hits / sent if sent else 0.0,
                "hits_switch": switch_hits, "hits_replay": sum(hits), "switch": counters,
                "turnaround_mean_us": {"all": _mean(a_us), "hit": _mean(h_us), "miss": _mean(m_us),
                                       "normal": normal_mean},
                "turnaround_median_us": {"all": _median(a_us), "hit": _median(h_us), "miss": _median(m_us),
                                         "normal": _median(n_us)},
                "vs_normal": {"all": rel(_mean(a_us)), "hit": rel(_mean(h_us)), "miss": rel(_mean(m_us))},
            })
            for mode, per_client, hitlist in (("normal", normal, None), ("appswitch", cached, hits)):
                i = 0
                for j, per in enumerate(per_client):
                    for s in per:
                        for key, val in (("clients", nclients), ("conns", conns), ("mode", mode), ("client", j),
                                         ("conn", s[0]), ("table_len", s[1]), ("key", s[2]),
                                         ("hit", bool(hitlist[i]) if hitlist else False), ("turnaround_us", s[4])):
                            rows[key].append(val)
                        i += 1
            progress(0.1 + 0.9 * (k + 1) / len(points))
    derived = {}
    for nc in clients_list:
        g = sorted((x for x in results if x["clients"] == nc), key=lambda x: x["conns"])
        if len(g) >= 2 and g[0]["turnaround_mean_us"]["all"]:
            derived[f"cached_mean_growth_pct_{nc}_clients"] = 100.0 * (
                g[-1]["turnaround_mean_us"]["all"] / g[0]["turnaround_mean_us"]["all"] - 1.0)
    if results:
        derived["worst_all_vs_normal_pct"] = 100.0 * max(x["vs_normal"]["all"] for x in results
                                                         if x["vs_normal"]["all"] is not None)
    summary = {"experiment": "appswitch.connections", "seed": seed, "params": p, "derived": derived,
               "hit_classification": "LRU replay on the send/receive timeline (hits_replay) vs the switch's counter "
                                     "(hits_switch, which hit_ratio uses)",
               "points": results}
    return json.dumps(summary, indent=2) + "\n", {"samples": rows}


def lexical(name: str, p: dict[str, Any], progress: Callable[[float], None]) -> tuple[str, dict]:
    from innet import _native
    from innet.appswitch.workload import lexical_layout
    from innet.stats import median_ci

    key_lens, rounds = _native.parse_list("key_lens", p["key_lens"], whole=True), int(p["rounds"])
    queries, cache, zipf = int(p["queries"]), int(p["cache_entries"]), float(p["zipf"])
    tables, kpt, protocol, seed = int(p["tables"]), int(p["keys_per_table"]), int(p["protocol"]), int(p["seed"])
    for n in key_lens:
        if not 2 <= n <= tables:
            raise _native.UserInputError(
                f"appswitch.lexical: key length {n}: expected 2..tables={tables} (a table of that name length "
                "must be loaded; length 1 keys are non-ASCII, so not fixed-width in bytes)")
    if kpt > 16 ** 2 and min(key_lens) == 2:
        raise _native.UserInputError("appswitch.lexical: keys_per_table > 256 needs key lengths >= 3")
    if rounds < 1:
        raise _native.UserInputError("appswitch.lexical: rounds must be at least 1")
    modes = ["normal", "lexical", "fixed"]
    # Round r runs the modes in the r-th of their 6 orders, so over 6 rounds each mode precedes
    # each other one equally often (a plain rotation puts lexical before fixed in 2 of 3 rounds).
    orders = list(itertools.permutations(modes))
    results, rows = [], {k: [] for k in ("key_len", "round", "mode", "query", "key", "hit", "turnaround_us")}

    def workload(extra: list[str]) -> list:
        cmd = [sys.executable, "-m", "innet.appswitch.workload", "turnaround", "--host", t.server_ip,
               "--protocol", str(protocol), "--zipf", str(zipf), "--seed", str(seed),
               "--tables", str(tables), "--keys-per-table", str(kpt), *extra]
        return json.loads(t.exec(t.client, cmd, timeout=1800).stdout)["samples"]

    with experiment_rig("appswitch.lexical", "axl") as t:
        cdir = t.workdir()
        progress(0.1)
        t.start_switch("forward")
        workload(["--setup", "--ops", "0"])
        workload(["--ops", str(queries), "--literal", "--only-len", str(key_lens[0])])  # warm-up, discarded
        t.stop_switch()
        steps, done = len(key_lens) * rounds * len(modes), 0
        for n in key_lens:
            (t0, tl), (k0, kl) = lexical_layout(n)
            per_mode: dict[str, list] = {m: [] for m in modes}
            round_mean: dict[str, list[float | None]] = {m: [] for m in modes}
            hits_per_mode: dict[str, list[bool]] = {m: [] for m in modes}
            switch_hits: dict[str, int] = {m: 0 for m in modes}
            for r in range(rounds):
                for mode in orders[r % len(orders)]:
                    stats_path = cdir / f"stats-{n}-{r}-{mode}.json"
                    if mode == "normal":
                        t.start_switch("forward")
                    else:
                        sets = {"protocol": "cql", "cache_entries": str(cache), "parser": mode}
                        if mode == "fixed":
                            sets |= {"fixed_table": f"{t0}:{tl}", "fixed_key": f"{k0}:{kl}"}
                        t.start_switch("appswitch", sets, extra=["--stats-json", str(stats_path)])
                    samples = workload(["--ops", str(queries), "--literal", "--only-len", str(n)])
                    h = _stop_switch_counters(t, None if mode == "normal" else stats_path)["hits"]
                    replay = lru_hits([(s[1], s[2]) for s in samples], cache) if mode != "normal" else [False] * len(samples)
                    if mode != "normal" and h != sum(replay):
                        raise RuntimeError(f"{mode} N={n}: the switch counted {h} hits, the LRU replay {sum(replay)}: "
                                           "hit classification would be wrong")
                    switch_hits[mode] += h
                    per_mode[mode] += samples
                    round_mean[mode].append(_mean([x[3] for x in samples]))
                    hits_per_mode[mode] += replay
                    for q, (s, hit) in enumerate(zip(samples, replay)):
                        for key, val in (("key_len", n), ("round", r), ("mode", mode), ("query", q), ("key", s[2]),
                                         ("hit", hit), ("turnaround_us", s[3])):
                            rows[key].append(val)
                    done += 1
                    progress(0.1 + 0.9 * done / steps)
            normal_mean = _mean([s[3] for s in per_mode["normal"]])
            for mode in modes:
                us = [s[3] for s in per_mode[mode]]
                hu = [s[3] for s, h in zip(per_mode[mode], hits_per_mode[mode]) if h]
                mu = [s[3] for s, h in zip(per_mode[mode], hits_per_mode[mode]) if not h]
                results.append({
                    "key_len": n, "mode": mode, "parser": None if mode == "normal" else mode,
                    "queries_sent": rounds * queries, "answered": len(us),
                    "hit_ratio": switch_hits[mode] / len(us) if us else 0.0,
                    "turnaround_mean_us": {"all": _mean(us), "hit": _mean(hu), "miss": _mean(mu), "normal": normal_mean},
                    "turnaround_median_us": {"all": _median(us), "hit": _median(hu), "miss": _median(mu),
                                             "normal": _median([s[3] for s in per_mode["normal"]])},
                    "vs_normal": (_mean(us) / normal_mean - 1.0) if us and normal_mean else None,
                    "fixed_layout": {"table": [t0, tl], "key": [k0, kl]} if mode == "fixed" else None,
                })
            lex = next(x for x in results if x["key_len"] == n and x["mode"] == "lexical")
            fix = next(x for x in results if x["key_len"] == n and x["mode"] == "fixed")
            # Per round, the two parsers' pass means (adjacent passes of that round) compared.
            lex["lexical_vs_fixed_rounds"] = [a / b - 1.0 for a, b in zip(round_mean["lexical"], round_mean["fixed"])
                                              if a and b]
            lex["lexical_vs_fixed"] = (statistics.median(lex["lexical_vs_fixed_rounds"])
                                       if lex["lexical_vs_fixed_rounds"] else None)
    # Over every key length and round: the median difference with its distribution-free 95 %
    # interval (a direction only where it excludes zero).
    lv = [d for x in results for d in x.get("lexical_vs_fixed_rounds", [])]
    med, lo, hi = median_ci(lv) if lv else (None, None, None)
    derived = {"lexical_vs_fixed_pct": 100.0 * med if lv else None,
               "lexical_vs_fixed_pct_ci95": [100.0 * lo, 100.0 * hi] if lv else None}
    summary = {"experiment": "appswitch.lexical", "seed": seed, "params": p, "derived": derived, "points": results}
    return json.dumps(summary, indent=2) + "\n", {"samples": rows}
