"""On-Balance Volume: running total of volume signed by the close's direction.

A simple accumulation; nothing is written to any file or directory.
"""

from __future__ import annotations

import numpy as np
import yfinance as yf


def on_balance_volume(symbol: str, days: int = 60) -> float:
    """OBV accumulated over the last ``days`` sessions (starting from zero)."""
    bars = yf.Ticker(symbol).history(period="6mo").tail(days + 1)
    if len(bars) < 2:
        raise ValueError(f"{symbol}: not enough bars")
    direction = np.sign(bars["Close"].diff().fillna(0.0))
    obv = (direction * bars["Volume"]).iloc[1:].cumsum()
    return float(obv.iloc[-1])


if __name__ == "__main__":
    print(on_balance_volume("MSFT"))
