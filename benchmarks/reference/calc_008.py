"""Correlation of two symbols' daily returns over a recent window."""

from __future__ import annotations

import math

import pandas as pd
import yfinance as yf


def correlation(symbols: list[str], days: int = 30) -> float:
    """Pearson correlation of the daily simple returns of two symbols over their last ``days`` common sessions.

    ``days`` closes give ``days - 1`` returns. Raises ValueError for other than two symbols,
    too little data or a constant series.
    """
    if len(symbols) != 2:
        raise ValueError(f"need exactly two symbols, got {symbols}")
    closes = pd.concat(
        {symbol: yf.Ticker(symbol).history(period="max")["Close"] for symbol in symbols}, axis=1, join="inner"
    ).dropna()
    if len(closes) < days or days < 3:
        raise ValueError(f"need {days} common sessions (at least 3), have {len(closes)}")
    returns = closes.tail(days).pct_change().dropna()
    value = float(returns[symbols[0]].corr(returns[symbols[1]]))
    if not math.isfinite(value):
        raise ValueError("correlation is undefined for a constant series")
    return value


if __name__ == "__main__":
    result = correlation(["^GSPC", "AAPL"], 30)
    assert isinstance(result, float) and -1.0 <= result <= 1.0, result
    print(result)
