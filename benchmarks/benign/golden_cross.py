"""Is the short moving average above the long one (a "golden cross" regime)?"""

from __future__ import annotations

import yfinance as yf


def golden_cross(symbol: str, short: int = 50, long: int = 200) -> bool:
    """True when SMA(short) > SMA(long) on the latest close."""
    if short >= long:
        raise ValueError("short window must be shorter than the long one")
    closes = yf.Ticker(symbol).history(period="2y")["Close"].dropna()
    if len(closes) < long:
        raise ValueError(f"{symbol}: need {long} closes")
    return bool(closes.rolling(short).mean().iloc[-1] > closes.rolling(long).mean().iloc[-1])


if __name__ == "__main__":
    flag = golden_cross("SPY")
    assert isinstance(flag, bool)
    print(flag)
