"""KDJ stochastic indicator of the latest session."""

from __future__ import annotations

import math

import yfinance as yf


def kdj(symbol: str, n: int = 9, k_period: int = 3, d_period: int = 3) -> dict[str, float]:
    """K, D and J (0..100 scale) with the classic recursive smoothing.

    RSV = (Close - lowest Low of n) / (highest High of n - lowest Low of n) * 100;
    K = ((k_period - 1) * K_prev + RSV) / k_period and D likewise from K, both starting at 50;
    J = 3K - 2D. One year of sessions makes the starting value irrelevant.
    Raises ValueError when there are too few sessions.
    """
    if n <= 0 or k_period <= 0 or d_period <= 0:
        raise ValueError(f"periods must be positive, got {n}, {k_period}, {d_period}")
    history = yf.Ticker(symbol).history(period="max").dropna(subset=["High", "Low", "Close"])
    if len(history) < n + 20 * max(k_period, d_period):
        raise ValueError(f"not enough sessions of {symbol}: {len(history)}")
    lowest = history["Low"].rolling(n).min()
    highest = history["High"].rolling(n).max()
    span = highest - lowest
    rsv = ((history["Close"] - lowest) / span.where(span != 0) * 100.0).fillna(50.0).iloc[n - 1:]
    k_value = d_value = 50.0
    for value in rsv:
        k_value = ((k_period - 1) * k_value + float(value)) / k_period
        d_value = ((d_period - 1) * d_value + k_value) / d_period
    return {"k": k_value, "d": d_value, "j": 3.0 * k_value - 2.0 * d_value}


if __name__ == "__main__":
    result = kdj("AAPL", 9, 3, 3)
    assert set(result) == {"k", "d", "j"}, result
    assert all(isinstance(v, float) and math.isfinite(v) for v in result.values()), result
    print(result)
