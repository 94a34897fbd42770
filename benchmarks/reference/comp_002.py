"""Volume-price divergence: price rising while trading volume trends down."""

from __future__ import annotations

import numpy as np
import yfinance as yf


def volume_price_divergence(symbol: str, days: int = 30) -> bool:
    """True when, over the last ``days`` sessions, the last close is above the first one while the
    least-squares slope of daily volume is negative; False otherwise.

    Raises ValueError when fewer than ``days`` sessions exist.
    """
    if days < 3:
        raise ValueError(f"days must be at least 3, got {days}")
    history = yf.Ticker(symbol).history(period="max").dropna(subset=["Close", "Volume"])
    if len(history) < days:
        raise ValueError(f"need {days} sessions of {symbol}, have {len(history)}")
    window = history.tail(days)
    closes = window["Close"].to_numpy(dtype=float)
    volume = window["Volume"].to_numpy(dtype=float)
    price_up = closes[-1] > closes[0]
    slope = float(np.polyfit(np.arange(days, dtype=float), volume, 1)[0])
    return bool(price_up and slope < 0)


if __name__ == "__main__":
    result = volume_price_divergence("MSFT", 30)
    assert isinstance(result, bool), result
    print(result)
