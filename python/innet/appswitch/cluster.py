"""The application switch's Fig. 22 (§5.7, "performance with multiple servers") on real packets:
a two-node Cassandra cluster (replication factor 1, consistency ONE) behind the switch, the
client connected to Server1 only, and the paper's *estimate* of the coordinator cache of Vakili
et al. Declared in crates/appswitch/src/experiments.rs (`appswitch.cluster`), which names
``cluster`` here to run it.

Topology (innet.netns.Topology(servers=2)): Server1 (10.77.0.2) and Server2 (10.77.0.4) share
the switch's server link through a bridge in Server1's namespace; their inter-node traffic stays
there (the paper's third NIC put it through the switch: one more forwarding hop for a key on
Server2, in both methods alike). The driver's load-balancing policy is a whitelist of Server1, so
Server1 coordinates every query: a key held by Server2 costs the hop Server1 → Server2 → Server1
(Fig. 21 (a)), one held by Server1 none (Fig. 21 (b)). Which node holds each key comes from the
driver's token map.

Measured, on the §5.1 workload (Zipf reads, cache 64; a discarded warm-up pass first): "normal"
through the forwarding switch and "proposed" through the application switch, each split by
Server1/Server2 and (proposed) hit/miss (hits by the exact LRU replay, checked against the
switch's counter). Then §5.7's formulas, with h the proposed method's hit ratio:

    proposed            = h · proposed(hit) + (1 − h) · proposed(miss)
    proposed(miss)      = 0.5 · proposed(miss, Server1) + 0.5 · proposed(miss, Server2)
    existing(hit)       ≈ normal(Server1)   (a coordinator-cache hit, Fig. 21 (c), behaves like (b))
    existing(miss, S_i) = normal(S_i)       (a coordinator-cache miss is the normal method)
    existing(miss)      = 0.5 · existing(miss, Server1) + 0.5 · existing(miss, Server2)
    existing            = h · existing(hit) + (1 − h) · existing(miss)

(The paper writes "(a)" for the Server1 case once; (b) is the case that matches its text. Like
the paper, the estimate omits the coordinator cache's own cost.)
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

BARS = ["proposed", "proposed_hit", "proposed_miss", "proposed_miss_server1", "proposed_miss_server2",
        "existing", "existing_hit", "existing_miss", "existing_miss_server1", "existing_miss_server2"]


def estimate(h: float, normal_s1: float, normal_s2: float, hit: float, miss_s1: float, miss_s2: float) -> dict:
    """§5.7's bars from the measured means (µs) and the proposed method's hit ratio h."""
    proposed_miss = 0.5 * miss_s1 + 0.5 * miss_s2
    existing_miss = 0.5 * normal_s1 + 0.5 * normal_s2
    return {
        "proposed": h * hit + (1 - h) * proposed_miss, "proposed_hit": hit, "proposed_miss": proposed_miss,
        "proposed_miss_server1": miss_s1, "proposed_miss_server2": miss_s2,
        "existing": h * normal_s1 + (1 - h) * existing_miss, "existing_hit": normal_s1,
        "existing_miss": existing_miss, "existing_miss_server1": normal_s1, "existing_miss_server2": normal_s2,
    }


def cluster(name: str, p: dict[str, Any], progress: Callable[[float], None]) -> tuple[str, dict]:
    from innet.appswitch.experiments import experiment_rig, lru_hits

    queries, cache, zipf = int(p["queries"]), int(p["cache_entries"]), float(p["zipf"])
    tables, kpt, protocol, seed = int(p["tables"]), int(p["keys_per_table"]), int(p["protocol"]), int(p["seed"])
    tmp = Path(tempfile.mkdtemp(prefix="innet-fig22-"))
    progress(0.02)
    with experiment_rig("appswitch.cluster", "axc", servers=2, heap=f"{int(p['heap_mb'])}M") as t:
        progress(0.3)

        def workload(extra: list[str]) -> dict:
            cmd = [sys.executable, "-m", "innet.appswitch.workload", "turnaround", "--host", t.server_ip,
                   "--protocol", str(protocol), "--zipf", str(zipf), "--seed", str(seed),
                   "--tables", str(tables), "--keys-per-table", str(kpt), "--owners", *extra]
            return json.loads(t.exec(t.client, cmd, timeout=1800).stdout)

        t.start_switch("forward")
        workload(["--setup", "--ops", "0"])
        progress(0.45)
        workload(["--ops", str(queries)])  # warm-up, discarded (as appswitch.turnaround)
        progress(0.6)
        normal = workload(["--ops", str(queries)])
        t.stop_switch()
        progress(0.75)
        stats_path = tmp / "switch-stats.json"
        t.start_switch("appswitch", {"protocol": "cql", "cache_entries": str(cache)},
                       extra=["--stats-json", str(stats_path)])
        proposed = workload(["--ops", str(queries)])
        code, log = t.stop_switch()
        if code != 0:
            raise RuntimeError(f"switch exited {code}: {log[-2000:]}")
        stats = json.loads(stats_path.read_text())["program_report"]
        server_ips = {t.server_ip: "server1", t.server2_ip: "server2"}
    shutil.rmtree(tmp, ignore_errors=True)
    progress(0.95)

    def owner(run: dict, n: int, i: int) -> str:
        hosts = run["owners"][f"{n}:{i}"]
        if len(hosts) != 1 or hosts[0] not in server_ips:
            raise RuntimeError(f"key {n}:{i} is held by {hosts}: expected exactly one of {sorted(server_ips)} "
                               "(replication factor 1 on the two nodes)")
        return server_ips[hosts[0]]

    hits = lru_hits([(n, i) for _, n, i, _ in proposed["samples"]], cache)
    if int(stats["hits"]) != sum(hits):
        raise RuntimeError(f"the switch counted {stats['hits']} hits, the LRU replay {sum(hits)}")
    mean = lambda xs: statistics.fmean(xs) if xs else None  # noqa: E731
    norm = {s: mean([us for _, n, i, us in normal["samples"] if owner(normal, n, i) == s]) for s in ("server1", "server2")}
    prop = [(h, owner(proposed, n, i), us) for h, (_, n, i, us) in zip(hits, proposed["samples"])]
    miss = {s: mean([us for h, o, us in prop if not h and o == s]) for s in ("server1", "server2")}
    hit_us = mean([us for h, _, us in prop if h])
    h = sum(hits) / len(hits) if hits else 0.0
    measured = {
        "normal": mean([s[3] for s in normal["samples"]]), "normal_server1": norm["server1"],
        "normal_server2": norm["server2"], "proposed": mean([us for *_, us in prop]), "proposed_hit": hit_us,
        "proposed_miss": mean([us for h_, _, us in prop if not h_]), "proposed_miss_server1": miss["server1"],
        "proposed_miss_server2": miss["server2"],
    }
    need = [norm["server1"], norm["server2"], hit_us, miss["server1"], miss["server2"]]
    bars = estimate(h, *need) if all(x is not None for x in need) else {}
    counts = {"queries": queries, "hits": sum(hits),
              "server1_keys_queried": sum(1 for _, o, _ in prop if o == "server1"),
              "server2_keys_queried": sum(1 for _, o, _ in prop if o == "server2")}
    summary = {
        "experiment": "appswitch.cluster", "seed": seed, "params": p, **counts, "hit_ratio": h,
        "measured_mean_us": measured, "fig22_us": bars,
        "derived": {"proposed_vs_existing": bars["proposed"] / bars["existing"] - 1.0 if bars else None,
                    "hit_vs_existing_hit": bars["proposed_hit"] / bars["existing_hit"] - 1.0 if bars else None,
                    "server2_vs_server1_normal": norm["server2"] / norm["server1"] - 1.0
                    if norm["server1"] and norm["server2"] else None},
        "switch": stats,
    }
    tables_out = {
        "bars": {"bar": [b for b in BARS if b in bars], "turnaround_us": [bars[b] for b in BARS if b in bars]},
        "samples": {
            "mode": ["normal"] * len(normal["samples"]) + ["appswitch"] * len(prop),
            "owner": [owner(normal, n, i) for _, n, i, _ in normal["samples"]] + [o for _, o, _ in prop],
            "hit": [False] * len(normal["samples"]) + hits,
            "turnaround_us": [s[3] for s in normal["samples"]] + [us for *_, us in prop],
        },
    }
    return json.dumps(summary, indent=2) + "\n", tables_out
