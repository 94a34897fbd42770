"""Latest daily close price of a symbol (an index such as ^GSPC, an ETF or a stock)."""

from __future__ import annotations

import math

import yfinance as yf


def latest_close(symbol: str) -> float:
    """Close of the most recent trading session.

    Raises ValueError when there is no recent price history.
    """
    # before the open on an ex-dividend date the frame ends with the dividend's row, prices NaN
    closes = yf.Ticker(symbol).history(period="5d")["Close"].dropna()
    if closes.empty:
        raise ValueError(f"no recent price history for {symbol}")
    return float(closes.iloc[-1])


if __name__ == "__main__":
    result = latest_close("SPY")
    assert isinstance(result, float) and math.isfinite(result) and result > 0, result
    print(result)
