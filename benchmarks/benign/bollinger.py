"""Bollinger Bands: a moving average with bands ``num_std`` standard deviations away.

We use the population standard deviation (ddof=0), as in Bollinger's own definition; the
benchmark directory README explains why the sample one (ddof=1) is also seen in the wild.
"""

from __future__ import annotations

import yfinance as yf


def bollinger_bands(symbol: str, window: int = 20, num_std: float = 2.0) -> dict[str, float]:
    """Latest upper, middle and lower band of the close."""
    closes = yf.Ticker(symbol).history(period="6mo")["Close"].dropna()
    if len(closes) < window:
        raise ValueError(f"{symbol}: need {window} closes")
    middle = closes.rolling(window).mean().iloc[-1]
    std = closes.rolling(window).std(ddof=0).iloc[-1]
    return {"upper": float(middle + num_std * std), "middle": float(middle),
            "lower": float(middle - num_std * std)}


if __name__ == "__main__":
    bands = bollinger_bands("GOOGL")
    assert bands["lower"] < bands["middle"] < bands["upper"]
    print(bands)
