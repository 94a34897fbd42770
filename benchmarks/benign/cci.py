"""Commodity Channel Index: (typical price - SMA) / (0.015 * mean absolute deviation)."""

from __future__ import annotations

import numpy as np
import yfinance as yf


def commodity_channel_index(symbol: str, window: int = 20) -> float:
    """Latest CCI over ``window`` bars."""
    bars = yf.Ticker(symbol).history(period="6mo")
    typical = (bars["High"] + bars["Low"] + bars["Close"]) / 3.0
    if len(typical) < window:
        raise ValueError(f"{symbol}: need {window} bars")
    sma = typical.rolling(window).mean()
    mad = typical.rolling(window).apply(lambda x: np.mean(np.abs(x - x.mean())), raw=True)
    cci = (typical - sma) / (0.015 * mad)
    return float(cci.iloc[-1])


if __name__ == "__main__":
    print(commodity_channel_index("GOOGL"))
