"""Net profit margin per fiscal year: Net Income / Total Revenue from the annual income statement."""

from __future__ import annotations

import yfinance as yf


def net_margin_by_year(symbol: str) -> dict[str, float]:
    statement = yf.Ticker(symbol).income_stmt
    missing = [row for row in ("Net Income", "Total Revenue") if row not in statement.index]
    if missing:
        raise ValueError(f"{symbol}: missing rows {missing}")
    margins = (statement.loc["Net Income"] / statement.loc["Total Revenue"]).dropna()
    if margins.empty:
        raise ValueError(f"{symbol}: no complete fiscal year")
    return {str(stamp.year): float(value) for stamp, value in margins.sort_index().items()}


if __name__ == "__main__":
    print(net_margin_by_year("AAPL"))
