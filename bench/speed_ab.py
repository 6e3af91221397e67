#!/usr/bin/env python3
"""Engine speed, baseline against branch: the runs reproductions are made of, interleaved.

    python3 bench/speed_ab.py --base BASE/basic_run --branch BRANCH/basic_run [--repeat 3]
                              [--scenario ft8-tcp-hadoop,ft16-tcp-hadoop] [--set K=V ...]
                              [--base-env K=V ...] [--branch-env K=V ...] [--json]

Each variant is a `basic_run` binary (`cargo build --release -p innet-basic --example
basic_run`; for a commit that predates the example, copy crates/basic/examples/basic_run.rs
into it: it uses only the experiment's public API). The scenarios are `innet bench sim`'s
`basic.fattree` ones (same parameters), run as whole processes in the order A B A B ..., so
load that comes and goes hits both alike. For each variant and scenario it prints the median
and a 95 % confidence interval (order statistics of the sorted runs; with fewer than 6 runs the
interval is the min..max) of wall seconds, user CPU seconds, events per wall second and
packet-hops per wall second, plus peak RSS, and checks that both variants printed the same
summary (the same answers). The load average before the first run is printed beside them.

`--base-env`/`--branch-env` add environment variables to one variant's processes, so one binary
can be compared with itself under another setting (e.g. `--branch-env
GLIBC_TUNABLES=glibc.malloc.hugetlb=1`: transparent huge pages, docs/results/engine.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from innet.stats import median_ci  # noqa: E402  (one median CI for every timing direction)

# Keep in step with crates/basic/src/bench.rs (fattree_scenario).
SCENARIOS = {
    "ft8-tcp-hadoop": [],
    "ft16-tcp-hadoop": ["pods=50", "tors_per_pod=8", "servers_per_tor=32", "spines_per_pod=8", "cores=16", "flows=10000"],
}


def run_once(binary: str, args: list[str], env: dict[str, str] | None = None) -> dict:
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, **env} if env else None)
    out, err = p.stdout.read(), p.stderr.read()  # both small: the summary and one line
    _, status, usage = os.wait4(p.pid, 0)  # this child's own rusage (peak RSS in KiB)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{binary} {' '.join(args)} failed: {err.strip()}")
    return {"summary": json.loads(out), "wall_s": wall, "user_s": usage.ru_utime, "peak_rss_mib": usage.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--branch", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scenario", default=",".join(SCENARIOS))
    ap.add_argument("--set", action="append", default=[], metavar="K=V",
                    help="extra basic.fattree parameter (e.g. flows=2000 for a reduced run)")
    ap.add_argument("--base-env", action="append", default=[], metavar="K=V",
                    help="environment variable for the base variant's processes")
    ap.add_argument("--branch-env", action="append", default=[], metavar="K=V",
                    help="environment variable for the branch variant's processes")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    envs = {}
    for variant, pairs in (("base", a.base_env), ("branch", a.branch_env)):
        envs[variant] = {}
        for kv in pairs:
            k, sep, v = kv.partition("=")
            if not sep or not k:
                sys.exit(f"--{variant}-env: expected K=V, got '{kv}'")
            envs[variant][k] = v
    names = [s for s in a.scenario.split(",") if s]
    for s in names:
        if s not in SCENARIOS:
            sys.exit(f"--scenario: expected some of {', '.join(SCENARIOS)}, got '{s}'")
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    rows = []
    for name in names:
        runs: dict[str, list[dict]] = {"base": [], "branch": []}
        for _ in range(a.repeat):
            for variant, binary in (("base", a.base), ("branch", a.branch)):
                runs[variant].append(run_once(binary, SCENARIOS[name] + a.set, envs[variant]))
        summaries = {json.dumps(r["summary"], sort_keys=True) for v in runs.values() for r in v}
        for variant, rs in runs.items():
            events = rs[0]["summary"]["events"]
            hops = rs[0]["summary"]["delivered_packets"] * rs[0]["summary"]["mean_packet_hops"]
            row = {"scenario": name, "variant": variant, "runs": len(rs), "same_answers": len(summaries) == 1}
            for key, xs in (
                ("wall_s", [r["wall_s"] for r in rs]),
                ("user_s", [r["user_s"] for r in rs]),
                ("events_per_wall_s", [events / r["wall_s"] for r in rs]),
                ("packet_hops_per_wall_s", [hops / r["wall_s"] for r in rs]),
            ):
                row[key] = median_ci(xs)
            row["peak_rss_mib"] = max(r["peak_rss_mib"] for r in rs)
            rows.append(row)
    if a.json:
        for row in rows:
            print(json.dumps(row))
        return
    print(f"{'scenario':<16} {'variant':<7} {'wall s':>22} {'user s':>22} {'events/s':>30} {'hops/s':>30} "
          f"{'peak MiB':>9} same")
    for r in rows:
        cell = lambda t, f: f"{f(t[0])} [{f(t[1])}, {f(t[2])}]"  # noqa: E731
        sec = lambda x: f"{x:.2f}"  # noqa: E731
        rate = lambda x: f"{x / 1e6:.2f}M"  # noqa: E731
        print(f"{r['scenario']:<16} {r['variant']:<7} {cell(r['wall_s'], sec):>22} {cell(r['user_s'], sec):>22} "
              f"{cell(r['events_per_wall_s'], rate):>30} {cell(r['packet_hops_per_wall_s'], rate):>30} "
              f"{r['peak_rss_mib']:>9.0f} {r['same_answers']}")
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
