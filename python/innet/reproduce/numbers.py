"""A paper number as a manifest states it (python/innet/papers/*.toml, ``paper = [...]``): its
fields checked when the manifest is read (``check_spec``), the value its comparison is made against
(``reference``) and the values its metric can take (``metric_range``). The rules that judge our
number against it are innet.report.verdict's; its docstring says what each field means."""

from __future__ import annotations

import math
from typing import Any

INF = float("inf")
# The values a metric can take, by the last part of its name (a manifest's ``metric_ranges``
# adds to these): a reference at or beyond an end cannot be crossed.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "hit_rate": (0.0, 1.0), "hit_ratio": (0.0, 1.0), "goodput_fraction": (0.0, 1.0),
    "gateway_packets_fraction": (0.0, 1.0), "overflow_ratio": (0.0, 1.0), "cache_used": (0.0, 1.0),
}
_NON_NEGATIVE_SUFFIXES = ("_us", "_ms", "_rps", "_pps", "_gbps", "bytes", "packets", "entries", "misses", "hits",
                          "_improvement", "_count", "capacity", "coverage", "_share", "_fraction", "_ratio", "_rate")
DEFAULT_TOLERANCE = 0.3
BOUNDS = ("above", "below")


def finite(v: Any) -> float | None:
    """``v`` as a finite float, or None (text, None, NaN, infinities)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def metric_range(metric: str, ranges: dict[str, tuple[float, float]] | None = None) -> tuple[float, float]:
    """The values ``metric`` can take: by the last part of its name (``ranges``, the manifest's
    ``metric_ranges``, first; then METRIC_RANGES; then non-negative name endings); ``A / B`` of
    two non-negative metrics is non-negative, ``A + B`` and ``A - B`` combine their ranges."""
    if " - " in metric:
        a, b = metric.split(" - ", 1)
        (alo, ahi), (blo, bhi) = metric_range(a.strip(), ranges), metric_range(b.strip(), ranges)
        return alo - bhi, ahi - blo
    if " / " in metric:
        a, b = metric.split(" / ", 1)
        (alo, _), (blo, _) = metric_range(a.strip(), ranges), metric_range(b.strip(), ranges)
        return (0.0, INF) if alo >= 0 and blo >= 0 else (-INF, INF)
    if " + " in metric:
        parts = [metric_range(m.strip(), ranges) for m in metric.split(" + ")]
        return sum(lo for lo, _ in parts), sum(hi for _, hi in parts)
    leaf = metric.rsplit(".", 1)[-1]
    for table in (ranges or {}, METRIC_RANGES):
        for key, (lo, hi) in table.items():  # a key is the metric's last part, or its dotted tail
            if key == leaf or metric.endswith("." + key) or metric == key:
                return float(lo), float(hi)
    return (0.0, INF) if leaf.endswith(_NON_NEGATIVE_SUFFIXES) else (-INF, INF)


def reference(number: dict[str, Any]) -> float | None:
    """The value a number's comparison is made against: a bound's value, or ``direction_ref``."""
    if "bound" in number:
        return finite(number["value"])
    return finite(number.get("direction_ref"))


# Where the authors' own artifacts were run beside ours on the same inputs; a paper number's
# `artifact` note must point there.
ARTIFACT_PAGE = "docs/results/artifacts.md"


def check_spec(number: dict[str, Any], where: str, ranges: dict[str, tuple[float, float]] | None = None) -> None:
    """Raise ValueError naming ``where`` if a paper number's tolerance fields are malformed, or if
    its comparison cannot fail (a reference at or beyond an end of the metric's range)."""
    for key in ("label", "metric", "value"):
        if key not in number:
            raise ValueError(f"{where}: paper number needs '{key}'")
    if finite(number["value"]) is None:
        raise ValueError(f"{where}: value must be a number, got {number['value']!r}")
    if "configured" in number and number["configured"] is not True:
        raise ValueError(f"{where}: configured must be true (or left out), got {number['configured']!r}")
    if "measured" in number and (not isinstance(number["measured"], str) or len(number["measured"]) < 20):
        raise ValueError(f"{where}: measured must say (in a sentence) why a number equal to a parameter value is measured")
    if "artifact" in number and (not isinstance(number["artifact"], str) or ARTIFACT_PAGE not in number["artifact"]):
        raise ValueError(f"{where}: artifact must say (in words) what the authors' artifact gives on the same input, "
                         f"citing {ARTIFACT_PAGE} where it was measured")
    if "resolution" in number and (finite(number["resolution"]) is None or float(number["resolution"]) < 0):
        raise ValueError(f"{where}: resolution must be a non-negative number")
    ref = reference(number)
    if ref is not None and not number.get("configured"):
        lo, hi = metric_range(str(number["metric"]), ranges)
        if not lo < ref < hi:
            what = f"bound {ref:g}" if "bound" in number else f"direction_ref {ref:g}"
            raise ValueError(f"{where}: {what} is not inside the range [{lo:g}, {hi:g}] of {number['metric']!r}: a comparison "
                             "against it cannot fail; compare against what the paper compares with, or judge the value "
                             "(a wrong range: set metric_ranges in the manifest)")
    if "bound" in number:
        if number["bound"] not in BOUNDS:
            raise ValueError(f"{where}: bound must be \"above\" or \"below\", got {number['bound']!r}")
        extra = [k for k in ("tolerance", "abs_tolerance", "direction_ref") if k in number]
        if extra:
            raise ValueError(f"{where}: a bound is judged by its side of value alone; remove {', '.join(extra)}")
        return
    tol = number.get("tolerance", DEFAULT_TOLERANCE)
    if tol != "direction" and (finite(tol) is None or float(tol) < 0):
        raise ValueError(f"{where}: tolerance must be a non-negative fraction or \"direction\", got {tol!r}")
    if "abs_tolerance" in number and (finite(number["abs_tolerance"]) is None or float(number["abs_tolerance"]) < 0):
        raise ValueError(f"{where}: abs_tolerance must be a non-negative number")
    if tol == "direction" and "direction_ref" not in number:
        raise ValueError(f"{where}: a \"direction\" tolerance needs direction_ref (the value that separates the two directions)")
    if "direction_ref" in number and finite(number["direction_ref"]) is None:
        raise ValueError(f"{where}: direction_ref must be a number")
    if "interval" in number and (tol != "direction" or not isinstance(number["interval"], str)):
        raise ValueError(f"{where}: interval names the metric of our [low, high] interval and needs tolerance = \"direction\"")
