"""Daily simple returns as a list, most recent last (system-independent, plain floats)."""

from __future__ import annotations

import math

import yfinance as yf


def daily_returns(symbol: str, days: int = 10) -> list[float]:
    """The last ``days`` daily returns close-to-close, as fractions."""
    closes = yf.Ticker(symbol).history(period="3mo")["Close"].dropna()
    returns = closes.pct_change().dropna().tail(days)
    if len(returns) < days:
        raise ValueError(f"{symbol}: only {len(returns)} returns")
    out = [float(r) for r in returns.to_list()]
    if not all(math.isfinite(r) for r in out):
        raise ValueError("non-finite return")
    return out


if __name__ == "__main__":
    values = daily_returns("AAPL", 5)
    assert len(values) == 5
    print(values)
