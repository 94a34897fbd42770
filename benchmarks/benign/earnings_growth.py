"""Year-over-year growth of annual Net Income from the income statement."""

from __future__ import annotations

import math

import yfinance as yf


def earnings_growth(symbol: str) -> float:
    """(latest fiscal year Net Income / previous year's) - 1."""
    statement = yf.Ticker(symbol).income_stmt
    if statement is None or "Net Income" not in statement.index:
        raise ValueError(f"{symbol}: no Net Income row")
    row = statement.loc["Net Income"].dropna().sort_index()
    if len(row) < 2:
        raise ValueError(f"{symbol}: need two fiscal years")
    latest, previous = float(row.iloc[-1]), float(row.iloc[-2])
    if previous == 0 or not math.isfinite(previous):
        raise ValueError("previous year's net income is zero or missing")
    return latest / previous - 1.0


if __name__ == "__main__":
    print(earnings_growth("GOOGL"))
