"""Equal-weight portfolio return over recent sessions (buy and hold, no rebalancing)."""

from __future__ import annotations

import pandas as pd
import yfinance as yf


def equal_weight_return(symbols: list[str], days: int = 30) -> float:
    """Average of each symbol's simple return over its last ``days`` sessions."""
    if not symbols:
        raise ValueError("no symbols")
    closes = pd.DataFrame({s: yf.Ticker(s).history(period="3mo")["Close"] for s in symbols}).dropna()
    window = closes.tail(days + 1)
    if len(window) < days + 1:
        raise ValueError(f"need {days + 1} aligned closes")
    per_symbol = window.iloc[-1] / window.iloc[0] - 1.0
    return float(per_symbol.mean())


if __name__ == "__main__":
    print(equal_weight_return(["AAPL", "GOOGL", "AMZN"]))
