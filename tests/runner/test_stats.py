"""The statistics module against values computed by hand or published tables."""

from __future__ import annotations

import math

import pytest

from runner.verdict import stats


def test_wilson_known_values() -> None:
    # 7 of 10 at 95%: the textbook interval (0.3968, 0.8922).
    low, high = stats.wilson(7, 10)
    assert low == pytest.approx(0.39677, abs=1e-4)
    assert high == pytest.approx(0.89218, abs=1e-4)
    # 0 of 5 and 5 of 5: exact ends, the other end 0.4345 / 0.5655.
    assert stats.wilson(0, 5) == (0.0, pytest.approx(0.43448, abs=1e-4))
    assert stats.wilson(5, 5) == (pytest.approx(0.56552, abs=1e-4), 1.0)
    assert stats.wilson(0, 0) == (0.0, 1.0)


def test_wilson_is_symmetric_and_narrows_with_trials() -> None:
    lo, hi = stats.wilson(3, 10)
    lo2, hi2 = stats.wilson(7, 10)
    assert lo == pytest.approx(1 - hi2) and hi == pytest.approx(1 - lo2)
    assert (stats.wilson(70, 100)[1] - stats.wilson(70, 100)[0]) < (hi2 - lo2)


def test_pass_at_k_and_pass_hat_k() -> None:
    assert stats.pass_at_k(10, 7, 1) == pytest.approx(0.7)
    assert stats.pass_hat_k(10, 7, 1) == pytest.approx(0.7)
    # 1 - C(3,2)/C(10,2) = 1 - 3/45; C(7,2)/C(10,2) = 21/45
    assert stats.pass_at_k(10, 7, 2) == pytest.approx(1 - 3 / 45)
    assert stats.pass_hat_k(10, 7, 2) == pytest.approx(21 / 45)
    assert stats.pass_at_k(5, 0, 5) == 0.0 and stats.pass_hat_k(5, 5, 5) == 1.0
    assert stats.pass_at_k(5, 1, 5) == 1.0 and stats.pass_hat_k(5, 4, 5) == 0.0


@pytest.mark.parametrize("call", [lambda: stats.pass_at_k(5, 6, 1), lambda: stats.pass_at_k(5, 2, 6),
                                  lambda: stats.pass_hat_k(5, 2, 0), lambda: stats.wilson(-1, 3)])
def test_bad_counts_are_refused(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


def test_fisher_one_sided_known_values() -> None:
    # 3/5 now vs 7/10 before: P(X <= 3) with X ~ Hypergeom(15, 10, 5) = 1701/3003.
    assert stats.fisher_lower_p(3, 5, 7, 10) == pytest.approx(1701 / 3003)
    # 0/10 now vs 7/10 before: C(13,10)/C(20,10) = 286/184756.
    assert stats.fisher_lower_p(0, 10, 7, 10) == pytest.approx(286 / 184756)
    # Tea tasting (3/4 vs 1/4): one-sided "higher" p = 17/70; "lower" for the reverse.
    assert stats.fisher_higher_p(3, 4, 1, 4) == pytest.approx(17 / 70)
    assert stats.fisher_lower_p(1, 4, 3, 4) == pytest.approx(17 / 70)
    # One failing trial against one passing baseline trial is p = 1/2: no evidence either way.
    assert stats.fisher_lower_p(0, 1, 1, 1) == pytest.approx(0.5)
    assert stats.fisher_lower_p(5, 5, 0, 5) == 1.0
    assert stats.fisher_lower_p(0, 0, 3, 3) == 1.0


def test_fisher_tail_sums_to_one_over_all_outcomes() -> None:
    # P(X <= c) is a CDF: non-decreasing in c and 1.0 at the largest possible c.
    values = [stats.fisher_lower_p(c, 6, 5, 8) for c in range(7)]
    assert values == sorted(values)
    assert values[-1] == pytest.approx(1.0)
    total = sum(math.comb(11, x) * math.comb(3, 6 - x) for x in range(3, 7))
    assert total == math.comb(14, 6)


def test_percentiles() -> None:
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert stats.percentile([float(i) for i in range(1, 11)], 90) == pytest.approx(9.1)
    assert stats.percentile([5.0], 90) == 5.0
    with pytest.raises(ValueError):
        stats.percentile([], 50)
