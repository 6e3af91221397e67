#!/usr/bin/env python3
"""Packet-hops per second per core of the heavy SwitchV2P runs beside the k=8 UDP benchmark.

    python3 bench/hop_rate.py --bin DIR [--bin DIR2 ...] [--entry fig5a,fig5c,fig6] [--repeat 6]
                              [--set K=V ...] [--json]

DIR holds `v2p_bench` and `bench_sim` (`cargo build --release -p innet-switchv2p --example
v2p_bench` and `-p innet-basic --example bench_sim`, copied out of target/ so a later build does
not replace them). With several `--bin`, each is a variant (e.g. before and after a change) and
every repeat runs all of them in turn. For each entry and variant it runs, as whole processes
and interleaved U E U E ..., that build's k=8 UDP benchmark (`bench_sim bench/flows/ft8_udp.htsim 8 udp`, docs/results/engine.md) and one
part of the entry at a reduced size (ENTRIES below: the full tier's parameters with a shorter
trace), so load that comes and goes hits both alike. The rate is packet-hops (switch hops of
every delivered packet, the engine's `hops_sum`) per CPU second of the event loop (this
thread's user + system time, so another process's turns on the core do not count), and the
ratio entry / UDP is taken pair by pair. Printed: median and 95 % interval (order statistics;
min..max under 6 runs) of each rate, of the ratio, and of the entry's whole-process rate
(hops per CPU second of the process: trace, build and loop); for the Controller, its rounds'
and the solver's wall seconds, apart (the solver is a child process: neither is in the loop's
CPU time). With two builds, the second's speed-up over the first, pair by pair, of the entry and
of the UDP loop (an engine change moves the ratio's denominator too). The load
average before and after is printed too. `--entry ft8-tcp` is plain TCP on the same FT8-10K
fabric (no SwitchV2P), to tell TCP and the traffic apart from the SwitchV2P program.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from innet.stats import median_ci  # noqa: E402

# The full tier's parameters (python/innet/papers/switchv2p.toml: `fixed` + `full_fixed`, the
# judged `artifact` config) with one scheme at one cache size and a shorter trace, so one part
# takes 10-60 s here. Keep in step with the manifest.
ARTIFACT = ["ecmp=artifact", "hystart=ns3"]
ENTRIES = {
    "fig5a": ("switchv2p.cachesize", ["trace=hadoop", "duration_ms=5.0", "schemes=switchv2p", "cache_fractions=0.5", *ARTIFACT],
              "switchv2p cache_fraction=0.5"),
    "fig5c": ("switchv2p.cachesize", ["trace=websearch", "duration_ms=5.0", "schemes=controller150", "cache_fractions=0.5", *ARTIFACT],
              "controller150 cache_fraction=0.5"),
    "fig5c-switchv2p": ("switchv2p.cachesize", ["trace=websearch", "duration_ms=5.0", "schemes=switchv2p", "cache_fractions=0.5", *ARTIFACT],
                        "switchv2p cache_fraction=0.5"),
    "fig6": ("switchv2p.alibaba", ["duration_ms=1.0", "schemes=switchv2p", "cache_fractions=0.5", *ARTIFACT],
             "switchv2p cache_fraction=0.5"),
    # Not an entry: plain TCP on the same FT8-10K fabric (`basic.fattree`'s scenario, 20,000 of
    # its Hadoop flows, L3 switches, no tunnels), to tell TCP and the traffic from SwitchV2P.
    "ft8-tcp": (None, ["--scenario", "ft8-tcp-hadoop", "20000"], None),
}


def run_json(cmd: list[str]) -> dict:
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(ci: tuple[float, float, float], scale: float = 1.0, digits: int = 2) -> str:
    m, lo, hi = (x / scale for x in ci)
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def measure(bin_dir: str, entry: str, extra: list[str]) -> dict:
    """One pair: the build's UDP benchmark, then its run of `entry`."""
    u = run_json([str(Path(bin_dir) / "bench_sim"), "bench/flows/ft8_udp.htsim", "8", "udp"])
    r = run_json(entry_command(bin_dir, entry, extra))
    r.setdefault("process_cpu_s", r["loop_cpu_s"])  # bench_sim: the loop only
    for k in ("controller_s", "solver_s"):
        r.setdefault(k, 0.0)
    r.setdefault("loop_s", r.get("wall_s", 0.0))
    u_rate = u["packet_hops"] / u["loop_cpu_s"]
    r_rate = r["packet_hops"] / r["loop_cpu_s"]
    return {"udp": u, "entry": r, "udp_rate": u_rate, "entry_rate": r_rate, "ratio": r_rate / u_rate,
            "entry_process_rate": r["packet_hops"] / r["process_cpu_s"]}


def entry_command(bin_dir: str, entry: str, extra: list[str]) -> list[str]:
    exp, params, part = ENTRIES[entry]
    if exp is None:
        return [str(Path(bin_dir) / "bench_sim"), *params]
    return [str(Path(bin_dir) / "v2p_bench"), exp, "--part", part, *params, *extra]


def summarise(rows: list[dict], command: str) -> dict:
    col = lambda k: [x[k] for x in rows]  # noqa: E731
    ent = lambda k: [x["entry"][k] for x in rows]  # noqa: E731
    last = rows[-1]["entry"]
    return {
        "command": command,
        "part": last.get("part", ""),
        "events": last["events"],
        "packet_hops": last["packet_hops"],
        "udp_rate": median_ci(col("udp_rate")),
        "entry_rate": median_ci(col("entry_rate")),
        "ratio": median_ci(col("ratio")),
        "entry_process_rate": median_ci(col("entry_process_rate")),
        "entry_loop_cpu_s": median_ci(ent("loop_cpu_s")),
        "entry_process_cpu_s": median_ci(ent("process_cpu_s")),
        "controller_s": median_ci(ent("controller_s")),
        "solver_s": median_ci(ent("solver_s")),
        "runs": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", action="append", required=True, help="directory with v2p_bench and bench_sim (repeatable)")
    ap.add_argument("--entry", default="fig5a,fig5c,fig6")
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--set", action="append", default=[], metavar="K=V", help="extra parameter for every entry")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    names = [e for e in a.entry.split(",") if e]
    for e in names:
        if e not in ENTRIES:
            sys.exit(f"--entry: expected some of {', '.join(ENTRIES)}, got '{e}'")
    for b in a.bin:
        for tool in ("v2p_bench", "bench_sim"):
            if not (Path(b) / tool).is_file():
                sys.exit(f"--bin {b}: no {tool} there")
    load_before = os.getloadavg()
    report = {"load_before": load_before, "variants": a.bin, "entries": {}}
    for e in names:
        rows: dict[str, list[dict]] = {b: [] for b in a.bin}
        for i in range(a.repeat):
            for b in a.bin:
                x = measure(b, e, a.set)
                rows[b].append(x)
                print(f"{e} run {i + 1} {b}: UDP {x['udp_rate'] / 1e6:.2f} M/s  entry {x['entry_rate'] / 1e6:.2f} M/s"
                      f"  ratio {x['ratio']:.3f}  (entry loop {x['entry']['loop_cpu_s']:.1f} s CPU,"
                      f" {x['entry']['loop_s']:.1f} s wall; load {os.getloadavg()[0]:.1f})", file=sys.stderr)
        command = " ".join(Path(x).name if i == 0 else repr(x) if " " in x else x
                           for i, x in enumerate(entry_command(".", e, a.set)))
        report["entries"][e] = {b: summarise(rows[b], command) for b in a.bin}
        if len(a.bin) == 2:
            base, new = (rows[b] for b in a.bin)
            report["entries"][e]["speedup"] = median_ci([n["entry_rate"] / o["entry_rate"] for o, n in zip(base, new)])
            # The UDP loop's too: a change to the engine moves the ratio's denominator as well.
            report["entries"][e]["speedup_udp"] = median_ci([n["udp_rate"] / o["udp_rate"] for o, n in zip(base, new)])
    report["load_after"] = os.getloadavg()
    if a.json:
        print(json.dumps(report))
        return
    print(f"load average before {load_before[0]:.2f}, after {report['load_after'][0]:.2f}; "
          f"{a.repeat} interleaved pairs each; median [95 % interval]")
    print("| entry | build | packet-hops | UDP k=8 (M hops/CPU-s) | entry loop (M hops/CPU-s) | ratio | entry whole process (M hops/CPU-s) | Controller rounds / solver (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for e, per in report["entries"].items():
        for b in a.bin:
            s = per[b]
            ctl = f"{fmt(s['controller_s'])} / {fmt(s['solver_s'])}" if s["controller_s"][0] > 0 else "-"
            print(f"| {e} | {b} | {s['packet_hops']:,} | {fmt(s['udp_rate'], 1e6)} | {fmt(s['entry_rate'], 1e6)} | "
                  f"{fmt(s['ratio'], 1, 3)} | {fmt(s['entry_process_rate'], 1e6)} | {ctl} |")
        if "speedup" in per:
            print(f"| {e} | speed-up (second / first build, pair by pair) | | {fmt(per['speedup_udp'], 1, 3)} | "
                  f"{fmt(per['speedup'], 1, 3)} | | | |")


if __name__ == "__main__":
    main()
