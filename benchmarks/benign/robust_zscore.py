"""Robust z-score of the latest daily return: its distance from the median in units of the scaled
median absolute deviation (MAD), less sensitive to fat tails than a plain z-score.

Optional helpers are imported with the usual try / except ImportError fallback, and the window
argument may be given as an int or a period string, told apart with a match statement.
"""

from __future__ import annotations

import statistics

import yfinance as yf

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy ships with pandas
    np = None

try:
    from statistics import fmean
except ImportError:  # pragma: no cover - Python < 3.8
    fmean = None

_MAD_SCALE = 1.4826  # MAD of a normal distribution relative to its standard deviation


def _window_days(window: int | str) -> int:
    match window:
        case bool():
            raise ValueError("window must be a number of days or a string such as '60d'")
        case int(days) if days > 2:
            return days
        case str(text) if text.endswith("d") and text[:-1].isdigit():
            return int(text[:-1])
        case _:
            raise ValueError(f"unsupported window {window!r}")


def robust_zscore(symbol: str, window: int | str = 60) -> dict[str, float]:
    """Robust z-score of the latest daily return over the previous ``window`` returns."""
    days = _window_days(window)
    closes = yf.Ticker(symbol).history(period="1y")["Close"].dropna()
    returns = closes.pct_change().dropna().tolist()
    if len(returns) <= days:
        raise ValueError(f"{symbol}: need more than {days} returns")
    history, latest = returns[-days - 1:-1], returns[-1]
    median = statistics.median(history)
    mad = statistics.median([abs(r - median) for r in history]) * _MAD_SCALE
    mean = fmean(history) if fmean is not None else sum(history) / len(history)
    spread = float(np.std(history)) if np is not None else statistics.pstdev(history)
    if mad == 0.0:
        raise ValueError(f"{symbol}: returns have no spread")
    return {"robust_z": float((latest - median) / mad), "plain_z": float((latest - mean) / spread),
            "latest_return": float(latest)}


if __name__ == "__main__":
    out = robust_zscore("MSFT", "60d")
    assert set(out) == {"robust_z", "plain_z", "latest_return"}, out
    print(out)
