"""Relative Strength Index computed over a recent window of daily closes."""

from __future__ import annotations

import yfinance as yf


def rsi(symbol: str, window: int = 14, days: int = 30) -> float:
    """Latest Wilder RSI (0..100) computed from the last ``days`` daily closes only.

    Gains and losses are smoothed with Wilder's method, ``ewm(alpha=1/window, adjust=False)``.
    Raises ValueError when fewer than ``days`` closes exist or ``days <= window``.
    """
    if window <= 0 or days <= window:
        raise ValueError(f"need days > window > 0, got window={window} days={days}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < days:
        raise ValueError(f"need {days} closes of {symbol}, have {len(closes)}")
    change = closes.tail(days).diff().dropna()
    gains = change.clip(lower=0.0)
    losses = (-change).clip(lower=0.0)
    avg_gain = float(gains.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])
    avg_loss = float(losses.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])
    if avg_loss == 0.0:
        return 100.0
    return 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)


if __name__ == "__main__":
    result = rsi("AAPL", 14, 30)
    assert isinstance(result, float) and 0.0 <= result <= 100.0, result
    print(result)
