"""The application switch's experiments on real packets (they need root: network namespaces, a
real Cassandra from Maven Central jars, `innet switch run`). They are Python because they
orchestrate processes; crates/appswitch/src/experiments.rs declares them, each naming the function
here that runs it.

appswitch.turnaround (Fig. 12): the §5.1 workload (16 tables, key length 1..16, 256 keys each,
values of 1..4N characters, 1,024 Zipf reads, cache 64) once through a plain forwarding switch
("normal") and once through the application switch per round, the order alternating between rounds
(after a discarded warm-up pass); mean turnaround of all, hit and miss queries against the same
round's normal mean, reported as the median over rounds with a 95 % interval. Which queries were hits is found by replaying the switch's LRU on the query
sequence (a read-only workload makes it exact) and checked against the switch's own hit counter.

appswitch.cachesize (Fig. 15), appswitch.skew (Fig. 16), appswitch.readwrite (Fig. 18): the same
workload per point of a sweep, normal vs with the cache (cold at each point).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections import OrderedDict
from typing import Any, Callable


def experiment_rig(name: str, prefix: str, **rig):
    """innet.netns.rig for experiment (or bench) `name`: namespaces tagged `prefix` and this
    process's id, a Cassandra node per server namespace unless ``cassandra=False``; without root,
    a UserInputError naming `name`."""
    from innet import _native
    from innet.netns import rig as netns_rig

    def unavailable(e: Exception) -> Exception:
        return _native.UserInputError(f"{name} needs network namespaces: {e}")

    return netns_rig(f"{prefix}{os.getpid() % 10000}", unavailable, **{"cassandra": True, **rig})


def sweep(name: str, p: dict[str, Any], progress: Callable[[float], None]) -> tuple[str, dict]:
    """Figs. 15, 16, 18: one Cassandra, the §5.1 data loaded once, then per point a "normal" pass
    (the `forward` program) and a pass through `appswitch` with a cold cache. Hit ratio per point
    = the switch's hits / reads issued."""
    from innet import _native

    queries, protocol, seed = int(p["queries"]), int(p["protocol"]), int(p["seed"])
    tables, kpt = int(p["tables"]), int(p["keys_per_table"])
    # List parameters are parsed by the registry's rule (the one every Rust experiment's follows).
    if name == "appswitch.cachesize":
        points = [{"cache_entries": x, "zipf": float(p["zipf"]), "read_ratio": 1.0}
                  for x in _native.parse_list("sizes", p["sizes"], whole=True)]
    elif name == "appswitch.skew":
        points = [{"cache_entries": int(p["cache_entries"]), "zipf": z, "read_ratio": 1.0}
                  for z in _native.parse_list("zipfs", p["zipfs"])]
    else:
        points = [{"cache_entries": int(p["cache_entries"]), "zipf": float(p["zipf"]), "read_ratio": r}
                  for r in _native.parse_list("read_ratios", p["read_ratios"])]
    rows: dict[str, list] = {"point": [], "mode": [], "cache_entries": [], "zipf": [], "read_ratio": [],
                             "ops": [], "reads": [], "hits": [], "mean_us": [], "median_us": []}
    results = []
    with experiment_rig(name, "axs") as t:
        cdir = t.workdir()

        def workload(extra: list[str], zipf: float, rr: float) -> list:
            cmd = [sys.executable, "-m", "innet.appswitch.workload", "turnaround", "--host", t.server_ip,
                   "--protocol", str(protocol), "--zipf", str(zipf), "--seed", str(seed),
                   "--tables", str(tables), "--keys-per-table", str(kpt), "--read-ratio", str(rr), *extra]
            return json.loads(t.exec(t.client, cmd, timeout=1800).stdout)["samples"]

        t.start_switch("forward")
        workload(["--setup", "--ops", "0"], 1.0, 1.0)
        workload(["--ops", str(queries)], 1.0, 1.0)  # warm-up, discarded
        t.stop_switch()
        for k, pt in enumerate(points):
            out = {}
            for mode in ("normal", "appswitch"):
                stats_path = cdir / f"stats-{k}-{mode}.json"
                if mode == "normal":
                    t.start_switch("forward")
                else:
                    t.start_switch("appswitch", {"protocol": "cql", "cache_entries": str(pt["cache_entries"])},
                                   extra=["--stats-json", str(stats_path)])
                samples = workload(["--ops", str(queries)], pt["zipf"], pt["read_ratio"])
                code, log = t.stop_switch()
                if code != 0:
                    raise RuntimeError(f"switch exited {code}: {log[-2000:]}")
                hits = int(json.loads(stats_path.read_text())["program_report"]["hits"]) if mode == "appswitch" else 0
                us = [x[3] for x in samples]
                reads = sum(1 for x in samples if x[0] == "read")
                mean_us = statistics.fmean(us) if us else None
                for key, val in (("point", k), ("mode", mode), ("cache_entries", pt["cache_entries"]),
                                 ("zipf", pt["zipf"]), ("read_ratio", pt["read_ratio"]), ("ops", len(samples)),
                                 ("reads", reads), ("hits", hits), ("mean_us", mean_us),
                                 ("median_us", statistics.median(us) if us else None)):
                    rows[key].append(val)
                out[mode] = {"mean_us": mean_us, "median_us": statistics.median(us) if us else None,
                             "hit_ratio": hits / reads if reads else None}
            results.append({**pt, "normal_mean_us": out["normal"]["mean_us"],
                            "appswitch_mean_us": out["appswitch"]["mean_us"],
                            "normal_median_us": out["normal"]["median_us"],
                            "appswitch_median_us": out["appswitch"]["median_us"],
                            "hit_ratio": out["appswitch"]["hit_ratio"],
                            "vs_normal": (out["appswitch"]["mean_us"] / out["normal"]["mean_us"] - 1.0)
                            if out["normal"]["mean_us"] else None})
            progress((k + 1) / len(points))
    summary = {"experiment": name, "seed": seed, "params": p, "points": results}
    return json.dumps(summary, indent=2) + "\n", {"points": rows}


def lru_hits(keys: list[tuple[int, int]], capacity: int) -> list[bool]:
    lru: OrderedDict = OrderedDict()
    out = []
    for k in keys:
        if k in lru:
            lru.move_to_end(k)
            out.append(True)
        else:
            out.append(False)
            if capacity > 0:
                lru[k] = True
                if len(lru) > capacity:
                    lru.popitem(last=False)
    return out


def turnaround(name: str, p: dict[str, Any], progress: Callable[[float], None]) -> tuple[str, dict]:
    from innet import _native
    from innet.stats import median_ci

    queries, cache, zipf = int(p["queries"]), int(p["cache_entries"]), float(p["zipf"])
    tables, kpt, protocol, seed = int(p["tables"]), int(p["keys_per_table"]), int(p["protocol"]), int(p["seed"])
    rounds = int(p["rounds"])
    if rounds < 1:
        raise _native.UserInputError("appswitch.turnaround: rounds must be at least 1")
    passes: list[tuple[int, str, list, dict]] = []  # (round, mode, samples, switch report)
    progress(0.02)
    with experiment_rig("appswitch.turnaround", "axp") as t:
        cdir = t.workdir()
        progress(0.2)

        def workload(extra: list[str]) -> dict:
            cmd = [sys.executable, "-m", "innet.appswitch.workload", "turnaround", "--host", t.server_ip,
                   "--protocol", str(protocol), "--zipf", str(zipf), "--seed", str(seed),
                   "--tables", str(tables), "--keys-per-table", str(kpt), *extra]
            out = t.exec(t.client, cmd, timeout=1800)
            return json.loads(out.stdout)

        t.start_switch("forward")
        workload(["--setup", "--ops", "0"])
        # Warm-up pass (discarded): right after loading, Cassandra is still flushing and its JIT
        # cold, which would inflate whichever pass goes first.
        workload(["--ops", str(queries)])
        t.stop_switch()
        progress(0.35)
        # Rounds of one normal and one cached pass each, the order alternating (normal first in
        # even rounds), so a drift of the machine or of Cassandra over the run hits both alike.
        for rnd in range(rounds):
            for mode in ("normal", "appswitch") if rnd % 2 == 0 else ("appswitch", "normal"):
                stats_path = cdir / f"switch-stats-{rnd}.json"
                if mode == "normal":
                    t.start_switch("forward")
                else:
                    t.start_switch("appswitch", {"protocol": "cql", "cache_entries": str(cache)},
                                   extra=["--stats-json", str(stats_path)])
                samples = workload(["--ops", str(queries)])["samples"]
                code, log = t.stop_switch()
                if code != 0:
                    raise RuntimeError(f"switch exited {code}: {log[-2000:]}")
                report = json.loads(stats_path.read_text())["program_report"] if mode == "appswitch" else {}
                passes.append((rnd, mode, samples, report))
                progress(0.35 + 0.6 * len(passes) / (2 * rounds))

    # Every pass sends the same query sequence (same seed), and each cached pass starts cold, so
    # which queries hit is the same in every round: the LRU replay on the sequence, checked
    # against each cached pass's own hit counter.
    sequence = [(n, i) for _, n, i, _ in passes[0][2]]
    for rnd, mode, samples, _ in passes:
        if [(n, i) for _, n, i, _ in samples] != sequence:
            raise RuntimeError(f"round {rnd} ({mode}) sent another query sequence than the first pass: "
                               "rounds could not be compared query by query")
    hits = lru_hits(sequence, cache)
    for rnd, mode, _, report in passes:
        if mode == "appswitch" and int(report["hits"]) != sum(hits):
            raise RuntimeError(f"round {rnd}: the switch counted {report['hits']} hits, the LRU replay "
                               f"{sum(hits)}: hit classification would be wrong")
    mean = lambda xs: statistics.fmean(xs) if xs else None  # noqa: E731
    by_mode = {m: [s for _, mode, s, _ in passes if mode == m] for m in ("normal", "appswitch")}
    pooled = {m: [x[3] for s in by_mode[m] for x in s] for m in by_mode}
    cls = {"all": [True] * len(hits), "hit": hits, "miss": [not h for h in hits]}

    def cls_mean(samples: list, which: list[bool]) -> float | None:
        return mean([x[3] for x, w in zip(samples, which) if w])

    # Per round: each class's mean through the cached switch against the same round's normal mean
    # (the paper's comparison: the bars of Fig. 12 against "normal"). Reported: the median over
    # rounds with its distribution-free 95 % interval (min..max below 6 rounds).
    rel_rounds: dict[str, list[float]] = {c: [] for c in cls}
    for s_normal, s_cached in zip(by_mode["normal"], by_mode["appswitch"]):  # both in round order
        base = mean([x[3] for x in s_normal])
        for c, which in cls.items():
            v = cls_mean(s_cached, which)
            if v is not None and base:
                rel_rounds[c].append(v / base - 1.0)
    vs_normal, vs_ci = {}, {}
    for c, xs in rel_rounds.items():
        if xs:
            med, lo, hi = median_ci(xs)
            vs_normal[c], vs_ci[c] = med, [lo, hi]
        else:
            vs_normal[c], vs_ci[c] = None, None
    cached = [x for s in by_mode["appswitch"] for x in s]
    cached_hits = hits * len(by_mode["appswitch"])
    summary = {
        "experiment": "appswitch.turnaround",
        "seed": seed,
        "params": p,
        "queries": queries,
        "rounds": rounds,
        "hit_ratio": sum(hits) / len(hits) if hits else 0.0,
        "turnaround_mean_us": {"all": mean(pooled["appswitch"]), "hit": cls_mean(cached, cached_hits),
                               "miss": cls_mean(cached, [not h for h in cached_hits]),
                               "normal": mean(pooled["normal"])},
        "turnaround_median_us": {
            "all": statistics.median(pooled["appswitch"]),
            "hit": statistics.median([x[3] for x, h in zip(cached, cached_hits) if h]) if any(hits) else None,
            "miss": statistics.median([x[3] for x, h in zip(cached, cached_hits) if not h]) if not all(hits) else None,
            "normal": statistics.median(pooled["normal"]),
        },
        "vs_normal": vs_normal,
        "vs_normal_ci95": vs_ci,
        "vs_normal_rounds": rel_rounds,
        "switch": next(report for _, mode, _, report in reversed(passes) if mode == "appswitch"),
    }
    rows: dict[str, list] = {k: [] for k in ("round", "mode", "query", "table_len", "key", "hit", "turnaround_us")}
    for rnd, mode, samples, _ in passes:
        for q, (x, h) in enumerate(zip(samples, hits)):
            for key, val in (("round", rnd), ("mode", mode), ("query", q), ("table_len", x[1]), ("key", x[2]),
                             ("hit", h if mode == "appswitch" else False), ("turnaround_us", x[3])):
                rows[key].append(val)
    return json.dumps(summary, indent=2) + "\n", {"samples": rows}
