"""Annual total revenue of one fiscal year from the yearly income statement."""

from __future__ import annotations

import math

import pandas as pd
import yfinance as yf


def total_revenue(symbol: str, year: int) -> float:
    """Total Revenue (USD) of the fiscal year ending in ``year``.

    Raises ValueError when the statement has no such year.
    """
    statement = yf.Ticker(symbol).income_stmt
    if statement is None or statement.empty or "Total Revenue" not in statement.index:
        raise ValueError(f"no annual Total Revenue for {symbol}")
    row = statement.loc["Total Revenue"]
    for period_end in row.index:
        if pd.Timestamp(period_end).year == int(year):
            value = float(row[period_end])
            if math.isfinite(value):
                return value
    raise ValueError(f"{symbol} has no Total Revenue for fiscal {year}")


if __name__ == "__main__":
    result = total_revenue("GOOGL", 2023)
    assert isinstance(result, float) and math.isfinite(result) and result > 0, result
    print(result)
