"""Average forward return after overbought RSI readings (an event study)."""

from __future__ import annotations

import math

import yfinance as yf


def post_signal_return(symbol: str, rsi_window: int = 14, rsi_threshold: float = 70.0, horizon: int = 5) -> float:
    """Mean ``horizon``-session forward return (fraction) over every session whose Wilder RSI(rsi_window)
    is above ``rsi_threshold``, using all available history; signals without ``horizon`` later
    sessions are skipped.

    Raises ValueError when no signal has a complete horizon.
    """
    if rsi_window <= 0 or horizon <= 0:
        raise ValueError(f"rsi_window and horizon must be positive, got {rsi_window}, {horizon}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    change = closes.diff().iloc[1:]
    avg_gain = change.clip(lower=0.0).ewm(alpha=1.0 / rsi_window, adjust=False, min_periods=rsi_window).mean()
    avg_loss = (-change).clip(lower=0.0).ewm(alpha=1.0 / rsi_window, adjust=False, min_periods=rsi_window).mean()
    rsi = (100.0 - 100.0 / (1.0 + avg_gain / avg_loss)).where(avg_loss != 0, 100.0)
    rsi = rsi.where(avg_gain.notna() & avg_loss.notna()).reindex(closes.index)
    forward = closes.shift(-horizon) / closes - 1.0
    chosen = forward[(rsi > rsi_threshold) & forward.notna()]
    if chosen.empty:
        raise ValueError(f"no RSI>{rsi_threshold} signal of {symbol} with {horizon} later sessions")
    return float(chosen.mean())


if __name__ == "__main__":
    result = post_signal_return("AAPL", 14, 70, 5)
    assert isinstance(result, float) and math.isfinite(result), result
    print(result)
