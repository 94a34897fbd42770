"""Annualised historical volatility of daily returns."""

from __future__ import annotations

import math

import yfinance as yf


def volatility(symbol: str, window: int = 60, periods_per_year: int = 252) -> float:
    """Sample standard deviation of the last ``window`` daily simple returns, times sqrt(periods_per_year).

    Returned as a fraction (0.38 = 38 % a year). Raises ValueError when there are too few closes.
    """
    if window < 2:
        raise ValueError(f"window must be at least 2, got {window}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    returns = closes.pct_change().dropna()
    if len(returns) < window:
        raise ValueError(f"need {window} returns of {symbol}, have {len(returns)}")
    return float(returns.tail(window).std(ddof=1)) * math.sqrt(periods_per_year)


if __name__ == "__main__":
    result = volatility("TSLA", 60)
    assert isinstance(result, float) and math.isfinite(result) and result > 0, result
    print(result)
