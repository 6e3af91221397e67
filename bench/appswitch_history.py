#!/usr/bin/env python3
"""The history check's long form (issue 36; python/innet/appswitch/history.py): the randomized
concurrent CQL workload through the real switch against real Cassandra 5 for `--duration`
seconds, with the fault schedule (per 100 s: a SIGKILL restart, a 3 s SIGSTOP, a SIGTERM
restart of the switch) and the switch's own link impairment (`--loss`, `--reorder`), every read
checked against a single Cassandra node's semantics and every operation against the fault
windows. The short form is python/tests/test_appswitch_history_netns.py.

    sudo python3 bench/appswitch_history.py [--protocol cql|redis|memcached] [--duration 600]
        [--clients 6] [--keys 8] [--loss 0.01 --reorder 0.01] [--seed 1] [--out DIR]

Writes DIR/appswitch_history_PROTOCOL.json (the summary, every impossible read and hang) and
DIR/appswitch_history_PROTOCOL_records.json.gz (every operation), and prints the summary lines. Needs root (namespaces) and scripts/cassandra.sh's jars.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))


@contextmanager
def servers(protocol: str) -> Iterator:
    """The namespaces with the server of `protocol` started in the server namespace."""
    from innet.appswitch.experiments import experiment_rig

    kv = {"cql": (), "redis": (("redis", 6379),), "memcached": (("memcached", 11211),)}[protocol]
    with experiment_rig("bench/appswitch_history.py", "ahb", cassandra=protocol == "cql", kv=kv) as t:
        yield t


@contextmanager
def _removed(d: Path) -> Iterator[None]:
    try:
        yield
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", choices=["cql", "redis", "memcached"], default="cql")
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--keys", type=int, default=8)
    ap.add_argument("--loss", type=float, default=0.01)
    ap.add_argument("--reorder", type=float, default=0.01)
    ap.add_argument("--duplicate", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--without-state-file", action="store_true",
                    help="run the switch without state_file (what issue 36 found: the check must fail)")
    a = ap.parse_args()
    from innet.appswitch.history import run_history

    a.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="innet-history-"))
    commit = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    load0 = os.getloadavg()[0]
    t0 = time.time()
    port = {"cql": 9042, "redis": 6379, "memcached": 11211}[a.protocol]
    with _removed(tmp), servers(a.protocol) as t:  # the servers stop before the files go
        out = run_history(t, a.duration, keys=a.keys, clients=a.clients, seed=a.seed,
                          impair=["--loss", str(a.loss), "--reorder", str(a.reorder), "--duplicate", str(a.duplicate)],
                          state_file="" if a.without_state_file else str(tmp / "appswitch.state"), stats_dir=tmp, protocol=a.protocol, port=port)
    out.update(protocol=a.protocol, state_file=not a.without_state_file, commit=commit, duration_s=a.duration, wall_s=round(time.time() - t0, 1), load_before=load0,
               load_after=os.getloadavg()[0], loss=a.loss, reorder=a.reorder, duplicate=a.duplicate, seed=a.seed)
    name = f"appswitch_history_{a.protocol}{'_nostate' if a.without_state_file else ''}"
    with gzip.open(a.out / f"{name}_records.json.gz", "wt") as f:
        json.dump(out.pop("records"), f)
    clock = out.pop("server_clock")
    if clock is not None:  # memcached's sampled expiry clock: (sent, answered, its `time`)
        with gzip.open(a.out / f"{name}_clock.json.gz", "wt") as f:
            json.dump(clock, f)
    (a.out / f"{name}.json").write_text(json.dumps(out, indent=1))
    print(f"{a.protocol}{' (no state_file)' if a.without_state_file else ''}, commit {commit}: {a.duration:.0f} s, {a.clients} clients {out['clients']}, {a.keys} keys, "
          f"loss {a.loss} reorder {a.reorder} duplicate {a.duplicate}")
    print(f"faults: {out['faults']}")
    print(f"ops {out['ops']}: {out['counts']}")
    print(f"reads checked {out['reads_checked']}, impossible {out['impossible']}, hangs {out['hangs']}")
    for i in out["impossible_all"][:3]:
        print(f"  impossible: {i}")
    print(f"link impairment (switch instances with stats): {out['impairment']}")
    print(f"switch hits per instance: {[s.get('hits') if s else None for s in out['switch_stats']]}")
    return 0 if out["impossible"] == 0 and out["hangs"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
