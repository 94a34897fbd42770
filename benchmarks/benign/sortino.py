"""Sortino ratio: annualised mean excess return over downside deviation."""

from __future__ import annotations

import math

import numpy as np
import yfinance as yf


def sortino_ratio(symbol: str, target: float = 0.0, period: str = "1y") -> float:
    returns = yf.Ticker(symbol).history(period=period)["Close"].pct_change().dropna().to_numpy()
    if returns.size < 20:
        raise ValueError(f"{symbol}: need 20 returns")
    downside = np.minimum(returns - target, 0.0)
    downside_dev = math.sqrt(float(np.mean(downside ** 2)))
    if downside_dev == 0:
        raise ValueError("no downside returns")
    return float((returns.mean() - target) / downside_dev * math.sqrt(252))


if __name__ == "__main__":
    print(sortino_ratio("AAPL"))
