"""The statistics of repeated trials: pure functions, no state, no I/O.

* :func:`wilson` -- the Wilson score interval of a pass rate (95% by default). Unlike the normal
  ("Wald") interval it stays inside [0, 1] and is not degenerate at 0 or n successes, which is
  exactly where a gate's tasks live (always pass / never pass).
* :func:`pass_at_k` -- the unbiased estimate that at least one of k trials passes, from n trials
  with c passes: ``1 - C(n-c, k) / C(n, k)``.
* :func:`pass_hat_k` -- pass^k, the estimate that all k trials pass: ``C(c, k) / C(n, k)``.
* :func:`fisher_lower_p` -- the one-sided p-value of Fisher's exact test that the current pass rate is
  lower than the baseline's (2x2 table [passes_now, fails_now; passes_base, fails_base]). Exact, so it
  holds for the small counts a gate sees (1 to 20 trials), where a z-test's normal approximation does not.
* :func:`median`, :func:`percentile` -- latency summaries (linear interpolation between ranks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054


def _check(n: int, c: int) -> None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= passes <= trials, got passes={c}, trials={n}")


def wilson(c: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``c`` passes in ``n`` trials; ``(0.0, 1.0)`` for no trial."""
    _check(n, c)
    if n == 0:
        return 0.0, 1.0
    p = c / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    # Exactly 0 / n passes: the bound on that side is exact (floating error would leave 1e-17).
    return (0.0 if c == 0 else low), (1.0 if c == n else high)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` trials with ``c`` passes (needs ``1 <= k <= n``)."""
    _check(n, c)
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= trials, got k={k}, trials={n}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k (all k trials pass) from ``n`` trials with ``c`` passes (needs ``1 <= k <= n``)."""
    _check(n, c)
    if not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= trials, got k={k}, trials={n}")
    return math.comb(c, k) / math.comb(n, k)


def fisher_lower_p(passes_now: int, trials_now: int, passes_base: int, trials_base: int) -> float:
    """One-sided Fisher exact p-value for "the pass rate now is lower than the baseline's".

    Given the margins of the 2x2 table, the passes now follow a hypergeometric law; the p-value is
    the probability of ``passes_now`` or fewer. 1.0 when either side has no trial (no evidence).
    """
    _check(trials_now, passes_now)
    _check(trials_base, passes_base)
    if trials_now == 0 or trials_base == 0:
        return 1.0
    total, passes = trials_now + trials_base, passes_now + passes_base
    denom = math.comb(total, trials_now)
    low = max(0, trials_now - (total - passes))
    tail = sum(math.comb(passes, x) * math.comb(total - passes, trials_now - x)
               for x in range(low, passes_now + 1))
    return min(1.0, tail / denom)


def fisher_higher_p(passes_now: int, trials_now: int, passes_base: int, trials_base: int) -> float:
    """One-sided Fisher exact p-value for "the pass rate now is higher than the baseline's"."""
    return fisher_lower_p(trials_now - passes_now, trials_now, trials_base - passes_base, trials_base)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile needs 0 <= q <= 100, got {q}")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)
