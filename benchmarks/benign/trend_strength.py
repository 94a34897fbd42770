"""Trend strength: R-squared of a linear fit to log prices, with the annualised slope.

Quietly ignores numpy's RankWarning through the warnings module; writes no file anywhere.
"""

from __future__ import annotations

import warnings

import numpy as np
import yfinance as yf


def trend_strength(symbol: str, days: int = 60) -> dict[str, float]:
    closes = yf.Ticker(symbol).history(period="6mo")["Close"].dropna().tail(days)
    if len(closes) < days:
        raise ValueError(f"{symbol}: need {days} closes")
    y = np.log(closes.to_numpy())
    x = np.arange(y.size, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        slope, intercept = np.polyfit(x, y, 1)
    fitted = slope * x + intercept
    ss_res = float(np.sum((y - fitted) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 0.0
    return {"r_squared": r2, "annual_slope": float(slope * 252)}


if __name__ == "__main__":
    print(trend_strength("AMZN"))
