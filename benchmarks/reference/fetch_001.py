"""Net income of one fiscal quarter (or the latest reported one) from the quarterly income statement."""

from __future__ import annotations

import math

import pandas as pd
import yfinance as yf


def net_income(symbol: str, year: int | None = None, quarter: int | None = None) -> float:
    """Quarterly Net Income in USD.

    ``year`` and ``quarter`` select the calendar quarter (Q1 = January-March): the statement column
    whose period ends nearest the quarter's last day, within 15 days (fiscal weeks drift); leave
    both out for the latest reported quarter.
    Raises ValueError when the statement has no such quarter.
    """
    statement = yf.Ticker(symbol).quarterly_income_stmt
    if statement is None or statement.empty or "Net Income" not in statement.index:
        raise ValueError(f"no quarterly Net Income for {symbol}")
    row = statement.loc["Net Income"]
    if (year is None) != (quarter is None):
        raise ValueError("give both year and quarter, or neither")
    if year is None:
        for period_end in sorted(row.index, reverse=True):
            value = float(row[period_end])
            if math.isfinite(value):
                return value
        raise ValueError(f"no reported quarter for {symbol}")
    if not 1 <= int(quarter) <= 4:
        raise ValueError(f"quarter must be 1..4, got {quarter}")
    # the column dated nearest the quarter's last day, within 15 days: a 52/53-week fiscal calendar
    # dates a quarter ending with March 2023-04-01 or 2023-03-25
    nominal = pd.Timestamp(year=int(year), month=3 * int(quarter), day=1) + pd.offsets.MonthEnd(0)
    gaps = {period_end: abs((pd.Timestamp(period_end).tz_localize(None).normalize() - nominal).days)
            for period_end in row.index}
    near = [period_end for period_end, gap in gaps.items() if gap <= 15]
    if near:
        value = float(row[min(near, key=lambda period_end: gaps[period_end])])
        if math.isfinite(value):
            return value
    raise ValueError(f"{symbol} has no reported Net Income for {year} Q{quarter}")


if __name__ == "__main__":
    result = net_income("AAPL", 2023, 1)
    assert isinstance(result, float) and math.isfinite(result), result
    latest = net_income("AAPL")
    assert isinstance(latest, float) and math.isfinite(latest), latest
    print(result, latest)
