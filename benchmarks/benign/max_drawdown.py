"""Maximum drawdown: the worst peak-to-trough fall, as a negative fraction.

Old agents wrote this result to a file in the working directory; this one just returns it.
"""

from __future__ import annotations

import yfinance as yf


def max_drawdown(symbol: str, days: int = 250) -> float:
    """Most negative (close / running peak - 1) over the last ``days`` closes."""
    closes = yf.Ticker(symbol).history(period="2y")["Close"].dropna().tail(days)
    if len(closes) < 2:
        raise ValueError(f"{symbol}: not enough closes")
    running_peak = closes.cummax()
    drawdowns = closes / running_peak - 1.0
    return float(drawdowns.min())


if __name__ == "__main__":
    dd = max_drawdown("MSFT")
    assert -1.0 <= dd <= 0.0
    print(dd)
