"""Net income of a calendar quarter, parsed from a label such as "2023 Q1" (regular expression)."""

from __future__ import annotations

import re

import pandas as pd
import yfinance as yf

_LABEL = re.compile(r"^\s*(\d{4})\s*[- ]?\s*Q([1-4])\s*$", re.IGNORECASE)


def quarter_net_income(symbol: str, label: str = "2023 Q1") -> float:
    match = _LABEL.match(label)
    if match is None:
        raise ValueError(f"label must look like '2023 Q1', got {label!r}")
    year, quarter = int(match.group(1)), int(match.group(2))
    row = yf.Ticker(symbol).quarterly_income_stmt.loc["Net Income"]
    for stamp, value in row.items():
        ts = pd.Timestamp(stamp)
        if ts.year == year and ts.quarter == quarter and pd.notna(value):
            return float(value)
    raise ValueError(f"{symbol}: no Net Income for {label}")


if __name__ == "__main__":
    print(quarter_net_income("AAPL", "2023 Q1"))
