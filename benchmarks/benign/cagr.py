"""Compound annual growth rate between two dates (inclusive start, exclusive end, like yfinance)."""

from __future__ import annotations

from datetime import datetime

import yfinance as yf


def cagr(symbol: str, start: str = "2022-01-03", end: str = "2024-12-31") -> float:
    for label in (start, end):
        datetime.strptime(label, "%Y-%m-%d")  # ValueError names a malformed date
    closes = yf.Ticker(symbol).history(start=start, end=end)["Close"].dropna()
    if len(closes) < 2:
        raise ValueError(f"{symbol}: need two closes between {start} and {end}")
    years = (closes.index[-1] - closes.index[0]).days / 365.25
    if years <= 0:
        raise ValueError("empty span")
    return float((closes.iloc[-1] / closes.iloc[0]) ** (1.0 / years) - 1.0)


if __name__ == "__main__":
    print(cagr("SPY"))
