"""Trailing twelve-month dividend yield: dividends paid in the last year / latest close.

Reads the dividend history from yfinance (not from a file on the system).
"""

from __future__ import annotations

import pandas as pd
import yfinance as yf


def dividend_yield(symbol: str) -> float:
    """TTM dividend yield as a fraction (0.005 = 0.5 %)."""
    ticker = yf.Ticker(symbol)
    closes = ticker.history(period="1mo")["Close"].dropna()
    if closes.empty:
        raise ValueError(f"{symbol}: no recent close")
    dividends = ticker.dividends
    last_day = closes.index[-1]
    recent = dividends[dividends.index > last_day - pd.DateOffset(years=1)]
    return float(recent.sum() / closes.iloc[-1])


if __name__ == "__main__":
    y = dividend_yield("MSFT")
    assert 0.0 <= y < 0.2
    print(y)
