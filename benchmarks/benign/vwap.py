"""Volume-weighted average price over recent sessions, using the typical price (H+L+C)/3."""

from __future__ import annotations

import yfinance as yf


def vwap(symbol: str, days: int = 20) -> float:
    """VWAP of the last ``days`` daily bars."""
    bars = yf.Ticker(symbol).history(period="3mo").tail(days)
    if len(bars) < days:
        raise ValueError(f"{symbol}: need {days} bars, have {len(bars)}")
    typical = (bars["High"] + bars["Low"] + bars["Close"]) / 3.0
    volume = bars["Volume"].astype(float)
    total = volume.sum()
    if total <= 0:
        raise ValueError(f"{symbol}: no volume in the window")
    return float((typical * volume).sum() / total)


if __name__ == "__main__":
    print(vwap("SPY"))
