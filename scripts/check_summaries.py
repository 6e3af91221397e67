#!/usr/bin/env python3
"""Behaviour check: every simulated experiment's quick form, default seed, hashed.

    python3 scripts/check_summaries.py write   [--baseline FILE] [--out DIR] [--only NAME ...]
    python3 scripts/check_summaries.py compare [--baseline FILE] [--out DIR] [--only NAME ...]

`write` runs each experiment `innet list` names whose runner is the simulator (not the real-packet
runs, which are not deterministic) with `--quick` and no overrides, and records the sha256 of its
summary.json in the baseline file (default scripts/summary_hashes.json). `compare` runs them again
and names every experiment whose summary differs, is new, or is gone; it exits 1 if any does.
With `--out DIR` each summary is also written to DIR/NAME.json, so a difference can be read with
`diff`. Summaries that carry wall-clock measurements are listed in the baseline as `volatile`
keys: those keys are removed before hashing (the rest of the summary must still match). A
difference made on purpose is written in the baseline's `intended_changes` (name → why), with the
new hash; `write` starts a fresh baseline at HEAD and drops them.

Run it from a checkout whose extension is built (`pip install -e .` in that checkout's venv).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = REPO / "scripts" / "summary_hashes.json"


def simulated_experiments() -> list[str]:
    from innet import _native

    return sorted(e["name"] for e in _native.list_experiments() if e.get("runner", "simulator") == "simulator")


def _drop(obj: object, path: list[str]) -> None:
    """Remove the key at a dotted path (`*` matches every key of an object) from a JSON value."""
    if not path or not isinstance(obj, dict):
        return
    head, rest = path[0], path[1:]
    keys = list(obj) if head == "*" else [head] if head in obj else []
    for k in keys:
        if rest:
            _drop(obj[k], rest)
        else:
            del obj[k]


def digest(summary_json: str, volatile: list[str]) -> str:
    if volatile:
        obj = json.loads(summary_json)
        for v in volatile:
            _drop(obj, v.split("."))
        summary_json = json.dumps(obj, indent=2)
    return hashlib.sha256(summary_json.encode()).hexdigest()


def run_all(names: list[str], volatile: dict[str, list[str]], out: Path | None) -> dict[str, str]:
    from innet import _native

    hashes = {}
    for name in names:
        t0 = time.perf_counter()
        summary_json, _tables = _native.run_experiment(name, {}, True, None)
        hashes[name] = digest(summary_json, volatile.get(name, []))
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.json").write_text(summary_json)
        print(f"{name:32s} {hashes[name][:16]}  {time.perf_counter() - t0:6.1f} s", file=sys.stderr, flush=True)
    return hashes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["write", "compare"])
    ap.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE)
    ap.add_argument("--out", type=Path, help="also write each summary to DIR/NAME.json")
    ap.add_argument("--only", nargs="*", default=None, metavar="NAME", help="run only these experiments")
    args = ap.parse_args(argv)

    old = json.loads(args.baseline.read_text()) if args.baseline.exists() else {}
    volatile = old.get("volatile", {})
    names = simulated_experiments()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            print(f"check_summaries: not simulated experiments: {', '.join(unknown)}", file=sys.stderr)
            return 2
        names = sorted(args.only)
    hashes = run_all(names, volatile, args.out)

    if args.mode == "write":
        merged = dict(old.get("sha256", {})) if args.only else {}
        merged.update(hashes)
        doc = {"commit": _commit(), "volatile": volatile, "sha256": dict(sorted(merged.items()))}
        args.baseline.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {len(hashes)} hashes to {args.baseline}", file=sys.stderr)
        return 0

    base = old.get("sha256", {})
    if not base:
        print(f"check_summaries: {args.baseline} has no hashes; run `write` first", file=sys.stderr)
        return 2
    expected = {n: base[n] for n in names if n in base} if args.only else base
    changed = sorted(n for n in hashes if n in expected and hashes[n] != expected[n])
    new = sorted(set(hashes) - set(expected))
    gone = sorted(set(expected) - set(hashes))
    for label, group in (("differs", changed), ("new (not in the baseline)", new), ("gone (in the baseline only)", gone)):
        for n in group:
            print(f"{n}: {label}")
    same = len(hashes) - len(changed) - len(new)
    print(f"{same} of {len(expected)} summaries identical to the baseline ({old.get('commit', '?')})")
    for n, why in old.get("intended_changes", {}).items():
        print(f"  {n}: intended change since {old.get('commit', '?')}: {why}")
    return 1 if changed or new or gone else 0


def _commit() -> str:
    import subprocess

    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
