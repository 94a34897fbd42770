"""Quarter-over-quarter growth of Total Revenue, for each consecutive pair of quarters."""

from __future__ import annotations

import yfinance as yf


def quarterly_revenue_growth(symbol: str) -> dict[str, float]:
    """Map 'YYYY-MM-DD' (quarter end) -> growth vs the previous quarter."""
    statement = yf.Ticker(symbol).quarterly_income_stmt
    if "Total Revenue" not in statement.index:
        raise ValueError(f"{symbol}: no Total Revenue row")
    revenue = statement.loc["Total Revenue"].dropna().sort_index()
    growth = revenue.pct_change().dropna()
    if growth.empty:
        raise ValueError(f"{symbol}: need two quarters")
    return {stamp.strftime("%Y-%m-%d"): float(value) for stamp, value in growth.items()}


if __name__ == "__main__":
    print(quarterly_revenue_growth("AMZN"))
