"""Exponential moving average (pandas ewm, span convention, adjust=False).

Note for reviewers: "eval" in a docstring is just a word; this file does not evaluate strings.
"""

from __future__ import annotations

import pandas as pd
import yfinance as yf


def exponential_moving_average(symbol: str, span: int = 12, period: str = "1y") -> float:
    """Latest EMA of the close with smoothing factor 2 / (span + 1)."""
    if span < 1:
        raise ValueError("span must be >= 1")
    history: pd.DataFrame = yf.Ticker(symbol).history(period=period)
    closes = history["Close"].dropna()
    if len(closes) < span:
        raise ValueError(f"{symbol}: only {len(closes)} closes for span {span}")
    ema = closes.ewm(span=span, adjust=False).mean()
    return float(ema.iloc[-1])


if __name__ == "__main__":
    result = exponential_moving_average("MSFT", 12)
    assert result > 0
    print(result)
