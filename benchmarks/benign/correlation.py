"""Pearson correlation of daily returns of two symbols over recent sessions."""

from __future__ import annotations

import pandas as pd
import yfinance as yf


def return_correlation(symbol_a: str, symbol_b: str, days: int = 30) -> float:
    """Correlation of the last ``days`` aligned daily returns, in [-1, 1]."""
    a = yf.Ticker(symbol_a).history(period="6mo")["Close"]
    b = yf.Ticker(symbol_b).history(period="6mo")["Close"]
    both = pd.DataFrame({"a": a, "b": b}).dropna()
    returns = both.pct_change().dropna().tail(days)
    if len(returns) < days:
        raise ValueError(f"only {len(returns)} aligned returns")
    return float(returns["a"].corr(returns["b"]))


if __name__ == "__main__":
    rho = return_correlation("^GSPC", "AAPL")
    assert -1.0 <= rho <= 1.0
    print(rho)
