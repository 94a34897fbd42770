"""Historical one-day Value at Risk at a confidence level, as a positive loss fraction."""

from __future__ import annotations

import numpy as np
import yfinance as yf


def historical_var(symbol: str, confidence: float = 0.95, period: str = "2y") -> float:
    if not 0.5 < confidence < 1.0:
        raise ValueError("confidence must be in (0.5, 1)")
    returns = yf.Ticker(symbol).history(period=period)["Close"].pct_change().dropna()
    if len(returns) < 100:
        raise ValueError(f"{symbol}: need 100 returns")
    return float(-np.quantile(returns.to_numpy(), 1.0 - confidence))


if __name__ == "__main__":
    print(historical_var("TSLA"))
