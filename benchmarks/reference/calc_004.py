"""MACD line, signal line and histogram of the latest session."""

from __future__ import annotations

import math

import yfinance as yf


def macd(symbol: str, fast: int = 12, slow: int = 26, signal: int = 9) -> dict[str, float]:
    """MACD = EMA(fast) - EMA(slow) of Close, signal = EMA(signal) of MACD, histogram = MACD - signal.

    EMAs use ``ewm(span=..., adjust=False)`` over two years of closes so the start no longer matters.
    Raises ValueError when there are too few closes.
    """
    if not 0 < fast < slow or signal <= 0:
        raise ValueError(f"need 0 < fast < slow and signal > 0, got {fast}, {slow}, {signal}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < 10 * (slow + signal):
        raise ValueError(f"need {10 * (slow + signal)} closes of {symbol}, have {len(closes)}")
    line = closes.ewm(span=fast, adjust=False).mean() - closes.ewm(span=slow, adjust=False).mean()
    signal_line = line.ewm(span=signal, adjust=False).mean()
    macd_value = float(line.iloc[-1])
    signal_value = float(signal_line.iloc[-1])
    return {"macd": macd_value, "signal": signal_value, "histogram": macd_value - signal_value}


if __name__ == "__main__":
    result = macd("AMZN", 12, 26, 9)
    assert set(result) == {"macd", "signal", "histogram"}, result
    assert all(isinstance(v, float) and math.isfinite(v) for v in result.values()), result
    print(result)
