"""Do two seeds tell the same story? For one manifest entry's runs: whether each paper number
gets the same verdict on every seed, and how far apart the seeds' plotted values are (so entries
whose paper gives no number still show that their magnitudes are stable).

A plotted value is one panel's y at one (parameters, series, x) of the figure; two seeds' values
differ by |a − b| / max(|a|, |b|, 5 % of the panel's largest value) (the floor keeps a 0-vs-1
count on a panel of thousands from reading as 100 %). Seeds *differ* when a verdict differs or
a plotted value differs by more than ``SPREAD_LIMIT`` (the default ±30 % tolerance: beyond it a
verdict could flip with the seed). Time series (``timeline`` tables) are not compared point by
point: their instants are noise by design.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from innet.reproduce.numbers import DEFAULT_TOLERANCE, finite

SPREAD_LIMIT = DEFAULT_TOLERANCE
FLOOR = 0.05
NOT_COMPARED_TABLES = ("timeline",)


@dataclass(frozen=True)
class Spread:
    """Seed-to-seed differences of an entry's plotted values."""

    pairs: int
    median: float
    largest: float
    where: str  # the plotted value with the largest difference

    @property
    def agree(self) -> bool:
        return self.largest <= SPREAD_LIMIT


def seed_of(row: dict[str, Any]) -> str:
    return str(row.get("param.seed", row.get("m.seed", "default")))


def _params(row: dict[str, Any]) -> str:
    return ",".join(f"{k[6:]}={v}" for k, v in sorted(row.items()) if k.startswith("param.") and k != "param.seed")


def plotted_values(spec: dict[str, Any], rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """{(panel y, where): {seed: value}} for every value the entry's figure plots. A table row is
    matched across seeds by its position within its series (the x of a line can itself be a
    measurement, e.g. throughput, that differs between seeds); ``where`` names the first seed's x."""
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    label: dict[tuple[str, str], str] = {}

    def add(y: str, key: str, where: str, seed: str, v: Any) -> None:
        f = finite(v)
        if f is not None:
            out.setdefault((y, key), {}).setdefault(seed, []).append(f)
            label.setdefault((y, key), where)

    table = spec.get("table", "points")
    series, x = spec.get("series"), spec.get("x")
    for r in rows:
        seed, params = seed_of(r), _params(r)
        for p in spec.get("panels", []):
            y = p["y"]
            if table == "summary":
                cats = [None] if spec.get("x_param") else spec.get("x", [])
                for cat in cats:
                    key = y if cat is None else y.format(x=cat)
                    where = f"{params} {cat or ''}".strip()
                    add(y, where, where, seed, r.get(f"m.{key}"))
                continue
            filt = {**spec.get("filter", {}), **p.get("filter", {})}
            seen: dict[str, int] = {}
            for rec in (r.get("tables") or {}).get(table, []):
                if any(str(rec.get(c)) != str(w) for c, w in filt.items()):
                    continue
                line = f"{series}={rec.get(series)}" if series else ""
                n = seen[line] = seen.get(line, -1) + 1
                at = ",".join(s for s in (line, f"{x}={rec.get(x)}" if x else "") if s)
                add(y, f"{params} {line} #{n}", f"{params} {at}".strip(), seed, rec.get(y))
    result: dict[tuple[str, str], dict[str, float]] = {}
    for (y, k), by in out.items():
        name = label[(y, k)] if (y, label[(y, k)]) not in result else f"{label[(y, k)]} ({k})"
        result[(y, name)] = {s: sum(v) / len(v) for s, v in by.items()}
    return result


def spread(spec: dict[str, Any], rows: list[dict[str, Any]]) -> Spread | None:
    """The seeds' differences over the plotted values, or None (one seed, a time series, or
    nothing plotted on two seeds)."""
    if not spec or spec.get("table") in NOT_COMPARED_TABLES or len({seed_of(r) for r in rows}) < 2:
        return None
    values = plotted_values(spec, rows)
    top: dict[str, float] = {}
    for (y, _), by in values.items():
        top[y] = max([top.get(y, 0.0), *(abs(v) for v in by.values())])
    diffs = []
    for (y, where), by in values.items():
        if len(by) < 2:
            continue
        lo, hi = min(by.values()), max(by.values())
        den = max(abs(lo), abs(hi), FLOOR * top[y])
        diffs.append((0.0 if den == 0 else (hi - lo) / den, f"{y} at {where}" if where else y))
    if not diffs:
        return None
    worst = max(diffs)
    return Spread(len(diffs), statistics.median(d for d, _ in diffs), worst[0], worst[1])
