"""Latest market quote (last traded price) of a symbol."""

from __future__ import annotations

import math

import yfinance as yf


def latest_quote(symbol: str) -> float:
    """The last traded price from ``fast_info``; falls back to the last daily close.

    Raises ValueError when neither is available.
    """
    ticker = yf.Ticker(symbol)
    price = None
    try:
        price = ticker.fast_info["lastPrice"]
    except KeyError:
        price = None
    if price is None or not math.isfinite(float(price)):
        closes = ticker.history(period="5d")["Close"].dropna()  # no pending dividend's NaN row
        if closes.empty:
            raise ValueError(f"no quote for {symbol}")
        price = closes.iloc[-1]
    return float(price)


if __name__ == "__main__":
    result = latest_quote("MSFT")
    assert isinstance(result, float) and math.isfinite(result) and result > 0, result
    print(result)
