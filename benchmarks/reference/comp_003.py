"""Equal-weight buy-and-hold portfolio return over a recent window."""

from __future__ import annotations

import math

import pandas as pd
import yfinance as yf


def portfolio_return(symbols: list[str], days: int = 30) -> float:
    """Return (fraction) of a portfolio splitting its money equally across ``symbols`` at the first of
    the last ``days`` common sessions and holding to the last: the mean of the symbols' returns.

    Raises ValueError for no symbols or too little data.
    """
    if not symbols or days < 2:
        raise ValueError(f"need at least one symbol and days >= 2, got {symbols}, {days}")
    closes = pd.concat(
        {symbol: yf.Ticker(symbol).history(period="max")["Close"] for symbol in symbols}, axis=1, join="inner"
    ).dropna()
    if len(closes) < days:
        raise ValueError(f"need {days} common sessions, have {len(closes)}")
    window = closes.tail(days)
    returns = window.iloc[-1] / window.iloc[0] - 1.0
    return float(returns.mean())


if __name__ == "__main__":
    result = portfolio_return(["AAPL", "GOOGL", "AMZN"], 30)
    assert isinstance(result, float) and math.isfinite(result), result
    print(result)
