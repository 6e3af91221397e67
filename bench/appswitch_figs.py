#!/usr/bin/env python3
"""The application switch's turnaround figures (Figs. 12, 15, 16, 17, 18, 19) measured so that a
direction can be told from noise: one Cassandra and one data load, then per point of each
figure `--repeat` rounds, each running every variant of the point once (normal = the `forward`
program, cached = `appswitch` with a cold cache; Fig. 19: normal, fixed-offset parser, lexical
analysis) in an order rotated per round (A B, B A, ...), after a discarded warm-up pass.
Fig. 17's points are 1 and 2 client machines (client namespaces) × `--fig17-conns` connections
each, `--queries` reads per client dealt over its connections, both clients started together
(python/innet/appswitch/passes.py's `connections_pass`, as `innet run appswitch.connections`).
With 17 among `--figs` the topology has the second client namespace for the whole run, so client
1's frames cross a Linux bridge in its namespace for every figure of that run (the same for both
variants); measure Fig. 17 alone to keep the other figures' path as before.

Per pass: the mean turnaround of its queries (the paper's statistic; Fig. 17: over every read of
every connection of every client) and the switch's hit ratio.
Per round: the relative difference of the variants' means (cached / normal − 1; Fig. 19: lexical /
fixed − 1 and lexical / normal − 1). Reported: the median of the rounds' differences with a 95 %
distribution-free confidence interval (order statistics of the binomial; bench/startup.py), and
a direction only when the interval excludes zero ("within noise" otherwise).

CPU placement (`--pin`, default on): the switch and the client on CPU 0, Cassandra (all its
threads) on CPU 1 — fixed for every pass, stated in the output. The load average before and
after is recorded beside the table.

    sudo .venv/bin/python bench/appswitch_figs.py [--repeat 10] [--queries 1024] [--figs 12,15,16,17,18,19]
        [--fig17-conns 1,8,64] [--tables 16 --keys-per-table 256] [--out DIR]

Writes DIR/appswitch_figs.json (every pass) and DIR/appswitch_figs.md (the table), and prints the
table; each pass is also appended to DIR/appswitch_figs.partial.jsonl as it ends. A pass that fails
(a client error, the switch exiting non-zero) is recorded with its error and the run goes on. Needs root (namespaces) and scripts/cassandra.sh's jars. ~35 min with the defaults (Fig. 17 ~10 of them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

from startup import median_ci  # noqa: E402

# Per figure: its points as (label, cache entries, Zipf k, read ratio); Fig. 19 is separate.
SWEEPS = {
    "12": [("cache 64, k 1.0", 64, 1.0, 1.0)],
    "15": [(f"cache {c}", c, 1.0, 1.0) for c in (4, 16, 64, 256, 1024)],
    "16": [(f"k {k}", 64, k, 1.0) for k in (0.5, 0.75, 1.0, 1.25, 1.5)],
    "18": [(f"reads {int(r * 100)} %", 64, 1.0, r) for r in (1.0, 0.9, 0.5, 0.1, 0.0)],
}
LEXICAL_LENS = (4, 8, 16)
FIG17_CLIENTS = (1, 2)
ALL_FIGS = ("12", "15", "16", "17", "18", "19")
# The fewest rounds whose extreme order statistics cover a median with >= 95 % (1 - 2/2^6).
MIN_ROUNDS = 6


def uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10, help="rounds per point (default 10)")
    ap.add_argument("--queries", type=int, default=1024, help="operations per pass (default: the paper's 1,024)")
    ap.add_argument("--figs", default=",".join(ALL_FIGS), help="figures to measure (default all six)")
    ap.add_argument("--fig17-conns", default="1,8,64", help="Fig. 17: connections per client (default 1,8,64)")
    ap.add_argument("--tables", type=int, default=16)
    ap.add_argument("--keys-per-table", type=int, default=256)
    ap.add_argument("--protocol", type=int, default=5)
    ap.add_argument("--no-pin", action="store_true", help="leave CPU placement to the scheduler")
    ap.add_argument("--out", default="bench-appswitch-figs")
    a = ap.parse_args()
    figs = [f.strip() for f in a.figs.split(",") if f.strip()]
    bad = [f for f in figs if f not in ALL_FIGS]
    try:
        fig17_conns = [int(c) for c in a.fig17_conns.split(",") if c.strip()]
    except ValueError:
        fig17_conns = []
    if bad or a.repeat < MIN_ROUNDS or a.queries < 1 or not fig17_conns or not all(1 <= c <= 1024 for c in fig17_conns):
        print(f"appswitch_figs: --figs takes {','.join(ALL_FIGS)} (got {bad}); --repeat >= {MIN_ROUNDS} (fewer rounds "
              "cannot give a 95 % distribution-free interval of a median); --queries >= 1; --fig17-conns: "
              f"comma-separated counts 1..1024 (got {a.fig17_conns!r})", file=sys.stderr)
        return 2
    if "19" in figs and a.tables < max(LEXICAL_LENS):
        print(f"appswitch_figs: Fig. 19 queries tables of length {LEXICAL_LENS}: --tables must be >= 16", file=sys.stderr)
        return 2

    from innet.appswitch.experiments import experiment_rig
    from innet.appswitch.passes import connections_pass
    from innet.appswitch.workload import lexical_layout

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    pin = not a.no_pin
    load_before = uptime()
    passes: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="innet-bench-figs-"))
    clients = max(FIG17_CLIENTS) if "17" in figs else 1
    with experiment_rig("bench/appswitch_figs.py", "axb", clients=clients) as t:
        if pin:
            for pidfile in t.workdir().glob("cassandra*/cassandra.pid"):
                subprocess.run(["taskset", "-a", "-cp", "1", pidfile.read_text().strip()], capture_output=True, check=True)

        pin_client = ["taskset", "-c", "0"] if pin else []
        common = ["--host", t.server_ip, "--protocol", str(a.protocol), "--tables", str(a.tables),
                  "--keys-per-table", str(a.keys_per_table)]

        def workload(extra: list[str]) -> list:
            cmd = [*pin_client, sys.executable, "-m", "innet.appswitch.workload", "turnaround", *common,
                   "--seed", "1", *extra]
            return json.loads(t.exec(t.client, cmd, timeout=3600).stdout)["samples"]

        def sequential(args: list[str]):
            """A pass of one client's sequential operations: (turnarounds in µs, reads issued)."""
            def run() -> tuple[list[float], int]:
                samples = workload(args)
                return [s[3] for s in samples], sum(1 for s in samples if s[0] == "read")
            return run

        tags = iter(range(1 << 30))

        def concurrent(nclients: int, conns: int):
            """A Fig. 17 pass: every read of every connection of every client."""
            def run() -> tuple[list[float], int]:
                per_client, errors = connections_pass(t, tmp, f"p{next(tags)}", nclients, conns, a.queries, 1,
                                                      [*common, "--zipf", "1.0"], pin_client)
                if errors:
                    raise RuntimeError(f"{len(errors)} reads failed: {errors[:3]}")
                return [s[4] for per in per_client for s in per], nclients * a.queries
            return run

        def start(program: str, sets: dict | None, stats: Path | None) -> None:
            t.start_switch(program, sets, extra=["--stats-json", str(stats)] if stats else None)
            if pin:
                subprocess.run(["taskset", "-a", "-cp", "0", str(t.switch.pid)], capture_output=True, check=True)

        def one_pass(variant: str, sets: dict | None, run) -> dict:
            stats = tmp / "stats.json"
            stats.unlink(missing_ok=True)
            start("forward" if variant == "normal" else "appswitch", sets, None if variant == "normal" else stats)
            us, reads = run()
            code, log = t.stop_switch()
            if code != 0:
                raise RuntimeError(f"switch exited {code}: {log[-2000:]}")
            hits = int(json.loads(stats.read_text())["program_report"]["hits"]) if variant != "normal" else 0
            return {"mean_us": statistics.fmean(us), "median_us": statistics.median(us),
                    "hit_ratio": hits / reads if reads else None, "ops": len(us)}

        start("forward", None, None)
        workload(["--setup", "--ops", "0"])
        workload(["--ops", str(a.queries)])  # warm-up, discarded
        t.stop_switch()
        points = []
        cql64 = {"protocol": "cql", "cache_entries": "64"}
        for fig in figs:
            if fig == "19":
                for n in LEXICAL_LENS:
                    (t0, tl), (k0, kl) = lexical_layout(n)
                    run = sequential(["--ops", str(a.queries), "--literal", "--only-len", str(n)])
                    points.append((fig, f"N = {n}", {
                        "normal": (None, run),
                        "fixed": ({**cql64, "parser": "fixed", "fixed_table": f"{t0}:{tl}",
                                   "fixed_key": f"{k0}:{kl}"}, run),
                        "lexical": (cql64, run)}))
            elif fig == "17":
                for nc in FIG17_CLIENTS:
                    for conns in fig17_conns:
                        run = concurrent(nc, conns)
                        points.append((fig, f"{nc} client{'s' if nc > 1 else ''} × {conns} conns",
                                       {"normal": (None, run), "cached": (cql64, run)}))
            else:
                for label, cache, k, rr in SWEEPS[fig]:
                    run = sequential(["--ops", str(a.queries), "--zipf", str(k), "--read-ratio", str(rr)])
                    points.append((fig, label, {"normal": (None, run),
                                                "cached": ({"protocol": "cql", "cache_entries": str(cache)}, run)}))
        total = len(points) * a.repeat
        done = 0
        for fig, label, variants in points:
            names = list(variants)
            for r in range(a.repeat):
                order = names[r % len(names):] + names[:r % len(names)]
                for v in order:
                    sets, run = variants[v]
                    head = {"fig": fig, "point": label, "round": r, "variant": v, "order": order.index(v)}
                    try:
                        passes.append({**head, **one_pass(v, sets, run)})
                    except RuntimeError as e:  # a failed pass is a finding: kept, named, not fatal
                        t.stop_switch()
                        passes.append({**head, "error": str(e)[-1500:]})
                        print(f"pass failed: Fig. {fig} {label} round {r} {v}: {str(e)[-300:]}", file=sys.stderr)
                    with (out / "appswitch_figs.partial.jsonl").open("a") as f:
                        f.write(json.dumps(passes[-1]) + "\n")
                done += 1
                print(f"[{time.strftime('%H:%M:%S')}] {done}/{total} Fig. {fig} {label} round {r}", file=sys.stderr)
    subprocess.run(["rm", "-rf", str(tmp)])
    load_after = uptime()
    placement = ("switch and client on CPU 0, Cassandra on CPU 1 (taskset)" if pin else "not pinned")
    failed = [p for p in passes if "error" in p]
    rows = table([p for p in passes if "error" not in p])
    md = [f"Load average before {load_before}, after {load_after}; {placement}; {a.repeat} rounds per point, "
          f"{a.queries} operations per pass, variants rotated per round; {len(failed)} of {len(passes)} passes "
          "failed (their rounds are left out of the comparison; appswitch_figs.json has each error).", "",
          "| fig | point | comparison | hit ratio | A mean (µs) | B mean (µs) | median Δ of means [95 % CI] | direction |",
          "|---|---|---|---|---|---|---|---|"]
    for x in rows:
        md.append(f"| {x['fig']} | {x['point']} | {x['comparison']} | {x['hit_ratio']} | {x['a_us']:.0f} | {x['b_us']:.0f} "
                  f"| {100 * x['delta']:+.1f} % [{100 * x['lo']:+.1f}, {100 * x['hi']:+.1f}] | {x['direction']} |")
    text = "\n".join(md) + "\n"
    (out / "appswitch_figs.md").write_text(text)
    (out / "appswitch_figs.json").write_text(json.dumps({"load_before": load_before, "load_after": load_after,
                                                          "placement": placement, "args": vars(a), "passes": passes,
                                                          "rows": rows}, indent=1) + "\n")
    print(text)
    return 0


def table(passes: list[dict]) -> list[dict]:
    """Per point and comparison (B against A, paired by round): medians of the per-pass means,
    the median relative difference with its 95 % interval, and the direction it establishes."""
    rows = []
    keys = list(dict.fromkeys((p["fig"], p["point"]) for p in passes))
    for fig, point in keys:
        mine = [p for p in passes if (p["fig"], p["point"]) == (fig, point)]
        by = {(p["variant"], p["round"]): p for p in mine}
        variants = list(dict.fromkeys(p["variant"] for p in mine))
        comps = [("normal", "lexical"), ("fixed", "lexical")] if "lexical" in variants else [("normal", "cached")]
        for va, vb in comps:
            rounds = sorted({p["round"] for p in mine if (va, p["round"]) in by and (vb, p["round"]) in by})
            d = [by[(vb, r)]["mean_us"] / by[(va, r)]["mean_us"] - 1.0 for r in rounds]
            med, lo, hi = median_ci(d)
            hr = [by[(vb, r)]["hit_ratio"] for r in rounds if by[(vb, r)]["hit_ratio"] is not None]
            rows.append({
                "fig": fig, "point": point, "comparison": f"{vb} vs {va}", "rounds": len(rounds),
                "hit_ratio": f"{statistics.median(hr):.2f}" if hr else "–",
                "a_us": statistics.median(by[(va, r)]["mean_us"] for r in rounds),
                "b_us": statistics.median(by[(vb, r)]["mean_us"] for r in rounds),
                "delta": med, "lo": lo, "hi": hi,
                "direction": "faster" if hi < 0 else "slower" if lo > 0 else "within noise",
            })
    return rows


if __name__ == "__main__":
    sys.exit(main())
