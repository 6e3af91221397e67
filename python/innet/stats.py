"""Small statistics shared by experiments and bench scripts: the median with a distribution-free
confidence interval (the order statistics whose binomial(n, 1/2) coverage reaches the level), the
interval every timing direction in this project is called by."""

from __future__ import annotations

import math


def median_ci(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high) of `xs`. The interval is [x_(j), x_(n-1-j)] (0-based) for the largest j
    whose coverage sum_{k=j+1}^{n-j-1} C(n,k) / 2^n is at least `level`; with too few values for
    that (n < 6 at 95 %) it is the whole range, min..max."""
    if not xs:
        raise ValueError("median_ci of no values")
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    for j in range(n // 2, -1, -1):
        # P(x_(j) <= median <= x_(n-1-j)) = P(j+1 <= K <= n-1-j), K ~ binomial(n, 1/2) values below it
        if sum(math.comb(n, k) for k in range(j + 1, n - j)) / 2**n >= level:
            return med, s[j], s[n - 1 - j]
    return med, s[0], s[-1]
