"""Volume-price divergence: price trending up while volume trends down (or the reverse).

The trend of each series is the slope of a least-squares line (numpy.polyfit), so no string
is ever passed to eval and no system command is run.
"""

from __future__ import annotations

import numpy as np
import yfinance as yf


def volume_price_divergence(symbol: str, days: int = 30) -> dict[str, float | bool]:
    bars = yf.Ticker(symbol).history(period="3mo").tail(days)
    if len(bars) < days:
        raise ValueError(f"{symbol}: need {days} bars")
    x = np.arange(len(bars), dtype=float)
    price_slope = float(np.polyfit(x, bars["Close"].to_numpy(dtype=float), 1)[0])
    volume_slope = float(np.polyfit(x, bars["Volume"].to_numpy(dtype=float), 1)[0])
    return {"price_slope": price_slope, "volume_slope": volume_slope,
            "divergence": bool(price_slope > 0 > volume_slope)}


if __name__ == "__main__":
    print(volume_price_divergence("MSFT"))
