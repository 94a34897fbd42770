"""Pairs spread: the hedge ratio of one symbol on another (least squares on log prices) and the
z-score of today's spread, the usual entry signal of a pairs trade.

A small cache keeps each symbol's closes, a closure factory builds the z-scorer, and a frozen
dataclass carries the result before it is turned into a plain dict.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import yfinance as yf


@dataclass(frozen=True)
class SpreadSignal:
    hedge_ratio: float
    zscore: float
    half_window_mean: float


@functools.lru_cache(maxsize=8)
def _log_closes(symbol: str, period: str) -> pd.Series:
    closes = yf.Ticker(symbol).history(period=period)["Close"].dropna()
    if closes.empty:
        raise ValueError(f"{symbol}: no closes")
    return np.log(closes)


def _zscorer(window: int):
    def score(series: pd.Series, *, ddof: int = 1) -> float:
        tail = series.iloc[-window:]
        spread = float(tail.std(ddof=ddof))
        if spread == 0.0:
            raise ValueError("the spread is constant")
        return float((tail.iloc[-1] - tail.mean()) / spread)
    return score


def pairs_spread(symbol_a: str, symbol_b: str, window: int = 60, period: str = "1y") -> dict[str, float]:
    """Hedge ratio of ``symbol_a`` on ``symbol_b`` and the z-score of the latest spread."""
    a, b = _log_closes(symbol_a, period), _log_closes(symbol_b, period)
    joined = pd.concat({"a": a, "b": b}, axis=1, join="inner").dropna()
    if len(joined) < window:
        raise ValueError(f"need {window} common days, have {len(joined)}")
    slope, intercept = np.polyfit(joined["b"].to_numpy(), joined["a"].to_numpy(), deg=1)
    spread = joined["a"] - (slope * joined["b"] + intercept)
    halves = [spread.iloc[i:i + window // 2].mean() for i in range(len(spread) - window, len(spread), window // 2)]
    signal = SpreadSignal(hedge_ratio=float(slope), zscore=_zscorer(window)(spread),
                          half_window_mean=float(sum(halves) / len(halves)))
    return {key: float(value) for key, value in asdict(signal).items()}


if __name__ == "__main__":
    out = pairs_spread("MSFT", "AAPL")
    assert set(out) == {"hedge_ratio", "zscore", "half_window_mean"}, out
    print(out)
