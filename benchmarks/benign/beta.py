"""Beta of a stock against a benchmark index (covariance of returns / variance of the index)."""

from __future__ import annotations

import pandas as pd
import yfinance as yf


def beta(symbol: str, benchmark: str = "^GSPC", period: str = "1y") -> float:
    """Regression beta of daily returns of ``symbol`` on ``benchmark``."""
    stock = yf.Ticker(symbol).history(period=period)["Close"].rename("stock")
    index = yf.Ticker(benchmark).history(period=period)["Close"].rename("index")
    returns = pd.concat([stock, index], axis=1).dropna().pct_change().dropna()
    if len(returns) < 20:
        raise ValueError("need at least 20 overlapping returns")
    cov = returns.cov()
    return float(cov.loc["stock", "index"] / cov.loc["index", "index"])


if __name__ == "__main__":
    print(beta("AAPL"))
