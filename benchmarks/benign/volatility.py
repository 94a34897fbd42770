"""Annualised volatility of daily log returns (sqrt(252) scaling)."""

from __future__ import annotations

import math

import numpy as np
import yfinance as yf


def annualized_volatility(symbol: str, days: int = 60, trading_days: int = 252) -> float:
    """Sample standard deviation of the last ``days`` log returns, annualised."""
    closes = yf.Ticker(symbol).history(period="1y")["Close"].dropna().tail(days + 1)
    if len(closes) < days + 1:
        raise ValueError(f"{symbol}: need {days + 1} closes")
    log_returns = np.log(closes / closes.shift(1)).dropna()
    return float(log_returns.std(ddof=1) * math.sqrt(trading_days))


if __name__ == "__main__":
    vol = annualized_volatility("TSLA")
    assert 0 < vol < 5
    print(f"{vol:.2%}")
