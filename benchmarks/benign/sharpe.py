"""Annualised Sharpe ratio of daily returns against a constant risk-free rate."""

from __future__ import annotations

import math
import statistics

import yfinance as yf


def sharpe_ratio(symbol: str, risk_free: float = 0.02, period: str = "1y") -> float:
    """(mean daily excess return / std of daily returns) * sqrt(252)."""
    closes = yf.Ticker(symbol).history(period=period)["Close"].dropna()
    returns = closes.pct_change().dropna().to_list()
    if len(returns) < 20:
        raise ValueError(f"{symbol}: need at least 20 returns")
    daily_rf = (1.0 + risk_free) ** (1.0 / 252) - 1.0
    excess = [r - daily_rf for r in returns]
    sd = statistics.stdev(returns)
    if sd == 0:
        raise ValueError("zero volatility")
    return float(statistics.fmean(excess) / sd * math.sqrt(252))


if __name__ == "__main__":
    print(sharpe_ratio("SPY"))
