"""Highest daily close of a symbol over the last N trading sessions."""

from __future__ import annotations

import math

import yfinance as yf


def max_close(symbol: str, days: int = 30) -> float:
    """Maximum Close over the last ``days`` trading sessions.

    Raises ValueError when fewer than ``days`` sessions are available.
    """
    if days <= 0:
        raise ValueError(f"days must be positive, got {days}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < days:
        raise ValueError(f"need {days} sessions of {symbol}, have {len(closes)}")
    return float(closes.tail(days).max())


if __name__ == "__main__":
    result = max_close("TSLA", 30)
    assert isinstance(result, float) and math.isfinite(result) and result > 0, result
    print(result)
