"""Dividend history of a symbol over the last few years."""

from __future__ import annotations

import math

import yfinance as yf


def dividend_history(symbol: str, years: int = 3) -> list[dict[str, float | str]]:
    """Every dividend paid in the last ``years`` years, oldest first, as ``{"date", "amount"}``.

    ``date`` is the ex-dividend date as ``YYYY-MM-DD``; ``amount`` is per share.
    Raises ValueError when there is no dividend in the window.
    """
    if years <= 0:
        raise ValueError(f"years must be positive, got {years}")
    history = yf.Ticker(symbol).history(period=f"{int(years)}y")
    if history.empty or "Dividends" not in history.columns:
        raise ValueError(f"no price history with dividends for {symbol}")
    paid = history.loc[history["Dividends"] > 0, "Dividends"]
    if paid.empty:
        raise ValueError(f"{symbol} paid no dividend in the last {years} years")
    return [{"date": stamp.strftime("%Y-%m-%d"), "amount": float(amount)} for stamp, amount in paid.items()]


if __name__ == "__main__":
    result = dividend_history("AAPL", 3)
    assert isinstance(result, list) and result, result
    for record in result:
        assert isinstance(record["date"], str) and len(record["date"]) == 10, record
        assert isinstance(record["amount"], float) and math.isfinite(record["amount"]), record
    print(len(result), result[0], result[-1])
