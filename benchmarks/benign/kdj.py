"""KDJ stochastic oscillator (n, m1, m2), the Chinese-market convention with K and D seeded at 50."""

from __future__ import annotations

import yfinance as yf


def kdj(symbol: str, n: int = 9, m1: int = 3, m2: int = 3) -> dict[str, float]:
    """Latest K, D and J values."""
    bars = yf.Ticker(symbol).history(period="3mo")
    if len(bars) < n:
        raise ValueError(f"{symbol}: need {n} bars")
    low_n = bars["Low"].rolling(n).min()
    high_n = bars["High"].rolling(n).max()
    rsv = ((bars["Close"] - low_n) / (high_n - low_n) * 100.0).dropna()
    k, d = 50.0, 50.0
    for value in rsv.to_list():
        k = (m1 - 1) / m1 * k + value / m1
        d = (m2 - 1) / m2 * d + k / m2
    return {"k": float(k), "d": float(d), "j": float(3 * k - 2 * d)}


if __name__ == "__main__":
    print(kdj("AAPL"))
