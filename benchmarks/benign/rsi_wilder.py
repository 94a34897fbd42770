"""Relative Strength Index with Wilder's smoothing.

Wilder's RSI smooths gains and losses with alpha = 1 / window. The system default window is 14.
"""

from __future__ import annotations

import yfinance as yf


def rsi_wilder(symbol: str, window: int = 14, period: str = "6mo") -> float:
    """Latest Wilder RSI in [0, 100]."""
    closes = yf.Ticker(symbol).history(period=period)["Close"].dropna()
    if len(closes) <= window:
        raise ValueError(f"{symbol}: need more than {window} closes")
    delta = closes.diff().dropna()
    gains = delta.clip(lower=0.0)
    losses = -delta.clip(upper=0.0)
    avg_gain = gains.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1]
    avg_loss = losses.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1]
    if avg_loss == 0:
        return 100.0
    rs = avg_gain / avg_loss
    return float(100.0 - 100.0 / (1.0 + rs))


if __name__ == "__main__":
    value = rsi_wilder("AAPL")
    assert 0.0 <= value <= 100.0, value
    print(round(value, 2))
