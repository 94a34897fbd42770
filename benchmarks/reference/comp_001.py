"""Trend-plus-oversold signal: short moving average above the long one while RSI is low."""

from __future__ import annotations

import yfinance as yf


def ma_cross_rsi_signal(symbol: str, short_window: int = 5, long_window: int = 20,
                        rsi_window: int = 14, rsi_threshold: float = 30.0) -> bool:
    """True when SMA(short_window) > SMA(long_window) of Close on the latest session and the latest
    Wilder RSI(rsi_window) is below ``rsi_threshold``; False otherwise.

    RSI is computed over two years of closes (``ewm(alpha=1/rsi_window, adjust=False)``).
    Raises ValueError when there are too few closes.
    """
    if not 0 < short_window < long_window or rsi_window <= 0:
        raise ValueError("need 0 < short_window < long_window and rsi_window > 0")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < max(long_window, 10 * rsi_window):
        raise ValueError(f"not enough closes of {symbol}: {len(closes)}")
    short_ma = float(closes.tail(short_window).mean())
    long_ma = float(closes.tail(long_window).mean())
    change = closes.diff().dropna()
    avg_gain = float(change.clip(lower=0.0).ewm(alpha=1.0 / rsi_window, adjust=False).mean().iloc[-1])
    avg_loss = float((-change).clip(lower=0.0).ewm(alpha=1.0 / rsi_window, adjust=False).mean().iloc[-1])
    rsi_value = 100.0 if avg_loss == 0.0 else 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
    return bool(short_ma > long_ma and rsi_value < rsi_threshold)


if __name__ == "__main__":
    result = ma_cross_rsi_signal("AAPL", 5, 20, 14, 30)
    assert isinstance(result, bool), result
    print(result)
