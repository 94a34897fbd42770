"""Simple moving average of daily closes, as a series of recent values."""

from __future__ import annotations

import math

import yfinance as yf


def moving_average(symbol: str, window: int = 5, days: int = 20) -> list[float]:
    """The ``window``-session simple moving average of Close for each of the last ``days`` sessions, oldest first.

    Raises ValueError when there are fewer than ``window + days - 1`` closes.
    """
    if window <= 0 or days <= 0:
        raise ValueError(f"window and days must be positive, got {window}, {days}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < window + days - 1:
        raise ValueError(f"need {window + days - 1} closes of {symbol}, have {len(closes)}")
    average = closes.rolling(window).mean().dropna().tail(days)
    return [float(v) for v in average]


if __name__ == "__main__":
    result = moving_average("MSFT", 5, 20)
    assert isinstance(result, list) and len(result) == 20, result
    assert all(isinstance(v, float) and math.isfinite(v) for v in result), result
    print(result[-3:])
