"""Summary statistics of daily returns using pandas aggregation by name."""

from __future__ import annotations

import json

import yfinance as yf


def return_stats(symbol: str, period: str = "6mo") -> dict[str, float]:
    """Mean, standard deviation, min and max of daily returns."""
    returns = yf.Ticker(symbol).history(period=period)["Close"].pct_change().dropna()
    if len(returns) < 10:
        raise ValueError(f"{symbol}: need 10 returns")
    stats = returns.agg(["mean", "std", "min", "max"])
    out = {name: float(value) for name, value in stats.to_dict().items()}
    json.dumps(out)  # must stay JSON-serialisable
    return out


if __name__ == "__main__":
    print("{:.6f}".format(return_stats("GOOGL")["mean"]))
