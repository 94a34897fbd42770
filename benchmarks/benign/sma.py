"""Simple moving average of daily closes.

The tool never touches the file system or a directory; it reads prices only through the
yfinance API, so nothing here needs os.system or eval.
"""

from __future__ import annotations

import yfinance as yf


def simple_moving_average(symbol: str, window: int = 20, period: str = "6mo") -> float:
    """Latest ``window``-day simple moving average of the close.

    Raises ValueError when fewer than ``window`` closes are available.
    """
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    closes = yf.Ticker(symbol).history(period=period)["Close"].dropna()
    if len(closes) < window:
        raise ValueError(f"{symbol}: need {window} closes, have {len(closes)}")
    return float(closes.rolling(window).mean().iloc[-1])


if __name__ == "__main__":
    value = simple_moving_average("AAPL", 20)
    assert value > 0, value
    print(f"AAPL SMA20 = {value:.4f}")
