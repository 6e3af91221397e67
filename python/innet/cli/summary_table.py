"""A run's summary as terminal tables: scalar facts as metric/value rows, and every group of
like-shaped records (``schemes``, ``modes``, ``pipelines``... — a dict whose values are dicts)
as one table with a row per record and a column per headline metric, instead of a JSON object
squeezed into one cell. Nested groups (``pipelines.PSC.high.mf``) become rows named by path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MAX_COLUMNS = 8


def _scalar(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool)) or v is None


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.4g}"
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _records(d: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Mapping[str, Any]]]:
    """(row name, record) for every record: the first dict on each path that holds a scalar
    (dicts nested inside a record, e.g. drop counters, stay out of the row)."""
    out = []
    for k, v in d.items():
        if not isinstance(v, Mapping):
            continue
        name = f"{prefix}{k}"
        if any(_scalar(x) for x in v.values()):
            out.append((name, v))
        else:
            out += _records(v, name + ".")
    return out


def _is_group(v: Any) -> bool:
    """A dict of two or more dicts (records to compare side by side)."""
    return isinstance(v, Mapping) and len(v) >= 2 and all(isinstance(x, Mapping) for x in v.values())


def headline_columns(records: list[tuple[str, Mapping[str, Any]]], limit: int = MAX_COLUMNS) -> list[str]:
    """Scalar keys present in most records, numeric first, in first-seen order, at most ``limit``."""
    seen: dict[str, int] = {}
    numeric: dict[str, bool] = {}
    for _, r in records:
        for k, v in r.items():
            if _scalar(v):
                seen[k] = seen.get(k, 0) + 1
                numeric[k] = numeric.get(k, True) and isinstance(v, (int, float)) and not isinstance(v, bool)
    common = [k for k, n in seen.items() if n * 2 >= len(records)]
    return ([k for k in common if numeric[k]] + [k for k in common if not numeric[k]])[:limit]


def tables(summary: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) for the summary: first the scalars (and lists, as JSON), then one
    table per group of records."""
    facts = [[k, _fmt(v) if _scalar(v) else json.dumps(v)] for k, v in summary.items() if not isinstance(v, Mapping)]
    out = [("summary", ["metric", "value"], facts)] if facts else []
    for k, v in summary.items():
        if not isinstance(v, Mapping):
            continue
        if _is_group(v):
            recs = _records(v)
            cols = headline_columns(recs)
            if recs and cols:
                out.append((k, [k.rstrip("s") if k.endswith("s") else k, *cols],
                            [[name, *[_fmt(r.get(c)) if c in r else "—" for c in cols]] for name, r in recs]))
                continue
        flat = [[f"{k}.{path}", _fmt(x)] for path, x in _flatten(v)]
        out.append((k, ["metric", "value"], flat))
    return out


def _flatten(d: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, Mapping):
            out += _flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v if _scalar(v) else json.dumps(v)))
    return out


def render(summary: Mapping[str, Any], title: str, console: Any) -> None:
    """Print the tables on a rich console."""
    from rich.table import Table

    for name, header, rows in tables(summary):
        t = Table(title=title if name == "summary" else f"{title}: {name}")
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i == 0 else "right")
        for r in rows:
            t.add_row(*r)
        console.print(t)
