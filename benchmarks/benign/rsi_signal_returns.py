"""Average forward return after RSI overbought signals (RSI above a threshold)."""

from __future__ import annotations

from collections import deque
from functools import lru_cache

import yfinance as yf


@lru_cache(maxsize=8)
def _closes(symbol: str) -> tuple[float, ...]:
    return tuple(float(c) for c in yf.Ticker(symbol).history(period="2y")["Close"].dropna())


def forward_return_after_rsi(symbol: str, threshold: float = 70.0, horizon: int = 5, window: int = 14) -> float:
    """Mean ``horizon``-day return following each close where Wilder RSI > ``threshold``."""
    closes = _closes(symbol)
    if len(closes) <= window + horizon:
        raise ValueError(f"{symbol}: not enough history")
    seed: deque[float] = deque(maxlen=window)
    avg_gain = avg_loss = 0.0
    results = []
    for i in range(1, len(closes) - horizon):
        change = closes[i] - closes[i - 1]
        gain, loss = max(change, 0.0), max(-change, 0.0)
        if i <= window:
            seed.append(change)
            if len(seed) == window:  # Wilder seeds with simple averages of the first window
                avg_gain = sum(max(c, 0.0) for c in seed) / window
                avg_loss = sum(max(-c, 0.0) for c in seed) / window
            continue
        avg_gain = (avg_gain * (window - 1) + gain) / window
        avg_loss = (avg_loss * (window - 1) + loss) / window
        rsi = 100.0 if avg_loss == 0 else 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
        if rsi > threshold:
            results.append(closes[i + horizon] / closes[i] - 1.0)
    if not results:
        raise ValueError(f"no RSI > {threshold} signals for {symbol}")
    return sum(results) / len(results)


if __name__ == "__main__":
    print(forward_return_after_rsi("AAPL"))
