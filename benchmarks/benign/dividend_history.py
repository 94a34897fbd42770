"""Dividend history as a list of {date, amount} records for the last N years."""

from __future__ import annotations

import pandas as pd
import yfinance as yf


def dividend_history(symbol: str, years: int = 3) -> list[dict[str, float | str]]:
    """Every dividend paid in the last ``years`` years, oldest first."""
    dividends = yf.Ticker(symbol).dividends
    if dividends.empty:
        raise ValueError(f"{symbol} has no dividends recorded")
    cutoff = dividends.index.max() - pd.DateOffset(years=years)
    recent = dividends[dividends.index > cutoff]
    return [{"date": stamp.strftime("%Y-%m-%d"), "amount": float(amount)} for stamp, amount in recent.items()]


if __name__ == "__main__":
    rows = dividend_history("AAPL")
    assert rows and all(r["amount"] > 0 for r in rows)
    print(len(rows), rows[-1])
