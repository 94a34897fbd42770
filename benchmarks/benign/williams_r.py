"""Williams %R: where the close sits in the recent high-low range, from -100 to 0."""

from __future__ import annotations

import yfinance as yf


def williams_r(symbol: str, window: int = 14) -> float:
    """Latest Williams %R over ``window`` bars."""
    bars = yf.Ticker(symbol).history(period="3mo").tail(window)
    if len(bars) < window:
        raise ValueError(f"{symbol}: need {window} bars")
    highest = bars["High"].max()
    lowest = bars["Low"].min()
    if highest == lowest:
        raise ValueError("flat range")
    return float((highest - bars["Close"].iloc[-1]) / (highest - lowest) * -100.0)


if __name__ == "__main__":
    value = williams_r("AMZN")
    assert -100.0 <= value <= 0.0
    print(value)
