#!/usr/bin/env python3
"""Startup benchmark of the `innet` command: time of `innet --help`, and time from the
command's start to the moment the simulation starts (`innet run EXPERIMENT --quick` reaching
the simulator's entry point, `_native.run_experiment`, where the run is stopped).

    python bench/startup.py [--repeat 21] [--experiment basic.fattree] [--variant NAME=PYTHONPATH ...]

Wall time is what a user waits; the command's CPU time (user + sys) is reported beside it because
on a loaded machine wall time mostly measures the wait for a core. Each variant is a Python path put in front of this checkout's (default: this checkout alone), so
an old checkout's `python/` can be compared with this one on the same machine; variants are
interleaved (A B A B ...) and every measure is reported as the median of the repeats with a
95 % distribution-free confidence interval (order statistics of the binomial). Run it in the venv
that has `innet` installed.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from innet.stats import median_ci  # noqa: E402  (one median CI for every timing direction)

# Run `innet.cli.main()` with `run_experiment` replaced by a stamp-and-exit: the time written is
# when the simulation would have started. stderr is a terminal (a pty), as for a user, so the
# progress bar's imports are counted.
STAMP_AND_EXIT = """
import os, sys, time
from innet import _native
def _stamp(*a, **k):
    with open(os.environ["INNET_BENCH_STAMP"], "w") as f:
        f.write(repr(time.time()))
    os._exit(0)
_native.run_experiment = _stamp
sys.argv = ["innet", *sys.argv[1:]]
from innet.cli import main
main()
"""


def env_for(pythonpath: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_help(innet: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of `innet --help`."""
    c0, t0 = children_cpu_s(), time.perf_counter()
    subprocess.run([innet, "--help"], env=env, check=True, capture_output=True)
    return time.perf_counter() - t0, children_cpu_s() - c0


def time_sim_start(experiment: str, env: dict[str, str], out: str) -> tuple[float, float]:
    """(wall, CPU) seconds from the command's start to the simulation's."""
    stamp = Path(out) / "stamp"
    stamp.unlink(missing_ok=True)
    master, slave = pty.openpty()
    c0, t0 = children_cpu_s(), time.time()
    try:
        r = subprocess.run([sys.executable, "-c", STAMP_AND_EXIT, "run", experiment, "--quick", "--json", "--no-plots",
                            "--out", out], env={**env, "INNET_BENCH_STAMP": str(stamp)},
                           stdout=subprocess.DEVNULL, stderr=slave)
    finally:
        os.close(slave)
        os.close(master)
    if not stamp.exists():
        raise RuntimeError(f"the simulation never started (exit {r.returncode}): try the command by hand")
    return float(stamp.read_text()) - t0, children_cpu_s() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--experiment", default="basic.fattree")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PYTHONPATH")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    innet = shutil.which("innet", path=str(Path(sys.executable).parent)) or shutil.which("innet")
    if innet is None:
        print("startup: no `innet` next to this Python; activate the checkout's venv", file=sys.stderr)
        return 2
    variants: list[tuple[str, str | None]] = []
    for v in args.variant or ["this="]:
        name, sep, path = v.partition("=")
        if not sep:
            print(f"startup: --variant expects NAME=PYTHONPATH, got {v!r}", file=sys.stderr)
            return 2
        variants.append((name, path or None))
    measures = ("help_s", "help_cpu_s", "sim_start_s", "sim_start_cpu_s")
    samples: dict[str, dict[str, list[float]]] = {n: {m: [] for m in measures} for n, _ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in variants:  # warm the file cache once, not measured
            env = env_for(path)
            time_help(innet, env)
            time_sim_start(args.experiment, env, tmp)
        for _ in range(args.repeat):
            for name, path in variants:
                env = env_for(path)
                for prefix, (wall, cpu) in (("help", time_help(innet, env)),
                                            ("sim_start", time_sim_start(args.experiment, env, tmp))):
                    samples[name][f"{prefix}_s"].append(wall)
                    samples[name][f"{prefix}_cpu_s"].append(cpu)
    report = {"repeat": args.repeat, "experiment": args.experiment, "loadavg_1min": os.getloadavg()[0],
              "cpus": os.cpu_count(), "variants": {}}
    for name, _ in variants:
        report["variants"][name] = {m: dict(zip(("median", "ci_low", "ci_high"), median_ci(xs)))
                                    for m, xs in samples[name].items()}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{args.repeat} repeats, interleaved; median [95 % CI] in seconds (wall, and CPU user+sys of the "
          f"command); load average {report['loadavg_1min']:.1f} on {report['cpus']} CPUs")
    for name, r in report["variants"].items():
        for m, s in r.items():
            print(f"{name:12s} {m:16s} {s['median']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
