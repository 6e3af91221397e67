#!/usr/bin/env python3
"""What each entry of a finished tier cost against the manifest's ``cost_s``, and (``--write``)
the manifests' ``cost_s.<tier>`` set to the measurement where it is off by more than ``--factor``,
so the next ``--dry-run`` plans with what the machine took:

    python3 scripts/calibrate_costs.py OUT --tier full            # the table only
    python3 scripts/calibrate_costs.py OUT --tier full --write    # and the manifests rewritten

A cost is per point, in the manifest's unit (``innet.report.measured_cost``: CPU seconds of a
simulated point, wall seconds of a real-packet one). A written value keeps two significant
digits; the rest of the line (the other tiers, its comment) is left as it is. Child processes'
CPU time (the ILP Controller's HiGHS runs) is not in a point's CPU seconds: an entry that spends
it is off by that much, which the ``--factor`` band (default 1.25) leaves alone when small; costs
under ``--floor`` seconds both ways (default 10) are left too."""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from innet import report, reproduce  # noqa: E402

MANIFESTS = Path(__file__).resolve().parent.parent / "python" / "innet" / "papers"


def two_digits(x: float) -> int:
    """``x`` rounded to two significant digits, at least 1."""
    if x < 1:
        return 1
    e = 10 ** max(int(math.floor(math.log10(x))) - 1, 0)
    return int(round(x / e) * e)


def rewrite(text: str, fig_id: str, tier: str, value: int) -> str:
    """``text`` (a manifest) with the ``cost_s`` of entry ``fig_id`` saying ``tier = value``."""
    blocks = re.split(r"(?m)^(?=\[\[figure\]\])", text)
    for i, b in enumerate(blocks):
        if re.search(rf'(?m)^id = "{re.escape(fig_id)}"\s*$', b):
            line = re.search(r"(?m)^cost_s = \{[^}\n]*\}", b)
            if line is None:
                raise SystemExit(f"calibrate_costs: entry {fig_id}: no one-line `cost_s = {{ ... }}` to rewrite")
            inner, n = re.subn(rf"\b{tier} = [0-9.]+", f"{tier} = {value}", line.group(0))
            if n != 1:
                raise SystemExit(f"calibrate_costs: entry {fig_id}: its cost_s has no `{tier} = N`")
            blocks[i] = b[: line.start()] + inner + b[line.end():]
            return "".join(blocks)
    raise SystemExit(f"calibrate_costs: no entry with id = \"{fig_id}\"")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="the output directory of `innet reproduce` (holds TIER/)")
    ap.add_argument("--tier", choices=reproduce.TIERS, default=reproduce.DEFAULT_TIER)
    ap.add_argument("--factor", type=float, default=1.25, help="rewrite only costs off by more than this, either way")
    ap.add_argument("--floor", type=float, default=10.0, help="leave costs under this many seconds both ways (they do not move a plan)")
    ap.add_argument("--write", action="store_true", help="rewrite the manifests (python/innet/papers/*.toml)")
    ap.add_argument("--manifests", type=Path, default=MANIFESTS, help="the folder of the manifests --write rewrites")
    a = ap.parse_args()
    if not (Path(a.root) / a.tier).is_dir():
        raise SystemExit(f"calibrate_costs: {Path(a.root) / a.tier}: no such directory")
    collected = report.collect(a.root, a.tier)
    print(f"| entry | points | unit | manifest cost_s.{a.tier} | measured per point | measured / manifest |")
    print("|---|---:|---|---:|---:|---:|")
    changes: dict[str, list[tuple[str, int]]] = {}
    total_est = total_used = 0.0
    for paper, entries in collected.items():
        for e in entries:
            used = report.measured_cost(e)
            if used is None:
                continue
            est = e.fig.cost_s.get(a.tier, 0.0)
            total_est, total_used = total_est + est * len(e.rows), total_used + used * len(e.rows)
            ratio = used / est if est else math.inf
            mark = ""
            off = not est or not 1 / a.factor <= ratio <= a.factor
            if off and max(used, est) >= a.floor and two_digits(used) != est:
                changes.setdefault(paper, []).append((e.fig.id, two_digits(used)))
                mark = f" → {two_digits(used):,}"
            print(f"| {paper}/{e.fig.id} | {len(e.rows)} | {'wall' if e.fig.exclusive else 'CPU'} s | {est:,.0f}{mark} | "
                  f"{used:,.0f} | {ratio:.2f} |")
    print(f"\nIn all: manifest {total_est / 60:,.0f} core-min, measured {total_used / 60:,.0f} core-min "
          f"({total_used / total_est if total_est else math.inf:.2f}×); {sum(map(len, changes.values()))} entries off by more "
          f"than {a.factor}× (of {a.floor:g} s or more)")
    if a.write:
        for paper, items in changes.items():
            path = a.manifests / f"{paper}.toml"
            text = path.read_text()
            for fig_id, value in items:
                text = rewrite(text, fig_id, a.tier, value)
            path.write_text(text)
            print(f"wrote {path}: " + ", ".join(f"{i} {v:,}" for i, v in items))


if __name__ == "__main__":
    main()
