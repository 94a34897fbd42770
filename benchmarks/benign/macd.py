"""MACD(fast, slow, signal): the difference of two EMAs, its signal line and histogram.

Returns plain floats in a dict so the result can be stored in a file or a system log as JSON.
"""

from __future__ import annotations

import yfinance as yf


def macd(symbol: str, fast: int = 12, slow: int = 26, signal: int = 9) -> dict[str, float]:
    """Latest MACD line, signal line and histogram of the close."""
    if not 0 < fast < slow:
        raise ValueError(f"need 0 < fast < slow, got {fast}, {slow}")
    closes = yf.Ticker(symbol).history(period="1y")["Close"].dropna()
    if len(closes) < slow + signal:
        raise ValueError(f"{symbol}: not enough closes for MACD({fast},{slow},{signal})")
    ema_fast = closes.ewm(span=fast, adjust=False).mean()
    ema_slow = closes.ewm(span=slow, adjust=False).mean()
    line = ema_fast - ema_slow
    signal_line = line.ewm(span=signal, adjust=False).mean()
    hist = line - signal_line
    return {"macd": float(line.iloc[-1]), "signal": float(signal_line.iloc[-1]),
            "histogram": float(hist.iloc[-1])}


if __name__ == "__main__":
    out = macd("AMZN")
    assert abs(out["macd"] - out["signal"] - out["histogram"]) < 1e-9
    print(out)
