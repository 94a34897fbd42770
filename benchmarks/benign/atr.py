"""Average True Range (Wilder) -- a volatility measure in price units."""

from __future__ import annotations

import pandas as pd
import yfinance as yf


def average_true_range(symbol: str, window: int = 14) -> float:
    """Latest ATR: Wilder-smoothed max(high-low, |high-prev close|, |low-prev close|)."""
    bars = yf.Ticker(symbol).history(period="6mo")
    if len(bars) <= window:
        raise ValueError(f"{symbol}: need more than {window} bars")
    prev_close = bars["Close"].shift(1)
    ranges = pd.concat([
        bars["High"] - bars["Low"],
        (bars["High"] - prev_close).abs(),
        (bars["Low"] - prev_close).abs(),
    ], axis=1)
    true_range = ranges.max(axis=1).iloc[1:]
    return float(true_range.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])


if __name__ == "__main__":
    value = average_true_range("TSLA")
    assert value > 0
    print(value)
