"""Price momentum: close today minus close ``lag`` sessions ago."""

from __future__ import annotations

import yfinance as yf


def momentum(symbol: str, lag: int = 10) -> float:
    closes = yf.Ticker(symbol).history(period="3mo")["Close"].dropna()
    if len(closes) <= lag:
        raise ValueError(f"{symbol}: need more than {lag} closes")
    return float(closes.iloc[-1] - closes.iloc[-1 - lag])


if __name__ == "__main__":
    print(momentum("SPY"))
