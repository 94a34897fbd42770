"""The oracle's RSI runs on arrays (the judge computes it for every reading, argument set and world):
each value must be the one the plain Series formulation gives, bit for bit, NaN and all."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest

from runner.judging.oracle import _sma_seeded, rsi_series


def _series_rsi(closes: pd.Series, window: int, method: str, warmup: str) -> pd.Series:
    """RSI written Series by Series, the way the formulas read."""
    change = closes.astype(float).diff().iloc[1:]
    gains, losses = change.clip(lower=0.0), (-change).clip(lower=0.0)
    if method == "wilder":
        first = window if warmup == "skip" else 1
        avg_gain = gains.ewm(alpha=1.0 / window, adjust=False, min_periods=first).mean()
        avg_loss = losses.ewm(alpha=1.0 / window, adjust=False, min_periods=first).mean()
    elif method == "wilder_sma":
        avg_gain, avg_loss = _sma_seeded(gains, window), _sma_seeded(losses, window)
    else:
        avg_gain, avg_loss = gains.rolling(window).mean(), losses.rolling(window).mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        rsi = 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
    return rsi.where(avg_loss != 0, 100.0).where(avg_gain.notna() & avg_loss.notna()).reindex(closes.index)


def _closes(kind: str, n: int, rng: np.random.Generator) -> pd.Series:
    walk = 100 + np.cumsum(rng.normal(0, 1, n))
    if kind == "cents":
        walk = np.round(walk, 2)
    elif kind == "gaps":
        walk[rng.random(n) < 0.3] = np.nan
    elif kind == "flat":
        walk = np.full(n, 50.0)
        walk[rng.random(n) < 0.2] += 1
    elif kind == "gains only":
        walk = 10 + np.cumsum(np.abs(rng.normal(0, 1, n)))
    elif kind == "losses then flat":
        walk = 1000 - np.cumsum(np.abs(rng.normal(0, 1, n)))
        cut = max(1, n // 3)
        if n > cut:
            walk[-cut:] = walk[-cut - 1]
    return pd.Series(walk, index=pd.date_range("2021-01-04", periods=n, freq="B"), name="Close")


@pytest.mark.parametrize("kind", ["walk", "cents", "gaps", "flat", "gains only", "losses then flat"])
@pytest.mark.parametrize("method", ["wilder", "wilder_sma", "simple"])
@pytest.mark.parametrize("warmup", ["skip", "keep"])
def test_rsi_gives_the_series_formulations_values_bit_for_bit(kind: str, method: str, warmup: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{kind} {method} {warmup}".encode()))
    for n in (1, 2, 3, 15, 16, 40, 260):
        closes = _closes(kind, n, rng)
        for window in (1, 2, 14, 30):
            got, want = rsi_series(closes, window, method, warmup), _series_rsi(closes, window, method, warmup)
            assert got.index.equals(want.index)
            a, b = got.to_numpy(), want.to_numpy()
            assert ((np.isnan(a) & np.isnan(b)) | (a == b)).all(), (n, window)
            assert (np.signbit(a) == np.signbit(b)).all(), (n, window)


def test_an_unknown_method_or_warm_up_is_refused() -> None:
    closes = _closes("walk", 30, np.random.default_rng(1))
    with pytest.raises(ValueError, match="RSI method"):
        rsi_series(closes, 14, "cutler")
    with pytest.raises(ValueError, match="warm-up"):
        rsi_series(closes, 14, "wilder", "drop")
