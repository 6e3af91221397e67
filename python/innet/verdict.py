"""Judging one of our numbers against one of a paper's: match, direction only, mismatch or not
comparable, under the tolerance the manifest declares for it. Nothing else calls a result good.

- ``tolerance = 0.3`` (the default for simulated metrics): match when within ±30 % of the paper.
- ``abs_tolerance = x``: match when within ±x (for paper values at or near zero).
- ``tolerance = "direction"`` (testbed numbers whose hardware we do not model): the best verdict
  is "direction only", given when ours lies on the same side of ``direction_ref`` as the paper's.
- Outside the tolerance, a number on the paper's side of ``direction_ref`` is "direction only";
  on the other side it is a mismatch. Without a reference (e.g. a threshold the paper names)
  there is no direction to agree on, so it is a mismatch.
- ``bound = "above"`` / ``"below"`` (the paper states only that the metric exceeds / stays within
  ``value``, e.g. "outperforms Pegasus for all distributions" is a ratio above 1, "within 200 us"
  a time at most 200): match when ours satisfies the bound, mismatch otherwise. The paper gives no
  magnitude beyond the bound, so satisfying it is all there is to reproduce.
- ``interval = "metric"`` (with ``tolerance = "direction"``): the metric holding our 95 %
  confidence interval ``[low, high]`` of the number (e.g. the median over rounds of a timing
  difference on real packets). When it contains ``direction_ref`` our measurement does not tell
  the direction, so the number is "not comparable" rather than a direction or a mismatch: a
  direction is called only when the interval excludes the reference.
- A smoke run, or a metric our run did not produce, is "not comparable".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MATCH = "match"
DIRECTION = "direction only"
MISMATCH = "mismatch"
NOT_COMPARABLE = "not comparable"
ORDER = (MATCH, DIRECTION, MISMATCH, NOT_COMPARABLE)
DEFAULT_TOLERANCE = 0.3
BOUNDS = ("above", "below")


@dataclass(frozen=True)
class Judgement:
    verdict: str
    why: str


def finite(v: Any) -> float | None:
    """``v`` as a finite float, or None (text, None, NaN, infinities)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def check_spec(number: dict[str, Any], where: str) -> None:
    """Raise ValueError naming ``where`` if a paper number's tolerance fields are malformed."""
    for key in ("label", "metric", "value"):
        if key not in number:
            raise ValueError(f"{where}: paper number needs '{key}'")
    if finite(number["value"]) is None:
        raise ValueError(f"{where}: value must be a number, got {number['value']!r}")
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


def _side(v: float, ref: float) -> int:
    return (v > ref) - (v < ref)


def judge(number: dict[str, Any], ours: Any, comparable: bool = True,
          interval: tuple[float, float] | None = None) -> Judgement:
    """The verdict for ``ours`` against the paper ``number`` (a manifest ``paper`` entry);
    ``interval``: our 95 % interval of it, for a number that declares ``interval``."""
    if not comparable:
        return Judgement(NOT_COMPARABLE, "smoke run: not comparable with the paper")
    o = finite(ours)
    if o is None:
        return Judgement(NOT_COMPARABLE, f"our run has no value for {number['metric']}")
    paper = float(number["value"])
    if number.get("bound") == "above":
        if o > paper:
            return Judgement(MATCH, f"the paper states only that it is above {paper:g}; ours is")
        return Judgement(MISMATCH, f"the paper states that it is above {paper:g}; ours is not")
    if number.get("bound") == "below":
        if o <= paper:
            return Judgement(MATCH, f"the paper states only that it is at most {paper:g}; ours is")
        return Judgement(MISMATCH, f"the paper states that it is at most {paper:g}; ours is above")
    tol = number.get("tolerance", DEFAULT_TOLERANCE)
    ref = finite(number.get("direction_ref"))
    same_side = ref is not None and _side(o, ref) == _side(paper, ref)
    if tol == "direction":
        if interval is not None and ref is not None and interval[0] <= ref <= interval[1]:
            return Judgement(NOT_COMPARABLE, f"our 95 % interval [{interval[0]:.3g}, {interval[1]:.3g}] contains "
                             f"{ref:g}: the direction is not resolved")
        if same_side:
            return Judgement(DIRECTION, f"same side of {ref:g} as the paper (testbed number: direction is what we claim)")
        return Judgement(MISMATCH, f"opposite side of {ref:g} from the paper")
    if "abs_tolerance" in number:
        bound = float(number["abs_tolerance"])
        if abs(o - paper) <= bound:
            return Judgement(MATCH, f"within ±{bound:g} of the paper")
        within = f"outside ±{bound:g}"
    else:
        t = float(tol)
        if paper == 0:
            return Judgement(MATCH if o == 0 else MISMATCH, "paper value is 0: only 0 matches (set abs_tolerance)")
        if abs(o - paper) <= t * abs(paper):
            return Judgement(MATCH, f"within ±{t:.0%} of the paper")
        within = f"outside ±{t:.0%}"
    if same_side:
        return Judgement(DIRECTION, f"{within}, same side of {ref:g} as the paper")
    if ref is not None:
        return Judgement(MISMATCH, f"{within} and on the other side of {ref:g}")
    return Judgement(MISMATCH, within)


def scoreboard(verdicts: list[str]) -> dict[str, int]:
    """Counts of each verdict, in the fixed order (zeros included)."""
    return {v: verdicts.count(v) for v in ORDER}
