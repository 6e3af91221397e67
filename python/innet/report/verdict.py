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

Since issue 33 (a scoreboard that cannot flatter):

- ``configured = true``: the number is one we set rather than measure (a parameter of the run or
  a constant of our code, e.g. SwitchVM's 12 stages = 4 + 2 × EUs, Megaflow's coverage = its
  32,000 entries). Its verdict is "configured": shown beside the paper's, never counted as a
  match. The manifest loader (innet.reproduce) rejects a judged number whose metric is one of
  our constants, or whose value equals a parameter value of the run, unless it is marked
  ``configured`` (or says in ``measured`` why it is measured all the same).
- A comparison against a reference (``direction_ref``, or a ``bound``'s value) holds only by
  more than its resolution: the larger of the seeds' spread (max − min of the per-seed values),
  1 % of the reference and the number's ``resolution``. Within it the verdict is "not resolved"
  (a "> 1" of 1.0004 is a tie, not "outperforms"). The 95 % interval case above is "not
  resolved" too.
- With ``direction_ref`` (other than 0) and a relative tolerance, a match needs the effect, the
  distance from the reference, within the tolerance too: ours − ref within ±30 % of paper − ref
  as well as ours within ±30 % of the paper (a GF/MF ratio of 0.96 against the paper's 0.75 is a
  4 % cut against a 25 % cut: not a match, though within ±30 % of 0.75). Only ever stricter.
- The reference must be a value the metric can cross: the loader rejects a ``direction_ref`` or
  a ``bound`` at or outside the metric's range (a non-negative overhead "above 0" cannot fail);
  ranges come from the metric's name (innet.reproduce.numbers' ``METRIC_RANGES``) or the manifest's
  ``metric_ranges``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from innet.reproduce.numbers import DEFAULT_TOLERANCE, finite, reference

MATCH = "match"
DIRECTION = "direction only"
MISMATCH = "mismatch"
CONFIGURED = "configured"
NOT_RESOLVED = "not resolved"
NOT_COMPARABLE = "not comparable"
# Scoreboard columns, and (by index) how bad a verdict is: the worst seed's verdict is shown.
ORDER = (MATCH, DIRECTION, CONFIGURED, MISMATCH, NOT_RESOLVED, NOT_COMPARABLE)
RESOLUTION = 0.01  # a comparison must hold by more than 1 % of its reference (or the seeds' spread)


@dataclass(frozen=True)
class Judgement:
    verdict: str
    why: str


def _side(v: float, ref: float) -> int:
    return (v > ref) - (v < ref)


def margin(number: dict[str, Any], spread: float = 0.0) -> float:
    """How far from its reference a value must be for the comparison to hold: the seeds' spread,
    1 % of the reference, or the number's ``resolution``, whichever is largest."""
    ref = reference(number) or 0.0
    return max(spread, RESOLUTION * abs(ref), float(number.get("resolution", 0.0)))


def judge(number: dict[str, Any], ours: Any, comparable: bool = True,
          interval: tuple[float, float] | None = None, spread: float = 0.0) -> Judgement:
    """The verdict for ``ours`` against the paper ``number`` (a manifest ``paper`` entry);
    ``interval``: our 95 % interval of it, for a number that declares ``interval``; ``spread``:
    max − min of the number over the seeds (a comparison must hold by more)."""
    if not comparable:
        return Judgement(NOT_COMPARABLE, "smoke run: not comparable with the paper")
    o = finite(ours)
    if o is None:
        return Judgement(NOT_COMPARABLE, f"our run has no value for {number['metric']}")
    paper = float(number["value"])
    if number.get("configured"):
        same = "the same" if o == paper else f"{o:g} against the paper's {paper:g}"
        return Judgement(CONFIGURED, f"we set this number rather than measure it ({same}): shown, not counted as a match")
    m = margin(number, spread)
    if "bound" in number:
        if abs(o - paper) <= m:
            return Judgement(NOT_RESOLVED, f"{o:.4g} is within {m:.3g} of the bound {paper:g} (the larger of the seeds' spread "
                             f"and {RESOLUTION:.0%}): the comparison is not resolved")
        if number["bound"] == "above":
            if o > paper:
                return Judgement(MATCH, f"the paper states only that it is above {paper:g}; ours is, by more than {m:.3g}")
            return Judgement(MISMATCH, f"the paper states that it is above {paper:g}; ours is not")
        if o <= paper:
            return Judgement(MATCH, f"the paper states only that it is at most {paper:g}; ours is, by more than {m:.3g}")
        return Judgement(MISMATCH, f"the paper states that it is at most {paper:g}; ours is above")
    tol = number.get("tolerance", DEFAULT_TOLERANCE)
    ref = finite(number.get("direction_ref"))
    unresolved = ref is not None and abs(o - ref) <= m
    same_side = ref is not None and not unresolved and _side(o, ref) == _side(paper, ref)
    if tol == "direction":
        if interval is not None and ref is not None and interval[0] <= ref <= interval[1]:
            return Judgement(NOT_RESOLVED, f"our 95 % interval [{interval[0]:.3g}, {interval[1]:.3g}] contains "
                             f"{ref:g}: the direction is not resolved")
        if unresolved:
            return Judgement(NOT_RESOLVED, f"{o:.4g} is within {m:.3g} of {ref:g}: the direction is not resolved")
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
        # With a reference, the effect (distance from it) must be within the tolerance too: a
        # GF/MF ratio of 0.96 is within ±30 % of the paper's 0.75, but a 4 % cut is not a 25 % one.
        effect = None if ref is None or ref == 0 else paper - ref
        value_ok = abs(o - paper) <= t * abs(paper)
        effect_ok = effect is None or (effect != 0 and abs(o - paper) <= t * abs(effect))
        if value_ok and effect_ok:
            return Judgement(MATCH, f"within ±{t:.0%} of the paper" + ("" if effect is None else
                             f", and its effect {o - ref:+.3g} (from {ref:g}) within ±{t:.0%} of the paper's {effect:+.3g}"))
        within = (f"outside ±{t:.0%}" if not value_ok else
                  f"within ±{t:.0%} of the value, but its effect {o - ref:+.3g} (from {ref:g}) is outside ±{t:.0%} of the paper's {effect:+.3g}")
    if unresolved:
        return Judgement(NOT_RESOLVED, f"{within}; within {m:.3g} of {ref:g}: the direction is not resolved")
    if same_side:
        return Judgement(DIRECTION, f"{within}, same side of {ref:g} as the paper")
    if ref is not None:
        return Judgement(MISMATCH, f"{within} and on the other side of {ref:g}")
    return Judgement(MISMATCH, within)


def scoreboard(verdicts: list[str]) -> dict[str, int]:
    """Counts of each verdict, in the fixed order (zeros included)."""
    return {v: verdicts.count(v) for v in ORDER}
